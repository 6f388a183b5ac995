//! Streams fed to the decoders the way a socket feeds them: in chunks of any size (a control
//! byte picks them), with every buffer bound checked between reads, and the NDJSON framing
//! compared with a naive splitter.
//!
//! Shared, like `checks.rs`, by the fuzz targets and by the tests that include it with
//! `#[path]` beside `checks.rs` (it names that module as `crate::checks`): it may use only
//! crates the main crate also has.

use bytes::BytesMut;
use mcpwire::{Frame, JsonRpcCodec, Limits};
use tokio_util::codec::Decoder;

use crate::checks::{BOM, FrameView, check_frame, limits};

/// What a line of input becomes, by the rules in `src/framing/ndjson.rs`.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A frame with this body.
    Body(&'a [u8]),
    /// A line longer than the limit.
    TooLarge,
}

/// A naive NDJSON splitter to compare the framer with: split on `\n`, drop one `\r` before it,
/// refuse a line longer than `max`, drop a byte order mark, trim blanks, skip empty lines.
pub fn reference_split(input: &[u8], max: usize) -> Vec<Piece<'_>> {
    let is_blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r');
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > max {
            out.push(Piece::TooLarge);
            continue;
        }
        let line = line.strip_prefix(BOM).unwrap_or(line);
        let Some(first) = line.iter().position(|b| !is_blank(b)) else { continue };
        let last = line.iter().rposition(|b| !is_blank(b)).expect("a non-blank byte exists");
        out.push(Piece::Body(&line[first..=last]));
    }
    out
}

/// Feeds `input` to a fresh NDJSON codec in chunks of `next_chunk()` bytes (0 is an empty read),
/// calling `decode` until it returns `None` after each, then `decode_eof` until `None`. Checks the
/// read buffer stays bounded and is empty at the end.
pub fn feed(input: &[u8], limits: Limits, next_chunk: impl FnMut() -> usize) -> Vec<Frame> {
    // The framer holds at most one unterminated line: up to `max` bytes and a `\r` that may be
    // the start of its CRLF.
    let held = limits.frame_bytes() + 1;
    feed_decoder(&mut JsonRpcCodec::with_limits(limits), input, held, |f| f, next_chunk)
}

/// Feeds `input` to `decoder` in chunks of `next_chunk()` bytes (0 is an empty read; after five
/// in a row one byte is read), calling `decode` until it returns `None` after each read, then
/// `decode_eof` until `None`. Checks that every item whose frame (`frame_of`) has bytes took
/// bytes off the buffer, that there are no more items than input bytes, that the read buffer
/// never holds more than `held` bytes between reads, and that it is empty at the end.
pub fn feed_decoder<D>(
    decoder: &mut D,
    input: &[u8],
    held: usize,
    frame_of: impl Fn(&D::Item) -> &Frame,
    mut next_chunk: impl FnMut() -> usize,
) -> Vec<D::Item>
where
    D: Decoder,
    D::Error: std::fmt::Debug,
{
    let mut buf = BytesMut::new();
    let mut items = Vec::new();
    let mut pos = 0;
    let mut empty_reads = 0;
    loop {
        loop {
            let before = buf.len();
            match decoder.decode(&mut buf).expect("decode never fails") {
                Some(item) => {
                    let empty = frame_of(&item).as_bytes().is_empty();
                    assert!(buf.len() < before || empty, "no progress");
                    items.push(item);
                    assert!(items.len() <= input.len(), "more items than input bytes");
                }
                None => break,
            }
        }
        assert!(buf.len() <= held, "buffer holds {} bytes, at most {held} allowed", buf.len());
        if pos == input.len() {
            break;
        }
        let mut n = next_chunk().min(input.len() - pos);
        if n == 0 {
            empty_reads += 1;
            if empty_reads > 4 {
                n = 1;
            }
        } else {
            empty_reads = 0;
        }
        buf.extend_from_slice(&input[pos..pos + n]);
        pos += n;
    }
    while let Some(item) = decoder.decode_eof(&mut buf).expect("decode_eof never fails") {
        items.push(item);
        assert!(items.len() <= input.len(), "more items than input bytes");
    }
    assert!(buf.is_empty(), "{} bytes left at EOF: FramedRead would fail", buf.len());
    items
}

/// Chunk sizes chosen by a control byte: `c % 8 == 0` feeds one byte at a time, otherwise sizes
/// are drawn (xorshift, seeded by `c` and the length) from `0..=cap`, 0 being an empty read.
pub fn chunk_plan(control: u8, len: usize) -> impl FnMut() -> usize {
    const CAPS: [usize; 8] = [1, 2, 3, 7, 31, 257, 4099, 65536];
    let cap = CAPS[usize::from(control % 8)];
    let mut state = (u64::from(control) << 32) ^ (len as u64) ^ 0x9E37_79B9_7F4A_7C15;
    move || {
        if cap == 1 {
            return 1;
        }
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % (cap as u64 + 1)) as usize
    }
}

/// Decodes `input` whole and in the chunks `plan` gives; checks the framing against
/// [`reference_split`], every frame's invariants, and that both feeds decode alike.
pub fn check_stream_with(input: &[u8], limits: Limits, plan: impl FnMut() -> usize) {
    let whole = feed(input, limits, || usize::MAX);
    let expected = reference_split(input, limits.frame_bytes());
    let got: Vec<Piece<'_>> = whole
        .iter()
        .map(|f| if f.as_bytes().is_empty() { Piece::TooLarge } else { Piece::Body(f.as_bytes()) })
        .collect();
    assert_eq!(got, expected, "framing differs from the reference splitter");

    let chunked = feed(input, limits, plan);
    assert_eq!(whole.len(), chunked.len(), "chunked feed gives a different number of frames");
    for (a, b) in whole.iter().zip(&chunked) {
        let va = check_frame(a, limits, true);
        let vb = FrameView::of(b);
        assert_eq!(va, vb, "whole and chunked feeds decode differently");
        assert!(a == b, "whole and chunked frames differ: {a:?} vs {b:?}");
    }
}

/// The `stream` target: the first byte picks the chunk sizes, the rest is the stream.
pub fn check_stream(data: &[u8]) {
    let Some((&control, input)) = data.split_first() else { return };
    check_stream_with(input, limits(), chunk_plan(control, input.len()));
}
