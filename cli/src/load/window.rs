//! The measuring window around every driver (the closed loop's workers are in `closed.rs`, the
//! open loop's lanes in `open.rs`).
//!
//! A window: the drivers start (closed-loop workers, or the open loop's lanes: one task per
//! runtime thread, each sending every k-th request of the one schedule), the
//! warm-up passes with results discarded, then the window opens (bytes and time are read) and
//! the main task harvests the tallies every second (the timeline, the `--hdr-log`, the live
//! metrics, the progress line) until `--requests` are done, `--duration` or the stages are over,
//! the connection closes or Ctrl-C. Then the drivers stop: requests still in flight are cancelled and not
//! counted; in the open loop, requests due but not yet sent are counted as `dropped` (with
//! `--requests N`, only those of the `N` that were never sent).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::Model;
use super::closed::worker;
use super::cpu::Cpu;
use super::hdr_log::HdrLog;
use super::live::Live;
use super::model::Schedule;
use super::open::open_loop;
use super::replay::Cursor;
use super::report::{OpSecond, Point};
use super::request::{Ctx, Window};
use super::tally::OpTally;

/// How often the tallies are harvested into the timeline and the log.
const INTERVAL: Duration = Duration::from_secs(1);

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
    pub(super) log: Option<&'a HdrLog>,
    /// When the log's timestamps count from.
    pub(super) log_base: Instant,
    pub(super) bar: Option<&'a indicatif::ProgressBar>,
    /// `--metrics`, `--otlp`.
    pub(super) live: Option<&'a Live>,
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
                    match &ctx.plan.replay {
                        None => {
                            let s = Schedule::lane(rate.clone(), lane as u64, lanes as u64);
                            tokio::spawn(open_loop(ctx.clone(), win.clone(), s, lane, bound))
                        }
                        Some(script) => {
                            let s = Cursor::lane(script.clone(), lane, lanes);
                            tokio::spawn(open_loop(ctx.clone(), win.clone(), s, lane, bound))
                        }
                    }
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
    }
    let (stats0, cpu0, started) = opened.unwrap_or_else(|| {
        // One instant for both the window's start and the schedule's: the requests counted
        // dropped are those due between the two instants the elapsed time is measured
        // between, however long the thread is held up between two lines here.
        let now = Instant::now();
        let opened = now.duration_since(win.started).as_nanos();
        win.opened_at.store(u64::try_from(opened).unwrap_or(u64::MAX), Ordering::Relaxed);
        win.measuring.store(true, Ordering::Relaxed);
        (ctx.peer.stats(), Cpu::now(), now)
    });
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
        let ops = interval.iter().map(OpSecond::of).collect();
        let mut error_kinds = BTreeMap::new();
        for (kind, k) in interval.iter().flat_map(|i| &i.errors) {
            *error_kinds.entry(kind.clone()).or_default() += k;
        }
        timeline.push(Point { t, requests: n, errors: e, ops, error_kinds });
        if let Some(live) = sinks.live {
            live.record(&interval, win.in_flight.load(Ordering::Relaxed));
        }
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
    let closing = Instant::now();
    let elapsed = closing.duration_since(started);
    let stats1 = ctx.peer.stats();
    let cpu = Cpu::now().zip(cpu0).map(|(now, then)| now.since(then));
    let closed_at = closing.duration_since(win.started).as_nanos();
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
