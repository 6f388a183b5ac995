//! The MCP conformance suite (npm `@modelcontextprotocol/conformance`, run with Node 22) against
//! `mcpwire serve --http 127.0.0.1:0`, one scenario per test, each at spec version 2026-07-28:
//!
//!     node dist/index.js server --url URL --scenario NAME --spec-version 2026-07-28 -o DIR
//!
//! The legacy era's scenarios of SEP-1699 (resumable, polled event streams) run at spec version
//! 2025-11-25, on both the current suite and the legacy era's last one (0.1.16, in
//! `target/interop/conf016`); its client scenario `sse-retry` runs the example
//! `conformance_client` (mcpwire's HTTP client) against the suite's own server:
//!
//!     node dist/index.js client --command CMD --scenario sse-retry --spec-version 2025-11-25 -o DIR
//!
//! The suite writes `DIR/<kind>-NAME-<timestamp>/checks.json`, an array of checks with an `id`
//! and a `status` (SUCCESS, FAILURE, WARNING, INFO or SKIPPED), and exits 1 when any check
//! failed. Each test asserts the exact set of check ids the scenario reported and each one's
//! status, so a check that appears, disappears or changes status fails the test.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{
    conformance_js, conformance_legacy_js, ensure_installed, interop_dir, node22, root,
    run_bounded, serve_http, sh_quote,
};

/// The suite's own bound for one scenario (it then reports a `scenario-timeout` failure).
const SCENARIO_TIMEOUT_MS: u32 = 20_000;
/// Bound for the whole conformance run (node startup included).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// What a check must report.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// Status SUCCESS.
    Pass,
    /// Status SKIPPED: the scenario found the check not applicable to this server.
    Skipped,
    /// Status SUCCESS or INFO (INFO where the suite only reports an optional behavior).
    PassOrInfo,
    /// Status INFO: a log of what the scenario sent or saw.
    Info,
    /// Status FAILURE with an error message starting "Not testable:": the check needs a
    /// diagnostic tool that `mcpwire serve` does not have.
    NotTestable,
}

impl Want {
    fn accepts(self, status: &str, error: &str) -> bool {
        match self {
            Want::Pass => status == "SUCCESS",
            Want::Skipped => status == "SKIPPED",
            Want::PassOrInfo => status == "SUCCESS" || status == "INFO",
            Want::Info => status == "INFO",
            Want::NotTestable => status == "FAILURE" && error.starts_with("Not testable:"),
        }
    }
}

/// Which release of the suite runs a scenario, at which spec version.
#[derive(Clone, Copy, Debug)]
enum Suite {
    /// The current suite (0.2.0-alpha.12) at 2026-07-28.
    Modern,
    /// The current suite at 2025-11-25.
    CurrentLegacy,
    /// The legacy era's last suite (0.1.16) at 2025-11-25.
    Legacy,
}

impl Suite {
    fn js(self) -> PathBuf {
        match self {
            Suite::Modern | Suite::CurrentLegacy => conformance_js(),
            Suite::Legacy => conformance_legacy_js(),
        }
    }

    fn spec_version(self) -> &'static str {
        match self {
            Suite::Modern => "2026-07-28",
            Suite::CurrentLegacy | Suite::Legacy => "2025-11-25",
        }
    }

    /// A name for the result folder.
    fn tag(self) -> &'static str {
        match self {
            Suite::Modern => "modern",
            Suite::CurrentLegacy => "current-legacy",
            Suite::Legacy => "conf016",
        }
    }
}

/// Runs one scenario at 2026-07-28 against a fresh `mcpwire serve --http` and asserts that the
/// checks it reports are exactly `expected` (every occurrence of an id must be as wanted).
fn scenario(name: &str, expected: &[(&str, Want)]) {
    server_scenario(Suite::Modern, name, expected);
}

/// Runs one server scenario of `suite` against a fresh `mcpwire serve --http`, checked as
/// [`scenario`] says.
fn server_scenario(suite: Suite, name: &str, expected: &[(&str, Want)]) {
    ensure_installed();
    let (mut server, url) = serve_http();
    let out_dir = out_dir(suite, name);
    let mut cmd = Command::new(node22());
    cmd.arg(suite.js())
        .args(["server", "--url", &url, "--scenario", name])
        .args(["--spec-version", suite.spec_version()]);
    // 0.1.16's `server` has no bound of its own: the run's bound is the only one.
    if !matches!(suite, Suite::Legacy) {
        cmd.args(["--timeout", &SCENARIO_TIMEOUT_MS.to_string()]);
    }
    cmd.arg("-o").arg(&out_dir);
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = format!(
        "{}\n{}",
        run.describe(&format!("conformance {suite:?} server --scenario {name} --url {url}")),
        server.describe()
    );
    assert_checks(&out_dir, expected, &run, report);
    assert!(server.exited().is_none(), "the server exited during the scenario");
}

