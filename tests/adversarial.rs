//! `mcpwire serve` as a real process over stdio, fed hostile streams through real pipes.
//!
//! Each session sends a valid request (`before`), the hostile input, then another valid request
//! (`after`) and a `ping`. It checks that `before`, `after` and the `ping` are each answered
//! exactly once and correctly, that the server is still running after the `ping`, and that it
//! exits cleanly at end of input; then each test asserts the exact replies (code and id) the
//! hostile input earned, and that nothing else was sent.
//!
//! No wait is unbounded: replies are read on a thread and awaited with a timeout, and a watchdog
//! kills a server that outlives [`LIFETIME`], which closes its pipes so that a blocked write or
//! read fails the test instead of hanging it.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

const MIB: u64 = 1024 * 1024;
/// The library's defaults, as `mcpwire serve` uses them without flags.
const DEFAULT_MAX_FRAME_BYTES: u64 = 16 * MIB;
const DEFAULT_MAX_DEPTH: usize = 128;
const DEFAULT_MAX_BATCH_LEN: usize = 1024;

/// Lifts the rate limit on replies with `"id": null`, for sessions that expect many of them
/// (the limit itself is tested with its default in `an_error_storm_*`).
const NO_RATE_LIMIT: &[&str] = &["--unaddressed-replies-per-second", "1000000"];

const BEFORE: &str = r#"{"jsonrpc":"2.0","id":"before","method":"tools/call","params":{"name":"echo","arguments":{"message":"sent before"}}}"#;
const AFTER: &str = r#"{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"echo","arguments":{"message":"sent after"}}}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":"ping","method":"ping"}"#;

/// One line of the server's output: the bytes before its newline, or an error when it ended
/// without one.
type Line = Result<Vec<u8>, String>;

/// `mcpwire serve` over stdio.
struct Server {
    child: Arc<Mutex<Child>>,
    pid: u32,
    stdin: Option<ChildStdin>,
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
    fn start(args: &[&str]) -> Self {
        let mut s = Self::spawn(args);
        s.handshake();
        s.start_reading();
        s
    }

