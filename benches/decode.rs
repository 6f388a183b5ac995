//! Decode + classify, by workload, against the peers' own decoders and the physical floors, all
//! measured in the same run and in the same criterion group.
//!
//! Workloads (each one frame, except `stream_10k`):
//!
//! | group | frame | direction |
//! |---|---|---|
//! | `P_ping_response` | `{"jsonrpc":"2.0","id":1,"result":{}}`, 36 B | server to client |
//! | `S_tools_call` | a `tools/call` request, about 110 B | client to server |
//! | `N_progress` | a `notifications/progress` | server to client |
//! | `E_error_with_data` | an error response with `data` | server to client |
//! | `M_tool_result_4k` | a `tools/call` result, 4 KiB of text with escapes and non-ASCII | server to client |
//! | `L_resource_1m` | a `resources/read` result, 1 MiB of source text with escapes | server to client |
//! | `B_batch_16` | a batch of 16 mixed requests | client to server |
//! | `D_deep_126` | a notification whose params nest 126 deep (pathological) | client to server |
//! | `stream_10k` | 10,000 frames of P, S, N, E, M and B, mixed deterministically, one buffer | both |
//!
//! Functions (`stream_10k` runs the ones that make sense for a stream, see [`stream`]):
//!
//! - `mcpwire`: [`FrameParser::parse`] of the frame, then `kind()`, `id()` and `method()` of the
//!   frame or of each batch element. A frame read on its own has nothing after it in its buffer,
//!   so this is the path that copies the frame to the parser's padded scratch buffer, the same
//!   copy that `simd_json_fill_tape` makes. The `BytesMut` is made shared in setup, as a
//!   codec's read buffer is after its first frame: splitting it off costs a reference count,
//!   not the one-off allocation of promoting a fresh `Vec`.
//!   On `stream_10k` it is [`JsonRpcCodec::decode`] until the buffer is empty: framing included.
//! - `serde_json_untagged_enum`: `serde_json::from_slice` into an untagged enum of
//!   request / notification / response / error with `serde_json::Value` fields, as serde-based
//!   peers write it (`Vec` of it for a batch).
//! - `rmcp_typed`: rmcp's `ClientJsonRpcMessage` for client-to-server workloads (S, B, D) and
//!   `ServerJsonRpcMessage` for server-to-client ones (P, N, E, M, L), decoded the way rmcp's
//!   `transport-async-rw` codec decodes a line: BOM stripped, `from_utf8` check, then
//!   `serde_json::from_slice`. rmcp has no batch type; a batch is a `Vec` of it. The decoded
//!   variant is checked once (a `tools/call` must come out as `CallToolRequest`, not as a
//!   custom request). Not run on the stream, which carries both directions.
//! - `rmcp_generic`: rmcp's generic `JsonRpcMessage<CustomRequest, CustomResult,
//!   CustomNotification>`, the most generic parameters rmcp offers: any method, `params` an
//!   optional `serde_json::Value`, `result` a `Value`. (Its default parameters,
//!   `Request<String, JsonObject>` and `Notification<String, JsonObject>`, refuse a message
//!   without `params`, such as a `ping` request.) Same line handling as `rmcp_typed`.
//! - `jsonrpsee_types_borrowed`: jsonrpsee-types' borrowed types, tried in the order jsonrpsee
//!   tries them: a server `Request`, then `Notification<Option<&RawValue>>`, and a batch as
//!   `Vec<&RawValue>` then each element; a client `Response<&RawValue>`, then the notification.
//!   On the stream (both directions): request, response, notification.
//! - `serde_json_value`: `serde_json::from_slice::<Value>`, no classification.
//! - `simd_json_fill_tape`: raw `simd_json::fill_tape` with `Buffers` and `Tape` reused: the
//!   floor for any simd-json design that reads one frame. It copies the input to its padded
//!   buffer, as `mcpwire` does for a lone frame.
//! - `simd_json_fill_tape_padded` (M, L and the stream): `fill_tape_padded` in place, with the
//!   64 bytes of padding already there; on the stream in place wherever 64 bytes follow the
//!   line, as the codec does.
//! - `sonic_rs_lazy`: `sonic_rs::from_slice` into a struct with borrowed `jsonrpc`, `id` and
//!   `method`, and `LazyValue` for `params` / `result` / `error`, then the kind from which
//!   members are present.
//! - `floor_memchr`: find the frame's newline (count the stream's); `floor_memcpy`: copy it.
//!
//! Method:
//! - Every function parses its own fresh copy of the input, made in setup, outside the timing
//!   (`iter_batched_ref`), so all start from the same cache state and parsers that mutate their
//!   input (simd-json unescapes in place) get pristine bytes. Batches of setups are sized to
//!   keep about 64 KiB of copies live, so the copies stay in cache.
//! - What a function decodes is dropped inside the timed part, as a peer drops each message;
//!   only the input copy is freed outside it.
//! - Each function is run once before timing and must decode every message of its input
//!   (checked by count), so no baseline measures an error path.
//! - Allocations per operation are counted by a wrapper around the global allocator (mimalloc
//!   with the crate's `mimalloc` feature, on by default; the system allocator without it),
//!   over repeated runs outside criterion, after the check has warmed every reused buffer.
//!   They are printed after the timings as `allocs <group>/<function> <allocs/op> <bytes/op>`.

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::marker::PhantomData;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, SamplingMode, Throughput, criterion_group};
use mcpwire::{Frame, FrameParser, JsonRpcCodec, Kind, Limits};
use rmcp::model::{
    ClientJsonRpcMessage, CustomNotification, CustomRequest, CustomResult, JsonRpcMessage,
    ServerJsonRpcMessage,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use simd_json::{Buffers, INPUT_PADDING, Tape};
use tokio_util::codec::Decoder;

// ---------------------------------------------------------------------------------------------
// Counting allocator

#[cfg(feature = "mimalloc")]
use mimalloc::MiMalloc as Inner;
#[cfg(not(feature = "mimalloc"))]
use std::alloc::System as Inner;

#[cfg(feature = "mimalloc")]
const ALLOCATOR: &str = "mimalloc";
#[cfg(not(feature = "mimalloc"))]
const ALLOCATOR: &str = "system";

/// The global allocator, counting allocations (and reallocations) while [`COUNTING`] is on; off,
/// it costs a relaxed load per call.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED_BYTES: AtomicU64 = AtomicU64::new(0);

#[inline]
fn counted(bytes: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        ALLOCATED_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to the inner allocator with the same arguments; counting touches
// no memory the allocator hands out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted(layout.size());
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { Inner.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted(layout.size());
        // SAFETY: the caller's contract for `alloc_zeroed` is passed on unchanged.
        unsafe { Inner.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted(new_size);
        // SAFETY: the caller's contract for `realloc` is passed on unchanged; `ptr` came from
        // this allocator, that is from the inner one.
        unsafe { Inner.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on unchanged; `ptr` came from
        // the inner allocator.
        unsafe { Inner.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations and bytes allocated while `f` runs (single-threaded: nothing else allocates).
fn count_allocations(f: impl FnOnce()) -> (u64, u64) {
    ALLOCATIONS.store(0, Ordering::Relaxed);
    ALLOCATED_BYTES.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::SeqCst);
    f();
    COUNTING.store(false, Ordering::SeqCst);
    (ALLOCATIONS.load(Ordering::Relaxed), ALLOCATED_BYTES.load(Ordering::Relaxed))
}

/// `allocs <group>/<function> <allocs/op> <bytes/op>` lines, printed after the timings.
static ALLOC_TABLE: Mutex<Vec<String>> = Mutex::new(Vec::new());

// ---------------------------------------------------------------------------------------------
// Workloads

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    ToServer,
    ToClient,
}

struct Workload {
    group: &'static str,
    frame: Vec<u8>,
    direction: Direction,
    /// Messages in the frame: 1, or the batch length.
    messages: usize,
    /// The `Debug` prefix of the rmcp typed message's payload variant, checked once.
    rmcp_variant: &'static str,
}

/// A JSON string literal (quotes included) of about `json_len` bytes, made of `lines` in turn.
fn text_literal(json_len: usize, lines: &[&str]) -> String {
    let mut raw = String::new();
    let mut len = 2;
    for line in lines.iter().cycle() {
        let escaped = serde_json::to_string(line).unwrap().len() - 2;
        if len + escaped > json_len {
            break;
        }
        raw.push_str(line);
        len += escaped;
    }
    let literal = serde_json::to_string(&raw).unwrap();
    assert_eq!(literal.len(), len);
    literal
}

/// Tool output: quotes, tabs, newlines, Windows paths, and text in several scripts.
const TOOL_OUTPUT: &[&str] = &[
    "Résumé: 3 files changed — all checks passed ✓\n",
    "\tsrc/lib.rs: \"ok\" (12 ms)\n",
    "\tC:\\Users\\dev\\projet\\données.txt → 日本語のテキスト\n",
    "Status: 🚀 deployed; naïve café façade, Straße, Ελληνικά, русский текст\n",
    "plain ASCII output line with nothing to escape in it at all, just words\n",
];

/// A source file: mostly ASCII, a quote or tab on most lines, a rare non-ASCII comment.
const SOURCE_FILE: &[&str] = &[
    "fn parse(input: &str) -> Result<Value, Error> {\n",
    "    if input.is_empty() {\n",
    "        return Err(Error::new(\"empty input\"));\n",
    "    }\n",
    "\tlet message = format!(\"{}: {}\", name, value); // C:\\tmp\\out.log\n",
    "    let pattern = r\"\\d+\\.\\d+\"; // naïve — résumé\n",
    "    Ok(Value::String(input.trim().to_owned()))\n",
    "}\n",
    "\n",
];

const PING_RESPONSE: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
const TOOLS_CALL: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"}}}"#;
const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"call-42","progress":50,"total":100,"message":"Indexing files"}}"#;
const ERROR_WITH_DATA: &str = r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Unknown tool: \"nope\"","data":{"tool":"nope","available":["echo","sleep"]}}}"#;

