use super::*;

#[test]
fn a_lane_behind_owes_only_what_the_request_total_leaves() {
    let claimed = AtomicU64::new(0);
    assert_eq!(owed(3, None, &claimed), 3, "without --requests every due request is owed");
    let claimed = AtomicU64::new(120);
    assert_eq!(owed(1, Some(120), &claimed), 0, "all 120 sent: nothing owed");
    let claimed = AtomicU64::new(118);
    assert_eq!(owed(5, Some(120), &claimed), 2, "two of the 120 were never sent");
    assert_eq!(owed(5, Some(120), &claimed), 0, "a second lane finds them counted");
    let claimed = AtomicU64::new(0);
    assert_eq!(owed(4, Some(120), &claimed), 4);
    assert_eq!(claimed.load(Ordering::Relaxed), 4);
}
