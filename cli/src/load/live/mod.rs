//! Live metrics while a run lasts: `--metrics ADDR` serves them in the Prometheus (OpenMetrics)
//! text format at `/metrics` (`prom`), `--otlp URL` pushes them to an OpenTelemetry collector
//! over OTLP/HTTP (`otlp`).
//!
//! Nothing is added to the requests' path: the values are the tallies the window already
//! harvests every second (`window.rs`), added here into cumulative counters and fixed-bucket
//! histograms, with the requests in flight read at the same instant. A scrape or a push reads
//! those under a lock the harvest takes once a second; the drivers never take it. So the metrics
//! are at most a second old, and a run without these flags does exactly what it did before.
//!
//! What is exported, per operation: the requests, the errors by kind, and the latency of the
//! successes and of the failures (`outcome` `ok` or `error`) in [`BOUNDS_US`] buckets; and the
//! requests in flight (the whole run's: the generator does not count them per operation). The
//! run's total is the sum over operations (`sum(...)` in PromQL). As in the report, only measured
//! requests count (not the warm-up's); a `--find-capacity` search adds up all its steps.

mod otlp;
mod prom;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use clap::Args;
use hdrhistogram::Histogram;

use super::SetupError;
use super::tally::OpTally;

/// `load`'s live-metrics flags.
#[derive(Debug, Clone, Default, Args)]
pub struct LiveArgs {
    /// Serve the run's live metrics (requests, errors by kind, in flight, latency histograms)
    /// in the Prometheus text format at http://ADDR/metrics while it lasts, such as
    /// 127.0.0.1:9464 (updated every second).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// After the run, keep /metrics up until it has been scraped once more, for at most this
    /// many seconds, so that the scraper sees the run's last second.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0, requires = "metrics",
          value_parser = parse_linger)]
    pub metrics_linger: f64,
    /// Push the run's metrics to an OpenTelemetry collector over OTLP/HTTP (protobuf), such as
    /// http://127.0.0.1:4318 (a URL without a path gets /v1/metrics); once more at the end.
    #[arg(long, value_name = "URL", value_parser = otlp::parse_url)]
    pub otlp: Option<http::Uri>,
    /// Seconds between two OTLP pushes.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, requires = "otlp",
          value_parser = parse_interval)]
    pub otlp_interval: f64,
}

fn parse_linger(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=3600.0).contains(&v) => Ok(v),
        _ => Err("expected seconds from 0 to 3600".into()),
    }
}

fn parse_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.1..=3600.0).contains(&v) => Ok(v),
        _ => Err("expected seconds from 0.1 to 3600".into()),
    }
}

/// The histograms' upper bounds in microseconds (and `+Inf` past the last): 1, 2.5 and 5 per
/// decade from 10 µs to 50 s, then 100 s. Values are HdrHistogram's (3 significant digits), so a
/// latency within 0.1% of a bound may land in the bucket above it.
pub const BOUNDS_US: [u64; 23] = [
    10,
    25,
    50,
    100,
    250,
    500,
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    // Past this the `+Inf` bucket: the requests' timeout is 60 s by default.
    u64::MAX,
];

/// The most error kinds kept apart per operation (a kind holds the server's error code, which a
/// server could vary without end); the errors of any kind past them are counted under
/// [`OTHER_KINDS`].
pub const MAX_ERROR_KINDS: usize = 32;

/// The kind the errors past [`MAX_ERROR_KINDS`] are counted under.
pub const OTHER_KINDS: &str = "other_kinds";

/// One latency histogram in [`BOUNDS_US`] buckets (the last one `+Inf`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Buckets {
    /// Per bucket, not cumulative.
    pub counts: [u64; BOUNDS_US.len()],
    /// In seconds.
    pub sum: f64,
}

impl Buckets {
    /// Adds an interval's HdrHistogram (µs).
    pub fn add(&mut self, h: &Histogram<u64>) {
        for v in h.iter_recorded() {
            let us = v.value_iterated_to();
            let i = BOUNDS_US.partition_point(|&b| b < us);
            self.counts[i.min(BOUNDS_US.len() - 1)] += v.count_at_value();
            self.sum += h.median_equivalent(us) as f64 * v.count_at_value() as f64 / 1e6;
        }
    }

    #[must_use]
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// (upper bound in seconds, count) pairs, the last bound `+Inf`.
    #[must_use]
    pub fn pairs(&self) -> Vec<(f64, u64)> {
        BOUNDS_US.iter().zip(self.counts).map(|(&b, n)| (bound_seconds(b), n)).collect()
    }
}

fn bound_seconds(us: u64) -> f64 {
    if us == u64::MAX { f64::INFINITY } else { us as f64 / 1e6 }
}