fn tool_result_4k() -> String {
    let envelope = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":}],"isError":false}}"#;
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":{}}}],"isError":false}}}}"#,
        text_literal(4096 - envelope.len(), TOOL_OUTPUT)
    )
}

fn resource_1m() -> String {
    let envelope = r#"{"jsonrpc":"2.0","id":8,"result":{"contents":[{"uri":"file:///project/src/parser.rs","mimeType":"text/x-rust","text":}]}}"#;
    format!(
        r#"{{"jsonrpc":"2.0","id":8,"result":{{"contents":[{{"uri":"file:///project/src/parser.rs","mimeType":"text/x-rust","text":{}}}]}}}}"#,
        text_literal((1 << 20) - envelope.len(), SOURCE_FILE)
    )
}

/// 16 requests a client sends at once: tool calls, reads, listings, a prompt, a ping.
fn batch_16() -> String {
    let requests: Vec<String> = (0..16)
        .map(|i| match i % 5 {
            0 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"item {i}"}}}}}}"#
            ),
            1 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"resources/read","params":{{"uri":"file:///project/src/mod{i}.rs"}}}}"#
            ),
            2 => format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list","params":{{}}}}"#),
            3 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"prompts/get","params":{{"name":"summarize","arguments":{{"style":"short"}}}}}}"#
            ),
            _ => format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#),
        })
        .collect();
    format!("[{}]", requests.join(","))
}

