//! Properties: what the encoder writes, the codec reads back unchanged; and the codec classifies
//! arbitrary envelope-like JSON exactly as a naive serde_json reference classifier does. The
//! `roundtrip` fuzz target's property runs here too, on its own generator and checks
//! (`fuzz/src/generate.rs`, `fuzz/src/checks.rs`) fed with proptest's bytes.

use bytes::BytesMut;
use mcpwire::{
    DecodeError, ErrorCode, Frame, Id, Json, JsonRpcCodec, Kind, Message, Outgoing, RawJson,
};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use tokio_util::codec::Decoder;

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/checks.rs"]
mod checks;

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/feed.rs"]
mod feed;

#[allow(dead_code, reason = "shared with the fuzz targets, which use more of it")]
#[path = "../fuzz/src/generate.rs"]
mod generate;

// ---- Generators ----

/// Strings with everything an escaper must handle: quotes, backslashes, every control
/// character, U+2028/U+2029, multi-byte and astral characters, and arbitrary `char`s.
fn arb_string() -> impl Strategy<Value = String> {
    let special = prop_oneof![
        Just('"'),
        Just('\\'),
        Just('/'),
        Just('\u{2028}'),
        Just('\u{2029}'),
        Just('\u{7f}'),
        Just('é'),
        Just('😀'),
        Just('\u{feff}'),
        (0u8..0x20).prop_map(char::from),
        any::<char>(),
        prop::char::range('a', 'z'),
    ];
    prop::collection::vec(special, 0..12).prop_map(|cs| cs.into_iter().collect())
}

fn arb_number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::from),
        any::<u64>().prop_map(Number::from),
        (-1000i64..1000).prop_map(Number::from),
        any::<f64>().prop_filter_map("finite", Number::from_f64).boxed(),
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1.5),
            Just(f64::MAX),
            Just(f64::MIN_POSITIVE),
            Just(5e-324),
            Just(1e-7),
            Just(123456789.125)
        ]
        .prop_filter_map("finite", Number::from_f64),
    ]
}

fn arb_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        arb_number().prop_map(Value::Number),
        arb_string().prop_map(Value::String),
    ]
}

