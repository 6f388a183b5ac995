//! A naive reference classifier built on serde_json, for the `differential` target and
//! `tests/fuzz_regressions.rs` (which includes this file with `#[path]`).
//!
//! It reads the body with serde_json, then applies the rules documented on `DecodeError`'s
//! variants and in `src/message/parse.rs` (which problem wins when there are several: the first
//! member-level problem in member order, then version, method, outcome, id) to serde_json's view
//! of the value. Objects are read as ordered `(key, raw value)` lists, so duplicate keys stay
//! visible (`serde_json::Value` would silently keep the last copy) and payload spans can be compared
//! byte for byte.
//!
//! Where serde_json and simd-json legitimately disagree on what is valid JSON, the input is
//! skipped. The exceptions, every one of them:
//! - An integer token (no `.`, `e` or `E`) outside both i64 and u64, such as `18446744073709551616`,
//!   `-9223372036854775809` or a 300-digit integer: serde_json reads it as an f64, simd-json refuses
//!   it (-32700, "invalid or out-of-range number"). The crate documents this.
//!
//! Not exceptions, because both parsers agree (checked by the target, not skipped):
//! - `1e400`, `-1e400`, `2e308`: both refuse. `1e-400`, `2.4e-324`: both read 0.0.
//! - `-0`: serde_json reads -0.0, but the token is an integer, and the reference reads ids by their
//!   token, as simd-json does: `"id": -0` is `Id::Num(0)`.
//! - Lone or inverted UTF-16 surrogate escapes (`"\uD800"`, `"\uDC00\uD800"`, `"\uD800\u0041"`):
//!   both refuse when the string is decoded. serde_json's `RawValue` and `IgnoredAny` do not check
//!   surrogates, which is why the body is first read in full, every string decoded
//!   (`checks::AnyJson`; not `serde_json::Value`, which gives the key
//!   `$serde_json::private::RawValue` a meaning of its own).
//! - Nesting: serde_json stops at depth 128; the target's limit is 16, so every input deeper than
//!   serde_json reads is also too deep for mcpwire.

use std::fmt;

use bytes::BytesMut;
use mcpwire::{DecodeError, ErrorCode, FrameParser, Kind, Limits, Member};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::checks::{self, AnyJson, ErrorView, MsgView, OwnedId};

/// An object's members in order, duplicates kept, values as their exact text.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    out.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A member value, by its type; numbers by their token.
enum Shape {
    Str(String),
    Null,
    /// An integer token: `Some` when it fits in i64.
    Int(Option<i64>),
    Object,
    Array,
    /// A number with a fraction or an exponent, or a boolean.
    Other,
}

fn shape(raw: &RawValue) -> Shape {
    let text = raw.get();
    match text.as_bytes()[0] {
        b'"' => Shape::Str(serde_json::from_str(text).expect("a validated string")),
        b'n' => Shape::Null,
        b'{' => Shape::Object,
        b'[' => Shape::Array,
        b'-' | b'0'..=b'9' if !text.contains(['.', 'e', 'E']) => Shape::Int(text.parse().ok()),
        _ => Shape::Other,
    }
}

fn note(slot: &mut Option<DecodeError>, problem: DecodeError) {
    slot.get_or_insert(problem);
}

#[derive(Clone, Copy, PartialEq)]
enum IdState {
    Absent,
    Null,
    Readable,
    Unreadable,
}

/// The `error` member of an error response.
fn error_object(raw: &RawValue) -> Result<ErrorView, DecodeError> {
    if !matches!(shape(raw), Shape::Object) {
        return Err(DecodeError::ErrorNotObject);
    }
    let Members(members) = serde_json::from_str(raw.get()).expect("a validated object");
    let (mut code, mut message, mut data) = (None, None, None);
    let mut problem = None;
    let mut seen = Vec::new();
    for (key, value) in members {
        let m = match key.as_str() {
            "code" => Member::ErrorCode,
            "message" => Member::ErrorMessage,
            "data" => Member::ErrorData,
            _ => continue,
        };
        if seen.contains(&m) {
            note(&mut problem, DecodeError::DuplicateMember(m));
            continue;
        }
        seen.push(m);
        match (m, shape(value)) {
            (Member::ErrorCode, Shape::Int(n)) => code = n,
            (Member::ErrorMessage, Shape::Str(s)) => message = Some(s),
            (Member::ErrorData, _) => data = Some(value.get().to_owned()),
            _ => {}
        }
    }
    match (problem, code, message) {
        (Some(p), _, _) => Err(p),
        (None, None, _) => Err(DecodeError::ErrorCodeNotInteger),
        (None, _, None) => Err(DecodeError::ErrorMessageNotString),
        (None, Some(code), Some(message)) => Ok(ErrorView { code, message, data }),
    }
}

