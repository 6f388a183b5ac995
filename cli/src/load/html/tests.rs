use super::*;
use crate::load::report::{OpReport, Point};
use std::collections::BTreeMap;
use std::time::Duration;

fn second(requests: u64, errors: u64) -> crate::load::report::OpSecond {
    crate::load::report::OpSecond { requests, errors, p50_us: 5000, p90_us: 9000, p99_us: 9900 }
}

fn report() -> Report {
    let mut t = OpTally::new();
    for i in 1..=10_000u64 {
        t.record(Duration::from_micros(i), Ok(()), 1, 2);
    }
    t.record(Duration::from_micros(5), Err("timeout".into()), 1, 0);
    Report {
        target: "tcp:<host>&co".into(),
        http_version: None,
        era: "modern",
        protocol_version: "2026-07-28".into(),
        method: "tools/call echo".into(),
        concurrency: 4,
        model: serde_json::json!({"kind": "open", "rate": 100, "max_in_flight": 10}),
        ops: vec![OpReport {
            name: "tools/call echo".into(),
            tally: t,
            max_p99_ms: None,
            max_error_rate: None,
        }],
        elapsed: Duration::from_secs(2),
        bytes: Some((10, 20)),
        cpu: None,
        peak_in_flight: 3,
        interrupted: false,
        late: 0,
        dropped: 0,
        sent: 0,
        timeline: vec![
            Point {
                t: 1.0,
                requests: 5000,
                errors: 1,
                ops: vec![second(5000, 1)],
                error_kinds: [("timeout".to_owned(), 1)].into(),
            },
            Point {
                t: 2.0,
                requests: 5001,
                errors: 0,
                ops: vec![second(5001, 0)],
                error_kinds: BTreeMap::new(),
            },
        ],
        capacity: None,
        log_error: None,
        replay: None,
    }
}

#[test]
fn the_page_is_self_contained_and_escapes_what_it_quotes() {
    let page = render(&report(), &["budget broken: <x>".into()]);
    assert!(page.contains("default-src 'none'"));
    for external in ["http:", "https:", "src=", "href=", "<script", "@import", "url("] {
        assert!(!page.contains(external), "{external}");
    }
    assert!(page.contains("tcp:&lt;host&gt;&amp;co") && !page.contains("<host>"));
    assert!(page.contains("budget broken: &lt;x&gt;"));
    assert!(page.contains(r#"<svg id="percentiles""#) && page.contains(r#"<svg id="throughput""#));
    // 10,000 successes: the curve reaches four nines, at the max (10 ms).
    assert!(page.contains(">99.99%<"), "{page}");
    assert!(page.contains("<td>10.007</td>") || page.contains("<td>10.000</td>"), "{page}");
    assert_eq!(page.matches(r#"class="rps""#).count(), 2);
    assert_eq!(page.matches(r#"class="eps""#).count(), 1);
    assert!(!page.contains(r#"id="capacity""#));
    // Latency over time leads: a line per quantile through both seconds; errors by kind.
    let lead = page.find(r#"<svg id="latency-time-0""#).expect("latency over time");
    assert!(lead < page.find(r#"<svg id="percentiles""#).unwrap());
    for q in ["p50", "p90", "p99"] {
        assert_eq!(page.matches(&format!(r#"class="lot {q}""#)).count(), 1, "{q}");
    }
    assert!(page.contains(r#"<svg id="errors-time""#));
    assert_eq!(page.matches(r#"class="ekind" data-name="timeout""#).count(), 1);
    assert!(!page.contains(r#"class="stage""#), "no stages, no marks");
    // Stages: each one after the first is marked on all three plots over time.
    let mut staged = report();
    staged.model = serde_json::json!({"kind": "closed", "concurrency": [
        {"duration_s": 1.0, "target": 2.0}, {"duration_s": 1.0, "target": 4.0}]});
    assert_eq!(render(&staged, &[]).matches(r#"class="stage""#).count(), 3);
    // A merge of logs keeps no per-second latencies, and says so.
    let mut merged = report();
    for p in &mut merged.timeline {
        p.ops.clear();
        p.error_kinds.clear();
    }
    let page = render(&merged, &[]);
    assert!(!page.contains("latency-time-") && page.contains("not kept in HdrHistogram"));
    assert!(page.contains("<p>No errors.</p>"));
    let mut with = report();
    with.capacity = Some(serde_json::json!({"last_held_rps": 200.0, "steps": [
        {"rate": 100.0, "achieved_rps": 100.0, "p99_us": 1500, "error_rate": 0.0, "late": 0, "dropped": 0, "held": true},
        {"rate": 200.0, "achieved_rps": 199.0, "p99_us": 2500, "error_rate": 0.0, "late": 0, "dropped": 0, "held": true},
        {"rate": 400.0, "achieved_rps": 300.0, "p99_us": 900000, "error_rate": 0.2, "late": 9, "dropped": 80, "held": false},
    ]}));
    let page = render(&with, &[]);
    assert!(page.contains("last rate that held 200.0"), "{page}");
    assert_eq!(page.matches("<td>held</td>").count(), 2);
    assert!(
        page.contains("<td>900.000</td><td>0.2000</td><td>9</td><td>80</td><td>broke</td>"),
        "{page}"
    );
}

#[test]
fn the_curve_rises_and_stops_at_the_depth_the_count_supports() {
    let t = report().ops.remove(0).tally;
    let c = curve(&t.ok);
    assert!(c.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    assert!((c.last().unwrap().0 - 4.0).abs() < 1e-9);
    assert!(curve(&crate::load::tally::histogram()).is_empty());
    assert_eq!(percentile_label(0.0), "0%");
    assert_eq!(percentile_label(1.0), "90%");
    assert_eq!(percentile_label(2.0), "99%");
    assert_eq!(percentile_label(3.0), "99.9%");
    assert_eq!(nice_step(950.0, 5.0), 200.0);
}

#[test]
fn stages_begin_where_the_ones_before_end() {
    let stages = serde_json::json!({"kind": "closed", "concurrency": [
        {"duration_s": 2.0, "target": 10.0},
        {"duration_s": 3.5, "target": 20.0},
        {"duration_s": 1.0, "target": 0.0},
    ]});
    assert_eq!(time::stage_starts(&stages), vec![2.0, 5.5]);
    let open = serde_json::json!({"kind": "open", "rate": [{"duration_s": 1.0, "target": 5.0}]});
    assert!(time::stage_starts(&open).is_empty());
    assert!(time::stage_starts(&serde_json::json!({"kind": "open", "rate": 100})).is_empty());
}