fn arb_value() -> impl Strategy<Value = Value> {
    arb_leaf().prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((arb_string(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// `params` as JSON-RPC wants them: an object or an array.
fn arb_structured() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::collection::vec(arb_value(), 0..5).prop_map(Value::Array),
        prop::collection::vec((arb_string(), arb_value()), 0..5)
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
    ]
}

#[derive(Clone, Debug)]
enum OwnedId {
    Num(i64),
    Str(String),
    Null,
}

impl OwnedId {
    fn get(&self) -> Id<'_> {
        match self {
            Self::Num(n) => Id::Num(*n),
            Self::Str(s) => Id::Str(s),
            Self::Null => Id::Null,
        }
    }
}

fn arb_id() -> impl Strategy<Value = OwnedId> {
    prop_oneof![
        any::<i64>().prop_map(OwnedId::Num),
        Just(OwnedId::Num(i64::MIN)),
        Just(OwnedId::Num(i64::MAX)),
        arb_string().prop_map(OwnedId::Str),
    ]
}

#[derive(Clone, Debug)]
enum OwnedMsg {
    Request { id: OwnedId, method: String, params: Option<Value> },
    Notification { method: String, params: Option<Value> },
    Result { id: OwnedId, result: Value },
    Error { id: OwnedId, code: i64, message: String, data: Option<Value> },
}

fn arb_msg() -> impl Strategy<Value = OwnedMsg> {
    prop_oneof![
        (arb_id(), arb_string(), prop::option::of(arb_structured()))
            .prop_map(|(id, method, params)| OwnedMsg::Request { id, method, params }),
        (arb_string(), prop::option::of(arb_structured()))
            .prop_map(|(method, params)| OwnedMsg::Notification { method, params }),
        (arb_id(), arb_value()).prop_map(|(id, result)| OwnedMsg::Result { id, result }),
        (
            prop_oneof![arb_id(), Just(OwnedId::Null)],
            any::<i64>(),
            arb_string(),
            prop::option::of(arb_value())
        )
            .prop_map(|(id, code, message, data)| OwnedMsg::Error {
                id,
                code,
                message,
                data
            }),
    ]
}

/// How a payload is handed to the encoder.
#[derive(Clone, Copy, Debug)]
enum Encoding {
    /// `Json(&value)`: serialised by serde as it is written.
    Json,
    /// `RawJson` of serde_json's compact text.
    RawCompact,
    /// `RawJson` of pretty-printed text, raw newlines and all.
    RawPretty,
}

fn encode(msg: &OwnedMsg, how: Encoding) -> BytesMut {
    let mut out = BytesMut::new();
    match how {
        Encoding::Json => outgoing(msg, Json).write(&mut out).unwrap(),
        Encoding::RawCompact | Encoding::RawPretty => {
            let texts: Vec<String> = payloads(msg)
                .map(|v| match how {
                    Encoding::RawPretty => serde_json::to_string_pretty(v).unwrap(),
                    _ => serde_json::to_string(v).unwrap(),
                })
                .collect();
            let mut texts = texts.iter();
            outgoing(msg, |_| RawJson::new(texts.next().unwrap())).write(&mut out).unwrap()
        }
    }
    out
}

/// The message's payloads in the order `outgoing` asks for them.
fn payloads(msg: &OwnedMsg) -> impl Iterator<Item = &Value> {
    match msg {
        OwnedMsg::Request { params, .. } | OwnedMsg::Notification { params, .. } => params.as_ref(),
        OwnedMsg::Result { result, .. } => Some(result),
        OwnedMsg::Error { data, .. } => data.as_ref(),
    }
    .into_iter()
}

fn outgoing<'a, P>(msg: &'a OwnedMsg, mut payload: impl FnMut(&'a Value) -> P) -> Outgoing<'a, P> {
    match msg {
        OwnedMsg::Request { id, method, params } => {
            Outgoing::Request { id: id.get(), method, params: params.as_ref().map(&mut payload) }
        }
        OwnedMsg::Notification { method, params } => {
            Outgoing::Notification { method, params: params.as_ref().map(&mut payload) }
        }
        OwnedMsg::Result { id, result } => {
            Outgoing::Result { id: id.get(), result: payload(result) }
        }
        OwnedMsg::Error { id, code, message, data } => Outgoing::Error {
            id: id.get(),
            code: ErrorCode(*code),
            message,
            data: data.as_ref().map(&mut payload),
        },
    }
}

/// serde_json's reading of its own compact text of `v`: what a payload must read back as.
/// (Comparing with `v` itself would also test serde_json's float parsing, which is not exact
/// without its `float_roundtrip` feature.)
fn canonical(v: &Value) -> Value {
    serde_json::from_str(&serde_json::to_string(v).unwrap()).unwrap()
}

fn read_back(raw: Option<RawJson<'_>>) -> Option<Value> {
    raw.map(|r| {
        serde_json::from_str(r.get()).unwrap_or_else(|e| panic!("{:?} is not JSON: {e}", r.get()))
    })
}

fn decode_line(codec: &mut JsonRpcCodec, bytes: &[u8]) -> Frame {
    let mut buf = BytesMut::from(bytes);
    let f = codec.decode(&mut buf).unwrap().expect("one frame");
    assert!(buf.is_empty(), "one frame, and nothing left over");
    f
}

fn check_roundtrip(msg: &OwnedMsg, how: Encoding) -> Result<(), TestCaseError> {
    let wire = encode(msg, how);
    prop_assert_eq!(wire.last(), Some(&b'\n'), "ends with a newline");
    prop_assert!(
        !wire[..wire.len() - 1].contains(&b'\n'),
        "one line: {:?}",
        String::from_utf8_lossy(&wire)
    );
    let mut codec = JsonRpcCodec::new();
    let f = decode_line(&mut codec, &wire);
    let ctx = format!("{:?}", String::from_utf8_lossy(&wire));
    prop_assert_eq!(f.decode_error(), None, "{}", ctx);
    prop_assert_eq!(f.as_bytes(), &wire[..wire.len() - 1]);
    match msg {
        OwnedMsg::Request { id, method, params } => {
            prop_assert_eq!(f.kind(), Kind::Request);
            prop_assert_eq!(f.id(), Some(id.get()));
            prop_assert_eq!(f.method(), Some(method.as_str()));
            prop_assert_eq!(read_back(f.params()), params.as_ref().map(canonical));
        }
        OwnedMsg::Notification { method, params } => {
            prop_assert_eq!(f.kind(), Kind::Notification);
            prop_assert_eq!(f.id(), None);
            prop_assert_eq!(f.method(), Some(method.as_str()));
            prop_assert_eq!(read_back(f.params()), params.as_ref().map(canonical));
        }
        OwnedMsg::Result { id, result } => {
            prop_assert_eq!(f.kind(), Kind::Response);
            prop_assert_eq!(f.id(), Some(id.get()));
            prop_assert_eq!(read_back(f.result()), Some(canonical(result)));
        }
        OwnedMsg::Error { id, code, message, data } => {
            prop_assert_eq!(f.kind(), Kind::Error);
            prop_assert_eq!(f.id(), Some(id.get()));
            let e = f.error().unwrap();
            prop_assert_eq!(e.code, *code);
            prop_assert_eq!(e.message, message.as_str());
            prop_assert_eq!(read_back(e.data), data.as_ref().map(canonical));
        }
    }
    // A `Json` payload is written exactly as serde_json writes it, and read back as that text.
    if let Encoding::Json = how {
        let raw = f.params().or(f.result()).or(f.error().and_then(|e| e.data));
        let want = payloads(msg).next().map(|v| serde_json::to_string(v).unwrap());
        prop_assert_eq!(raw.map(|r| r.get().to_owned()), want);
    }
    Ok(())
}

/// Failures are reported, not written next to this file (the tree is shared; regressions worth
/// keeping become named tests).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn encoded_message_decodes_to_the_same_message(
        msg in arb_msg(),
        how in prop_oneof![Just(Encoding::Json), Just(Encoding::RawCompact), Just(Encoding::RawPretty)],
    ) {
        check_roundtrip(&msg, how)?;
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// The `roundtrip` fuzz target: messages built by `arbitrary` from the bytes, written into one
    /// buffer with `Json`, compact or pretty `RawJson`, decoded and compared field by field.
    #[test]
    fn fuzz_generated_messages_decode_to_what_was_encoded(
        data in proptest::collection::vec(any::<u8>(), 0..4096),
    ) {
        let msgs = generate::messages(&mut arbitrary::Unstructured::new(&data));
        if let Ok(msgs) = msgs {
            generate::check_roundtrip(&msgs);
        }
    }
}

// ---- The oracle ----

/// A member of a generated envelope: its key as written, and its value.
#[derive(Clone, Debug)]
struct Member {
    key: String,
    value: Value,
    /// Write some of the key's characters as `\u00XX` escapes.
    escape_key: bool,
}

fn member_value(key: &str) -> BoxedStrategy<Value> {
    use serde_json::json;
    match key {
        "jsonrpc" => prop_oneof![
            4 => Just(json!("2.0")),
            1 => prop::sample::select(vec![json!("1.0"), json!(2.0), json!("2.0 "), json!(" 2.0"), json!(null), json!(["2.0"]), json!("2")]),
        ]
        .boxed(),
        "id" => prop_oneof![
            3 => any::<i64>().prop_map(|n| json!(n)),
            3 => arb_string().prop_map(Value::String),
            1 => (i64::MAX as u64 + 1..=u64::MAX).prop_map(|n| json!(n)),
            2 => prop::sample::select(vec![json!(null), json!(1.5), json!(1.0), json!(-0.0), json!(true), json!({}), json!([1]), json!(-1), json!(0)]),
        ]
        .boxed(),
        "method" => prop_oneof![
            4 => arb_string().prop_map(Value::String),
            1 => prop::sample::select(vec![json!(1), json!(null), json!(""), json!("rpc.x"), json!(["m"]), json!({"m": 1})]),
        ]
        .boxed(),
        "params" => prop_oneof![
            4 => arb_structured(),
            1 => prop::sample::select(vec![json!("x"), json!(1), json!(null), json!(true)]),
        ]
        .boxed(),
        "error" => prop_oneof![
            4 => error_object(),
            1 => prop::sample::select(vec![json!("x"), json!(1), json!(null), json!([])]),
        ]
        .boxed(),
        _ => arb_value().boxed(),
    }
}

fn error_object() -> impl Strategy<Value = Value> {
    use serde_json::json;
    let code = prop_oneof![
        4 => any::<i64>().prop_map(|n| json!(n)),
        1 => prop::sample::select(vec![json!("1"), json!(1.5), json!(1.0), json!(null), json!(u64::MAX)]),
    ];
    let message = prop_oneof![
        4 => arb_string().prop_map(Value::String),
        1 => prop::sample::select(vec![json!(2), json!(null), json!(["m"])]),
    ];
    (
        prop::option::weighted(0.9, code),
        prop::option::weighted(0.9, message),
        prop::option::of(arb_value()),
        prop::option::weighted(0.2, arb_value()),
    )
        .prop_map(|(code, message, data, extra)| {
            let mut m = Map::new();
            for (k, v) in [("code", code), ("message", message), ("data", data), ("x-extra", extra)]
            {
                if let Some(v) = v {
                    m.insert(k.to_owned(), v);
                }
            }
            Value::Object(m)
        })
}

fn arb_member() -> impl Strategy<Value = Member> {
    let key = prop_oneof![
        6 => prop::sample::select(vec!["jsonrpc", "id", "method", "params", "result", "error"]).prop_map(str::to_owned),
        1 => prop::sample::select(vec!["extra", "ID", "Method", "jsonrpc ", "", "error.code", "parameters"]).prop_map(str::to_owned),
    ];
    (key, any::<bool>()).prop_flat_map(|(key, escape_key)| {
        member_value(&key).prop_map(move |value| Member { key: key.clone(), value, escape_key })
    })
}

/// A message-like object with unique keys, in generated order.
fn arb_envelope() -> impl Strategy<Value = Vec<Member>> {
    // Biased towards the members a valid message has, so valid kinds come up often.
    let base = prop_oneof![
        Just(vec!["jsonrpc", "id", "method"]),
        Just(vec!["jsonrpc", "method"]),
        Just(vec!["jsonrpc", "id", "result"]),
        Just(vec!["jsonrpc", "id", "error"]),
        Just(vec![]),
    ];
    (base, prop::collection::vec(arb_member(), 0..4), any::<bool>())
        .prop_flat_map(|(base, extra, escape_key)| {
            let base: Vec<_> = base
                .into_iter()
                .map(|k| {
                    member_value(k).prop_map(move |value| Member {
                        key: k.to_owned(),
                        value,
                        escape_key,
                    })
                })
                .collect();
            (base, Just(extra))
        })
        .prop_flat_map(|(mut members, extra)| {
            members.extend(extra);
            // Unique keys only: parsers disagree on duplicates, which are tested elsewhere.
            let mut seen = std::collections::HashSet::new();
            members.retain(|m| seen.insert(m.key.clone()));
            Just(members).prop_shuffle()
        })
}

#[derive(Clone, Debug)]
enum Top {
    Message(Vec<Member>),
    Batch(Vec<Top>),
    Other(Value),
}

fn arb_top() -> impl Strategy<Value = Top> {
    let element = prop_oneof![
        4 => arb_envelope().prop_map(Top::Message),
        1 => arb_leaf().prop_map(Top::Other),
        1 => Just(Top::Other(Value::Array(vec![]))),
    ];
    prop_oneof![
        8 => arb_envelope().prop_map(Top::Message),
        2 => prop::collection::vec(element, 0..5).prop_map(Top::Batch),
        1 => arb_leaf().prop_map(Top::Other),
    ]
}

/// Writes `key` (or a string value) as a JSON string, some characters as `\u00XX` escapes
/// when asked.
fn write_key(out: &mut String, key: &str, escape: bool) {
    if !escape {
        out.push_str(&serde_json::to_string(key).unwrap());
        return;
    }
    out.push('"');
    for (i, c) in key.chars().enumerate() {
        if (i % 2 == 0 && c.is_ascii_alphanumeric()) || (i % 3 == 1 && !c.is_ascii()) {
            // UTF-16 escapes, as a surrogate pair above U+FFFF.
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{:04x}", u));
            }
        } else {
            let s = serde_json::to_string(&c.to_string()).unwrap();
            out.push_str(&s[1..s.len() - 1]);
        }
    }
    out.push('"');
}

