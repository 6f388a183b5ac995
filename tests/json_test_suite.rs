//! Nicolas Seriot's JSONTestSuite (`test_parsing`, vendored in `tests/data/JSONTestSuite/`), each
//! file fed to the codec as frame bytes.
//!
//! - `n_` (must be rejected): -32700.
//! - `y_` (must be accepted): never -32700 (most are not JSON-RPC messages, so -32600 is fine).
//! - `i_` (implementation-defined): anything but a panic.
//!
//! NDJSON splits at every `\n`, and a few files hold raw newlines, so each file is checked three
//! ways:
//!
//! 1. **Body**: the whole file through [`FrameParser`], which parses an already-delimited body
//!    with the codec's rules and may contain raw newlines. Every file gets the strict check,
//!    the blank ones included (an empty body is not JSON: -32700).
//! 2. **Framed as is** through [`JsonRpcCodec`]: the file's bytes plus a final `\n`. A file
//!    without an inner newline is one frame and gets the strict check. A file that NDJSON splits
//!    into several lines gets the weaker one: an `n_` file yields at least one -32700 frame, and
//!    nothing panics. Files that are empty or hold only whitespace or a byte order mark are
//!    blank lines to NDJSON, which the framing documents as skipped: they must yield no frame.
//! 3. **One line** through [`JsonRpcCodec`]: every raw `\n` replaced by `\r`, then a final
//!    `\n`. The two bytes are interchangeable for JSON validity (both are whitespace between
//!    tokens, both are forbidden raw inside strings, neither occurs inside a multi-byte UTF-8
//!    sequence), so the line is valid JSON exactly when the file is: the strict check again,
//!    through the NDJSON path.
//!
//! Files without a final newline are also decoded as they are (frame ended by end of input),
//! which must give the same frames as with the newline added.

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use mcpwire::{ErrorCode, Frame, FrameParser, JsonRpcCodec, Kind, Limits};

mod common;

const SUITE_DIR: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/JSONTestSuite/test_parsing");

/// Files NDJSON treats as a blank line (empty, whitespace only, a BOM only): skipped, no frame.
const BLANK_LINE_FILES: &[&str] =
    &["n_single_space.json", "n_structure_no_data.json", "n_structure_UTF8_BOM_no_data.json"];

fn suite_files() -> Vec<PathBuf> {
    let dir = Path::new(SUITE_DIR);
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read the JSONTestSuite corpus at {SUITE_DIR}: {e}"));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Decodes `bytes` as a stream (every decodable frame, then end of input), catching panics.
fn decode_all(bytes: &[u8]) -> Result<Vec<Frame>, String> {
    let bytes = bytes.to_vec();
    catching(move || common::decode_chunks(JsonRpcCodec::new(), [&bytes[..]]))
}

/// What `f` returns, or the message of its panic.
fn catching<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Result<T, String> {
    std::panic::catch_unwind(f).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into())
    })
}

fn is_parse_error(f: &Frame) -> bool {
    f.decode_error().map(|e| e.code()) == Some(ErrorCode::PARSE_ERROR)
}

