//! The closed loop's workers, the measuring window around every driver (the open loop's lanes
//! are in `open.rs`), and `--find-capacity`.
//!
//! A window: the drivers start (closed-loop workers, or the open loop's lanes: one task per
//! runtime thread, each sending every k-th request of the one schedule), the
//! warm-up passes with results discarded, then the window opens (bytes and time are read) and
//! the main task harvests the tallies every second (the timeline, the `--hdr-log`, the progress
//! line) until `--requests` are done, `--duration` or the stages are over, the connection
//! closes or Ctrl-C. Then the drivers stop: requests still in flight are cancelled and not
//! counted; in the open loop, requests due but not yet sent are counted as `dropped` (with
//! `--requests N`, only those of the `N` that were never sent).

use std::io::IsTerminal as _;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use mcpwire::Json;
use mcpwire::RawJson;
use mcpwire::client::Negotiated;
use mcpwire::mcp::Era;
use mcpwire::peer::{PeerHandle, RequestError, RequestOptions};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::cpu::Cpu;
use super::hdr_log::HdrLog;
use super::model::Shape;
use super::open::open_loop;
use super::report::{OpReport, OpTally, Point, Report, Shards};
use super::{Model, Plan, SetupError, connect, handshake, message};

/// A request sent more than this after its intended start is counted `late` (it waited for an
/// in-flight slot, or the generator fell behind); its latency runs from the intended start all
/// the same.
pub const LATE_AFTER: Duration = Duration::from_millis(10);

/// How often the tallies are harvested into the timeline and the log.
const INTERVAL: Duration = Duration::from_secs(1);

/// The parts of a run every driver shares.
pub(super) struct Ctx {
    peer: PeerHandle,
    agreed: Negotiated,
    pub(super) plan: Plan,
    /// Each operation's params, encoded once (`None` for the generated echo and no params).
    params: Vec<Option<String>>,
    pub(super) shards: Shards,
    /// The open loop's lanes: one per runtime thread.
    lanes: usize,
}

/// Counters of one window, shared by its drivers and the main task.
pub(super) struct Window {
    /// Requests claimed by closed-loop workers; with `--requests`, no claim past the total.
    pub(super) claimed: AtomicU64,
    /// Picks the operation of each request in turn.
    pub(super) seq: AtomicU64,
    pub(super) done: AtomicU64,
    pub(super) in_flight: AtomicUsize,
    pub(super) peak: AtomicUsize,
    pub(super) late: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) stop: CancellationToken,
    /// Whether results count yet (false during warm-up).
    pub(super) measuring: AtomicBool,
    /// When the window opened, in nanoseconds since `started` (`u64::MAX` until then): the
    /// open loop measures the requests *due* from then on, so a backlog from the warm-up sent
    /// after it does not count.
    pub(super) opened_at: AtomicU64,
    /// Open loop: measured requests sent, answered or not.
    pub(super) sent: AtomicU64,
    /// Wakes the main task when the last of `--requests` is done.
    pub(super) finished: Notify,
    pub(super) started: Instant,
    /// When the window closed, in nanoseconds since `started` (set before `stop`): requests
    /// due before it and never sent are `dropped`.
    pub(super) closed_at: AtomicU64,
}

impl Window {
    fn new(measuring: bool) -> Self {
        Self {
            claimed: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            done: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            late: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            stop: CancellationToken::new(),
            measuring: AtomicBool::new(measuring),
            opened_at: AtomicU64::new(if measuring { 0 } else { u64::MAX }),
            sent: AtomicU64::new(0),
            finished: Notify::new(),
            started: Instant::now(),
            closed_at: AtomicU64::new(u64::MAX),
        }
    }

    pub(super) fn count_done(&self, requests: Option<u64>) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if requests == Some(done) {
            self.finished.notify_one();
        }
    }
}

/// Sends one request of operation `op` and checks its answer: the outcome (`Err` names the
/// kind of failure) and the payload bytes each way.
pub(super) async fn one(ctx: &Ctx, op: usize, seq: u64) -> (Result<(), String>, usize, usize) {
    let operation = &ctx.plan.mix.ops[op];
    let method = operation.method.name();
    let (reply, echo, sent) = if operation.generated_echo() {
        #[derive(serde::Serialize)]
        struct Args<'a> {
            message: &'a str,
        }
        #[derive(serde::Serialize)]
        struct Call<'a> {
            name: &'a str,
            arguments: Args<'a>,
        }
        let msg = message(seq, ctx.plan.payload_bytes, &ctx.plan.filler);
        let params = Call { name: "echo", arguments: Args { message: &msg } };
        let r =
            ctx.agreed.request(&ctx.peer, method, Some(Json(&params)), RequestOptions::new()).await;
        let sent = msg.len() + 36;
        (r, Some(msg), sent)
    } else {
        let params = ctx.params[op].as_deref();
        let r = ctx
            .agreed
            .request(&ctx.peer, method, params.map(RawJson::new), RequestOptions::new())
            .await;
        (r, None, params.map_or(0, str::len))
    };
    match reply {
        Err(e) => (Err(kind(&e)), sent, 0),
        Ok(r) => match r.result() {
            Some(result) => {
                let got = result.get().len();
                (operation.check(result.get(), echo.as_deref()), sent, got)
            }
            None => (Err("bad_result".into()), sent, 0),
        },
    }
}

