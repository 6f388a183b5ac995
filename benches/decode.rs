//! Decoder throughput by workload, against serde_json baselines and the memchr / memcpy floors,
//! all measured in the same run.
//!
//! Each workload is a stream of one kind of frame, about 64 KiB long, decoded whole: that is what
//! a reader sees when a peer writes faster than it is read. Parsing mutates nothing in the input,
//! but decoding consumes the buffer, so each iteration gets a fresh copy made outside the timing.

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use mcpwire::{Id, JsonRpcCodec, Kind, Outgoing, RawJson};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio_util::codec::Decoder;

/// What a typical serde_json-based peer decodes each line into: an untagged enum of owned values.
#[allow(dead_code, reason = "fields exist to be deserialised, as a peer's would")]
#[derive(Deserialize)]
#[serde(untagged)]
enum PeerMessage {
    Request {
        jsonrpc: String,
        id: serde_json::Value,
        method: String,
        params: Option<serde_json::Value>,
    },
    Notification {
        jsonrpc: String,
        method: String,
        params: Option<serde_json::Value>,
    },
    Response {
        jsonrpc: String,
        id: serde_json::Value,
        result: serde_json::Value,
    },
    Error {
        jsonrpc: String,
        id: serde_json::Value,
        error: PeerError,
    },
}

#[allow(dead_code, reason = "fields exist to be deserialised, as a peer's would")]
#[derive(Deserialize)]
struct PeerError {
    code: i64,
    message: String,
    data: Option<serde_json::Value>,
}

/// The leanest serde_json envelope: borrowed strings, payloads left as raw text.
#[allow(dead_code, reason = "fields exist to be deserialised")]
#[derive(Deserialize)]
struct LeanEnvelope<'a> {
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<&'a str>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

fn escaped_text(len: usize) -> String {
    let line = r#"Line of tool output with \"quotes\", a tab\tand a path C:\\tmp\\x.\n"#;
    line.repeat(len / line.len() + 1)[..len].trim_end_matches('\\').to_owned()
}

fn workloads() -> Vec<(&'static str, String)> {
    let tool_call = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world","count":3}}}"#;
    let result_4k = format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{}"}}],"isError":false}}}}"#,
        escaped_text(4096)
    );
    let result_64k = format!(
        r#"{{"jsonrpc":"2.0","id":8,"result":{{"content":[{{"type":"text","text":"{}"}}],"isError":false}}}}"#,
        escaped_text(65536)
    );
    let batch = format!("[{}]", vec![tool_call; 16].join(","));
    let deep = format!(
        r#"{{"jsonrpc":"2.0","method":"deep","params":{}1{}}}"#,
        "[".repeat(126),
        "]".repeat(126)
    );
    vec![
        ("tiny_notification", r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned()),
        ("tool_call", tool_call.to_owned()),
        ("error_response", r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Unknown tool: \"nope\"","data":{"tool":"nope"}}}"#.to_owned()),
        ("result_4k_escaped", result_4k),
        ("result_64k_escaped", result_64k),
        ("batch_16", batch),
        ("deep_126", deep),
    ]
}

fn stream_of(frame: &str) -> Vec<u8> {
    let copies = (65536 / (frame.len() + 1)).max(4);
    let mut out = Vec::with_capacity(copies * (frame.len() + 1));
    for _ in 0..copies {
        out.extend_from_slice(frame.as_bytes());
        out.push(b'\n');
    }
    out
}

/// Splits `stream` at newlines and deserialises each line as `T`, or as `Vec<T>` for a batch, the
/// way a serde_json-based peer reads NDJSON; returns how many lines succeeded.
fn serde_json_lines<'a, T: Deserialize<'a>>(stream: &'a [u8]) -> usize {
    let mut start = 0;
    let mut ok = 0;
    for nl in memchr::memchr_iter(b'\n', stream) {
        let line = &stream[start..nl];
        start = nl + 1;
        ok += usize::from(match line.first() {
            Some(b'[') => serde_json::from_slice::<Vec<T>>(line).is_ok(),
            _ => serde_json::from_slice::<T>(line).is_ok(),
        });
    }
    ok
}

