//! `mcpwire load compare BASE NEW`: whether a run regressed against a baseline, per operation,
//! for CI to gate on.
//!
//! Each input is a `load --json` report or a `--hdr-log` interval log (told apart by their
//! first byte; the two may be mixed). Both give, per operation and per second, the requests,
//! the errors and the p50 and p99 of the successes: the report in its timeline's `operations`,
//! the log as one histogram per operation per interval. Each metric (p50, p99, throughput,
//! error rate) is compared twice: its change over the whole run (the report's totals, the
//! log's summed histograms), held against a threshold; and the per-second values of both runs,
//! put to a Mann-Whitney U test. A regression is a change past its threshold, in the bad
//! direction, that the test finds significant (p < `--alpha`): one slow second does not fail a
//! build, and neither does a shift too small to matter. Intervals shorter than half a second
//! (the run's last, cut short) are left out of the test.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};

use super::stats::mann_whitney;

mod input;
pub use input::{OpRun, Run, Second, read};

/// The shortest interval the test counts, in seconds.
const MIN_WINDOW_S: f64 = 0.5;

/// `load compare`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline: a `load --json` report or a `--hdr-log` interval log.
    pub base: PathBuf,
    /// The run to judge, in either form.
    pub new: PathBuf,
    /// The most the p50 may grow: a share (`10%`) or a time (`2ms`, `500us`).
    #[arg(long, value_name = "LIMIT", default_value = "10%", value_parser = parse_latency)]
    pub max_p50_regression: Limit,
    /// The most the p99 may grow: a share (`10%`) or a time (`2ms`, `500us`).
    #[arg(long, value_name = "LIMIT", default_value = "10%", value_parser = parse_latency)]
    pub max_p99_regression: Limit,
    /// The most the throughput may fall: a share (`10%`) or requests per second (`500`).
    #[arg(long, value_name = "LIMIT", default_value = "10%", value_parser = parse_throughput)]
    pub max_throughput_drop: Limit,
    /// The most the error rate may rise, in points: `1%` or `0.01` alike.
    #[arg(long, value_name = "POINTS", default_value = "1%", value_parser = parse_points)]
    pub max_error_rate_increase: f64,
    /// The significance level: a change counts only when the test's p-value is below it.
    #[arg(long, default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,
    /// Print a GitHub-flavoured Markdown table and a verdict line (a pull-request comment, a CI
    /// step summary).
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// A threshold: a share of the baseline's value, or an amount in the metric's unit (µs for
/// latencies, requests/s for throughput).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    Share(f64),
    Amount(f64),
}

fn number(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number, 0 or more")),
    }
}

fn parse_latency(s: &str) -> Result<Limit, String> {
    if let Some(p) = s.strip_suffix('%') {
        Ok(Limit::Share(number(p)? / 100.0))
    } else if let Some(us) = s.strip_suffix("us") {
        Ok(Limit::Amount(number(us)?))
    } else if let Some(ms) = s.strip_suffix("ms") {
        Ok(Limit::Amount(number(ms)? * 1000.0))
    } else {
        Err(format!("{s:?}: a latency limit is a share (10%) or a time (2ms, 500us)"))
    }
}

fn parse_throughput(s: &str) -> Result<Limit, String> {
    match s.strip_suffix('%') {
        Some(p) => Ok(Limit::Share(number(p)? / 100.0)),
        None => Ok(Limit::Amount(number(s)?)),
    }
}

fn parse_points(s: &str) -> Result<f64, String> {
    let v = match s.strip_suffix('%') {
        Some(p) => number(p)? / 100.0,
        None => number(s)?,
    };
    if v <= 1.0 { Ok(v) } else { Err(format!("{s:?}: an error rate rises by 1 (100%) at most")) }
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err("a significance level is a number between 0 and 1".into()),
    }
}

/// A metric compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    P50,
    P99,
    Throughput,
    ErrorRate,
}

impl Metric {
    const ALL: [Self; 4] = [Self::P50, Self::P99, Self::Throughput, Self::ErrorRate];

