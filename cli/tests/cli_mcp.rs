//! `mcpwire serve` and `mcpwire load` as real processes: a scripted MCP session over stdio,
//! cancellation, signals, TCP and Unix sockets, the load report and its exit codes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod load_support;

use load_support::{load, serve_on};

const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

/// `mcpwire serve` over stdio, driven line by line.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start() -> Self {
        let mut child = Command::new(BIN)
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self { child, stdin, stdout }
    }

    fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.stdout.read_line(&mut line).unwrap() > 0, "EOF from serve");
        assert!(line.ends_with('\n'));
        serde_json::from_str(&line).unwrap()
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        let reply = self.recv();
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["jsonrpc"], "2.0");
        reply
    }

    /// Closes stdin and waits for the exit status, failing after `limit`.
    fn finish(mut self, limit: Duration) -> std::process::ExitStatus {
        drop(self.stdin.take());
        wait(&mut self.child, limit)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < limit, "still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn tool_text(reply: &Value) -> (&str, bool) {
    let r = &reply["result"];
    assert_eq!(r["content"][0]["type"], "text", "{reply}");
    (r["content"][0]["text"].as_str().unwrap(), r["isError"] == true)
}

#[test]
fn serve_answers_a_scripted_mcp_session_over_stdio() {
    let mut s = Server::start();
    let init = s.call(
        1,
        "initialize",
        json!({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "mcpwire");
    // Fixed tools (no listChanged), and log levels (`logging/setLevel`).
    assert_eq!(init["result"]["capabilities"], json!({"tools":{},"logging":{}}));
    s.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    assert_eq!(s.call(2, "ping", json!({}))["result"], json!({}));

    let tools = s.call(3, "tools/list", json!({}));
    let names: Vec<_> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(
        names,
        [
            json!("echo"),
            json!("sleep"),
            json!("route"),
            json!("confirm"),
            json!("test_reconnection")
        ]
    );
    let echo_schema = &tools["result"]["tools"][0]["inputSchema"];
    assert_eq!(echo_schema["required"], json!(["message"]));
    assert_eq!(echo_schema["properties"]["message"]["type"], "string");
    assert_eq!(tools["result"]["tools"][1]["inputSchema"]["properties"]["ms"]["maximum"], 60000);

    // The message comes back exactly: escapes, non-ASCII, NUL, a surrogate pair.
    let tricky = "a\"b\\c\nd\te\u{0}f é 日本 😀 \u{2028}";
    let r = s.call(4, "tools/call", json!({"name":"echo","arguments":{"message":tricky}}));
    assert_eq!(tool_text(&r), (tricky, false));
    assert_eq!(r["result"].get("isError"), None);

    // Untrusted arguments: a wrong type is a tool error, not a protocol error.
    for (id, args) in [(5, json!({"message": 5})), (6, json!({}))] {
        let r = s.call(id, "tools/call", json!({"name":"echo","arguments":args}));
        let (text, is_error) = tool_text(&r);
        assert!(is_error && text.starts_with("echo: "), "{text}");
    }
    // Any size the frame limit admits is echoed: past the 1 MiB `route` and `confirm` take.
    let big = "x".repeat((1 << 20) + 1);
    let r = s.call(7, "tools/call", json!({"name":"echo","arguments":{"message":big}}));
    assert_eq!(tool_text(&r), (big.as_str(), false));
    let at_limit = "y".repeat(1 << 20);
    let r = s.call(8, "tools/call", json!({"name":"echo","arguments":{"message":at_limit}}));
    assert_eq!(tool_text(&r), (at_limit.as_str(), false));
    for (id, ms) in [(9, json!(-1)), (10, json!(60_001)), (11, json!("5")), (12, json!(1.5))] {
        let r = s.call(id, "tools/call", json!({"name":"sleep","arguments":{"ms":ms}}));
        let (text, is_error) = tool_text(&r);
        assert!(is_error && text.starts_with("sleep: "), "{ms}: {text}");
    }
    let r = s.call(13, "tools/call", json!({"name":"sleep","arguments":{"ms":0}}));
    assert_eq!(tool_text(&r), ("slept 0", false));

    // An unknown tool is -32602, an unknown method -32601, bad params -32602.
    let r = s.call(14, "tools/call", json!({"name":"nope","arguments":{}}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(s.call(15, "resources/list", json!({}))["error"]["code"], -32601);
    assert_eq!(s.call(16, "tools/call", json!({"arguments":{}}))["error"]["code"], -32602);
    assert_eq!(s.call(18, "logging/setLevel", json!({"level":"error"}))["result"], json!({}));
    // confirm asks the client in a legacy session: one that cannot elicit is refused.
    let r = s.call(19, "tools/call", json!({"name":"confirm","arguments":{"question":"?"}}));
    assert_eq!(r["error"]["code"], -32021, "{r}");
    // A version it does not know: the latest.
    let r = s.call(17, "initialize", json!({"protocolVersion":"1999-01-01","capabilities":{}}));
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");

    assert!(s.finish(Duration::from_secs(10)).success());
}

#[test]
fn serve_stops_a_cancelled_sleep_and_answers_nothing_for_it() {
    let mut s = Server::start();
    // A legacy session's call, then a stateless (2026-07-28) one in the same process.
    let init = json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}});
    assert!(s.call(1, "initialize", init)["result"].is_object());
    s.send(&json!({"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}}));
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}});
    s.send(&json!({"jsonrpc":"2.0","id":"modern","method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000},"_meta":meta}}));
    s.send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"modern"}}));
    s.send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long","reason":"test"}}));
    assert_eq!(s.call(2, "ping", json!({}))["result"], json!({}));
    // End of input with nothing left to answer: it exits at once, having sent nothing more.
    let started = Instant::now();
    drop(s.stdin.take());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut s.stdout, &mut rest).unwrap();
    assert_eq!(rest, "", "an answer for the cancelled call");
    assert!(wait(&mut s.child, Duration::from_secs(10)).success());
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn serve_exits_cleanly_on_sigterm_and_sigint_with_stdin_still_open() {
    for signal in ["-TERM", "-INT"] {
        let mut s = Server::start();
        assert_eq!(s.call(1, "ping", json!({}))["result"], json!({}));
        let pid = s.child.id().to_string();
        assert!(Command::new("kill").args([signal, &pid]).status().unwrap().success());
        let status = wait(&mut s.child, Duration::from_secs(10));
        assert!(status.success(), "{signal}: {status:?}");
    }
}

