//! `mcpwire load`'s load models, budgets and logs, as real processes on real sockets: a frozen
//! `mcpwire serve` (SIGSTOP, SIGCONT) under the open loop and the closed loop, the in-flight
//! bound, stages, `--find-capacity`, the budget flags at and past their bounds, `--hdr-log` and
//! `report merge`, payload sizes, the progress line. (Targets, eras and scenarios:
//! tests/load_targets.rs.)
//!
//! Timing assertions have wide margins (the machine is small and shared): a one-second freeze
//! must lift the p99 past half a second and leave the p50 well under it.

mod load_support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use load_support::{BIN, announced, load, scenario, serve_on, stderr, temp};

/// Freezes process `pid` (SIGSTOP) 1.5 s from now, for one second (then SIGCONT).
fn freeze_soon(pid: u32) -> std::thread::JoinHandle<()> {
    let kill = move |sig: &str| {
        let ok = Command::new("kill").arg(sig).arg(pid.to_string()).status();
        assert!(ok.unwrap().success(), "kill {sig} {pid}");
    };
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        kill("-STOP");
        std::thread::sleep(Duration::from_secs(1));
        kill("-CONT");
    })
}

/// A server frozen for a second in the middle of an open-loop run: every request due during
/// the freeze waits for it and is timed from its intended start, so the p99 shows the freeze;
/// most requests were due outside it, so the p50 does not.
#[test]
fn a_frozen_server_shows_in_the_open_loop_p99_not_its_p50() {
    let (server, target) = serve_on(&["--tcp", "127.0.0.1:0"]);
    let freezer = freeze_soon(server.id());
    let (out, open) =
        load(&["--target", &target, "--rate", "200", "--duration", "4", "--warmup", "0.5"]);
    freezer.join().unwrap();
    drop(server);
    assert_eq!(out.status.code(), Some(0), "{open} {}", stderr(&out));
    assert_eq!(open["model"]["kind"], "open");
    assert_eq!(open["errors"], 0, "{open}");
    let (p50, p99) =
        (open["latency_us"]["p50"].as_u64().unwrap(), open["latency_us"]["p99"].as_u64().unwrap());
    println!("open loop, 200/s, frozen 1 s: p50 {p50} us, p99 {p99} us");
    assert!(p99 >= 500_000, "the freeze is missing from the p99: {open}");
    assert!(p50 < 250_000, "the freeze leaked into the p50: {open}");
    // The requests due during the freeze were sent on time (into the socket's buffers) and
    // answered after it: none late, none dropped, about 4 s x 200/s counted.
    assert_eq!(open["dropped"], 0, "{open}");
    // (The window opens when the warm-up's timer fires: a request either side of it.)
    assert!((780..=805).contains(&open["requests"].as_u64().unwrap()), "{open}");
}

/// The same freeze under the closed loop: only the requests in flight see it.
#[test]
fn the_closed_loop_hides_most_of_the_same_freeze() {
    let (server, target) = serve_on(&["--tcp", "127.0.0.1:0"]);
    let freezer = freeze_soon(server.id());
    let (out, closed) =
        load(&["--target", &target, "--concurrency", "4", "--duration", "4", "--warmup", "0.5"]);
    freezer.join().unwrap();
    drop(server);
    assert_eq!(out.status.code(), Some(0), "{closed} {}", stderr(&out));
    let l = &closed["latency_us"];
    println!(
        "closed loop, 4 in flight, frozen 1 s: p50 {} us, p99 {} us, max {} us",
        l["p50"], l["p99"], l["max"]
    );
    // The frozen requests took the whole second, yet they are a handful among thousands.
    assert!(l["max"].as_u64().unwrap() >= 500_000, "{closed}");
    assert!(l["p99"].as_u64().unwrap() < 500_000, "{closed}");
}