/// 126 levels in all: the message, `params`, and 124 arrays.
fn deep_126() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/deep","params":{{"v":{}1{}}}}}"#,
        "[".repeat(124),
        "]".repeat(124)
    )
}

fn workloads() -> Vec<Workload> {
    use Direction::{ToClient, ToServer};
    let w = |group, frame: String, direction, messages, rmcp_variant| Workload {
        group,
        frame: frame.into_bytes(),
        direction,
        messages,
        rmcp_variant,
    };
    vec![
        w(
            "P_ping_response",
            PING_RESPONSE.into(),
            ToClient,
            1,
            "Response(JsonRpcResponse { jsonrpc: JsonRpcVersion2_0, id: Number(1), result: EmptyResult",
        ),
        w(
            "S_tools_call",
            TOOLS_CALL.into(),
            ToServer,
            1,
            "Request(JsonRpcRequest { jsonrpc: JsonRpcVersion2_0, id: Number(42), request: CallToolRequest",
        ),
        w(
            "N_progress",
            PROGRESS.into(),
            ToClient,
            1,
            "Notification(JsonRpcNotification { jsonrpc: JsonRpcVersion2_0, notification: ProgressNotification",
        ),
        w(
            "E_error_with_data",
            ERROR_WITH_DATA.into(),
            ToClient,
            1,
            "Error(JsonRpcError { jsonrpc: JsonRpcVersion2_0, id: Some(Number(9)), error: ErrorData",
        ),
        w(
            "M_tool_result_4k",
            tool_result_4k(),
            ToClient,
            1,
            "Response(JsonRpcResponse { jsonrpc: JsonRpcVersion2_0, id: Number(7), result: CallToolResult",
        ),
        w(
            "L_resource_1m",
            resource_1m(),
            ToClient,
            1,
            "Response(JsonRpcResponse { jsonrpc: JsonRpcVersion2_0, id: Number(8), result: ReadResourceResult",
        ),
        w(
            "B_batch_16",
            batch_16(),
            ToServer,
            16,
            "Request(JsonRpcRequest { jsonrpc: JsonRpcVersion2_0, id: Number(0), request: CallToolRequest",
        ),
        w(
            "D_deep_126",
            deep_126(),
            ToServer,
            1,
            "Notification(JsonRpcNotification { jsonrpc: JsonRpcVersion2_0, notification: CustomNotification",
        ),
    ]
}