    fn label(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P99 => "p99",
            Self::Throughput => "throughput",
            Self::ErrorRate => "error rate",
        }
    }

    fn total(self, op: &OpRun) -> f64 {
        match self {
            Self::P50 => op.p50_us,
            Self::P99 => op.p99_us,
            Self::Throughput => op.throughput,
            Self::ErrorRate => op.error_rate,
        }
    }

    /// The value of one second, when it has one and is long enough to count.
    fn per_second(self, s: &Second) -> Option<f64> {
        if s.len_s < MIN_WINDOW_S {
            return None;
        }
        match self {
            Self::P50 => s.p50,
            Self::P99 => s.p99,
            Self::Throughput => Some(s.requests as f64 / s.len_s),
            Self::ErrorRate => (s.requests > 0).then(|| s.errors as f64 / s.requests as f64),
        }
    }

    fn show(self, v: f64) -> String {
        match self {
            Self::P50 | Self::P99 => format!("{:.3} ms", v / 1000.0),
            Self::Throughput => format!("{v:.1}/s"),
            Self::ErrorRate => format!("{:.2}%", v * 100.0),
        }
    }

    /// The change from `base` to `new`: relative, but in points for the error rate.
    fn change(self, base: f64, new: f64) -> String {
        match self {
            Self::ErrorRate => format!("{:+.2} pts", (new - base) * 100.0),
            _ if base > 0.0 => format!("{:+.1}%", (new / base - 1.0) * 100.0),
            _ => format!("{:+}", new - base),
        }
    }
}

/// What a comparison found of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Within its threshold, or better without significance.
    Ok,
    /// Significantly better.
    Improved,
    /// Past its threshold, but not significantly different over the seconds.
    NotSignificant,
    /// Past its threshold and significant.
    Regression,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Improved => "improved",
            Self::NotSignificant => "past limit, not significant",
            Self::Regression => "REGRESSION",
        }
    }
}

/// The thresholds and the significance level.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub p50: Limit,
    pub p99: Limit,
    pub throughput: Limit,
    /// The error rate's rise, as a share (0.01 is one point).
    pub error_points: f64,
    pub alpha: f64,
}

impl Thresholds {
    fn limit(&self, m: Metric) -> Limit {
        match m {
            Metric::P50 => self.p50,
            Metric::P99 => self.p99,
            Metric::Throughput => self.throughput,
            Metric::ErrorRate => Limit::Amount(self.error_points),
        }
    }

    fn show(&self, m: Metric) -> String {
        let sign = if m == Metric::Throughput { '-' } else { '+' };
        match (m, self.limit(m)) {
            (_, Limit::Share(s)) => format!("{sign}{}%", s * 100.0),
            (Metric::ErrorRate, Limit::Amount(a)) => format!("+{:.2} pts", a * 100.0),
            (m, Limit::Amount(a)) => format!("{sign}{}", m.show(a)),
        }
    }
}

/// One metric of one operation, compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub op: String,
    pub metric: Metric,
    pub base: f64,
    pub new: f64,
    /// The test's two-sided p-value (`None` with no seconds to test on one side).
    pub p: Option<f64>,
    /// The seconds tested, of each run.
    pub windows: (usize, usize),
    pub status: Status,
}

/// Compares every metric of every operation.
///
/// # Errors
///
/// The runs do not have the same operations (each side's own are named).
pub fn compare(base: &Run, new: &Run, t: &Thresholds) -> Result<Vec<Row>, String> {
    let only = |x: &Run, y: &Run| {
        let v: Vec<&str> =
            x.iter().filter(|(k, _)| !y.contains_key(*k)).map(|(_, o)| o.name.as_str()).collect();
        if v.is_empty() { "none".to_owned() } else { v.join(", ") }
    };
    if base.keys().ne(new.keys()) {
        return Err(format!(
            "the runs have different operations: only in BASE: {}; only in NEW: {}",
            only(base, new),
            only(new, base)
        ));
    }
    let mut rows = Vec::new();
    for (key, bo) in base {
        let no = &new[key];
        for m in Metric::ALL {
            let xs: Vec<f64> = bo.seconds.iter().filter_map(|s| m.per_second(s)).collect();
            let ys: Vec<f64> = no.seconds.iter().filter_map(|s| m.per_second(s)).collect();
            let p = mann_whitney(&xs, &ys).map(|r| r.p);
            let (bv, nv) = (m.total(bo), m.total(no));
            let worse = if m == Metric::Throughput { bv - nv } else { nv - bv };
            let past = match t.limit(m) {
                Limit::Share(s) => worse > s * bv,
                Limit::Amount(a) => worse > a,
            };
            let significant = p.is_some_and(|p| p < t.alpha);
            let status = match (past, significant) {
                (true, true) => Status::Regression,
                (true, false) => Status::NotSignificant,
                (false, true) if worse < 0.0 => Status::Improved,
                _ => Status::Ok,
            };
            rows.push(Row {
                op: bo.name.clone(),
                metric: m,
                base: bv,
                new: nv,
                p,
                windows: (xs.len(), ys.len()),
                status,
            });
        }
    }
    Ok(rows)
}

