use std::time::{Duration, SystemTime};

use super::input::from_report;
use super::*;
use crate::load::hdr_log::HdrLog;
use crate::load::tally::OpTally;

const T: Thresholds = Thresholds {
    p50: Limit::Share(0.10),
    p99: Limit::Share(0.10),
    throughput: Limit::Share(0.10),
    error_points: 0.01,
    alpha: 0.05,
};

/// One operation whose seconds have these p50s (p99 twice that), 1000 requests each.
fn run(name: &str, p50s: &[f64]) -> Run {
    let seconds: Vec<Second> = p50s
        .iter()
        .map(|&p| Second {
            len_s: 1.0,
            requests: 1000,
            errors: 0,
            p50: Some(p),
            p99: Some(2.0 * p),
        })
        .collect();
    let mut sorted = p50s.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let op = OpRun {
        name: name.into(),
        seconds,
        p50_us: median,
        p99_us: 2.0 * sorted[sorted.len() - 1],
        throughput: 1000.0,
        error_rate: 0.0,
    };
    Run::from([(tag_of_name(name), op)])
}

fn tag_of_name(name: &str) -> String {
    crate::load::hdr_log::tag_of(name)
}

fn status(rows: &[Row], m: Metric) -> Status {
    rows.iter().find(|r| r.metric == m).unwrap().status
}

const BASE: [f64; 8] = [100.0, 104.0, 98.0, 110.0, 101.0, 97.0, 103.0, 99.0];

#[test]
fn a_consistent_slowdown_is_a_regression_and_noise_is_not() {
    let slow: Vec<f64> = BASE.iter().map(|v| v + 2000.0).collect();
    let rows = compare(&run("a", &BASE), &run("a", &slow), &T).unwrap();
    assert_eq!(status(&rows, Metric::P50), Status::Regression, "{rows:?}");
    assert_eq!(status(&rows, Metric::P99), Status::Regression);
    assert_eq!(status(&rows, Metric::Throughput), Status::Ok);
    assert_eq!(status(&rows, Metric::ErrorRate), Status::Ok);
    assert!(rows[0].p.unwrap() < 0.001, "{rows:?}");
    assert!(verdict(&rows, &T).starts_with("regression: a p50 +"), "{}", verdict(&rows, &T));
    // The same seconds shuffled: no regression, every p-value high.
    let same = [99.0, 110.0, 97.0, 104.0, 100.0, 103.0, 98.0, 101.0];
    let rows = compare(&run("a", &BASE), &run("a", &same), &T).unwrap();
    assert!(rows.iter().all(|r| r.status == Status::Ok), "{rows:?}");
    assert!(verdict(&rows, &T).starts_with("no regression (4 checks"));
    // And faster is an improvement, never a regression.
    let rows = compare(&run("a", &slow), &run("a", &BASE), &T).unwrap();
    assert_eq!(status(&rows, Metric::P50), Status::Improved);
}

#[test]
fn a_change_must_be_both_past_its_limit_and_significant() {
    // One slow second lifts the run's p99 by far, but the seconds do not differ overall.
    let mut spike = BASE;
    spike[3] = 5000.0;
    let rows = compare(&run("a", &BASE), &run("a", &spike), &T).unwrap();
    assert_eq!(status(&rows, Metric::P99), Status::NotSignificant, "{rows:?}");
    // A consistent shift of 5%: significant, within a 10% limit, past a 2 µs one.
    let shifted: Vec<f64> = BASE.iter().map(|v| v * 1.05 + 5.0).collect();
    let rows = compare(&run("a", &BASE), &run("a", &shifted), &T).unwrap();
    assert_eq!(status(&rows, Metric::P50), Status::Ok, "{rows:?}");
    let tight = Thresholds { p50: Limit::Amount(2.0), ..T };
    let rows = compare(&run("a", &BASE), &run("a", &shifted), &tight).unwrap();
    assert_eq!(status(&rows, Metric::P50), Status::Regression, "{rows:?}");
}

#[test]
fn throughput_and_errors_are_tested_over_their_seconds() {
    let mut base = run("a", &BASE);
    let mut new = run("a", &BASE);
    let op = new.get_mut("a").unwrap();
    op.throughput = 700.0;
    op.error_rate = 0.05;
    for s in &mut op.seconds {
        s.requests = 700;
        s.errors = 35;
    }
    let rows = compare(&base, &new, &T).unwrap();
    assert_eq!(status(&rows, Metric::Throughput), Status::Regression, "{rows:?}");
    assert_eq!(status(&rows, Metric::ErrorRate), Status::Regression, "{rows:?}");
    assert_eq!(rows[2].metric.change(1000.0, 700.0), "-30.0%");
    assert_eq!(rows[3].metric.change(0.0, 0.05), "+5.00 pts");
    // A last second cut short is left out of the test.
    base.get_mut("a").unwrap().seconds.push(Second {
        len_s: 0.1,
        requests: 1,
        errors: 0,
        p50: Some(1.0),
        p99: Some(1.0),
    });
    let rows = compare(&base, &new, &T).unwrap();
    assert_eq!(rows[0].windows, (8, 8));
}

#[test]
fn different_operations_are_named_on_each_side() {
    let mut two = run("a", &BASE);
    two.extend(run("b c", &BASE));
    let e = compare(&two, &run("d", &BASE), &T).unwrap_err();
    assert_eq!(
        e, "the runs have different operations: only in BASE: a, b c; only in NEW: d",
        "{e}"
    );
}

