//! Interop with the real MCP implementations, at the versions `tests/interop/install.sh` pins:
//! `mcpwire load` against npm `@modelcontextprotocol/server-everything` over stdio, and the
//! official Python SDK's client (PyPI `mcp`) against `mcpwire serve` over stdio.
//!
//! The first test to run installs both into `target/interop/` (once per test binary; the
//! installer is idempotent). When node, npm or python3 is missing, or the install fails, every
//! test here fails with the installer's output: these tests never skip.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

/// Bound for the installer (a cold npm + pip install from the registries).
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
/// Bound for each interop run; a hang fails the test instead of blocking CI.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn server_everything_js() -> PathBuf {
    root().join(
        "target/interop/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )
}

fn venv_python() -> PathBuf {
    root().join("target/interop/venv/bin/python")
}

/// What a bounded run produced.
struct Run {
    /// `None` when the run was killed for exceeding its bound.
    status: Option<ExitStatus>,
    elapsed: Duration,
    stdout: String,
    stderr: String,
}

impl Run {
    fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    fn describe(&self, what: &str) -> String {
        let status = match self.status {
            Some(s) => format!("{s}"),
            None => "killed: exceeded its time bound".to_owned(),
        };
        format!(
            "{what}: {status} after {:.1} s\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.elapsed.as_secs_f64(),
            self.stdout,
            self.stderr
        )
    }
}

/// Runs `cmd` from the project root with piped output, in its own process group; if it is
/// still running after `timeout`, the whole group (the child and whatever it spawned) is
/// killed and the run reports no status.
fn run_bounded(mut cmd: Command, timeout: Duration) -> Run {
    let start = Instant::now();
    let mut child = cmd
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            break Some(status);
        }
        if start.elapsed() > timeout {
            // The group id is the child's pid (process_group(0)).
            let _ =
                Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().unwrap();
    let stderr = err.join().unwrap();
    Run { status, elapsed: start.elapsed(), stdout, stderr }
}

/// Runs `tests/interop/install.sh` once per test binary; every caller gets its outcome, and
/// a failed install fails every test with the installer's output.
fn ensure_installed() {
    static INSTALL: OnceLock<Result<String, String>> = OnceLock::new();
    let outcome = INSTALL.get_or_init(|| {
        let mut cmd = Command::new("bash");
        cmd.arg("tests/interop/install.sh");
        let run = run_bounded(cmd, INSTALL_TIMEOUT);
        let report = run.describe("bash tests/interop/install.sh");
        if run.success() {
            eprintln!("{report}");
            Ok(report)
        } else {
            Err(report)
        }
    });
    match outcome {
        Ok(_) => {}
        Err(report) => panic!(
            "the interop tests need node (18+), npm and python3 (3.10+ with venv) and network \
             access to the npm and PyPI registries; installing the pinned packages failed.\n{report}"
        ),
    }
}

/// `s` quoted for `sh -c` when it needs to be.
fn sh_quote(s: &str) -> String {
    if s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-@+:,=".contains(&b)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[test]
fn load_against_the_reference_server_everything_over_stdio() {
    ensure_installed();
    let js = server_everything_js();
    let target = format!("stdio:node {} stdio", sh_quote(js.to_str().expect("UTF-8 path")));
    let mut cmd = Command::new(BIN);
    cmd.args(["load", "--target", &target]).args([
        "--requests",
        "2000",
        "--concurrency",
        "32",
        "--warmup",
        "0",
        "--json",
    ]);
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = run.describe(&format!("mcpwire load --target {target:?}"));
    println!("{report}");
    assert!(run.success(), "{report}");

    let json: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("load --json printed no single JSON object ({e})\n{report}"));
    assert_eq!(json["errors"], 0, "{report}");
    assert_eq!(json["requests"], 2000, "{report}");
    assert!(json["bytes_sent"].as_u64().is_some_and(|n| n > 0), "{report}");
    assert!(json["bytes_received"].as_u64().is_some_and(|n| n > 0), "{report}");
}

#[test]
fn python_sdk_client_against_mcpwire_serve_over_stdio() {
    ensure_installed();
    let mut cmd = Command::new(venv_python());
    cmd.args(["tests/interop/python_client.py", "--expect-server-name", "mcpwire", "--", BIN])
        .arg("serve");
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = run.describe("python_client.py -- mcpwire serve");
    println!("{report}");
    assert!(run.success(), "{report}");
}
