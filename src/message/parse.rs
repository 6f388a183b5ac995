//! simd-json parse of one frame into an [`MessageIndex`] per message, with no heap allocation once
//! the parser's buffers are warm.
//!
//! Two phases, because the tape borrows the bytes it was parsed from:
//! 1. `walk` reads only the tape. It classifies each message and records where its strings and
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

use simd_json::{Buffers, INPUT_PADDING, Node, StaticNode, Tape, fill_tape_padded};

use super::{ErrorRepr, FrameIndex, IdRepr, Kind, MessageIndex, Problem, Span, Text, Unescaped};
use crate::error::{DecodeError, Member};
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

/// A pending span's end when the member is the last of its object.
const LAST: u32 = u32::MAX;

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

        // Phase 1: the tape borrows the parsed bytes mutably for as long as it lives.
        let walked = {
            let parsed: &mut [u8] = match &mut input {
                Input::InPlace(buf) => buf,
                Input::Staged(_) => &mut self.scratch[offset..offset + len + INPUT_PADDING],
            };
            let base = parsed.as_ptr() as usize;
            let mut tape = self.tape.take().unwrap_or_else(Tape::null).reset();
            let walked = match fill_tape_padded(parsed, len, &mut self.buffers, &mut tape) {
                Ok(()) => walk(&tape.0, base, &self.limits, index),
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
            FrameIndex::One(env) => resolve(env, trim_back(orig, len) - 1, &texts, unescaped),
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

/// Nodes a value occupies on the tape, itself included.
fn size(node: &Node<'_>) -> usize {
    match node {
        Node::Object { count, .. } | Node::Array { count, .. } => 1 + count,
        _ => 1,
    }
}

/// Offset of a tape string from the start of the parsed input.
fn offset(s: &str, base: usize) -> u32 {
    (s.as_ptr() as usize - base) as u32
}

fn text(s: &str, base: usize) -> Text {
    Text { at: offset(s, base), len: s.len() as u32, unescaped: false }
}

/// Classifies the root value into `index`; `Err` when the frame is not a message or a batch
/// of messages at all.
fn walk(
    nodes: &[Node<'_>],
    base: usize,
    limits: &Limits,
    index: &mut FrameIndex,
) -> Result<(), DecodeError> {
    match nodes[0] {
        Node::Object { .. } => {
            let FrameIndex::One(env) = index else {
                unreachable!("the caller passes a blank index")
            };
            fill_envelope(nodes, 0, base, env);
            Ok(())
        }
        Node::Array { len, .. } => {
            if !limits.accepts_batches() {
                return Err(DecodeError::BatchesRefused);
            } else if len == 0 {
                return Err(DecodeError::EmptyBatch);
            } else if len > limits.batch_len() {
                return Err(DecodeError::BatchTooLong { len, limit: limits.batch_len() });
            }
            let mut envs = Vec::with_capacity(len);
            let mut i = 1;
            for _ in 0..len {
                match nodes[i] {
                    Node::Object { .. } => {
                        envs.push(MessageIndex::BLANK);
                        fill_envelope(nodes, i, base, envs.last_mut().expect("just pushed"));
                    }
                    _ => envs.push(MessageIndex::invalid(Problem::NotAnObject)),
                }
                i += size(&nodes[i]);
            }
            *index = FrameIndex::Batch(envs);
            Ok(())
        }
        Node::String(_) | Node::Static(_) => Err(DecodeError::NotAnObject),
    }
}

fn member(key: &str) -> Option<Member> {
    Some(match key {
        "jsonrpc" => Member::Jsonrpc,
        "id" => Member::Id,
        "method" => Member::Method,
        "params" => Member::Params,
        "result" => Member::Result,
        "error" => Member::Error,
        _ => return None,
    })
}

fn bit(m: Member) -> u16 {
    1 << (m as u16)
}

/// Records the first problem found; later ones do not replace it.
fn note(slot: &mut Option<Problem>, problem: Problem) {
    slot.get_or_insert(problem);
}

fn integer(node: &Node<'_>) -> Option<i64> {
    match *node {
        Node::Static(StaticNode::I64(n)) => Some(n),
        Node::Static(StaticNode::U64(n)) => i64::try_from(n).ok(),
        _ => None,
    }
}

/// Iterates an object's members as (key, value index, pending value span).
fn members<'t, 'i>(
    nodes: &'t [Node<'i>],
    object: usize,
    base: usize,
) -> impl Iterator<Item = (&'i str, usize, Span)> + 't {
    let len = match nodes[object] {
        Node::Object { len, .. } => len,
        _ => 0,
    };
    let mut i = object + 1;
    (0..len).map(move |m| {
        let Node::String(key) = nodes[i] else { unreachable!("simd-json object keys are strings") };
        let value = i + 1;
        i = value + size(&nodes[value]);
        let next_key = match nodes.get(i) {
            Some(Node::String(k)) if m + 1 < len => offset(k, base),
            _ => LAST,
        };
        (key, value, Span { start: offset(key, base), end: next_key })
    })
}

/// Phase 1 for one message object at `nodes[object]`: its envelope, filled into `env` (blank).
fn fill_envelope(nodes: &[Node<'_>], object: usize, base: usize, env: &mut MessageIndex) {
    let mut problem = None;
    let mut id = IdRepr::Absent;
    let mut payload = None;
    let mut seen = 0u16;
    let mut error = None;
    for (key, value, pending) in members(nodes, object, base) {
        let Some(m) = member(key) else {
            note(&mut problem, Problem::UnknownMember);
            continue;
        };
        if seen & bit(m) != 0 {
            note(&mut problem, Problem::DuplicateMember(m));
            if m == Member::Id {
                id = IdRepr::Unreadable;
            }
            continue;
        }
        seen |= bit(m);
        let node = &nodes[value];
        match m {
            // JSON-RPC 2.0: "jsonrpc ... MUST be exactly "2.0"".
            Member::Jsonrpc => {
                if !matches!(node, Node::String("2.0")) {
                    note(&mut problem, Problem::WrongVersion);
                }
            }
            Member::Id => {
                id = match *node {
                    Node::String(s) => IdRepr::Str(text(s, base)),
                    Node::Static(StaticNode::Null) => IdRepr::Null,
                    _ => integer(node).map_or(IdRepr::Unreadable, IdRepr::Num),
                }
            }
            Member::Method => match *node {
                Node::String(s) => env.set_method(text(s, base)),
                _ => note(&mut problem, Problem::MethodNotString),
            },
            // "params ... MUST be a Structured value": an object or an array.
            Member::Params => match node {
                Node::Object { .. } | Node::Array { .. } => payload = Some(pending),
                _ => note(&mut problem, Problem::ParamsNotStructured),
            },
            Member::Result => payload = Some(pending),
            Member::Error => {
                payload = Some(pending);
                error = Some(error_object(nodes, value, base));
            }
            _ => unreachable!("only top-level members are matched"),
        }
    }
    let has = |m| seen & bit(m) != 0;
    let (kind, problem) = if let Some(p) = problem {
        (Kind::Invalid, Some(p))
    } else if !has(Member::Jsonrpc) {
        (Kind::Invalid, Some(Problem::MissingVersion))
    } else if has(Member::Method) {
        if has(Member::Result) || has(Member::Error) {
            (Kind::Invalid, Some(Problem::MethodWithOutcome))
        } else {
            match id {
                IdRepr::Absent => (Kind::Notification, None),
                IdRepr::Num(_) | IdRepr::Str(_) => (Kind::Request, None),
                IdRepr::Null => (Kind::Invalid, Some(Problem::NullId)),
                IdRepr::Unreadable => (Kind::Invalid, Some(Problem::InvalidId)),
            }
        }
    } else if has(Member::Result) && has(Member::Error) {
        (Kind::Invalid, Some(Problem::ResultAndError))
    } else if (has(Member::Result) || has(Member::Error)) && has(Member::Params) {
        // Also keeps the one payload slot for the result or error: no valid message has two.
        (Kind::Invalid, Some(Problem::ParamsOnResponse))
    } else if has(Member::Result) || has(Member::Error) {
        match (id, error) {
            (IdRepr::Absent, _) => (Kind::Invalid, Some(Problem::ResponseWithoutId)),
            (IdRepr::Unreadable, _) => (Kind::Invalid, Some(Problem::InvalidId)),
            (IdRepr::Null, None) => (Kind::Invalid, Some(Problem::NullId)),
            (_, None) => (Kind::Response, None),
            (_, Some(Err(p))) => (Kind::Invalid, Some(p)),
            (_, Some(Ok(e))) => {
                env.set_error(e);
                (Kind::Error, None)
            }
        }
    } else {
        (Kind::Invalid, Some(Problem::NoMethodOrOutcome))
    };
    env.set_id(id);
    env.set_payload(payload);
    env.kind = kind;
    env.problem = problem;
    env.set_response_shaped((has(Member::Result) || has(Member::Error)) && !has(Member::Method));
}

/// Phase 1 for the `error` member of an error response.
fn error_object(nodes: &[Node<'_>], object: usize, base: usize) -> Result<ErrorRepr, Problem> {
    if !matches!(nodes[object], Node::Object { .. }) {
        return Err(Problem::ErrorNotObject);
    }
    let (mut code, mut message, mut data) = (None, None, None);
    let mut problem = None;
    let mut seen = 0u16;
    for (key, value, pending) in members(nodes, object, base) {
        let m = match key {
            "code" => Member::ErrorCode,
            "message" => Member::ErrorMessage,
            "data" => Member::ErrorData,
            // Unknown members of the error object are ignored: the specification lists them
            // without forbidding others, and they cannot change how the message is routed.
            _ => continue,
        };
        if seen & bit(m) != 0 {
            note(&mut problem, Problem::DuplicateMember(m));
            continue;
        }
        seen |= bit(m);
        match m {
            Member::ErrorCode => code = integer(&nodes[value]),
            Member::ErrorMessage => {
                if let Node::String(s) = nodes[value] {
                    message = Some(text(s, base));
                }
            }
            _ => data = Some(pending),
        }
    }
    match (problem, code, message) {
        (Some(p), _, _) => Err(p),
        (None, None, _) => Err(Problem::ErrorCodeNotInteger),
        (None, _, None) => Err(Problem::ErrorMessageNotString),
        (None, Some(code), Some(message)) => Ok(ErrorRepr { code, message, data }),
    }
}

pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// `end` moved back over JSON whitespace.
pub(crate) fn trim_back(bytes: &[u8], mut end: usize) -> usize {
    while end > 0 && is_ws(bytes[end - 1]) {
        end -= 1;
    }
    end
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && is_ws(bytes[at]) {
        at += 1;
    }
    at
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
                    return Some(trim_back(orig, p) - 1);
                }
            }
            b',' if depth == 1 => return Some(trim_back(orig, p) - 1),
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
    // A validated string whose first `len` bytes hold no backslash and are followed by the
    // closing quote is exactly its unescaped form.
    // MessageIndex strings are short: a plain loop beats a call into memchr here.
    if orig.get(at + len) == Some(&b'"') && !orig[at..at + len].contains(&b'\\') {
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
    let colon = skip_ws(orig, at + 1);
    debug_assert_eq!(orig[colon], b':');
    let start = skip_ws(orig, colon + 1);
    let end = if pending.end == LAST {
        trim_back(orig, close)
    } else {
        // Back from the next key's opening quote over whitespace, the `,` and whitespace.
        let comma = trim_back(orig, pending.end as usize - 1) - 1;
        debug_assert_eq!(orig[comma], b',');
        trim_back(orig, comma)
    };
    Span { start: start as u32, end: end as u32 }
}
