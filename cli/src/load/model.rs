//! The load models: what `load` asks of the target over time, as pure functions of the time
//! since the run began (no clock, no I/O; the driver passes the offset in).
//!
//! - Closed loop (`--concurrency N`): N workers, each with one request in flight. It measures
//!   the throughput N requests in flight can reach; when the server stalls the workers stall
//!   with it, so its latencies understate a stall (coordinated omission).
//! - Open loop (`--rate N`): requests are due at fixed instants of one schedule, whatever the
//!   server does, and each latency runs from the request's intended start.
//! - Either one through `--stages`: the rate (or the concurrency) ramps linearly from the value
//!   before it (0 at the start) to each stage's target over the stage's duration.

use std::time::Duration;

/// A stage: ramp to `target` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub target: f64,
}

/// The most stages `--stages` accepts: a longer list is a mistake, not a plan, and each stage
/// is searched linearly for every request scheduled.
pub const DEFAULT_MAX_STAGES: usize = 64;

/// A value over time: a constant, or linear ramps through stages.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// The same value for the whole run.
    Constant(f64),
    /// Ramps from 0 through each stage in turn; the run lasts as long as the stages.
    Stages(Vec<Stage>),
}

impl Shape {
    /// The value at `t` since the start.
    #[must_use]
    pub fn at(&self, t: Duration) -> f64 {
        match self {
            Self::Constant(v) => *v,
            Self::Stages(stages) => {
                let (mut from, mut start) = (0.0, Duration::ZERO);
                for s in stages {
                    let end = start + s.duration;
                    if t < end {
                        let f = (t - start).as_secs_f64() / s.duration.as_secs_f64();
                        return from + (s.target - from) * f;
                    }
                    from = s.target;
                    start = end;
                }
                from
            }
        }
    }

    /// The highest value the shape reaches.
    #[must_use]
    pub fn peak(&self) -> f64 {
        match self {
            Self::Constant(v) => *v,
            Self::Stages(stages) => stages.iter().map(|s| s.target).fold(0.0, f64::max),
        }
    }

    /// The run's length when the shape sets it (stages do; a constant does not).
    #[must_use]
    pub fn length(&self) -> Option<Duration> {
        match self {
            Self::Constant(_) => None,
            Self::Stages(stages) => Some(stages.iter().map(|s| s.duration).sum()),
        }
    }

    /// As the JSON report gives it.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Constant(v) if v.fract() == 0.0 && *v < 1e15 => serde_json::json!(*v as u64),
            Self::Constant(v) => serde_json::json!(v),
            Self::Stages(stages) => stages
                .iter()
                .map(|s| serde_json::json!({"duration_s": s.duration.as_secs_f64(), "target": s.target}))
                .collect(),
        }
    }
}

/// Parses `10s:100,30s:1000,500ms:0` (durations in `ms`, `s` or `m`).
///
/// # Errors
///
/// A stage that is not `DURATION:TARGET`, a negative or non-finite target, a zero duration, or
/// more than [`DEFAULT_MAX_STAGES`] stages.
pub fn parse_stages(s: &str) -> Result<Vec<Stage>, String> {
    let mut stages = Vec::new();
    for part in s.split(',') {
        let (d, v) = part
            .trim()
            .split_once(':')
            .ok_or_else(|| format!("`{part}`: a stage is DURATION:TARGET, such as 10s:100"))?;
        let duration = parse_duration(d)?;
        if duration.is_zero() {
            return Err(format!("`{part}`: a stage lasts more than zero"));
        }
        let target: f64 = v.trim().parse().map_err(|_| format!("`{v}`: not a number"))?;
        if !target.is_finite() || target < 0.0 {
            return Err(format!("`{v}`: a target is a finite number, 0 or more"));
        }
        stages.push(Stage { duration, target });
        if stages.len() > DEFAULT_MAX_STAGES {
            return Err(format!("at most {DEFAULT_MAX_STAGES} stages"));
        }
    }
    Ok(stages)
}

fn parse_duration(d: &str) -> Result<Duration, String> {
    let d = d.trim();
    let (n, scale) = if let Some(n) = d.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = d.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = d.strip_suffix('m') {
        (n, 60.0)
    } else {
        return Err(format!("`{d}`: a duration ends in ms, s or m"));
    };
    let n: f64 = n.parse().map_err(|_| format!("`{d}`: not a duration"))?;
    Duration::try_from_secs_f64(n * scale).map_err(|_| format!("`{d}`: not a duration"))
}

