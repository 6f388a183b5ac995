//! Replays the fuzz regression corpus, `fuzz/regressions/<target>/`, on the stable toolchain.
//!
//! Every file goes through the `decode_stream` checks: fed whole and one byte at a time, framed as
//! a naive splitter frames it, every frame's accessors, error replies and re-encoding checked. A
//! `decode_stream` file starts with the control byte that chose its chunk sizes, so it is also
//! replayed exactly as the fuzzer ran it. Files under `oracle/` also go through `FrameParser` and
//! are compared with the serde_json reference classifier. The checks are the fuzz crate's own
//! source, included by path, so a fix to either is a fix to both.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/checks.rs"]
mod checks;

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/reference.rs"]
mod reference;

fn regressions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join("regressions")
}

/// The files of `fuzz/regressions/<target>/`; panics when the folder is missing or empty, so a
/// moved or emptied corpus cannot pass silently.
fn files(target: &str) -> Vec<PathBuf> {
    let dir = regressions().join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("regression corpus {} is missing: {e}", dir.display()))
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    assert!(!files.is_empty(), "regression corpus {} is empty", dir.display());
    files.sort();
    files
}

/// Runs `check` on every file, then fails naming every file that failed.
fn replay(files: &[PathBuf], check: impl Fn(&[u8])) {
    let failed: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let data = std::fs::read(path).expect("a readable regression file");
            let outcome = catch_unwind(AssertUnwindSafe(|| check(&data)));
            outcome.is_err().then(|| path.display().to_string())
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} regression file(s) failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

fn whole_and_bytewise(input: &[u8]) {
    checks::check_stream_with(input, checks::limits(), || 1);
}

#[test]
fn decode_stream_regressions_hold_fed_as_fuzzed_and_byte_by_byte() {
    replay(&files("decode_stream"), |data| {
        checks::check_stream(data);
        whole_and_bytewise(data.get(1..).unwrap_or_default());
    });
}

#[test]
fn oracle_regressions_match_the_reference_and_hold_as_streams() {
    replay(&files("oracle"), |data| {
        reference::check_oracle(data);
        whole_and_bytewise(data);
    });
}

#[test]
fn every_other_regression_file_holds_as_a_stream() {
    let dirs = std::fs::read_dir(regressions()).unwrap_or_else(|e| {
        panic!("regression corpus {} is missing: {e}", regressions().display())
    });
    for dir in dirs {
        let dir = dir.expect("a readable directory entry").path();
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if dir.is_dir() && name != "decode_stream" && name != "oracle" {
            replay(&files(&name), whole_and_bytewise);
        }
    }
}