/// Classifies one message object, given as its exact text.
fn envelope(text: &str) -> MsgView {
    let Members(members) = serde_json::from_str(text).expect("a validated object");
    let mut problem = None;
    let mut seen: Vec<Member> = Vec::new();
    let mut id_state = IdState::Absent;
    let mut id = None;
    let (mut method, mut params, mut result, mut error) = (None, None, None, None);
    for (key, value) in members {
        let m = match key.as_str() {
            "jsonrpc" => Member::Jsonrpc,
            "id" => Member::Id,
            "method" => Member::Method,
            "params" => Member::Params,
            "result" => Member::Result,
            "error" => Member::Error,
            _ => {
                note(&mut problem, DecodeError::UnknownMember);
                continue;
            }
        };
        if seen.contains(&m) {
            note(&mut problem, DecodeError::DuplicateMember(m));
            if m == Member::Id {
                (id_state, id) = (IdState::Unreadable, None);
            }
            continue;
        }
        seen.push(m);
        match m {
            Member::Jsonrpc => {
                if !matches!(shape(value), Shape::Str(s) if s == "2.0") {
                    note(&mut problem, DecodeError::WrongVersion);
                }
            }
            Member::Id => {
                (id_state, id) = match shape(value) {
                    Shape::Str(s) => (IdState::Readable, Some(OwnedId::Str(s))),
                    Shape::Int(Some(n)) => (IdState::Readable, Some(OwnedId::Num(n))),
                    Shape::Null => (IdState::Null, None),
                    _ => (IdState::Unreadable, None),
                }
            }
            Member::Method => match shape(value) {
                Shape::Str(s) => method = Some(s),
                _ => note(&mut problem, DecodeError::MethodNotString),
            },
            Member::Params => match shape(value) {
                Shape::Object | Shape::Array => params = Some(value.get().to_owned()),
                _ => note(&mut problem, DecodeError::ParamsNotStructured),
            },
            Member::Result => result = Some(value.get().to_owned()),
            Member::Error => error = Some(error_object(value)),
            _ => unreachable!("only top-level members"),
        }
    }
    let has = |m| seen.contains(&m);
    let outcome: Result<Kind, DecodeError> = if let Some(p) = problem {
        Err(p)
    } else if !has(Member::Jsonrpc) {
        Err(DecodeError::MissingVersion)
    } else if has(Member::Method) {
        if has(Member::Result) || has(Member::Error) {
            Err(DecodeError::MethodWithOutcome)
        } else {
            match id_state {
                IdState::Absent => Ok(Kind::Notification),
                IdState::Readable => Ok(Kind::Request),
                IdState::Null => Err(DecodeError::NullId),
                IdState::Unreadable => Err(DecodeError::InvalidId),
            }
        }
    } else if has(Member::Result) && has(Member::Error) {
        Err(DecodeError::ResultAndError)
    } else if (has(Member::Result) || has(Member::Error)) && has(Member::Params) {
        Err(DecodeError::ParamsOnResponse)
    } else if has(Member::Result) || has(Member::Error) {
        match (id_state, &error) {
            (IdState::Absent, _) => Err(DecodeError::ResponseWithoutId),
            (IdState::Unreadable, _) => Err(DecodeError::InvalidId),
            (IdState::Null, None) => Err(DecodeError::NullId),
            (_, None) => Ok(Kind::Response),
            (_, Some(Err(p))) => Err(*p),
            (_, Some(Ok(_))) => Ok(Kind::Error),
        }
    } else {
        Err(DecodeError::NoMethodOrOutcome)
    };
    let mut v = MsgView::invalid(DecodeError::NoMethodOrOutcome);
    v.id = id;
    match outcome {
        Err(p) => v.decode_error = Some(p),
        Ok(kind) => {
            v.kind = kind;
            v.decode_error = None;
            match kind {
                Kind::Request | Kind::Notification => (v.method, v.params) = (method, params),
                Kind::Response => v.result = result,
                Kind::Error => {
                    v.error = error.and_then(Result::ok);
                    if id_state == IdState::Null {
                        v.id = Some(OwnedId::Null);
                    }
                }
                Kind::Batch | Kind::Invalid => unreachable!(),
            }
        }
    }
    v
}