fn kind(e: &RequestError) -> String {
    match e {
        RequestError::Rpc(e) => format!("rpc_error_{}", e.code.get()),
        RequestError::Timeout => "timeout".into(),
        RequestError::Closed(_) => "connection_closed".into(),
        RequestError::Encode(_) => "encode".into(),
        _ => "other".into(),
    }
}

/// One closed-loop worker: number `index` works while the concurrency (through stages) is
/// above it.
async fn worker(ctx: Arc<Ctx>, win: Arc<Window>, index: usize, shape: Shape) {
    let requests = ctx.plan.requests;
    while !win.stop.is_cancelled() {
        if let Shape::Stages(_) = shape
            && (index as f64) >= shape.at(win.started.elapsed()).round()
        {
            tokio::select! {
                () = win.stop.cancelled() => break,
                // Idle until the stages reach this worker: checked 20 times a second.
                () = tokio::time::sleep(Duration::from_millis(50)) => continue,
            }
        }
        let measuring = win.measuring.load(Ordering::Relaxed);
        if measuring
            && let Some(total) = requests
            && win.claimed.fetch_add(1, Ordering::Relaxed) >= total
        {
            break;
        }
        let seq = win.seq.fetch_add(1, Ordering::Relaxed);
        let op = ctx.plan.mix.pick(seq);
        let now = win.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        win.peak.fetch_max(now, Ordering::Relaxed);
        let started = Instant::now();
        // A stop drops the request in flight (which sends notifications/cancelled); it is
        // neither a success nor an error.
        let outcome = tokio::select! {
            biased;
            () = win.stop.cancelled() => None,
            outcome = one(&ctx, op, seq) => Some(outcome),
        };
        let took = started.elapsed();
        win.in_flight.fetch_sub(1, Ordering::Relaxed);
        let Some((outcome, sent, got)) = outcome else { break };
        if measuring {
            ctx.shards.record(index, op, took, outcome, sent, got);
            win.count_done(requests);
        }
    }
}

/// What one window measured.
pub(super) struct Measured {
    pub(super) ops: Vec<OpTally>,
    pub(super) elapsed: Duration,
    pub(super) bytes: (u64, u64),
    /// The process's CPU time in the window (`None` where the kernel does not say).
    pub(super) cpu: Option<Cpu>,
    pub(super) peak: usize,
    pub(super) late: u64,
    pub(super) sent: u64,
    pub(super) dropped: u64,
    pub(super) timeline: Vec<Point>,
    pub(super) interrupted: bool,
}

/// Where each second's tallies go besides the totals.
pub(super) struct Sinks<'a> {
    log: Option<&'a HdrLog>,
    /// When the log's timestamps count from.
    log_base: Instant,
    pub(super) bar: Option<&'a indicatif::ProgressBar>,
}

pub(super) type Interrupt<'a> =
    Pin<&'a mut (dyn std::future::Future<Output = ()> + Send + 'static)>;