/// Runs one client scenario of `suite` with `command` (the suite appends its server's URL) and
/// asserts its checks as [`scenario`] does.
fn client_scenario(suite: Suite, name: &str, command: &str, expected: &[(&str, Want)]) {
    ensure_installed();
    let out_dir = out_dir(suite, name);
    let mut cmd = Command::new(node22());
    cmd.arg(suite.js())
        .args(["client", "--command", command, "--scenario", name])
        .args(["--spec-version", suite.spec_version()])
        .args(["--timeout", &SCENARIO_TIMEOUT_MS.to_string(), "-o"])
        .arg(&out_dir);
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = run.describe(&format!("conformance {suite:?} client --scenario {name}"));
    assert_checks(&out_dir, expected, &run, report);
}

/// A fresh result folder for a scenario.
fn out_dir(suite: Suite, name: &str) -> PathBuf {
    let dir =
        interop_dir().join(format!("conformance/{name}-{}-{}", suite.tag(), std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// Asserts the checks a run wrote under `out_dir` are exactly `expected`, and the suite's exit
/// status; removes the folder when they are.
fn assert_checks(
    out_dir: &Path,
    expected: &[(&str, Want)],
    run: &crate::harness::Run,
    mut report: String,
) {
    let checks = match read_checks(out_dir) {
        Ok(checks) => checks,
        Err(why) => panic!("no results from the conformance suite: {why}\n{report}"),
    };

    let mut got: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for check in &checks {
        let id = check["id"].as_str().unwrap_or("(no id)").to_owned();
        let status = check["status"].as_str().unwrap_or("(no status)").to_owned();
        let error = check["errorMessage"].as_str().unwrap_or("").to_owned();
        got.entry(id).or_default().push((status, error));
    }
    let mut wrong = Vec::new();
    for (id, want) in expected {
        match got.get(*id) {
            None => wrong.push(format!("{id}: not reported (want {want:?})")),
            Some(seen) => {
                for (status, error) in seen {
                    if !want.accepts(status, error) {
                        wrong.push(format!("{id}: {status} {error:?} (want {want:?})"));
                    }
                }
            }
        }
    }
    for (id, seen) in &got {
        if !expected.iter().any(|(e, _)| e == id) {
            wrong.push(format!("{id}: unexpected check, reported {seen:?}"));
        }
    }
    let summary: Vec<String> = checks
        .iter()
        .map(|c| {
            format!("{} {}", c["status"].as_str().unwrap_or("?"), c["id"].as_str().unwrap_or("?"))
        })
        .collect();
    report.push_str(&format!("\n--- checks ---\n{}\n", summary.join("\n")));
    println!("{report}");
    assert!(wrong.is_empty(), "checks not as expected:\n  {}\n{report}", wrong.join("\n  "));

    // The suite exits 1 exactly when a check failed.
    let fails = expected.iter().any(|(_, w)| matches!(w, Want::NotTestable));
    let code = run.status.and_then(|s| s.code());
    assert_eq!(code, Some(i32::from(fails)), "conformance exit status\n{report}");
    // Kept when the test fails, for a look at every check's details.
    let _ = fs::remove_dir_all(out_dir);
}

/// The checks of the one result folder the suite wrote under `out_dir`.
fn read_checks(out_dir: &Path) -> Result<Vec<Value>, String> {
    let dirs: Vec<PathBuf> = fs::read_dir(out_dir)
        .map_err(|e| format!("{}: {e}", out_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    let [dir] = dirs.as_slice() else {
        return Err(format!("expected one result folder in {}, found {dirs:?}", out_dir.display()));
    };
    let path = dir.join("checks.json");
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    match serde_json::from_str(&text) {
        Ok(Value::Array(checks)) => Ok(checks),
        Ok(other) => Err(format!("{} is not an array: {other}", path.display())),
        Err(e) => Err(format!("{} is not JSON: {e}", path.display())),
    }
}

/// SEP-2575: per-request `_meta` validation, `server/discover`, version and header checks,
/// removed and unknown methods answered 404 with -32601, error ids, subscriptions/listen.
#[test]
fn conformance_server_stateless() {
    use Want::*;
    scenario(
        "server-stateless",
        &[
            ("sep-2575-request-meta-invalid-missing-meta", Pass),
            ("sep-2575-request-meta-invalid-missing-protocol-version", Pass),
            ("sep-2575-request-meta-invalid-missing-client-capabilities", Pass),
            ("sep-2575-http-server-meta-invalid-400", Pass),
            ("sep-2575-request-meta-client-info-optional", Pass),
            ("sep-2575-server-implements-discover", Pass),
            // A SHOULD (a WARNING when missing): serve names itself in the discover result's _meta.
            ("sep-2575-server-identifies-in-result-meta", Pass),
            ("sep-2575-server-declares-prompts-in-discover", Pass),
            ("sep-2575-discover-capabilities-match-handlers", Pass),
            ("sep-2575-server-unsupported-version-error", Pass),
            ("sep-2575-http-server-unsupported-version-400", Pass),
            ("sep-2575-http-server-header-mismatch-400", Pass),
            ("sep-2575-http-server-method-not-found-404-initialize", Pass),
            ("sep-2575-http-server-method-not-found-404-ping", Pass),
            ("sep-2575-http-server-method-not-found-404-logging-setlevel", Pass),
            ("sep-2575-http-server-method-not-found-404-resources-subscribe", Pass),
            ("sep-2575-http-server-method-not-found-404-resources-unsubscribe", Pass),
            ("sep-2575-http-server-method-not-found-404", Pass),
            ("sep-2575-http-server-error-jsonrpc-id", Pass),
            // Excluded: each needs a diagnostic tool of the suite's own test server that serve
            // does not have (it has echo, sleep and the header tool only):
            // `test_missing_capability` (a tool needing the sampling capability, to be refused
            // with -32021 and HTTP 400) ...
            ("sep-2575-server-rejects-undeclared-capability", NotTestable),
            ("sep-2575-missing-capability-http-400", NotTestable),
            // ... `test_streaming_elicitation` (a response stream to inspect for requests) ...
            ("sep-2575-http-server-no-independent-requests-on-stream", NotTestable),
            // ... and `test_logging_tool` (a tool that logs, to see no log without logLevel).
            ("sep-2575-server-no-log-without-loglevel", NotTestable),
            // subscriptions/listen: the acknowledgement comes first, every notification on the
            // stream carries the subscription id, and a stream filtered to prompts gets no
            // tools/list_changed.
            ("sep-2575-server-sends-subscription-ack", Pass),
            ("sep-2575-server-tags-subscription-id", Pass),
            ("sep-2575-server-honors-notification-filter", Pass),
            // serve declares no prompts.listChanged or tools.listChanged (its lists never change).
            ("sep-2575-server-sends-prompts-list-changed-on-subscription", Skipped),
            ("sep-2575-server-sends-tools-list-changed-on-subscription", Skipped),
        ],
    );
}

/// SEP-2243: `Mcp-Method` and `Mcp-Name` must match the body (400 and -32020 otherwise), header
/// names are case-insensitive, values case-sensitive, whitespace around values is dropped. The
/// `Mcp-Name` cases use the first tool serve lists.
#[test]
fn conformance_http_header_validation() {
    use Want::*;
    scenario(
        "http-header-validation",
        &[
            ("sep-2243-server-reject-invalid-headers", Pass),
            ("sep-2243-server-reject-error-code", Pass),
            ("sep-2243-server-accepts-whitespace-header-value", Pass),
            ("sep-2243-header-name-case-insensitive", Pass),
            // The server's answer to the setup tools/list is valid per the 2026-07-28 schema.
            ("wire-schema-valid", Pass),
        ],
    );
}

/// SEP-2243 custom headers: serve's tool with an `x-mcp-header` string argument; Base64
/// (`=?base64?...?=`) values decoded and checked against the body, malformed ones refused,
/// unwrapped values taken literally, a missing header refused (400 and -32020).
#[test]
fn conformance_http_custom_header_server_validation() {
    use Want::*;
    scenario(
        "http-custom-header-server-validation",
        &[
            ("sep-2243-server-decode-base64", Pass),
            ("sep-2243-server-reject-invalid-param-chars", Pass),
            ("sep-2243-server-reject-param-mismatch", Pass),
            ("sep-2243-server-validate-param-match", Pass),
            ("wire-schema-valid", Pass),
        ],
    );
}

/// A foreign Host/Origin is refused with a 4xx; the server's own (127.0.0.1:PORT) is served
/// (a `server/discover` at 2026-07-28, an `initialize` at 2025-11-25).
const DNS_REBINDING: &[(&str, Want)] = &[
    ("localhost-host-rebinding-rejected", Want::Pass),
    ("localhost-host-valid-accepted", Want::Pass),
];

#[test]
fn conformance_dns_rebinding_protection() {
    scenario("dns-rebinding-protection", DNS_REBINDING);
}

#[test]
fn conformance_dns_rebinding_protection_legacy() {
    server_scenario(Suite::CurrentLegacy, "dns-rebinding-protection", DNS_REBINDING);
}

#[test]
fn conformance_016_dns_rebinding_protection() {
    server_scenario(Suite::Legacy, "dns-rebinding-protection", DNS_REBINDING);
}

/// SEP-1699 (2025-11-25): `serve`'s `test_reconnection` closes its POST's event stream after
/// the priming event (an id, a `retry`, empty data); the suite resumes it with `GET` and
/// `Last-Event-ID` and must get the tool's result there.
const SSE_POLLING: &[(&str, Want)] = &[
    ("outgoing-request", Want::Info),
    ("incoming-response", Want::Info),
    ("incoming-sse-event", Want::Info),
    ("stream-closed", Want::Info),
    ("server-sse-priming-event", Want::Pass),
    ("server-sse-retry-field", Want::Pass),
    ("server-sse-disconnect-resume", Want::Pass),
];

/// Three concurrent POSTs of `tools/list` in a session are all served (as JSON: the second
/// check is INFO then).
const SSE_MULTIPLE_STREAMS: &[(&str, Want)] = &[
    ("server-accepts-multiple-post-streams", Want::Pass),
    ("server-sse-streams-functional", Want::PassOrInfo),
];

#[test]
fn conformance_server_sse_polling() {
    server_scenario(Suite::CurrentLegacy, "server-sse-polling", SSE_POLLING);
}

#[test]
fn conformance_016_server_sse_polling() {
    server_scenario(Suite::Legacy, "server-sse-polling", SSE_POLLING);
}

#[test]
fn conformance_server_sse_multiple_streams_in_a_session() {
    server_scenario(Suite::CurrentLegacy, "server-sse-multiple-streams", SSE_MULTIPLE_STREAMS);
}

#[test]
fn conformance_016_server_sse_multiple_streams() {
    server_scenario(Suite::Legacy, "server-sse-multiple-streams", SSE_MULTIPLE_STREAMS);
}

/// The `sse-retry` client scenario: the suite's server closes the tool call's event stream
/// after a priming event with `retry: 500`; mcpwire's client (the `conformance_client` example)
/// must wait 450-700 ms, resume with `GET` and `Last-Event-ID`, and get the result there.
const SSE_RETRY: &[(&str, Want)] = &[
    ("incoming-request", Want::Info),
    ("outgoing-response", Want::Info),
    ("outgoing-sse-event", Want::Info),
    ("outgoing-stream-close", Want::Info),
    ("client-sse-graceful-reconnect", Want::Pass),
    ("client-sse-retry-timing", Want::Pass),
    ("client-sse-last-event-id", Want::Pass),
];

#[test]
fn conformance_client_sse_retry() {
    client_scenario(Suite::CurrentLegacy, "sse-retry", &conformance_client(), SSE_RETRY);
}

#[test]
fn conformance_016_client_sse_retry() {
    client_scenario(Suite::Legacy, "sse-retry", &conformance_client(), SSE_RETRY);
}

/// The `conformance_client` example, built (once per test binary) for the profile the tests run
/// in, as a command for `sh -c`.
fn conformance_client() -> String {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let dir = exe.parent().and_then(Path::parent).ok_or("no target dir")?.join("examples");
        let mut cargo = Command::new(env!("CARGO"));
        cargo.current_dir(root()).args([
            "build",
            "-p",
            "mcpwire",
            "--example",
            "conformance_client",
        ]);
        // Into the target folder this test was built in (target/PROFILE/deps/…).
        let target = dir.parent().and_then(Path::parent).ok_or("no target dir")?;
        cargo.arg("--target-dir").arg(target);
        if !cfg!(debug_assertions) {
            cargo.arg("--release");
        }
        let run = run_bounded(cargo, RUN_TIMEOUT);
        if !run.success() {
            return Err(run.describe("cargo build --example conformance_client"));
        }
        Ok(dir.join(format!("conformance_client{}", std::env::consts::EXE_SUFFIX)))
    });
    match built {
        Ok(path) => sh_quote(&path.to_string_lossy()),
        Err(why) => panic!("{why}"),
    }
}

/// Three concurrent POSTs of tools/list are all served; SSE answers must be readable (JSON
/// answers make the second check INFO).
#[test]
fn conformance_server_sse_multiple_streams() {
    use Want::*;
    scenario(
        "server-sse-multiple-streams",
        &[
            ("server-accepts-multiple-post-streams", Pass),
            ("server-sse-streams-functional", PassOrInfo),
        ],
    );
}