/// 10,000 frames drawn from P, S, N, E, M and B by a fixed-seed xorshift: by count mostly small
/// frames, by bytes mostly tool results and batches. Returns the stream and its message count.
fn stream_10k() -> (Vec<u8>, usize) {
    let (m, b) = (tool_result_4k(), batch_16());
    // (frame, messages, cumulative weight out of 100)
    let mix: [(&str, usize, u64); 6] = [
        (PING_RESPONSE, 1, 30),
        (TOOLS_CALL, 1, 60),
        (PROGRESS, 1, 80),
        (ERROR_WITH_DATA, 1, 85),
        (&m, 1, 95),
        (&b, 16, 100),
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let (mut stream, mut messages) = (Vec::new(), 0);
    for _ in 0..10_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let pick = state % 100;
        let &(frame, n, _) = mix.iter().find(|&&(_, _, upto)| pick < upto).unwrap();
        stream.extend_from_slice(frame.as_bytes());
        stream.push(b'\n');
        messages += n;
    }
    (stream, messages)
}

// ---------------------------------------------------------------------------------------------
// The decoders

/// mcpwire: the kind, id and method of the frame or of each batch element; `None` if any is
/// invalid.
#[inline]
fn classify(frame: &Frame) -> Option<usize> {
    match frame.batch() {
        Some(items) => {
            let mut n = 0;
            for m in items {
                if m.kind() == Kind::Invalid {
                    return None;
                }
                black_box((m.id(), m.method()));
                n += 1;
            }
            Some(n)
        }
        None if frame.kind() == Kind::Invalid => None,
        None => {
            black_box((frame.kind(), frame.id(), frame.method()));
            Some(1)
        }
    }
}

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

/// A line as `T`, or as `Vec<T>` when it is a batch; the number of messages.
#[inline]
fn serde_json_line<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Option<usize> {
    if line.first() == Some(&b'[') {
        serde_json::from_slice::<Vec<T>>(line).ok().map(|v| black_box(v).len())
    } else {
        serde_json::from_slice::<T>(line).ok().map(|m| {
            black_box(m);
            1
        })
    }
}

#[inline]
fn serde_json_value(line: &[u8]) -> Option<usize> {
    match serde_json::from_slice::<serde_json::Value>(line).ok()? {
        serde_json::Value::Array(items) => Some(black_box(items).len()),
        value => {
            black_box(value);
            Some(1)
        }
    }
}

/// As rmcp's `transport-async-rw` codec decodes a line (`try_parse_with_compatibility`): strip a
/// BOM, check UTF-8 (it keeps the text for its fallback path), `serde_json::from_slice`.
#[inline]
fn rmcp_line<T: DeserializeOwned>(line: &[u8]) -> Option<usize> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    std::str::from_utf8(line).ok()?;
    serde_json_line::<T>(line)
}

/// rmcp's most generic message: any method, any params, any result.
type RmcpGeneric = JsonRpcMessage<CustomRequest, CustomResult, CustomNotification>;

type JsonrpseeNotification<'a> = jsonrpsee_types::Notification<'a, Option<&'a RawValue>>;

