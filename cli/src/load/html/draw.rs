//! What every plot of the HTML report draws with: its size and margins, the line colours, the
//! escaping of quoted text, the grid, the axis steps and the legend.

use std::fmt::Write as _;

/// Plot size, in SVG user units.
pub(super) const W: f64 = 760.0;
pub(super) const H: f64 = 300.0;
/// Margins: left (the y labels), right, top, bottom (the x labels).
pub(super) const ML: f64 = 70.0;
pub(super) const MR: f64 = 20.0;
pub(super) const MT: f64 = 15.0;
pub(super) const MB: f64 = 40.0;

/// Line colours, in turn (the total is always the first).
pub(super) const COLOURS: [&str; 8] =
    ["#1f3b73", "#d9480f", "#2b8a3e", "#862e9c", "#c92a2a", "#0b7285", "#e67700", "#495057"];

pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A "nice" step (1, 2 or 5 times a power of ten) giving about `n` ticks up to `max`.
pub(super) fn nice_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    p * if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    }
}

pub(super) fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 10.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The horizontal grid lines of a plot, each labelled with its value and `unit`, every
/// `ystep` up to `ytop`.
pub(super) fn y_grid(s: &mut String, ytop: f64, ystep: f64, py: &impl Fn(f64) -> f64, unit: &str) {
    let mut y = 0.0;
    while y <= ytop + ystep / 2.0 {
        let _ = write!(
            s,
            r#"<line class="grid" x1="{ML}" x2="{}" y1="{yy:.1}" y2="{yy:.1}"/><text class="yl" x="{}" y="{:.1}">{}{unit}</text>"#,
            W - MR,
            ML - 6.0,
            py(y) + 4.0,
            fmt_num(y),
            yy = py(y)
        );
        y += ystep;
    }
}

pub(super) fn legend<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut s = String::from(r#"<p class="legend">"#);
    for (i, n) in names.enumerate() {
        let _ = write!(
            s,
            r#"<span><i style="background:{}"></i>{}</span> "#,
            COLOURS[i % COLOURS.len()],
            esc(n)
        );
    }
    s.push_str("</p>");
    s
}
