//! [`FrameParser`], and the simd-json parse of one frame into a [`MessageIndex`] per message, with no heap allocation once
//! the parser's buffers are warm.
//!
//! Two phases, because the tape borrows the bytes it was parsed from:
//! 1. `walk` ([`super::walk`]) reads only the tape. It classifies each message and records where its strings and
//!    members start, as offsets from the frame start. Member value spans stay *pending*: a span
//!    holds the offset of the member's key and of the next key ([`LAST`] for the last member).
//! 2. `resolve` runs once the tape is released, with the frame's bytes readable again. It turns
//!    pending spans into value ranges by scanning only the few bytes around each key, and copies
//!    envelope strings whose wire form had escapes into the unescaped buffer.
//!
//! What simd-json mutates: unescaping rewrites a string that has escapes in place. The frame is
//! parsed where it lies only when it has no backslash at all (so nothing is rewritten; the NDJSON
//! framer notes backslashes in the same pass that finds the line's end, [`Backslash`]) and at
//! least [`INPUT_PADDING`] bytes follow it in the read buffer (simd-json uses them as padding
//! and leaves them as they were). Otherwise it is first copied to a reused scratch buffer,
//! placed at the same address modulo 64 (a copy whose source and destination differ by 1-31
//! bytes modulo 4096 runs many times slower on some x86 CPUs). The frame's bytes are therefore
//! never modified: they stay the exact bytes received, for forwarding and logging, and
//! `params`/`result` are their exact JSON text.

use bytes::Bytes;
use simd_json::{Buffers, INPUT_PADDING, Tape, fill_tape_padded};

use super::escape::written_plain;
use super::index::{FrameIndex, IdRepr, MessageIndex, Span, Text, Unescaped};
use super::members;
use super::walk::{LAST, walk};
use super::whitespace::{is_whitespace, skip_whitespace, trim_whitespace_back};
use super::{Frame, Kind};
use crate::error::DecodeError;
use crate::limits::Limits;

/// What the caller learnt of backslashes in a frame while finding where it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backslash {
    /// The frame has none: it may be parsed where it lies.
    Absent,
    /// The frame has at least one: simd-json would rewrite it, so it is parsed in the scratch.
    Present,
    /// Not looked for: the parser looks.
    Unknown,
}

/// Scratch placement keeps the copy at the frame's address modulo this.
const SCRATCH_ALIGN: usize = 64;

