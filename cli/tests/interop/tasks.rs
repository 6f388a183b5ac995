//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) with the official TypeScript
//! requester: npm `@modelcontextprotocol/ext-tasks` on the TypeScript SDK v2 client, through
//! `tests/interop/ts_tasks_client.mjs`, against `examples/everything --http` in the stateless
//! era. The script runs tools as tasks and polls them to completion (one, then many at once),
//! answers an elicitation asked inside a task with `tasks/update`, sees a tool error end a task
//! `completed` with `isError`, cancels a long task, and sees a plain tool answer at once; what
//! it checks on the wire is in its header.
//!
//! `mcpwire load --tasks` drives task-augmented calls on the same server, over stdio and HTTP:
//! every call becomes a task polled to completion, and the report gives the time to the first
//! answer beside the time to completion.
//!
//! No official SDK ships a server side of the extension at the pinned versions (the TypeScript
//! SDK v2 server keeps the task methods as wire vocabulary with no runtime; the Python SDK has
//! none), so mcpwire's own client is checked against mcpwire's server in the library's tests.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::client::everything_http;
use crate::everything::everything;
use crate::harness::{
    BIN, RUN_TIMEOUT, ensure_installed, node_modern_prefix, node22, run_bounded, sh_quote,
};

/// Bound for the server's exit after SIGTERM.
const TERM_TIMEOUT: Duration = Duration::from_secs(5);

/// `mcpwire load --tasks` of `requests` calls of `slow_compute` for 50 ms against `target`:
/// each became a task, completed, and took at least its 50 ms to complete while its first
/// answer came sooner.
fn load_tasks(target: &str, requests: u64) {
    let mut cmd = Command::new(BIN);
    cmd.args(["load", "--target", target, "--tasks", "--tool", "slow_compute"])
        .args(["--arguments", r#"{"seconds":0.05,"label":"load"}"#])
        .args(["--requests", &requests.to_string(), "--concurrency", "16", "--json"])
        .args(["--protocol-version", "2026-07-28"]);
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = run.describe(&format!("mcpwire load --tasks --target {target}"));
    println!("{report}");
    assert!(run.success(), "{report}");
    let json: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("load --json printed no single JSON object ({e})\n{report}"));
    assert_eq!(json["errors"], 0, "{report}");
    assert_eq!(json["requests"], requests, "{report}");
    assert_eq!(json["tasks"], requests, "every call became a task\n{report}");
    let (first, done) = (&json["first_answer_latency_us"], &json["latency_us"]);
    let (first_p50, done_p50) = (first["p50"].as_u64().unwrap(), done["p50"].as_u64().unwrap());
    assert!(done_p50 >= 50_000, "a task completes after its 50 ms\n{report}");
    assert!(first_p50 < done_p50, "the first answer comes before the end\n{report}");
    assert_eq!(json["operations"][0]["tasks"], requests, "{report}");
}

#[test]
fn load_drives_task_augmented_calls_over_stdio_and_http() {
    let exe = everything();
    load_tasks(&format!("stdio:{} --stdio", sh_quote(&exe.display().to_string())), 200);
    let (mut server, url) = everything_http();
    load_tasks(&url, 200);
    assert!(server.exited().is_none(), "the server exited during the load\n{}", server.describe());
    server.assert_terminates(TERM_TIMEOUT);
}

#[test]
fn ext_tasks_requester_runs_tools_as_tasks_on_everything_over_http() {
    ensure_installed();
    let (mut server, url) = everything_http();
    let mut script = Command::new(node22());
    script
        .arg("tests/interop/ts_tasks_client.mjs")
        .arg("--packages")
        .arg(node_modern_prefix())
        .args(["--url", &url, "--concurrent", "20"]);
    let run = run_bounded(script, RUN_TIMEOUT);
    let report = format!("{}\n{}", run.describe("ts_tasks_client.mjs"), server.describe());
    println!("{report}");
    assert!(run.success(), "{report}");
    assert!(server.exited().is_none(), "the server exited during the run\n{report}");
    server.assert_terminates(TERM_TIMEOUT);
}
