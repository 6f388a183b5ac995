//! What a run measured, per operation and in total (its JSON and text), the per-second
//! timeline, and the budgets it is judged by. The tallies it is made of: `tally.rs`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use super::cpu::Cpu;
use super::tally::OpTally;

/// One second of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Seconds since the window opened, at the end of the interval.
    pub t: f64,
    pub requests: u64,
    pub errors: u64,
    /// Each operation's second, in the order of the report's operations (empty for a merge of
    /// logs): what `load compare` tests per-second latencies on.
    pub ops: Vec<OpSecond>,
    /// The second's errors by kind, every operation's together (empty for a merge of logs).
    pub error_kinds: BTreeMap<String, u64>,
}

/// One operation's second: its requests, errors, and the p50, p90 and p99 of its successes
/// (µs, 0 when it had none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpSecond {
    pub requests: u64,
    pub errors: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
}

impl OpSecond {
    /// The second of an operation whose interval tallied `i`.
    #[must_use]
    pub fn of(i: &OpTally) -> Self {
        Self {
            requests: i.requests(),
            errors: i.error_count(),
            p50_us: i.ok.value_at_quantile(0.5),
            p90_us: i.ok.value_at_quantile(0.9),
            p99_us: i.ok.value_at_quantile(0.99),
        }
    }
}

/// A timeline point as the JSON report gives it.
fn point_json(p: &Point) -> Value {
    let mut v = json!({"t_s": p.t, "requests": p.requests, "errors": p.errors});
    if !p.ops.is_empty() {
        v["operations"] = p
            .ops
            .iter()
            .map(|o| {
                json!({"requests": o.requests, "errors": o.errors, "p50_us": o.p50_us, "p90_us": o.p90_us, "p99_us": o.p99_us})
            })
            .collect();
    }
    if !p.error_kinds.is_empty() {
        v["errors_by_kind"] = json!(p.error_kinds);
    }
    v
}

/// One operation in the report.
#[derive(Debug, Clone)]
pub struct OpReport {
    pub name: String,
    pub tally: OpTally,
    pub max_p99_ms: Option<f64>,
    pub max_error_rate: Option<f64>,
}

/// What a run measured.
#[derive(Debug)]
pub struct Report {
    pub target: String,
    /// `1.1` or `2` for an `http://` target, `2|1.1 by ALPN` for an `https://` one without
    /// `--http2` (`None` for any other, and a merge of logs).
    pub http_version: Option<&'static str>,
    /// `modern` or `legacy` (empty for a merge of logs).
    pub era: &'static str,
    pub protocol_version: String,
    /// The operation, or `scenario` with the mix.
    pub method: String,
    /// The closed loop's concurrency (its peak through stages), or the open loop's
    /// in-flight bound.
    pub concurrency: usize,
    /// The load model, as the JSON report gives it.
    pub model: Value,
    pub ops: Vec<OpReport>,
    pub elapsed: Duration,
    /// Bytes the connection wrote and read in the window (`None` for a merge of logs).
    pub bytes: Option<(u64, u64)>,
    /// The process's CPU time in the window, and whether the server ran in the process too
    /// (the embedded target); `None` for a merge of logs, or where the kernel does not say.
    pub cpu: Option<(Cpu, bool)>,
    pub peak_in_flight: usize,
    pub interrupted: bool,
    /// Open loop: requests that waited for an in-flight slot (timed from their intended start
    /// all the same), and requests due in the window but never sent before it closed.
    pub late: u64,
    pub dropped: u64,
    /// Open loop: the requests due in the window that were sent (answered in it or not), the
    /// measure of the rate achieved.
    pub sent: u64,
    pub timeline: Vec<Point>,
    /// `--find-capacity`: its steps and the last rate that held.
    pub capacity: Option<Value>,
    /// Why the `--hdr-log` file is incomplete, when it is.
    pub log_error: Option<String>,
    /// `--replay`: the capture replayed (the report then counts `mismatches`).
    pub replay: Option<Value>,
}

/// The latencies as the report gives them.
fn percentiles(h: &Histogram<u64>) -> Value {
    json!({
        "p50": h.value_at_quantile(0.50),
        "p90": h.value_at_quantile(0.90),
        "p99": h.value_at_quantile(0.99),
        "p999": h.value_at_quantile(0.999),
        "max": h.max(),
    })
}

/// The error rate counting `dropped` requests as failures.
#[must_use]
pub fn error_rate(errors: u64, requests: u64, dropped: u64) -> f64 {
    let n = requests + dropped;
    if n == 0 { 0.0 } else { (errors + dropped) as f64 / n as f64 }
}