/// What a parse reads: a body with room for simd-json's padding and no backslash, parsed where
/// it lies (simd-json writes its padding and unescapes strings in place, and nothing of the
/// body changes), or any other, read only and parsed from a copy in the scratch buffer.
enum Input<'a> {
    InPlace(&'a mut [u8]),
    Staged(&'a [u8]),
}

/// A reusable simd-json parser: its buffers, tape and scratch space survive from frame to frame.
pub(crate) struct Parser {
    buffers: Buffers,
    /// Always `Some` between calls; taken for the length of one parse.
    tape: Option<Tape<'static>>,
    scratch: Vec<u8>,
    limits: Limits,
}

impl std::fmt::Debug for Parser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parser")
            .field("scratch_capacity", &self.scratch.len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Parser {
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            buffers: Buffers::with_max_depth(1024, limits.depth()),
            tape: Some(Tape::null()),
            scratch: Vec::new(),
            limits,
        }
    }

    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Parses and classifies the frame body `buf[..len]`; `buf[len..]` is whatever follows it in
    /// the read buffer. `buf` is left exactly as it was.
    /// The index goes into `index` and `unescaped`, which the caller passes blank (filling the
    /// caller's storage saves moving the result).
    pub(crate) fn parse(
        &mut self,
        buf: &mut [u8],
        len: usize,
        backslash: Backslash,
        index: &mut FrameIndex,
        unescaped: &mut Unescaped,
    ) {
        debug_assert!(len <= buf.len() && len < u32::MAX as usize);
        debug_assert!(
            backslash != Backslash::Absent || memchr::memchr(b'\\', &buf[..len]).is_none(),
            "a frame said to have no backslash has one: parsing it in place would rewrite it"
        );
        let room = buf.len() - len >= INPUT_PADDING;
        let plain = match backslash {
            Backslash::Absent => true,
            Backslash::Present => false,
            // Looked for only when it decides something: without room the frame is copied anyway.
            Backslash::Unknown => room && memchr::memchr(b'\\', &buf[..len]).is_none(),
        };
        if room && plain {
            self.parse_input(Input::InPlace(buf), len, plain, index, unescaped);
        } else {
            self.parse_input(Input::Staged(buf), len, plain, index, unescaped);
        }
    }

    /// Parses and classifies `body`, which it never writes: the body is staged in the scratch
    /// buffer (the copy a body without room for simd-json's padding needs anyway), so a body
    /// shared with others (`bytes::Bytes`) needs no copy of its own first.
    pub(crate) fn parse_shared(
        &mut self,
        body: &[u8],
        index: &mut FrameIndex,
        unescaped: &mut Unescaped,
    ) {
        debug_assert!(body.len() < u32::MAX as usize);
        self.parse_input(Input::Staged(body), body.len(), false, index, unescaped);
    }

    /// The parse proper: `plain` says the body has no backslash (known only for a body parsed
    /// in place; a staged one is read as though it might have).
    fn parse_input(
        &mut self,
        input: Input<'_>,
        len: usize,
        plain: bool,
        index: &mut FrameIndex,
        unescaped: &mut Unescaped,
    ) {
        debug_assert!(*index == FrameIndex::One(MessageIndex::BLANK) && unescaped.is_empty());
        let mut input = input;
        let mut offset = 0;
        if let Input::Staged(body) = input {
            offset = self.stage_in_scratch(&body[..len]);
        }

        // The bytes as written, for phase 1 to tell a key written with an escape: only a staged
        // body may have one, and its bytes stay readable beside the copy simd-json rewrites.
        let written = match &input {
            Input::Staged(body) if !plain => Some(&body[..len]),
            _ => None,
        };
        // Phase 1: the tape borrows the parsed bytes mutably for as long as it lives.
        let walked = {
            let parsed: &mut [u8] = match &mut input {
                Input::InPlace(buf) => buf,
                Input::Staged(_) => &mut self.scratch[offset..offset + len + INPUT_PADDING],
            };
            let base = parsed.as_ptr() as usize;
            let mut tape = self.tape.take().unwrap_or_else(Tape::null).reset();
            let walked = match fill_tape_padded(parsed, len, &mut self.buffers, &mut tape) {
                Ok(()) => walk(&tape.0, base, written, &self.limits, index),
                Err(e) => Err(DecodeError::from_simd(&e, self.limits.depth())),
            };
            self.tape = Some(tape.reset());
            walked
        };

        // Phase 2: the bytes are ours to read again.
        let (orig, parsed): (&[u8], &[u8]) = match &input {
            Input::InPlace(buf) => (&buf[..len], &buf[..len]),
            Input::Staged(body) => (&body[..len], &self.scratch[offset..offset + len]),
        };
        if let Err(problem) = walked {
            *index = FrameIndex::Unreadable(refine(problem, orig));
            return;
        }
        let texts = Texts { orig, unescaped: parsed, plain };
        match index {
            FrameIndex::One(env) => {
                resolve(env, trim_whitespace_back(orig, len) - 1, &texts, unescaped)
            }
            FrameIndex::Batch(envs) => {
                let closes = element_closes(orig, self.buffers.structural_indexes());
                for (env, close) in envs.iter_mut().zip(closes) {
                    resolve(env, close, &texts, unescaped);
                }
            }
            FrameIndex::Unreadable(_) => {}
        }
    }

    /// Copies `body` into the scratch buffer at the body's own address modulo
    /// [`SCRATCH_ALIGN`], with [`INPUT_PADDING`] bytes after it; returns where it starts.
    fn stage_in_scratch(&mut self, body: &[u8]) -> usize {
        let need = body.len() + INPUT_PADDING + SCRATCH_ALIGN;
        if self.scratch.len() < need {
            // Doubling keeps growth amortised; the cap keeps one maximal frame from costing twice
            // the frame limit.
            let cap = self.limits.frame_bytes() + INPUT_PADDING + SCRATCH_ALIGN;
            self.scratch.resize(need.next_power_of_two().min(cap).max(need), 0);
        }
        let offset =
            (body.as_ptr() as usize).wrapping_sub(self.scratch.as_ptr() as usize) % SCRATCH_ALIGN;
        self.scratch[offset..offset + body.len()].copy_from_slice(body);
        offset
    }
}

