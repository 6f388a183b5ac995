//! `--report FILE.html`: the report as one self-contained page. No scripts, no fonts, no
//! images, no links: the plots are inline SVG drawn here, the styles inline, and a
//! Content-Security-Policy of `default-src 'none'` makes the browser refuse anything else, so
//! the page opens the same offline, from a CI artefact, years later.
//!
//! The page: the totals; each operation's p50, p90 and p99 second by second (`time.rs`, with
//! the other plots over time); the latency percentile curve (x on a log scale of 1/(1-q), as
//! HdrHistogram plots it: 0%, 90%, 99%, 99.9% … evenly spaced) for the total and each
//! operation; requests and errors per second; errors per second by kind; the per-operation
//! table; the run's settings. The plots over time mark where each stage of `--stages` begins.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde_json::Value;

use super::report::Report;
use super::tally::OpTally;
use draw::{COLOURS, H, MB, ML, MR, MT, W, esc, legend, nice_step, y_grid};

/// The deepest percentile plotted: 99.999% (five nines).
const MAX_NINES: f64 = 5.0;

/// (x in nines, latency in ms) along the curve, up to the depth the count supports.
fn curve(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let depth = (h.len() as f64).log10().clamp(1.0, MAX_NINES);
    let steps = (depth * 20.0).ceil() as usize;
    let mut points: Vec<(f64, f64)> = (0..=steps)
        .map(|k| {
            let nines = depth * k as f64 / steps as f64;
            let q = 1.0 - 10f64.powf(-nines);
            (nines, h.value_at_quantile(q) as f64 / 1000.0)
        })
        .collect();
    // The curve ends at the slowest request, which the last quantile may fall short of.
    if let Some(last) = points.last_mut() {
        last.1 = h.max() as f64 / 1000.0;
    }
    points
}

fn percentile_label(nines: f64) -> String {
    match nines as u32 {
        0 => "0%".into(),
        n => {
            let mut s = "99".to_owned();
            if n == 1 {
                return "90%".into();
            }
            if n > 2 {
                s.push('.');
                s.push_str(&"9".repeat(n as usize - 2));
            }
            s.push('%');
            s
        }
    }
}

fn percentile_plot(series: &[(String, &Histogram<u64>)]) -> String {
    let curves: Vec<_> = series.iter().map(|(n, h)| (n, curve(h))).collect();
    let xmax = curves.iter().flat_map(|(_, c)| c.last().map(|p| p.0)).fold(1.0, f64::max);
    let ymax =
        curves.iter().flat_map(|(_, c)| c.iter().map(|p| p.1)).fold(0.0, f64::max).max(0.001);
    let ystep = nice_step(ymax, 5.0);
    let ytop = (ymax / ystep).ceil() * ystep;
    let px = |x: f64| ML + (W - ML - MR) * x / xmax;
    let py = |y: f64| MT + (H - MT - MB) * (1.0 - y / ytop);
    let mut s = format!(
        r#"<svg id="percentiles" role="img" aria-label="latency by percentile" viewBox="0 0 {W} {H}" width="{W}" height="{H}">"#
    );
    y_grid(&mut s, ytop, ystep, &py, " ms");
    for n in 0..=(xmax.floor() as u32) {
        let x = px(f64::from(n));
        let _ = write!(
            s,
            r#"<line class="grid" x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}"/><text class="xl" x="{x:.1}" y="{}">{}</text>"#,
            H - MB,
            H - MB + 16.0,
            percentile_label(f64::from(n))
        );
    }
    let _ = write!(
        s,
        r#"<text class="xt" x="{}" y="{}">percentile</text>"#,
        (ML + W - MR) / 2.0,
        H - 4.0
    );
    for (i, (name, c)) in curves.iter().enumerate() {
        let pts: Vec<String> =
            c.iter().map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y))).collect();
        let _ = write!(
            s,
            r#"<polyline class="series" data-name="{}" fill="none" stroke="{}" stroke-width="{}" points="{}"/>"#,
            esc(name),
            COLOURS[i % COLOURS.len()],
            if i == 0 { 2.5 } else { 1.5 },
            pts.join(" ")
        );
    }
    s.push_str("</svg>");
    s.push_str(&legend(series.iter().map(|(n, _)| n.as_str())));
    s
}

fn op_row(s: &mut String, name: &str, t: &OpTally, secs: f64) {
    let h = &t.ok;
    let us = |v: u64| format!("{:.3}", v as f64 / 1000.0);
    let _ = write!(
        s,
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(name),
        t.requests(),
        t.error_count(),
        esc(&t.errors.iter().map(|(k, n)| format!("{k}: {n}")).collect::<Vec<_>>().join(", ")),
        if secs > 0.0 { t.requests() as f64 / secs } else { 0.0 },
        us(h.value_at_quantile(0.5)),
        us(h.value_at_quantile(0.9)),
        us(h.value_at_quantile(0.99)),
        us(h.value_at_quantile(0.999)),
        us(h.max()),
        t.bytes_sent,
        t.bytes_received,
    );
}