/// As a jsonrpsee server reads a body: a request, else a notification; a batch as raw elements,
/// then each one.
#[inline]
fn jsonrpsee_server(line: &[u8]) -> Option<usize> {
    fn one(line: &[u8]) -> Option<usize> {
        if let Ok(request) = serde_json::from_slice::<jsonrpsee_types::Request<'_>>(line) {
            black_box(request);
            return Some(1);
        }
        serde_json::from_slice::<JsonrpseeNotification<'_>>(line).ok().map(|n| {
            black_box(n);
            1
        })
    }
    if line.first() == Some(&b'[') {
        let batch: Vec<&RawValue> = serde_json::from_slice(line).ok()?;
        let mut n = 0;
        for element in &batch {
            n += one(element.get().as_bytes())?;
        }
        return Some(n);
    }
    one(line)
}

/// As a jsonrpsee client reads a message: a response (success or error), else a notification.
#[inline]
fn jsonrpsee_client(line: &[u8]) -> Option<usize> {
    if let Ok(response) = serde_json::from_slice::<jsonrpsee_types::Response<'_, &RawValue>>(line) {
        black_box(response);
        return Some(1);
    }
    serde_json::from_slice::<JsonrpseeNotification<'_>>(line).ok().map(|n| {
        black_box(n);
        1
    })
}

/// Both directions on one stream: request, response, notification, in that order.
#[inline]
fn jsonrpsee_any(line: &[u8]) -> Option<usize> {
    if line.first() == Some(&b'[') {
        return jsonrpsee_server(line);
    }
    if let Ok(request) = serde_json::from_slice::<jsonrpsee_types::Request<'_>>(line) {
        black_box(request);
        return Some(1);
    }
    jsonrpsee_client(line)
}

/// An id borrowed from the input: what a lean decoder keeps.
#[allow(dead_code, reason = "fields exist to be deserialised")]
enum BorrowedId<'a> {
    Num(i64),
    Str(&'a str),
}

impl<'de: 'a, 'a> Deserialize<'de> for BorrowedId<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visitor<'a> {
            type Value = BorrowedId<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an integer or a string without escapes")
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Self::Value, E> {
                Ok(BorrowedId::Num(n))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Self::Value, E> {
                i64::try_from(n).map(BorrowedId::Num).map_err(E::custom)
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                s: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(BorrowedId::Str(s))
            }
        }
        d.deserialize_any(Visitor(PhantomData))
    }
}

/// sonic-rs's lazy struct: envelope members borrowed, payloads skipped and kept as raw text.
#[derive(Deserialize)]
struct SonicMessage<'a> {
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: Option<BorrowedId<'a>>,
    method: Option<&'a str>,
    #[serde(borrow)]
    params: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    result: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    error: Option<sonic_rs::LazyValue<'a>>,
}

impl SonicMessage<'_> {
    #[inline]
    fn kind(&self) -> Option<Kind> {
        if self.jsonrpc != "2.0" {
            return None;
        }
        let has =
            (self.method.is_some(), self.id.is_some(), self.result.is_some(), self.error.is_some());
        match has {
            (true, true, false, false) => Some(Kind::Request),
            (true, false, false, false) => Some(Kind::Notification),
            (false, true, true, false) => Some(Kind::Response),
            (false, true, false, true) => Some(Kind::Error),
            _ => None,
        }
    }
}

#[inline]
fn sonic_rs_lazy(line: &[u8]) -> Option<usize> {
    fn one(m: &SonicMessage<'_>) -> Option<usize> {
        black_box((m.kind()?, &m.id, m.method, &m.params, &m.result, &m.error));
        Some(1)
    }
    if line.first() == Some(&b'[') {
        let batch: Vec<SonicMessage<'_>> = sonic_rs::from_slice(line).ok()?;
        batch.iter().map(one).sum()
    } else {
        one(&sonic_rs::from_slice(line).ok()?)
    }
}

/// Messages on a tape: the root array's length for a batch, else 1.
#[inline]
fn tape_messages(tape: &Tape<'_>) -> usize {
    match tape.0.first() {
        Some(simd_json::Node::Array { len, .. }) => *len,
        _ => 1,
    }
}