/// Each budget flag: at its bound it holds (exit 0), just past it the run exits 1 naming it.
#[test]
fn budgets_hold_at_their_bound_and_fail_past_it() {
    // Every call fails (no such tool): an error rate of exactly 1.
    let nope = ["--tool", "nope", "--requests", "50", "--warmup", "0"];
    let (out, r) = load(&[&nope[..], &["--max-error-rate", "1"]].concat());
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    let (out, _) = load(&[&nope[..], &["--max-error-rate", "0.99"]].concat());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("budget broken: total error rate 1.000000 > --max-error-rate 0.99"),
        "{}",
        stderr(&out)
    );

    // A 1:1 mix of a good and a failing call: exactly half fail.
    let half = scenario(
        "half.toml",
        "[[operation]]\nmethod = \"tools/call\"\ntool = \"echo\"\n[[operation]]\nmethod = \"tools/call\"\ntool = \"nope\"\n",
    );
    let h = ["--scenario", half.to_str().unwrap(), "--requests", "100", "--warmup", "0"];
    let (out, r) = load(&[&h[..], &["--max-error-rate", "0.5"]].concat());
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    assert_eq!(r["errors"], 50);
    let (out, _) = load(&[&h[..], &["--max-error-rate", "0.49"]].concat());
    assert_eq!(out.status.code(), Some(1));

    // Without --max-error-rate any failure exits 1; with no failure, a rate of 0 holds.
    let (out, _) = load(&h);
    assert_eq!(out.status.code(), Some(1));
    let ok = ["--requests", "50", "--warmup", "0", "--max-error-rate", "0"];
    assert_eq!(load(&ok).0.status.code(), Some(0));

    // --max-p99: a minute holds; 0 ms cannot (latencies are at least 1 µs).
    let (out, r) = load(&["--requests", "50", "--warmup", "0", "--max-p99", "60000"]);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    let (out, _) = load(&["--requests", "50", "--warmup", "0", "--max-p99", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("budget broken: total p99"), "{}", stderr(&out));
    assert!(stderr(&out).contains("> --max-p99 0 ms"), "{}", stderr(&out));

    // Per operation, in the scenario: the failing one's own budgets.
    let per_op = |rate: &str, p99: &str| {
        scenario(
            "per-op.toml",
            &format!(
                "[[operation]]\nmethod = \"tools/call\"\ntool = \"echo\"\nmax_p99_ms = {p99}\n\
                 [[operation]]\nmethod = \"tools/call\"\ntool = \"nope\"\nmax_error_rate = {rate}\n"
            ),
        )
    };
    let run = |path: PathBuf| {
        let p = path.to_str().unwrap().to_owned();
        load(&["--scenario", &p, "--requests", "40", "--warmup", "0", "--max-error-rate", "1"])
    };
    let (out, r) = run(per_op("1.0", "60000"));
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    let (out, _) = run(per_op("0.99", "60000"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("budget broken: tools/call nope error rate"), "{}", stderr(&out));
    let (out, _) = run(per_op("1.0", "0"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("budget broken: tools/call echo p99"), "{}", stderr(&out));

    // Values outside a budget's range are usage errors.
    for bad in [["--max-error-rate", "1.01"], ["--max-error-rate", "-0.1"], ["--max-p99", "-1"]] {
        assert_eq!(load(&bad).0.status.code(), Some(2), "{bad:?}");
    }
}

/// The open loop's in-flight bound: requests past it wait (timed from their intended start)
/// and are counted late; those due but never sent when the window closes are counted dropped,
/// and a dropped request fails the run like a failed one.
#[test]
fn the_in_flight_bound_makes_requests_late_and_the_rest_dropped() {
    let (out, r) = load(&[
        "--rate",
        "200",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--max-in-flight",
        "1",
        "--tool",
        "sleep",
        "--arguments",
        r#"{"ms":20}"#,
    ]);
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert_eq!(r["errors"], 0, "{r}");
    let (requests, late, dropped) = (
        r["requests"].as_u64().unwrap(),
        r["late"].as_u64().unwrap(),
        r["dropped"].as_u64().unwrap(),
    );
    // At most 50 a second fit through one slot of 20 ms; about 200 were due.
    assert!(requests <= 55 && late > 0 && dropped >= 100, "{r}");
    // Every request due in the window is either counted or dropped: the window's length at
    // 200/s, less the one in flight at the close and those due in its last 10 ms.
    let due = r["elapsed_s"].as_f64().unwrap() * 200.0;
    assert!(((requests + dropped) as f64 - due).abs() <= 5.0, "{due}: {r}");
    // Sent: those answered, and the one in flight at the close.
    assert!(r["sent"].as_u64().unwrap() - requests <= 1, "{r}");

    assert_eq!(r["peak_in_flight"], 1, "{r}");
    // Waiting for the slot counts in the latency: far past the 20 ms the server takes.
    assert!(r["latency_us"]["p99"].as_u64().unwrap() >= 200_000, "{r}");
    // A backlog built in the warm-up is not measured when it is sent after the window opens:
    // the window's own requests are all still waiting behind it, so they are dropped.
    let (out, w) = load(&[
        "--rate",
        "200",
        "--duration",
        "1",
        "--warmup",
        "1",
        "--max-in-flight",
        "1",
        "--tool",
        "sleep",
        "--arguments",
        r#"{"ms":20}"#,
    ]);
    assert_eq!(out.status.code(), Some(1), "{w}");
    assert_eq!((w["requests"].as_u64(), w["sent"].as_u64()), (Some(0), Some(0)), "{w}");
    let due = w["elapsed_s"].as_f64().unwrap() * 200.0;
    assert!((w["dropped"].as_u64().unwrap() as f64 - due).abs() <= 5.0, "{due}: {w}");
    // --max-in-flight is at least 1.
    assert_eq!(load(&["--rate", "10", "--max-in-flight", "0"]).0.status.code(), Some(2));
}

/// `--stages` ramps the open loop's rate (the requests are the integral of the rate) and the
/// closed loop's concurrency.
#[test]
fn stages_ramp_the_rate_and_the_concurrency() {
    let (out, r) = load(&["--rate", "1", "--stages", "1s:400,1s:0"]);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    let n = r["requests"].as_u64().unwrap();
    assert!((390..=401).contains(&n), "0→400→0 over 2 s is 400 requests: {r}");
    assert_eq!(r["model"]["rate"][0]["target"], 400.0);
    let (out, r) = load(&["--stages", "500ms:8,500ms:8"]);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    assert_eq!(r["model"]["kind"], "closed");
    assert!(r["peak_in_flight"].as_u64().unwrap() <= 8, "{r}");
    assert!(r["requests"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(load(&["--stages", "1s:10", "--duration", "3"]).0.status.code(), Some(2));
    assert_eq!(load(&["--stages", "1s"]).0.status.code(), Some(2));
    // A stage's target is bounded as --concurrency and --rate are: at the bound it is taken
    // (checked on a run cut short by a bad target), past it refused.
    let (out, _) = load(&["--stages", "1s:1000001"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("the most a concurrency can be"), "{}", stderr(&out));
    let (out, _) = load(&["--rate", "1", "--stages", "1s:1000000001"]);
    assert!(stderr(&out).contains("the most a rate can be"), "{}", stderr(&out));
    let (out, _) = load(&["--target", "tcp:127.0.0.1:1", "--stages", "1s:1000000"]);
    assert!(stderr(&out).contains("cannot connect"), "{}", stderr(&out));
}

/// `--find-capacity` against a server that can do 400 calls a second (20 in flight of 50 ms):
/// it holds at the low rates, breaks past the capacity, and reports the last rate that held.
#[test]
fn find_capacity_reports_the_last_rate_that_held() {
    let (out, r) = load(&[
        "--find-capacity",
        "--rate",
        "100",
        "--step-factor",
        "2",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--max-in-flight",
        "20",
        "--max-p99",
        "300",
        "--tool",
        "sleep",
        "--arguments",
        r#"{"ms":50}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    let c = &r["capacity"];
    let held = c["last_held_rps"].as_f64().unwrap();
    assert!((100.0..800.0).contains(&held), "{c}");
    let steps = c["steps"].as_array().unwrap();
    assert_eq!(steps[0]["held"], true, "{c}");
    assert_eq!(steps.last().unwrap()["held"], false, "{c}");
    assert!(steps.last().unwrap()["rate"].as_f64().unwrap() <= 800.0, "{c}");
}

/// `--hdr-log` writes the standard interval log; `report merge` of two runs' logs counts every
/// request of both, and the merge of one log reproduces that run's percentiles exactly.
#[test]
fn merged_logs_report_every_request_of_every_run() {
    let (a, b) = (temp("a.hlog"), temp("b.hlog"));
    let run = |log: &PathBuf, rate: &str| {
        let (out, r) = load(&[
            "--rate",
            rate,
            "--requests",
            "300",
            "--warmup",
            "0",
            "--hdr-log",
            log.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
        r
    };
    let (ra, rb) = (run(&a, "1000"), run(&b, "500"));
    let text = std::fs::read_to_string(&a).unwrap();
    assert!(text.starts_with("#mcpwire load"), "{text}");
    assert!(text.contains("#[StartTime: "), "{text}");
    assert!(text.lines().any(|l| l.starts_with("Tag=tools/call_echo,")), "{text}");

    let merge = |logs: &[&PathBuf]| {
        let out = Command::new(BIN)
            .args(["report", "merge", "--json"])
            .args(logs.iter().map(|p| p.as_os_str()))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let one = merge(&[&a]);
    assert_eq!(one["requests"], ra["requests"], "{one}");
    assert_eq!(one["latency_us"], ra["latency_us"], "{one} vs {ra}");
    let both = merge(&[&a, &b]);
    assert_eq!(both["requests"], 600, "{both}");
    let max = ra["latency_us"]["max"].as_u64().max(rb["latency_us"]["max"].as_u64());
    assert_eq!(both["latency_us"]["max"].as_u64(), max, "{both}");
    assert_eq!(both["operations"][0]["name"], "tools/call_echo");

    // A log that cannot be created: exit 2 before any load.
    let (out, _) = load(&["--requests", "10", "--hdr-log", "/nonexistent-dir/x.hlog"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("HdrHistogram log"), "{}", stderr(&out));

    // Not a log: exit 2, naming the file.
    let junk = scenario("junk.hlog", "hello\n");
    let out = Command::new(BIN).args(["report", "merge"]).arg(&junk).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("junk.hlog"), "{}", stderr(&out));
}

/// `--payload-bytes` goes past the old 1 MiB echo bound, up to the frame limit; one byte past
/// the frame limit is a usage error.
#[test]
fn payloads_go_up_to_the_frame_limit() {
    let (server, target) = serve_on(&["--tcp", "127.0.0.1:0"]);
    let (out, r) = load(&[
        "--target",
        &target,
        "--payload-bytes",
        "4194304",
        "--requests",
        "4",
        "--concurrency",
        "2",
        "--warmup",
        "0",
    ]);
    drop(server);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    assert!(r["operations"][0]["payload_bytes_received"].as_u64().unwrap() > 4 * 4_000_000, "{r}");
    // At the frame limit the message fits as text but not as JSON (escapes, the envelope):
    // refused before any load, not sent to be discarded and wait out its timeout.
    let (out, _) = load(&["--payload-bytes", "16777216", "--requests", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("past the 16777216-byte frame limit"), "{}", stderr(&out));
    let (out, _) = load(&["--payload-bytes", "16777217", "--requests", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("16777217"), "{}", stderr(&out));
}

/// The progress line is for a terminal: on a pipe, standard error stays empty.
#[test]
fn no_progress_line_on_a_pipe() {
    let (out, r) = load(&["--rate", "100", "--duration", "1.2", "--warmup", "0"]);
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(stderr(&out), "");
    // One point a second in the timeline.
    assert!(r["timeline"].as_array().unwrap().len() >= 2, "{r}");
}

/// On a terminal (a pseudo-terminal from util-linux's `script`), the progress line shows the
/// rate, the errors and the p99 so far.
#[test]
fn a_progress_line_on_a_terminal() {
    let typescript = temp("typescript");
    let cmd = format!("{BIN} load --rate 300 --duration 2.5 --warmup 0 >/dev/null");
    let out = Command::new("script")
        .args(["-qec", &cmd])
        .arg(&typescript)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = String::from_utf8_lossy(&std::fs::read(&typescript).unwrap()).into_owned();
    assert!(seen.contains(" req/s  errors 0  p99 so far "), "{seen}");
}

/// `load compare`: three short open-loop runs at once (so they share the machine's noise), two
/// of the same server and one whose `sleep` tool takes 2 ms more. The same server twice is no
/// regression (exit 0); the slower one is flagged (exit 1), from the reports and from the logs
/// alike, with limits of 1 ms, well below the 2 ms effect. The Markdown has its table and
/// verdict; bad input exits 2 with its reason.
#[test]
fn compare_flags_a_server_2ms_slower_and_passes_the_same_one_twice() {
    let run = |name: &'static str, ms: u32| {
        std::thread::spawn(move || {
            let (json, log) = (temp(&format!("{name}.json")), temp(&format!("{name}.hlog")));
            let args = format!(r#"{{"ms":{ms}}}"#);
            let (out, r) = load(&[
                "--rate",
                "200",
                "--duration",
                "8",
                "--warmup",
                "0.5",
                "--tool",
                "sleep",
                "--arguments",
                &args,
                "--hdr-log",
                log.to_str().unwrap(),
            ]);
            assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
            std::fs::write(&json, &out.stdout).unwrap();
            (json, log)
        })
    };
    let (base, again, slow) = (run("base", 0), run("again", 0), run("slow", 2));
    let ((base, base_log), (again, again_log), (slow, slow_log)) =
        (base.join().unwrap(), again.join().unwrap(), slow.join().unwrap());
    let compare = |a: &PathBuf, b: &PathBuf, more: &[&str]| {
        let out = Command::new(BIN)
            .args(["load", "compare"])
            .args([a, b])
            .args(["--max-p50-regression", "1ms", "--max-p99-regression", "1ms"])
            .args(more)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), stderr(&out))
    };
    for (a, b) in [(&base, &again), (&base_log, &again_log), (&base, &again_log)] {
        let (code, out, err) = compare(a, b, &[]);
        println!("{out}");
        assert_eq!(code, Some(0), "{out} {err}");
        assert!(out.contains("verdict: no regression (4 checks, alpha 0.05)"), "{out}");
    }
    // (A log names the operation by its tag: `tools/call_sleep`.)
    for (a, b, name) in
        [(&base, &slow, "tools/call sleep"), (&base_log, &slow_log, "tools/call_sleep")]
    {
        let (code, out, err) = compare(a, b, &[]);
        println!("{out}");
        assert_eq!(code, Some(1), "{out} {err}");
        assert!(out.contains(&format!("verdict: regression: {name} p50 +")), "{out}");
    }
    let (code, md, _) = compare(&base, &slow, &["--markdown"]);
    assert_eq!(code, Some(1));
    assert!(md.contains("| operation | metric | base | new | change | p-value | limit |"), "{md}");
    assert!(md.contains("| `tools/call sleep` | p50 |"), "{md}");
    assert!(md.contains("\n**Verdict: regression: tools/call sleep p50 +"), "{md}");
    let (code, json, _) = compare(&base, &slow, &["--json"]);
    assert_eq!(code, Some(1));
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (&v["regression"], &v["checks"][0]["status"]),
        (&Value::Bool(true), &"REGRESSION".into())
    );

    // Bad input: exit 2, with the reason.
    let text = std::fs::read_to_string(&base).unwrap();
    let cut = scenario("cut.json", &text[..text.len() / 2]);
    let (code, _, err) = compare(&base, &cut, &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("cut.json: not a load --json report: EOF while parsing"), "{err}");
    let other = scenario("other.json", &text.replace("tools/call sleep", "tools/call echo"));
    let (code, _, err) = compare(&base, &other, &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("only in BASE: tools/call sleep; only in NEW: tools/call echo"), "{err}");
    let (code, _, err) = compare(&base, &slow, &["--alpha", "1"]);
    assert_eq!(code, Some(2), "{err}");
}

/// A session of `[[step]]`s: each user lists the tools, calls the first one listed with a
/// message of its own, then sends back what it got (a value carried from one result to the
/// next request), and thinks 50 ms; the steps run in order, the think time bounds each user's
/// pace, and a step that needs a value never saved fails as `missing_value`.
#[test]
fn a_session_carries_values_between_steps_and_thinks() {
    let session = scenario(
        "session.toml",
        r#"
        [[step]]
        method = "tools/list"
        save = { tool = "/tools/0/name" }
        [[step]]
        name = "first"
        method = "tools/call"
        tool = "${tool}"
        arguments = { message = "u${user}-i${iteration}" }
        expect_text = "u${user}-i${iteration}"
        save = { text = "/content/0/text" }
        [[step]]
        name = "again"
        method = "tools/call"
        tool = "echo"
        arguments = { message = "again ${text}" }
        expect_text = "again u${user}-i${iteration}"
        think_ms = 50
        "#,
    );
    let s = session.to_str().unwrap();
    let (out, report) =
        load(&["--scenario", s, "--concurrency", "4", "--duration", "2", "--warmup", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(report["errors"], 0, "{report}");
    assert!(report["method"].as_str().unwrap().starts_with("session ("), "{report}");
    let ops = report["operations"].as_array().unwrap();
    let n: Vec<u64> = ops.iter().map(|o| o["requests"].as_u64().unwrap()).collect();
    assert_eq!(ops[1]["name"], "first");
    // In order: no step runs ahead of the one before it by more than a step a user.
    assert!(n[0] >= n[1] && n[1] >= n[2] && n[0] - n[2] <= 2 * 4, "{n:?}");
    // 50 ms a round: at most 2 s / 50 ms rounds a user, and some rounds done.
    assert!((4..=4 * 41).contains(&n[2]), "{n:?}");

    let broken = scenario(
        "unsaved.toml",
        "[[step]]\nmethod = \"tools/call\"\ntool = \"echo\"\n\
         arguments = { message = \"x ${never_saved}\" }\n",
    );
    let (out, report) = load(&[
        "--scenario",
        broken.to_str().unwrap(),
        "--concurrency",
        "2",
        "--requests",
        "20",
        "--warmup",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(report["errors_by_kind"]["missing_value"], 20, "{report}");
    // Users are the closed loop's; an open loop schedules requests.
    let (out, _) = load(&["--scenario", s, "--rate", "10", "--duration", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("runs users in the closed loop"), "{}", stderr(&out));
}

/// The threads of process `pid` (`/proc/PID/task`).
fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().count()
}

/// `--threads N` runs a command on N tokio workers beside its main thread, and `--threads 1` on
/// the main thread alone; 1 and 1,024 are taken, 0 and 1,025 refused as usage errors.
#[test]
fn threads_sets_the_runtime_at_and_past_its_bounds() {
    for (n, threads) in [("1", 1), ("3", 4)] {
        let (served, target) = serve_on(&["--threads", n, "--http", "127.0.0.1:0"]);
        assert_eq!(threads_of(served.id()), threads, "serve --threads {n}");
        let (out, r) =
            load(&["--threads", n, "--target", &target, "--requests", "200", "--warmup", "0"]);
        assert_eq!(out.status.code(), Some(0), "load --threads {n}: {}", stderr(&out));
        assert_eq!((r["requests"].as_u64(), r["errors"].as_u64()), (Some(200), Some(0)), "{r}");
        // The server still runs on as many threads after serving them.
        assert_eq!(threads_of(served.id()), threads, "serve --threads {n}");
        // The bridge too (its child is a process of its own).
        let child = [BIN, "serve", "--stdio"];
        let (bridge, target) = announced(
            &[&["bridge", "--threads", n, "--http", "127.0.0.1:0", "--"][..], &child].concat(),
        );
        let (out, r) = load(&["--target", &target, "--requests", "200", "--warmup", "0"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "load through bridge --threads {n}: {}",
            stderr(&out)
        );
        assert_eq!((r["requests"].as_u64(), r["errors"].as_u64()), (Some(200), Some(0)), "{r}");
        assert_eq!(threads_of(bridge.id()), threads, "bridge --threads {n}");
    }
    let (out, r) = load(&["--threads", "1024", "--requests", "50", "--warmup", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(r["errors"].as_u64(), Some(0), "{r}");
    for past in ["0", "1025"] {
        let out = Command::new(BIN).args(["--threads", past, "load"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "--threads {past}");
        assert!(stderr(&out).contains("is not in 1..=1024"), "{}", stderr(&out));
    }
}
