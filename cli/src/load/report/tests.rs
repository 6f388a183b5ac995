use super::*;

#[test]
fn budgets_hold_at_their_bound_and_break_just_past_it() {
    // p99 of exactly 10 ms against --max-p99 10: holds; 10.001 ms: broken.
    assert!(judge("total", 10_000, 0.0, Some(10.0), None).is_empty());
    let b = judge("total", 10_001, 0.0, Some(10.0), None);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].budget, "max-p99");
    assert!(b[0].to_string().contains("--max-p99 10 ms"), "{}", b[0]);
    // Error rate exactly at the bound holds; one error more breaks it.
    assert!(judge("op", 0, error_rate(1, 100, 0), None, Some(0.01)).is_empty());
    let b = judge("op", 0, error_rate(2, 100, 0), None, Some(0.01));
    assert_eq!(b[0].budget, "max-error-rate");
    assert!(b[0].to_string().starts_with("budget broken: op error rate"));
    // Dropped requests count as failures.
    assert_eq!(error_rate(0, 99, 1), 0.01);
    assert_eq!(error_rate(0, 0, 0), 0.0);
}
