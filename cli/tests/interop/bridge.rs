//! The official SDK clients through `mcpwire bridge`: the Python SDK's `mcp.Client`
//! (`bridge_python_client.py`) and the TypeScript SDK v2 client (`bridge_ts_client.mjs`), each in
//! both eras, two clients at once, against three children:
//! - npm `@modelcontextprotocol/server-everything` (TypeScript SDK v1, 2025-11-25 only);
//! - a server on the Python SDK's MCPServer (`bridge_python_server.py`), which picks its era from
//!   the connection's opening message: the bridge opens with `server/discover`, so behind the
//!   bridge it is a 2026-07-28 server only (it refuses the bridge's `initialize`): every legacy
//!   request is translated and each `input_required` question reaches the client whose call it
//!   is, two clients at once included;
//! - mcpwire's `examples/everything`, which also speaks 2026-07-28 on that connection, so the
//!   bridge sends calls as modern requests and each `input_required` question reaches the client
//!   whose call it is.
//!
//! Each script checks real results (tool calls, resources, prompts, progress) and that every
//! sampling and elicitation answer comes from the calling client's own callback; where the wire
//! relates a child's request to no client (a legacy child, both clients in flight), that the
//! bridge refuses it with -32000. A 2026-07-28 client of a legacy child gets the child's
//! question as an `input_required` result (the bridge holds the child's call) and answers it
//! with its own callback. The bridge's log must show exactly the refusals the scripts expect.

use std::process::Command;
use std::time::Duration;

use crate::harness::{
    ANNOUNCE_PREFIX, ANNOUNCE_TIMEOUT, BIN, RUN_TIMEOUT, Server, ensure_installed,
    node_modern_prefix, node22, run_bounded, server_everything_js, venv_python,
};

/// Bound for the bridge's exit after SIGTERM.
const TERM_TIMEOUT: Duration = Duration::from_secs(5);

/// `mcpwire bridge --http 127.0.0.1:0 -- CHILD…`, and the URL it announced.
fn bridge(child: &[String]) -> (Server, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["bridge", "--http", "127.0.0.1:0", "--"]).args(child);
    let mut server = Server::start(cmd, format!("mcpwire bridge -- {}", child.join(" ")));
    let url = server
        .wait_for_stderr(ANNOUNCE_TIMEOUT, |line| {
            line.strip_prefix(ANNOUNCE_PREFIX).map(|url| url.trim().to_owned())
        })
        .unwrap_or_else(|why| panic!("no announce line: {why}\n{}", server.describe()));
    (server, url)
}

/// The bridge's log lines for refused child requests of `sampling/createMessage` and
/// `elicitation/create` since the last call (those of `roots/list` are the children's own
/// business at start-up).
fn refusals(server: &mut Server) -> usize {
    let mut n = 0;
    let _ = server.wait_for_stderr(Duration::from_millis(500), |line| {
        let input = line.contains("sampling/createMessage") || line.contains("elicitation/create");
        n += usize::from(line.contains("child request refused") && input);
        None::<()>
    });
    n
}

/// Runs both SDKs' scripts in both eras, one after the other, through one bridge in front of
/// `child` (`--child` of the scripts); each run's refusals in the bridge's log must be
/// `refused(era)`.
fn through_the_bridge(child_cmd: &[String], child: &str, refused: impl Fn(&str) -> usize) {
    ensure_installed();
    let (mut server, url) = bridge(child_cmd);
    assert_eq!(refusals(&mut server), 0, "{}", server.describe());
    for era in ["legacy", "modern"] {
        let mut python = Command::new(venv_python());
        python.arg("tests/interop/bridge_python_client.py");
        let mut ts = Command::new(node22());
        ts.arg("tests/interop/bridge_ts_client.mjs").arg("--packages").arg(node_modern_prefix());
        for (what, mut cmd) in [("bridge_python_client.py", python), ("bridge_ts_client.mjs", ts)] {
            cmd.args(["--url", &url, "--era", era, "--child", child]);
            let run = run_bounded(cmd, RUN_TIMEOUT);
            let label = format!("{what} --era {era} --child {child}");
            let report = format!("{}\n{}", run.describe(&label), server.describe());
            println!("{report}");
            assert!(run.success(), "{report}");
            assert!(run.stdout.contains("all checks passed"), "{report}");
            let n = refusals(&mut server);
            assert_eq!(n, refused(era), "{label}: the bridge logged {n} refusals\n{report}");
        }
    }
    assert!(server.exited().is_none(), "the bridge exited\n{}", server.describe());
    server.assert_terminates(TERM_TIMEOUT);
}

/// A legacy child, in either era: clients are routed one at a time (a modern one through held
/// calls) and refused once (B's call while A's is in flight).
fn legacy_child_refusals(_era: &str) -> usize {
    1
}

#[test]
fn official_sdk_clients_through_the_bridge_to_server_everything() {
    let js = server_everything_js().to_str().expect("UTF-8 path").to_owned();
    through_the_bridge(&["node".into(), js, "stdio".into()], "everything", legacy_child_refusals);
}

/// A child that picks its era per connection, opened in 2026-07-28: two clients' questions in
/// flight at once, each routed to its own client, nothing refused.
#[test]
fn official_sdk_clients_through_the_bridge_to_a_python_sdk_server() {
    let python = venv_python().to_str().expect("UTF-8 path").to_owned();
    let script = "tests/interop/bridge_python_server.py".to_owned();
    through_the_bridge(&[python, script], "python", |_| 0);
}

/// A child that speaks 2026-07-28: two clients' questions in flight at once, each routed to its
/// own client, nothing refused.
#[test]
fn official_sdk_clients_through_the_bridge_to_a_modern_child_each_get_their_own_questions() {
    let exe = crate::everything::everything().to_str().expect("UTF-8 path").to_owned();
    through_the_bridge(&[exe, "--stdio".into()], "mcpwire", |_| 0);
}
