//! Invariants every decoded frame and every decoded stream must satisfy.
//!
//! Shared by the `frame`, `stream`, `differential` and `roundtrip` fuzz targets and by
//! `tests/fuzz_regressions.rs`, which includes this file with `#[path]`: it may use only crates the
//! main crate also has (`mcpwire`, `bytes`, `memchr`, `serde_json`, `tokio-util`).

use bytes::BytesMut;
use mcpwire::{
    DecodeError, ErrorCode, Frame, FrameParser, Id, JsonRpcCodec, Kind, Limits, Message, Outgoing,
    RawJson, ReplyDetail,
};
use serde_json::Value;
use tokio_util::codec::{Decoder, Encoder};

/// The small limits the stream target runs with, so the fuzzer reaches every bound quickly.
pub const MAX_FRAME_BYTES: usize = 4096;
/// See [`MAX_FRAME_BYTES`].
pub const MAX_DEPTH: usize = 16;
/// See [`MAX_FRAME_BYTES`].
pub const MAX_BATCH_LEN: usize = 8;

/// A UTF-8 byte order mark, which the parser drops once before a body.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Set by a fuzz target (from `MCPWIRE_FUZZ_SKIP_KNOWN=1`) to go on fuzzing past library bugs
/// already reported; [`known_bug`] lists them. The regression test never sets it, so each
/// reported bug's regression file fails there until the library is fixed.
pub static SKIP_KNOWN_BUGS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Reads `MCPWIRE_FUZZ_SKIP_KNOWN` once.
pub fn skip_known_bugs_from_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let on = std::env::var_os("MCPWIRE_FUZZ_SKIP_KNOWN").is_some_and(|v| v == "1");
        SKIP_KNOWN_BUGS.store(on, std::sync::atomic::Ordering::Relaxed);
    });
}

/// Whether a body hits a library bug already reported, when [`SKIP_KNOWN_BUGS`] is set. None is
/// open now. Fixed: a response with `params` after its `result`/`error` returned the params' text
/// as `result()` and a wrong `error().data` span (`regressions/*/…params-after…`); forwarding
/// turned a raw line break inside a string into a space, so an invalid frame could be forwarded
/// as a valid one (`regressions/{stream,frame}/forwarded-invalid-…`).
pub fn known_bug(body: &[u8]) -> Option<&'static str> {
    if !SKIP_KNOWN_BUGS.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    let _ = body;
    None
}

/// The limits of the `stream` and `differential` targets.
pub fn limits() -> Limits {
    Limits::default()
        .max_frame_bytes(MAX_FRAME_BYTES)
        .max_depth(MAX_DEPTH)
        .max_batch_len(MAX_BATCH_LEN)
}

/// An [`Id`] that owns its string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedId {
    /// `Id::Num`
    Num(i64),
    /// `Id::Str`
    Str(String),
    /// `Id::Null`
    Null,
}

impl OwnedId {
    fn of(id: Id<'_>) -> Self {
        match id {
            Id::Num(n) => Self::Num(n),
            Id::Str(s) => Self::Str(s.to_owned()),
            Id::Null => Self::Null,
        }
    }

    /// The borrowed form.
    pub fn as_id(&self) -> Id<'_> {
        match self {
            Self::Num(n) => Id::Num(*n),
            Self::Str(s) => Id::Str(s),
            Self::Null => Id::Null,
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Self::Num(n) => Value::from(*n),
            Self::Str(s) => Value::from(s.as_str()),
            Self::Null => Value::Null,
        }
    }
}

/// An error object, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorView {
    /// `error.code`
    pub code: i64,
    /// `error.message`, unescaped
    pub message: String,
    /// `error.data`, its exact text
    pub data: Option<String>,
}

/// Everything the public accessors say about one message, owned, so two decodes can be compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsgView {
    /// `kind()`
    pub kind: Kind,
    /// `decode_error()`
    pub decode_error: Option<DecodeError>,
    /// `id()`
    pub id: Option<OwnedId>,
    /// `method()`
    pub method: Option<String>,
    /// `params()`, exact text
    pub params: Option<String>,
    /// `result()`, exact text
    pub result: Option<String>,
    /// `error()`
    pub error: Option<ErrorView>,
}

