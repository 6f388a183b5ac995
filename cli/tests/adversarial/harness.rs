//! The server under test and the helpers every test shares: spawning `mcpwire serve`, the
//! session around the hostile input, RSS measurement, and reading and checking replies.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

/// The longest any one expected reply may take.
const REPLY_WAIT: Duration = Duration::from_secs(60);
/// The longest a server may live; the watchdog kills it then.
const LIFETIME: Duration = Duration::from_secs(110);

pub(crate) const MIB: u64 = 1024 * 1024;
/// The library's defaults, as `mcpwire serve` uses them without flags.
pub(crate) const DEFAULT_MAX_FRAME_BYTES: u64 = 16 * MIB;
pub(crate) const DEFAULT_MAX_DEPTH: usize = 128;
pub(crate) const DEFAULT_MAX_BATCH_LEN: usize = 1024;

/// Lifts the rate limit on replies with `"id": null`, for sessions that expect many of them
/// (the limit itself is tested with its default in `an_error_storm_*`).
pub(crate) const NO_RATE_LIMIT: &[&str] = &["--unaddressed-replies-per-second", "1000000"];

pub(crate) const BEFORE: &str = r#"{"jsonrpc":"2.0","id":"before","method":"tools/call","params":{"name":"echo","arguments":{"message":"sent before"}}}"#;
pub(crate) const AFTER: &str = r#"{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"echo","arguments":{"message":"sent after"}}}"#;
pub(crate) const PING: &str = r#"{"jsonrpc":"2.0","id":"ping","method":"ping"}"#;

/// One line of the server's output: the bytes before its newline, or an error when it ended
/// without one.
type Line = Result<Vec<u8>, String>;

/// `mcpwire serve` over stdio.
pub(crate) struct Server {
    child: Arc<Mutex<Child>>,
    pid: u32,
    pub(crate) stdin: Option<ChildStdin>,
    /// Until [`Server::start_reading`] hands it to the reader thread.
    stdout: Option<ChildStdout>,
    lines: Option<Receiver<Line>>,
    /// Replies read while looking for another one, not yet taken.
    stash: Vec<Value>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Dropping it stands the watchdog down.
    _watchdog: Sender<()>,
}

impl Server {
    /// Starts `mcpwire serve ARGS`, completes the MCP handshake, and reads its output on a
    /// thread from then on.
    pub(crate) fn start(args: &[&str]) -> Self {
        let mut s = Self::spawn(args);
        s.handshake();
        s.start_reading();
        s
    }