    /// Starts `mcpwire serve ARGS` without reading its output.
    fn spawn(args: &[&str]) -> Self {
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
    fn handshake(&mut self) {
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
    fn start_reading(&mut self) {
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
    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        if let Err(e) = stdin.write_all(bytes).and_then(|()| stdin.flush()) {
            panic!("writing to serve failed: {e}; its stderr: {}", self.stderr_text());
        }
    }

    /// Writes one line.
    fn line(&mut self, line: &str) {
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
    fn recv(&self) -> Value {
        self.recv_within(REPLY_WAIT)
            .unwrap_or_else(|| panic!("EOF from serve; stderr: {}", self.stderr_text()))
    }

    /// The first reply, stashed or to come, for which `wanted` holds; the others read on the
    /// way are stashed.
    fn take(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
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
    fn take_id(&mut self, id: impl Into<Value>) -> Value {
        let id = id.into();
        self.take(|r| r["id"] == id)
    }

    /// Every reply up to the one with `id`, that one last, the stashed ones included.
    fn until(&mut self, id: &str) -> Vec<Value> {
        let last = self.take_id(id);
        let mut got = std::mem::take(&mut self.stash);
        got.push(last);
        got
    }

    fn alive(&self) -> bool {
        self.child.lock().unwrap().try_wait().unwrap().is_none()
    }

    /// The server's peak resident set so far (VmHWM), in bytes.
    fn peak_rss(&self) -> u64 {
        rss_field(self.pid, "VmHWM:")
    }

    /// The server's resident set now (VmRSS), in bytes.
    fn rss(&self) -> u64 {
        rss_field(self.pid, "VmRSS:")
    }

    /// Closes standard input, reads what is left up to EOF, and checks the server exits with
    /// status 0; returns the replies read.
    fn finish(mut self) -> Vec<Value> {
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

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

/// The text of a tool result, and whether it is an error.
fn tool_text(reply: &Value) -> (&str, bool) {
    let r = &reply["result"];
    assert_eq!(r["content"][0]["type"], "text", "{reply}");
    (r["content"][0]["text"].as_str().unwrap(), r["isError"] == true)
}

/// Runs a session on a server started with `args`: `before`, then what `hostile` sends, then
/// `after` and `ping`. Checks those three replies, that the server is alive after the ping and
/// exits cleanly at end of input; returns every other reply, in the order received.
fn session(args: &[&str], hostile: impl FnOnce(&mut Server)) -> Vec<Value> {
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
fn take_session_replies(replies: Vec<Value>) -> Vec<Value> {
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
fn error_of(reply: &Value) -> (Value, i64) {
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert!(reply.get("result").is_none(), "not an error: {reply}");
    let code = reply["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {reply}"));
    let message = match code {
        -32700 => "Parse error",
        -32600 => "Invalid Request",
        -32601 => "Method not found",
        -32602 => "Invalid params",
        _ => panic!("unexpected code: {reply}"),
    };
    if code != -32601 && code != -32602 {
        assert_eq!(reply["error"]["message"], message, "{reply}");
    }
    (reply["id"].clone(), code)
}

fn errors_of(replies: &[Value]) -> Vec<(Value, i64)> {
    replies.iter().map(error_of).collect()
}

const PARSE: i64 = -32700;
const INVALID: i64 = -32600;
const NOT_FOUND: i64 = -32601;

fn null() -> Value {
    Value::Null
}

/// A `ping` request with `id`, padded with a `params` member to exactly `len` bytes.
fn ping_of_len(id: &str, len: usize) -> String {
    let bare = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping","params":{{"p":""}}}}"#);
    assert!(len >= bare.len());
    let pad = "x".repeat(len - bare.len());
    let line =
        format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping","params":{{"p":"{pad}"}}}}"#);
    assert_eq!(line.len(), len);
    line
}

// ---------------------------------------------------------------------------------------------
// Framing
// ---------------------------------------------------------------------------------------------

/// A 1 GiB line with no newline in it, streamed in 1 MiB writes, then its newline. The server
/// answers -32600 (`"id": null`) as soon as the line passes the frame limit, while the line is
/// still arriving, and never holds it: its peak RSS must stay under `max_frame_bytes` + 64 MiB.
/// Run with the default limit (16 MiB) and with a 64 MiB one.
#[test]
fn a_one_gib_line_is_refused_while_it_streams_and_never_held() {
    let started = Instant::now();
    let runs = [DEFAULT_MAX_FRAME_BYTES, 64 * MIB].map(stream_one_gib_line);
    eprintln!("1 GiB lines: {:.2?} in all", started.elapsed());
    let over: Vec<String> = runs
        .iter()
        .filter(|(limit, peak)| *peak >= limit + 64 * MIB)
        .map(|(limit, peak)| {
            format!(
                "frame limit {} MiB: peak RSS {:.1} MiB, bound {:.1} MiB",
                limit / MIB,
                mib(*peak),
                mib(limit + 64 * MIB)
            )
        })
        .collect();
    assert!(over.is_empty(), "{over:#?}");
}

/// Streams the 1 GiB line at a server whose frame limit is `limit`; returns the limit and the
/// server's peak RSS.
fn stream_one_gib_line(limit: u64) -> (u64, u64) {
    const LINE: u64 = 1 << 30;
    const CHUNK: usize = 1 << 20;
    let limit_arg = limit.to_string();
    let args: &[&str] =
        if limit == DEFAULT_MAX_FRAME_BYTES { &[] } else { &["--max-frame-bytes", &limit_arg] };
    let mut s = Server::start(args);
    let baseline = s.rss();
    s.line(BEFORE);

    let head = br#"{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"echo","arguments":{"message":""#;
    let mut chunk = vec![b'a'; CHUNK];
    chunk[..head.len()].copy_from_slice(head);
    let stream_started = Instant::now();
    s.send(&chunk);
    chunk[..head.len()].fill(b'a');
    let mut sent = CHUNK as u64;
    let mut refused_after = None;
    while sent < LINE {
        s.send(&chunk);
        sent += CHUNK as u64;
        // Once the line is past the limit (plus the pipe and the read chunk), the refusal must
        // already be on its way: wait for it before streaming the rest.
        if refused_after.is_none() && sent >= limit + 4 * MIB {
            let reply = s.take(|r| r.get("error").is_some());
            assert_eq!(error_of(&reply), (null(), INVALID), "{reply}");
            assert_eq!(
                reply["error"]["data"],
                format!("frame too large: longer than the {limit}-byte limit")
            );
            refused_after = Some(sent);
        }
    }
    s.send(b"\"}}}\n");
    let streamed = stream_started.elapsed();
    s.line(AFTER);
    s.line(PING);
    let mut replies = s.until("ping");
    let peak = s.peak_rss();
    let after = s.rss();
    assert!(s.alive());
    replies.extend(s.finish());
    // The refusal came while the line streamed; nothing else did.
    assert!(take_session_replies(replies).is_empty());
    eprintln!(
        "1 GiB line, {} MiB limit: refused after {} MiB sent; streamed in {streamed:.2?} \
         ({:.0} MiB/s); serve RSS {:.1} MiB before, peak {:.1} MiB, {:.1} MiB after",
        limit / MIB,
        refused_after.unwrap() / MIB,
        mib(LINE) / streamed.as_secs_f64(),
        mib(baseline),
        mib(peak),
        mib(after),
    );
    (limit, peak)
}

/// Lines at and around the frame limit, CRLF, a lone CR, blank lines, byte order marks,
/// UTF-16, trailing bytes, pretty-printed JSON, U+2028/U+2029, NUL and raw control characters,
/// and 10,000 frames in one write.
#[test]
fn framing_edge_cases_get_their_exact_replies_and_the_stream_goes_on() {
    const MAX: usize = 256;
    let max = MAX.to_string();
    let mut args = vec!["--max-frame-bytes", max.as_str()];
    args.extend_from_slice(NO_RATE_LIMIT);
    let rest = session(&args, |s| {
        // Exactly the limit, then the limit plus a CR before the newline: both accepted.
        s.send(format!("{}\n", ping_of_len("exact", MAX)).as_bytes());
        s.send(format!("{}\r\n", ping_of_len("exact-crlf", MAX)).as_bytes());
        // One byte over: -32600, null id (the line is never parsed, so its id is unknown).
        s.send(format!("{}\n", ping_of_len("over", MAX + 1)).as_bytes());
        // An over-long line and a valid frame in the same write.
        let mut both = vec![b'x'; 3 * MAX];
        both.extend_from_slice(
            b"\n{\"jsonrpc\":\"2.0\",\"id\":\"same-write\",\"method\":\"ping\"}\n",
        );
        s.send(&both);
        // A lone CR is JSON whitespace inside a line, not a line ending.
        s.send(b"{\"jsonrpc\":\"2.0\",\r\"id\":\"lone-cr\",\"method\":\"ping\"}\n");
        // Blank and whitespace-only lines are skipped without a reply.
        s.send(b"\n\r\n  \t \r\n\n");
        // A byte order mark on a later frame is dropped; a truncated one is not JSON.
        s.send(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":\"bom\",\"method\":\"ping\"}\n");
        s.send(b"\xEF\xBB{\"jsonrpc\":\"2.0\",\"id\":\"half-bom\",\"method\":\"ping\"}\n");
        // UTF-16LE: not UTF-8 JSON.
        let utf16: Vec<u8> = r#"{"jsonrpc":"2.0","id":"utf16","method":"ping"}"#
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        s.send(&[&utf16[..], b"\n"].concat());
        // Trailing bytes after a complete value.
        s.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"trailing\",\"method\":\"ping\"} x\n");
        s.send(b"{}{}\n");
        // Pretty-printed JSON: each of its five lines is a frame, none of them JSON.
        s.send(b"{\n  \"jsonrpc\": \"2.0\",\n  \"id\": \"pretty\",\n  \"method\": \"ping\"\n}\n");
        // U+2028 and U+2029 raw inside a string do not end a frame.
        s.send(
            "{\"jsonrpc\":\"2.0\",\"id\":\"ls\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"a\u{2028}b\u{2029}c\"}}}\n"
                .as_bytes(),
        );
        // NUL outside a string, before and after the value; a raw control character and a raw
        // tab inside a string (JSON requires them escaped).
        s.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"nul-after\",\"method\":\"ping\"}\0\n");
        s.send(b"\0{\"jsonrpc\":\"2.0\",\"id\":\"nul-before\",\"method\":\"ping\"}\n");
        s.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"ctrl\",\"method\":\"pi\x01ng\"}\n");
        s.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"tab\",\"method\":\"ping\",\"params\":{\"a\":\"x\ty\"}}\n");
        s.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"nul-in\",\"method\":\"ping\",\"params\":{\"a\":\"x\0y\"}}\n");
        // 10,000 frames in one write.
        let many: String = (0..10_000)
            .map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":\"k{i}\",\"method\":\"ping\"}}\n"))
            .collect();
        s.send(many.as_bytes());
    });

