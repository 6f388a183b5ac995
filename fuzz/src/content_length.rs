//! The `content_length` target: a byte stream through `JsonRpcCodec` in Content-Length framing,
//! and through `Framing::Detect`.
//!
//! Shared with `tests/fuzz_regressions.rs`, which includes this file with `#[path]` (next to
//! `checks.rs`): it may use only crates the main crate also has.
//!
//! The reference, [`reference_split`], reads the whole input at once by the rules documented in
//! `src/framing/content_length.rs`, written out naively: header lines up to an empty one, the
//! declared number of body bytes, a resync at the next `Content-Length` after a malformed block
//! (after a malformed header line, the search starts at that line's second byte),
//! the dropping of a body over the limit, and one `Truncated` at the end of input inside a message.

use bytes::BytesMut;
use mcpwire::framing::content_length::MAX_LENGTH_DIGITS;
use mcpwire::limits::MAX_HEADER_BYTES;
use mcpwire::{DecodeError, Frame, FrameParser, Framing, JsonRpcCodec, Kind, Limits};
use tokio_util::codec::Encoder;

use crate::checks::{self, FrameView, MsgView};
use crate::feed;

/// The header name, matched without regard to case.
const NAME: &[u8] = b"content-length";

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What one message of a Content-Length stream becomes.
#[derive(Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// A body of the declared length, exactly as it lies in the input (not trimmed).
    Body(&'a [u8]),
    /// A message refused for this reason, with no bytes.
    Refused(DecodeError),
}

/// JSON whitespace, which the splitter skips between messages.
fn is_ws(b: &u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// One header line without its line ending: `Ok(Some(n))` for a `Content-Length` of `n`,
/// `Ok(None)` for another well-formed header. A name is an HTTP token right before the colon; a
/// CR in the value is malformed; a `Content-Length` value, without the ASCII whitespace around it
/// (space, tab, form feed), is 1 to `MAX_LENGTH_DIGITS` decimal digits.
fn header(line: &[u8]) -> Result<Option<u64>, DecodeError> {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return Err(DecodeError::MalformedHeader);
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    let token = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
    if name.is_empty() || !name.iter().all(token) || value.contains(&b'\r') {
        return Err(DecodeError::MalformedHeader);
    }
    if !name.eq_ignore_ascii_case(NAME) {
        return Ok(None);
    }
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\x0C');
    let first = value.iter().position(|b| !blank(b)).unwrap_or(value.len());
    let last = value.iter().rposition(|b| !blank(b)).map_or(first, |i| i + 1);
    let digits = &value[first..last];
    if digits.is_empty()
        || digits.len() > MAX_LENGTH_DIGITS
        || !digits.iter().all(u8::is_ascii_digit)
    {
        return Err(DecodeError::InvalidContentLength);
    }
    Ok(Some(digits.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0'))))
}

/// Where the next `Content-Length` (any case) starts in `rest`, if anywhere.
fn find_name(rest: &[u8]) -> Option<usize> {
    rest.windows(NAME.len()).position(|w| w.eq_ignore_ascii_case(NAME))
}

/// A naive Content-Length splitter over the whole input (`max`: the frame limit).
pub fn reference_split(input: &[u8], max: usize) -> Vec<Item<'_>> {
    let mut out = Vec::new();
    let mut p = 0;
    let mut resync = false;
    'message: loop {
        if std::mem::take(&mut resync) {
            match find_name(&input[p..]) {
                Some(i) => p += i,
                None => break,
            }
        }
        let mut header_bytes = 0;
        let mut length: Option<u64> = None;
        loop {
            let rest = &input[p..];
            let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                // An unfinished line at the end of input.
                if header_bytes + rest.len() > MAX_HEADER_BYTES {
                    out.push(Item::Refused(DecodeError::HeaderTooLarge {
                        limit: MAX_HEADER_BYTES,
                    }));
                } else if header_bytes > 0 || !rest.iter().all(is_ws) {
                    out.push(Item::Refused(DecodeError::Truncated));
                }
                break 'message;
            };
            let line_start = p;
            p += nl + 1;
            header_bytes += nl + 1;
            let line = &rest[..nl];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if header_bytes > MAX_HEADER_BYTES {
                out.push(Item::Refused(DecodeError::HeaderTooLarge { limit: MAX_HEADER_BYTES }));
                resync = true;
                continue 'message;
            }
            if line.is_empty() {
                if header_bytes == nl + 1 {
                    // A blank line between messages.
                    header_bytes = 0;
                    continue;
                }
                match length {
                    None => {
                        out.push(Item::Refused(DecodeError::MissingContentLength));
                        resync = true;
                    }
                    Some(n) if n > max as u64 => {
                        out.push(Item::Refused(DecodeError::FrameTooLarge { limit: max }));
                        let left = (input.len() - p) as u64;
                        p += n.min(left) as usize;
                    }
                    Some(n) => {
                        let n = n as usize;
                        if input.len() - p < n {
                            out.push(Item::Refused(DecodeError::Truncated));
                            break 'message;
                        }
                        out.push(Item::Body(&input[p..p + n]));
                        p += n;
                    }
                }
                continue 'message;
            }
            match header(line) {
                Err(e) => {
                    // Only the line's first byte is dropped before the search, so a block that
                    // starts later on the same line is found.
                    out.push(Item::Refused(e));
                    p = line_start + 1;
                    resync = true;
                    continue 'message;
                }
                Ok(None) => {}
                Ok(Some(_)) if length.is_some() => {
                    out.push(Item::Refused(DecodeError::DuplicateContentLength));
                    resync = true;
                    continue 'message;
                }
                Ok(Some(n)) => length = Some(n),
            }
        }
    }
    out
}