/// Whether the valid JSON `body` has an integer token outside i64 and u64 (simd-json refuses it).
fn has_out_of_range_integer(body: &[u8]) -> bool {
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                i += 1;
                while i < body.len() && body[i] != b'"' {
                    i += if body[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < body.len()
                    && matches!(body[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let token = std::str::from_utf8(&body[start..i]).expect("ASCII");
                if !token.contains(['.', 'e', 'E'])
                    && token.parse::<i64>().is_err()
                    && token.parse::<u64>().is_err()
                {
                    return true;
                }
            }
            _ => i += 1,
        }
    }
    false
}

/// What the reference expects of a body.
#[derive(Debug)]
pub enum Expect {
    /// The parsers legitimately disagree (see the module docs).
    Skip(&'static str),
    /// serde_json refuses the body: mcpwire must answer -32700.
    ParseError,
    /// A frame with this view (its `bytes` filled in by the caller).
    Frame(Box<checks::FrameView>),
}

/// The reference classification of one body under `limits`.
pub fn expect(input: &[u8], limits: Limits) -> Expect {
    let body = checks::trim_body(input);
    if body.len() > limits.frame_bytes() {
        let m = MsgView::invalid(DecodeError::FrameTooLarge { limit: limits.frame_bytes() });
        return Expect::Frame(Box::new(checks::FrameView {
            kind: Kind::Invalid,
            bytes: Vec::new(),
            message: Some(m),
            items: None,
        }));
    }
    let Ok(value) = serde_json::from_slice::<AnyJson>(body) else { return Expect::ParseError };
    if has_out_of_range_integer(body) {
        return Expect::Skip(
            "integer outside i64/u64: simd-json refuses it, serde_json reads an f64",
        );
    }
    let text = std::str::from_utf8(body).expect("serde_json read it, so it is UTF-8");
    let single = |m: MsgView| checks::FrameView {
        kind: m.kind,
        bytes: body.to_vec(),
        message: Some(m),
        items: None,
    };
    if value.depth() > limits.depth() {
        let too_deep = DecodeError::TooDeep { limit: limits.depth() };
        return Expect::Frame(Box::new(single(MsgView::invalid(too_deep))));
    }
    Expect::Frame(Box::new(match value {
        AnyJson::Object(_) => single(envelope(text)),
        AnyJson::Array(items) => {
            let len = items.len();
            let refused = if !limits.accepts_batches() {
                Some(DecodeError::BatchesRefused)
            } else if len == 0 {
                Some(DecodeError::EmptyBatch)
            } else if len > limits.batch_len() {
                Some(DecodeError::BatchTooLong { len, limit: limits.batch_len() })
            } else {
                None
            };
            if let Some(problem) = refused {
                single(MsgView::invalid(problem))
            } else {
                let raws: Vec<&RawValue> = serde_json::from_str(text).expect("a validated array");
                let items = raws
                    .iter()
                    .map(|raw| match shape(raw) {
                        Shape::Object => envelope(raw.get()),
                        _ => MsgView::invalid(DecodeError::NotAnObject),
                    })
                    .collect();
                checks::FrameView {
                    kind: Kind::Batch,
                    bytes: body.to_vec(),
                    message: None,
                    items: Some(items),
                }
            }
        }
        _ => single(MsgView::invalid(DecodeError::NotAnObject)),
    }))
}

/// The `differential` target: parses `input` as one body with batches on and off, checks the frame's
/// invariants, and compares it with the reference.
pub fn check_differential(input: &[u8]) {
    if checks::known_bug(input).is_some() {
        return;
    }
    for batches in [true, false] {
        let limits = checks::limits().batches(batches);
        let frame = FrameParser::new(limits).parse(BytesMut::from(input));
        let got = checks::check_frame(&frame, limits, false);
        match expect(input, limits) {
            Expect::Skip(_) => {}
            Expect::ParseError => {
                assert_eq!(
                    got.bytes,
                    checks::trim_body(input),
                    "the frame's bytes are the trimmed body"
                );
                let code = frame.decode_error().map(|e| e.code());
                assert_eq!(code, Some(ErrorCode::PARSE_ERROR), "serde_json refuses it: {frame:?}");
            }
            Expect::Frame(want) => {
                assert_eq!(got, *want, "mcpwire (left) and the reference (right) differ")
            }
        }
    }
}