    let (errors, results): (Vec<_>, Vec<_>) = rest.iter().partition(|r| r.get("error").is_some());
    let mut answered: Vec<&str> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    for r in &results {
        if r["id"] == "ls" {
            assert_eq!(tool_text(r), ("a\u{2028}b\u{2029}c", false));
        } else {
            assert_eq!(r["result"], json!({}), "{r}");
        }
    }
    answered.sort_unstable();
    let mut expected: Vec<String> = ["exact", "exact-crlf", "same-write", "lone-cr", "bom", "ls"]
        .into_iter()
        .map(String::from)
        .chain((0..10_000).map(|i| format!("k{i}")))
        .collect();
    expected.sort_unstable();
    assert_eq!(answered, expected);

    // Errors come from the read loop, in the order the lines were read.
    let errors: Vec<Value> = errors.into_iter().cloned().collect();
    let reasons: Vec<&str> = errors.iter().map(|e| e["error"]["data"].as_str().unwrap()).collect();
    assert_eq!(
        errors_of(&errors),
        [
            (null(), INVALID), // over
            (null(), INVALID), // the over-long line of the same write
            (null(), PARSE),   // truncated BOM
            (null(), PARSE),   // UTF-16
            (null(), PARSE),   // `… x`
            (null(), PARSE),   // `{}{}`
            (null(), PARSE),   // `{`
            (null(), PARSE),   // `"jsonrpc": "2.0",`
            (null(), PARSE),   // `"id": "pretty",`
            (null(), PARSE),   // `"method": "ping"`
            (null(), PARSE),   // `}`
            (null(), PARSE),   // NUL after
            (null(), PARSE),   // NUL before
            (null(), PARSE),   // raw U+0001 in a string
            (null(), PARSE),   // raw tab in a string
            (null(), PARSE),   // raw NUL in a string
        ],
        "{reasons:#?}"
    );
    assert!(reasons[0].starts_with("frame too large"), "{reasons:?}");
    assert!(reasons[1].starts_with("frame too large"), "{reasons:?}");
    assert_eq!(reasons[4], "trailing bytes after the JSON value");
    assert_eq!(reasons[5], "trailing bytes after the JSON value");
}

/// A ~120-byte request written one byte per millisecond (so it is split at every byte: inside
/// multi-byte UTF-8, inside an escape, between CR and LF) is answered exactly.
#[test]
fn a_frame_sent_one_byte_per_millisecond_is_answered() {
    let message = "h\u{e9}llo \\\"\u{65e5}\u{672c}\\\" \u{1f600}";
    let request = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":\"slow\",\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"{message}\"}}}}}}\r\n"
    );
    assert!((100..140).contains(&request.len()), "{}", request.len());
    let mut took = Duration::ZERO;
    let rest = session(&[], |s| {
        let started = Instant::now();
        for b in request.as_bytes() {
            s.send(std::slice::from_ref(b));
            thread::sleep(Duration::from_millis(1));
        }
        took = started.elapsed();
        let reply = s.take_id("slow");
        assert_eq!(tool_text(&reply), ("h\u{e9}llo \"\u{65e5}\u{672c}\" \u{1f600}", false));
    });
    assert!(took >= Duration::from_millis(request.len() as u64), "{took:?}");
    // `before` may come after `slow`; both are checked. Nothing else was sent.
    assert!(rest.is_empty(), "{rest:?}");
}

// ---------------------------------------------------------------------------------------------
// UTF-8 and escapes
// ---------------------------------------------------------------------------------------------

