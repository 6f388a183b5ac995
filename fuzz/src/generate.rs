//! The `roundtrip` target: arbitrary outgoing messages, encoded, decoded and compared.

use arbitrary::{Result, Unstructured};
use bytes::BytesMut;
use mcpwire::{ErrorCode, Json, JsonRpcCodec, Kind, Limits, Outgoing, RawJson};
use serde_json::{Map, Value};
use tokio_util::codec::Encoder;

use crate::checks::{self, ErrorView, MsgView, OwnedId};

/// Strings that have broken JSON writers and readers before.
const TRICKY: &[&str] = &[
    "",
    "\"",
    "\\",
    "\\\"",
    "\n",
    "\r\n",
    "\u{0}",
    "\u{1f}",
    "\u{7f}",
    "\u{2028}",
    "\u{2029}",
    "\u{feff}",
    "é",
    "😀",
    "/",
    "\\u0041",
    "rpc.discover",
    "tools/call",
];

fn string(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(if u.ratio(1, 3)? { (*u.choose(TRICKY)?).to_owned() } else { u.arbitrary::<String>()? })
}

/// A JSON value at most `depth` containers deep.
fn value(u: &mut Unstructured<'_>, depth: u8) -> Result<Value> {
    let top = if depth == 0 { 5 } else { 7 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::from(u.arbitrary::<i64>()?),
        3 => Value::from(u.arbitrary::<u64>()?),
        4 => serde_json::Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
        5 => Value::String(string(u)?),
        6 => array(u, depth - 1)?,
        _ => object(u, depth - 1)?,
    })
}

fn array(u: &mut Unstructured<'_>, depth: u8) -> Result<Value> {
    let n = u.int_in_range(0..=4)?;
    (0..n).map(|_| value(u, depth)).collect::<Result<Vec<_>>>().map(Value::Array)
}

fn object(u: &mut Unstructured<'_>, depth: u8) -> Result<Value> {
    let n = u.int_in_range(0..=4)?;
    let mut map = Map::new();
    for _ in 0..n {
        map.insert(string(u)?, value(u, depth)?);
    }
    Ok(Value::Object(map))
}

/// Params: an object or an array, as the specification requires.
fn params(u: &mut Unstructured<'_>) -> Result<Option<Value>> {
    Ok(match u.int_in_range(0..=2)? {
        0 => None,
        1 => Some(array(u, 3)?),
        _ => Some(object(u, 3)?),
    })
}

fn id(u: &mut Unstructured<'_>, null: bool) -> Result<OwnedId> {
    Ok(match u.int_in_range(0..=2)? {
        0 => OwnedId::Num(u.arbitrary()?),
        2 if null => OwnedId::Null,
        _ => OwnedId::Str(string(u)?),
    })
}

/// How a payload is handed to the encoder.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// `Json(&value)`: serialised with serde as it is written.
    Serde,
    /// `RawJson` of serde_json's compact text.
    Compact,
    /// `RawJson` of serde_json's pretty text: its line breaks must become spaces.
    Pretty,
}

/// One message to send.
#[derive(Debug)]
pub enum Msg {
    /// `Outgoing::Request`
    Request { id: OwnedId, method: String, params: Option<Value> },
    /// `Outgoing::Notification`
    Notification { method: String, params: Option<Value> },
    /// `Outgoing::Result`
    Result { id: OwnedId, result: Value },
    /// `Outgoing::Error`
    Error { id: OwnedId, code: i64, message: String, data: Option<Value> },
}

fn msg(u: &mut Unstructured<'_>) -> Result<(Msg, Mode)> {
    let m = match u.int_in_range(0..=3)? {
        0 => Msg::Request { id: id(u, false)?, method: string(u)?, params: params(u)? },
        1 => Msg::Notification { method: string(u)?, params: params(u)? },
        2 => Msg::Result { id: id(u, false)?, result: value(u, 3)? },
        _ => Msg::Error {
            id: id(u, true)?,
            code: u.arbitrary()?,
            message: string(u)?,
            data: if u.arbitrary()? { Some(value(u, 3)?) } else { None },
        },
    };
    let mode = *u.choose(&[Mode::Serde, Mode::Compact, Mode::Pretty])?;
    Ok((m, mode))
}

/// Up to 8 messages.
pub fn messages(u: &mut Unstructured<'_>) -> Result<Vec<(Msg, Mode)>> {
    let n = u.int_in_range(1..=8)?;
    (0..n).map(|_| msg(u)).collect()
}

