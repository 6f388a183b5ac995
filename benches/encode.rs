//! Encoder throughput by message kind, against `serde_json::to_writer` of the same message, all
//! measured in the same run.
//!
//! Each message kind is written three ways, one frame per iteration, into a buffer reused across
//! iterations (cleared, capacity kept), with its `\n`:
//! - `mcpwire_json`: [`Outgoing::write`] into a `BytesMut` with a typed payload, [`Json`]`(&T)`,
//!   serialised by serde as it is written.
//! - `mcpwire_raw`: the same with the payload already serialised, [`RawJson`] (what a proxy or a
//!   handler that returns pre-encoded JSON writes).
//! - `serde_json_to_writer`: the whole message as a serde enum of structs, as peers define it
//!   (untagged, `jsonrpc` a field, `params` skipped when absent), `serde_json::to_writer` into a
//!   reused `Vec<u8>` followed by a pushed `\n`, as peers write NDJSON.
//!
//! Every variant is checked once to produce the same JSON (both parsed and compared as
//! `serde_json::Value`). Allocations per frame, counted outside the timing with a counting
//! wrapper around the global allocator, are printed before the timings.

use std::hint::black_box;
use std::sync::atomic::Ordering;

use bytes::BytesMut;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcpwire::{ErrorCode, Id, Json, Outgoing, Payload, RawJson};
use serde::Serialize;

mod common;

use common::{ALLOCATIONS, COUNTING};

/// Allocations per call of `f`, averaged over `runs` calls after one untimed call.
fn allocations_per_call(runs: u64, mut f: impl FnMut()) -> f64 {
    f();
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    for _ in 0..runs {
        f();
    }
    COUNTING.store(false, Ordering::Relaxed);
    ALLOCATIONS.load(Ordering::Relaxed) as f64 / runs as f64
}

// ---- The payloads, typed as a host would type them. ----

#[derive(Serialize)]
struct CallParams<'a> {
    name: &'a str,
    arguments: EchoArgs<'a>,
}

#[derive(Serialize)]
struct EchoArgs<'a> {
    text: &'a str,
    count: u32,
}

#[derive(Serialize)]
struct ProgressParams<'a> {
    #[serde(rename = "progressToken")]
    progress_token: &'a str,
    progress: f64,
    total: f64,
    message: &'a str,
}

#[derive(Serialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct ToolResult<'a> {
    content: [Block<'a>; 1],
    #[serde(rename = "isError")]
    is_error: bool,
}

#[derive(Serialize)]
struct UnknownTool<'a> {
    tool: &'a str,
    available: [&'a str; 2],
}

// ---- The whole message as a serde_json-based peer defines it. ----

#[derive(Serialize)]
#[serde(untagged)]
enum PeerMessage<'a, P> {
    Request {
        jsonrpc: &'static str,
        id: i64,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<P>,
    },
    Notification {
        jsonrpc: &'static str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<P>,
    },
    Response {
        jsonrpc: &'static str,
        id: i64,
        result: P,
    },
    Error {
        jsonrpc: &'static str,
        id: i64,
        error: PeerError<'a, P>,
    },
}

#[derive(Serialize)]
struct PeerError<'a, P> {
    code: i64,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<P>,
}

/// About 4 KiB of tool output that needs escaping (quotes, backslashes, tabs, line breaks, a
/// control character) and holds non-ASCII text (accents, CJK, an emoji).
fn tool_output(len: usize) -> String {
    let line = "Résumé of \"run 42\":\tpath C:\\tmp\\naïve.txt — 日本語のテキスト ✓ 🚀 \u{1}ok\r\n";
    let mut s = line.repeat(len / line.len() + 1);
    let mut end = len;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

/// One message kind written the three ways.
struct Case<'a, P: Serialize> {
    name: &'static str,
    typed: Outgoing<'a, Json<'a, P>>,
    raw: Outgoing<'a, RawJson<'a>>,
    peer: PeerMessage<'a, &'a P>,
}