fn write_top(out: &mut String, top: &Top, ws: &str) {
    match top {
        Top::Message(members) => {
            out.push('{');
            for (i, m) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(ws);
                write_key(out, &m.key, m.escape_key);
                out.push_str(ws);
                out.push(':');
                out.push_str(ws);
                match &m.value {
                    // Envelope strings (`jsonrpc`, `method`, a string `id`) written with escapes
                    // too, so matching "2.0" and the side buffer see them.
                    Value::String(v) => write_key(out, v, m.escape_key),
                    v => out.push_str(&serde_json::to_string(v).unwrap()),
                }
                out.push_str(ws);
            }
            out.push('}');
        }
        Top::Batch(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(ws);
                write_top(out, item, ws);
            }
            out.push_str(ws);
            out.push(']');
        }
        Top::Other(v) => out.push_str(&serde_json::to_string(v).unwrap()),
    }
}

/// What the reference classifier expects of one message.
#[derive(Debug, PartialEq)]
struct Expected {
    kind: Kind,
    /// Every rule the message breaks; the codec must report one of them. Empty when valid.
    violations: Vec<DecodeError>,
    /// What `id()` must return, as JSON (`None` for absent).
    id: Option<Value>,
    method: Option<String>,
    /// `params` of a request or notification, `result` of a response.
    payload: Option<Value>,
    error: Option<(i64, String, Option<Value>)>,
}

