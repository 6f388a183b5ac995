//! Whether the child still lives: a child that is alive but reads nothing, or answers nothing,
//! would hold its clients' requests until each times out. Once a request has waited
//! [`BridgeBuilder::hang_timeout`](super::BridgeBuilder::hang_timeout) for the child, the
//! bridge pings it; a child that does not answer the ping within as long again hangs: it is
//! killed (its peer closed, then its process group ended), its requests in flight fail saying
//! it hung, and the supervisor starts it again as it would a child that exited. A slow call of
//! a child that answers the ping goes on: it is pinged again once it has waited as long again.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::state::Inner;
use crate::peer::{PeerHandle, RequestError, RequestOptions};
use crate::sync::Locked;

/// How often within one timeout the requests' waits are looked at.
const CHECKS_PER_TIMEOUT: u32 = 4;

/// Watches the child behind `peer` until its connection ends; `hung` is set, with why, when
/// it is found to hang and killed.
pub(super) async fn watch(
    inner: Weak<Inner>,
    peer: PeerHandle,
    hung: Arc<OnceLock<String>>,
    timeout: Duration,
) {
    let every = (timeout / CHECKS_PER_TIMEOUT).max(Duration::from_millis(10));
    // A ping answered vouches for the child until a request waits as long again after it.
    let mut vouched = Instant::now();
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = peer.closing() => return,
        }
        let Some(me) = inner.upgrade() else { return };
        let now = Instant::now();
        let waited = me.longest_wait(now).unwrap_or_default();
        if waited < timeout || now.duration_since(vouched) < timeout {
            continue;
        }
        drop(me);
        let asked = peer.request_with(
            "ping",
            crate::peer::NO_PARAMS,
            RequestOptions::new().timeout(Some(timeout)),
        );
        match asked.await {
            Err(RequestError::Closed(_)) => return,
            // No answer in time: the child hangs.
            Err(RequestError::Timeout) => {
                let why = format!(
                    "it did not answer a ping within {timeout:?} while a request had waited \
                     {waited:?}"
                );
                tracing::warn!(%why, "mcpwire bridge: the child server hangs; killing it");
                if let Some(me) = inner.upgrade() {
                    me.counters.child_hangs.fetch_add(1, Ordering::Relaxed);
                    *me.child_gone.locked() =
                        format!("the child server hung ({why}); it is starting again");
                }
                let _ = hung.set(why);
                peer.close();
                return;
            }
            // An answer, even an error, is a sign of life.
            Ok(_) | Err(_) => vouched = Instant::now(),
        }
    }
}
