//! `mcpwire load` sessions (a scenario of `[[step]]`s) against servers it did not write: the
//! reference `server-everything` (npm, legacy era, stdio) and `examples/everything` (modern era,
//! Streamable HTTP). Each user lists the resources, reads the first one listed (its URI carried
//! from the list's result), and calls a tool; every answer is checked.

use std::process::Command;

use serde_json::Value;

use crate::client::everything_http;
use crate::harness::{
    BIN, RUN_TIMEOUT, ensure_installed, run_bounded, server_everything_js, sh_quote,
};

/// The session, its tool call's step given.
fn session(call: &str) -> String {
    format!(
        r#"
[[step]]
method = "resources/list"
cursor = "${{cursor}}"
save = {{ cursor = "/nextCursor", uri = "/resources/0/uri" }}
[[step]]
name = "read the first listed"
method = "resources/read"
uri = "${{uri}}"
think_ms = [0, 5]
[[step]]
{call}
"#
    )
}

/// Runs the session against `target` (with `extra` flags): the report, after checking that
/// every answer passed and the steps ran in order.
fn run(target: &str, toml: &str, extra: &[&str]) -> Value {
    let dir = std::env::temp_dir().join(format!("mcpwire-sessions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("s{}.toml", target.len()));
    std::fs::write(&file, toml).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["load", "--target", target, "--concurrency", "4", "--requests", "300"])
        .args(["--warmup", "0", "--json", "--scenario"])
        .arg(&file)
        .args(extra);
    let out = run_bounded(cmd, RUN_TIMEOUT);
    let what = out.describe(&format!("mcpwire load --target {target:?} (a session)"));
    assert!(out.success(), "{what}");
    let report: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(report["errors"], 0, "{what}");
    let n: Vec<u64> = report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(n.iter().sum::<u64>(), 300, "{what}");
    assert!(n[0] >= n[1] && n[1] >= n[2] && n[0] - n[2] <= 8, "{n:?}: {what}");
    report
}

#[test]
fn a_session_lists_reads_and_calls_on_the_reference_server_over_stdio() {
    ensure_installed();
    let js = server_everything_js();
    let target = format!("stdio:node {} stdio", sh_quote(js.to_str().expect("UTF-8 path")));
    let call = r#"method = "tools/call"
tool = "echo"
arguments = { message = "read ${uri}" }
expect_text = "read demo://""#;
    let report = run(&target, &session(call), &[]);
    assert_eq!(report["era"], "legacy", "{report}");
}

#[test]
fn a_session_lists_reads_and_calls_on_everything_in_the_modern_era() {
    let (_server, url) = everything_http();
    let call = r#"method = "tools/call"
tool = "test_simple_text""#;
    let report = run(&url, &session(call), &["--protocol-version", "2026-07-28"]);
    assert_eq!(report["era"], "modern", "{report}");
}