/// An id the codec can read: a string, or an integer within i64.
fn readable_id(v: &Value) -> bool {
    v.is_string() || v.as_i64().is_some()
}

/// The reference classifier: JSON-RPC 2.0's rules as `DecodeError` documents them, over a
/// serde_json map (the generated keys are unique, so a map loses nothing).
fn reference_message(v: &Value) -> Expected {
    let Some(m) = v.as_object() else {
        return Expected {
            kind: Kind::Invalid,
            violations: vec![DecodeError::NotAnObject],
            id: None,
            method: None,
            payload: None,
            error: None,
        };
    };
    let mut violations = Vec::new();
    for (k, v) in m {
        match k.as_str() {
            "jsonrpc" if v.as_str() != Some("2.0") => violations.push(DecodeError::WrongVersion),
            "method" if !v.is_string() => violations.push(DecodeError::MethodNotString),
            "params" if !(v.is_object() || v.is_array()) => {
                violations.push(DecodeError::ParamsNotStructured)
            }
            "jsonrpc" | "id" | "method" | "params" | "result" | "error" => {}
            _ => violations.push(DecodeError::UnknownMember),
        }
    }
    if !m.contains_key("jsonrpc") {
        violations.push(DecodeError::MissingVersion);
    }
    let id = m.get("id");
    let (has_method, has_result, has_error) =
        (m.contains_key("method"), m.contains_key("result"), m.contains_key("error"));
    let mut error = None;
    let kind = if has_method {
        if has_result || has_error {
            violations.push(DecodeError::MethodWithOutcome);
        }
        match id {
            None => Kind::Notification,
            Some(Value::Null) => {
                violations.push(DecodeError::NullId);
                Kind::Request
            }
            Some(v) if !readable_id(v) => {
                violations.push(DecodeError::InvalidId);
                Kind::Request
            }
            Some(_) => Kind::Request,
        }
    } else if has_result && has_error {
        violations.push(DecodeError::ResultAndError);
        if m.contains_key("params") {
            violations.push(DecodeError::ParamsOnResponse);
        }
        Kind::Invalid
    } else if has_result || has_error {
        if m.contains_key("params") {
            violations.push(DecodeError::ParamsOnResponse);
        }
        match id {
            None => violations.push(DecodeError::ResponseWithoutId),
            Some(Value::Null) if has_result => violations.push(DecodeError::NullId),
            Some(v) if !v.is_null() && !readable_id(v) => violations.push(DecodeError::InvalidId),
            _ => {}
        }
        if has_error {
            match m["error"].as_object() {
                None => violations.push(DecodeError::ErrorNotObject),
                Some(e) => {
                    let code = e.get("code").and_then(Value::as_i64);
                    let message = e.get("message").and_then(Value::as_str);
                    if code.is_none() {
                        violations.push(DecodeError::ErrorCodeNotInteger);
                    }
                    if message.is_none() {
                        violations.push(DecodeError::ErrorMessageNotString);
                    }
                    if let (Some(c), Some(msg)) = (code, message) {
                        error = Some((c, msg.to_owned(), e.get("data").cloned()));
                    }
                }
            }
            Kind::Error
        } else {
            Kind::Response
        }
    } else {
        violations.push(DecodeError::NoMethodOrOutcome);
        Kind::Invalid
    };
    if !violations.is_empty() {
        // An invalid message still lends its id when it can be read, for the error reply.
        return Expected {
            kind: Kind::Invalid,
            violations,
            id: id.filter(|v| readable_id(v)).cloned(),
            method: None,
            payload: None,
            error: None,
        };
    }
    Expected {
        kind,
        violations,
        id: id.cloned(),
        method: m.get("method").and_then(Value::as_str).map(str::to_owned),
        payload: match kind {
            Kind::Request | Kind::Notification => m.get("params").cloned(),
            Kind::Response => m.get("result").cloned(),
            _ => None,
        },
        error,
    }
}

