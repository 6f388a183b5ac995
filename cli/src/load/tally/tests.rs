use std::time::Duration;

use super::*;

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
