//! `mcpwire load` in the modern era (2026-07-28: no handshake, `_meta` on every request, over
//! HTTP the mirrored headers) against the official Python SDK's `MCPServer` (PyPI `mcp`), run
//! from `tests/interop/python_server.py`, over stdio and over Streamable HTTP.
//!
//! The server's `echo` fails any call not made at 2026-07-28 (`--require-version`), so a
//! client that claimed the modern era and spoke the legacy one would fail every call; and its
//! `message` argument is annotated `x-mcp-header`, so over HTTP each call must carry a
//! matching `Mcp-Param-Message` header (base64: load's messages are not plain ASCII), which
//! the SDK checks.
//!
//! And against the legacy-only reference server-everything: a fixed modern version fails at
//! the probe; `auto` falls back to the legacy handshake.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{
    BIN, RUN_TIMEOUT, Server, ensure_installed, run_bounded, server_everything_js, sh_quote,
    tail_text, venv_python,
};

const SCRIPT: &str = "tests/interop/python_server.py";
const MODERN: &str = "2026-07-28";
/// Bound for the Python server to print that it listens (interpreter and SDK import).
const ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(60);
/// The line the Python server prints on stderr once it listens, followed by the URL.
const ANNOUNCE_PREFIX: &str = "python-server: serving MCP on ";

/// Runs `mcpwire load --json` with `args` and returns its report, failing the test unless it
/// exited 0 with no error, every request counted, and the modern era at 2026-07-28.
fn load_modern(target: &str, args: &[&str], requests: u64, context: impl Fn() -> String) -> Value {
    let mut cmd = Command::new(BIN);
    cmd.args(["load", "--target", target, "--json", "--warmup", "0"]).args(args);
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = format!(
        "{}\n{}",
        run.describe(&format!("mcpwire load --target {target} {args:?}")),
        context()
    );
    println!("{report}");
    assert!(run.success(), "{report}");
    let json: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("load --json printed no single JSON object ({e})\n{report}"));
    assert_eq!(json["errors"], 0, "{report}");
    assert_eq!(json["requests"], requests, "{report}");
    assert_eq!(json["era"], "modern", "{report}");
    assert_eq!(json["protocol_version"], MODERN, "{report}");
    assert!(json["bytes_received"].as_u64().is_some_and(|n| n > 0), "{report}");
    json
}

#[test]
fn load_modern_against_the_python_sdk_server_over_stdio() {
    ensure_installed();
    let python = venv_python();
    let target = format!(
        "stdio:{} {SCRIPT} --require-version {MODERN}",
        sh_quote(python.to_str().expect("UTF-8 path"))
    );
    let fixed = ["--protocol-version", MODERN, "--requests", "1000", "--concurrency", "16"];
    load_modern(&target, &fixed, 1000, String::new);
    // `auto` finds the modern era through the server/discover probe.
    load_modern(&target, &["--requests", "200", "--concurrency", "8"], 200, String::new);
}

/// Against the SDK's server answering with JSON bodies, and with event streams (its default).
#[test]
fn load_modern_against_the_python_sdk_server_over_http() {
    ensure_installed();
    for sse in [false, true] {
        let answers = if sse { "event-stream answers" } else { "JSON answers" };
        let mut cmd = Command::new(venv_python());
        cmd.args([SCRIPT, "--http", "--require-version", MODERN]);
        if sse {
            cmd.arg("--sse");
        }
        let mut server = Server::start(cmd, format!("python {SCRIPT} --http ({answers})"));
        let url = server
            .wait_for_stderr(ANNOUNCE_TIMEOUT, |line| {
                line.strip_prefix(ANNOUNCE_PREFIX).map(|url| url.trim().to_owned())
            })
            .unwrap_or_else(|why| panic!("no announce line: {why}\n{}", server.describe()));

        let stderr = server.stderr.clone();
        let tail =
            || format!("{answers}\n--- python server stderr (tail) ---\n{}", tail_text(&stderr));
        let fixed = ["--protocol-version", MODERN, "--requests", "300", "--concurrency", "8"];
        load_modern(&url, &fixed, 300, tail);
        // `auto` over HTTP: the modern probe is answered, so no fallback.
        load_modern(&url, &["--requests", "100", "--concurrency", "4"], 100, tail);
        let described = server.describe();
        let seen = format!("python-server: request tools/call {MODERN}");
        assert!(described.contains(&seen), "{described}");
        assert!(server.exited().is_none(), "the Python server exited during the load\n{described}");
    }
}

/// The reference server-everything speaks only the legacy era: a fixed modern version fails
/// at the probe, before any load, with exit status 2; `auto` falls back to `initialize`.
#[test]
fn load_modern_refuses_the_legacy_reference_server_and_auto_falls_back() {
    ensure_installed();
    let js = server_everything_js();
    let target = format!("stdio:node {} stdio", sh_quote(js.to_str().expect("UTF-8 path")));
    let mut cmd = Command::new(BIN);
    cmd.args(["load", "--target", &target, "--protocol-version", MODERN, "--requests", "10"]);
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report =
        run.describe(&format!("mcpwire load --target {target} --protocol-version {MODERN}"));
    println!("{report}");
    assert_eq!(run.status.and_then(|s| s.code()), Some(2), "{report}");
    assert!(run.stderr.contains("not a modern MCP server"), "{report}");
    assert!(run.stdout.is_empty(), "{report}");

    let mut cmd = Command::new(BIN);
    cmd.args(["load", "--target", &target, "--requests", "100", "--warmup", "0", "--json"]);
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = run.describe(&format!("mcpwire load --target {target}"));
    println!("{report}");
    assert!(run.success(), "{report}");
    let json: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("load --json printed no single JSON object ({e})\n{report}"));
    assert_eq!(
        (&json["era"], &json["errors"]),
        (&Value::from("legacy"), &Value::from(0)),
        "{report}"
    );
}
