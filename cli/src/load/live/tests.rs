use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use prost::Message as _;

use super::*;
use crate::load::tally::OpTally;

fn tally(latencies_us: &[u64], errors: &[&str]) -> OpTally {
    let mut t = OpTally::new();
    for &us in latencies_us {
        t.record(Duration::from_micros(us), Ok(()), 0, 0);
    }
    for kind in errors {
        t.record(Duration::from_micros(700), Err((*kind).to_owned()), 0, 0);
    }
    t
}

#[test]
fn buckets_place_each_latency_at_or_below_its_bound() {
    let mut b = Buckets::default();
    b.add(&tally(&[1, 10, 11, 999, 1_000, 1_001, 70_000_000, 3_600_000_000], &[]).ok);
    let i = |us: u64| BOUNDS_US.iter().position(|&x| x == us).unwrap();
    assert_eq!(b.counts[i(10)], 2, "1 and 10 µs are at most 10 µs");
    assert_eq!(b.counts[i(25)], 1);
    assert_eq!(b.counts[i(1_000)], 2, "999 and 1000 µs");
    assert_eq!(b.counts[i(2_500)], 1, "1001 µs is past 1 ms");
    assert_eq!(b.counts[i(100_000_000)], 1);
    assert_eq!(b.counts[BOUNDS_US.len() - 1], 1, "an hour is past the last bound: +Inf");
    assert_eq!(b.count(), 8);
    let sum = 1.0 + 10.0 + 11.0 + 999.0 + 1_000.0 + 1_001.0 + 70e6 + 3_600e6;
    assert!((b.sum - sum / 1e6).abs() / (sum / 1e6) < 1e-3, "{} vs {}", b.sum, sum / 1e6);
}

#[test]
fn intervals_add_up_and_error_kinds_are_bounded() {
    let mut s = Snapshot::new(vec!["echo".into(), "list".into()]);
    s.add(&[tally(&[100, 200], &["timeout"]), tally(&[50], &[])], 7);
    s.add(&[tally(&[300], &["timeout", "rpc_error_-32602"]), tally(&[], &[])], 3);
    assert_eq!(s.ops[0].requests, 6);
    assert_eq!(s.ops[0].errors["timeout"], 2);
    assert_eq!(s.ops[0].errors["rpc_error_-32602"], 1);
    assert_eq!(s.ops[0].ok.count(), 3);
    assert_eq!(s.ops[0].failed.count(), 3);
    assert_eq!(s.ops[1].requests, 1);
    assert_eq!(s.in_flight, 3, "the gauge is the last reading");
    assert_eq!(s.harvests, 2);

    // At the bound every kind is its own; past it, the new ones go to one kind, and the kinds
    // already kept still count apart.
    let mut s = Snapshot::new(vec!["echo".into()]);
    let kinds: Vec<String> = (0..MAX_ERROR_KINDS + 10).map(|i| format!("rpc_error_{i}")).collect();
    let first: Vec<&str> = kinds[..MAX_ERROR_KINDS - 1].iter().map(String::as_str).collect();
    s.add(&[tally(&[], &first)], 0);
    s.add(&[tally(&[], &[kinds[MAX_ERROR_KINDS - 1].as_str()])], 0);
    assert_eq!(s.ops[0].errors.len(), MAX_ERROR_KINDS);
    assert!(!s.ops[0].errors.contains_key(OTHER_KINDS));
    let past: Vec<&str> = kinds[MAX_ERROR_KINDS..].iter().map(String::as_str).collect();
    s.add(&[tally(&[], &past)], 0);
    s.add(&[tally(&[], &["rpc_error_0"])], 0);
    assert_eq!(s.ops[0].errors.len(), MAX_ERROR_KINDS + 1);
    assert_eq!(s.ops[0].errors[OTHER_KINDS], 10);
    assert_eq!(s.ops[0].errors["rpc_error_0"], 2);
    assert_eq!(s.ops[0].errors.values().sum::<u64>(), s.ops[0].requests);
}

fn sample() -> Snapshot {
    let mut s = Snapshot::new(vec!["echo".into(), "say \"hi\"\n".into()]);
    s.add(&[tally(&[40, 40, 2_000], &["timeout"]), tally(&[15], &[])], 5);
    s
}

#[test]
fn the_page_is_openmetrics_text_with_every_series() {
    let page = prom::encode(sample());
    for line in [
        "# TYPE mcpwire_load_requests counter",
        "mcpwire_load_requests_total{operation=\"echo\"} 4",
        "mcpwire_load_errors_total{operation=\"echo\",kind=\"timeout\"} 1",
        "mcpwire_load_in_flight 5",
        "# TYPE mcpwire_load_latency_seconds histogram",
        "# UNIT mcpwire_load_latency_seconds seconds",
        "mcpwire_load_latency_seconds_count{operation=\"echo\",outcome=\"ok\"} 3",
        "mcpwire_load_latency_seconds_bucket{le=\"0.00005\",operation=\"echo\",outcome=\"ok\"} 2",
        "mcpwire_load_latency_seconds_bucket{le=\"+Inf\",operation=\"echo\",outcome=\"ok\"} 3",
        "mcpwire_load_latency_seconds_count{operation=\"echo\",outcome=\"error\"} 1",
        // A name is escaped as a label value.
        "mcpwire_load_requests_total{operation=\"say \\\"hi\\\"\\n\"} 1",
        "# EOF",
    ] {
        assert!(page.lines().any(|l| l == line), "no line {line:?} in\n{page}");
    }
}

#[test]
fn the_export_request_decodes_with_the_official_schema() {
    let s = sample();
    let bytes = otlp::request(&s, &Default::default()).encode_to_vec();
    let req = ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap();
    let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
    let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mcpwire.load.requests",
            "mcpwire.load.errors",
            "mcpwire.load.in_flight",
            "mcpwire.load.latency"
        ]
    );
    let Some(metric::Data::Sum(requests)) = &metrics[0].data else { panic!("a sum") };
    assert!(requests.is_monotonic);
    assert_eq!(requests.data_points[0].value, Some(number_data_point::Value::AsInt(4)));
    let Some(metric::Data::Histogram(h)) = &metrics[3].data else { panic!("a histogram") };
    let ok = &h.data_points[0];
    assert_eq!(ok.count, 3);
    assert_eq!(ok.bucket_counts.len(), ok.explicit_bounds.len() + 1);
    assert_eq!(ok.bucket_counts.iter().sum::<u64>(), 3);
    assert!(ok.start_time_unix_nano <= ok.time_unix_nano && ok.start_time_unix_nano > 0);
}

#[test]
fn an_otlp_url_without_a_path_gets_the_metrics_path() {
    assert_eq!(
        otlp::parse_url("http://127.0.0.1:4318").unwrap().to_string(),
        "http://127.0.0.1:4318/v1/metrics"
    );
    assert_eq!(
        otlp::parse_url("http://c:4318/custom").unwrap().to_string(),
        "http://c:4318/custom"
    );
    assert!(otlp::parse_url("https://c:4318").is_err());
    assert!(otlp::parse_url("127.0.0.1:4318").is_err());
}
