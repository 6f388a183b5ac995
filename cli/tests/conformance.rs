//! The MCP conformance suite at both pinned versions, server and client legs, through
//! `tests/conformance/run.sh`: every scenario's outcome must be the one
//! `tests/conformance/expected.toml` (or, for `mcpwire serve`, `expected-serve.toml`) names, an
//! unexpected pass included. The script installs the suites (tests/interop/install.sh) and
//! builds the examples in release; its score table is printed (`--nocapture` shows it).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Bound for the whole run: on a fresh clone the installs (several minutes from a cold cache),
/// a release build of the examples from cold while the other test of this file builds too, and
/// about half a minute of scenarios (a first run on a loaded 2-core machine took 852 s). A hang
/// fails the test instead of blocking.
const RUN_TIMEOUT: Duration = Duration::from_secs(1800);

/// Reads a pipe to its end on a thread of its own (so neither pipe can fill and stall the run).
fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut out = Vec::new();
        let _ = pipe.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    })
}

#[test]
fn conformance_outcomes_are_as_expected() {
    let out = run_script(&[]);
    // The table was printed: the legs ran and were scored.
    for leg in ["server 0.1.16", "server 0.2.0-alpha.12", "client 0.1.16", "client 0.2.0-alpha.12"]
    {
        assert!(out.contains(&format!("| {leg} (")), "no score for {leg}\n{out}");
    }
}

/// The server legs through `mcpwire bridge` in front of `examples/everything --stdio`: the
/// same expectations as the example served directly (the bridge is transparent).
#[test]
fn conformance_through_the_bridge_is_as_direct() {
    let out = run_script(&["--bridge", "--only", "server"]);
    for leg in ["server 0.1.16", "server 0.2.0-alpha.12"] {
        assert!(out.contains(&format!("| {leg} (")), "no score for {leg}\n{out}");
    }
}

/// Runs tests/conformance/run.sh with `args`; its stdout, once it succeeded.
fn run_script(args: &[&str]) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut child = Command::new("bash")
        .arg("tests/conformance/run.sh")
        .args(args)
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A group of its own: on a timeout the suite, the servers and cargo end with it.
        .process_group(0)
        .spawn()
        .expect("bash tests/conformance/run.sh");
    let out = drain(child.stdout.take().expect("piped stdout"));
    let err = drain(child.stderr.take().expect("piped stderr"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for run.sh") {
            break Some(status);
        }
        if start.elapsed() > RUN_TIMEOUT {
            let _ = Command::new("kill").args(["-KILL", &format!("-{}", child.id())]).status();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(200));
    };
    let (out, err) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    let report = format!("--- stdout ---\n{out}\n--- stderr ---\n{err}");
    println!("{report}");
    match status {
        None => panic!("tests/conformance/run.sh did not end within {RUN_TIMEOUT:?}\n{report}"),
        Some(s) => assert!(s.success(), "tests/conformance/run.sh failed ({s})\n{report}"),
    }
    out
}
