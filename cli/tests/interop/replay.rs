//! `mcpwire record` then `mcpwire load --replay` against the official Python SDK's server
//! (`tests/interop/python_server.py`, PyPI `mcp`) over stdio: a host's session recorded
//! through the tee in each era, replayed in the same era and in the other one with the mix and
//! the rate of the capture within 2% and no mismatch; and against the server changed to fail
//! every echo (`--require-version` of the other era: each call answers isError), where every
//! echo call is a mismatch.

#[path = "../replay_support/mod.rs"]
mod replay_support;

use replay_support::{LEGACY, MODERN, host_session, replay_both_eras, serial, temp};

use crate::harness::{BIN, ensure_installed, sh_quote, venv_python};

const SCRIPT: &str = "tests/interop/python_server.py";

fn round_trip(recorded_in: &str, other: &str) {
    ensure_installed();
    let python = venv_python();
    let server = format!("{} {SCRIPT}", sh_quote(python.to_str().expect("UTF-8 path")));
    let cap = temp(&format!("python-{recorded_in}.ndjson"));
    let target = format!("stdio:{BIN} record --output {} -- {server}", cap.display());
    host_session(&target, recorded_in, "50", "4");
    let changed = format!("stdio:{server} --require-version {other}");
    let rec = replay_both_eras(
        &cap,
        &format!("stdio:{server}"),
        &changed,
        recorded_in,
        "mismatch_tool_error",
    );
    assert!((190..=205).contains(&rec.requests), "{rec:?}");
}

#[test]
fn a_legacy_session_with_the_python_sdk_server_replays_in_both_eras() {
    let _one = serial();
    round_trip(LEGACY, MODERN);
}

#[test]
fn a_modern_session_with_the_python_sdk_server_replays_in_both_eras() {
    let _one = serial();
    round_trip(MODERN, LEGACY);
}
