//! Helpers of the replay tests (tests/replay.rs, tests/interop/replay.rs): record a session
//! with `mcpwire load` as the host, read the capture on its own (not with the tool's reader),
//! replay it, and check that the replay reproduced it.

#![allow(dead_code, reason = "each test file uses only some of the helpers")]

#[path = "../load_support/mod.rs"]
mod load_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

#[allow(unused_imports, reason = "each test file uses only some of the helpers")]
pub use load_support::{BIN, announced, load, stderr};

pub const LEGACY: &str = "2025-11-25";
pub const MODERN: &str = "2026-07-28";

/// A scenario as a host might send: echo calls with their own arguments, and lists.
pub const SCENARIO: &str = r#"
[[operation]]
method = "tools/call"
tool = "echo"
arguments = { message = "hello from the capture" }
weight = 4

[[operation]]
method = "tools/list"
weight = 1
"#;

/// Held by each test for its whole run: the rate checks are within 2%, on a small shared
/// machine, so the tests of a binary take turns rather than compete for its cores.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The session a host has with `target` (at `version`, `rate` requests a second for `secs`):
/// `mcpwire load` with the scenario, its report.
pub fn host_session(target: &str, version: &str, rate: &str, secs: &str) -> Value {
    let scenario = temp(&format!("scenario-{}.toml", rand_suffix()));
    std::fs::write(&scenario, SCENARIO).unwrap();
    let (out, report) = load(&[
        "--target",
        target,
        "--protocol-version",
        version,
        "--scenario",
        scenario.to_str().unwrap(),
        "--rate",
        rate,
        "--duration",
        secs,
        "--warmup",
        "0",
    ]);
    assert!(out.status.success(), "the host's session failed: {report} {}", stderr(&out));
    report
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

/// What a capture holds, read here line by line as the format documents it.
#[derive(Debug)]
pub struct Recorded {
    /// Client requests but the handshake, by method and tool.
    pub mix: BTreeMap<String, u64>,
    /// Of `mix`, the requests the capture holds no answer to (in flight when it ended): a
    /// replay has nothing to compare their answers with.
    pub unanswered: BTreeMap<String, u64>,
    pub requests: u64,
    /// (requests - 1) / (last - first), requests a second.
    pub rate: f64,
    /// Server answers, and of them errors or isError results.
    pub answers: u64,
    pub lines: u64,
    pub sessions: std::collections::BTreeSet<String>,
}

pub fn read_capture(path: &Path) -> Recorded {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().expect("a header")).unwrap();
    assert_eq!(header["mcpwire_capture"], 1, "{header}");
    let mut mix = BTreeMap::new();
    let (mut first, mut last, mut requests, mut answers, mut n) = (u64::MAX, 0, 0, 0, 1);
    let mut sessions = std::collections::BTreeSet::new();
    // Requests not answered yet, by session and id: their labels.
    let mut open: BTreeMap<(String, String), String> = BTreeMap::new();
    for line in lines {
        n += 1;
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if let Some(s) = v["session"].as_str() {
            sessions.insert(s.to_owned());
        }
        let f = &v["frame"];
        let t = v["t_us"].as_u64().unwrap();
        match v["dir"].as_str().unwrap() {
            "c2s" => {
                let Some(method) = f["method"].as_str() else { continue };
                if f["id"].is_null() || method == "initialize" || method == "server/discover" {
                    continue;
                }
                let label = match f["params"]["name"].as_str() {
                    Some(tool) if method == "tools/call" => format!("{method} {tool}"),
                    _ => method.to_owned(),
                };
                let key = (v["session"].to_string(), f["id"].to_string());
                open.insert(key, label.clone());
                *mix.entry(label).or_insert(0) += 1;
                requests += 1;
                first = first.min(t);
                last = last.max(t);
            }
            _ => {
                let answer = f.get("result").is_some() || f.get("error").is_some();
                if answer {
                    open.remove(&(v["session"].to_string(), f["id"].to_string()));
                }
                answers += u64::from(answer);
            }
        }
    }
    let mut unanswered = BTreeMap::new();
    for label in open.into_values() {
        *unanswered.entry(label).or_insert(0) += 1;
    }
    let rate = (requests - 1) as f64 / ((last - first) as f64 / 1e6);
    Recorded { mix, unanswered, requests, rate, answers, lines: n, sessions }
}

