//! The report's plots over time, one point a second: latency percentiles per operation,
//! requests and errors, and errors by kind; each marks where a stage of `--stages` begins.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::Value;

use super::draw::{COLOURS, H, MB, ML, MR, MT, W, esc, fmt_num, legend, nice_step, y_grid};
use crate::load::report::{OpSecond, Point, Report};

/// A second's value of one quantile.
type Quantile = fn(&OpSecond) -> u64;

/// The quantiles drawn over time, with their field in a second's tally.
const QUANTILES: [(&str, Quantile); 3] =
    [("p50", |o| o.p50_us), ("p90", |o| o.p90_us), ("p99", |o| o.p99_us)];

/// Where each stage after the first begins, in seconds from the window's start: `--stages`
/// runs without a warm-up, so the window opens with the first stage.
pub(super) fn stage_starts(model: &Value) -> Vec<f64> {
    let stages = model["concurrency"].as_array().or_else(|| model["rate"].as_array());
    let mut at = 0.0;
    let mut starts = Vec::new();
    for st in stages.into_iter().flatten() {
        if at > 0.0 {
            starts.push(at);
        }
        at += st["duration_s"].as_f64().unwrap_or(0.0);
    }
    starts
}

/// The time axis (every `tstep` seconds up to `tmax`) and the stage boundaries as dashed lines.
fn time_axis(s: &mut String, tmax: f64, starts: &[f64], px: &impl Fn(f64) -> f64) {
    let tstep = nice_step(tmax, 8.0);
    let mut t = 0.0;
    while t <= tmax + 1e-9 {
        let _ = write!(
            s,
            r#"<text class="xl" x="{:.1}" y="{}">{} s</text>"#,
            px(t),
            H - MB + 16.0,
            fmt_num(t)
        );
        t += tstep;
    }
    let _ =
        write!(s, r#"<text class="xt" x="{}" y="{}">time</text>"#, (ML + W - MR) / 2.0, H - 4.0);
    for (i, at) in starts.iter().enumerate().filter(|(_, at)| **at <= tmax) {
        let x = px(*at);
        let _ = write!(
            s,
            r##"<line class="stage" x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}" stroke="#868e96" stroke-dasharray="4 3"><title>stage {} from {} s</title></line>"##,
            H - MB,
            i + 2,
            fmt_num(*at)
        );
    }
}

/// The intervals of the timeline: each point closes one that began at the previous point.
fn intervals(timeline: &[Point]) -> Vec<(f64, f64, &Point)> {
    let mut from = 0.0;
    timeline
        .iter()
        .map(|p| {
            let iv = (from, p.t.max(from + 1e-3), p);
            from = p.t;
            iv
        })
        .collect()
}

/// The scales of a time plot: x from 0 to the last second, y from 0 to a nice top over
/// `ymax`; with the top and the grid's step.
fn scales(tmax: f64, ymax: f64) -> (f64, f64, impl Fn(f64) -> f64, impl Fn(f64) -> f64) {
    let ystep = nice_step(ymax, 5.0);
    let ytop = (ymax / ystep).ceil() * ystep;
    let px = move |x: f64| ML + (W - ML - MR) * x / tmax;
    let py = move |y: f64| MT + (H - MT - MB) * (1.0 - y / ytop);
    (ytop, ystep, px, py)
}

fn svg_open(id: &str, label: &str) -> String {
    format!(
        r#"<svg id="{id}" role="img" aria-label="{}" viewBox="0 0 {W} {H}" width="{W}" height="{H}">"#,
        esc(label)
    )
}

/// Requests and errors per second, a bar each.
pub(super) fn throughput(report: &Report) -> String {
    let bars: Vec<_> = intervals(&report.timeline)
        .into_iter()
        .map(|(a, b, p)| (a, b, p.requests as f64 / (b - a), p.errors as f64 / (b - a)))
        .collect();
    let tmax = bars.last().map_or(1.0, |b| b.1).max(1e-3);
    let ymax = bars.iter().map(|b| b.2).fold(0.0, f64::max).max(1.0);
    let (ytop, ystep, px, py) = scales(tmax, ymax);
    let mut s = svg_open("throughput", "requests and errors per second");
    y_grid(&mut s, ytop, ystep, &py, "/s");
    time_axis(&mut s, tmax, &stage_starts(&report.model), &px);
    for (a, b, ok, err) in &bars {
        let (x, w) = (px(*a), (px(*b) - px(*a) - 1.0).max(0.5));
        let _ = write!(
            s,
            r##"<rect class="rps" x="{x:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="#1f3b73"><title>{:.0} requests/s</title></rect>"##,
            py(*ok),
            py(0.0) - py(*ok),
            ok
        );
        if *err > 0.0 {
            let _ = write!(
                s,
                r##"<rect class="eps" x="{x:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="#c92a2a"><title>{:.0} errors/s</title></rect>"##,
                py(*err),
                py(0.0) - py(*err),
                err
            );
        }
    }
    s.push_str("</svg>");
    s.push_str(r##"<p class="legend"><span><i style="background:#1f3b73"></i>requests/s</span> <span><i style="background:#c92a2a"></i>errors/s</span></p>"##);
    s
}

/// A line through `points` (x, y in data units), or nothing when there are none.
fn polyline(
    s: &mut String,
    class: &str,
    name: &str,
    colour: &str,
    points: &[(f64, f64)],
    px: &impl Fn(f64) -> f64,
    py: &impl Fn(f64) -> f64,
) {
    if points.is_empty() {
        return;
    }
    let pts: Vec<String> =
        points.iter().map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y))).collect();
    let _ = write!(
        s,
        r#"<polyline class="{class}" data-name="{}" fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#,
        esc(name),
        pts.join(" ")
    );
}