/// Sharpens a generic syntax error with a second, error-path-only look at the frame: simd-json
/// reports text after a complete value, a truncated value and a stray bracket all alike.
/// serde_json tells them apart; the cost falls only on frames that are already invalid.
#[cold]
fn refine(problem: DecodeError, frame: &[u8]) -> DecodeError {
    let DecodeError::Syntax { detail, .. } = problem else { return problem };
    let mut values =
        serde_json::Deserializer::from_slice(frame).into_iter::<serde::de::IgnoredAny>();
    match values.next() {
        Some(Ok(_)) if values.byte_offset() < frame.len() => DecodeError::TrailingBytes,
        Some(Err(e)) if e.is_eof() => {
            DecodeError::Syntax { offset: frame.len(), detail: "unexpected end of input" }
        }
        Some(Err(e)) if e.is_syntax() => {
            // Line and column count from 1; an NDJSON frame is one line, a delimited body may
            // span several, so count its earlier lines' bytes back in.
            let line_start: usize = frame
                .split(|&b| b == b'\n')
                .take(e.line().saturating_sub(1))
                .map(|l| l.len() + 1)
                .sum();
            let offset = (line_start + e.column().saturating_sub(1)).min(frame.len());
            DecodeError::Syntax { offset, detail }
        }
        _ => problem,
    }
}

/// The position of each batch element's last byte, from stage 1's structural indexes: the
/// elements of the root array end before each `,` at depth 1 and before its closing `]`.
fn element_closes<'a>(orig: &'a [u8], structurals: &'a [u32]) -> impl Iterator<Item = usize> + 'a {
    let mut depth = 0usize;
    structurals.iter().map(|&p| p as usize).filter(|&p| p < orig.len()).filter_map(move |p| {
        match orig[p] {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(trim_whitespace_back(orig, p) - 1);
                }
            }
            b',' if depth == 1 => return Some(trim_whitespace_back(orig, p) - 1),
            _ => {}
        }
        None
    })
}

/// A frame's bytes as received, and as simd-json unescaped them (the same bytes when the frame
/// has no backslash, `plain`).
struct Texts<'a> {
    orig: &'a [u8],
    unescaped: &'a [u8],
    plain: bool,
}

/// Phase 2 for one message whose object's closing brace is at `close`.
fn resolve(env: &mut MessageIndex, close: usize, texts: &Texts<'_>, unescaped: &mut Unescaped) {
    if let IdRepr::Str(t) = env.id() {
        env.set_id(IdRepr::Str(resolve_text(t, texts, unescaped)));
    }
    if let Some(t) = env.method() {
        env.set_method(resolve_text(t, texts, unescaped));
    }
    if env.kind == Kind::Invalid {
        env.set_payload(None);
        return;
    }
    let Some(pending) = env.payload() else { return };
    let payload = value_span(pending, close, texts.orig);
    env.set_payload(Some(payload));
    if let Some(t) = env.key_table() {
        env.set_key_table(members::resolve(t, pending.start, payload));
    }
    if let Some(mut e) = env.error() {
        e.message = resolve_text(e.message, texts, unescaped);
        if let Some(d) = &mut e.data {
            *d = value_span(*d, payload.end as usize - 1, texts.orig);
        }
        env.set_error(e);
    }
}