impl MsgView {
    /// What the accessors of `m` return.
    pub fn of(m: &Message<'_>) -> Self {
        Self {
            kind: m.kind(),
            decode_error: m.decode_error(),
            id: m.id().map(OwnedId::of),
            method: m.method().map(str::to_owned),
            params: m.params().map(|r| r.get().to_owned()),
            result: m.result().map(|r| r.get().to_owned()),
            error: m.error().map(|e| ErrorView {
                code: e.code,
                message: e.message.to_owned(),
                data: e.data.map(|d| d.get().to_owned()),
            }),
        }
    }

    /// An invalid message whose id could not be read.
    pub fn invalid(problem: DecodeError) -> Self {
        Self {
            kind: Kind::Invalid,
            decode_error: Some(problem),
            id: None,
            method: None,
            params: None,
            result: None,
            error: None,
        }
    }
}

/// Everything the public accessors say about one frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameView {
    /// `kind()`
    pub kind: Kind,
    /// `as_bytes()`
    pub bytes: Vec<u8>,
    /// `message()`, for a frame that is not a batch
    pub message: Option<MsgView>,
    /// `batch()`, for a batch
    pub items: Option<Vec<MsgView>>,
}

impl MsgView {
    /// The view of the same message forwarded on one line: payload texts with `\r` and `\n`
    /// turned into spaces.
    pub fn one_line(&self) -> Self {
        let mut v = self.clone();
        v.params = v.params.as_deref().map(one_line);
        v.result = v.result.as_deref().map(one_line);
        if let Some(e) = &mut v.error {
            e.data = e.data.as_deref().map(one_line);
        }
        v
    }
}

impl FrameView {
    /// The view of the same frame forwarded on one line.
    pub fn one_line(&self) -> Self {
        Self {
            kind: self.kind,
            bytes: one_line_bytes(&self.bytes),
            message: self.message.as_ref().map(MsgView::one_line),
            items: self.items.as_ref().map(|items| items.iter().map(MsgView::one_line).collect()),
        }
    }

    /// What the accessors of `f` return.
    pub fn of(f: &Frame) -> Self {
        Self {
            kind: f.kind(),
            bytes: f.as_bytes().to_vec(),
            message: f.message().map(|m| MsgView::of(&m)),
            items: f.batch().map(|items| items.map(|m| MsgView::of(&m)).collect()),
        }
    }
}

/// A JSON value as serde_json reads it in full (every string decoded, so a lone surrogate escape
/// is refused, and the same nesting limit), keeping only its structure.
///
/// Unlike `serde_json::Value`, it gives the key `$serde_json::private::RawValue` no meaning. With
/// serde_json's `raw_value` feature, which mcpwire enables, `Value` reads an object whose first
/// key is that token as the JSON text in the member's string: `{"$serde_json::private::RawValue":
/// ""}` fails to read and `{"$serde_json::private::RawValue": "[1]"}` reads as `[1]`
/// (`regressions/roundtrip/raw-value-token-key-in-payload`). The checks use this type wherever
/// they ask serde_json whether text is JSON, and what shape it has.
#[derive(Debug)]
pub enum AnyJson {
    /// A string, number, boolean or null.
    Scalar,
    /// An array's elements.
    Array(Vec<AnyJson>),
    /// An object's member values.
    Object(Vec<AnyJson>),
}

impl AnyJson {
    /// How many arrays and objects deep the value is.
    pub fn depth(&self) -> usize {
        match self {
            Self::Scalar => 0,
            Self::Array(v) | Self::Object(v) => 1 + v.iter().map(Self::depth).max().unwrap_or(0),
        }
    }
}

impl<'de> serde::Deserialize<'de> for AnyJson {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = AnyJson;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<AnyJson, E> {
                Ok(AnyJson::Scalar)
            }
            fn visit_i64<E>(self, _: i64) -> Result<AnyJson, E> {
                Ok(AnyJson::Scalar)
            }
            fn visit_u64<E>(self, _: u64) -> Result<AnyJson, E> {
                Ok(AnyJson::Scalar)
            }
            fn visit_f64<E>(self, _: f64) -> Result<AnyJson, E> {
                Ok(AnyJson::Scalar)
            }
            fn visit_str<E>(self, _: &str) -> Result<AnyJson, E> {
                Ok(AnyJson::Scalar)
            }
            fn visit_unit<E>(self) -> Result<AnyJson, E> {
                Ok(AnyJson::Scalar)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<AnyJson, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(AnyJson::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<AnyJson, A::Error> {
                let mut values = Vec::new();
                while map.next_key::<String>()?.is_some() {
                    values.push(map.next_value()?);
                }
                Ok(AnyJson::Object(values))
            }
        }
        d.deserialize_any(V)
    }
}

