//! A session's user: a closed-loop worker that runs the scenario's `[[step]]`s in order, again
//! and again, waits each step's think time after it, and carries the values its results keep
//! into the requests after them (the pure parts are in `scenario/steps.rs`).

use std::time::Duration;

use serde_json::Value;

use super::request::{Ctx, Custom, Done, send};
use super::scenario::steps::{self, Vars};

/// One user's place in the session and what it has kept.
pub(super) struct User {
    step: usize,
    iteration: u64,
    vars: Vars,
    rng: u64,
}

impl User {
    /// User number `index` (from 0), before its first step.
    pub(super) fn new(index: usize) -> Self {
        let mut vars = Vars::new();
        vars.insert("user".into(), Value::from(index));
        vars.insert("iteration".into(), Value::from(0u64));
        // Any odd seed serves xorshift; each user draws its own think times.
        let rng = (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        Self { step: 0, iteration: 0, vars, rng }
    }

    /// The operation (the step) the next request is.
    pub(super) fn step(&self) -> usize {
        self.step
    }

    /// Sends the current step's request, rendered from the values kept so far, and keeps what
    /// its `save` asks of the result.
    pub(super) async fn send(&mut self, ctx: &Ctx, seq: u64) -> Done {
        let op = &ctx.plan.mix.ops[self.step];
        let failed = |kind: &str| Done { outcome: Err(kind.into()), sent: 0, got: 0, first: None };
        let (params, expect) = if op.templated() {
            let params = match op.params().map(|p| steps::render(&p, &self.vars)) {
                None => None,
                Some(Ok(Some(p))) if op.method.complete(&p) => Some(p.to_string()),
                Some(Ok(_)) => return failed("missing_value"),
                Some(Err(kind)) => return failed(&kind),
            };
            let expect = match op.expect_text.as_deref().map(|t| steps::render_str(t, &self.vars)) {
                None => None,
                Some(Ok(Some(Value::String(t)))) => Some(t),
                Some(Ok(Some(v))) => Some(v.to_string()),
                Some(Ok(None)) => return failed("missing_value"),
                Some(Err(kind)) => return failed(&kind),
            };
            (params, expect)
        } else {
            (None, None)
        };
        let custom = Custom {
            params: params.as_deref(),
            expect: expect.as_deref(),
            keep: !op.save.is_empty(),
        };
        let (mut done, kept) = send(ctx, self.step, seq, &custom).await;
        if let Some(result) = kept {
            let max = ctx.plan.mix.session.map_or(0, |s| s.max_saved_value_bytes);
            if let Err(kind) = steps::save(&result, &op.save, &mut self.vars, max) {
                done.outcome = Err(kind);
            }
        }
        done
    }

    /// Moves to the next step (after the last, the first again: another iteration), giving the
    /// think time of the step just done.
    pub(super) fn advance(&mut self, ctx: &Ctx) -> Duration {
        let think =
            ctx.plan.mix.ops[self.step].think_ms.map_or(Duration::ZERO, |t| t.pick(&mut self.rng));
        self.step += 1;
        if self.step == ctx.plan.mix.ops.len() {
            self.step = 0;
            self.iteration += 1;
            self.vars.insert("iteration".into(), Value::from(self.iteration));
        }
        think
    }
}