fn assert_clean(out: &Output, report: &Value, requests: u64) {
    assert_eq!(out.status.code(), Some(0), "{report} {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(report["requests"], requests, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    for key in ["p50", "p90", "p99", "p999", "max"] {
        assert!(report["latency_us"][key].as_u64().is_some_and(|v| v > 0), "{key}: {report}");
    }
    assert!(
        report["bytes_sent"].as_u64().unwrap() > 0
            && report["bytes_received"].as_u64().unwrap() > 0
    );
    assert!(report["elapsed_s"].as_f64().unwrap() > 0.0);
    assert!(report["throughput_rps"].as_f64().unwrap() > 0.0);
}

#[test]
fn load_drives_serve_over_tcp_and_a_unix_socket() {
    let (tcp, target) = serve_on(&["--tcp", "127.0.0.1:0"]);
    let (out, report) =
        load(&["--target", &target, "--requests", "500", "--concurrency", "16", "--warmup", "0"]);
    assert_clean(&out, &report, 500);
    assert_eq!(report["target"], target);
    drop(tcp);

    let path = std::env::temp_dir().join(format!("mcpwire-cli-{}.sock", std::process::id()));
    let (unix, target) = serve_on(&["--unix", path.to_str().unwrap()]);
    let (out, report) =
        load(&["--target", &target, "--requests", "500", "--method", "ping", "--warmup", "0"]);
    assert_clean(&out, &report, 500);
    drop(unix);
    let _ = std::fs::remove_file(path);
}

