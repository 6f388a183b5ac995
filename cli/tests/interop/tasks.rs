//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) with the official TypeScript
//! requester: npm `@modelcontextprotocol/ext-tasks` on the TypeScript SDK v2 client, through
//! `tests/interop/ts_tasks_client.mjs`, against `examples/everything --http` in the stateless
//! era. The script runs tools as tasks and polls them to completion (one, then many at once),
//! answers an elicitation asked inside a task with `tasks/update`, sees a tool error end a task
//! `completed` with `isError`, cancels a long task, and sees a plain tool answer at once; what
//! it checks on the wire is in its header.
//!
//! No official SDK ships a server side of the extension at the pinned versions (the TypeScript
//! SDK v2 server keeps the task methods as wire vocabulary with no runtime; the Python SDK has
//! none), so mcpwire's own client is checked against mcpwire's server in the library's tests.

use std::process::Command;
use std::time::Duration;

use crate::client::everything;
use crate::harness::{
    self, RUN_TIMEOUT, Server, ensure_installed, node_modern_prefix, node22, run_bounded,
};

/// Bound for the server's exit after SIGTERM.
const TERM_TIMEOUT: Duration = Duration::from_secs(5);

#[test]
fn ext_tasks_requester_runs_tools_as_tasks_on_everything_over_http() {
    ensure_installed();
    let mut cmd = Command::new(everything());
    cmd.args(["--http", "127.0.0.1:0"]);
    let mut server = Server::start(cmd, "everything --http");
    let url = server
        .wait_for_stderr(harness::ANNOUNCE_TIMEOUT, |l| {
            l.strip_prefix(harness::ANNOUNCE_PREFIX).map(|u| u.trim().to_owned())
        })
        .unwrap_or_else(|why| panic!("{why}\n{}", server.describe()));
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