/// Reused simd-json state: `Buffers` and a tape whose allocation outlives each input.
struct SimdJson {
    buffers: Buffers,
    tape: Option<Tape<'static>>,
    scratch: Vec<u8>,
}

impl SimdJson {
    fn new() -> Self {
        Self { buffers: Buffers::default(), tape: Some(Tape::null()), scratch: Vec::new() }
    }

    /// `fill_tape`: copies `input` into its padded buffer, unescapes strings in place in `input`.
    #[inline]
    fn fill_tape(&mut self, input: &mut [u8]) -> Option<usize> {
        let mut tape = self.tape.take().unwrap().reset();
        let n = simd_json::fill_tape(input, &mut self.buffers, &mut tape)
            .ok()
            .map(|()| tape_messages(black_box(&tape)));
        self.tape = Some(tape.reset());
        n
    }

    /// `fill_tape_padded` of `input[..len]`, with `input[len..]` at least `INPUT_PADDING` long.
    #[inline]
    fn fill_tape_padded(&mut self, input: &mut [u8], len: usize) -> Option<usize> {
        let mut tape = self.tape.take().unwrap().reset();
        let n = simd_json::fill_tape_padded(input, len, &mut self.buffers, &mut tape)
            .ok()
            .map(|()| tape_messages(black_box(&tape)));
        self.tape = Some(tape.reset());
        n
    }

    /// Each line of `stream` with `fill_tape_padded`: in place where `INPUT_PADDING` bytes
    /// follow the line, else from a padded copy, as the codec does.
    fn stream_padded(&mut self, stream: &mut [u8]) -> Option<usize> {
        let (mut start, mut n) = (0, 0);
        let mut scratch = std::mem::take(&mut self.scratch);
        while let Some(len) = memchr::memchr(b'\n', &stream[start..]) {
            n += if stream.len() - (start + len) >= INPUT_PADDING {
                self.fill_tape_padded(&mut stream[start..], len)?
            } else {
                scratch.clear();
                scratch.extend_from_slice(&stream[start..start + len]);
                scratch.resize(len + INPUT_PADDING, b' ');
                self.fill_tape_padded(&mut scratch, len)?
            };
            start += len + 1;
        }
        self.scratch = scratch;
        Some(n)
    }

    /// Each line of `stream` with `fill_tape`.
    fn stream_copying(&mut self, stream: &mut [u8]) -> Option<usize> {
        let (mut start, mut n) = (0, 0);
        while let Some(len) = memchr::memchr(b'\n', &stream[start..]) {
            n += self.fill_tape(&mut stream[start..start + len])?;
            start += len + 1;
        }
        Some(n)
    }
}

/// Splits `stream` at newlines as an NDJSON reader does and decodes each line with `decode`.
#[inline]
fn lines(stream: &[u8], mut decode: impl FnMut(&[u8]) -> Option<usize>) -> Option<usize> {
    let (mut start, mut n) = (0, 0);
    for nl in memchr::memchr_iter(b'\n', stream) {
        n += decode(&stream[start..nl])?;
        start = nl + 1;
    }
    Some(n)
}

// ---------------------------------------------------------------------------------------------
// Setups: each makes one fresh copy of the input, outside the timing.

/// A copy in a `BytesMut` already shared (as a codec's read buffer is after its first frame), and
/// a handle that keeps the allocation alive so it is freed outside the timing.
fn shared_copy(input: &[u8]) -> (BytesMut, BytesMut) {
    let mut buf = BytesMut::with_capacity(input.len());
    buf.extend_from_slice(input);
    let keep = buf.split_off(input.len());
    (buf, keep)
}

fn padded_copy(input: &[u8]) -> Vec<u8> {
    let mut copy = Vec::with_capacity(input.len() + INPUT_PADDING);
    copy.extend_from_slice(input);
    copy.resize(input.len() + INPUT_PADDING, b' ');
    copy
}

fn line_copy(input: &[u8]) -> Vec<u8> {
    let mut copy = Vec::with_capacity(input.len() + 1);
    copy.extend_from_slice(input);
    copy.push(b'\n');
    copy
}

// ---------------------------------------------------------------------------------------------
// The harness

struct Group<'c> {
    group: BenchmarkGroup<'c, WallTime>,
    name: String,
    input: Vec<u8>,
    batch: BatchSize,
    /// Runs per function for the allocation count.
    reps: usize,
}