fn run_case<P: Serialize>(c: &mut Criterion, case: &Case<'_, P>) {
    let mut typed = BytesMut::with_capacity(1 << 16);
    let mut raw = BytesMut::with_capacity(1 << 16);
    let mut peer: Vec<u8> = Vec::with_capacity(1 << 16);

    // Once: the same JSON every way, one line each.
    case.typed.write(&mut typed).unwrap();
    serde_json::to_writer(&mut peer, &case.peer).unwrap();
    peer.push(b'\n');
    let expected: serde_json::Value = serde_json::from_slice(&peer).unwrap();
    case.raw.write(&mut raw).unwrap();
    let outputs = [("mcpwire_json", &typed), ("mcpwire_raw", &raw)];
    for (who, out) in &outputs {
        assert_eq!(out.last(), Some(&b'\n'), "{who}");
        assert_eq!(memchr::memchr_iter(b'\n', out).count(), 1, "{who}: one line");
        let value: serde_json::Value = serde_json::from_slice(out).unwrap();
        assert_eq!(value, expected, "{}: {who} and serde_json differ", case.name);
    }
    let identical = outputs.iter().all(|(_, out)| out[..] == peer[..]);

    let mut allocations = format!("encode/{}: {} B", case.name, peer.len());
    if !identical {
        allocations.push_str(" (equivalent JSON, not byte-identical)");
    }
    let typed_allocs = allocations_per_call(1000, || {
        typed.clear();
        case.typed.write(&mut typed).unwrap();
    });
    let raw_allocs = allocations_per_call(1000, || {
        raw.clear();
        case.raw.write(&mut raw).unwrap();
    });
    let peer_allocs = allocations_per_call(1000, || {
        peer.clear();
        serde_json::to_writer(&mut peer, &case.peer).unwrap();
        peer.push(b'\n');
    });
    allocations.push_str(&format!(
        "; allocations/frame: mcpwire_json {typed_allocs:.2}, mcpwire_raw {raw_allocs:.2}, \
         serde_json_to_writer {peer_allocs:.2}"
    ));
    println!("{allocations}");

    let mut group = c.benchmark_group(format!("encode/{}", case.name));
    group.throughput(Throughput::Bytes(peer.len() as u64));
    group.bench_function("mcpwire_json", |b| {
        b.iter(|| {
            typed.clear();
            black_box(&case.typed).write(&mut typed).unwrap();
            black_box(&typed);
        });
    });
    group.bench_function("mcpwire_raw", |b| {
        b.iter(|| {
            raw.clear();
            black_box(&case.raw).write(&mut raw).unwrap();
            black_box(&raw);
        });
    });
    group.bench_function("serde_json_to_writer", |b| {
        b.iter(|| {
            peer.clear();
            serde_json::to_writer(&mut peer, black_box(&case.peer)).unwrap();
            peer.push(b'\n');
            black_box(&peer);
        });
    });
    group.finish();
}

/// The payload's JSON text, for the `RawJson` variant.
fn to_json<P: Serialize>(payload: &P) -> String {
    let mut out = BytesMut::new();
    Json(payload).write_json(&mut out).unwrap();
    String::from_utf8(out.to_vec()).unwrap()
}

fn encode(c: &mut Criterion) {
    // A request: tools/call with small params.
    let call = CallParams { name: "echo", arguments: EchoArgs { text: "hello world", count: 3 } };
    let call_json = to_json(&call);
    run_case(
        c,
        &Case {
            name: "request_tools_call",
            typed: Outgoing::Request {
                id: Id::Num(42),
                method: "tools/call",
                params: Some(Json(&call)),
            },
            raw: Outgoing::Request {
                id: Id::Num(42),
                method: "tools/call",
                params: Some(RawJson::new(&call_json)),
            },
            peer: PeerMessage::Request {
                jsonrpc: "2.0",
                id: 42,
                method: "tools/call",
                params: Some(&call),
            },
        },
    );

    // A notification: progress.
    let progress = ProgressParams {
        progress_token: "tok-17",
        progress: 50.0,
        total: 100.0,
        message: "Halfway there",
    };
    let progress_json = to_json(&progress);
    run_case(
        c,
        &Case {
            name: "notification_progress",
            typed: Outgoing::Notification {
                method: "notifications/progress",
                params: Some(Json(&progress)),
            },
            raw: Outgoing::Notification {
                method: "notifications/progress",
                params: Some(RawJson::new(&progress_json)),
            },
            peer: PeerMessage::Notification {
                jsonrpc: "2.0",
                method: "notifications/progress",
                params: Some(&progress),
            },
        },
    );

    // A small success response: a tool result of one short text block.
    let small =
        ToolResult { content: [Block { kind: "text", text: "hello world" }], is_error: false };
    let small_json = to_json(&small);
    run_case(
        c,
        &Case {
            name: "response_small",
            typed: Outgoing::Result { id: Id::Num(7), result: Json(&small) },
            raw: Outgoing::Result { id: Id::Num(7), result: RawJson::new(&small_json) },
            peer: PeerMessage::Response { jsonrpc: "2.0", id: 7, result: &small },
        },
    );

    // A 4 KiB tool result with escapes and non-ASCII text.
    let text = tool_output(4096);
    let large = ToolResult { content: [Block { kind: "text", text: &text }], is_error: false };
    let large_json = to_json(&large);
    run_case(
        c,
        &Case {
            name: "response_4k_escaped_utf8",
            typed: Outgoing::Result { id: Id::Num(8), result: Json(&large) },
            raw: Outgoing::Result { id: Id::Num(8), result: RawJson::new(&large_json) },
            peer: PeerMessage::Response { jsonrpc: "2.0", id: 8, result: &large },
        },
    );

    // An error response with data.
    let data = UnknownTool { tool: "nope", available: ["echo", "sleep"] };
    let data_json = to_json(&data);
    let message = "Unknown tool: \"nope\"";
    run_case(
        c,
        &Case {
            name: "error_with_data",
            typed: Outgoing::Error {
                id: Id::Num(9),
                code: ErrorCode::INVALID_PARAMS,
                message,
                data: Some(Json(&data)),
            },
            raw: Outgoing::Error {
                id: Id::Num(9),
                code: ErrorCode::INVALID_PARAMS,
                message,
                data: Some(RawJson::new(&data_json)),
            },
            peer: PeerMessage::Error {
                jsonrpc: "2.0",
                id: 9,
                error: PeerError { code: -32602, message, data: Some(&data) },
            },
        },
    );
}

criterion_group!(benches, encode);
criterion_main!(benches);