/// The JSON text `raw` must be: one value that serde_json reads.
fn assert_json(what: &str, raw: &str) -> AnyJson {
    serde_json::from_str(raw).unwrap_or_else(|e| panic!("{what} is not JSON ({e}): {raw:?}"))
}

/// `\r` and `\n` as the encoder writes raw JSON: as spaces.
fn one_line(raw: &str) -> String {
    raw.replace(['\r', '\n'], " ")
}

/// Checks every accessor of one message (a frame or a batch element) and returns what they say.
pub fn check_message(m: &Message<'_>) -> MsgView {
    let v = MsgView::of(m);
    let _ = format!("{m:?}");
    assert_ne!(v.kind, Kind::Batch, "a message is never a batch");
    assert_eq!(
        v.decode_error.is_some(),
        v.kind == Kind::Invalid,
        "decode_error iff Invalid: {v:?}"
    );
    let shape_ok = match v.kind {
        Kind::Request => {
            matches!(v.id, Some(OwnedId::Num(_) | OwnedId::Str(_)))
                && v.method.is_some()
                && v.result.is_none()
                && v.error.is_none()
        }
        Kind::Notification => {
            v.id.is_none() && v.method.is_some() && v.result.is_none() && v.error.is_none()
        }
        Kind::Response => {
            matches!(v.id, Some(OwnedId::Num(_) | OwnedId::Str(_)))
                && v.method.is_none()
                && v.params.is_none()
                && v.result.is_some()
                && v.error.is_none()
        }
        Kind::Error => {
            v.id.is_some()
                && v.method.is_none()
                && v.params.is_none()
                && v.result.is_none()
                && v.error.is_some()
        }
        Kind::Invalid => {
            v.id != Some(OwnedId::Null)
                && v.method.is_none()
                && v.params.is_none()
                && v.result.is_none()
                && v.error.is_none()
        }
        Kind::Batch => false,
    };
    assert!(shape_ok, "accessors do not match the kind: {v:?}");

    if let Some(p) = &v.params {
        let value = assert_json("params", p);
        assert!(!matches!(value, AnyJson::Scalar), "params not structured: {p:?}");
    }
    if let Some(r) = &v.result {
        assert_json("result", r);
    }
    if let Some(d) = v.error.as_ref().and_then(|e| e.data.as_ref()) {
        assert_json("error.data", d);
    }
    m.params_as::<AnyJson>().expect("params_as reads any params, and absent ones as null");
    m.result_as::<AnyJson>().expect("result_as reads any result, and an absent one as null");

    for detail in [ReplyDetail::Spec, ReplyDetail::Reason] {
        check_error_reply(m, &v, detail);
    }
    if v.kind != Kind::Invalid {
        check_reencode(&v);
    }
    v
}

/// `error_reply` exists exactly for invalid messages, writes one line of valid JSON, and answers
/// with the right code and id.
fn check_error_reply(m: &Message<'_>, v: &MsgView, detail: ReplyDetail) {
    let reply = m.error_reply(detail);
    let Some(problem) = v.decode_error else {
        assert!(reply.is_none(), "error_reply for a valid message: {v:?}");
        return;
    };
    let reply = reply.expect("error_reply for an invalid message");
    let mut out = BytesMut::new();
    reply.write(&mut out).expect("an error reply always encodes");
    assert_eq!(out.last(), Some(&b'\n'), "reply ends its line");
    assert_eq!(memchr::memchr_iter(b'\n', &out).count(), 1, "reply is one line: {out:?}");
    let json: Value = serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("error reply is not JSON ({e}): {out:?}"));
    let code = problem.code();
    let id = if code == ErrorCode::PARSE_ERROR {
        Value::Null
    } else {
        v.id.as_ref().map_or(Value::Null, OwnedId::to_json)
    };
    let mut error = serde_json::json!({ "code": code.get(), "message": code.message() });
    if detail == ReplyDetail::Reason {
        error["data"] = Value::from(problem.to_string());
    }
    let want = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error });
    assert_eq!(json, want, "error reply for {v:?}");

    let back = FrameParser::new(Limits::default()).parse(out.clone());
    assert_eq!(back.kind(), Kind::Error, "our own error reply decodes as an error: {out:?}");
    assert_eq!(back.error().map(|e| e.code), Some(code.get()));
}