/// The open loop's one schedule: the intended start of each request in turn, as an offset from
/// the run's start. Request `i` (from 0) is due when the integral of the rate reaches `i`, so a
/// constant rate `r` puts it at `i / r`, and a ramp spaces requests ever closer (or further).
///
/// A lane of the schedule takes every `step`-th request from its first: the open loop's lanes
/// share one schedule this way.
///
/// Costs O(stages) per request at worst, O(1) amortised: the cursor only moves forward.
/// Skipping the requests due before an instant (`skip_before`) costs O(stages), however many.
#[derive(Debug, Clone)]
pub struct Schedule {
    shape: Shape,
    /// The index of this lane's next request.
    issued: u64,
    /// How many lanes share the schedule.
    step: u64,
    /// The stage the cursor is in, where it starts, the rate at its start, and how many
    /// requests were due before it (the integral so far, a real number).
    stage: usize,
    stage_start: Duration,
    stage_from: f64,
    due_before: f64,
}

impl Schedule {
    /// A schedule for `shape` (a rate in requests per second): the one lane of one.
    #[cfg(test)]
    #[must_use]
    pub fn new(shape: Shape) -> Self {
        Self::lane(shape, 0, 1)
    }

    /// Lane `lane` of `lanes`: requests `lane`, `lane + lanes`, `lane + 2 * lanes` …
    #[must_use]
    pub fn lane(shape: Shape, lane: u64, lanes: u64) -> Self {
        Self {
            shape,
            issued: lane,
            step: lanes.max(1),
            stage: 0,
            stage_start: Duration::ZERO,
            stage_from: 0.0,
            due_before: 0.0,
        }
    }

    /// The intended start of the next request, or `None` when the shape has no more (the end of
    /// the stages, or a rate of 0).
    pub fn next(&mut self) -> Option<Duration> {
        let n = self.issued as f64;
        let at = match &self.shape {
            Shape::Constant(r) if *r > 0.0 => Duration::try_from_secs_f64(n / r).ok()?,
            Shape::Constant(_) => return None,
            Shape::Stages(stages) => loop {
                let s = stages.get(self.stage)?;
                let len = s.duration.as_secs_f64();
                let (a, b) = (self.stage_from, (s.target - self.stage_from) / len);
                // Requests due within the stage by local time t: a*t + b*t²/2.
                let need = n - self.due_before;
                let total = a * len + b * len * len / 2.0;
                if need < total {
                    let t = if b.abs() < 1e-12 {
                        need / a
                    } else {
                        let disc = (a * a + 2.0 * b * need).max(0.0);
                        (disc.sqrt() - a) / b
                    };
                    break self.stage_start
                        + Duration::try_from_secs_f64(t.clamp(0.0, len)).ok()?;
                }
                self.due_before += total;
                self.stage_from = s.target;
                self.stage_start += s.duration;
                self.stage += 1;
            },
        };
        self.issued += self.step;
        Some(at)
    }

    /// How many requests of the whole schedule (every lane) are due before `t`: those whose
    /// index is below the integral of the rate up to `t`.
    #[must_use]
    pub fn due_before(&self, t: Duration) -> u64 {
        let t = t.as_secs_f64();
        let n = match &self.shape {
            Shape::Constant(r) if *r > 0.0 => t * r,
            Shape::Constant(_) => 0.0,
            Shape::Stages(stages) => {
                let (mut n, mut from, mut start) = (0.0, 0.0, 0.0);
                for s in stages {
                    let len = s.duration.as_secs_f64();
                    let b = (s.target - from) / len;
                    let tau = (t - start).clamp(0.0, len);
                    n += from * tau + b * tau * tau / 2.0;
                    if t < start + len {
                        break;
                    }
                    from = s.target;
                    start += len;
                }
                n
            }
        };
        // Saturates for a value past u64 (a rate far beyond any run).
        n.ceil() as u64
    }

    /// Passes over this lane's requests due before `t` without producing them; returns how
    /// many. Arithmetic, not a walk: a long stall at a high rate is skipped in O(stages).
    pub fn skip_before(&mut self, t: Duration) -> u64 {
        let due = self.due_before(t);
        if due <= self.issued {
            return 0;
        }
        let n = (due - self.issued).div_ceil(self.step);
        self.issued = self.issued.saturating_add(n.saturating_mul(self.step));
        n
    }
}

/// A model as the text report gives it, from its JSON form.
#[must_use]
pub fn text(m: &serde_json::Value) -> String {
    match m["kind"].as_str() {
        Some("closed") => format!(
            "closed loop, concurrency {} (throughput, not latency under a given load)",
            m["concurrency"]
        ),
        Some("open") => format!(
            "open loop, rate {} requests/s, at most {} in flight (latency from each request's intended start)",
            m["rate"], m["max_in_flight"]
        ),
        Some("merged") => format!("merged from {} interval logs", m["logs"]),
        _ => m.to_string(),
    }
}

#[cfg(test)]
mod tests;
