//! Helpers of the `load` CLI tests (tests/load_cli.rs, tests/load_targets.rs): the binary,
//! `mcpwire serve` on an announced address, `mcpwire load --json`, temporary files.

#![allow(dead_code, reason = "each test file uses only some of the helpers")]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

/// A server process, killed when dropped: a failing test leaves none behind.
pub struct Served(pub Child);

impl Served {
    /// Its process id.
    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `mcpwire serve` with `args`, and the target it announces.
pub fn serve_on(args: &[&str]) -> (Served, String) {
    announced(&[&["serve"], args].concat())
}

/// `mcpwire ARGS` (`serve`, `record --http`) and the target it announces on standard error
/// (`mcpwire: serving MCP on TARGET`); the rest of its standard error is read and dropped, so
/// it never blocks on a full pipe.
pub fn announced(args: &[&str]) -> (Served, String) {
    announced_by(std::path::Path::new(BIN), args)
}

/// [`announced`] of another program.
pub fn announced_by(program: &std::path::Path, args: &[&str]) -> (Served, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let target =
        line.trim().strip_prefix("mcpwire: serving MCP on ").unwrap_or_else(|| panic!("{line}"));
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (Served(child), target.to_owned())
}

/// `mcpwire load ARGS --json`: the process's output and its report.
pub fn load(args: &[&str]) -> (Output, Value) {
    let out = Command::new(BIN).arg("load").args(args).arg("--json").output().unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, report)
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

pub fn scenario(name: &str, text: &str) -> PathBuf {
    let path = temp(name);
    std::fs::write(&path, text).unwrap();
    path
}
