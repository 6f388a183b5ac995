//! `load compare`'s inputs: a `load --json` report or a `--hdr-log` interval log, read into
//! one form: per operation, its totals and its seconds.

use std::collections::BTreeMap;
use std::path::Path;

use hdrhistogram::Histogram;
use serde_json::Value;

use crate::load::hdr_log::{self, FAILED, tag_of};
use crate::load::tally::histogram;

/// One operation's second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Second {
    pub len_s: f64,
    pub requests: u64,
    pub errors: u64,
    /// The successes' p50 and p99 in µs (`None` when there were none).
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

/// One operation of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct OpRun {
    pub name: String,
    pub seconds: Vec<Second>,
    pub p50_us: f64,
    pub p99_us: f64,
    pub throughput: f64,
    pub error_rate: f64,
}

/// One run: its operations by tag (the name as a log writes it, so the forms can be mixed).
pub type Run = BTreeMap<String, OpRun>;

/// Reads a report or a log, told apart by the first byte that is not white space.
///
/// # Errors
///
/// The file cannot be read, or is neither a report with a per-operation timeline nor an
/// interval log with at least one interval; the message names the file.
pub fn read(path: &Path) -> Result<Run, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}: not a load --json report: {e}", path.display()))?;
        from_report(&v).map_err(|e| format!("{}: {e}", path.display()))
    } else {
        let log = hdr_log::read(path)?;
        from_log(&log).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// A report's operations and their seconds.
///
/// # Errors
///
/// A field is missing or of the wrong type; the timeline has no `operations`.
pub fn from_report(v: &Value) -> Result<Run, String> {
    let num = |v: &Value, what: &str| v.as_f64().ok_or_else(|| format!("no number at {what}"));
    let ops = v["operations"].as_array().ok_or("no operations (not a load --json report)")?;
    let timeline = v["timeline"].as_array().ok_or("no timeline (not a load --json report)")?;
    let mut run = Run::new();
    for (i, op) in ops.iter().enumerate() {
        let name = op["name"].as_str().ok_or_else(|| format!("operation {i} has no name"))?;
        let (requests, errors) = (num(&op["requests"], "requests")?, num(&op["errors"], "errors")?);
        let mut seconds = Vec::new();
        let mut before = 0.0;
        for p in timeline {
            let t = num(&p["t_s"], "timeline t_s")?;
            let o = &p["operations"][i];
            if o.is_null() {
                return Err("its timeline has no per-operation seconds (a report of `report \
                            merge`, or of an older mcpwire): compare the --hdr-log files instead"
                    .into());
            }
            let (n, e) = (num(&o["requests"], "requests")?, num(&o["errors"], "errors")?);
            let latency = |q: &str| num(&o[q], q).map(|v| (n > e).then_some(v));
            seconds.push(Second {
                len_s: t - before,
                requests: n as u64,
                errors: e as u64,
                p50: latency("p50_us")?,
                p99: latency("p99_us")?,
            });
            before = t;
        }
        let l = &op["latency_us"];
        let old = run.insert(
            tag_of(name),
            OpRun {
                name: name.to_owned(),
                seconds,
                p50_us: num(&l["p50"], "latency_us.p50")?,
                p99_us: num(&l["p99"], "latency_us.p99")?,
                throughput: num(&op["throughput_rps"], "throughput_rps")?,
                error_rate: if requests > 0.0 { errors / requests } else { 0.0 },
            },
        );
        if old.is_some() {
            return Err(format!("operation {name:?} is listed twice"));
        }
    }
    if run.is_empty() {
        return Err("no operations".into());
    }
    Ok(run)
}

/// A log's operations and their seconds: every interval of the log is a second of every
/// operation (one with no requests in it has no line there).
///
/// # Errors
///
/// The log has no intervals.
pub fn from_log(log: &hdr_log::Read) -> Result<Run, String> {
    // Interval start (ms) → its length; per tag, start → (successes, failures).
    let mut windows: BTreeMap<u128, f64> = BTreeMap::new();
    let mut ops: BTreeMap<String, BTreeMap<u128, (Histogram<u64>, u64)>> = BTreeMap::new();
    for (tag, at, len, h) in &log.intervals {
        let start = at.as_millis();
        let w = windows.entry(start).or_default();
        *w = w.max(len.as_secs_f64());
        let (name, failed) = match tag.strip_prefix(FAILED) {
            Some(name) => (name, true),
            None => (tag.as_str(), false),
        };
        let second = ops
            .entry(name.to_owned())
            .or_default()
            .entry(start)
            .or_insert_with(|| (histogram(), 0));
        if failed {
            second.1 += h.len();
        } else {
            let _ = second.0.add(h);
        }
    }
    if windows.is_empty() {
        return Err("no intervals in the log".into());
    }
    let span: f64 = windows.values().sum();
    let mut run = Run::new();
    for (name, by_start) in ops {
        let mut all = histogram();
        let (mut requests, mut errors) = (0, 0);
        let mut seconds = Vec::new();
        for (start, &len_s) in &windows {
            let (ok, failed) = by_start.get(start).cloned().unwrap_or_else(|| (histogram(), 0));
            let _ = all.add(&ok);
            requests += ok.len() + failed;
            errors += failed;
            let q = |q: f64| (!ok.is_empty()).then(|| ok.value_at_quantile(q) as f64);
            seconds.push(Second {
                len_s,
                requests: ok.len() + failed,
                errors: failed,
                p50: q(0.5),
                p99: q(0.99),
            });
        }
        run.insert(
            name.clone(),
            OpRun {
                name,
                seconds,
                p50_us: all.value_at_quantile(0.5) as f64,
                p99_us: all.value_at_quantile(0.99) as f64,
                throughput: if span > 0.0 { requests as f64 / span } else { 0.0 },
                error_rate: if requests > 0 { errors as f64 / requests as f64 } else { 0.0 },
            },
        );
    }
    Ok(run)
}