    /// Starts `mcpwire serve ARGS` without reading its output.
    pub(crate) fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .arg("serve")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mcpwire serve starts");
        let pid = child.id();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let mut err_pipe = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = stderr.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = err_pipe.read(&mut buf) {
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let child = Arc::new(Mutex::new(child));
        let (watchdog, stand_down) = mpsc::channel::<()>();
        let victim = child.clone();
        thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = stand_down.recv_timeout(LIFETIME) {
                eprintln!("watchdog: mcpwire serve (pid {pid}) outlived {LIFETIME:?}; killing it");
                let _ = victim.lock().unwrap().kill();
            }
        });
        Self {
            child,
            pid,
            stdin,
            stdout,
            lines: None,
            stash: Vec::new(),
            stderr,
            _watchdog: watchdog,
        }
    }

    /// `initialize` and `notifications/initialized`, reading the reply a byte at a time so
    /// nothing after it is taken from the pipe (the reader thread may start later).
    pub(crate) fn handshake(&mut self) {
        self.line(r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"adversarial","version":"1"}}}"#);
        let stdout = self.stdout.as_mut().expect("not reading yet");
        let mut reply = Vec::new();
        let mut byte = [0u8];
        loop {
            // The watchdog bounds this read: it closes the pipe if the server never answers.
            assert_eq!(stdout.read(&mut byte).unwrap(), 1, "EOF before the initialize reply");
            if byte[0] == b'\n' {
                break;
            }
            reply.push(byte[0]);
        }
        let reply: Value = serde_json::from_slice(&reply).unwrap();
        assert_eq!(reply["id"], "init", "{reply}");
        assert_eq!(reply["result"]["protocolVersion"], "2025-06-18", "{reply}");
        self.line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }

    /// Reads the server's output on a thread from now on, line by line.
    pub(crate) fn start_reading(&mut self) {
        let stdout = self.stdout.take().expect("reading already");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut r = BufReader::with_capacity(1 << 16, stdout);
            loop {
                let mut line = Vec::new();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) => return,
                    Ok(_) if line.last() == Some(&b'\n') => {
                        line.pop();
                        if tx.send(Ok(line)).is_err() {
                            return;
                        }
                    }
                    Ok(n) => {
                        let _ = tx.send(Err(format!("a {n}-byte line without a newline at EOF")));
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(format!("reading stdout failed: {e}")));
                        return;
                    }
                }
            }
        });
        self.lines = Some(rx);
    }

    fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Writes raw bytes to the server's standard input.
    pub(crate) fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        if let Err(e) = stdin.write_all(bytes).and_then(|()| stdin.flush()) {
            panic!("writing to serve failed: {e}; its stderr: {}", self.stderr_text());
        }
    }

    /// Writes one line.
    pub(crate) fn line(&mut self, line: &str) {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.send(&bytes);
    }

    /// The next reply within `wait`; `None` at EOF.
    fn recv_within(&self, wait: Duration) -> Option<Value> {
        let lines = self.lines.as_ref().expect("reading");
        match lines.recv_timeout(wait) {
            Ok(Ok(line)) => Some(serde_json::from_slice(&line).unwrap_or_else(|e| {
                panic!("a reply that is not JSON ({e}): {:?}", String::from_utf8_lossy(&line))
            })),
            Ok(Err(e)) => panic!("{e}; stderr: {}", self.stderr_text()),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                panic!("no reply within {wait:?}; stderr: {}", self.stderr_text())
            }
        }
    }

    /// The next reply; fails the test at EOF or after [`REPLY_WAIT`].
    pub(crate) fn recv(&self) -> Value {
        self.recv_within(REPLY_WAIT)
            .unwrap_or_else(|| panic!("EOF from serve; stderr: {}", self.stderr_text()))
    }

    /// The first reply, stashed or to come, for which `wanted` holds; the others read on the
    /// way are stashed.
    pub(crate) fn take(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.stash.iter().position(&wanted) {
            return self.stash.remove(i);
        }
        loop {
            let reply = self.recv();
            if wanted(&reply) {
                return reply;
            }
            self.stash.push(reply);
        }
    }

    /// The reply with `id`.
    pub(crate) fn take_id(&mut self, id: impl Into<Value>) -> Value {
        let id = id.into();
        self.take(|r| r["id"] == id)
    }

    /// Every reply up to the one with `id`, that one last, the stashed ones included.
    pub(crate) fn until(&mut self, id: &str) -> Vec<Value> {
        let last = self.take_id(id);
        let mut got = std::mem::take(&mut self.stash);
        got.push(last);
        got
    }

    pub(crate) fn alive(&self) -> bool {
        self.child.lock().unwrap().try_wait().unwrap().is_none()
    }

    /// The server's peak resident set so far (VmHWM), in bytes.
    pub(crate) fn peak_rss(&self) -> u64 {
        rss_field(self.pid, "VmHWM:")
    }

    /// The server's resident set now (VmRSS), in bytes.
    pub(crate) fn rss(&self) -> u64 {
        rss_field(self.pid, "VmRSS:")
    }

    /// Closes standard input, reads what is left up to EOF, and checks the server exits with
    /// status 0; returns the replies read.
    pub(crate) fn finish(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        let started = Instant::now();
        let mut rest = Vec::new();
        while let Some(reply) = self.recv_within(REPLY_WAIT.saturating_sub(started.elapsed())) {
            rest.push(reply);
        }
        loop {
            if let Some(status) = self.child.lock().unwrap().try_wait().unwrap() {
                assert!(status.success(), "serve exited with {status}: {}", self.stderr_text());
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "serve still running at EOF");
            thread::sleep(Duration::from_millis(10));
        }
        rest
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn rss_field(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    kib * 1024
}

pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

/// The text of a tool result, and whether it is an error.
pub(crate) fn tool_text(reply: &Value) -> (&str, bool) {
    let r = &reply["result"];
    assert_eq!(r["content"][0]["type"], "text", "{reply}");
    (r["content"][0]["text"].as_str().unwrap(), r["isError"] == true)
}

/// Runs a session on a server started with `args`: `before`, then what `hostile` sends, then
/// `after` and `ping`. Checks those three replies, that the server is alive after the ping and
/// exits cleanly at end of input; returns every other reply, in the order received.
pub(crate) fn session(args: &[&str], hostile: impl FnOnce(&mut Server)) -> Vec<Value> {
    let mut s = Server::start(args);
    s.line(BEFORE);
    hostile(&mut s);
    s.line(AFTER);
    s.line(PING);
    let mut replies = s.until("ping");
    assert!(s.alive(), "serve died after answering the ping: {}", s.stderr_text());
    replies.extend(s.finish());
    take_session_replies(replies)
}

/// Checks the replies to `before`, `after` and `ping` (each exactly once) and returns the rest.
pub(crate) fn take_session_replies(replies: Vec<Value>) -> Vec<Value> {
    let mut seen = HashMap::new();
    let mut rest = Vec::new();
    for r in replies {
        match r["id"].as_str() {
            Some(id @ ("before" | "after" | "ping")) => {
                assert!(seen.insert(id.to_owned(), r.clone()).is_none(), "{id} answered twice")
            }
            _ => rest.push(r),
        }
    }
    assert_eq!(tool_text(&seen["before"]), ("sent before", false), "the earlier message");
    assert_eq!(tool_text(&seen["after"]), ("sent after", false), "the later message");
    assert_eq!(seen["ping"]["result"], json!({}), "{}", seen["ping"]);
    rest
}

/// `(id, code)` of an error reply, after checking it is a well-formed JSON-RPC error with the
/// specification's message for its code.
pub(crate) fn error_of(reply: &Value) -> (Value, i64) {
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert!(reply.get("result").is_none(), "not an error: {reply}");
    let code = reply["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {reply}"));
    let message = match code {
        -32700 => "Parse error",
        -32600 => "Invalid Request",
        -32601 => "Method not found",
        -32602 => "Invalid params",
        -32021 => "Missing required client capability: elicitation",
        -32022 => "Unsupported protocol version",
        _ => panic!("unexpected code: {reply}"),
    };
    if !matches!(code, -32601 | -32602) {
        assert_eq!(reply["error"]["message"], message, "{reply}");
    }
    (reply["id"].clone(), code)
}

pub(crate) fn errors_of(replies: &[Value]) -> Vec<(Value, i64)> {
    replies.iter().map(error_of).collect()
}

pub(crate) const PARSE: i64 = -32700;
pub(crate) const INVALID: i64 = -32600;
pub(crate) const NOT_FOUND: i64 = -32601;

pub(crate) fn null() -> Value {
    Value::Null
}

/// A `ping` request with `id`, padded with a `params` member to exactly `len` bytes.
pub(crate) fn ping_of_len(id: &str, len: usize) -> String {
    let bare = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping","params":{{"p":""}}}}"#);
    assert!(len >= bare.len());
    let pad = "x".repeat(len - bare.len());
    let line =
        format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping","params":{{"p":"{pad}"}}}}"#);
    assert_eq!(line.len(), len);
    line
}
