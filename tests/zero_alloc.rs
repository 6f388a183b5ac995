//! Decoding and classifying costs no heap allocation once the codec is warm, proved with a
//! counting global allocator. This file is its own test binary so the allocator sees nothing
//! but these tests, and counting is switched on per thread so tests running in parallel do not
//! count each other's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::BytesMut;
use mcpwire::{Frame, JsonRpcCodec, Kind};
use tokio_util::codec::Decoder;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // `const` initialisation: reading it never allocates or registers a destructor.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn note_allocation() {
    if COUNTING.with(Cell::get) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; counting
// touches only an atomic and a const-initialised thread-local, neither of which allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: `ptr` and `layout` come from this allocator, which is `System` underneath.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` and `layout` come from this allocator, which is `System` underneath.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` with counting on for this thread; returns its value and the allocations it made.
/// One count at a time: the total is shared by every thread, so two tests counting at once
/// would see each other's allocations.
fn count_allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, ALLOCATIONS.load(Ordering::Relaxed) - before)
}

const FRAMES: usize = 10_000;

/// A ~4 KB result full of escapes (`\n`, `\"`, `\\`, `\u00e9`): a backslash sends the frame
/// through the scratch copy, because simd-json would rewrite it in place while unescaping.
fn escaped_result(id: usize) -> String {
    let mut text = String::new();
    while text.len() < 4000 {
        text.push_str(r#"line with \"quotes\", a tab\t, a backslash \\ and \u00e9\n"#);
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{text}"}}],"isError":false}}}}"#
    )
}

/// The mix, in an order that hits both parse paths: most frames are followed by far more than
/// 64 bytes and have no backslash (parsed in place); every fifth is the escaped result
/// (scratch); a notification near the end has an escaped method (scratch, and unescaped into
/// the frame's inline side buffer); and the last two frames have no backslash but fewer than 64
/// bytes after them (scratch for want of padding), the very last one without a newline so
/// `decode_eof` takes it.
fn stream() -> Vec<u8> {
    let mut s = String::new();
    for i in 0..FRAMES - 3 {
        let line = match i % 5 {
            0 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello","n":[1,2,3]}}}}}}"#
            ),
            1 => r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":5}}"#
                .to_owned(),
            2 => format!(r#"{{"jsonrpc":"2.0","id":"s-{i}","result":{{"ok":true}}}}"#),
            3 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"error":{{"code":-32601,"message":"Method not found","data":{{"m":"x"}}}}}}"#
            ),
            _ => escaped_result(i),
        };
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"a\\\"b\"}\n");
    // Fewer than 64 bytes follow each of the last two frames, neither of which has a backslash.
    s.push_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    s.push_str("{\"jsonrpc\":\"2.0\",\"id\":\"z\",\"method\":\"m\"}");
    s.into_bytes()
}

/// Touches every accessor, so lazily computed views are counted too.
fn classify(f: &Frame) -> usize {
    use std::hint::black_box;
    black_box(f.kind());
    black_box(f.id());
    black_box(f.method());
    black_box(f.params());
    black_box(f.result());
    black_box(f.error());
    black_box(f.decode_error());
    f.as_bytes().len()
}

/// Decodes every frame of `buf` (decode, then decode_eof) into `out`, classifying each.
fn decode_all(codec: &mut JsonRpcCodec, buf: &mut BytesMut, out: &mut Vec<Frame>) -> usize {
    let mut touched = 0;
    while let Some(f) = codec.decode(buf).expect("decode never fails") {
        touched += classify(&f);
        out.push(f);
    }
    while let Some(f) = codec.decode_eof(buf).expect("decode_eof never fails") {
        touched += classify(&f);
        out.push(f);
    }
    touched
}

