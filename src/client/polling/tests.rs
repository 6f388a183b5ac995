//! The pacing of the polls; the whole flow against a server is in
//! `tests/client_tasks.rs`.

use super::*;

#[test]
fn polling_keeps_the_servers_suggestion_within_its_bounds() {
    let p = TaskPolling::new()
        .floor(Duration::from_millis(10))
        .ceiling(Duration::from_secs(5))
        .start(Duration::from_millis(50));
    assert_eq!(p.next(Some(0), None), Duration::from_millis(10));
    assert_eq!(p.next(Some(10), None), Duration::from_millis(10));
    assert_eq!(p.next(Some(9), None), Duration::from_millis(10));
    assert_eq!(p.next(Some(5_000), None), Duration::from_secs(5));
    assert_eq!(p.next(Some(5_001), None), Duration::from_secs(5));
    assert_eq!(p.next(Some(u64::MAX), None), Duration::from_secs(5));
    // Without a suggestion: the start, then doubling up to the ceiling.
    let mut wait = p.next(None, None);
    let mut seen = vec![wait];
    for _ in 0..10 {
        wait = p.next(None, Some(wait));
        seen.push(wait);
    }
    assert_eq!(seen[..4], [50, 100, 200, 400].map(Duration::from_millis));
    assert_eq!(*seen.last().unwrap(), Duration::from_secs(5));
    // A ceiling under the floor is the floor.
    let odd = TaskPolling::new().floor(Duration::from_secs(1)).ceiling(Duration::ZERO);
    assert_eq!(odd.next(Some(1), None), Duration::from_secs(1));
}