/// p50, p90 and p99 of each operation's successes, a point a second (at the middle of the
/// second; a second without successes has none).
pub(super) fn latency(report: &Report) -> String {
    let spans = intervals(&report.timeline);
    if spans.iter().all(|(_, _, p)| p.ops.is_empty()) {
        return "<p>The per-second latencies of each operation are not kept in HdrHistogram \
                logs: a merge of logs has none.</p>"
            .into();
    }
    let tmax = spans.last().map_or(1.0, |b| b.1).max(1e-3);
    let starts = stage_starts(&report.model);
    let mut s = String::new();
    for (i, op) in report.ops.iter().enumerate() {
        let series: Vec<Vec<(f64, f64)>> = QUANTILES
            .iter()
            .map(|(_, q)| {
                spans
                    .iter()
                    .filter_map(|(a, b, p)| {
                        let o = p.ops.get(i)?;
                        (o.requests > o.errors).then(|| ((a + b) / 2.0, q(o) as f64 / 1000.0))
                    })
                    .collect()
            })
            .collect();
        let ymax = series.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(0.001);
        let (ytop, ystep, px, py) = scales(tmax, ymax);
        let _ = write!(s, "<h3>{}</h3>", esc(&op.name));
        s.push_str(&svg_open(
            &format!("latency-time-{i}"),
            &format!("{} latency over time", op.name),
        ));
        y_grid(&mut s, ytop, ystep, &py, " ms");
        time_axis(&mut s, tmax, &starts, &px);
        for (k, ((name, _), points)) in QUANTILES.iter().zip(&series).enumerate() {
            polyline(&mut s, &format!("lot {name}"), name, COLOURS[k], points, &px, &py);
        }
        s.push_str("</svg>");
        s.push_str(&legend(QUANTILES.iter().map(|(n, _)| *n)));
    }
    s
}

/// Errors per second by kind, every operation's together; a line a kind.
pub(super) fn errors(report: &Report) -> String {
    let kinds: BTreeSet<&str> =
        report.timeline.iter().flat_map(|p| p.error_kinds.keys().map(String::as_str)).collect();
    if kinds.is_empty() {
        return "<p>No errors.</p>".into();
    }
    let spans = intervals(&report.timeline);
    let tmax = spans.last().map_or(1.0, |b| b.1).max(1e-3);
    let series: Vec<Vec<(f64, f64)>> = kinds
        .iter()
        .map(|k| {
            spans
                .iter()
                .map(|(a, b, p)| {
                    let n = p.error_kinds.get(*k).copied().unwrap_or(0);
                    ((a + b) / 2.0, n as f64 / (b - a))
                })
                .collect()
        })
        .collect();
    let ymax = series.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(1.0);
    let (ytop, ystep, px, py) = scales(tmax, ymax);
    let mut s = svg_open("errors-time", "errors per second by kind");
    y_grid(&mut s, ytop, ystep, &py, "/s");
    time_axis(&mut s, tmax, &stage_starts(&report.model), &px);
    for (k, (kind, points)) in kinds.iter().zip(&series).enumerate() {
        polyline(&mut s, "ekind", kind, COLOURS[k % COLOURS.len()], points, &px, &py);
    }
    s.push_str("</svg>");
    s.push_str(&legend(kinds.into_iter()));
    s
}
