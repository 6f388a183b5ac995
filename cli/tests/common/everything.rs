//! The workspace's `examples/everything`, built once per test binary into the target folder
//! and profile the tool under test was built in (so `CARGO_TARGET_DIR` and `--release` are
//! followed), for the tests that run it as a real server.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The example's binary, built when this test binary first asks for it.
pub(crate) fn everything() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let bin = PathBuf::from(env!("CARGO_BIN_EXE_mcpwire"));
            let profile_dir = bin.parent().expect("the tool's folder").to_owned();
            let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
            let mut cargo = Command::new(env!("CARGO"));
            cargo.current_dir(&root).args(["build", "--quiet", "-p", "mcpwire"]);
            cargo.args(["--example", "everything", "--target-dir"]);
            cargo.arg(profile_dir.parent().expect("the target folder"));
            if !cfg!(debug_assertions) {
                cargo.arg("--release");
            }
            let out = cargo.output().expect("run cargo build");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let exe = profile_dir.join("examples/everything");
            assert!(exe.exists(), "{} is not there", exe.display());
            exe
        })
        .clone()
}