/// A budget that did not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    /// `total` or the operation's name.
    pub scope: String,
    /// `max-p99` or `max-error-rate`.
    pub budget: &'static str,
    pub limit: f64,
    pub value: f64,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.budget {
            "max-p99" => write!(
                f,
                "budget broken: {} p99 {:.3} ms > --max-p99 {} ms",
                self.scope, self.value, self.limit
            ),
            _ => write!(
                f,
                "budget broken: {} error rate {:.6} > --max-error-rate {}",
                self.scope, self.value, self.limit
            ),
        }
    }
}

/// Checks one p99 (µs) and error rate against budgets; a value at its bound holds.
#[must_use]
pub fn judge(
    scope: &str,
    p99_us: u64,
    rate: f64,
    max_p99_ms: Option<f64>,
    max_error_rate: Option<f64>,
) -> Vec<Broken> {
    let mut out = Vec::new();
    let p99_ms = p99_us as f64 / 1000.0;
    if let Some(limit) = max_p99_ms
        && p99_ms > limit
    {
        out.push(Broken { scope: scope.into(), budget: "max-p99", limit, value: p99_ms });
    }
    if let Some(limit) = max_error_rate
        && rate > limit
    {
        out.push(Broken { scope: scope.into(), budget: "max-error-rate", limit, value: rate });
    }
    out
}

impl Report {
    /// All operations together.
    #[must_use]
    pub fn total(&self) -> OpTally {
        let mut t = OpTally::new();
        for op in &self.ops {
            t.add(&op.tally);
        }
        t
    }

    pub fn error_count(&self) -> u64 {
        self.ops.iter().map(|o| o.tally.error_count()).sum()
    }

