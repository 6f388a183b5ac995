//! `--find-capacity`: open-loop steps at rising rates on one connection, until a step breaks
//! a threshold; the report is the last step that held.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::model::Shape;
use super::report::error_rate;
use super::request::Ctx;
use super::tally::OpTally;
use super::window::{Interrupt, Measured, Sinks, window};
use super::{Capacity, DEFAULT_MAX_IN_FLIGHT, Model};

/// Open-loop steps at rising rates, `--duration` each (the first after `--warmup`), until one
/// breaks a threshold: its p99 above `max_p99_ms`, its error rate (dropped requests counted as
/// failures) above `max_error_rate`, or fewer than 90% of its requests sent. Returns the last
/// step that held (or the first, when none did), its model, and every step.
pub(super) async fn find(
    ctx: &Arc<Ctx>,
    cap: Capacity,
    sinks: &Sinks<'_>,
    interrupt: &mut Interrupt<'_>,
    interrupted: &mut bool,
) -> (Measured, Model, Option<serde_json::Value>) {
    let max_in_flight = match ctx.plan.model {
        Model::Open { max_in_flight, .. } => max_in_flight,
        Model::Closed(_) => DEFAULT_MAX_IN_FLIGHT,
    };
    let mut steps = Vec::new();
    let mut held: Option<(Measured, Model)> = None;
    let mut first: Option<(Measured, Model)> = None;
    let mut rate = cap.start;
    for i in 0..cap.max_steps.max(1) {
        let model = Model::Open { rate: Shape::Constant(rate), max_in_flight };
        let warmup = if i == 0 { ctx.plan.warmup } else { Duration::ZERO };
        let m = window(ctx, &model, ctx.plan.duration, warmup, sinks, interrupt, interrupted).await;
        let mut all = OpTally::new();
        for t in &m.ops {
            all.add(t);
        }
        let p99 = all.ok.value_at_quantile(0.99);
        let errors = error_rate(all.error_count(), all.requests(), m.dropped);
        // The rate sent, answered or not: requests in flight at the close count.
        let achieved = m.sent as f64 / m.elapsed.as_secs_f64().max(1e-9);
        let ok = p99 as f64 / 1000.0 <= cap.max_p99_ms
            && errors <= cap.max_error_rate
            && achieved >= 0.9 * rate
            && !m.interrupted;
        steps.push(json!({
            "rate": rate, "achieved_rps": achieved, "p99_us": p99, "error_rate": errors,
            "late": m.late, "dropped": m.dropped, "held": ok,
        }));
        if let Some(bar) = sinks.bar {
            bar.println(format!(
                "{rate:.0} req/s: p99 {p99} us, error rate {errors:.4}: {}",
                if ok { "held" } else { "broke" }
            ));
        }
        let stop = !ok || *interrupted;
        if ok {
            held = Some((m, model));
        } else if first.is_none() && held.is_none() {
            first = Some((m, model));
        }
        if stop {
            break;
        }
        rate *= cap.factor;
    }
    let last_held = held.as_ref().and_then(|(_, m)| match m {
        Model::Open { rate: Shape::Constant(r), .. } => Some(*r),
        _ => None,
    });
    let summary = json!({
        "start_rps": cap.start, "factor": cap.factor, "max_p99_ms": cap.max_p99_ms,
        "max_error_rate": cap.max_error_rate, "last_held_rps": last_held, "steps": steps,
    });
    let (m, model) = held.or(first).expect("at least one step runs");
    (m, model, Some(summary))
}
