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

#[test]
fn shards_harvest_everything_once_and_start_over() {
    let s = Shards::new(3, 2);
    for i in 0..30u64 {
        let outcome = if i % 10 == 0 { Err("timeout".to_owned()) } else { Ok(()) };
        s.record(i as usize, (i % 2) as usize, Duration::from_micros(100 + i), outcome, 10, 20);
    }
    let h = s.harvest();
    assert_eq!(h[0].requests() + h[1].requests(), 30);
    assert_eq!(h[0].errors["timeout"], 3);
    assert_eq!(h[0].bytes_sent + h[1].bytes_sent, 300);
    assert_eq!(h[1].ok.max(), 129);
    let again = s.harvest();
    assert_eq!(again[0].requests() + again[1].requests(), 0);
}

#[test]
fn latencies_past_an_hour_saturate() {
    let mut t = OpTally::new();
    t.record(Duration::from_secs(7200), Ok(()), 0, 0);
    t.record(Duration::ZERO, Ok(()), 0, 0);
    assert_eq!(t.ok.len(), 2);
    assert!(t.ok.max() >= MAX_LATENCY_US && t.ok.min() == 1);
}
