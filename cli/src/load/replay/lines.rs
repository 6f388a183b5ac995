//! The report's lines about a replay: the capture replayed and the answers whose shape
//! differed from the recorded ones'.

/// The text report's `replay:` line.
#[must_use]
pub fn text_line(r: &serde_json::Value) -> String {
    format!(
        "replay:        {}: {} requests over {:.3} s ({:.2} requests/s recorded, {:.2} replayed), \
         speed x{}{}\n",
        r["capture"].as_str().unwrap_or("?"),
        r["requests"],
        r["span_s"].as_f64().unwrap_or(0.0),
        r["recorded_rate_rps"].as_f64().unwrap_or(0.0),
        r["replayed_rate_rps"].as_f64().unwrap_or(0.0),
        r["speed"],
        if r["loop"] == true { ", looped" } else { "" }
    )
}

/// The text report's `mismatches:` line.
#[must_use]
pub fn mismatch_line(errors: &std::collections::BTreeMap<String, u64>) -> String {
    format!(
        "mismatches:    {} (answers whose shape differs from the recorded one's)\n",
        mismatches(errors)
    )
}

/// Of an operation's failures, those whose shape differed from the recorded one's.
#[must_use]
pub fn mismatches(errors: &std::collections::BTreeMap<String, u64>) -> u64 {
    errors.iter().filter(|(k, _)| k.starts_with(super::script::MISMATCH)).map(|(_, n)| n).sum()
}
