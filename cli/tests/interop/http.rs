//! Interop over Streamable HTTP:
//! - the official Python SDK's client (PyPI `mcp`, `mcp.client.streamable_http`) against
//!   `mcpwire serve --http 127.0.0.1:0`, through `tests/interop/python_client.py --url`;
//! - `mcpwire load --target http://...` against npm `@modelcontextprotocol/server-everything`
//!   started as `node dist/index.js streamableHttp` with its port in the PORT environment
//!   variable (it has no flag for it). It serves `/mcp`, answers requests as SSE streams (a
//!   priming event `id: X` / `data: ` first, then `event: message` with an `id:`), and logs a
//!   line per request on stdout, so that pipe is drained.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{
    BIN, RUN_TIMEOUT, Server, ensure_installed, free_port, run_bounded, serve_http,
    server_everything_js, tail_text, venv_python,
};

/// Bound for server-everything to print that it listens (node startup on a busy machine).
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound for a server's exit after SIGTERM.
const TERM_TIMEOUT: Duration = Duration::from_secs(5);

/// `Ok` if what listens on 127.0.0.1:`port` is server-everything's Streamable HTTP
/// endpoint: its `GET /mcp` without a session answers 400 with its own JSON-RPC error
/// "Bad Request: No valid session ID provided" (dist/transports/streamableHttp.js).
fn probe_server_everything(port: u16) -> Result<(), String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).map_err(|e| e.to_string())?;
    let request =
        format!("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| format!("write: {e}"))?;
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response);
    if response.starts_with("HTTP/1.1 400") && response.contains("No valid session ID provided") {
        Ok(())
    } else {
        Err(format!("unexpected answer: {:?}", response.chars().take(300).collect::<String>()))
    }
}

#[test]
fn python_sdk_client_against_mcpwire_serve_over_http() {
    ensure_installed();
    let (mut server, url) = serve_http();

    let mut cmd = Command::new(venv_python());
    cmd.args(["tests/interop/python_client.py", "--expect-server-name", "mcpwire", "--url", &url]);
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = format!(
        "{}\n{}",
        run.describe(&format!("python_client.py --url {url}")),
        server.describe()
    );
    println!("{report}");
    assert!(run.success(), "{report}");

    // SIGTERM ends the server: a clean exit, or death by that signal if it keeps the
    // default disposition.
    server.assert_terminates(TERM_TIMEOUT);
}

#[test]
fn load_against_the_reference_server_everything_over_http() {
    ensure_installed();
    let js = server_everything_js();
    // server-everything takes its port from PORT only, so pick a free one. It prints
    // "MCP Streamable HTTP Server listening on port N" on stderr even when the port is
    // taken (express 5 calls app.listen's callback on the 'error' event too), and then
    // "Failed to start: Port N is already in use ..." and exits 1. So the line only says it
    // tried; a probe that only server-everything answers says it listens; if another
    // process took the port meanwhile, try another.
    let mut attempts = Vec::new();
    let (mut server, port) = loop {
        let port = free_port();
        let mut cmd = Command::new("node");
        cmd.arg(&js).arg("streamableHttp").env("PORT", port.to_string());
        let what = format!("PORT={port} node {} streamableHttp", js.display());
        let mut server = Server::start(cmd, what);
        let tried = format!("listening on port {port}");
        if let Err(why) =
            server.wait_for_stderr(READY_TIMEOUT, |line| line.contains(&tried).then_some(()))
        {
            panic!("server-everything did not start: {why}\n{}", server.describe());
        }
        let probe = probe_server_everything(port);
        if probe.is_ok() && server.exited().is_none() {
            break (server, port);
        }
        // Not ours: wait for node's verdict (it exits at once when the port was taken).
        let _ = server.wait_for_stderr(Duration::from_secs(5), |line| {
            line.contains("already in use").then_some(())
        });
        let in_use = tail_text(&server.stderr).contains("already in use");
        attempts.push(format!("probe: {probe:?}\n{}", server.describe()));
        assert!(
            in_use && attempts.len() < 3,
            "server-everything did not start:\n{}",
            attempts.join("\n")
        );
    };

    let target = format!("http://127.0.0.1:{port}/mcp");
    let mut cmd = Command::new(BIN);
    cmd.args(["load", "--target", &target]).args(["--duration", "2", "--warmup", "0.5", "--json"]);
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = format!(
        "{}\n{}",
        run.describe(&format!("mcpwire load --target {target}")),
        server.describe()
    );
    println!("{report}");
    assert!(run.success(), "{report}");

    let json: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("load --json printed no single JSON object ({e})\n{report}"));
    assert_eq!(json["errors"], 0, "{report}");
    assert_eq!(json["interrupted"], false, "{report}");
    assert!(json["requests"].as_u64().is_some_and(|n| n > 0), "{report}");
    assert!(json["bytes_sent"].as_u64().is_some_and(|n| n > 0), "{report}");
    assert!(json["bytes_received"].as_u64().is_some_and(|n| n > 0), "{report}");
    // `server` drops here (or during a failed assertion's unwind): its group is killed.
    assert!(
        server.exited().is_none(),
        "server-everything exited during the load\n{}",
        server.describe()
    );
}