/// The parser's own cost: one simd-json tape per line, with no classification, no index and no
/// frame. In place where 64 bytes follow the line, else from a padded copy, as the codec does.
fn simd_json_lines(
    stream: &mut [u8],
    buffers: &mut simd_json::Buffers,
    tape: &mut Option<simd_json::Tape<'static>>,
    scratch: &mut Vec<u8>,
) -> usize {
    let mut start = 0;
    let mut nodes = 0;
    while let Some(rel) = memchr::memchr(b'\n', &stream[start..]) {
        let len = rel;
        let mut t = tape.take().unwrap().reset();
        let input: &mut [u8] = if stream.len() - (start + len) >= simd_json::INPUT_PADDING {
            &mut stream[start..]
        } else {
            scratch.clear();
            scratch.extend_from_slice(&stream[start..start + len]);
            scratch.resize(len + simd_json::INPUT_PADDING, 0);
            scratch
        };
        simd_json::fill_tape_padded(input, len, buffers, &mut t).unwrap();
        nodes += t.0.len();
        *tape = Some(t.reset());
        start += len + 1;
    }
    nodes
}

fn decode(c: &mut Criterion) {
    for (name, frame) in workloads() {
        serde_json::from_str::<serde_json::Value>(&frame).expect(name);
        let stream = stream_of(&frame);
        let mut group = c.benchmark_group(format!("decode/{name}"));
        group.throughput(Throughput::Bytes(stream.len() as u64));

        let mut codec = JsonRpcCodec::new();
        group.bench_function("mcpwire", |b| {
            b.iter_batched(
                || BytesMut::from(&stream[..]),
                |mut buf| {
                    let mut n = 0usize;
                    while let Some(frame) = codec.decode(&mut buf).unwrap() {
                        assert_ne!(frame.kind(), Kind::Invalid);
                        n += usize::from(black_box(frame.method()).is_some());
                    }
                    n
                },
                BatchSize::LargeInput,
            );
        });
        let lines = memchr::memchr_iter(b'\n', &stream).count();
        assert_eq!(serde_json_lines::<PeerMessage>(&stream), lines, "baseline decodes every frame");
        assert_eq!(
            serde_json_lines::<LeanEnvelope<'_>>(&stream),
            lines,
            "baseline decodes every frame"
        );
        group.bench_function("serde_json_untagged_enum", |b| {
            b.iter(|| serde_json_lines::<PeerMessage>(black_box(&stream)));
        });
        group.bench_function("serde_json_borrowed_raw_envelope", |b| {
            b.iter(|| serde_json_lines::<LeanEnvelope<'_>>(black_box(&stream)));
        });
        let mut buffers = simd_json::Buffers::default();
        let mut tape = Some(simd_json::Tape::null());
        let mut scratch = Vec::new();
        group.bench_function("floor_simd_json_tape_only", |b| {
            b.iter_batched(
                || stream.clone(),
                |mut input| simd_json_lines(&mut input, &mut buffers, &mut tape, &mut scratch),
                BatchSize::LargeInput,
            );
        });
        group.bench_function("floor_memchr_newlines", |b| {
            b.iter(|| memchr::memchr_iter(b'\n', black_box(&stream)).count());
        });
        let mut copy = vec![0u8; stream.len()];
        group.bench_function("floor_memcpy", |b| {
            b.iter(|| {
                copy.copy_from_slice(black_box(&stream));
                black_box(&copy);
            });
        });
        group.finish();
    }
}

fn encode(c: &mut Criterion) {
    let text = escaped_text(4096);
    let result = serde_json::json!({"content": [{"type": "text", "text": text}], "isError": false});
    let raw_result = serde_json::to_string(&result).unwrap();
    let mut group = c.benchmark_group("encode/result_4k_escaped");
    group.throughput(Throughput::Bytes(raw_result.len() as u64));
    let mut out = BytesMut::with_capacity(1 << 16);
    group.bench_function("mcpwire_raw_payload", |b| {
        b.iter(|| {
            out.clear();
            Outgoing::Result { id: Id::Num(7), result: RawJson::new(&raw_result) }
                .write(&mut out)
                .unwrap();
        });
    });
    group.bench_function("mcpwire_serialized_payload", |b| {
        b.iter(|| {
            out.clear();
            Outgoing::Result { id: Id::Num(7), result: mcpwire::Json(&result) }
                .write(&mut out)
                .unwrap();
        });
    });
    #[derive(serde::Serialize)]
    struct PeerResponse<'a> {
        jsonrpc: &'static str,
        id: i64,
        result: &'a serde_json::Value,
    }
    let mut vec_out = Vec::with_capacity(1 << 16);
    group.bench_function("serde_json_struct", |b| {
        b.iter(|| {
            vec_out.clear();
            serde_json::to_writer(
                &mut vec_out,
                &PeerResponse { jsonrpc: "2.0", id: 7, result: &result },
            )
            .unwrap();
            vec_out.push(b'\n');
        });
    });
    group.finish();
}

criterion_group!(benches, decode, encode);
criterion_main!(benches);
