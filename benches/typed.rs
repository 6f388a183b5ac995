//! The typed layer (`mcpwire::mcp::types`) against rmcp's typed messages, in the same groups.
//!
//! | group / function | what one iteration does |
//! |---|---|
//! | `T_decode_tools_call/mcpwire` | `FrameParser::parse` of a `tools/call` line, then `CallToolParams::of` (the member scanner over the validated frame) and reads of `name` and `arguments` |
//! | `T_decode_tools_call/mcpwire_frame_only` | the parse and classification alone (`FrameParser::parse`, `method()`): the floor under the typed read |
//! | `T_decode_tools_call/mcpwire_serde` | the same parse, then `Frame::params_as::<CallToolParams>()` (serde) |
//! | `T_decode_tools_call/rmcp_typed` | `serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>`, then a match down to `CallToolRequestParams` and reads of `name` and `arguments` |
//! | `T_decode_tools_call/serde_json_value` | `serde_json::from_slice::<Value>` (no typing at all) |
//! | `T_encode_call_tool_result/mcpwire` | a `CallToolResult` of one text block, built and written into a reused `BytesMut` as a whole JSON-RPC response |
//! | `T_encode_call_tool_result/rmcp` | rmcp's `CallToolResult::success(vec![Content::text(..)])` with `serde_json::to_writer` into a reused `Vec` (the result alone) |
//!
//! Run: `cargo bench --bench typed`. Instruction counts of one function (`mcpwire`,
//! `mcpwire_frame_only`, `rmcp_typed`): `MCPWIRE_ITERS=N` under callgrind, as `common/counted.rs` says.

use std::hint::black_box;
use std::time::Duration;

use bytes::BytesMut;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use mcpwire::mcp::types::{CallToolParams, CallToolResult};
use mcpwire::{FrameParser, Id, Json, Limits, Outgoing};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};

#[path = "common/counted.rs"]
mod counted;
use counted::counted;

const LINE: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello, world: a short tool call as an agent sends it","count":3},"_meta":{"progressToken":7}}}"#;

const TEXT: &str = "The quick brown fox jumps over the lazy dog; a typical short tool answer.";

fn decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("T_decode_tools_call");
    g.throughput(Throughput::Bytes(LINE.len() as u64));
    let mut p = FrameParser::new(Limits::default());
    let input = || BytesMut::from(LINE);
    {
        let mut typed = |line| {
            let f = p.parse(line);
            let call = CallToolParams::of(&f.message().unwrap()).unwrap();
            black_box((call.name.len(), call.arguments.as_ref().map(|a| a.get().len())));
            drop(call);
            f
        };
        if !counted("mcpwire", input, &mut typed) {
            g.bench_function("mcpwire", |b| {
                b.iter_batched(input, &mut typed, BatchSize::SmallInput);
            });
        }
    }
    {
        let mut frame_only = |line| {
            let f = p.parse(line);
            black_box(f.method().map(str::len));
            f
        };
        if !counted("mcpwire_frame_only", input, &mut frame_only) {
            g.bench_function("mcpwire_frame_only", |b| {
                b.iter_batched(input, &mut frame_only, BatchSize::SmallInput);
            });
        }
    }
    g.bench_function("mcpwire_serde", |b| {
        b.iter_batched(
            || BytesMut::from(LINE),
            |line| {
                let f = p.parse(line);
                let call: CallToolParams<'_> = f.params_as().unwrap();
                black_box((call.name.len(), call.arguments.as_ref().map(|a| a.get().len())));
                drop(call);
                f
            },
            BatchSize::SmallInput,
        );
    });
    let rmcp_typed = |line: &[u8]| {
        let m: ClientJsonRpcMessage = serde_json::from_slice(line).unwrap();
        match m {
            JsonRpcMessage::Request(r) => match r.request {
                ClientRequest::CallToolRequest(call) => {
                    black_box((call.params.name.len(), call.params.arguments.map(|a| a.len())));
                }
                _ => unreachable!("a tools/call"),
            },
            _ => unreachable!("a request"),
        }
    };
    if counted("rmcp_typed", || LINE.as_bytes(), rmcp_typed) {
        return;
    }
    g.bench_function("rmcp_typed", |b| b.iter(|| rmcp_typed(black_box(LINE.as_bytes()))));
    g.bench_function("serde_json_value", |b| {
        b.iter(|| {
            black_box(
                serde_json::from_slice::<serde_json::Value>(black_box(LINE.as_bytes())).unwrap(),
            )
        });
    });
    g.finish();
}

fn encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("T_encode_call_tool_result");
    let mut buf = BytesMut::with_capacity(4096);
    g.bench_function("mcpwire", |b| {
        b.iter(|| {
            buf.clear();
            let result = CallToolResult::text(black_box(TEXT));
            let out = Outgoing::Result { id: Id::Num(42), result: Json(&result) };
            out.write(&mut buf).unwrap();
            black_box(buf.len())
        });
    });
    let mut vec = Vec::with_capacity(4096);
    g.bench_function("rmcp", |b| {
        b.iter(|| {
            vec.clear();
            let result =
                rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(
                    black_box(TEXT),
                )]);
            serde_json::to_writer(&mut vec, &result).unwrap();
            black_box(vec.len())
        });
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = decode, encode
}
criterion_main!(benches);