fn raw(s: &Option<String>) -> Option<RawJson<'_>> {
    s.as_deref().map(RawJson::new)
}

/// The message `v` describes (a valid one), as an [`Outgoing`] with raw payloads.
pub fn outgoing(v: &MsgView) -> Outgoing<'_> {
    let id = v.id.as_ref().map(OwnedId::as_id);
    match v.kind {
        Kind::Request => Outgoing::Request {
            id: id.expect("request id"),
            method: v.method.as_deref().expect("request method"),
            params: raw(&v.params),
        },
        Kind::Notification => Outgoing::Notification {
            method: v.method.as_deref().expect("notification method"),
            params: raw(&v.params),
        },
        Kind::Response => Outgoing::Result {
            id: id.expect("response id"),
            result: RawJson::new(v.result.as_deref().expect("response result")),
        },
        Kind::Error => {
            let e = v.error.as_ref().expect("error object");
            Outgoing::Error {
                id: id.expect("error id"),
                code: ErrorCode(e.code),
                message: &e.message,
                data: raw(&e.data),
            }
        }
        Kind::Batch | Kind::Invalid => unreachable!("only valid messages are re-encoded"),
    }
}

/// A valid message, written back with `Outgoing`, decodes to the same message. Raw payloads have
/// their `\r` and `\n` turned into spaces by the encoder.
fn check_reencode(v: &MsgView) {
    let msg = outgoing(v);
    let mut out = BytesMut::new();
    msg.write(&mut out).expect("raw payloads always encode");
    assert_eq!(memchr::memchr_iter(b'\n', &out).count(), 1, "one line: {out:?}");
    let back = FrameParser::new(Limits::default()).parse(out.clone());
    let got = back.message().map(|m| MsgView::of(&m));
    assert_eq!(got.as_ref(), Some(&v.one_line()), "re-encoded as {out:?}");
}