/// What `Framing::Detect` must do with `input`: drop the whitespace and byte order marks before
/// the first other byte, then pick Content-Length framing when `Content-Length` (any case) comes
/// next, NDJSON otherwise. Returns the rest and the framing.
pub fn reference_detect(input: &[u8]) -> (&[u8], Framing) {
    let mut rest = input;
    loop {
        let ws = rest.iter().position(|b| !is_ws(b)).unwrap_or(rest.len());
        rest = &rest[ws..];
        match rest.strip_prefix(BOM) {
            Some(after) => rest = after,
            None => break,
        }
    }
    let picked = rest.len() >= NAME.len() && rest[..NAME.len()].eq_ignore_ascii_case(NAME);
    (rest, if picked { Framing::ContentLength } else { Framing::Ndjson })
}

/// Feeds `input` to a fresh codec in `framing` (see `feed::feed_decoder`); returns the frames
/// and the framing in effect at the end. Between reads the buffer holds at most an unfinished
/// header block (`MAX_HEADER_BYTES`), an unfinished body (below the frame limit), or an NDJSON
/// line and a CR (after detection).
pub fn feed(
    framing: Framing,
    input: &[u8],
    limits: Limits,
    next_chunk: impl FnMut() -> usize,
) -> (Vec<Frame>, Framing) {
    let held = MAX_HEADER_BYTES.max(limits.frame_bytes() + 1);
    let mut codec = JsonRpcCodec::with_framing(limits, framing);
    let frames = feed::feed_decoder(&mut codec, input, held, |f| f, next_chunk);
    (frames, codec.framing())
}

/// A frame forwarded with `Encoder<&Frame>` in Content-Length framing is its exact bytes behind a
/// header, and decodes to the same frame (unless its bytes start with a byte order mark, which
/// the splitter drops: its body had two).
fn check_forward(frame: &Frame, limits: Limits) {
    let mut codec = JsonRpcCodec::with_framing(limits, Framing::ContentLength);
    let mut out = BytesMut::new();
    codec.encode(frame, &mut out).expect("forwarding cannot fail");
    let bytes = frame.as_bytes();
    if bytes.is_empty() {
        assert!(out.is_empty(), "a frame with no bytes forwards nothing");
        return;
    }
    let header = format!("Content-Length: {}\r\n\r\n", bytes.len());
    assert_eq!(&out[..], &[header.as_bytes(), bytes].concat()[..], "forwarded bytes");
    if bytes.starts_with(BOM) {
        return;
    }
    let (again, _) = feed(Framing::ContentLength, &out, limits, || usize::MAX);
    assert_eq!(again.len(), 1, "one forwarded message is one frame: {again:?}");
    assert!(again[0] == *frame, "forwarded frame differs: {:?} vs {frame:?}", again[0]);
}

