//! Interop over stdio.

use std::process::Command;

use serde_json::Value;

use crate::harness::{
    BIN, RUN_TIMEOUT, ensure_installed, run_bounded, server_everything_js, sh_quote, venv_python,
};

#[test]
fn load_against_the_reference_server_everything_over_stdio() {
    ensure_installed();
    let js = server_everything_js();
    let target = format!("stdio:node {} stdio", sh_quote(js.to_str().expect("UTF-8 path")));
    let mut cmd = Command::new(BIN);
    cmd.args(["load", "--target", &target]).args([
        "--requests",
        "2000",
        "--concurrency",
        "32",
        "--warmup",
        "0",
        "--json",
    ]);
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = run.describe(&format!("mcpwire load --target {target:?}"));
    println!("{report}");
    assert!(run.success(), "{report}");

    let json: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("load --json printed no single JSON object ({e})\n{report}"));
    assert_eq!(json["errors"], 0, "{report}");
    assert_eq!(json["requests"], 2000, "{report}");
    assert!(json["bytes_sent"].as_u64().is_some_and(|n| n > 0), "{report}");
    assert!(json["bytes_received"].as_u64().is_some_and(|n| n > 0), "{report}");
}

#[test]
fn python_sdk_client_against_mcpwire_serve_over_stdio() {
    ensure_installed();
    let mut cmd = Command::new(venv_python());
    cmd.args(["tests/interop/python_client.py", "--expect-server-name", "mcpwire", "--", BIN])
        .arg("serve");
    let run = run_bounded(cmd, RUN_TIMEOUT);
    let report = run.describe("python_client.py -- mcpwire serve");
    println!("{report}");
    assert!(run.success(), "{report}");
}