fn id_json(id: Id<'_>) -> Value {
    match id {
        Id::Num(n) => Value::from(n),
        Id::Str(s) => Value::from(s),
        Id::Null => Value::Null,
    }
}

fn observed(m: &Message<'_>) -> (Kind, Option<Value>, Option<String>, Option<Value>) {
    (
        m.kind(),
        m.id().map(id_json),
        m.method().map(str::to_owned),
        read_back(m.params().or(m.result())),
    )
}

/// Whether the codec's reading of one message is the outcome `want`.
fn matches(m: &Message<'_>, want: &Expected) -> bool {
    // The codec's payload text is the line's own text of the value, so serde_json reads both
    // the same way: compare with the reference's value as is (no `canonical`, whose re-printing
    // would expose serde_json's inexact float parsing).
    let got = observed(m);
    let want_tuple = (want.kind, want.id.clone(), want.method.clone(), want.payload.clone());
    let error_ok = match m.decode_error() {
        None => want.violations.is_empty(),
        Some(e) => want.violations.contains(&e),
    };
    let got_error = m.error().map(|e| (e.code, e.message.to_owned(), read_back(e.data)));
    got == want_tuple && error_ok && got_error == want.error
}

fn check_message(m: &Message<'_>, want: &Expected, line: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        matches(m, want),
        "{}\n  reference: {:#?}\n  codec: {:?} / decode_error {:?} / observed {:?} / error {:?}",
        line,
        want,
        m,
        m.decode_error(),
        observed(m),
        m.error().map(|e| (e.code, e.message.to_owned(), e.data.map(|d| d.get().to_owned())))
    );
    Ok(())
}