/// Checks every accessor of a frame and returns what they say. `from_codec`: the frame came out
/// of `JsonRpcCodec`, so it is one NDJSON line's trimmed body.
pub fn check_frame(frame: &Frame, limits: Limits, from_codec: bool) -> FrameView {
    let bytes = frame.as_bytes();
    if known_bug(bytes).is_some() {
        return FrameView::of(frame);
    }
    let _ = format!("{frame:?}");
    let too_large =
        frame.decode_error() == Some(DecodeError::FrameTooLarge { limit: limits.frame_bytes() });
    assert!(bytes.len() <= limits.frame_bytes(), "frame of {} bytes past the limit", bytes.len());
    if too_large {
        assert!(bytes.is_empty(), "an over-long frame keeps no bytes");
    }
    if from_codec {
        assert!(!bytes.contains(&b'\n'), "codec frame holds a newline: {bytes:?}");
        assert_eq!(bytes.is_empty(), too_large, "only an over-long frame is empty: {frame:?}");
        let blank = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t' | b'\r'));
        assert!(!blank(bytes.first()) && !blank(bytes.last()), "untrimmed body: {bytes:?}");
    }

    let view = match (frame.message(), frame.batch()) {
        (Some(m), None) => {
            assert_ne!(frame.kind(), Kind::Batch);
            let mv = check_message(&m);
            assert_eq!(frame.kind(), mv.kind);
            assert_eq!(frame.decode_error(), mv.decode_error);
            assert_eq!(frame.id(), m.id());
            assert_eq!(frame.method(), m.method());
            assert_eq!(frame.params(), m.params());
            assert_eq!(frame.result(), m.result());
            assert_eq!(frame.error(), m.error());
            FrameView { kind: frame.kind(), bytes: bytes.to_vec(), message: Some(mv), items: None }
        }
        (None, Some(items)) => {
            assert_eq!(frame.kind(), Kind::Batch);
            let n = items.len();
            assert!((1..=limits.batch_len()).contains(&n), "batch of {n} elements");
            assert!(limits.accepts_batches(), "a batch decoded while batches are off");
            let items: Vec<MsgView> = items.map(|m| check_message(&m)).collect();
            assert_eq!(items.len(), n, "ExactSizeIterator::len is exact");
            assert_eq!(frame.decode_error(), None);
            assert_eq!(frame.id(), None);
            assert_eq!(frame.method(), None);
            assert_eq!(frame.params(), None);
            assert_eq!(frame.result(), None);
            assert_eq!(frame.error(), None);
            FrameView {
                kind: Kind::Batch,
                bytes: bytes.to_vec(),
                message: None,
                items: Some(items),
            }
        }
        _ => panic!("a frame is either one message or a batch: {frame:?}"),
    };
    frame.params_as::<AnyJson>().expect("params_as::<AnyJson> never fails");
    frame.result_as::<AnyJson>().expect("result_as::<AnyJson> never fails");

    // A proxy forwards the frame's bytes on one line (see `one_line_bytes`); decoding that line
    // gives the same frame, the line breaks in its payloads' whitespace turned into spaces. The
    // codec drops a byte order mark at the start of a line, so a body that still starts with one
    // (it had two) reads differently the second time.
    let mut out = BytesMut::new();
    JsonRpcCodec::with_limits(limits).encode(frame, &mut out).expect("forwarding cannot fail");
    if bytes.is_empty() {
        assert!(out.is_empty(), "an empty frame forwards nothing");
    } else {
        let line = one_line_bytes(bytes);
        assert_eq!(&out[..out.len() - 1], &line[..], "forwarded bytes are the frame's, one line");
        assert_eq!(out.last(), Some(&b'\n'));
        if !bytes.starts_with(BOM) {
            let mut codec = JsonRpcCodec::with_limits(limits);
            let again = codec.decode(&mut out).expect("decode never fails").expect("a frame");
            assert!(out.is_empty(), "one forwarded line is one frame");
            if frame.kind() == Kind::Invalid && line != bytes {
                // An invalid frame with line breaks stays invalid with the same code once they
                // are replaced, but which problem the parser reports (a syntax error, invalid
                // UTF-8, ...) and its wording may change: simd-json's report depends on the
                // structure it indexed, and a break inside a string (U+001F now) or an unclosed
                // string's misread tokens change it.
                let code = |f: &Frame| f.decode_error().map(|e| e.code());
                assert_eq!(again.kind(), Kind::Invalid, "forwarded as a valid frame: {again:?}");
                assert_eq!(code(&again), code(frame), "forwarded: {again:?}, received: {frame:?}");
            } else {
                assert_eq!(
                    FrameView::of(&again),
                    view.one_line(),
                    "forwarded frame decodes differently (left: forwarded, right: received)"
                );
            }
            if line == bytes {
                assert!(again == *frame, "forwarded frame differs: {again:?} vs {frame:?}");
            }
        }
        if from_codec && !bytes.starts_with(BOM) {
            let parsed = FrameParser::new(limits).parse(BytesMut::from(bytes));
            assert!(
                parsed == *frame,
                "FrameParser differs from the codec: {parsed:?} vs {frame:?}"
            );
        }
    }
    view
}

/// `bytes` on one line, as the encoder forwards a frame: a raw `\r` or `\n` between JSON tokens is
/// whitespace and becomes a space; one inside a string (where JSON forbids it) becomes U+001F,
/// forbidden there too, so an invalid frame stays invalid. A string starts at a `"` outside one
/// and ends at the next `"` not escaped by a backslash.
fn one_line_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut in_string = false;
    let mut escaped = false;
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\r' | b'\n' => {
                out.push(if in_string { 0x1F } else { b' ' });
                escaped = false;
                continue;
            }
            _ if escaped => escaped = false,
            b'"' => in_string = !in_string,
            b'\\' if in_string => escaped = true,
            _ => {}
        }
        out.push(b);
    }
    out
}

/// What `FrameParser` keeps of a body: without one leading byte order mark and without JSON
/// whitespace on either side.
pub fn trim_body(body: &[u8]) -> &[u8] {
    let body = body.strip_prefix(BOM).unwrap_or(body);
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let start = body.iter().position(|b| !ws(b)).unwrap_or(body.len());
    let end = body.iter().rposition(|b| !ws(b)).map_or(start, |i| i + 1);
    &body[start..end]
}
