//! `--otlp URL`: the run's metrics pushed to an OpenTelemetry collector over OTLP/HTTP, as the
//! official protobuf messages (`opentelemetry-proto`, encoded with prost) POSTed with hyper.
//!
//! Cumulative temporality throughout (a collector or a backend turns it into rates): the
//! requests and the errors by kind as monotonic sums, the requests in flight as a gauge, the
//! latencies as explicit-bucket histograms on [`super::BOUNDS_US`] (in seconds).
//!
//! One push at a time, every `--otlp-interval` and once more at the end, each given at most
//! [`PUSH_TIMEOUT`]: a collector that is slow, down or refusing never holds the run up (the push
//! runs in its own task) and never makes anything queue (the next push sends the newer values).
//! The first failure is told at once; at the end, how many failed when more did.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{Method, Request, Uri, header};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use mcpwire::http::{Connector, Dialer};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Gauge, Histogram, HistogramDataPoint, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics, Sum, metric, number_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{BOUNDS_US, Buckets, Shared, Snapshot};

/// The longest one push may take, connection included.
pub const PUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The path OTLP/HTTP collectors take metrics on.
const METRICS_PATH: &str = "/v1/metrics";

/// `--otlp`: an `http://` URL; one without a path gets `/v1/metrics`.
pub(super) fn parse_url(s: &str) -> Result<Uri, String> {
    let uri: Uri = s.parse().map_err(|e| format!("not a URL: {e}"))?;
    if uri.scheme_str() != Some("http") || uri.authority().is_none() {
        return Err("expected an http:// URL such as http://127.0.0.1:4318".into());
    }
    if uri.path() == "/" && uri.query().is_none() {
        let authority = uri.authority().map(ToString::to_string).unwrap_or_default();
        return format!("http://{authority}{METRICS_PATH}")
            .parse()
            .map_err(|e| format!("not a URL: {e}"));
    }
    Ok(uri)
}

/// The pushes of one run.
pub(super) struct Pusher {
    stop: CancellationToken,
    task: JoinHandle<Option<String>>,
}

impl Pusher {
    pub(super) fn start(url: Uri, every: Duration, target: &str, shared: Arc<Shared>) -> Self {
        let stop = CancellationToken::new();
        let resource = resource(target);
        let task = tokio::spawn(pushes(url, every, resource, shared, stop.clone()));
        Self { stop, task }
    }

    /// Makes the last push; what to tell when pushes failed.
    pub(super) async fn finish(self) -> Option<String> {
        self.stop.cancel();
        self.task.await.ok().flatten()
    }
}

async fn pushes(
    url: Uri,
    every: Duration,
    resource: Resource,
    shared: Arc<Shared>,
    stop: CancellationToken,
) -> Option<String> {
    // TCP keepalive at hyper's pool idle timeout (90 s), as hyper's plain `build_http` sets.
    let client = match Dialer::new().tcp_keepalive(Duration::from_secs(90)).client() {
        Ok(c) => c,
        Err(e) => return Some(format!("no OTLP push to {url}: {e}")),
    };
    let (mut made, mut failed, mut last_error) = (0u64, 0u64, None);
    let mut next = tokio::time::Instant::now() + every;
    loop {
        let last = tokio::select! {
            () = stop.cancelled() => true,
            () = tokio::time::sleep_until(next) => false,
        };
        next = tokio::time::Instant::now() + every;
        let body = request(&shared.snapshot(), &resource).encode_to_vec();
        let outcome = if last {
            push(&client, &url, body).await
        } else {
            // The run's end cuts a push short: the last one, with the final values, goes now.
            tokio::select! {
                r = push(&client, &url, body) => r,
                () = stop.cancelled() => continue,
            }
        };
        made += 1;
        if let Err(e) = outcome {
            failed += 1;
            if failed == 1 {
                eprintln!(
                    "mcpwire: the OTLP push to {url} failed: {e} (the run goes on; further \
                     failures are counted)"
                );
            }
            last_error = Some(e);
        }
        if last {
            break;
        }
    }
    // The first failure was told when it came; the count only when there were more.
    last_error
        .filter(|_| failed > 1)
        .map(|e| format!("{failed} of {made} OTLP pushes to {url} failed (the last: {e})"))
}