/// Runs one window of `model` for `duration` (or `--requests`) after `warmup`.
pub(super) async fn window(
    ctx: &Arc<Ctx>,
    model: &Model,
    duration: Duration,
    warmup: Duration,
    sinks: &Sinks<'_>,
    interrupt: &mut Interrupt<'_>,
    interrupted: &mut bool,
) -> Measured {
    let win = Arc::new(Window::new(warmup.is_zero()));
    // Without a warm-up the window opens before the first request is sent.
    let opened = warmup.is_zero().then(|| (ctx.peer.stats(), Cpu::now(), Instant::now()));
    let drivers: Vec<_> = match model {
        Model::Closed(shape) => (0..model.max_in_flight())
            .map(|i| tokio::spawn(worker(ctx.clone(), win.clone(), i, shape.clone())))
            .collect(),
        Model::Open { rate, max_in_flight } => {
            // One lane a thread, each with its share of the in-flight bound.
            let lanes = ctx.lanes.min(*max_in_flight).max(1);
            (0..lanes)
                .map(|lane| {
                    let bound = max_in_flight / lanes + usize::from(lane < max_in_flight % lanes);
                    tokio::spawn(open_loop(
                        ctx.clone(),
                        win.clone(),
                        rate.clone(),
                        lane,
                        lanes,
                        bound,
                    ))
                })
                .collect()
        }
    };
    if !warmup.is_zero() && !*interrupted {
        tokio::select! {
            () = tokio::time::sleep(warmup) => {}
            () = interrupt.as_mut() => *interrupted = true,
        }
        win.peak.store(win.in_flight.load(Ordering::Relaxed), Ordering::Relaxed);
        let opened = Instant::now().duration_since(win.started).as_nanos();
        win.opened_at.store(u64::try_from(opened).unwrap_or(u64::MAX), Ordering::Relaxed);
        win.measuring.store(true, Ordering::Relaxed);
    }
    let (stats0, cpu0, started) =
        opened.unwrap_or_else(|| (ctx.peer.stats(), Cpu::now(), Instant::now()));
    let deadline = started + duration;
    let mut totals = vec![OpTally::new(); ctx.plan.mix.ops.len()];
    let mut timeline = Vec::new();
    let mut next_harvest = started + INTERVAL;
    let mut harvested_at = started;
    let names: Vec<String> = ctx.plan.mix.ops.iter().map(|o| o.name.clone()).collect();
    let mut harvest = |totals: &mut Vec<OpTally>, now: Instant, timeline: &mut Vec<Point>| {
        let interval = ctx.shards.harvest();
        let (mut n, mut e) = (0, 0);
        for (t, i) in totals.iter_mut().zip(&interval) {
            t.add(i);
            n += i.requests();
            e += i.error_count();
        }
        let t = now.duration_since(started).as_secs_f64();
        timeline.push(Point { t, requests: n, errors: e });
        if let Some(log) = sinks.log {
            let len = now.duration_since(harvested_at);
            log.write(&names, &interval, harvested_at.duration_since(sinks.log_base), len);
        }
        if let Some(bar) = sinks.bar {
            let secs = now.duration_since(harvested_at).as_secs_f64().max(1e-3);
            let mut all = OpTally::new();
            for t in totals.iter() {
                all.add(t);
            }
            bar.set_message(format!(
                "{:.0} req/s  errors {}  p99 so far {:.3} ms",
                n as f64 / secs,
                all.error_count(),
                all.ok.value_at_quantile(0.99) as f64 / 1000.0
            ));
        }
        harvested_at = now;
    };
    let bounded = ctx.plan.requests.is_none();
    if !*interrupted {
        loop {
            let tick = Instant::now() + Duration::from_millis(100);
            let wake = if bounded { tick.min(deadline) } else { tick };
            tokio::select! {
                () = win.finished.notified() => break,
                () = interrupt.as_mut() => {
                    *interrupted = true;
                    break;
                }
                () = tokio::time::sleep_until(wake) => {}
            }
            let now = Instant::now();
            if now >= next_harvest {
                harvest(&mut totals, now, &mut timeline);
                // After a stall, the next interval is a whole one again, not a burst of short
                // ones catching up.
                while next_harvest <= now {
                    next_harvest += INTERVAL;
                }
            }
            if let Some(bar) = sinks.bar {
                bar.tick();
            }
            let done = win.done.load(Ordering::Relaxed);
            let enough = ctx.plan.requests.map_or(now >= deadline, |n| done >= n);
            if enough || ctx.peer.is_closed() {
                break;
            }
        }
    }
    // The window ends here: elapsed time and bytes are taken now, before the requests still in
    // flight are cancelled.
    let elapsed = started.elapsed();
    let stats1 = ctx.peer.stats();
    let cpu = Cpu::now().zip(cpu0).map(|(now, then)| now.since(then));
    let closed_at = Instant::now().duration_since(win.started).as_nanos();
    win.closed_at.store(u64::try_from(closed_at).unwrap_or(u64::MAX), Ordering::Relaxed);
    win.stop.cancel();
    for d in drivers {
        let _ = d.await;
    }
    let now = Instant::now();
    harvest(&mut totals, now, &mut timeline);
    Measured {
        ops: totals,
        elapsed,
        bytes: (stats1.bytes_written - stats0.bytes_written, stats1.bytes_read - stats0.bytes_read),
        cpu,
        peak: win.peak.load(Ordering::Relaxed),
        late: win.late.load(Ordering::Relaxed),
        sent: win.sent.load(Ordering::Relaxed),
        dropped: win.dropped.load(Ordering::Relaxed),
        timeline,
        interrupted: *interrupted,
    }
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
    let params = plan.mix.ops.iter().map(|o| o.params().map(|p| p.to_string())).collect();
    let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let shards = Shards::new(threads * 2, plan.mix.ops.len());
    let ctx = Arc::new(Ctx { peer: peer.clone(), agreed, plan, params, shards, lanes: threads });
    let plan = &ctx.plan;
    let bar = progress_bar();
    let sinks = Sinks { log: log.as_ref(), log_base, bar: bar.as_ref() };
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
        http_version: plan.target.is_http().then_some(if plan.http2 { "2" } else { "1.1" }),
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
    })
}