/// One operation's counters since the run began.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpMetrics {
    pub requests: u64,
    pub errors: BTreeMap<String, u64>,
    pub ok: Buckets,
    pub failed: Buckets,
}

impl OpMetrics {
    fn add(&mut self, t: &OpTally) {
        self.requests += t.requests();
        for (kind, n) in &t.errors {
            let key = if self.errors.contains_key(kind) || self.errors.len() < MAX_ERROR_KINDS {
                kind.as_str()
            } else {
                OTHER_KINDS
            };
            match self.errors.get_mut(key) {
                Some(v) => *v += n,
                None => {
                    self.errors.insert(key.to_owned(), *n);
                }
            }
        }
        self.ok.add(&t.ok);
        self.failed.add(&t.failed);
    }
}

/// Everything exported, as of the last harvest.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The operations' names, in the report's order.
    pub names: Arc<[String]>,
    pub ops: Vec<OpMetrics>,
    pub in_flight: u64,
    /// When the run's counting began, and when they were last updated.
    pub start: SystemTime,
    pub at: SystemTime,
    /// Harvests so far.
    pub harvests: u64,
}

impl Snapshot {
    #[must_use]
    pub fn new(names: Vec<String>) -> Self {
        let now = SystemTime::now();
        Self {
            ops: vec![OpMetrics::default(); names.len()],
            names: names.into(),
            in_flight: 0,
            start: now,
            at: now,
            harvests: 0,
        }
    }

    /// Adds one harvested interval (the tallies in the operations' order).
    pub fn add(&mut self, interval: &[OpTally], in_flight: usize) {
        for (o, t) in self.ops.iter_mut().zip(interval) {
            o.add(t);
        }
        self.in_flight = in_flight as u64;
        self.at = SystemTime::now();
        self.harvests += 1;
    }
}

/// What the exporters share: the metrics, and a count of scrapes.
#[derive(Debug)]
pub(crate) struct Shared {
    snapshot: Mutex<Snapshot>,
    /// Bumped by each scrape served; see [`Live::finish`].
    scraped: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    fn snapshot(&self) -> Snapshot {
        self.snapshot.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The live exporters of one run.
pub(crate) struct Live {
    shared: Arc<Shared>,
    server: Option<prom::Server>,
    pusher: Option<otlp::Pusher>,
    linger: Duration,
}

impl Live {
    /// Binds `--metrics` and starts the pushes of `--otlp`; `None` when neither is asked.
    ///
    /// # Errors
    ///
    /// `--metrics`'s address cannot be bound.
    pub(crate) async fn start(
        args: &LiveArgs,
        names: Vec<String>,
        target: &str,
    ) -> Result<Option<Self>, SetupError> {
        if args.metrics.is_none() && args.otlp.is_none() {
            return Ok(None);
        }
        let shared = Arc::new(Shared {
            snapshot: Mutex::new(Snapshot::new(names)),
            scraped: tokio::sync::watch::Sender::new(0),
        });
        let server = match &args.metrics {
            Some(addr) => Some(prom::Server::start(addr, shared.clone()).await.map_err(|e| {
                SetupError::Metrics(format!("cannot serve metrics on {addr}: {e}"))
            })?),
            None => None,
        };
        let pusher = args.otlp.clone().map(|url| {
            let every = Duration::from_secs_f64(args.otlp_interval);
            otlp::Pusher::start(url, every, target, shared.clone())
        });
        let linger = Duration::from_secs_f64(args.metrics_linger);
        Ok(Some(Self { shared, server, pusher, linger }))
    }

    /// Adds one harvested interval; `in_flight` is read at the same instant.
    pub(crate) fn record(&self, interval: &[OpTally], in_flight: usize) {
        self.shared
            .snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(interval, in_flight);
    }

    /// The run is over: the in-flight gauge drops to 0, the last push is made (within its
    /// timeout), `/metrics` stays up until scraped once more (within `--metrics-linger`), and
    /// failed pushes are reported.
    pub(crate) async fn finish(self) {
        let Self { shared, server, pusher, linger } = self;
        {
            let mut s = shared.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
            s.in_flight = 0;
            s.at = SystemTime::now();
        }
        let mut scraped = shared.scraped.subscribe();
        scraped.mark_unchanged();
        let wait = server.is_some() && !linger.is_zero();
        let linger = async move {
            if wait {
                let _ = tokio::time::timeout(linger, scraped.changed()).await;
            }
        };
        let push = async move {
            match pusher {
                Some(p) => p.finish().await,
                None => None,
            }
        };
        let ((), failed) = tokio::join!(linger, push);
        if let Some(s) = server {
            s.stop();
        }
        if let Some(line) = failed {
            eprintln!("mcpwire: {line}");
        }
    }
}

#[cfg(test)]
mod tests;
