use std::time::Duration;

use super::*;

#[test]
fn in_order_and_out_of_order_deadlines_come_out_earliest_first() {
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    let mut t = Timers::default();
    for (ms, id) in [(10, 1), (20, 2), (5, 3), (30, 4), (15, 5), (30, 6)] {
        t.push(at(ms), id);
    }
    assert_eq!((t.fifo.len(), t.heap.len()), (4, 2));
    let order: Vec<_> = std::iter::from_fn(|| t.pop().map(|(_, id)| id)).collect();
    assert_eq!(order, [3, 1, 5, 2, 4, 6]);
}

#[test]
fn settle_drops_stale_entries_from_both_fronts_only() {
    let t0 = Instant::now();
    let mut t = Timers::default();
    t.push(t0 + Duration::from_millis(10), 1);
    t.push(t0 + Duration::from_millis(20), 2);
    t.push(t0 + Duration::from_millis(5), 3);
    t.push(t0 + Duration::from_millis(1), 4);
    let live = |(_, id): Timer| id == 2 || id == 4;
    t.settle(live);
    // The heap's front (4) is live, so 3 stays below it; the queue's front 1 is dropped.
    assert_eq!(t.peek().map(|(_, id)| id), Some(4));
    assert_eq!(t.len(), 3);
    t.retain(live);
    assert_eq!(t.len(), 2);
}
