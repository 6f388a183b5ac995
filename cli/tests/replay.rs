//! `mcpwire record` and `mcpwire load --replay` as real processes: a session recorded in front
//! of `mcpwire serve` (the stdio tee, the HTTP proxy; both eras) and replayed against it, in
//! the same era and the other one, with the mix and the rate of the capture within 2%; and
//! against a changed server (`serve --fail-tool echo`), whose answers show up as mismatches.
//! The tee's transparency (bytes, exit status, standard error), the capture's bound, and bad
//! captures given to `--replay`. (The same against the Python SDK's server:
//! tests/interop/replay.rs.)

mod replay_support;

use std::io::Write;
use std::process::{Command, Stdio};

use replay_support::*;

/// Records a host's session with `mcpwire serve` over stdio, at `version`.
fn record_stdio(version: &str) -> std::path::PathBuf {
    let cap = temp(&format!("stdio-{version}.ndjson"));
    let target = format!("stdio:{BIN} record --output {} -- {BIN} serve", cap.display());
    host_session(&target, version, "100", "3");
    cap
}

fn stdio_round_trip(recorded_in: &str) {
    let cap = record_stdio(recorded_in);
    let serve = format!("stdio:{BIN} serve");
    let changed = format!("stdio:{BIN} serve --fail-tool echo");
    let rec = replay_both_eras(&cap, &serve, &changed, recorded_in, "mismatch_tool_error");
    assert!((280..=310).contains(&rec.requests), "{rec:?}");
    assert_eq!(rec.mix.len(), 2, "{rec:?}");
    let (out, text) = {
        let out = Command::new(BIN)
            .args(["load", "--target", &changed, "--replay", cap.to_str().unwrap()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out, text)
    };
    assert_eq!(out.status.code(), Some(1));
    let line = format!("mismatches:    {} (answers whose shape", rec.mix["tools/call echo"]);
    assert!(text.contains(&line), "{text}");
    assert!(text.contains("replay:        "), "{text}");
}

#[test]
fn a_legacy_stdio_session_replays_against_serve_in_both_eras() {
    let _one = serial();
    stdio_round_trip(LEGACY);
}

#[test]
fn a_modern_stdio_session_replays_against_serve_in_both_eras() {
    let _one = serial();
    stdio_round_trip(MODERN);
}

fn http_round_trip(version: &str) {
    let (_server, url) = announced(&["serve", "--http", "127.0.0.1:0"]);
    let cap = temp(&format!("http-{version}.ndjson"));
    let (mut proxy, proxy_url) = announced(&[
        "record",
        "--output",
        cap.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--upstream",
        &url,
    ]);
    host_session(&proxy_url, version, "100", "3");
    // SIGTERM: the proxy stops and its capture is complete.
    let pid = proxy.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = proxy.0.wait().unwrap();
    assert!(status.success(), "{status}");
    let (_changed, changed_url) =
        announced(&["serve", "--http", "127.0.0.1:0", "--fail-tool", "echo"]);
    let rec = replay_both_eras(&cap, &url, &changed_url, version, "mismatch_tool_error");
    assert!((280..=310).contains(&rec.requests), "{rec:?}");
    assert!(rec.answers >= rec.requests, "{rec:?}");
    if version == LEGACY {
        assert_eq!(rec.sessions.len(), 1, "the legacy session is recorded: {rec:?}");
    } else {
        assert!(rec.sessions.is_empty(), "{rec:?}");
    }
}

#[test]
fn a_legacy_http_session_recorded_by_the_proxy_replays() {
    let _one = serial();
    http_round_trip(LEGACY);
}

#[test]
fn a_modern_http_session_recorded_by_the_proxy_replays() {
    let _one = serial();
    http_round_trip(MODERN);
}

#[test]
fn speed_loop_and_sample_shape_the_replay() {
    let _one = serial();
    let cap = record_stdio(LEGACY);
    let rec = read_capture(&cap);
    let serve = format!("stdio:{BIN} serve");
    // Twice as fast: the same requests at twice the rate.
    let (out, report) = replay(&serve, &cap, LEGACY, &["--replay-speed", "2"]);
    assert!(out.status.success(), "{report}");
    assert_eq!(report["requests"], rec.requests, "{report}");
    let fast = report["replay"]["replayed_rate_rps"].as_f64().unwrap();
    assert!(near(fast, 2.0 * rec.rate, 0.02), "{fast} vs 2 x {}: {report}", rec.rate);
    // A fixed half of the requests, the mix kept within a few points.
    let (_, a) = replay(&serve, &cap, LEGACY, &["--replay-sample", "0.5"]);
    let (_, b) = replay(&serve, &cap, LEGACY, &["--replay-sample", "0.5"]);
    assert_eq!(a["requests"], b["requests"], "the sample is the same every run");
    let n = a["requests"].as_u64().unwrap();
    assert!((rec.requests / 2 - 30..=rec.requests / 2 + 30).contains(&n), "{a}");
    // Looped at ten times the speed for 2 s: about 2 s x 10 x the rate.
    let (out, report) =
        replay(&serve, &cap, LEGACY, &["--replay-speed", "10", "--replay-loop", "--duration", "2"]);
    assert!(out.status.success(), "{report}");
    let sent = report["sent"].as_f64().unwrap();
    assert!(near(sent, 20.0 * rec.rate, 0.05), "{sent} vs {}: {report}", 20.0 * rec.rate);
    assert_eq!(report["mismatches"], 0, "{report}");
}

/// The tee passes every byte both ways unchanged (garbage, blank lines, CRLF, a last line
/// with no newline), passes the child's standard error and exit status, and records the bad
/// frames as bad.
#[test]
fn the_tee_is_transparent_and_records_bad_frames() {
    let _one = serial();
    let cap = temp("tee.ndjson");
    let script = "cat; echo 'to stderr' >&2; exit 3";
    let mut child = Command::new(BIN)
        .args(["record", "--output", cap.to_str().unwrap(), "--", "sh", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input: &[u8] =
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\nnot json\n\xff\xfe\n{\"a\":1}";
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.stdout, input, "the bytes came back changed");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "to stderr\n");
    let text = std::fs::read_to_string(&cap).unwrap();
    let lines: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // The header, then each of the 4 frames once each way.
    assert_eq!(lines.len(), 1 + 8, "{text}");
    for dir in ["c2s", "s2c"] {
        let mine: Vec<_> = lines[1..].iter().filter(|l| l["dir"] == dir).collect();
        assert_eq!(mine.len(), 4, "{text}");
        assert_eq!(mine[0]["frame"]["method"], "ping");
        assert_eq!(mine[1]["bad"], "not json");
        assert!(mine[1]["reason"].as_str().unwrap().starts_with("not JSON"));
        assert!(mine[2]["reason"].as_str().unwrap().starts_with("not UTF-8"));
        assert_eq!(mine[3]["frame"]["a"], 1);
    }
}

/// A bound far below the session: the host's session still succeeds in full, the capture
/// stays within it (whole lines only), and the tee says how many frames it left out.
#[test]
fn a_bounded_capture_stops_at_its_bound_and_the_traffic_goes_on() {
    let _one = serial();
    let cap = temp("bounded.ndjson");
    let target =
        format!("stdio:{BIN} record --max-bytes 4k --output {} -- {BIN} serve", cap.display());
    let report = host_session(&target, LEGACY, "100", "1");
    assert_eq!(report["errors"], 0, "{report}");
    let bytes = std::fs::read(&cap).unwrap();
    // Whole lines up to the bound (the longest, a tools/list answer, is under 2 kB).
    assert!(bytes.len() <= 4096 && bytes.len() > 2048, "{}", bytes.len());
    assert_eq!(bytes.last(), Some(&b'\n'));
    let rec = read_capture(&cap);
    assert!(rec.requests > 0);
    // What it holds replays.
    let (out, report) = replay(&format!("stdio:{BIN} serve"), &cap, LEGACY, &[]);
    assert!(out.status.success(), "{report} {}", stderr(&out));
    assert_eq!(report["requests"], rec.requests, "{report}");
}

#[test]
fn bad_captures_are_refused_with_the_line() {
    let _one = serial();
    let serve = format!("stdio:{BIN} serve");
    let cases: [(&str, &[u8], &str); 5] = [
        ("empty", b"", "empty: no capture header"),
        ("not-a-capture", b"{\"jsonrpc\":\"2.0\"}\n", "line 1: not an mcpwire capture"),
        ("garbage", b"{\"mcpwire_capture\":1}\n\x00\x01garbage\n", "line 2: not JSON"),
        (
            "no-requests",
            b"{\"mcpwire_capture\":1}\n{\"t_us\":0,\"dir\":\"s2c\",\"conn\":0,\"frame\":{}}\n",
            "no request to replay",
        ),
        ("version", b"{\"mcpwire_capture\":2}\n", "capture version 2"),
    ];
    for (name, bytes, want) in cases {
        let path = temp(&format!("bad-{name}.ndjson"));
        std::fs::write(&path, bytes).unwrap();
        let (out, _) = replay(&serve, &path, LEGACY, &[]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = stderr(&out);
        assert!(err.contains("--replay") && err.contains(want), "{name}: {err}");
    }
    let (out, _) = replay(&serve, &temp("missing.ndjson"), LEGACY, &[]);
    assert_eq!(out.status.code(), Some(2));
}

/// A child that exits ends the tee, though the host still holds its standard input open; what
/// the child wrote first is passed on and recorded.
#[test]
fn a_child_that_exits_ends_the_tee() {
    let _one = serial();
    let cap = temp("exits.ndjson");
    let mut child = Command::new(BIN)
        .args(["record", "--output", cap.to_str().unwrap(), "--", "sh", "-c"])
        .arg("echo '{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}'; exit 5")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "the tee hangs");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(stdin);
    assert_eq!(status.code(), Some(5));
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    assert_eq!(out, "{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}\n");
    let text = std::fs::read_to_string(&cap).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.contains(
            "\"dir\":\"s2c\",\"conn\":0,\"frame\":{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}"
        ),
        "{text}"
    );
}