#[test]
fn decoding_and_classifying_ten_thousand_warm_frames_allocates_nothing() {
    let input = stream();
    let mut codec = JsonRpcCodec::new();

    // Warm-up on a separate buffer with the same content: the parser's buffers, tape and
    // scratch space grow to what this mix needs.
    let mut warm = BytesMut::from(&input[..]);
    let mut warm_frames = Vec::with_capacity(FRAMES);
    decode_all(&mut codec, &mut warm, &mut warm_frames);
    assert_eq!(warm_frames.len(), FRAMES);
    drop(warm_frames);

    let mut buf = BytesMut::from(&input[..]);
    // The first `split_to` of a fresh `BytesMut` moves its storage to a shared, reference-counted
    // header: one allocation per read buffer, which `bytes` makes and a long-lived read buffer
    // pays once. Done here so the count measures the codec.
    drop(buf.split_to(0));
    let mut frames = Vec::with_capacity(FRAMES);

    let (touched, allocations) =
        count_allocations(|| decode_all(&mut codec, &mut buf, &mut frames));

    assert!(touched > 0);
    assert_eq!(frames.len(), FRAMES);
    assert!(buf.is_empty());
    let kinds = |k: Kind| frames.iter().filter(|f| f.kind() == k).count();
    assert_eq!(kinds(Kind::Invalid), 0, "every frame of the mix is valid");
    assert!(kinds(Kind::Request) > 1000 && kinds(Kind::Notification) > 1000);
    assert!(kinds(Kind::Response) > 1000 && kinds(Kind::Error) > 1000);
    // The escaped frames really were unescaped where it shows: the last notification's method.
    assert_eq!(frames[FRAMES - 3].method(), Some("a\"b"));
    assert_eq!(frames[4].result().unwrap().get().len(), {
        let r = escaped_result(4);
        r.len() - r.find(r#""result":"#).unwrap() - 10
    });
    assert_eq!(
        allocations, 0,
        "decoding and classifying {FRAMES} warm frames allocated {allocations} times"
    );
}

/// Every decoded frame is moved out of the codec (and through `Result<Option<Frame>>`, a
/// `FramedRead`, a channel): its size is what each of those moves copies. 216 bytes before the
/// index was packed; the bound keeps it from creeping back.
#[test]
fn a_frame_is_at_most_128_bytes() {
    let size = std::mem::size_of::<Frame>();
    assert!(size <= 128, "size_of::<Frame>() is {size} bytes");
}

#[test]
fn counting_allocator_sees_an_allocation() {
    let (v, allocations) = count_allocations(|| Vec::<u8>::with_capacity(1));
    drop(v);
    assert_eq!(allocations, 1, "the counting allocator is wired in");
}

#[test]
fn cold_codec_allocates_so_the_count_is_not_vacuous() {
    // A fresh codec must grow its buffers: the zero above is a property of a warm codec, and
    // this shows the count would catch allocations made while decoding.
    let input = stream();
    let mut buf = BytesMut::from(&input[..input.len() / 100]);
    let mut frames = Vec::with_capacity(FRAMES);
    let (_, allocations) = count_allocations(|| {
        let mut codec = JsonRpcCodec::new();
        decode_all(&mut codec, &mut buf, &mut frames)
    });
    assert!(allocations > 0);
}

#[test]
fn content_length_and_one_line_sse_events_decode_warm_without_allocating() {
    use mcpwire::{Framing, Limits, SseDecoder};
    let lines: Vec<Vec<u8>> = stream().split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let mut cl = Vec::new();
    let mut sse = Vec::new();
    for line in &lines {
        cl.extend_from_slice(format!("Content-Length: {}\r\n\r\n", line.len()).as_bytes());
        cl.extend_from_slice(line);
        // The same id and type on every event: the decoder reuses their names.
        sse.extend_from_slice(b"event: message\r\nid: 7\r\ndata: ");
        sse.extend_from_slice(line);
        sse.extend_from_slice(b"\r\n\r\n");
    }

    let mut codec = JsonRpcCodec::with_framing(Limits::default(), Framing::ContentLength);
    let mut frames = Vec::with_capacity(FRAMES);
    decode_all(&mut codec, &mut BytesMut::from(&cl[..]), &mut frames);
    assert_eq!(frames.len(), FRAMES);
    frames.clear();
    let mut buf = BytesMut::from(&cl[..]);
    drop(buf.split_to(0));
    let (_, allocations) = count_allocations(|| decode_all(&mut codec, &mut buf, &mut frames));
    assert_eq!(frames.len(), FRAMES);
    assert_eq!(allocations, 0, "Content-Length: {allocations} allocations");

    let mut decoder = SseDecoder::new(Limits::default());
    let mut events = Vec::with_capacity(FRAMES);
    let sse_all = |decoder: &mut SseDecoder, buf: &mut BytesMut, events: &mut Vec<_>| {
        while let Some(e) = decoder.decode(buf).expect("decode never fails") {
            classify(e.frame());
            events.push(e);
        }
    };
    sse_all(&mut decoder, &mut BytesMut::from(&sse[..]), &mut events);
    assert_eq!(events.len(), FRAMES);
    events.clear();
    let mut buf = BytesMut::from(&sse[..]);
    drop(buf.split_to(0));
    let (_, allocations) = count_allocations(|| sse_all(&mut decoder, &mut buf, &mut events));
    assert_eq!(events.len(), FRAMES);
    assert!(events.iter().all(|e| e.frame().kind() != Kind::Invalid && e.last_event_id() == "7"));
    assert_eq!(allocations, 0, "SSE: {allocations} allocations");
}

/// A modern (2026-07-28) `tools/call` as a client sends it over Streamable HTTP.
fn modern_call(id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"route","arguments":{{"region":"us-west1","shard":{id},"message":"hi"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}}}},"io.modelcontextprotocol/clientInfo":{{"name":"c","version":"1"}},"io.modelcontextprotocol/logLevel":"info","traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01","tracestate":"k=v","baggage":"b=1","progressToken":{id}}}}}}}"#
    )
}

