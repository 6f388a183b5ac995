//! `load --replay CAPTURE`: the client requests of a capture (`mcpwire record`), with their
//! mix, arguments and inter-arrival times, sent through the open loop (each timed from its
//! intended start, no coordinated omission), each answer checked against the recorded one's
//! shape.
//!
//! What is replayed: every request the client sent, but the era's handshake (`initialize`,
//! `server/discover`, which the generator does itself in the target's era), notifications,
//! the client's answers to the server, batches and frames that were not JSON. Ids are the
//! generator's own; each request's `_meta` is dropped (a modern target gets the generator's);
//! every recorded session, of either era, becomes the generator's one session with the target.
//!
//! The shape of an answer: an error and its code, or a result with its `resultType` (absent
//! counts as `complete`) and `isError`. An answer whose shape differs from the recorded one's
//! fails with a kind that starts with `mismatch_`; `mismatches` counts them. A request whose
//! answer the capture lacks is only checked for being no error.

pub mod lines;
mod script;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcpwire::RawJson;
use mcpwire::peer::{RequestError, RequestOptions};

use super::request::{Ctx, Done, Window, kind};
use super::{Mix, Model, Plan, Shape};

pub use script::Script;

/// `load`'s replay flags.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Replay")]
pub(crate) struct ReplayArgs {
    /// Replay the client requests of a capture written by `mcpwire record` (their mix,
    /// arguments and inter-arrival times) instead of --method or --scenario; each answer is
    /// checked against the recorded one's shape, and those that differ are counted as
    /// `mismatches`. Runs once through the capture, unless --replay-loop.
    #[arg(long, value_name = "CAPTURE",
          conflicts_with_all = ["scenario", "stages", "find_capacity", "rate", "concurrency",
                                "method", "tool", "arguments"])]
    pub(crate) replay: Option<PathBuf>,
    /// Replay this many times faster (2: twice the recorded rate; 0.5: half of it).
    #[arg(long, value_name = "FACTOR", default_value_t = 1.0, value_parser = parse_speed,
          requires = "replay")]
    replay_speed: f64,
    /// Start over at the end of the capture (one mean inter-arrival time after its last
    /// request) until --duration or --requests.
    #[arg(long, requires = "replay")]
    replay_loop: bool,
    /// Replay this share of the recorded requests (a fixed sample, the same every run), at
    /// their recorded instants.
    #[arg(long, value_name = "SHARE", default_value_t = 1.0, value_parser = parse_sample,
          requires = "replay")]
    replay_sample: f64,
}

fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.001..=1000.0).contains(&f) => Ok(f),
        _ => Err("a speed factor is a number from 0.001 to 1000".into()),
    }
}

fn parse_sample(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err("a sample is a share in (0, 1]".into()),
    }
}

impl ReplayArgs {
    /// The plan with the capture's requests in place of its mix, when `--replay` is given;
    /// otherwise the plan as it is.
    ///
    /// # Errors
    ///
    /// The capture cannot be read, or holds no request to replay.
    pub(crate) fn apply(&self, mut plan: Plan, max_in_flight: usize) -> Result<Plan, String> {
        let Some(path) = &self.replay else { return Ok(plan) };
        let script = Script::load(path, self.replay_speed, self.replay_sample, self.replay_loop)
            .map_err(|e| format!("--replay {}: {e}", path.display()))?;
        plan.mix = Mix::new(script.operations());
        plan.model = Model::Open { rate: Shape::Constant(script.rate()), max_in_flight };
        plan.warmup = Duration::ZERO;
        if !self.replay_loop {
            let n = script.len() as u64;
            plan.requests = Some(plan.requests.map_or(n, |r| r.min(n)));
        }
        plan.replay = Some(Arc::new(script));
        Ok(plan)
    }
}

/// A lane's share of the replay: entries `lane`, `lane + lanes`, … of the capture (looping
/// when asked), each due at its recorded offset.
pub(super) struct Cursor {
    script: Arc<Script>,
    next: u64,
    step: u64,
    last: u64,
}

impl Cursor {
    pub(super) fn lane(script: Arc<Script>, lane: usize, lanes: usize) -> Self {
        Self { script, next: lane as u64, step: lanes.max(1) as u64, last: 0 }
    }
}

impl super::open::Due for Cursor {
    fn next(&mut self) -> Option<Duration> {
        let at = self.script.due(self.next)?;
        self.last = self.next;
        self.next += self.step;
        Some(at)
    }

    fn skip_before(&mut self, t: Duration) -> u64 {
        let due = self.script.due_before(t);
        if due <= self.next {
            return 0;
        }
        let n = (due - self.next).div_ceil(self.step);
        self.next = self.next.saturating_add(n.saturating_mul(self.step));
        n
    }

    fn pick(&self, _ctx: &Ctx, win: &Window) -> (u64, usize) {
        self.script.sent(win.started.elapsed());
        (self.last, self.script.op(self.last))
    }

    fn send(ctx: &Ctx, _op: usize, seq: u64) -> impl Future<Output = Done> + Send + '_ {
        one(ctx, seq)
    }
}

/// Sends the `seq`-th request of the replay and checks its answer's shape.
async fn one(ctx: &Ctx, seq: u64) -> Done {
    let Some(script) = ctx.plan.replay.as_deref() else {
        return Done { outcome: Err("no_replay".into()), sent: 0, got: 0, first: None };
    };
    let (method, params, expect) = script.request(seq);
    let r = ctx.agreed.request(&ctx.peer, method, params.map(RawJson::new), RequestOptions::new());
    let (outcome, got) = match r.await {
        Err(RequestError::Rpc(e)) => {
            (script::compare(expect, &script::Shape::Error(e.code.get())), 0)
        }
        Err(e) => (Err(kind(&e)), 0),
        Ok(reply) => match reply.result() {
            Some(result) => {
                let text = result.get();
                (script::compare(expect, &script::Shape::of_result(text)), text.len())
            }
            None => (Err("bad_result".into()), 0),
        },
    };
    Done { outcome, sent: params.map_or(0, str::len), got, first: None }
}

#[cfg(test)]
mod tests;