impl<'c> Group<'c> {
    fn new(c: &'c mut Criterion, name: &str, input: Vec<u8>, messages: usize) -> Self {
        ALLOC_TABLE
            .lock()
            .unwrap()
            .push(format!("input decode/{name} {} bytes {messages} messages", input.len()));
        let mut group = c.benchmark_group(format!("decode/{name}"));
        group.throughput(Throughput::Bytes(input.len() as u64));
        if input.len() >= 512 << 10 {
            // Tens of ms per iteration for the slowest baselines: a few iterations per sample.
            group.sampling_mode(SamplingMode::Flat).sample_size(10);
        }
        let per_batch = ((64 << 10) / input.len()).clamp(1, 1024) as u64;
        let reps = ((4 << 20) / input.len()).clamp(1, 1000);
        Self {
            group,
            name: format!("decode/{name}"),
            input,
            batch: BatchSize::NumIterations(per_batch),
            reps,
        }
    }

    /// Checks that `routine` decodes `expected` messages from a fresh input, counts its
    /// allocations, then times it.
    fn bench<I, R>(
        &mut self,
        function: &str,
        expected: usize,
        setup: fn(&[u8]) -> I,
        mut routine: R,
    ) where
        R: FnMut(&mut I) -> Option<usize>,
    {
        let Self { group, name, input, batch, reps } = self;
        let mut first = setup(input);
        assert_eq!(routine(&mut first), Some(expected), "{name}/{function} decodes its input");
        drop(first);

        let mut inputs: Vec<I> = (0..*reps).map(|_| setup(input)).collect();
        let (allocs, bytes) = count_allocations(|| {
            for i in &mut inputs {
                black_box(routine(i));
            }
        });
        drop(inputs);
        let per = |n: u64| n as f64 / *reps as f64;
        ALLOC_TABLE.lock().unwrap().push(format!(
            "allocs {name}/{function} {:.2} {:.0}",
            per(allocs),
            per(bytes)
        ));

        group.bench_function(function, |b| {
            b.iter_batched_ref(|| setup(input), &mut routine, *batch);
        });
    }
}

fn to_vec(input: &[u8]) -> Vec<u8> {
    input.to_vec()
}

fn single_frames(c: &mut Criterion) {
    for w in workloads() {
        let n = w.messages;
        check_rmcp_variant(&w);
        let mut g = Group::new(c, w.group, w.frame, n);

        let mut parser = FrameParser::new(Limits::default());
        g.bench("mcpwire", n, shared_copy, move |(body, _keep)| {
            classify(&parser.parse(std::mem::take(body)))
        });
        g.bench("serde_json_untagged_enum", n, to_vec, |i| serde_json_line::<PeerMessage>(i));
        match w.direction {
            Direction::ToServer => {
                g.bench("rmcp_typed", n, to_vec, |i| rmcp_line::<ClientJsonRpcMessage>(i));
            }
            Direction::ToClient => {
                g.bench("rmcp_typed", n, to_vec, |i| rmcp_line::<ServerJsonRpcMessage>(i));
            }
        }
        g.bench("rmcp_generic", n, to_vec, |i| rmcp_line::<RmcpGeneric>(i));
        match w.direction {
            Direction::ToServer => {
                g.bench("jsonrpsee_types_borrowed", n, to_vec, |i| jsonrpsee_server(i))
            }
            Direction::ToClient => {
                g.bench("jsonrpsee_types_borrowed", n, to_vec, |i| jsonrpsee_client(i))
            }
        }
        g.bench("serde_json_value", n, to_vec, |i| serde_json_value(i));
        let mut simd = SimdJson::new();
        g.bench("simd_json_fill_tape", n, to_vec, move |i| simd.fill_tape(i));
        if g.input.len() >= 2048 {
            // M and L: payloads large enough for the in-place parse to matter.
            let mut simd = SimdJson::new();
            let len = g.input.len();
            g.bench("simd_json_fill_tape_padded", n, padded_copy, move |i| {
                simd.fill_tape_padded(i, len)
            });
        }
        g.bench("sonic_rs_lazy", n, to_vec, |i| sonic_rs_lazy(i));
        let len = g.input.len();
        g.bench("floor_memchr", n, line_copy, move |i| {
            (memchr::memchr(b'\n', black_box(i)) == Some(len)).then_some(n)
        });
        let mut copy = vec![0u8; len + 1];
        g.bench("floor_memcpy", n, line_copy, move |i| {
            copy.copy_from_slice(i);
            black_box(&copy);
            Some(n)
        });
        g.group.finish();
    }
}

