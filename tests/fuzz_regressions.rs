//! Replays the fuzz regression corpus, `fuzz/regressions/<target>/`, on the stable toolchain:
//! each folder through its target's own checks, so a file fails here exactly when it made the
//! fuzzer crash.
//!
//! - `frame/`: one body through `FrameParser` under several limits (`body::check_body`).
//! - `stream/`: the first byte chooses the chunk sizes, the rest is an NDJSON stream fed to the
//!   codec (`feed::check_stream`); the stream is also fed whole and one byte at a time.
//! - `differential/`: one body compared with the serde_json reference classifier
//!   (`reference::check_differential`).
//! - `roundtrip/`: bytes decoded by `arbitrary` into messages, encoded and decoded back
//!   (`generate::check_roundtrip`).
//! - `mux/`: bytes decoded into operations on the in-flight tables, checked against the model
//!   (`mux_model::check_mux`).
//! - `content_length/`: the first byte chooses the chunk sizes, the rest is a stream fed to the
//!   codec in Content-Length framing and in `Framing::Detect`
//!   (`content_length::check_content_length`); also fed whole and one byte at a time.
//! - `headers/`: a POST's header lines, a blank line, then its body, through the 2026-07-28
//!   header validation (`headers::check_headers`).
//! - `sse/`: the first byte chooses the chunk sizes, the rest is an event stream fed to
//!   `SseDecoder` (`sse::check_sse`); also fed whole and one byte at a time.
//!
//! Body and stream files also go through the stream checks whole and one byte at a time. The
//! checks are the fuzz crate's own source, included by path, so a fix to either is a fix to both.
//! A folder that is missing or empty, or that no test here replays, fails.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use arbitrary::Unstructured;
use bytes::BytesMut;
use mcpwire::{FrameParser, JsonRpcCodec, Kind, Limits};
use tokio_util::codec::{Decoder, Encoder};

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/checks.rs"]
mod checks;

#[path = "../fuzz/src/body.rs"]
mod body;

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/feed.rs"]
mod feed;

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/reference.rs"]
mod reference;

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/generate.rs"]
mod generate;

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/mux_model.rs"]
mod mux_model;

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/content_length.rs"]
mod content_length;

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/sse.rs"]
mod sse;

#[path = "../fuzz/src/headers.rs"]
mod headers;

#[path = "../fuzz/src/typed.rs"]
mod typed;

#[path = "../fuzz/src/http.rs"]
mod http;

#[path = "../fuzz/src/http_tls.rs"]
mod http_tls;

/// The folders replayed by the tests below.
const TARGETS: [&str; 11] = [
    "frame",
    "stream",
    "differential",
    "roundtrip",
    "mux",
    "content_length",
    "sse",
    "headers",
    "typed",
    "http",
    "http_tls",
];

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
fn replay(target: &str, check: impl Fn(&[u8])) {
    let failed: Vec<String> = files(target)
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
    feed::check_stream_with(input, checks::limits(), || 1);
}

#[test]
fn frame_regressions_hold_as_bodies_and_as_streams() {
    replay("frame", |data| {
        body::check_body(data);
        whole_and_bytewise(data);
    });
}

#[test]
fn stream_regressions_hold_fed_as_fuzzed_and_byte_by_byte() {
    replay("stream", |data| {
        feed::check_stream(data);
        whole_and_bytewise(data.get(1..).unwrap_or_default());
    });
}

#[test]
fn differential_regressions_match_the_reference_and_hold_as_bodies_and_streams() {
    replay("differential", |data| {
        reference::check_differential(data);
        body::check_body(data);
        whole_and_bytewise(data);
    });
}

#[test]
fn roundtrip_regressions_decode_to_what_was_encoded() {
    replay("roundtrip", |data| {
        let msgs = generate::messages(&mut Unstructured::new(data))
            .expect("a roundtrip regression file decodes to messages");
        assert!(!msgs.is_empty(), "a roundtrip regression file holds at least one message");
        generate::check_roundtrip(&msgs);
    });
}

#[test]
fn mux_regressions_match_the_model() {
    replay("mux", |data| {
        let ops = mux_model::ops(&mut Unstructured::new(data))
            .expect("a mux regression file decodes to operations");
        assert!(!ops.is_empty(), "a mux regression file holds at least one operation");
        mux_model::check_mux(data);
    });
}

#[test]
fn content_length_regressions_hold_fed_as_fuzzed_and_byte_by_byte() {
    replay("content_length", |data| {
        content_length::check_content_length(data);
        let input = data.get(1..).unwrap_or_default();
        content_length::check_content_length_with(input, checks::limits(), || 1);
    });
}

#[test]
fn sse_regressions_hold_fed_as_fuzzed_and_byte_by_byte() {
    replay("sse", |data| {
        sse::check_sse(data);
        sse::check_sse_with(data.get(1..).unwrap_or_default(), checks::limits(), || 1);
    });
}

/// Found by the `stream` fuzzer (`stream/forwarded-invalid-frame-becomes-valid`,
/// `frame/forwarded-invalid-body-becomes-valid`): a raw `\r` or `\n` inside a string makes a frame
/// invalid (-32700), and forwarding it must not turn it into a valid message.
#[test]
fn headers_regressions_hold() {
    replay("headers", headers::check_headers);
}

#[test]
fn http_tls_regressions_hold() {
    replay("http_tls", http_tls::check_http_tls);
}

#[test]
fn http_regressions_hold() {
    replay("http", http::check_http);
}

#[test]
fn typed_regressions_hold() {
    replay("typed", typed::check_typed);
}

#[test]
fn a_forwarded_invalid_frame_stays_invalid() {
    let bodies: [&[u8]; 2] = [
        b"{\"jsonrpc\":\"2.0\",\"method\":\"a\rb\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"t\":\"a\nb\"}}",
    ];
    for body in bodies {
        let frame = FrameParser::new(Limits::default()).parse(BytesMut::from(body));
        assert_eq!(frame.kind(), Kind::Invalid, "{frame:?}");
        let mut line = BytesMut::new();
        JsonRpcCodec::new().encode(&frame, &mut line).expect("forwarding cannot fail");
        let forwarded = String::from_utf8_lossy(&line).into_owned();
        let again = JsonRpcCodec::new().decode(&mut line).expect("decode never fails");
        let again = again.expect("one line is one frame");
        assert_eq!(again.kind(), Kind::Invalid, "forwarded as {forwarded:?}: {again:?}");
    }
}

#[test]
fn every_regression_folder_is_replayed() {
    let dirs = std::fs::read_dir(regressions()).unwrap_or_else(|e| {
        panic!("regression corpus {} is missing: {e}", regressions().display())
    });
    for dir in dirs {
        let dir = dir.expect("a readable directory entry").path();
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        assert!(
            !dir.is_dir() || TARGETS.contains(&name.as_str()),
            "no test replays {}",
            dir.display()
        );
    }
    for target in TARGETS {
        assert!(!files(target).is_empty());
    }
}
