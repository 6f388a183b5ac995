//! Where the test installers put what they install, found the way they find it: under target/
//! of the workspace whatever CARGO_TARGET_DIR says (they are not cargo's, and cargo's target may
//! be anywhere), or in the folder an environment variable names, so that the tests and their
//! installers always agree.

#![allow(dead_code, reason = "each test file uses only some of the folders")]

use std::path::{Path, PathBuf};

/// What tests/interop/install.sh installs: target/interop/, or `MCPWIRE_INTEROP_DIR`.
pub fn interop_dir() -> PathBuf {
    install_dir("MCPWIRE_INTEROP_DIR", "interop")
}

/// What tests/deploy/install.sh installs: target/deploy/, or `MCPWIRE_DEPLOY_DIR`.
pub fn deploy_dir() -> PathBuf {
    install_dir("MCPWIRE_DEPLOY_DIR", "deploy")
}

/// `var` when it is set and not empty (as the installers' `${var:-…}` reads it), otherwise
/// `name` under target/ of the workspace.
fn install_dir(var: &str, name: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target").join(name),
    }
}
