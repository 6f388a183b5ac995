//! Bounded waits: a side that never answers fails the test instead of hanging it.

use std::future::Future;
use std::time::Duration;

/// Bound for one exchange on the loopback (a loaded 2-core machine included).
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);

/// Bound for a state that follows an exchange (a DELETE, a cancellation, a notification
/// handler) to show.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(5);

/// Awaits `f`, failing the test past [`EXCHANGE_TIMEOUT`].
pub async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(EXCHANGE_TIMEOUT, f).await.expect("no answer within the bound")
}

/// Polls `done` every 10 ms until it holds, failing the test past [`SETTLE_TIMEOUT`].
pub async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "not within {SETTLE_TIMEOUT:?}: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
