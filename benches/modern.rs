//! The modern era's per-request reading: a 2026-07-28 `tools/call` as it arrives over
//! Streamable HTTP, decoded, its `_meta` envelope validated, and its headers checked against
//! the body (what a server, or a gateway that routes on the headers, does on every POST);
//! with the baselines measured in the same group.
//!
//! | function | what one iteration does |
//! |---|---|
//! | `decode` | `FrameParser::parse` of the body, then `kind()`, `id()`, `method()` |
//! | `decode_envelope` | the same, then `RequestParams::of` and `check_envelope` |
//! | `decode_headers` | the same as `decode`, then `mcp::headers::check` (which reads the envelope too) with the tool's `x-mcp-header` arguments |
//! | `headers_only` | `mcp::headers::check` on a frame decoded beforehand |
//! | `serde_json_value` | `serde_json::from_slice::<Value>` of the body: a parse with no check at all |
//! | `floor_memcpy` | a copy of the body |
//!
//! Run: `cargo bench --bench modern`. Instruction counts of one function (`decode`,
//! `decode_envelope`): `MCPWIRE_ITERS=N` under callgrind, as `common/counted.rs` says.

use std::hint::black_box;
use std::time::Duration;

use bytes::BytesMut;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue};
use mcpwire::mcp::annotations::ToolHeaders;
use mcpwire::mcp::headers;
use mcpwire::mcp::meta::{RequestParams, check_envelope};
use mcpwire::{FrameParser, Kind, Limits};

#[path = "common/counted.rs"]
mod counted;
use counted::counted;

const BODY: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"route","arguments":{"region":"us-west1","shard":7,"message":"hello from the load balancer"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}}}"#;

const TOOLS: &str = r#"{"tools":[{"name":"route","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"shard":{"type":"integer","x-mcp-header":"Shard"},"message":{"type":"string"}}}}]}"#;

const VERSIONS: [&str; 1] = ["2026-07-28"];

fn header_map() -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "route"),
        ("mcp-param-region", "us-west1"),
        ("mcp-param-shard", "7"),
        ("host", "127.0.0.1:8080"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    h
}

fn modern(c: &mut Criterion) {
    let (tools, _) = ToolHeaders::from_tools_list(TOOLS).unwrap();
    let h = header_map();
    let mut g = c.benchmark_group("H_modern_tools_call");
    g.throughput(Throughput::Bytes(BODY.len() as u64));
    let input = || BytesMut::from(BODY);
    let mut p = FrameParser::new(Limits::default());
    {
        let mut decode = |body| {
            let f = p.parse(body);
            assert_eq!(f.kind(), Kind::Request);
            black_box((f.id(), f.method().map(str::len)));
            f
        };
        if !counted("decode", input, &mut decode) {
            g.bench_function("decode", |b| {
                b.iter_batched(input, &mut decode, BatchSize::SmallInput)
            });
        }
    }
    {
        let mut decode_envelope = |body| {
            let f = p.parse(body);
            let msg = f.message().unwrap();
            let params = RequestParams::of(&msg).unwrap();
            black_box(check_envelope(&params, &VERSIONS).unwrap().version.len());
            f
        };
        if counted("decode_envelope", input, &mut decode_envelope) {
            return;
        }
        g.bench_function("decode_envelope", |b| {
            b.iter_batched(input, &mut decode_envelope, BatchSize::SmallInput);
        });
    }
    g.bench_function("decode_headers", |b| {
        b.iter_batched(
            input,
            |body| {
                let f = p.parse(body);
                let msg = f.message().unwrap();
                let e = headers::check(&h, &msg, &VERSIONS, Some(&tools)).unwrap();
                black_box(e.version.len());
                f
            },
            BatchSize::SmallInput,
        );
    });
    let frame = p.parse(input());
    g.bench_function("headers_only", |b| {
        b.iter(|| {
            let msg = frame.message().unwrap();
            black_box(headers::check(&h, &msg, &VERSIONS, Some(&tools)).unwrap().version.len())
        });
    });
    g.bench_function("serde_json_value", |b| {
        b.iter(|| black_box(serde_json::from_slice::<serde_json::Value>(BODY.as_bytes()).unwrap()));
    });
    let mut copy = vec![0u8; BODY.len()];
    g.bench_function("floor_memcpy", |b| {
        b.iter(|| {
            copy.copy_from_slice(black_box(BODY.as_bytes()));
            black_box(&copy);
        });
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .without_plots();
    targets = modern
}
criterion_main!(benches);