/// `load --replay CAPTURE` against `target` at `version`.
pub fn replay(target: &str, capture: &Path, version: &str, extra: &[&str]) -> (Output, Value) {
    let mut args = vec![
        "--target",
        target,
        "--replay",
        capture.to_str().unwrap(),
        "--protocol-version",
        version,
    ];
    args.extend_from_slice(extra);
    load(&args)
}

/// Within `share` of `want`.
pub fn near(got: f64, want: f64, share: f64) -> bool {
    (got - want).abs() <= share * want
}

/// The replay sent the capture's requests: the same count, each operation's within 2% (here
/// exactly) of the capture's, the rate within 2% of the recorded one, no mismatch.
pub fn assert_reproduced(rec: &Recorded, report: &Value) {
    assert_eq!(report["requests"], rec.requests, "{report}");
    assert_eq!(report["mismatches"], 0, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    for op in report["operations"].as_array().unwrap() {
        let name = op["name"].as_str().unwrap();
        let got = op["requests"].as_u64().unwrap() as f64;
        let want = rec.mix[name] as f64;
        assert!(near(got, want, 0.02), "{name}: {got} replayed, {want} recorded: {report}");
        assert_eq!(op["mismatches"], 0, "{report}");
    }
    assert_eq!(report["operations"].as_array().unwrap().len(), rec.mix.len(), "{report}");
    let replayed = report["replay"]["replayed_rate_rps"].as_f64().unwrap();
    assert!(
        near(replayed, rec.rate, 0.02),
        "replayed at {replayed:.3}/s, recorded at {:.3}/s: {report}",
        rec.rate
    );
    let recorded = report["replay"]["recorded_rate_rps"].as_f64().unwrap();
    assert!(near(recorded, rec.rate, 0.001), "{recorded} vs {}", rec.rate);
    println!(
        "replayed {} requests: recorded {:.3}/s, replayed {replayed:.3}/s, throughput {:.3}/s, p50 {} us",
        rec.requests, rec.rate, report["throughput_rps"], report["latency_us"]["p50"]
    );
}

/// The replay against a server whose echo now fails: every echo call is a mismatch.
pub fn assert_mismatched(rec: &Recorded, report: &Value, kind: &str) {
    // An echo call the capture holds no answer to has nothing to be compared with.
    let echo = rec.mix["tools/call echo"] - rec.unanswered.get("tools/call echo").unwrap_or(&0);
    assert_eq!(report["requests"], rec.requests, "{report}");
    let unanswered: u64 = rec.unanswered.values().sum();
    assert_eq!(report["replay"]["unanswered"], unanswered, "{report}");
    assert_eq!(report["mismatches"], echo, "{report}");
    assert_eq!(report["errors_by_kind"][kind], echo, "{report}");
    let op = report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "tools/call echo")
        .unwrap();
    assert_eq!(op["mismatches"], echo, "{report}");
}

/// Replays `capture` (recorded in era `recorded_in`) against `server` in both eras, each time
/// reproducing the capture, then against `changed` (the server with echo failing), where every
/// echo call is a mismatch of `kind` and the run exits 1.
pub fn replay_both_eras(
    capture: &Path,
    server: &str,
    changed: &str,
    recorded_in: &str,
    kind: &str,
) -> Recorded {
    let rec = read_capture(capture);
    let other = if recorded_in == MODERN { LEGACY } else { MODERN };
    for version in [recorded_in, other] {
        let (out, report) = replay(server, capture, version, &[]);
        assert!(out.status.success(), "{report} {}", stderr(&out));
        assert_eq!(report["era"], if version == MODERN { "modern" } else { "legacy" });
        assert_reproduced(&rec, &report);
    }
    let (out, report) = replay(changed, capture, recorded_in, &[]);
    assert_eq!(out.status.code(), Some(1), "mismatches fail the run: {report}");
    assert_mismatched(&rec, &report, kind);
    rec
}