/// A string's bytes in the frame when its wire form has no escapes; otherwise its unescaped form,
/// copied to the unescaped buffer.
fn resolve_text(t: Text, texts: &Texts<'_>, unescaped: &mut Unescaped) -> Text {
    if texts.plain {
        return t;
    }
    let (at, len) = (t.at as usize, t.len as usize);
    let orig = texts.orig;
    if written_plain(orig, at, len) {
        return t;
    }
    let unescaped_at = unescaped.len() as u32;
    unescaped.extend_from_slice(&texts.unescaped[at..at + len]);
    Text { at: unescaped_at, len: t.len, unescaped: true }
}

/// Turns a pending span (this member's key, the next key or [`LAST`]) into the range of the
/// member's value, in an object whose closing brace is at `close`.
fn value_span(pending: Span, close: usize, orig: &[u8]) -> Span {
    // Past the key's closing quote, then `:` and the whitespace around it.
    let mut at = pending.start as usize;
    loop {
        match orig[at] {
            b'\\' => at += 2,
            b'"' => break,
            _ => at += 1,
        }
    }
    let colon = skip_whitespace(orig, at + 1);
    debug_assert_eq!(orig[colon], b':');
    let start = skip_whitespace(orig, colon + 1);
    let end = if pending.end == LAST {
        trim_whitespace_back(orig, close)
    } else {
        // Back from the next key's opening quote over whitespace, the `,` and whitespace.
        let comma = trim_whitespace_back(orig, pending.end as usize - 1) - 1;
        debug_assert_eq!(orig[comma], b',');
        trim_whitespace_back(orig, comma)
    };
    Span { start: start as u32, end: end as u32 }
}

/// The longest body [`FrameParser::parse_bytes_with`] parses with the parser its thread keeps
/// (whose buffers grow to the longest body it parsed, and stay).
const KEPT_PARSER_BYTES: usize = 64 * 1024;

/// Parses message bodies that arrive already delimited (an HTTP request body, a test vector),
/// with the same rules and limits as [`JsonRpcCodec`](crate::JsonRpcCodec).
///
/// Unlike an NDJSON line, a body may contain raw line breaks (JSON whitespace, as in
/// pretty-printed JSON). Whitespace around the value and a leading byte order mark are dropped.
///
/// # Examples
///
/// ```
/// use bytes::BytesMut;
/// use mcpwire::{FrameParser, Kind, Limits};
///
/// let mut parser = FrameParser::new(Limits::default());
/// let frame = parser.parse(BytesMut::from("{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"ping\"\n}\n"));
/// assert_eq!(frame.kind(), Kind::Notification);
/// ```
#[derive(Debug)]
pub struct FrameParser {
    inner: Parser,
}

impl FrameParser {
    /// A parser enforcing `limits` (the frame size bound applies to the body).
    #[must_use]
    pub fn new(limits: crate::limits::Limits) -> Self {
        Self { inner: Parser::new(limits) }
    }

    /// The limits in effect.
    #[must_use]
    pub fn limits(&self) -> crate::limits::Limits {
        self.inner.limits()
    }

    /// Parses one body into a frame that owns it.
    pub fn parse(&mut self, mut body: bytes::BytesMut) -> Frame {
        use bytes::Buf;
        if body.starts_with(b"\xEF\xBB\xBF") {
            body.advance(3);
        }
        let start = body.iter().position(|&b| !is_whitespace(b)).unwrap_or(body.len());
        body.advance(start);
        let end = trim_whitespace_back(&body, body.len());
        let limit = self.limits().frame_bytes();
        if end > limit {
            return Frame::from_error(Bytes::new(), DecodeError::FrameTooLarge { limit });
        }
        body.truncate(end);
        // The body is ours whole: it becomes the frame's bytes as it is, with no split (a split
        // and the drop of the empty remainder each touch the buffer's shared reference count).
        let mut frame = Frame::empty();
        self.inner.parse(
            &mut body,
            end,
            Backslash::Unknown,
            &mut frame.index,
            &mut frame.unescaped,
        );
        frame.bytes = body.freeze();
        frame
    }

