//! What decoding keeps in memory: how far the read buffer grows for a long line, that it shrinks
//! back after an over-long one, and that an unshared frame keeps only its own bytes.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use futures::StreamExt;
use mcpwire::{FrameParser, Framing, Id, JsonRpcCodec, Kind, Limits};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::{Decoder, FramedRead};

/// Serves `data` in reads of at most `chunk` bytes, and records the largest read buffer it was
/// offered: bytes served so far plus the room offered is at least the buffer's capacity.
struct Recording {
    data: Vec<u8>,
    at: usize,
    chunk: usize,
    /// The largest `served + room offered` seen while serving the first `watch` bytes.
    watch: usize,
    largest: usize,
    /// The largest room offered once those bytes were served (the reads after the long line).
    largest_after: usize,
    /// The buffer the last read of the first `watch` bytes went to (the first line starts the
    /// data, so all it has served is in that buffer), and whether a read after them was offered
    /// room inside it (the long line's buffer still in use).
    region: (usize, usize),
    reused: bool,
}

impl AsyncRead for Recording {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        // Where this read would write: the start of the room offered.
        let at = buf.filled().as_ptr() as usize + buf.filled().len();
        if this.at < this.watch {
            this.largest = this.largest.max(this.at + buf.remaining());
            this.region = (at - this.at, at + buf.remaining());
        } else {
            this.largest_after = this.largest_after.max(buf.remaining());
            this.reused |= (this.region.0..this.region.1).contains(&at);
        }
        let n = buf.remaining().min(this.chunk).min(this.data.len() - this.at);
        buf.put_slice(&this.data[this.at..this.at + n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

fn stream_with_long_line(line: usize) -> Vec<u8> {
    // A string member padded to `line` bytes, then a valid frame after it.
    let head = br#"{"jsonrpc":"2.0","method":"x","params":{"s":""#;
    let tail = br#""}}"#;
    let mut data = head.to_vec();
    data.resize(line - tail.len(), b'a');
    data.extend_from_slice(tail);
    assert_eq!(data.len(), line);
    data.push(b'\n');
    data.extend_from_slice(PING);
    data.push(b'\n');
    data
}

/// Decodes `data` through a `FramedRead` in 256 KiB reads; returns the kinds decoded, the
/// largest read buffer offered while the first line was read, and the largest room offered to
/// the reads after it (at least the read that finds the end of input).
async fn decode(limit: usize, data: Vec<u8>) -> Decoded {
    let watch = data.iter().position(|&b| b == b'\n').unwrap() + 1;
    decode_framed(Framing::Ndjson, limit, data, watch).await
}

/// [`decode`] in `framing`, the first message being `data[..watch]`.
async fn decode_framed(framing: Framing, limit: usize, data: Vec<u8>, watch: usize) -> Decoded {
    let reader = Recording {
        data,
        at: 0,
        chunk: 256 * 1024,
        watch,
        largest: 0,
        largest_after: 0,
        region: (usize::MAX, 0),
        reused: false,
    };
    let codec = JsonRpcCodec::with_framing(Limits::default().max_frame_bytes(limit), framing);
    let mut frames = FramedRead::with_capacity(reader, codec, 64 * 1024);
    let mut kinds = Vec::new();
    while let Some(frame) = frames.next().await {
        kinds.push(frame.unwrap().kind());
    }
    let r = frames.get_ref();
    Decoded { kinds, largest: r.largest, largest_after: r.largest_after, reused: r.reused }
}

struct Decoded {
    kinds: Vec<Kind>,
    largest: usize,
    largest_after: usize,
    /// A read after the first line was offered room in the buffer that line was read into.
    reused: bool,
}

/// What the longest frame needs: the limit, a CRLF and the parser's padding; plus one read of
/// slack for the estimate (served + offered counts the last read twice at most).
fn bound(limit: usize) -> usize {
    limit + 2 + simd_json::INPUT_PADDING + 256 * 1024
}

#[tokio::test]
async fn a_frame_at_the_limit_grows_the_buffer_to_the_limit_not_past_it_then_gives_it_up() {
    let limit = 6 << 20;
    let d = decode(limit, stream_with_long_line(limit)).await;
    assert_eq!(d.kinds, [Kind::Notification, Kind::Request]);
    // Doubling would have reached 8 MiB from 4 MiB, then 16 MiB.
    let largest = d.largest;
    assert!(
        largest <= bound(limit),
        "read buffer reached {largest} bytes for a {limit}-byte frame"
    );
    // The new buffer is made while the long frame is alive, so it cannot be the same memory.
    assert!(!d.reused, "a read after the long frame went to the buffer grown for it");
    assert!(d.largest_after <= 64 * 1024, "reads after it were offered {}", d.largest_after);
}

#[tokio::test]
async fn an_over_long_line_grows_the_buffer_no_further_and_gives_the_room_back() {
    let limit = 6 << 20;
    let d = decode(limit, stream_with_long_line(limit + 1)).await;
    assert_eq!(d.kinds, [Kind::Invalid, Kind::Request]);
    let largest = d.largest;
    assert!(
        largest <= bound(limit),
        "read buffer reached {largest} bytes for a {limit}-byte limit"
    );
    assert!(!d.reused, "a read after the over-long line went to the buffer grown for it");
    assert!(d.largest_after <= 64 * 1024, "reads after it were offered {}", d.largest_after);
}

#[tokio::test]
async fn a_long_content_length_body_gives_its_buffer_up_too() {
    let limit = 6 << 20;
    let line = stream_with_long_line(limit);
    let (body, rest) = line.split_at(limit);
    let mut data = format!("Content-Length: {limit}\r\n\r\n").into_bytes();
    data.extend_from_slice(body);
    let watch = data.len();
    let ping = &rest[1..rest.len() - 1];
    data.extend_from_slice(format!("Content-Length: {}\r\n\r\n", ping.len()).as_bytes());
    data.extend_from_slice(ping);
    let d = decode_framed(Framing::ContentLength, limit, data, watch).await;
    assert_eq!(d.kinds, [Kind::Notification, Kind::Request]);
    assert!(d.largest <= bound(limit), "read buffer reached {} bytes", d.largest);
    assert!(!d.reused, "a read after the long body went to the buffer grown for it");
}

#[tokio::test]
async fn short_lines_keep_the_initial_buffer() {
    let mut data = Vec::new();
    for _ in 0..10_000 {
        data.extend_from_slice(PING);
        data.push(b'\n');
    }
    let d = decode(1 << 20, data).await;
    assert_eq!(d.kinds.len(), 10_000);
    assert!(d.largest <= 64 * 1024 + PING.len() + 1, "read buffer reached {} bytes", d.largest);
}

#[test]
fn an_unshared_frame_keeps_its_index_and_only_its_own_bytes() {
    let mut codec = JsonRpcCodec::new();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    buf.extend_from_slice(
        br#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"x":[1,2]}}"#,
    );
    buf.extend_from_slice(b"\n");
    buf.extend_from_slice(PING);
    buf.extend_from_slice(b"\n");
    let start = buf.as_ptr() as usize;
    let within = |p: *const u8| (start..start + 64 * 1024).contains(&(p as usize));

    let mut frame = codec.decode(&mut buf).unwrap().unwrap();
    let before = frame.clone();
    assert!(within(frame.as_bytes().as_ptr()), "a decoded frame is cut from the read buffer");
    frame.unshare();
    assert!(!within(frame.as_bytes().as_ptr()), "an unshared frame has bytes of its own");
    assert_eq!(frame, before);
    assert_eq!(frame.id(), Some(Id::Str("a\"b")));
    assert_eq!(frame.method(), Some("tools/call"));
    assert_eq!(frame.params().unwrap().get(), r#"{"x":[1,2]}"#);

    // A frame with no bytes (an over-long line's) stays as it is.
    let mut parser = FrameParser::new(Limits::default().max_frame_bytes(4));
    let mut empty = parser.parse(BytesMut::from(&b"{\"a\":1}"[..]));
    empty.unshare();
    assert_eq!(empty.kind(), Kind::Invalid);
    assert!(empty.as_bytes().is_empty());
}