fn settings_rows(s: &mut String, prefix: &str, v: &Value) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                settings_rows(s, &key, v);
            }
        }
        v => {
            let text = match v {
                Value::String(t) => t.clone(),
                v => v.to_string(),
            };
            let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(prefix), esc(&text));
        }
    }
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:800px;color:#212529}\
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}\
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.2em .6em;border-bottom:1px solid #dee2e6;text-align:right}\
th{text-align:left;font-weight:600}td:first-child{text-align:left}\
svg{background:#fff;border:1px solid #dee2e6}.grid{stroke:#e9ecef}\
.yl{font-size:11px;text-anchor:end;fill:#495057}.xl{font-size:11px;text-anchor:middle;fill:#495057}\
.xt{font-size:12px;text-anchor:middle;fill:#212529}\
h3{font-size:1em;margin:.8em 0 .3em}.legend span{margin-right:1em}.legend i{display:inline-block;width:.8em;height:.8em;margin-right:.3em}\
.broken{color:#c92a2a;font-weight:600}";

/// The page.
#[must_use]
pub fn render(report: &Report, broken: &[String]) -> String {
    let total = report.total();
    let secs = report.elapsed.as_secs_f64();
    let h = &total.ok;
    let mut s = String::from("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    s.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">");
    let _ = write!(
        s,
        "<title>mcpwire load: {}</title><style>{STYLE}</style></head><body>",
        esc(&report.target)
    );
    let _ = write!(s, "<h1>mcpwire load: {}</h1>", esc(&report.target));
    s.push_str(r#"<section id="summary"><table>"#);
    let mut row = |k: &str, v: String| {
        let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    };
    row("requests", total.requests().to_string());
    row("errors", total.error_count().to_string());
    row(
        "throughput",
        format!("{:.0} requests/s", if secs > 0.0 { total.requests() as f64 / secs } else { 0.0 }),
    );
    row("elapsed", format!("{secs:.3} s"));
    for (k, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
        row(&format!("latency {k}"), format!("{:.3} ms", h.value_at_quantile(q) as f64 / 1000.0));
    }
    row("latency max", format!("{:.3} ms", h.max() as f64 / 1000.0));
    if report.model["kind"] == "open" {
        row("late / dropped", format!("{} / {}", report.late, report.dropped));
    }
    if let Some((sent, received)) = report.bytes {
        row("bytes sent / received", format!("{sent} / {received}"));
    }
    s.push_str("</table>");
    for b in broken {
        let _ = write!(s, r#"<p class="broken">{}</p>"#, esc(b));
    }
    s.push_str("</section>");
    let _ = write!(
        s,
        r#"<section id="latency-over-time"><h2>Latency over time (successes, per second)</h2>{}</section>"#,
        time::latency(report)
    );
    let mut series: Vec<(String, &Histogram<u64>)> = vec![("total".into(), &total.ok)];
    if report.ops.len() > 1 {
        series.extend(report.ops.iter().map(|o| (o.name.clone(), &o.tally.ok)));
    }
    let _ = write!(
        s,
        r#"<section id="latency"><h2>Latency by percentile (successes)</h2>{}</section>"#,
        percentile_plot(&series)
    );
    let _ = write!(
        s,
        r#"<section id="timeline"><h2>Requests and errors per second</h2>{}</section>"#,
        time::throughput(report)
    );
    let _ = write!(
        s,
        r#"<section id="errors-over-time"><h2>Errors per second by kind</h2>{}</section>"#,
        time::errors(report)
    );
    s.push_str(r#"<section id="operations"><h2>Operations</h2><table><tr><th>operation</th><th>requests</th><th>errors</th><th>by kind</th><th>req/s</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>payload bytes sent</th><th>received</th></tr>"#);
    for op in &report.ops {
        op_row(&mut s, &op.name, &op.tally, secs);
    }
    if report.ops.len() > 1 {
        op_row(&mut s, "total", &total, secs);
    }
    s.push_str("</table></section>");
    if let Some(steps) = report.capacity.as_ref().and_then(|c| c["steps"].as_array()) {
        let held = report.capacity.as_ref().map_or(Value::Null, |c| c["last_held_rps"].clone());
        let _ = write!(
            s,
            r#"<section id="capacity"><h2>Capacity search: last rate that held {}</h2><table><tr><th>asked req/s</th><th>achieved</th><th>p99 ms</th><th>error rate</th><th>late</th><th>dropped</th><th></th></tr>"#,
            esc(&held.to_string())
        );
        for st in steps {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{:.0}</td><td>{:.3}</td><td>{:.4}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&st["rate"].to_string()),
                st["achieved_rps"].as_f64().unwrap_or(0.0),
                st["p99_us"].as_f64().unwrap_or(0.0) / 1000.0,
                st["error_rate"].as_f64().unwrap_or(0.0),
                st["late"],
                st["dropped"],
                if st["held"] == true { "held" } else { "broke" }
            );
        }
        s.push_str("</table></section>");
    }
    s.push_str(r#"<section id="settings"><h2>Settings</h2><table>"#);
    let mut settings = serde_json::json!({
        "target": report.target,
        "method": report.method,
        "model": report.model,
    });
    if !report.era.is_empty() {
        settings["protocol"] = format!("{} ({})", report.protocol_version, report.era).into();
    }
    if let Some(c) = &report.capacity {
        settings["capacity"] = serde_json::json!({"last_held_rps": c["last_held_rps"], "steps": c["steps"].as_array().map_or(0, Vec::len)});
    }
    settings_rows(&mut s, "", &settings);
    let _ = write!(s, "<tr><th>mcpwire</th><td>{}</td></tr>", env!("CARGO_PKG_VERSION"));
    s.push_str("</table></section></body></html>\n");
    s
}

mod draw;
#[cfg(test)]
mod tests;
mod time;