/// Before timing, that rmcp's typed message decodes the frame to the variant it should, not to a
/// catch-all one.
fn check_rmcp_variant(w: &Workload) {
    let debug: Vec<String> = match (w.direction, w.frame.first()) {
        (Direction::ToServer, Some(b'[')) => {
            serde_json::from_slice::<Vec<ClientJsonRpcMessage>>(&w.frame)
                .unwrap()
                .iter()
                .map(|m| format!("{m:?}"))
                .collect()
        }
        (Direction::ToServer, _) => {
            vec![format!("{:?}", serde_json::from_slice::<ClientJsonRpcMessage>(&w.frame).unwrap())]
        }
        (Direction::ToClient, _) => {
            vec![format!("{:?}", serde_json::from_slice::<ServerJsonRpcMessage>(&w.frame).unwrap())]
        }
    };
    let short = |d: &str| d[..d.len().min(200)].to_owned();
    assert!(debug[0].starts_with(w.rmcp_variant), "{}: rmcp decoded {}", w.group, short(&debug[0]));
    // Only the deliberately non-MCP method may fall through to rmcp's catch-all types.
    if !w.rmcp_variant.contains("Custom") {
        for d in &debug {
            assert!(!d.contains("Custom"), "{}: rmcp decoded {}", w.group, short(d));
        }
    }
}

fn stream(c: &mut Criterion) {
    let (input, messages) = stream_10k();
    let frames = 10_000;
    let mut g = Group::new(c, "stream_10k", input, messages);

    let mut codec = JsonRpcCodec::new();
    g.bench(
        "mcpwire",
        messages,
        |i| BytesMut::from(i),
        move |buf| {
            let mut n = 0;
            while let Some(frame) = codec.decode(buf).unwrap() {
                n += classify(&frame)?;
            }
            Some(n)
        },
    );
    g.bench("serde_json_untagged_enum", messages, to_vec, |i| {
        lines(i, |l| serde_json_line::<PeerMessage>(l))
    });
    g.bench("rmcp_generic", messages, to_vec, |i| lines(i, rmcp_line::<RmcpGeneric>));
    g.bench("jsonrpsee_types_borrowed", messages, to_vec, |i| lines(i, jsonrpsee_any));
    g.bench("serde_json_value", messages, to_vec, |i| lines(i, serde_json_value));
    let mut simd = SimdJson::new();
    g.bench("simd_json_fill_tape", messages, to_vec, move |i| simd.stream_copying(i));
    let mut simd = SimdJson::new();
    g.bench("simd_json_fill_tape_padded", messages, to_vec, move |i| simd.stream_padded(i));
    g.bench("sonic_rs_lazy", messages, to_vec, |i| lines(i, sonic_rs_lazy));
    g.bench("floor_memchr", frames, to_vec, |i| {
        Some(memchr::memchr_iter(b'\n', black_box(i)).count())
    });
    let mut copy = vec![0u8; g.input.len()];
    g.bench("floor_memcpy", frames, to_vec, move |i| {
        copy.copy_from_slice(i);
        black_box(&copy);
        Some(frames)
    });
    g.group.finish();
}

criterion_group! {
    name = benches;
    // Defaults that keep a full run near 7 minutes on the 2-core VM (the command line overrides
    // the times). No plots: drawing them took 2.5 s per function here, more than measuring;
    // `target/criterion/**/new/estimates.json` is still written.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .without_plots();
    targets = single_frames, stream
}

fn main() {
    benches();
    println!("# allocations per operation, counted outside criterion (allocator: {ALLOCATOR})");
    println!("# input <group> <n> bytes <n> messages");
    println!("# allocs <group>/<function> <allocations/op> <bytes allocated/op>");
    for line in ALLOC_TABLE.lock().unwrap().iter() {
        println!("{line}");
    }
    Criterion::default().configure_from_args().final_summary();
}
