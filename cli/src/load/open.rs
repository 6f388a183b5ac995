//! The open loop: each lane sends its share of the one schedule at the intended instants, and
//! what it had due and never sent when the window closed is counted `dropped`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use tokio::time::Instant;

use super::model::Schedule;
use super::request::{Ctx, Done, LATE_AFTER, Window, one};

/// When a lane's requests are due and what each one sends: the rate's [`Schedule`], or a
/// replay's capture (`replay::Cursor`). The open loop is generic over it, so the rate's path
/// is what it was without replay.
pub(super) trait Due: Send + 'static {
    /// The intended start of this lane's next request, or `None` when it has no more.
    fn next(&mut self) -> Option<Duration>;
    /// Passes over this lane's requests due before `t`; returns how many.
    fn skip_before(&mut self, t: Duration) -> u64;
    /// The request `next` just produced: its sequence number and its operation.
    fn pick(&self, ctx: &Ctx, win: &Window) -> (u64, usize);
    /// Sends it and checks the answer.
    fn send(ctx: &Ctx, op: usize, seq: u64) -> impl Future<Output = Done> + Send + '_;
}

impl Due for Schedule {
    fn next(&mut self) -> Option<Duration> {
        Schedule::next(self)
    }

    fn skip_before(&mut self, t: Duration) -> u64 {
        Schedule::skip_before(self, t)
    }

    fn pick(&self, ctx: &Ctx, win: &Window) -> (u64, usize) {
        let seq = win.seq.fetch_add(1, Ordering::Relaxed);
        (seq, ctx.plan.mix.pick(seq))
    }

    fn send(ctx: &Ctx, op: usize, seq: u64) -> impl Future<Output = Done> + Send + '_ {
        one(ctx, op, seq)
    }
}

/// Of `unsent` requests a lane had due at the window's close, those the run still owed: all of
/// them without `--requests`; with `--requests N`, only those that claim one of the `N` (lanes
/// claim in the order they send, so a lane that fell behind may find all `N` sent by the others:
/// then nothing is owed, and `requests + dropped` never exceeds `N`).
fn owed(unsent: u64, requests: Option<u64>, claimed: &AtomicU64) -> u64 {
    match requests {
        None => unsent,
        Some(n) => unsent.min(n.saturating_sub(claimed.fetch_add(unsent, Ordering::Relaxed))),
    }
}

/// One lane of the open loop: of the one schedule's requests, number `lane`, `lane + lanes`,
/// `lane + 2 * lanes` … Each is sent at its intended instant, at most `max_in_flight` at once
/// in this lane, and timed from its intended start. Lanes share the schedule, the `--requests`
/// count and the operation sequence, and split the in-flight bound; they exist so that the
/// sending spreads over the runtime's threads.
pub(super) async fn open_loop<D: Due>(
    ctx: Arc<Ctx>,
    win: Arc<Window>,
    mut schedule: D,
    lane: usize,
    max_in_flight: usize,
) {
    let requests = ctx.plan.requests;
    let mut next = schedule.next();
    let mut pending = FuturesUnordered::new();
    let t0 = win.started;
    // One timer, moved only when the next due instant changes: a completion wakes the loop
    // far more often than the schedule does, and a timer armed afresh each time would cost a
    // timer-wheel insertion and removal per request.
    let timer = tokio::time::sleep_until(t0);
    tokio::pin!(timer);
    let mut armed: Option<Instant> = None;
    loop {
        let now = Instant::now();
        while let Some(offset) = next {
            let due = t0 + offset;
            if due > now || pending.len() >= max_in_flight {
                break;
            }
            let measuring = offset.as_nanos() >= u128::from(win.opened_at.load(Ordering::Relaxed));
            if measuring {
                if requests.is_some_and(|n| win.claimed.fetch_add(1, Ordering::Relaxed) >= n) {
                    next = None;
                    break;
                }
                if now.duration_since(due) > LATE_AFTER {
                    win.late.fetch_add(1, Ordering::Relaxed);
                }
                win.sent.fetch_add(1, Ordering::Relaxed);
            }
            let (seq, op) = schedule.pick(&ctx, &win);
            let ctx = &ctx;
            pending.push(async move {
                let r = D::send(ctx, op, seq).await;
                (op, due, measuring, r)
            });
            let now = win.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
            win.peak.fetch_max(now, Ordering::Relaxed);
            next = schedule.next();
        }
        if next.is_none() && pending.is_empty() {
            break;
        }
        let wake = next.filter(|_| pending.len() < max_in_flight).map(|o| t0 + o);
        if let Some(at) = wake
            && armed != Some(at)
        {
            timer.as_mut().reset(at);
            armed = Some(at);
        }
        tokio::select! {
            biased;
            () = win.stop.cancelled() => {
                // Due before the window closed and never sent: dropped, not forgotten. Those
                // due within LATE_AFTER of the close were not overdue yet: like the requests in
                // flight at the close, the window's end cut them off.
                let closed = Duration::from_nanos(win.closed_at.load(Ordering::Relaxed))
                    .saturating_sub(LATE_AFTER);
                // Only those due in the window count: a warm-up backlog is skipped uncounted.
                let opened = win.opened_at.load(Ordering::Relaxed);
                if opened != u64::MAX
                    && let Some(o) = next
                    && o < closed
                {
                    let opened = Duration::from_nanos(opened);
                    let mut dropped = u64::from(o >= opened);
                    schedule.skip_before(opened);
                    dropped += schedule.skip_before(closed);
                    let dropped = owed(dropped, requests, &win.claimed);
                    win.dropped.fetch_add(dropped, Ordering::Relaxed);
                }
                win.in_flight.fetch_sub(pending.len(), Ordering::Relaxed);
                break;
            }
            Some((op, due, measuring, done)) = pending.next(), if !pending.is_empty() => {
                win.in_flight.fetch_sub(1, Ordering::Relaxed);
                if measuring {
                    if let Some(first) = done.first {
                        ctx.shards.record_first(lane, op, first.duration_since(due));
                    }
                    ctx.shards.record(lane, op, due.elapsed(), done.outcome, done.sent, done.got);
                    win.count_done(requests);
                }
            }
            () = &mut timer, if wake.is_some() => armed = None,
        }
    }
}

#[cfg(test)]
mod tests;
