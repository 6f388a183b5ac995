//! Phase 1 of a parse: the walk over simd-json's tape. It reads only the tape, classifies each
//! message and records where its strings and members start, as offsets from the frame start;
//! member value spans stay *pending* (the offset of the member's key and of the next key, or
//! [`LAST`] for the last member) until phase 2 ([`super::parse`]) can read the bytes again.

use simd_json::{Node, StaticNode};

use super::Kind;
use super::escape::written_plain;
use super::index::{ErrorRepr, FrameIndex, IdRepr, KeyTable, MessageIndex, Problem, Span, Text};
use crate::error::{DecodeError, Member};
use crate::limits::Limits;

/// A pending span's end when the member is the last of its object.
pub(super) const LAST: u32 = u32::MAX;

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
///
/// `written` is the frame as written when its keys may have escapes (a staged frame's, which
/// simd-json's copy leaves readable): a key table is recorded only where no key was written
/// with one.
pub(super) fn walk(
    nodes: &[Node<'_>],
    base: usize,
    written: Option<&[u8]>,
    limits: &Limits,
    index: &mut FrameIndex,
) -> Result<(), DecodeError> {
    match nodes[0] {
        Node::Object { .. } => {
            let FrameIndex::One(env) = index else {
                unreachable!("the caller passes a blank index")
            };
            fill_envelope(nodes, 0, base, written, env);
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
                        let env = envs.last_mut().expect("just pushed");
                        fill_envelope(nodes, i, base, written, env);
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
fn fill_envelope(
    nodes: &[Node<'_>],
    object: usize,
    base: usize,
    written: Option<&[u8]>,
    env: &mut MessageIndex,
) {
    let mut problem = None;
    let mut id = IdRepr::Absent;
    let mut payload = None;
    let mut seen = 0u16;
    let mut error = None;
    let mut table = None;
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
                Node::Object { .. } => {
                    payload = Some(pending);
                    table = key_table(nodes, value, base, written, pending.start);
                }
                Node::Array { .. } => payload = Some(pending),
                _ => note(&mut problem, Problem::ParamsNotStructured),
            },
            Member::Result => {
                payload = Some(pending);
                if let Node::Object { .. } = node {
                    table = key_table(nodes, value, base, written, pending.start);
                }
            }
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
    if matches!(kind, Kind::Request | Kind::Notification | Kind::Response) {
        env.set_key_table(table);
    }
    env.problem = problem;
    env.set_response_shaped((has(Member::Result) || has(Member::Error)) && !has(Member::Method));
}

/// Phase 1 of the [`KeyTable`] of the object `params` at `nodes[object]`, whose own key starts
/// at `params_key`: each key's offset from there (phase 2 makes them offsets from the value).
/// `None` when the keys of `params` do not fit; `_meta` is left out when its keys do not.
/// A key fits when it lies within 64 KiB of `params_key` and was written without an escape
/// (a reader compares keys as written; `written` as [`walk`] says).
fn key_table(
    nodes: &[Node<'_>],
    object: usize,
    base: usize,
    written: Option<&[u8]>,
    params_key: u32,
) -> Option<KeyTable> {
    let mut t = KeyTable::default();
    let mut meta = None;
    let keys = &mut t.keys;
    let n = record_keys(nodes, object, base, written, params_key, keys, |slot, key, value| {
        if meta.is_none() && key == "_meta" && matches!(nodes[value], Node::Object { .. }) {
            meta = Some((slot, value));
        }
    })?;
    t.params = n as u8;
    if let Some((slot, value)) = meta
        && let Some(m) =
            record_keys(nodes, value, base, written, params_key, &mut t.keys[n..], |_, _, _| {})
    {
        t.meta = Some((slot as u8, m as u8));
    }
    Some(t)
}

/// Records the keys of the object at `nodes[object]` in `slots`, as offsets from `from`, and
/// calls `each` with each one's slot, key and value index; how many, or `None` when they do not
/// fit (more than `slots` holds, an offset past `u16::MAX`, or, where `written` is given, a key
/// written with an escape).
fn record_keys<'i>(
    nodes: &[Node<'i>],
    object: usize,
    base: usize,
    written: Option<&[u8]>,
    from: u32,
    slots: &mut [u16],
    mut each: impl FnMut(usize, &'i str, usize),
) -> Option<usize> {
    let Node::Object { len, .. } = nodes[object] else { return None };
    if len > slots.len() {
        return None;
    }
    let mut i = object + 1;
    for (slot, at) in slots[..len].iter_mut().enumerate() {
        let Node::String(key) = nodes[i] else { unreachable!("simd-json object keys are strings") };
        let written_at = offset(key, base);
        *at = u16::try_from(written_at - from).ok()?;
        if written.is_some_and(|w| !written_plain(w, written_at as usize, key.len())) {
            return None;
        }
        let value = i + 1;
        each(slot, key, value);
        i = value + size(&nodes[value]);
    }
    Some(len)
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
