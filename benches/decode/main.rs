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
//! - `mcpwire_framing_only` (`stream_10k`): the codec's framing without the parse: the
//!   `NdjsonFramer` newline scan and the split of each frame's bytes off the read buffer. Its
//!   time over (`mcpwire` minus it) is what framing adds to the parse.
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
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, SamplingMode, Throughput, criterion_group};
use mcpwire::framing::{NdjsonFramer, Split};
use mcpwire::{Frame, FrameParser, JsonRpcCodec, Kind, Limits};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use simd_json::INPUT_PADDING;
use tokio_util::codec::Decoder;

// ---------------------------------------------------------------------------------------------
// Counting allocator

#[cfg(not(system_alloc))]
use mcpwire_alloc::MiMalloc as Inner;
#[cfg(system_alloc)]
use std::alloc::System as Inner;

#[cfg(not(system_alloc))]
const ALLOCATOR: &str = "mimalloc";
#[cfg(system_alloc)]
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

mod baselines;
mod workloads;

use baselines::*;
use workloads::*;

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
    // The codec's framing alone: the newline scan and the split of each frame's bytes off the
    // read buffer, as `JsonRpcCodec::decode` does them, without the parse.
    let mut framer = NdjsonFramer::new(Limits::default().frame_bytes());
    g.bench(
        "mcpwire_framing_only",
        frames,
        |i| BytesMut::from(i),
        move |buf| {
            let mut n = 0;
            while let Some(split) = framer.next(buf, false) {
                let Split::Frame { start, end, consumed, .. } = split else { return None };
                buf.advance(start);
                black_box(buf.split_to(end - start).freeze());
                buf.advance(consumed - end);
                n += 1;
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