fn check_oracle(top: &Top, ws: &str) -> Result<(), TestCaseError> {
    let mut line = String::new();
    write_top(&mut line, top, ws);
    let value: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("the generator wrote invalid JSON {line:?}: {e}"));

    // Both parse paths: alone (scratch) and followed by more frames (in place).
    let mut codec = JsonRpcCodec::new();
    let alone = decode_line(&mut codec, format!("{line}\n").as_bytes());
    let filler =
        "{\"jsonrpc\":\"2.0\",\"method\":\"filler\",\"params\":[1,2,3,4,5,6,7,8,9,10,11]}\n";
    let mut buf = BytesMut::from(format!("{line}\n{filler}{filler}").as_bytes());
    let followed = codec.decode(&mut buf).unwrap().unwrap();
    prop_assert_eq!(&alone, &followed, "both parse paths agree on {}", line);
    let next = codec.decode(&mut buf).unwrap().unwrap();
    prop_assert_eq!(next.method(), Some("filler"));
    let f = alone;

    match &value {
        Value::Array(items) if items.is_empty() => {
            prop_assert_eq!(f.decode_error(), Some(DecodeError::EmptyBatch), "{}", line);
        }
        Value::Array(items) => {
            prop_assert_eq!(f.kind(), Kind::Batch, "{}", line);
            let got: Vec<_> = f.batch().unwrap().collect();
            prop_assert_eq!(got.len(), items.len());
            for (m, item) in got.iter().zip(items) {
                check_message(m, &reference_message(item), &line)?;
            }
        }
        v => check_message(&f.message().unwrap(), &reference_message(v), &line)?,
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(4096))]

    #[test]
    fn codec_classifies_like_the_reference_classifier(
        top in arb_top(),
        ws in prop::sample::select(vec!["", " ", "\t", " \r ", "  "]),
    ) {
        check_oracle(&top, ws)?;
    }
}

