//! `--metrics ADDR`: the run's metrics in the Prometheus (OpenMetrics) text format at
//! `/metrics`, encoded by `prometheus-client` from a [`Snapshot`] at each scrape, served on hyper.
//!
//! Bounded against slow or hostile scrapers: at most [`MAX_SCRAPERS`] connections at once (one
//! past them is closed unanswered), request heads of at most [`MAX_HEAD_BYTES`] read within
//! [`HEAD_TIMEOUT`], and no connection kept past [`CONNECTION_LIFETIME`]. A page's size is fixed
//! by the operations and their error kinds (both bounded), whoever asks. The requests' path
//! never waits for a scrape: a scrape takes the snapshot's lock as long as a copy takes.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{Buckets, Shared, Snapshot};

/// The most scrape connections open at once.
pub const MAX_SCRAPERS: usize = 16;
/// How long a connection may take to send a request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a scrape connection is kept (keep-alive included).
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// The largest request head read (hyper's smallest buffer).
pub const MAX_HEAD_BYTES: usize = 8192;

/// The OpenMetrics text format's media type.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `/metrics` server of one run.
pub(super) struct Server {
    stop: CancellationToken,
}

impl Server {
    /// Binds `addr` and serves until [`Server::stop`].
    pub(super) async fn start(addr: &str, shared: Arc<Shared>) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        eprintln!("mcpwire: metrics on http://{local}/metrics");
        let stop = CancellationToken::new();
        tokio::spawn(accept(listener, shared, stop.clone()));
        Ok(Self { stop })
    }

    pub(super) fn stop(self) {
        self.stop.cancel();
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                // Out of descriptors, say: try again shortly rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if open.fetch_add(1, Ordering::Relaxed) >= MAX_SCRAPERS {
            open.fetch_sub(1, Ordering::Relaxed);
            drop(stream);
            continue;
        }
        let (shared, open, stop) = (shared.clone(), open.clone(), stop.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(answer(&req, &shared)) }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                () = stop.cancelled() => {}
                _ = tokio::time::timeout(CONNECTION_LIFETIME, conn) => {}
            }
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

fn answer(req: &Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    let reply = |status, kind: &'static str, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(kind));
        r
    };
    if req.uri().path() != "/metrics" {
        return reply(StatusCode::NOT_FOUND, "text/plain", "not found: try /metrics\n".into());
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "GET /metrics\n".into());
    }
    let text = encode(shared.snapshot());
    shared.scraped.send_modify(|n| *n += 1);
    reply(StatusCode::OK, CONTENT_TYPE, text)
}

/// The page for one snapshot.
#[must_use]
pub fn encode(snapshot: Snapshot) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Page(snapshot)));
    let mut out = String::new();
    // Writing into a String does not fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

/// A snapshot as a `prometheus-client` collector.
#[derive(Debug)]
struct Page(Snapshot);

impl Collector for Page {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let mut e = encoder.encode_descriptor(
            "mcpwire_load_requests",
            "Requests answered (successes and failures), per operation.",
            None,
            MetricType::Counter,
        )?;
        for (name, op) in s.names.iter().zip(&s.ops) {
            let labels = [("operation", name.as_str())];
            e.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(&op.requests, None)?;
        }
        let mut e = encoder.encode_descriptor(
            "mcpwire_load_errors",
            "Failed requests, per operation and kind (as in the report's errors_by_kind).",
            None,
            MetricType::Counter,
        )?;
        for (name, op) in s.names.iter().zip(&s.ops) {
            for (kind, n) in &op.errors {
                let labels = [("operation", name.as_str()), ("kind", kind.as_str())];
                e.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(n, None)?;
            }
        }
        let gauge = ConstGauge::new(i64::try_from(s.in_flight).unwrap_or(i64::MAX));
        let e = encoder.encode_descriptor(
            "mcpwire_load_in_flight",
            "Requests in flight (the whole run's), as of the last second.",
            None,
            gauge.metric_type(),
        )?;
        gauge.encode(e)?;
        let mut e = encoder.encode_descriptor(
            "mcpwire_load_latency",
            "Latency of the answered requests, per operation and outcome (ok or error).",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for (name, op) in s.names.iter().zip(&s.ops) {
            for (outcome, b) in [("ok", &op.ok), ("error", &op.failed)] {
                let labels = [("operation", name.as_str()), ("outcome", outcome)];
                histogram(e.encode_family(&labels)?, b)?;
            }
        }
        Ok(())
    }
}

fn histogram(
    mut e: prometheus_client::encoding::MetricEncoder<'_>,
    b: &Buckets,
) -> Result<(), std::fmt::Error> {
    e.encode_histogram::<NoLabelSet>(b.sum, b.count(), &b.pairs(), None)
}