/// Each valid message of a frame, written with the Content-Length codec's `Encoder<Outgoing>`,
/// is one header and one body that decode to the same message (raw payloads' line breaks become
/// spaces, as in NDJSON).
fn check_reencode(view: &FrameView) {
    let messages = view.message.iter().chain(view.items.iter().flatten());
    for v in messages.filter(|v| v.kind != Kind::Invalid) {
        let mut codec = JsonRpcCodec::with_framing(Limits::default(), Framing::ContentLength);
        let mut out = BytesMut::new();
        codec.encode(checks::outgoing(v), &mut out).expect("raw payloads always encode");
        let at = out.windows(4).position(|w| w == b"\r\n\r\n").expect("a header block") + 4;
        let header = format!("Content-Length: {}\r\n\r\n", out.len() - at);
        assert_eq!(&out[..at], header.as_bytes(), "the header gives the body's length");
        let (back, _) = feed(Framing::ContentLength, &out, Limits::default(), || usize::MAX);
        assert_eq!(back.len(), 1, "one message is one frame: {back:?}");
        let got = back[0].message().map(|m| MsgView::of(&m));
        assert_eq!(got.as_ref(), Some(&v.one_line()), "re-encoded as {out:?}");
    }
}

/// Checks the frames of a whole Content-Length feed against the reference and every frame's
/// invariants.
fn check_against_reference(input: &[u8], limits: Limits, frames: &[Frame]) {
    let expected = reference_split(input, limits.frame_bytes());
    assert_eq!(
        frames.len(),
        expected.len(),
        "framing differs from the reference: {frames:?} vs {expected:?}"
    );
    for (frame, want) in frames.iter().zip(&expected) {
        match want {
            Item::Body(body) => {
                let parsed = FrameParser::new(limits).parse(BytesMut::from(*body));
                assert!(
                    parsed == *frame,
                    "the body parses differently: {parsed:?} vs the codec's {frame:?}"
                );
            }
            Item::Refused(e) => {
                assert_eq!(frame.decode_error(), Some(*e), "{frame:?}");
                assert!(frame.as_bytes().is_empty(), "a refused message keeps no bytes");
            }
        }
        if checks::known_bug(frame.as_bytes()).is_some() {
            continue;
        }
        let view = checks::check_frame(frame, limits, false);
        check_forward(frame, limits);
        check_reencode(&view);
    }
}

/// Decodes `input` in Content-Length framing whole and in the chunks `plan` gives, and in
/// `Framing::Detect` whole and chunked; checks the frames against [`reference_split`], every
/// frame's invariants, forwarding and re-encoding, that all feeds agree, and that Detect picks
/// the framing [`reference_detect`] does and decodes as that framing would.
pub fn check_content_length_with(input: &[u8], limits: Limits, mut plan: impl FnMut() -> usize) {
    let (whole, framing) = feed(Framing::ContentLength, input, limits, || usize::MAX);
    assert_eq!(framing, Framing::ContentLength);
    check_against_reference(input, limits, &whole);
    let (chunked, _) = feed(Framing::ContentLength, input, limits, &mut plan);
    assert_eq!(whole.len(), chunked.len(), "chunked feed gives a different number of frames");
    for (a, b) in whole.iter().zip(&chunked) {
        assert!(a == b, "whole and chunked frames differ: {a:?} vs {b:?}");
    }

    let (rest, picked) = reference_detect(input);
    let (detected, framing) = feed(Framing::Detect, input, limits, || usize::MAX);
    assert_eq!(framing, picked, "Detect picked another framing");
    let (direct, _) = feed(picked, rest, limits, || usize::MAX);
    assert_eq!(detected.len(), direct.len(), "Detect gives a different number of frames");
    for (a, b) in detected.iter().zip(&direct) {
        assert!(a == b, "Detect and {picked:?} frames differ: {a:?} vs {b:?}");
    }
    if picked == Framing::Ndjson {
        for frame in &detected {
            checks::check_frame(frame, limits, true);
        }
    }
    let (chunked, framing) = feed(Framing::Detect, input, limits, &mut plan);
    assert_eq!(framing, picked, "Detect picked another framing, chunked");
    assert_eq!(detected.len(), chunked.len(), "chunked Detect gives a different number of frames");
    for (a, b) in detected.iter().zip(&chunked) {
        assert!(a == b, "whole and chunked Detect frames differ: {a:?} vs {b:?}");
    }
}

/// The `content_length` target: the first byte picks the chunk sizes (`feed::chunk_plan`), the
/// rest is the stream, decoded with the small fuzzing limits.
pub fn check_content_length(data: &[u8]) {
    let Some((&control, input)) = data.split_first() else { return };
    check_content_length_with(input, checks::limits(), feed::chunk_plan(control, input.len()));
}