#[test]
fn reading_the_modern_envelope_and_checking_its_headers_allocates_nothing() {
    use http::{HeaderMap, HeaderValue};
    use mcpwire::mcp::annotations::ToolHeaders;
    use mcpwire::mcp::meta::{RequestParams, check_envelope, result_type};
    use mcpwire::{FrameParser, Limits, RawJson};

    let tools = r#"{"tools":[{"name":"route","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"shard":{"type":"integer","x-mcp-header":"Shard"}}}}]}"#;
    let (tools, _) = ToolHeaders::from_tools_list(tools).unwrap();
    let mut parser = FrameParser::new(Limits::default());
    let frames: Vec<Frame> =
        (0..1_000).map(|i| parser.parse(BytesMut::from(modern_call(i).as_str()))).collect();
    let headers: Vec<HeaderMap> = (0..1_000)
        .map(|i| {
            let mut h = HeaderMap::new();
            h.insert("mcp-protocol-version", HeaderValue::from_static("2026-07-28"));
            h.insert("mcp-method", HeaderValue::from_static("tools/call"));
            h.insert("mcp-name", HeaderValue::from_static("route"));
            h.insert("mcp-param-region", HeaderValue::from_static("us-west1"));
            h.insert("mcp-param-shard", HeaderValue::from_str(&i.to_string()).unwrap());
            h
        })
        .collect();
    let result = RawJson::new(r#"{"content":[],"resultType":"complete"}"#);
    let (seen, allocations) = count_allocations(|| {
        let mut seen = 0;
        for (f, h) in frames.iter().zip(&headers) {
            let msg = f.message().unwrap();
            let params = RequestParams::of(&msg).unwrap();
            let e = check_envelope(&params, &["2026-07-28"]).unwrap();
            seen += usize::from(e.version == "2026-07-28");
            seen += usize::from(e.log_level == Some(1));
            seen += usize::from(e.meta.traceparent().is_some() && e.meta.baggage().is_some());
            seen += usize::from(params.name_str().as_deref() == Some("route"));
            let checked = mcpwire::mcp::headers::check(h, &msg, &["2026-07-28"], Some(&tools));
            seen += usize::from(checked.is_ok());
            seen += usize::from(result_type(result).unwrap().as_deref() == Some("complete"));
        }
        seen
    });
    assert_eq!(seen, 6 * 1_000);
    assert_eq!(allocations, 0, "reading 1,000 modern envelopes allocated");
}

#[test]
fn decoding_typed_tools_call_params_allocates_nothing_and_borrows() {
    use mcpwire::mcp::types::{CallToolParams, ReadResourceResult, ResourceParams};
    use mcpwire::{FrameParser, Limits};

    let mut parser = FrameParser::new(Limits::default());
    let frames: Vec<Frame> =
        (0..1_000).map(|i| parser.parse(BytesMut::from(modern_call(i).as_str()))).collect();
    let (seen, allocations) = count_allocations(|| {
        let mut seen = 0;
        for f in &frames {
            let call = CallToolParams::of(&f.message().unwrap()).unwrap();
            seen += usize::from(matches!(call.name, std::borrow::Cow::Borrowed("route")));
            seen +=
                usize::from(call.arguments.is_some_and(|a| a.get().starts_with(r#"{"region""#)));
            seen += usize::from(call.meta.is_some());
        }
        seen
    });
    assert_eq!(seen, 3 * 1_000);
    assert_eq!(allocations, 0, "decoding 1,000 typed tools/call params allocated");
    // From text no frame validated, the nested values are checked too: still no allocation.
    let (seen, allocations) = count_allocations(|| {
        frames.iter().filter(|f| CallToolParams::from_params(f.params().unwrap()).is_ok()).count()
    });
    assert_eq!((seen, allocations), (1_000, 0));

    // An escaped name is unescaped into an owned string: the count sees it.
    let escaped = parser.parse(BytesMut::from(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r\u006fute"}}"#,
    ));
    let (name, allocations) = count_allocations(|| {
        let call = CallToolParams::from_params(escaped.params().unwrap()).unwrap();
        call.name.into_owned()
    });
    assert_eq!(name, "route");
    assert!(allocations >= 1, "an unescaped copy allocates");
    // The other typed params borrow the same way.
    let read = parser.parse(BytesMut::from(
        r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://x"}}"#,
    ));
    let (ok, allocations) = count_allocations(|| {
        let p: ResourceParams<'_> = read.params_as().unwrap();
        p.uri == "test://x"
    });
    assert!(ok);
    assert_eq!(allocations, 0);
    let _ = ReadResourceResult::default();
}