#[test]
fn load_drives_serve_as_a_child_process() {
    let cmd = format!("stdio:{BIN} serve");
    let (out, report) = load(&[
        "--target",
        &cmd,
        "--requests",
        "1000",
        "--concurrency",
        "32",
        "--warmup",
        "0",
        "--payload-bytes",
        "300",
    ]);
    assert_clean(&out, &report, 1000);
    // Each echo carries its 300-byte message both ways.
    assert!(report["bytes_sent"].as_u64().unwrap() > 1000 * 300);
}

#[test]
fn load_embedded_reports_exactly_the_requests_asked() {
    let (out, report) = load(&["--requests", "300", "--warmup", "0.2", "--concurrency", "8"]);
    assert_clean(&out, &report, 300);
    assert_eq!(report["target"], "embedded");
    assert_eq!(report["peak_in_flight"], 8);
    // The embedded server runs in the generator's process: its CPU time is in the reading.
    assert_eq!(report["cpu"]["includes_server"], true, "{report}");
    assert!(report["cpu"]["user_s"].as_f64().is_some_and(|s| s > 0.0), "{report}");
}

#[test]
fn load_counts_failed_calls_and_exits_1() {
    let (out, report) = load(&["--requests", "50", "--warmup", "0", "--tool", "nope"]);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(report["errors"], 50);
    assert_eq!(report["errors_by_kind"], json!({"rpc_error_-32602": 50}));
    // A tool that answers isError (sleep given a message, not `ms`) is an error too.
    let (out, report) = load(&["--requests", "20", "--warmup", "0", "--tool", "sleep"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(report["errors_by_kind"], json!({"tool_error": 20}));
    // With its own arguments it succeeds.
    let args =
        ["--requests", "20", "--warmup", "0", "--tool", "sleep", "--arguments", r#"{"ms":1}"#];
    let (out, report) = load(&args);
    assert_clean(&out, &report, 20);
}

#[test]
fn serve_on_a_unix_path_never_replaces_a_file_and_removes_its_socket() {
    let path = std::env::temp_dir().join(format!("mcpwire-precious-{}.txt", std::process::id()));
    std::fs::write(&path, "keep me").unwrap();
    let out = Command::new(BIN).args(["serve", "--unix", path.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
    std::fs::remove_file(&path).unwrap();
    // Its own socket is removed when it stops.
    let sock = std::env::temp_dir().join(format!("mcpwire-sock-{}.sock", std::process::id()));
    let (mut child, _) = serve_on(&["--unix", sock.to_str().unwrap()]);
    assert!(sock.exists());
    assert!(
        Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success()
    );
    assert!(wait(&mut child.0, Duration::from_secs(10)).success());
    assert!(!sock.exists(), "socket left behind");
}

#[test]
fn load_that_cannot_connect_exits_2() {
    let out = Command::new(BIN).args(["load", "--target", "tcp:127.0.0.1:1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect to tcp:127.0.0.1:1"));
    let out = Command::new(BIN).args(["load", "--target", "stdio:true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("handshake"), "{out:?}");
}

#[test]
fn load_interrupted_by_ctrl_c_prints_the_partial_report() {
    let child = Command::new(BIN)
        .args(["load", "--duration", "60", "--warmup", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success()
    );
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("interrupted:   yes (partial report)"), "{text}");
    assert!(text.contains("errors:        0"), "{text}");
    // What completed before the interrupt is reported.
    let requests: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("requests:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap();
    assert!(requests > 0, "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
}

/// One HTTP/1.1 exchange on a connection of its own: the status and the whole answer.
fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, answer)
}

#[test]
fn serve_over_http_takes_its_flags_and_load_drives_it() {
    let args = ["--http", "127.0.0.1:0", "--http-path", "/rpc", "--max-sessions", "1"];
    let (child, target) = serve_on(&[&args[..], &["--no-get-stream"]].concat());
    let addr = target
        .strip_prefix("http://")
        .and_then(|t| t.strip_suffix("/rpc"))
        .unwrap_or_else(|| panic!("announced {target}"))
        .to_owned();
    let (out, report) =
        load(&["--target", &target, "--requests", "500", "--concurrency", "16", "--warmup", "0"]);
    assert_clean(&out, &report, 500);

    // load deleted its session when it closed, so the one session allowed is free again.
    let json = [("Content-Type", "application/json"), ("Accept", "application/json")];
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (status, first) = http(&addr, "POST", "/rpc", &json, init);
    assert_eq!(status, 200, "{first}");
    let session = first
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .unwrap_or_else(|| panic!("no session id: {first}"))
        .trim()
        .to_owned();
    // The table holds one session: a second client's `initialize` ends the first (idle) one.
    let (status, second) = http(&addr, "POST", "/rpc", &json, init);
    assert_eq!(status, 200, "--max-sessions 1: {second}");
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let in_first = [json[0], json[1], ("Mcp-Session-Id", session.as_str())];
    let (status, gone) = http(&addr, "POST", "/rpc", &in_first, ping);
    assert_eq!(status, 404, "--max-sessions 1: the first session was ended for the second: {gone}");
    let (status, get) = http(
        &addr,
        "GET",
        "/rpc",
        &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &session)],
        "",
    );
    assert_eq!(status, 405, "--no-get-stream: {get}");
    let (status, elsewhere) = http(&addr, "POST", "/mcp", &json, init);
    assert_eq!(status, 404, "--http-path /rpc: {elsewhere}");
    drop(child);
}

#[test]
fn load_names_the_era_and_version_it_spoke() {
    // A fixed legacy version is what `initialize` offers and what the report names.
    let args = ["--requests", "50", "--warmup", "0", "--protocol-version", "2025-06-18"];
    let (out, report) = load(&args);
    assert_clean(&out, &report, 50);
    assert_eq!(report["era"], "legacy", "{report}");
    assert_eq!(report["protocol_version"], "2025-06-18", "{report}");
    // `auto` (the default) agrees with itself, whichever era the embedded server speaks.
    let (out, report) = load(&["--requests", "50", "--warmup", "0"]);
    assert_clean(&out, &report, 50);
    let (era, version) = (report["era"].as_str().unwrap(), report["protocol_version"].as_str());
    match era {
        "modern" => assert_eq!(version, Some("2026-07-28"), "{report}"),
        "legacy" => assert_eq!(version, Some("2025-11-25"), "{report}"),
        other => panic!("era {other:?}: {report}"),
    }
    // The modern era has no ping: `auto` speaks legacy for it, a modern version refuses it.
    let (out, report) = load(&["--requests", "20", "--warmup", "0", "--method", "ping"]);
    assert_clean(&out, &report, 20);
    assert_eq!(
        (&report["era"], &report["protocol_version"]),
        (&json!("legacy"), &json!("2025-11-25"))
    );
    let (out, _) =
        load(&["--requests", "20", "--method", "ping", "--protocol-version", "2026-07-28"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no ping"), "{out:?}");
    // A version this build does not speak is refused before anything runs.
    let out =
        Command::new(BIN).args(["load", "--protocol-version", "2099-01-01"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected auto or one of"), "{out:?}");
}

/// A modern (2026-07-28) request's `_meta`, with these client capabilities (and a log level).
fn modern_meta(capabilities: Value, log_level: Option<&str>) -> Value {
    let mut m = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                       "io.modelcontextprotocol/clientCapabilities": capabilities,
                       "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}});
    if let Some(l) = log_level {
        m["io.modelcontextprotocol/logLevel"] = json!(l);
    }
    m
}

#[test]
fn serve_speaks_the_stateless_era_over_stdio() {
    let mut s = Server::start();
    let meta = modern_meta(json!({}), None);
    let d = s.call(1, "server/discover", json!({"_meta": meta}));
    assert_eq!(d["result"]["supportedVersions"], json!(["2026-07-28"]), "{d}");
    assert_eq!(d["result"]["resultType"], "complete");
    assert_eq!(d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcpwire");
    assert!(d["result"]["ttlMs"].as_u64().is_some() && d["result"]["cacheScope"] == "public");
    let t = s.call(2, "tools/list", json!({"_meta": meta}));
    assert_eq!(t["result"]["resultType"], "complete", "{t}");
    assert!(t["result"]["ttlMs"].as_u64().is_some(), "{t}");
    let route = &t["result"]["tools"][2];
    assert_eq!(route["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region");
    // test_reconnection belongs to legacy sessions: unlisted and unknown here.
    let names: Vec<_> =
        t["result"]["tools"].as_array().unwrap().iter().map(|t| &t["name"]).collect();
    assert_eq!(names, ["echo", "sleep", "route", "confirm"]);
    let r = s.call(20, "tools/call", json!({"name": "test_reconnection", "_meta": meta}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = s.call(3, "tools/call", json!({"name": "route", "arguments": {"region": "eu", "shard": 3, "message": "m"}, "_meta": meta}));
    assert_eq!(r["result"]["content"][0]["text"], "eu/3: m", "{r}");
    assert_eq!(r["result"]["resultType"], "complete");
    // Removed methods are unknown under the modern envelope.
    for (id, m) in [(4, "ping"), (5, "initialize"), (6, "logging/setLevel")] {
        assert_eq!(s.call(id, m, json!({"_meta": meta}))["error"]["code"], -32601);
    }

    // confirm: -32021 without elicitation; input_required; then the answer on the retry.
    let ask = json!({"name": "confirm", "arguments": {"question": "ship it?"}, "_meta": meta});
    let e = s.call(7, "tools/call", ask);
    assert_eq!(e["error"]["code"], -32021, "{e}");
    assert_eq!(e["error"]["data"], json!({"requiredCapabilities": {"elicitation": {}}}));
    let able = modern_meta(json!({"elicitation": {}}), None);
    let ask = json!({"name": "confirm", "arguments": {"question": "ship it?"}, "_meta": able});
    let first = s.call(8, "tools/call", ask.clone());
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let request = &first["result"]["inputRequests"]["confirm"];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "ship it?");
    let mut retry = ask;
    retry["inputResponses"] =
        json!({"confirm": {"action": "accept", "content": {"confirmed": true}}});
    let done = s.call(9, "tools/call", retry.clone());
    assert_eq!(done["result"]["content"][0]["text"], "confirmed", "{done}");
    assert_eq!(done["result"]["resultType"], "complete");
    retry["inputResponses"] = json!({"confirm": {"action": "decline"}});
    assert_eq!(s.call(10, "tools/call", retry)["result"]["content"][0]["text"], "declined");

    // Log messages only for a request that asked for them.
    let quiet =
        s.call(11, "tools/call", json!({"name": "sleep", "arguments": {"ms": 0}, "_meta": meta}));
    assert_eq!(quiet["result"]["content"][0]["text"], "slept 0", "{quiet}");
    let loud = modern_meta(json!({}), Some("debug"));
    s.send(&json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call",
                   "params": {"name": "sleep", "arguments": {"ms": 0}, "_meta": loud}}));
    let log = s.recv();
    assert_eq!(log["method"], "notifications/message", "{log}");
    assert_eq!(log["params"]["data"], "sleeping 0 ms");
    assert_eq!(s.recv()["id"], 12);

    // A subscription: acknowledged first, tagged with its id, naming what it honours.
    s.send(&json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
                   "params": {"_meta": meta, "notifications": {"toolsListChanged": true, "resourcesListChanged": true}}}));
    let ack = s.recv();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub");
    assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "sub"}}));
    // `_meta` spelled with escapes is still the modern envelope (as the HTTP header check reads
    // it): this initialize is a removed method, and opens no legacy session.
    s.send_line(
        r#"{"jsonrpc":"2.0","id":14,"method":"initialize","params":{"protocolVersion":"2025-11-25","\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
    );
    let escaped = s.recv();
    assert_eq!(
        (escaped["id"].clone(), escaped["error"]["code"].clone()),
        (json!(14), json!(-32601))
    );
    // Neither era yet: a request with no envelope, before any initialize, is malformed.
    assert_eq!(s.call(13, "tools/list", json!({}))["error"]["code"], -32602);
    assert!(s.finish(Duration::from_secs(10)).success());
}

#[test]
fn serve_confirm_asks_the_client_in_a_legacy_session() {
    let mut s = Server::start();
    let init = json!({"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}});
    assert!(s.call(1, "initialize", init)["result"].is_object());
    s.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    for (id, answer, text) in [
        (2, json!({"action":"accept","content":{"confirmed":true}}), "confirmed"),
        (3, json!({"action":"decline"}), "declined"),
    ] {
        s.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"confirm","arguments":{"question":"ship it?"}}}));
        // The server's own request to the client, then our answer, then the tool's result.
        let ask = s.recv();
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        assert_eq!(ask["params"]["message"], "ship it?");
        assert_eq!(ask["params"]["mode"], "form");
        s.send(&json!({"jsonrpc":"2.0","id":ask["id"],"result":answer}));
        let done = s.recv();
        assert_eq!(done["id"], id, "{done}");
        assert_eq!(tool_text(&done), (text, false));
    }
    assert!(s.finish(Duration::from_secs(10)).success());
}

/// The first frame an HTTP/2 client gets from `addr` after the preface and empty SETTINGS:
/// the server's SETTINGS as `(identifier, value)` pairs; or, when the answer is not that,
/// what came after its first bytes, as text.
fn h2_settings(addr: &str) -> Result<Vec<(u16, u32)>, String> {
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0").unwrap();
    let mut head = [0u8; 9];
    if tcp.read_exact(&mut head).is_err() || head[3] != 4 {
        let mut rest = Vec::new();
        let _ = tcp.read_to_end(&mut rest);
        return Err(String::from_utf8_lossy(&rest).into_owned());
    }
    let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let mut payload = vec![0u8; len];
    tcp.read_exact(&mut payload).unwrap();
    Ok(payload
        .chunks(6)
        .map(|c| (u16::from_be_bytes([c[0], c[1]]), u32::from_be_bytes([c[2], c[3], c[4], c[5]])))
        .collect())
}

#[test]
fn serve_over_http_takes_http2_with_its_stream_bound_or_not_at_all() {
    let addr_of = |target: &str| {
        let t = target.strip_prefix("http://").and_then(|t| t.strip_suffix("/mcp"));
        t.unwrap_or_else(|| panic!("announced {target}")).to_owned()
    };
    let (child, target) = serve_on(&["--http", "127.0.0.1:0", "--http2-max-streams", "3"]);
    let settings = h2_settings(&addr_of(&target)).expect("an HTTP/2 answer");
    // SETTINGS_MAX_CONCURRENT_STREAMS is 0x3.
    assert!(settings.contains(&(3, 3)), "{settings:?}");
    drop(child);
    // 0 streams would refuse every request: taken as 1.
    let (child, target) = serve_on(&["--http", "127.0.0.1:0", "--http2-max-streams", "0"]);
    let settings = h2_settings(&addr_of(&target)).expect("an HTTP/2 answer");
    assert!(settings.contains(&(3, 1)), "{settings:?}");
    drop(child);
    let (child, target) = serve_on(&["--http", "127.0.0.1:0", "--no-http2"]);
    // HTTP/1.1 alone: hyper closes a connection that opens with the HTTP/2 preface, without a
    // byte, and HTTP/1.1 is served on the same port.
    let addr = addr_of(&target);
    assert_eq!(h2_settings(&addr), Err(String::new()));
    let (status, answer) = http(&addr, "GET", "/elsewhere", &[], "");
    assert_eq!(status, 404, "{answer}");
    drop(child);
}