fn p_text(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 1e-4 => "<0.0001".into(),
        Some(p) => format!("{p:.4}"),
    }
}

/// The verdict line.
#[must_use]
pub fn verdict(rows: &[Row], t: &Thresholds) -> String {
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| r.status == Status::Regression)
        .map(|r| format!("{} {} {}", r.op, r.metric.label(), r.metric.change(r.base, r.new)))
        .collect();
    if bad.is_empty() {
        format!("no regression ({} checks, alpha {})", rows.len(), t.alpha)
    } else {
        format!("regression: {} (alpha {})", bad.join(", "), t.alpha)
    }
}

/// The cells of each row, as both tables print them.
fn cells(r: &Row, t: &Thresholds) -> [String; 8] {
    [
        r.op.clone(),
        r.metric.label().into(),
        r.metric.show(r.base),
        r.metric.show(r.new),
        r.metric.change(r.base, r.new),
        p_text(r.p),
        t.show(r.metric),
        format!("{} ({}/{} s)", r.status.label(), r.windows.0, r.windows.1),
    ]
}

const HEADER: [&str; 8] =
    ["operation", "metric", "base", "new", "change", "p-value", "limit", "status (seconds)"];

/// The text table and the verdict.
#[must_use]
pub fn to_text(rows: &[Row], t: &Thresholds) -> String {
    let table: Vec<[String; 8]> = rows.iter().map(|r| cells(r, t)).collect();
    let mut widths = HEADER.map(str::len);
    for row in &table {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[&str]| {
        let padded: Vec<String> =
            cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "{}", padded.join("  ").trim_end());
    };
    line(&mut out, &HEADER);
    for row in &table {
        line(&mut out, &row.each_ref().map(String::as_str));
    }
    let _ = writeln!(out, "\nverdict: {}", verdict(rows, t));
    out
}

/// A GitHub-flavoured Markdown table and the verdict, bold.
#[must_use]
pub fn to_markdown(rows: &[Row], t: &Thresholds) -> String {
    let mut out = String::from("### mcpwire load compare\n\n");
    let _ = writeln!(out, "| {} |", HEADER.join(" | "));
    let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |");
    for r in rows {
        let mut c = cells(r, t);
        c[0] = format!("`{}`", c[0].replace('`', "'"));
        if r.status == Status::Regression {
            c[7] = format!("**{}**", c[7]);
        }
        let _ = writeln!(out, "| {} |", c.map(|s| s.replace('|', "\\|")).join(" | "));
    }
    let _ = writeln!(out, "\n**Verdict: {}**", verdict(rows, t));
    out
}

/// The one-object JSON form.
#[must_use]
pub fn to_json(rows: &[Row], t: &Thresholds) -> Value {
    json!({
        "regression": rows.iter().any(|r| r.status == Status::Regression),
        "alpha": t.alpha,
        "verdict": verdict(rows, t),
        "checks": rows.iter().map(|r| json!({
            "operation": r.op,
            "metric": r.metric.label(),
            "base": r.base,
            "new": r.new,
            "change": r.metric.change(r.base, r.new),
            "p_value": r.p,
            "limit": t.show(r.metric),
            "seconds": [r.windows.0, r.windows.1],
            "status": r.status.label(),
        })).collect::<Vec<_>>(),
    })
}

/// `load compare`: exit 1 on a regression, 2 when an input cannot be read or the runs differ.
pub fn run(args: &CompareArgs) -> ExitCode {
    let t = Thresholds {
        p50: args.max_p50_regression,
        p99: args.max_p99_regression,
        throughput: args.max_throughput_drop,
        error_points: args.max_error_rate_increase,
        alpha: args.alpha,
    };
    let rows = read(&args.base).and_then(|b| compare(&b, &read(&args.new)?, &t));
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("mcpwire: load compare: {e}");
            return ExitCode::from(crate::EXIT_IO);
        }
    };
    if args.json {
        println!("{}", to_json(&rows, &t));
    } else if args.markdown {
        print!("{}", to_markdown(&rows, &t));
    } else {
        print!("{}", to_text(&rows, &t));
    }
    if rows.iter().any(|r| r.status == Status::Regression) {
        ExitCode::from(crate::EXIT_INVALID)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests;