fn describe(frames: &[Frame]) -> String {
    frames
        .iter()
        .map(|f| match f.decode_error() {
            Some(e) => format!("{:?}", e),
            None => f.kind().to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses `bytes` as one delimited body, catching panics.
fn parse_body(bytes: &[u8]) -> Result<Frame, String> {
    let bytes = bytes.to_vec();
    catching(move || FrameParser::new(Limits::default()).parse(BytesMut::from(&bytes[..])))
}

/// Checks one file's frames against its prefix; `strict` when the file is known to be one line.
fn check(name: &str, frames: &[Frame], strict: bool, blank: bool) -> Result<(), String> {
    if blank {
        return match frames {
            [] => Ok(()),
            _ => Err(format!("a blank line should be skipped, got [{}]", describe(frames))),
        };
    }
    if strict && frames.len() != 1 {
        return Err(format!("expected exactly one frame, got [{}]", describe(frames)));
    }
    let bad = match &name[..2] {
        "n_" if strict => !is_parse_error(&frames[0]),
        "n_" => !frames.iter().any(is_parse_error),
        "y_" if strict => is_parse_error(&frames[0]),
        // A y_ file split into lines by NDJSON is not one JSON text any more: only panics count.
        "y_" | "i_" => false,
        _ => return Err("unexpected file prefix".into()),
    };
    if bad {
        let want = if name.starts_with("n_") { "-32700" } else { "not -32700" };
        return Err(format!("expected {want}, got [{}]", describe(frames)));
    }
    // Kind sanity: a frame that is not invalid has no decode error, and the reverse.
    for f in frames {
        if (f.kind() == Kind::Invalid) != f.decode_error().is_some() {
            return Err(format!("kind and decode error disagree: {f:?}"));
        }
    }
    Ok(())
}

#[test]
fn json_test_suite_n_files_are_parse_errors_y_files_are_not_and_i_files_do_not_panic() {
    let files = suite_files();
    let count = |p: &str| {
        files.iter().filter(|f| f.file_name().unwrap().to_str().unwrap().starts_with(p)).count()
    };
    let (n, y, i) = (count("n_"), count("y_"), count("i_"));
    // The vendored suite (tests/data/README.md) has 188 n_, 95 y_ and 35 i_ files.
    assert_eq!(
        (n, y, i),
        (188, 95, 35),
        "JSONTestSuite at {SUITE_DIR}: {n} n_, {y} y_, {i} i_ files, not the vendored 188, 95, 35"
    );
    for blank in BLANK_LINE_FILES {
        assert!(files.iter().any(|f| f.ends_with(blank)), "{blank} is missing from the corpus");
    }

    let mut failures = Vec::new();
    let mut split_files = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {name}: {e}"));
        let blank = BLANK_LINE_FILES.contains(&name.as_str());

        // 1. The whole file as one delimited body; a shared body (`parse_bytes`, read only, and
        // with the thread's kept parser) reads exactly as one the parser may write.
        match parse_body(&bytes) {
            Err(p) => failures.push(format!("{name} (body): panicked: {p}")),
            Ok(frame) => {
                if let Err(e) = check(&name, std::slice::from_ref(&frame), true, false) {
                    failures.push(format!("{name} (body): {e}"));
                }
                let shared = Bytes::from(bytes.clone());
                let a = FrameParser::new(Limits::default()).parse_bytes(shared.clone());
                let b = FrameParser::parse_bytes_with(Limits::default(), shared.clone());
                for (how, other) in [("parse_bytes", a), ("parse_bytes_with", b)] {
                    if view(&other) != view(&frame) {
                        failures.push(format!("{name} ({how}): {other:?} against {frame:?}"));
                    }
                }
                if shared[..] != bytes[..] {
                    failures.push(format!("{name} (parse_bytes): the shared body was written"));
                }
            }
        }

        // 2. Framed as is, with a final newline when the file has none.
        let mut framed = bytes.clone();
        if framed.last() != Some(&b'\n') {
            framed.push(b'\n');
        }
        let one_line = !framed[..framed.len() - 1].contains(&b'\n');
        if !one_line {
            split_files.push(name.clone());
        }
        match decode_all(&framed) {
            Err(p) => failures.push(format!("{name} (framed): panicked: {p}")),
            Ok(frames) => {
                if let Err(e) = check(&name, &frames, one_line, blank) {
                    failures.push(format!("{name} (framed): {e}"));
                }
            }
        }

        // 3. One line: raw newlines turned into `\r`, which JSON treats the same.
        let mut whole: Vec<u8> =
            bytes.iter().map(|&b| if b == b'\n' { b'\r' } else { b }).collect();
        whole.push(b'\n');
        match decode_all(&whole) {
            Err(p) => failures.push(format!("{name} (one line): panicked: {p}")),
            Ok(frames) => {
                if let Err(e) = check(&name, &frames, true, blank) {
                    failures.push(format!("{name} (one line): {e}"));
                }
            }
        }

        // 4. Without a final newline at all: the same frames must come out at end of input.
        if bytes.last() != Some(&b'\n') {
            match (decode_all(&bytes), decode_all(&framed)) {
                (Ok(a), Ok(b)) if a == b => {}
                (Ok(a), Ok(b)) => failures.push(format!(
                    "{name} (no final newline): [{}] differs from [{}]",
                    describe(&a),
                    describe(&b)
                )),
                (Err(p), _) | (_, Err(p)) => {
                    failures.push(format!("{name} (no final newline): panicked: {p}"))
                }
            }
        }
    }
    // The split path must really have been exercised: the suite has files with inner newlines.
    assert!(
        split_files.len() >= 4,
        "expected several files with inner newlines, found {split_files:?}"
    );
    assert!(
        failures.is_empty(),
        "{} JSONTestSuite failure(s) of {} files:\n  {}",
        failures.len(),
        files.len(),
        failures.join("\n  ")
    );
}

/// What a frame reads as: its `Debug`, and each message's id, method, params, result and error
/// as the accessors give them (the text of escaped strings included, which `Debug` leaves out).
fn view(frame: &mcpwire::Frame) -> String {
    let one = |m: mcpwire::Message<'_>| {
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?}",
            m.kind(),
            m.id(),
            m.method(),
            m.params().map(|p| p.get().to_owned()),
            m.result().map(|r| r.get().to_owned()),
            m.error()
        )
    };
    let messages: Vec<String> = match frame.batch() {
        Some(b) => b.map(one).collect(),
        None => frame.message().map(one).into_iter().collect(),
    };
    format!("{frame:?} {:?} {messages:?}", frame.as_bytes())
}