#[test]
fn limits_parse_as_shares_times_and_points() {
    assert_eq!(parse_latency("10%"), Ok(Limit::Share(0.1)));
    assert_eq!(parse_latency("2ms"), Ok(Limit::Amount(2000.0)));
    assert_eq!(parse_latency("500us"), Ok(Limit::Amount(500.0)));
    assert!(parse_latency("2").is_err());
    assert!(parse_latency("-1%").is_err());
    assert_eq!(parse_throughput("500"), Ok(Limit::Amount(500.0)));
    assert_eq!(parse_throughput("5%"), Ok(Limit::Share(0.05)));
    assert_eq!(parse_points("1%"), Ok(0.01));
    assert_eq!(parse_points("0.01"), Ok(0.01));
    assert!(parse_points("2").is_err());
    assert!(parse_alpha("0").is_err() && parse_alpha("1").is_err() && parse_alpha("x").is_err());
    assert_eq!(T.show(Metric::Throughput), "-10%");
    let abs = Thresholds { p99: Limit::Amount(1500.0), ..T };
    assert_eq!(abs.show(Metric::P99), "+1.500 ms");
    assert_eq!(abs.show(Metric::ErrorRate), "+1.00 pts");
}

#[test]
fn the_markdown_has_the_table_and_a_verdict() {
    let slow: Vec<f64> = BASE.iter().map(|v| v + 2000.0).collect();
    let rows = compare(&run("tools/call echo", &BASE), &run("tools/call echo", &slow), &T).unwrap();
    let md = to_markdown(&rows, &T);
    assert!(
        md.contains("| operation | metric | base | new | change | p-value | limit | status (seconds) |\n| --- |"),
        "{md}"
    );
    assert!(md.contains("| `tools/call echo` | p50 | 0.101 ms | 2.101 ms |"), "{md}");
    assert!(md.contains("**REGRESSION (8/8 s)**"), "{md}");
    assert!(md.trim_end().ends_with("**Verdict: regression: tools/call echo p50 +1980.2%, tools/call echo p99 +1818.2% (alpha 0.05)**"), "{md}");
    let text = to_text(&rows, &T);
    assert!(text.starts_with("operation        metric"), "{text}");
    let v = to_json(&rows, &T);
    assert_eq!(v["regression"], true);
    assert_eq!(v["checks"][0]["seconds"], json!([8, 8]));
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn bad_inputs_get_a_reason_naming_the_file() {
    let cut = temp("cut.json");
    std::fs::write(&cut, r#"{"operations": [{"name": "a", "req"#).unwrap();
    let e = read(&cut).unwrap_err();
    assert!(e.contains("cut.json: not a load --json report: EOF while parsing"), "{e}");
    let old = temp("old.json");
    let report = json!({"operations": [{"name": "a", "requests": 1, "errors": 0,
        "throughput_rps": 1.0, "latency_us": {"p50": 1, "p99": 1}}],
        "timeline": [{"t_s": 1.0, "requests": 1, "errors": 0}]});
    std::fs::write(&old, report.to_string()).unwrap();
    let e = read(&old).unwrap_err();
    assert!(e.contains("old.json: its timeline has no per-operation seconds"), "{e}");
    let empty = temp("empty.hlog");
    HdrLog::create(&empty, "nothing", SystemTime::now()).unwrap().finish().unwrap();
    assert_eq!(read(&empty).unwrap_err(), format!("{}: no intervals in the log", empty.display()));
    assert!(read(&temp("missing.json")).unwrap_err().contains("missing.json: "));
    let junk = temp("junk.hlog");
    std::fs::write(&junk, "hello\n").unwrap();
    assert!(read(&junk).unwrap_err().contains("junk.hlog: not an interval log"));
}

#[test]
fn a_log_and_a_report_of_the_same_seconds_read_alike() {
    let path = temp("run.hlog");
    let log = HdrLog::create(&path, "c", SystemTime::UNIX_EPOCH).unwrap();
    let names = vec!["tools/call echo".to_owned()];
    let mut timeline = Vec::new();
    let mut whole = OpTally::new();
    for s in 0..3_u64 {
        let mut t = OpTally::new();
        for i in 0..100 {
            let outcome = if i < 2 * s { Err("x".into()) } else { Ok(()) };
            t.record(Duration::from_micros(100 + s * 50 + i), outcome, 0, 0);
        }
        log.write(&names, std::slice::from_ref(&t), Duration::from_secs(s), Duration::from_secs(1));
        timeline.push(json!({"t_s": s + 1, "requests": 100, "errors": 2 * s, "operations": [
            {"requests": 100, "errors": 2 * s, "p50_us": t.ok.value_at_quantile(0.5),
             "p99_us": t.ok.value_at_quantile(0.99)}]}));
        whole.add(&t);
    }
    log.finish().unwrap();
    let from_log = read(&path).unwrap();
    let report = json!({"operations": [{"name": "tools/call echo", "requests": 300, "errors": 6,
        "throughput_rps": 100.0, "latency_us": {"p50": whole.ok.value_at_quantile(0.5),
        "p99": whole.ok.value_at_quantile(0.99)}}], "timeline": timeline});
    let from_report = from_report(&report).unwrap();
    let (l, r) = (&from_log["tools/call_echo"], &from_report["tools/call_echo"]);
    assert_eq!(l.seconds, r.seconds);
    assert_eq!((l.p50_us, l.p99_us, l.throughput), (r.p50_us, r.p99_us, r.throughput));
    assert!((l.error_rate - 0.02).abs() < 1e-12 && (r.error_rate - 0.02).abs() < 1e-12);
    assert_eq!(r.name, "tools/call echo");
}