/// Invalid UTF-8 anywhere in a frame is -32700 with `"id": null` (never replaced with U+FFFD and
/// accepted); bad escapes likewise; valid non-ASCII and escaped surrogate pairs round-trip.
#[test]
fn invalid_utf8_and_bad_escapes_are_parse_errors() {
    let wrap = |inner: &[u8]| -> Vec<u8> {
        [
            &br#"{"jsonrpc":"2.0","id":"u","method":"tools/call","params":{"name":"echo","arguments":{"message":""#[..],
            inner,
            b"\"}}}\n",
        ]
        .concat()
    };
    const NOT_UTF8: &str = "frame is not valid UTF-8";
    const BAD_ESCAPE: &str = "invalid JSON near byte";
    let bad: Vec<(&str, Vec<u8>, &str)> = vec![
        ("overlong C0 AF", wrap(b"a\xC0\xAFb"), NOT_UTF8),
        ("surrogate ED A0 80", wrap(b"a\xED\xA0\x80b"), NOT_UTF8),
        ("lone continuation byte", wrap(b"a\x80b"), NOT_UTF8),
        ("above U+10FFFF", wrap(b"a\xF4\x90\x80\x80b"), NOT_UTF8),
        ("Latin-1", wrap(b"caf\xE9"), NOT_UTF8),
        // A sequence cut short by the end of the frame.
        (
            "truncated at the end",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"ping\"}\xE6\x97\n".to_vec(),
            NOT_UTF8,
        ),
        ("truncated in a string", wrap(b"\xE6\x97"), NOT_UTF8),
        (
            "invalid in a key",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"ping\",\"params\":{\"k\xFF\":1}}\n"
                .to_vec(),
            NOT_UTF8,
        ),
        ("lone \\uD800", wrap(br"\uD800"), BAD_ESCAPE),
        ("lone \\uDC00", wrap(br"\uDC00"), BAD_ESCAPE),
        ("inverted pair", wrap(br"\uDC00\uD800"), BAD_ESCAPE),
        ("\\uD800\\u0041", wrap(br"\uD800\u0041"), BAD_ESCAPE),
        ("\\u12G4", wrap(br"\u12G4"), BAD_ESCAPE),
        ("\\u12", wrap(br"\u12"), BAD_ESCAPE),
        ("\\x escape", wrap(br"\x41"), BAD_ESCAPE),
    ];
    let rest = session(NO_RATE_LIMIT, |s| {
        for (_, line, _) in &bad {
            s.send(line);
        }
        // A NUL escaped in a method name is a valid (unknown) method.
        s.line(r#"{"jsonrpc":"2.0","id":"nul-method","method":"pi\u0000ng"}"#);
        // Valid non-ASCII, raw and as an escaped surrogate pair, comes back exactly.
        s.line(r#"{"jsonrpc":"2.0","id":"ok","method":"tools/call","params":{"name":"echo","arguments":{"message":"é日本😀 \ud83d\ude00"}}}"#);
    });
    let (errors, results): (Vec<Value>, Vec<Value>) =
        rest.into_iter().partition(|r| r.get("error").is_some());
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["id"], "ok");
    assert_eq!(tool_text(&results[0]), ("é日本😀 😀", false));
    let got = errors_of(&errors);
    let mut want: Vec<(Value, i64)> = bad.iter().map(|_| (null(), PARSE)).collect();
    want.push((json!("nul-method"), NOT_FOUND));
    let names: Vec<_> = bad.iter().map(|(n, _, _)| *n).collect();
    assert_eq!(got, want, "cases: {names:?}; replies: {errors:#?}");
    for (e, (name, _, reason)) in errors.iter().zip(&bad) {
        let data = e["error"]["data"].as_str().unwrap();
        assert!(data.starts_with(reason), "{name}: {data}");
    }
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

/// Nesting: 100,000 unclosed `[`, 100,000 balanced levels inside `params`, 50,000 unclosed
/// `[{"":`, and depth exactly at the default limit (accepted) and one past it (refused).
#[test]
fn deep_nesting_is_refused_without_a_stack_overflow() {
    let deep_params = |levels: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":"deep{levels}","method":"ping","params":{}{}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
    };
    let rest = session(NO_RATE_LIMIT, |s| {
        s.line(&"[".repeat(100_000));
        s.line(&deep_params(100_000));
        s.line(&r#"[{"":"#.repeat(50_000));
        // The message object is level 1: `params` arrays up to level 128 are accepted.
        s.line(&deep_params(DEFAULT_MAX_DEPTH - 1));
        s.line(&deep_params(DEFAULT_MAX_DEPTH));
        // A deep value inside a tool's arguments, which the tool deserialises (and drops).
        s.line(&format!(
            r#"{{"jsonrpc":"2.0","id":"deep-args","method":"tools/call","params":{{"name":"echo","arguments":{{"message":"deep","x":{}{}}}}}}}"#,
            "[".repeat(DEFAULT_MAX_DEPTH - 3),
            "]".repeat(DEFAULT_MAX_DEPTH - 3)
        ));
    });
    let (errors, results): (Vec<Value>, Vec<Value>) =
        rest.into_iter().partition(|r| r.get("error").is_some());
    let mut ids: Vec<_> = results.iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    ids.sort();
    assert_eq!(ids, ["deep-args", "deep127"], "{results:?}");
    for r in &results {
        if r["id"] == "deep-args" {
            assert_eq!(tool_text(r), ("deep", false));
        }
    }
    assert_eq!(errors_of(&errors), vec![(null(), PARSE); 4], "{errors:#?}");
    let too_deep = format!("nesting deeper than the limit of {DEFAULT_MAX_DEPTH}");
    assert_eq!(errors[1]["error"]["data"], too_deep.as_str());
    assert_eq!(errors[3]["error"]["data"], too_deep.as_str());
}

/// Duplicate envelope keys are refused (-32600, with the id when it is unambiguous); a
/// response with a duplicate key is never answered. Non-JSON literals, trailing commas,
/// comments, single quotes and integers beyond 64 bits are -32700; an id beyond i64 is -32600.
#[test]
fn duplicate_keys_and_json_oddities_get_their_exact_replies() {
    let cases: Vec<(&str, Option<(Value, i64)>)> = vec![
        // Which `id` wins is ambiguous, so the reply cannot carry one.
        (r#"{"jsonrpc":"2.0","id":"a","id":"b","method":"ping"}"#, Some((null(), INVALID))),
        (
            r#"{"jsonrpc":"2.0","id":"dm","method":"ping","method":"tools/list"}"#,
            Some((json!("dm"), INVALID)),
        ),
        (
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":"dj","method":"ping"}"#,
            Some((json!("dj"), INVALID)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"dp","method":"ping","params":{},"params":[]}"#,
            Some((json!("dp"), INVALID)),
        ),
        // Response-shaped: never answered, even when broken.
        (r#"{"jsonrpc":"2.0","id":"dr","result":1,"result":2}"#, None),
        (
            r#"{"jsonrpc":"2.0","id":"de","error":{"code":1,"message":"m"},"error":{"code":2,"message":"n"}}"#,
            None,
        ),
        (r#"{"jsonrpc":"2.0","id":"dc","error":{"code":1,"code":2,"message":"m"}}"#, None),
        // Not JSON.
        (r#"{"jsonrpc":"2.0","id":"tc","method":"ping",}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":"cm","method":"ping"/* c */}"#, Some((null(), PARSE))),
        (r#"{'jsonrpc':'2.0','id':'sq','method':'ping'}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":"nan","method":"ping","params":[NaN]}"#, Some((null(), PARSE))),
        (
            r#"{"jsonrpc":"2.0","id":"inf","method":"ping","params":[Infinity]}"#,
            Some((null(), PARSE)),
        ),
        (r#"{"jsonrpc":"2.0","id":"lead0","method":"ping","params":[01]}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":"dot5","method":"ping","params":[.5]}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":"dot","method":"ping","params":[1.]}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":"plus","method":"ping","params":[+1]}"#, Some((null(), PARSE))),
        // Integers beyond u64 and i64 are not parsed at all (README, "Choices": -32700).
        (r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}"#, Some((null(), PARSE))),
        // An integer id that fits u64 but not i64: -32600, the id unreadable.
        (r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#, Some((null(), INVALID))),
        // Valid JSON numbers in params, however odd: answered.
        (
            r#"{"jsonrpc":"2.0","id":"zeros","method":"ping","params":[-0,-0.0,-0e5]}"#,
            Some((json!("zeros"), 0)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"i64","method":"ping","params":[-9223372036854775808,18446744073709551615]}"#,
            Some((json!("i64"), 0)),
        ),
    ];
    let rest = session(NO_RATE_LIMIT, |s| {
        for (line, _) in &cases {
            s.line(line);
        }
    });
    let (errors, results): (Vec<Value>, Vec<Value>) =
        rest.into_iter().partition(|r| r.get("error").is_some());
    let want_errors: Vec<_> =
        cases.iter().filter_map(|(_, w)| w.clone()).filter(|(_, code)| *code != 0).collect();
    assert_eq!(errors_of(&errors), want_errors, "{errors:#?}");
    let mut answered: Vec<_> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    answered.sort_unstable();
    assert_eq!(answered, ["i64", "zeros"], "{results:?}");
    assert!(errors[0]["error"]["data"].as_str().unwrap().contains("`id` given twice"));
}

/// Numbers JSON allows but a double cannot hold (`1e400`, 10,000 digits): whatever the server
/// decides, it decides it for that frame alone, with -32700 and `"id": null` or an answer.
#[test]
fn huge_numbers_are_one_frame_s_business() {
    let cases = [
        r#"{"jsonrpc":"2.0","id":"e400","method":"ping","params":[1e400]}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":"e-400","method":"ping","params":[1e-400]}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":"digits","method":"ping","params":[{}]}}"#,
            "9".repeat(10_000)
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":"frac","method":"ping","params":[0.{}]}}"#,
            "1".repeat(10_000)
        ),
    ];
    let rest = session(NO_RATE_LIMIT, |s| {
        for line in &cases {
            s.line(line);
        }
    });
    assert_eq!(rest.len(), cases.len(), "{rest:?}");
    for r in &rest {
        if r.get("error").is_some() {
            assert_eq!(error_of(r), (null(), PARSE), "{r}");
        } else {
            assert_eq!(r["result"], json!({}), "{r}");
        }
    }
    eprintln!("huge numbers: {rest:?}");
}

/// A 100 MB string: with the frame limit raised to 128 MiB the request is parsed whole and the
/// tool answers (refusing the size with `isError`, as `echo` takes at most 1 MiB); with the
/// default limit the frame is refused with -32600 and discarded.
#[test]
fn a_100_mb_string_is_parsed_under_a_raised_limit_and_refused_under_the_default() {
    const LEN: usize = 100_000_000;
    let mut line = Vec::with_capacity(LEN + 200);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"message":""#);
    line.resize(line.len() + LEN, b'z');
    line.extend_from_slice(b"\"}}}\n");

    let started = Instant::now();
    let limit = (128 * MIB).to_string();
    let mut peak = 0;
    let rest = session(&["--max-frame-bytes", &limit], |s| {
        s.send(&line);
        let reply = s.take_id("big");
        peak = s.peak_rss();
        assert_eq!(
            tool_text(&reply),
            (format!("echo: message is {LEN} bytes; at most 1048576 are accepted").as_str(), true)
        );
    });
    assert!(rest.is_empty(), "{rest:?}");
    eprintln!(
        "100 MB string, 128 MiB limit: {:.2?}, peak RSS {:.1} MiB",
        started.elapsed(),
        mib(peak)
    );

    let started = Instant::now();
    let rest = session(&[], |s| s.send(&line));
    assert_eq!(errors_of(&rest), [(null(), INVALID)], "{rest:?}");
    eprintln!("100 MB string, default limit: {:.2?}", started.elapsed());
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC and MCP shape
// ---------------------------------------------------------------------------------------------

/// Messages of the wrong shape: -32600 with the id when it can be read, `"id": null` when not;
/// responses, however broken, never answered; a batch answered with an array.
#[test]
fn malformed_messages_get_their_exact_replies() {
    let cases: Vec<(&str, Option<(Value, i64)>)> = vec![
        (r#"{"id":"v-missing","method":"ping"}"#, Some((json!("v-missing"), INVALID))),
        (r#"{"jsonrpc":"1.0","id":"v1","method":"ping"}"#, Some((json!("v1"), INVALID))),
        (r#"{"jsonrpc":2.0,"id":"vnum","method":"ping"}"#, Some((json!("vnum"), INVALID))),
        (r#"{"jsonrpc":"2.0 ","id":"vsp","method":"ping"}"#, Some((json!("vsp"), INVALID))),
        (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":1.0,"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":-7,"method":"ping"}"#, Some((json!(-7), 0))),
        (r#"{"jsonrpc":"2.0","id":"neither"}"#, Some((json!("neither"), INVALID))),
        (r#"{"jsonrpc":"2.0","id":"m-num","method":5}"#, Some((json!("m-num"), INVALID))),
        (r#"{"jsonrpc":"2.0","id":"m-null","method":null}"#, Some((json!("m-null"), INVALID))),
        (r#"{"jsonrpc":"2.0","id":"m-empty","method":""}"#, Some((json!("m-empty"), NOT_FOUND))),
        (
            r#"{"jsonrpc":"2.0","id":"m-rpc","method":"rpc.discover"}"#,
            Some((json!("m-rpc"), NOT_FOUND)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"p-str","method":"ping","params":"x"}"#,
            Some((json!("p-str"), INVALID)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"p-num","method":"ping","params":1}"#,
            Some((json!("p-num"), INVALID)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"p-null","method":"ping","params":null}"#,
            Some((json!("p-null"), INVALID)),
        ),
        (r#"{"jsonrpc":"2.0","method":"notifications/x","result":1}"#, Some((null(), INVALID))),
        (
            r#"{"jsonrpc":"2.0","id":"extra","method":"ping","extra":1}"#,
            Some((json!("extra"), INVALID)),
        ),
        ("42", Some((null(), INVALID))),
        ("null", Some((null(), INVALID))),
        (r#""x""#, Some((null(), INVALID))),
        ("{}", Some((null(), INVALID))),
        ("[]", Some((null(), INVALID))),
        // Responses, broken or not, are never answered.
        (r#"{"jsonrpc":"2.0","id":"both","result":1,"error":{"code":1,"message":"m"}}"#, None),
        (r#"{"jsonrpc":"2.0","id":"e-nocode","error":{"message":"m"}}"#, None),
        (r#"{"jsonrpc":"2.0","id":"e-strcode","error":{"code":"1","message":"m"}}"#, None),
        (r#"{"jsonrpc":"2.0","id":"e-float","error":{"code":1.5,"message":"m"}}"#, None),
        (r#"{"jsonrpc":"2.0","id":"e-nomsg","error":{"code":1}}"#, None),
        (r#"{"jsonrpc":"2.0","result":1}"#, None),
        (r#"{"jsonrpc":"2.0","id":"r-params","result":1,"params":{}}"#, None),
    ];
    let batches = [
        // Three elements that are not messages: three errors, in one array.
        "[1,2,3]",
        // A nested batch is an element that is not a message.
        r#"[[{"jsonrpc":"2.0","id":"nested","method":"ping"}]]"#,
        // A request, a notification and garbage: the request's result and one error.
        r#"[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},5]"#,
        // Only a response: nothing at all is sent back.
        r#"[{"jsonrpc":"2.0","id":77,"result":{}}]"#,
    ];
    let rest = session(NO_RATE_LIMIT, |s| {
        for (line, _) in &cases {
            s.line(line);
        }
        for line in &batches {
            s.line(line);
        }
    });
    let (arrays, singles): (Vec<Value>, Vec<Value>) = rest.into_iter().partition(Value::is_array);
    let (errors, results): (Vec<Value>, Vec<Value>) =
        singles.into_iter().partition(|r| r.get("error").is_some());
    // The read loop's own replies come in the order read; -32601 comes from the handler, which
    // runs as a task.
    let (handler_errors, errors): (Vec<Value>, Vec<Value>) =
        errors.into_iter().partition(|r| r["error"]["code"] == NOT_FOUND);
    let want = |pick: fn(i64) -> bool| -> Vec<(Value, i64)> {
        cases.iter().filter_map(|(_, w)| w.clone()).filter(|(_, code)| pick(*code)).collect()
    };
    assert_eq!(errors_of(&errors), want(|c| c == PARSE || c == INVALID), "{errors:#?}");
    let mut handler_errors = errors_of(&handler_errors);
    handler_errors.sort_by_key(|(id, _)| id.to_string());
    assert_eq!(handler_errors, want(|c| c == NOT_FOUND));
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!((&results[0]["id"], &results[0]["result"]), (&json!(-7), &json!({})));

    // Batch replies come from their own tasks; their order among themselves is not fixed.
    let mut arrays: Vec<Vec<(Value, i64)>> = arrays
        .iter()
        .map(|a| {
            a.as_array()
                .unwrap()
                .iter()
                .map(|r| if r.get("error").is_some() { error_of(r) } else { (r["id"].clone(), 0) })
                .collect()
        })
        .collect();
    arrays.sort_by_key(Vec::len);
    assert_eq!(
        arrays,
        [
            vec![(null(), INVALID)],
            vec![(json!("b1"), 0), (null(), INVALID)],
            vec![(null(), INVALID); 3],
        ]
    );
}

/// A batch of 10^6 elements is refused whole with one -32600 (none of it runs); a batch of
/// exactly the limit is answered in full; `--max-batch-len` and `--no-batches` take effect.
#[test]
fn batches_past_their_limits_are_refused_whole() {
    let batch = |n: usize, prefix: &str| {
        let items: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"jsonrpc":"2.0","id":"{prefix}{i}","method":"ping"}}"#))
            .collect();
        format!("[{}]", items.join(","))
    };
    let started = Instant::now();
    let million = format!("[{}{{}}]", "{},".repeat(999_999));
    let rest = session(&[], |s| {
        s.line(&million);
        s.line(&batch(DEFAULT_MAX_BATCH_LEN, "at"));
    });
    let (arrays, singles): (Vec<Value>, Vec<Value>) = rest.into_iter().partition(Value::is_array);
    assert_eq!(errors_of(&singles), [(null(), INVALID)], "{singles:?}");
    assert_eq!(
        singles[0]["error"]["data"],
        format!("batch of 1000000 elements exceeds the limit of {DEFAULT_MAX_BATCH_LEN}")
    );
    assert_eq!(arrays.len(), 1);
    let mut ids: Vec<_> = arrays[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    let mut want: Vec<_> = (0..DEFAULT_MAX_BATCH_LEN).map(|i| format!("at{i}")).collect();
    want.sort();
    assert_eq!(ids, want);
    eprintln!("batch of 10^6: {:.2?}", started.elapsed());

    let rest = session(&["--max-batch-len", "3"], |s| {
        s.line(&batch(3, "three"));
        s.line(&batch(4, "four"));
    });
    let (arrays, singles): (Vec<Value>, Vec<Value>) = rest.into_iter().partition(Value::is_array);
    assert_eq!(errors_of(&singles), [(null(), INVALID)]);
    assert_eq!(arrays.len(), 1);
    assert_eq!(arrays[0].as_array().unwrap().len(), 3);

    let rest = session(&["--no-batches"], |s| s.line(&batch(1, "off")));
    assert_eq!(errors_of(&rest), [(null(), INVALID)]);
    assert_eq!(rest[0]["error"]["data"], "batches are not accepted");
}

// ---------------------------------------------------------------------------------------------
// Multiplexer abuse
// ---------------------------------------------------------------------------------------------

/// 10^5 responses for ids the server never sent (results, errors, string and numeric ids, and
/// error responses with `"id": null`), then 10^5 cancellations of requests it never received
/// (and some malformed ones): the server answers none of them, and answers the ping.
#[test]
fn a_flood_of_unknown_responses_and_cancellations_is_dropped_silently() {
    const N: usize = 100_000;
    let started = Instant::now();
    let mut flood = String::with_capacity(16 << 20);
    for i in 0..N {
        let line = match i % 4 {
            0 => format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{}}}}"#),
            1 => format!(r#"{{"jsonrpc":"2.0","id":"r{i}","result":{{"x":[1,2]}}}}"#),
            2 => {
                format!(r#"{{"jsonrpc":"2.0","id":{i},"error":{{"code":-32000,"message":"no"}}}}"#)
            }
            _ => r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
                .to_owned(),
        };
        flood.push_str(&line);
        flood.push('\n');
    }
    for i in 0..N {
        let line = match i % 5 {
            0 => format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":"c{i}"}}}}"#),
            1 => r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#.to_owned(),
            2 => r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":1}}}"#.to_owned(),
            _ => format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{i},"reason":"r"}}}}"#),
        };
        flood.push_str(&line);
        flood.push('\n');
    }
    let mut ping_after = Duration::ZERO;
    let rest = session(&[], |s| {
        let sent = Instant::now();
        s.send(flood.as_bytes());
        s.line(r#"{"jsonrpc":"2.0","id":"probe","method":"ping"}"#);
        assert_eq!(s.take_id("probe")["result"], json!({}));
        ping_after = sent.elapsed();
    });
    assert!(rest.is_empty(), "{rest:?}");
    eprintln!(
        "flood of {} MiB: answered the probe {ping_after:.2?} after it began; test took {:.2?}",
        flood.len() >> 20,
        started.elapsed()
    );
}

/// Garbage storms: 10,000 lines that are not JSON earn -32700 replies with `"id": null` at the
/// default rate (a burst of 4, then 4 a second), the rest dropped; 10,000 invalid requests that
/// carry an id are each answered once with that id; the ping still gets through.
#[test]
fn an_error_storm_is_rate_limited_and_addressed_errors_all_answered() {
    const N: usize = 10_000;
    let garbage = "not json\n".repeat(N);
    let addressed: String =
        (0..N).map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":5}}\n")).collect();
    let started = Instant::now();
    let rest = session(&[], |s| {
        s.send(garbage.as_bytes());
        s.send(addressed.as_bytes());
    });
    let elapsed = started.elapsed();
    let errors = errors_of(&rest);
    let unaddressed = errors.iter().filter(|(id, _)| id.is_null()).count();
    assert!(errors.iter().filter(|(id, _)| id.is_null()).all(|(_, code)| *code == PARSE));
    // The burst, and at most 4 more per second the session lasted.
    let allowed = 4 + (4.0 * elapsed.as_secs_f64()).ceil() as usize;
    assert!((4..=allowed).contains(&unaddressed), "{unaddressed} in {elapsed:?}");
    let mut ids: Vec<i64> = errors
        .iter()
        .filter(|(id, _)| !id.is_null())
        .map(|(id, code)| {
            assert_eq!(*code, INVALID);
            id.as_i64().unwrap()
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..N as i64).collect::<Vec<_>>());
    eprintln!("error storm: {unaddressed} unaddressed replies in {elapsed:.2?}");
}

/// Colliding ids: a request reusing an id still in flight is refused with -32600 and that id
/// (the first one keeps running and can be cancelled, after which it answers nothing); `"1"`
/// and `1` are different ids; cancelling a finished request does nothing.
#[test]
fn colliding_ids_and_late_cancellations() {
    let rest = session(&[], |s| {
        s.line(r#"{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"sleep","arguments":{"ms":30000}}}"#);
        s.line(r#"{"jsonrpc":"2.0","id":"dup","method":"ping"}"#);
        let reply = s.take_id("dup");
        assert_eq!(error_of(&reply), (json!("dup"), INVALID), "{reply}");
        assert_eq!(reply["error"]["data"], "a request with this id is already in flight");
        s.line(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"dup"}}"#,
        );

        s.line(r#"{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{"name":"sleep","arguments":{"ms":200}}}"#);
        s.line(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert_eq!(s.take_id(1)["result"], json!({}));
        assert_eq!(tool_text(&s.take_id("1")), ("slept 200", false));

        s.line(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
        s.line(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"init"}}"#,
        );
    });
    // Nothing for the cancelled sleep, nor for the late cancellations.
    assert!(rest.is_empty(), "{rest:?}");
}

/// 10^5 pipelined `echo` calls (105 MiB of requests, as much again of replies) written while
/// the client reads nothing. Backpressure must stop the server reading long before the writer
/// is done; once the client reads, every call is answered exactly once.
///
/// While the client reads nothing, the server holds at most, by the limits (defaults; the
/// terms of `UNREAD_BOUND_OVER_BASELINE`):
/// - replies waiting: the write queue (`max_write_queue_bytes`, 4 MiB, plus the control lane's
///   256 KiB) and the batch the write loop is blocked writing (as much again), each in a buffer
///   grown by doubling, and the smaller buffers each grew from, which the allocator may keep;
/// - tokio's stdin and stdout copy buffers, 2 MiB each;
/// - requests admitted and unanswered: `max_handlers + max_queued_requests` = 4,352, each its
///   ~1.1 KB frame, a task and its reply: about 2.2 KiB each (measured by raising
///   `--max-queued-requests`);
/// - the 64 KiB read-buffer chunks those frames were cut from (contiguous here: ~5 MiB).
///
/// Once the client reads, the rest flows at full speed and the peak is only checked against
/// holding the stream (an unbounded server would hold the 105 MiB of requests, or of
/// replies): the limits do not bound that phase as tightly, because a held frame keeps its
/// whole read-buffer chunk alive (see
/// `held_requests_padded_with_whitespace_stay_within_the_held_bytes_bound`).
#[test]
fn pipelined_requests_while_the_client_does_not_read_stay_bounded_and_all_arrive() {
    const N: usize = 100_000;
    const MESSAGE: usize = 1000;
    const QUEUE: u64 = 4 * MIB + 256 * 1024;
    const HELD: u64 = 256 + 4096;
    const UNREAD_BOUND_OVER_BASELINE: u64 = 2 * 2 * QUEUE // queued, and being written
        + 2 * QUEUE // the buffers those two grew from
        + 2 * 2 * MIB // tokio's stdio copies
        + HELD * 2300 // held requests
        + 8 * MIB; // read-buffer chunks
    let started = Instant::now();
    let mut s = Server::spawn(&[]);
    s.handshake();
    let baseline = s.rss();

    let filler = "m".repeat(MESSAGE - 8);
    let request = move |i: usize| {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"{i:08}{filler}\"}}}}}}\n"
        )
    };
    let total: u64 = (0..N).map(|i| request(i).len() as u64).sum();
    let written = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let mut stdin = s.stdin.take().unwrap();
    let writer = {
        let (written, done) = (written.clone(), done.clone());
        thread::spawn(move || {
            let mut buf = Vec::with_capacity(256 * 1024);
            for i in 0..N {
                buf.extend_from_slice(request(i).as_bytes());
                if buf.len() >= 200 * 1024 || i == N - 1 {
                    stdin.write_all(&buf).unwrap();
                    written.fetch_add(buf.len() as u64, Ordering::SeqCst);
                    buf.clear();
                }
            }
            stdin.write_all(format!("{PING}\n").as_bytes()).unwrap();
            stdin.flush().unwrap();
            done.store(true, Ordering::SeqCst);
            stdin
        })
    };

    // Wait until the writer is stuck (no progress for a second) or done.
    let mut last = (0, Instant::now());
    loop {
        thread::sleep(Duration::from_millis(50));
        let now = written.load(Ordering::SeqCst);
        if done.load(Ordering::SeqCst) {
            break;
        }
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(1) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "writer neither stuck nor done");
    }
    let stuck_at = written.load(Ordering::SeqCst);
    let peak_unread = s.peak_rss();
    assert!(
        !done.load(Ordering::SeqCst),
        "the writer finished all {total} bytes with nobody reading: no backpressure"
    );

    // Now read everything.
    s.start_reading();
    let mut seen = vec![false; N];
    let mut ping = false;
    for _ in 0..=N {
        let r = s.recv();
        if r["id"] == "ping" {
            assert_eq!(r["result"], json!({}));
            assert!(!ping, "ping answered twice");
            ping = true;
            continue;
        }
        let i = usize::try_from(r["id"].as_u64().unwrap_or_else(|| panic!("{r}"))).unwrap();
        assert!(!std::mem::replace(&mut seen[i], true), "{i} answered twice");
        let (text, is_error) = tool_text(&r);
        assert!(!is_error && text.len() == MESSAGE && text.starts_with(&format!("{i:08}")), "{r}");
    }
    assert!(ping && seen.iter().all(|&b| b));
    s.stdin = Some(writer.join().unwrap());
    assert!(s.alive());
    let peak = s.peak_rss();
    let rest = s.finish();
    assert!(rest.is_empty(), "{rest:?}");

    eprintln!(
        "pipelined: {N} requests, {:.1} MiB; the writer stuck at {:.1} MiB; serve RSS {:.1} MiB \
         after the handshake, peak {:.1} MiB while unread, {:.1} MiB overall; test took {:.2?}",
        mib(total),
        mib(stuck_at),
        mib(baseline),
        mib(peak_unread),
        mib(peak),
        started.elapsed()
    );
    assert!(stuck_at < total / 4, "stuck at {stuck_at} of {total}");
    let bound = baseline + UNREAD_BOUND_OVER_BASELINE;
    assert!(
        peak_unread < bound,
        "peak RSS while unread {:.1} MiB, bound {:.1} MiB",
        mib(peak_unread),
        mib(bound)
    );
    assert!(peak < baseline + total, "peak RSS {:.1} MiB: the stream was held", mib(peak));
}

/// Each held request's frame shares the read-buffer allocation it was cut from. A short
/// `sleep` call followed on its line by 65,000 spaces (JSON whitespace, outside the frame's
/// body) is held by its ~100-byte body in the accounting, but keeps alive the ~64 KiB chunk it
/// was read into. 4,000 such calls (held: 256 running, the rest queued; under every count
/// bound) must not make the server hold more than `max_held_request_bytes` (64 MiB) allows:
/// the bound is that plus 32 MiB for the 4,000 tasks (~2.2 KiB each) and the I/O buffers,
/// over the RSS before the first of them.
#[test]
fn held_requests_padded_with_whitespace_stay_within_the_held_bytes_bound() {
    const N: usize = 4000;
    const PAD: usize = 65_000;
    const DEFAULT_MAX_HELD_REQUEST_BYTES: u64 = 64 * MIB;
    let (mut baseline, mut peak) = (0, 0);
    let started = Instant::now();
    let rest = session(&[], |s| {
        baseline = s.rss();
        let pad = " ".repeat(PAD);
        for i in 0..N {
            s.send(
                format!(
                    r#"{{"jsonrpc":"2.0","id":"z{i}","method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":60000}}}}}}{pad}"#
                )
                .as_bytes(),
            );
            s.send(b"\n");
        }
        // Answered by the read loop itself: once it comes, every line before it was read.
        s.line(r#"{"jsonrpc":"2.0","id":"probe","method":5}"#);
        assert_eq!(error_of(&s.take_id("probe")), (json!("probe"), INVALID));
        peak = s.peak_rss();
        let cancels: String = (0..N)
            .map(|i| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":\"z{i}\"}}}}\n"))
            .collect();
        s.send(cancels.as_bytes());
    });
    // The cancelled calls answer nothing.
    assert!(rest.is_empty(), "{rest:?}");
    eprintln!(
        "{N} held calls padded to {PAD} bytes: serve RSS {:.1} MiB before, peak {:.1} MiB; \
         {:.2?}",
        mib(baseline),
        mib(peak),
        started.elapsed()
    );
    let bound = baseline + DEFAULT_MAX_HELD_REQUEST_BYTES + 32 * MIB;
    assert!(peak < bound, "peak RSS {:.1} MiB, bound {:.1} MiB", mib(peak), mib(bound));
}