async fn push(
    client: &Client<Connector, Full<Bytes>>,
    url: &Uri,
    body: Vec<u8>,
) -> Result<(), String> {
    let req = Request::builder()
        .method(Method::POST)
        .uri(url.clone())
        .header(header::CONTENT_TYPE, "application/x-protobuf")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    match tokio::time::timeout(PUSH_TIMEOUT, client.request(req)).await {
        Err(_) => Err(format!("no answer within {} s", PUSH_TIMEOUT.as_secs())),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(r)) if r.status().is_success() => Ok(()),
        Ok(Ok(r)) => Err(format!("HTTP {}", r.status())),
    }
}

fn string(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.to_owned())) }),
        ..KeyValue::default()
    }
}

fn resource(target: &str) -> Resource {
    Resource {
        attributes: vec![string("service.name", "mcpwire-load"), string("mcpwire.target", target)],
        ..Resource::default()
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The export request for one snapshot.
#[must_use]
pub fn request(s: &Snapshot, resource: &Resource) -> ExportMetricsServiceRequest {
    let (start, at) = (nanos(s.start), nanos(s.at));
    let cumulative = AggregationTemporality::Cumulative as i32;
    let point = |attributes: Vec<KeyValue>, v: u64| NumberDataPoint {
        attributes,
        start_time_unix_nano: start,
        time_unix_nano: at,
        value: Some(number_data_point::Value::AsInt(i64::try_from(v).unwrap_or(i64::MAX))),
        ..NumberDataPoint::default()
    };
    let sum = |name: &str, description: &str, unit: &str, data_points| Metric {
        name: name.into(),
        description: description.into(),
        unit: unit.into(),
        data: Some(metric::Data::Sum(Sum {
            data_points,
            aggregation_temporality: cumulative,
            is_monotonic: true,
        })),
        ..Metric::default()
    };
    let ops = || s.names.iter().zip(&s.ops);
    let requests =
        ops().map(|(name, o)| point(vec![string("operation", name)], o.requests)).collect();
    let errors = ops()
        .flat_map(|(name, o)| {
            o.errors
                .iter()
                .map(|(kind, n)| point(vec![string("operation", name), string("kind", kind)], *n))
        })
        .collect();
    let bounds: Vec<f64> =
        BOUNDS_US[..BOUNDS_US.len() - 1].iter().map(|&b| b as f64 / 1e6).collect();
    let histogram = |name: &str, outcome: &str, b: &Buckets| HistogramDataPoint {
        attributes: vec![string("operation", name), string("outcome", outcome)],
        start_time_unix_nano: start,
        time_unix_nano: at,
        count: b.count(),
        sum: Some(b.sum),
        bucket_counts: b.counts.to_vec(),
        explicit_bounds: bounds.clone(),
        ..HistogramDataPoint::default()
    };
    let latencies = ops()
        .flat_map(|(name, o)| [histogram(name, "ok", &o.ok), histogram(name, "error", &o.failed)])
        .collect();
    let metrics = vec![
        sum("mcpwire.load.requests", "Requests answered, per operation.", "{request}", requests),
        sum("mcpwire.load.errors", "Failed requests, per operation and kind.", "{request}", errors),
        Metric {
            name: "mcpwire.load.in_flight".into(),
            description: "Requests in flight (the whole run's).".into(),
            unit: "{request}".into(),
            data: Some(metric::Data::Gauge(Gauge {
                data_points: vec![point(Vec::new(), s.in_flight)],
            })),
            ..Metric::default()
        },
        Metric {
            name: "mcpwire.load.latency".into(),
            description: "Latency of the answered requests, per operation and outcome.".into(),
            unit: "s".into(),
            data: Some(metric::Data::Histogram(Histogram {
                data_points: latencies,
                aggregation_temporality: cumulative,
            })),
            ..Metric::default()
        },
    ];
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource.clone()),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "mcpwire-load".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                metrics,
                ..ScopeMetrics::default()
            }],
            ..ResourceMetrics::default()
        }],
    }
}