/// The generators must reach every kind, or the oracle proves little.
#[test]
fn oracle_generator_reaches_every_kind() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = std::collections::HashSet::new();
    let strategy = arb_envelope();
    for _ in 0..2000 {
        let members = strategy.new_tree(&mut runner).unwrap().current();
        let mut line = String::new();
        write_top(&mut line, &Top::Message(members), "");
        let v: Value = serde_json::from_str(&line).unwrap();
        seen.insert(reference_message(&v).kind);
    }
    for k in [Kind::Request, Kind::Notification, Kind::Response, Kind::Error, Kind::Invalid] {
        assert!(seen.contains(&k), "{k:?} never generated: {seen:?}");
    }
}

// ---- Regressions found by the oracle ----

fn decode_str(line: &str) -> Frame {
    decode_line(&mut JsonRpcCodec::new(), format!("{line}\n").as_bytes())
}

// Regression (found by `codec_classifies_like_the_reference_classifier`): `params` on a response
// was accepted, and as it shared one payload slot with `result`, a `params` after `result`
// replaced the result's text. A response with `params` is now refused.
#[test]
fn params_after_result_does_not_replace_the_result() {
    let f = decode_str(r#"{"jsonrpc":"2.0","id":0,"result":null,"params":[1,2]}"#);
    assert_eq!(f.decode_error(), Some(DecodeError::ParamsOnResponse));
}

// Regression (as above): after `error`, a `params` member replaced the error's span, and
// `error.data` (when it is the error object's last member) then ran on to the end of the
// params: `"d"},"params":[1,2` instead of `"d"`, text that is not even JSON.
#[test]
fn params_after_error_does_not_leak_into_error_data() {
    let f = decode_str(
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":"d"},"params":[1,2]}"#,
    );
    assert_eq!(f.decode_error(), Some(DecodeError::ParamsOnResponse));
}

// Regression (found by the oracle): a message with `params` but neither `method`, `result` nor
// `error` is not a response, yet it was refused as `ParamsOnResponse` instead of
// `NoMethodOrOutcome`, which `DecodeError` documents for exactly this shape.
#[test]
fn params_without_method_or_outcome_is_no_method_or_outcome() {
    for line in [r#"{"jsonrpc":"2.0","id":1,"params":[]}"#, r#"{"jsonrpc":"2.0","params":{}}"#] {
        assert_eq!(decode_str(line).decode_error(), Some(DecodeError::NoMethodOrOutcome), "{line}");
    }
}
