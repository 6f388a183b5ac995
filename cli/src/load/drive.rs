//! A run from start to end: connect, settle the era, encode each operation's params once, run
//! one window (or the `--find-capacity` search's windows), and build the report.

use std::io::IsTerminal as _;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcpwire::mcp::Era;
use tokio::time::Instant;

use super::hdr_log::HdrLog;
use super::live::Live;
use super::report::{OpReport, Report};
use super::request::Ctx;
use super::tally::Shards;
use super::window::{Sinks, window};
use super::{Model, Plan, SetupError, connect, handshake};

/// Runs the plan; `interrupt` completing (Ctrl-C) stops it early with a partial report.
///
/// # Errors
///
/// The target cannot be reached, the handshake fails, or the log cannot be created.
pub async fn run(
    plan: Plan,
    interrupt: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Report, SetupError> {
    super::check_sizes(&plan)?;
    let target = plan.target.to_string();
    // The embedded server runs in this process: its CPU time is in the reading too.
    let embedded = plan.target.is_in_process();
    let (peer, mut conn) = connect(&plan)
        .await
        .map_err(|source| SetupError::Connect { target: target.clone(), source })?;
    let agreed = handshake(&peer, &plan, &target)
        .await
        .map_err(|why| SetupError::Handshake { target: target.clone(), why })?;
    tracing::info!(%target, version = agreed.version(), era = ?agreed.era(), "agreed");
    let (era, version) = (
        match agreed.era() {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        },
        agreed.version(),
    );
    let log_base = Instant::now();
    let log = match &plan.hdr_log {
        Some(path) => {
            let comment = format!(
                "mcpwire load {} target={target} model={}",
                env!("CARGO_PKG_VERSION"),
                plan.model.to_json()
            );
            Some(HdrLog::create(path, &comment, SystemTime::now()).map_err(SetupError::Log)?)
        }
        None => None,
    };
    let names = plan.mix.ops.iter().map(|o| o.name.clone()).collect();
    let live = Live::start(&plan.live, names, &target).await?;
    let params = plan.mix.ops.iter().map(|o| o.params().map(|p| p.to_string())).collect();
    let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let shards = Shards::new(threads * 2, plan.mix.ops.len());
    let ctx = Arc::new(Ctx { peer: peer.clone(), agreed, plan, params, shards, lanes: threads });
    let plan = &ctx.plan;
    let bar = progress_bar();
    let sinks = Sinks { log: log.as_ref(), log_base, bar: bar.as_ref(), live: live.as_ref() };
    let mut interrupt: Pin<Box<dyn std::future::Future<Output = ()> + Send>> = Box::pin(interrupt);
    let mut interrupted = false;
    let (measured, model, capacity) = match plan.capacity {
        None => {
            let shape = match &plan.model {
                Model::Closed(s) | Model::Open { rate: s, .. } => s,
            };
            let (duration, warmup) = match shape.length() {
                Some(length) => (length, Duration::ZERO),
                None => (plan.duration, plan.warmup),
            };
            let m = window(
                &ctx,
                &plan.model,
                duration,
                warmup,
                &sinks,
                &mut interrupt.as_mut(),
                &mut interrupted,
            )
            .await;
            (m, plan.model.clone(), None)
        }
        Some(cap) => {
            super::capacity::find(&ctx, cap, &sinks, &mut interrupt.as_mut(), &mut interrupted)
                .await
        }
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    peer.close();
    if let Some(live) = live {
        live.finish().await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
    // A log that could not be written fails the run after its report, not instead of it.
    let log_error = log.and_then(|l| l.finish().err()).map(|e| e.to_string());
    let ops = plan
        .mix
        .ops
        .iter()
        .zip(measured.ops)
        .map(|(o, tally)| OpReport {
            name: o.name.clone(),
            tally,
            max_p99_ms: o.max_p99_ms,
            max_error_rate: o.max_error_rate,
        })
        .collect();
    Ok(Report {
        target,
        http_version: plan.target.is_http().then_some(match (plan.http2, plan.target.is_https()) {
            (true, _) => "2",
            // The server's ALPN choice, which the HTTP client does not report.
            (false, true) => "2|1.1 by ALPN",
            (false, false) => "1.1",
        }),
        era,
        protocol_version: version,
        method: plan.method_label(),
        concurrency: model.max_in_flight(),
        model: model.to_json(),
        ops,
        elapsed: measured.elapsed,
        bytes: Some(measured.bytes),
        cpu: measured.cpu.map(|c| (c, embedded)),
        peak_in_flight: measured.peak,
        interrupted: measured.interrupted,
        late: measured.late,
        sent: measured.sent,
        dropped: measured.dropped,
        timeline: measured.timeline,
        capacity,
        log_error,
        replay: plan.replay.as_ref().map(|s| s.summary()),
    })
}

/// A progress line on a terminal only: elapsed time, then the last second's rate, the errors
/// and the p99 so far.
fn progress_bar() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}") {
        bar.set_style(style);
    }
    Some(bar)
}
