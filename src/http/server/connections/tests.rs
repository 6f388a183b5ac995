use super::*;

#[tokio::test(start_paused = true)]
async fn a_connection_is_idle_only_once_no_request_has_been_in_progress_for_the_bound() {
    use std::time::Duration;
    use tokio::time::{Instant, advance, timeout};
    const IDLE: Duration = Duration::from_secs(10);
    let c = Conn::new();
    // Nothing in progress from the start: idle after the bound, not before.
    let started = Instant::now();
    c.idle_for(IDLE).await;
    assert_eq!(started.elapsed(), IDLE);
    // Two requests at once (two streams of one HTTP/2 connection): busy until both end.
    let (a, b) = (c.busy(), c.busy());
    assert!(timeout(IDLE * 3, c.idle_for(IDLE)).await.is_err(), "idle with two in progress");
    drop(a);
    assert!(timeout(IDLE * 3, c.idle_for(IDLE)).await.is_err(), "idle with one in progress");
    // The clock starts when the last one ends.
    let idle = tokio::spawn({
        let c = c.clone();
        async move { c.idle_for(IDLE).await }
    });
    advance(IDLE / 2).await;
    drop(b);
    let ended = Instant::now();
    idle.await.unwrap();
    assert_eq!(ended.elapsed(), IDLE);
}

#[tokio::test]
async fn a_full_table_sheds_its_oldest_idle_connection_and_never_a_busy_one() {
    let t = Arc::new(Connections::default());
    let a = t.admit(2).await;
    let b = t.admit(2).await;
    let _working = a.conn.busy();
    // `a` is older but busy: `b` goes.
    let c = t.admit(2).await;
    tokio::time::timeout(std::time::Duration::from_secs(1), b.conn.shed()).await.unwrap();
    assert_eq!((t.len(), t.shed.load(Ordering::Relaxed)), (2, 1));
    drop(b);
    assert_eq!(t.len(), 2, "a shed connection's place was already taken");
    // Every connection busy: the next one waits until one ends.
    let _also = c.conn.busy();
    let waiting = tokio::spawn({
        let t = t.clone();
        async move { t.admit(2).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "admitted past the cap with every connection busy");
    drop(c);
    let d =
        tokio::time::timeout(std::time::Duration::from_secs(1), waiting).await.unwrap().unwrap();
    assert_eq!(t.len(), 2);
    drop((a, d));
    assert_eq!(t.len(), 0);
}