    fn rate(&self, n: u64) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 { n as f64 / secs } else { 0.0 }
    }

    /// The budgets broken: the total's (`--max-p99`, `--max-error-rate`) and each operation's.
    #[must_use]
    pub fn broken(&self, max_p99_ms: Option<f64>, max_error_rate: Option<f64>) -> Vec<Broken> {
        let t = self.total();
        let mut out = judge(
            "total",
            t.ok.value_at_quantile(0.99),
            error_rate(t.error_count(), t.requests(), self.dropped),
            max_p99_ms,
            max_error_rate,
        );
        for op in &self.ops {
            let o = &op.tally;
            out.extend(judge(
                &op.name,
                o.ok.value_at_quantile(0.99),
                error_rate(o.error_count(), o.requests(), 0),
                op.max_p99_ms,
                op.max_error_rate,
            ));
        }
        out
    }

    fn op_json(&self, name: &str, t: &OpTally) -> Value {
        let mut v = json!({
            "name": name,
            "requests": t.requests(),
            "errors": t.error_count(),
            "errors_by_kind": t.errors,
            "throughput_rps": self.rate(t.requests()),
            "latency_us": percentiles(&t.ok),
            "payload_bytes_sent": t.bytes_sent,
            "payload_bytes_received": t.bytes_received,
        });
        if !t.first_answer.is_empty() {
            v["tasks"] = json!(t.first_answer.len());
            v["first_answer_latency_us"] = percentiles(&t.first_answer);
        }
        if self.replay.is_some() {
            v["mismatches"] = json!(super::replay::lines::mismatches(&t.errors));
        }
        v
    }

    /// The one-object JSON form (`--json`).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let t = self.total();
        let mut v = json!({
            "target": self.target,
            "http_version": self.http_version,
            "era": self.era,
            "protocol_version": self.protocol_version,
            "method": self.method,
            "concurrency": self.concurrency,
            "model": self.model,
            "requests": t.requests(),
            "errors": t.error_count(),
            "errors_by_kind": t.errors,
            "elapsed_s": self.elapsed.as_secs_f64(),
            "throughput_rps": self.rate(t.requests()),
            "latency_us": percentiles(&t.ok),
            "bytes_sent": self.bytes.map(|b| b.0),
            "bytes_received": self.bytes.map(|b| b.1),
            "cpu": self.cpu.map(|(c, embedded)| json!({
                "user_s": c.user.as_secs_f64(),
                "system_s": c.system.as_secs_f64(),
                "us_per_request": c.per_request_us(t.requests()),
                "includes_server": embedded,
            })),
            "peak_in_flight": self.peak_in_flight,
            "interrupted": self.interrupted,
            "late": self.late,
            "dropped": self.dropped,
            "sent": self.sent,
            "operations": self.ops.iter().map(|o| self.op_json(&o.name, &o.tally)).collect::<Vec<_>>(),
            "timeline": self.timeline.iter().map(point_json).collect::<Vec<_>>(),
        });
        if let Some(c) = &self.capacity {
            v["capacity"] = c.clone();
        }
        if let Some(r) = &self.replay {
            v["replay"] = r.clone();
            v["mismatches"] = json!(super::replay::lines::mismatches(&t.errors));
        }
        if !t.first_answer.is_empty() {
            v["tasks"] = json!(t.first_answer.len());
            v["first_answer_latency_us"] = percentiles(&t.first_answer);
        }
        v
    }

    /// The human form.
    #[must_use]
    pub fn to_text(&self) -> String {
        let t = self.total();
        let mut out = String::new();
        match self.http_version {
            Some(v) => {
                let _ = writeln!(out, "target:        {} (HTTP/{v})", self.target);
            }
            None => {
                let _ = writeln!(out, "target:        {}", self.target);
            }
        }
        if !self.era.is_empty() {
            let _ = writeln!(out, "protocol:      {} ({})", self.protocol_version, self.era);
        }
        match self.model["kind"].as_str() {
            Some("closed") => {
                let c = &self.model["concurrency"];
                let _ = writeln!(out, "method:        {} (concurrency {c})", self.method);
            }
            _ => {
                let _ = writeln!(out, "method:        {}", self.method);
            }
        }
        let _ = writeln!(out, "model:         {}", super::model::text(&self.model));
        if let Some(r) = &self.replay {
            out.push_str(&super::replay::lines::text_line(r));
        }
        if self.interrupted {
            let _ = writeln!(out, "interrupted:   yes (partial report)");
        }
        let _ = writeln!(out, "requests:      {}", t.requests());
        let _ = writeln!(out, "errors:        {}", t.error_count());
        for (kind, n) in &t.errors {
            let _ = writeln!(out, "  {kind}: {n}");
        }
        if self.replay.is_some() {
            out.push_str(&super::replay::lines::mismatch_line(&t.errors));
        }
        if self.model["kind"] == "open" {
            let _ = writeln!(
                out,
                "late:          {} (sent over 10 ms past their intended start)",
                self.late
            );
            let _ = writeln!(out, "dropped:       {} (due, never sent)", self.dropped);
            let _ = writeln!(
                out,
                "sent:          {} ({:.0} requests/s, answered or not)",
                self.sent,
                self.rate(self.sent)
            );
        }
        let _ = writeln!(out, "elapsed:       {:.3} s", self.elapsed.as_secs_f64());
        let _ = writeln!(out, "throughput:    {:.0} requests/s", self.rate(t.requests()));
        if let Some((sent, received)) = self.bytes {
            let _ = writeln!(
                out,
                "bytes:         {sent} sent ({:.1} MB/s), {received} received ({:.1} MB/s)",
                self.rate(sent) / 1e6,
                self.rate(received) / 1e6
            );
        }
        if let Some((c, embedded)) = self.cpu {
            let per = c.per_request_us(t.requests()).map_or("-".into(), |us| format!("{us:.2}"));
            let whose = if embedded {
                "this process, the embedded server included"
            } else {
                "the generator"
            };
            let _ = writeln!(
                out,
                "cpu:           {per} us per request ({:.3} s user, {:.3} s system; {whose})",
                c.user.as_secs_f64(),
                c.system.as_secs_f64()
            );
        }
        let h = &t.ok;
        let _ = writeln!(
            out,
            "latency (us):  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            h.value_at_quantile(0.50),
            h.value_at_quantile(0.90),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max()
        );
        let f = &t.first_answer;
        if !f.is_empty() {
            let _ = writeln!(
                out,
                "tasks:         {} (latency above is to completion; to the first answer, us: p50 {}  p90 {}  p99 {}  max {})",
                f.len(),
                f.value_at_quantile(0.50),
                f.value_at_quantile(0.90),
                f.value_at_quantile(0.99),
                f.max()
            );
        }
        if self.model["kind"] != "merged" {
            let _ = writeln!(out, "peak in flight: {}", self.peak_in_flight);
        }
        if self.ops.len() > 1 {
            let _ = writeln!(
                out,
                "\n{:<32} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
                "operation",
                "requests",
                "errors",
                "p50 us",
                "p90 us",
                "p99 us",
                "p99.9 us",
                "max us"
            );
            for op in &self.ops {
                let h = &op.tally.ok;
                let _ = writeln!(
                    out,
                    "{:<32} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
                    op.name,
                    op.tally.requests(),
                    op.tally.error_count(),
                    h.value_at_quantile(0.5),
                    h.value_at_quantile(0.9),
                    h.value_at_quantile(0.99),
                    h.value_at_quantile(0.999),
                    h.max()
                );
            }
        }
        if let Some(c) = &self.capacity {
            let _ = writeln!(out, "\ncapacity:      last rate that held: {}", c["last_held_rps"]);
            if let Some(steps) = c["steps"].as_array() {
                for s in steps {
                    let _ = writeln!(
                        out,
                        "  {:>10} req/s asked: {:>10.0} achieved, p99 {} us, error rate {:.4}, {}",
                        s["rate"],
                        s["achieved_rps"].as_f64().unwrap_or(0.0),
                        s["p99_us"],
                        s["error_rate"].as_f64().unwrap_or(0.0),
                        if s["held"] == true { "held" } else { "broke" }
                    );
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
