//! The closed loop: workers with one request in flight each, as many as the concurrency (through
//! its stages) asks. In a session (a scenario of `[[step]]`s) each worker is a user
//! (`user.rs`): its steps in order, each followed by its think time.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::model::Shape;
use super::request::{Ctx, Window, one};
use super::user::User;

/// One closed-loop worker: number `index` works while the concurrency (through stages) is
/// above it.
pub(super) async fn worker(ctx: Arc<Ctx>, win: Arc<Window>, index: usize, shape: Shape) {
    let requests = ctx.plan.requests;
    let mut user = ctx.plan.mix.session.is_some().then(|| User::new(index));
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
        let op = user.as_ref().map_or_else(|| ctx.plan.mix.pick(seq), User::step);
        let now = win.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        win.peak.fetch_max(now, Ordering::Relaxed);
        let started = Instant::now();
        // A stop drops the request in flight (which sends notifications/cancelled); it is
        // neither a success nor an error.
        let outcome = tokio::select! {
            biased;
            () = win.stop.cancelled() => None,
            outcome = async {
                match &mut user {
                    Some(u) => u.send(&ctx, seq).await,
                    None => one(&ctx, op, seq).await,
                }
            } => Some(outcome),
        };
        let took = started.elapsed();
        win.in_flight.fetch_sub(1, Ordering::Relaxed);
        let Some(done) = outcome else { break };
        if measuring {
            if let Some(first) = done.first {
                ctx.shards.record_first(index, op, first.duration_since(started));
            }
            ctx.shards.record(index, op, took, done.outcome, done.sent, done.got);
            win.count_done(requests);
        }
        // A user thinks between steps with no request in flight; a stop ends the wait.
        if let Some(u) = &mut user {
            let think = u.advance(&ctx);
            if !think.is_zero() {
                tokio::select! {
                    () = win.stop.cancelled() => break,
                    () = tokio::time::sleep(think) => {}
                }
            }
        }
    }
}