    /// Parses one body shared with others (an HTTP body as the HTTP library hands it over)
    /// into a frame that keeps it: the body itself is never written and the frame holds it, not
    /// a copy; the parse reads the parser's own scratch copy of it (the one a body without
    /// padding room needs anyway).
    pub fn parse_bytes(&mut self, body: Bytes) -> Frame {
        let mut start = usize::from(body.starts_with(b"\xEF\xBB\xBF")) * 3;
        start +=
            body[start..].iter().position(|&b| !is_whitespace(b)).unwrap_or(body.len() - start);
        let end = start + trim_whitespace_back(&body[start..], body.len() - start);
        let limit = self.limits().frame_bytes();
        if end - start > limit {
            return Frame::from_error(Bytes::new(), DecodeError::FrameTooLarge { limit });
        }
        let body = body.slice(start..end);
        let mut frame = Frame::empty();
        self.inner.parse_shared(&body, &mut frame.index, &mut frame.unescaped);
        frame.bytes = body;
        frame
    }

    /// [`parse_bytes`](Self::parse_bytes) with a parser this thread keeps from call to call, for
    /// a caller with no parser of its own: a fresh parser allocates its buffers on every use.
    /// A thread keeps one parser for each of the last two `limits` it was asked with. A body
    /// longer than 64 KiB gets a parser of its own, dropped after, so what a thread keeps is
    /// bounded by a small body's buffers, whatever the largest body it saw.
    pub fn parse_bytes_with(limits: crate::limits::Limits, body: Bytes) -> Frame {
        thread_local! {
            static PARSERS: std::cell::RefCell<[Option<FrameParser>; 2]> =
                const { std::cell::RefCell::new([None, None]) };
        }
        if body.len() > KEPT_PARSER_BYTES {
            return Self::new(limits).parse_bytes(body);
        }
        PARSERS.with(|cell| {
            let Ok(mut slots) = cell.try_borrow_mut() else {
                // Only if a parse ever re-entered this one on the same thread.
                return Self::new(limits).parse_bytes(body);
            };
            let kept = slots.iter().position(|p| p.as_ref().is_some_and(|p| p.limits() == limits));
            let parser = match kept {
                Some(i) => &mut slots[i],
                None => {
                    // The older of the two goes.
                    slots[1] = slots[0].take();
                    &mut slots[0]
                }
            };
            parser.get_or_insert_with(|| Self::new(limits)).parse_bytes(body)
        })
    }

    /// Parses `buf[start..end]` (what follows `end` may serve as parse padding) and splits it off
    /// `buf` as the frame's bytes: on return `buf` starts with what followed `end`. The caller
    /// has already held the body to the frame size limit (the codec's framer does), and says
    /// what its own scan learnt of backslashes in the body, so the parser need not look again.
    #[inline]
    pub(crate) fn parse_in(
        &mut self,
        buf: &mut bytes::BytesMut,
        start: usize,
        end: usize,
        backslash: Backslash,
    ) -> Frame {
        use bytes::Buf;
        debug_assert!(end - start <= self.limits().frame_bytes());
        let mut frame = Frame::empty();
        self.inner.parse(
            &mut buf[start..],
            end - start,
            backslash,
            &mut frame.index,
            &mut frame.unescaped,
        );
        buf.advance(start);
        frame.bytes = buf.split_to(end - start).freeze();
        frame
    }
}

#[cfg(test)]
mod tests;
