//! Interop in the stateless era (protocol revision 2026-07-28), where every request carries its
//! protocol version, client capabilities and client info in `params._meta`, `server/discover`
//! replaces `initialize`, and Streamable HTTP has no sessions:
//! - the official Python SDK's `mcp.Client` pinned to 2026-07-28 and in `auto` mode (probe with
//!   `server/discover`, which must end up modern) against `mcpwire serve` over stdio and over
//!   `--http`, through `tests/interop/python_modern_client.py`;
//! - the TypeScript SDK v2 client (npm `@modelcontextprotocol/client`) pinned and in `auto`
//!   mode against `mcpwire serve` over stdio and over `--http`, through
//!   `tests/interop/ts_client.mjs`;
//! - legacy and modern clients at the same time against one `mcpwire serve --http`;
//! - the Python clients of both eras and the TypeScript client over HTTP/2 (cleartext, prior
//!   knowledge) at once.
//!
//! Each script lists tools, calls `echo` concurrently with hard-to-encode messages and checks
//! the answers exactly; the Python one also calls the tool that mirrors an argument into an
//! `Mcp-Param-*` header (`x-mcp-header`). What each checks on the wire is in its header.

use std::process::Command;
use std::thread;
use std::time::Duration;

use crate::harness::{
    BIN, RUN_TIMEOUT, Run, Server, ensure_installed, node_modern_prefix, node22, run_bounded,
    serve_http, venv_python,
};

/// Bound for a server's exit after SIGTERM.
const TERM_TIMEOUT: Duration = Duration::from_secs(5);

fn python_modern(target: &[&str]) -> Command {
    let mut cmd = Command::new(venv_python());
    cmd.args([
        "tests/interop/python_modern_client.py",
        "--modes",
        "2026-07-28,auto",
        "--expect-server-name",
        "mcpwire",
        "--expect-header-tool",
    ])
    .args(target);
    cmd
}

fn ts_client(target: &[&str]) -> Command {
    let mut cmd = Command::new(node22());
    cmd.arg("tests/interop/ts_client.mjs")
        .arg("--packages")
        .arg(node_modern_prefix())
        .args(["--modes", "pin,auto", "--expect-server-name", "mcpwire"])
        .args(target);
    cmd
}

/// Fails the test with every report when a run failed or the server is gone; then SIGTERM
/// must end the server (a clean exit, or death by that signal).
fn assert_runs_and_stop(server: &mut Server, runs: &[(String, Run)]) {
    let mut report = String::new();
    for (what, run) in runs {
        report.push_str(&run.describe(what));
        report.push('\n');
    }
    report.push_str(&server.describe());
    println!("{report}");
    for (what, run) in runs {
        assert!(run.success(), "{what} failed\n{report}");
    }
    assert!(server.exited().is_none(), "the server exited during the runs\n{report}");
    server.assert_terminates(TERM_TIMEOUT);
}

#[test]
fn python_sdk_modern_client_against_mcpwire_serve_over_stdio() {
    ensure_installed();
    // The SDK starts one server per mode.
    let run = run_bounded(python_modern(&["--", BIN, "serve"]), RUN_TIMEOUT);
    let report = run.describe("python_modern_client.py -- mcpwire serve");
    println!("{report}");
    assert!(run.success(), "{report}");
}

#[test]
fn python_sdk_modern_client_against_mcpwire_serve_over_http() {
    ensure_installed();
    let (mut server, url) = serve_http();
    let run = run_bounded(python_modern(&["--url", &url]), RUN_TIMEOUT);
    assert_runs_and_stop(&mut server, &[(format!("python_modern_client.py --url {url}"), run)]);
}

#[test]
fn ts_sdk_v2_client_against_mcpwire_serve_over_stdio() {
    ensure_installed();
    // The SDK starts the server per mode (in auto mode a second, short-lived copy for its probe).
    let run = run_bounded(ts_client(&["--", BIN, "serve"]), RUN_TIMEOUT);
    let report = run.describe("ts_client.mjs -- mcpwire serve");
    println!("{report}");
    assert!(run.success(), "{report}");
}

#[test]
fn ts_sdk_v2_client_against_mcpwire_serve_over_http() {
    ensure_installed();
    let (mut server, url) = serve_http();
    let run = run_bounded(ts_client(&["--url", &url]), RUN_TIMEOUT);
    assert_runs_and_stop(&mut server, &[(format!("ts_client.mjs --url {url}"), run)]);
}

/// Runs each client command at once, each bounded by `RUN_TIMEOUT`; what each did, named.
fn at_once<const N: usize>(clients: [(String, Command); N]) -> Vec<(String, Run)> {
    thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .map(|(what, cmd)| s.spawn(move || (what, run_bounded(cmd, RUN_TIMEOUT))))
            .collect();
        handles.into_iter().map(|h| h.join().expect("client thread")).collect()
    })
}

/// The three official clients against `url`, each with its extra flags and labelled with its
/// command line: the Python SDK's legacy client (`python_client.py`), its modern one and the
/// TypeScript SDK v2 client.
fn three_clients<'a>(
    url: &'a str,
    legacy: &[&'a str],
    modern: &[&'a str],
    ts: &[&'a str],
) -> [(String, Command); 3] {
    let label = |script: &str, flags: &[&str]| {
        flags.iter().fold(script.to_owned(), |l, f| l + " " + f) + " --url " + url
    };
    let mut python = Command::new(venv_python());
    python
        .args(["tests/interop/python_client.py", "--expect-server-name", "mcpwire"])
        .args(legacy)
        .args(["--url", url]);
    let with_url = |flags: &[&'a str]| [flags, &["--url", url]].concat();
    [
        (label("python_client.py", legacy), python),
        (label("python_modern_client.py", modern), python_modern(&with_url(modern))),
        (label("ts_client.mjs", ts), ts_client(&with_url(ts))),
    ]
}

/// One server, three clients at once: the legacy Python flow of `http.rs` (initialize, a
/// session, 200 concurrent echo calls, a cancelled call, progress), the modern Python client
/// with a legacy session of its own kept busy alongside each modern client, and the TypeScript
/// client pinned and in auto mode.
#[test]
fn legacy_and_modern_clients_at_once_against_one_mcpwire_serve_over_http() {
    ensure_installed();
    let (mut server, url) = serve_http();
    let clients = three_clients(&url, &[], &["--with-legacy"], &[]);
    let runs = at_once(clients);
    assert_runs_and_stop(&mut server, &runs);
}

/// HTTP/2 over cleartext with prior knowledge, against one `mcpwire serve --http` (which takes
/// HTTP/1.1 and HTTP/2 on the same port), each exchange checked to be HTTP/2: the official
/// Python SDK's clients of both eras on httpx2 with `http1=False, http2=True` (`--http2`; PyPI
/// `h2`, pinned in install.sh), and the TypeScript SDK v2 client given a `fetch` built on
/// `node:http2` (`--h2c`: Node's own fetch speaks HTTP/2 only over TLS), at once.
#[test]
fn python_and_ts_sdk_clients_over_h2c_against_mcpwire_serve() {
    ensure_installed();
    let (mut server, url) = serve_http();
    let clients = three_clients(&url, &["--http2"], &["--http2"], &["--h2c"]);
    let runs = at_once(clients);
    for (what, run) in &runs {
        let h2 = ["HTTP versions ['HTTP/2']", r#"HTTP versions ["2"]"#];
        assert!(h2.iter().any(|v| run.stdout.contains(v)), "{what}: not over HTTP/2");
    }
    assert_runs_and_stop(&mut server, &runs);
}