/// The text a payload decodes to: compact, or pretty with its line breaks turned into spaces.
fn text(v: &Value, mode: Mode) -> String {
    match mode {
        Mode::Serde | Mode::Compact => serde_json::to_string(v).expect("a Value serialises"),
        Mode::Pretty => {
            serde_json::to_string_pretty(v).expect("a Value serialises").replace('\n', " ")
        }
    }
}

/// Encodes `m` the way `mode` says, appending to `out`.
fn encode(m: &Msg, mode: Mode, out: &mut BytesMut) {
    let mut codec = JsonRpcCodec::new();
    let raw_text = |v: &Value| match mode {
        Mode::Pretty => serde_json::to_string_pretty(v).expect("a Value serialises"),
        _ => serde_json::to_string(v).expect("a Value serialises"),
    };
    if let Mode::Serde = mode {
        let item: Outgoing<'_, Json<'_, Value>> = match m {
            Msg::Request { id, method, params } => {
                Outgoing::Request { id: id.as_id(), method, params: params.as_ref().map(Json) }
            }
            Msg::Notification { method, params } => {
                Outgoing::Notification { method, params: params.as_ref().map(Json) }
            }
            Msg::Result { id, result } => Outgoing::Result { id: id.as_id(), result: Json(result) },
            Msg::Error { id, code, message, data } => Outgoing::Error {
                id: id.as_id(),
                code: ErrorCode(*code),
                message,
                data: data.as_ref().map(Json),
            },
        };
        codec.encode(item, out).expect("a Value encodes");
        return;
    }
    let (p, r, d);
    let item: Outgoing<'_> = match m {
        Msg::Request { id, method, params } => {
            p = params.as_ref().map(raw_text);
            Outgoing::Request { id: id.as_id(), method, params: p.as_deref().map(RawJson::new) }
        }
        Msg::Notification { method, params } => {
            p = params.as_ref().map(raw_text);
            Outgoing::Notification { method, params: p.as_deref().map(RawJson::new) }
        }
        Msg::Result { id, result } => {
            r = raw_text(result);
            Outgoing::Result { id: id.as_id(), result: RawJson::new(&r) }
        }
        Msg::Error { id, code, message, data } => {
            d = data.as_ref().map(raw_text);
            Outgoing::Error {
                id: id.as_id(),
                code: ErrorCode(*code),
                message,
                data: d.as_deref().map(RawJson::new),
            }
        }
    };
    codec.encode(item, out).expect("raw JSON encodes");
}

/// What decoding `m` must give.
fn expected(m: &Msg, mode: Mode) -> MsgView {
    let mut v = MsgView::invalid(mcpwire::DecodeError::EmptyBatch);
    v.decode_error = None;
    match m {
        Msg::Request { id, method, params } => {
            v.kind = Kind::Request;
            v.id = Some(id.clone());
            v.method = Some(method.clone());
            v.params = params.as_ref().map(|p| text(p, mode));
        }
        Msg::Notification { method, params } => {
            v.kind = Kind::Notification;
            v.method = Some(method.clone());
            v.params = params.as_ref().map(|p| text(p, mode));
        }
        Msg::Result { id, result } => {
            v.kind = Kind::Response;
            v.id = Some(id.clone());
            v.result = Some(text(result, mode));
        }
        Msg::Error { id, code, message, data } => {
            v.kind = Kind::Error;
            v.id = Some(id.clone());
            v.error = Some(ErrorView {
                code: *code,
                message: message.clone(),
                data: data.as_ref().map(|d| text(d, mode)),
            });
        }
    }
    v
}

/// Encodes every message into one buffer, decodes the buffer, and compares.
pub fn check_roundtrip(msgs: &[(Msg, Mode)]) {
    let mut out = BytesMut::new();
    for (m, mode) in msgs {
        let start = out.len();
        encode(m, *mode, &mut out);
        let line = &out[start..];
        assert_eq!(memchr::memchr_iter(b'\n', line).count(), 1, "one line: {line:?}");
        assert_eq!(line.last(), Some(&b'\n'));
        if let Mode::Compact = mode {
            let mut serde = BytesMut::new();
            encode(m, Mode::Serde, &mut serde);
            assert_eq!(line, &serde[..], "Json and RawJson of the same text write alike");
        }
    }
    let limits = Limits::default();
    let frames = crate::feed::feed(&out, limits, || usize::MAX);
    assert_eq!(frames.len(), msgs.len(), "one frame per message");
    for (frame, (m, mode)) in frames.iter().zip(msgs) {
        let got = checks::check_frame(frame, limits, true);
        assert_eq!(got.message, Some(expected(m, *mode)), "{m:?} as {mode:?} in {out:?}");
    }
}
