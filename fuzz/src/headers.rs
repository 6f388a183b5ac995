//! The modern era's header validation under hostile input: a POST's headers and body, both from
//! the fuzzer, through `mcp::headers::check`, with these properties:
//!
//! - nothing panics, whatever the bytes (headers that repeat, hold any byte, base64 that does
//!   not decode or decodes to bytes that are not UTF-8; bodies of any shape);
//! - an accepted request says what its headers say: the version header (trimmed) is the
//!   body's version and one of those served, the method header is the body's method, and
//!   `Mcp-Name` (decoded) is the body's name or uri where the method has one;
//! - the borrowed reading of `params` agrees with serde_json's: `name`, `uri`, `arguments` and
//!   `_meta` hold the values serde_json finds there (unless a key is given twice, which the
//!   reading refuses and serde_json resolves to the last);
//! - the headers `mcp::headers::mirror` writes for a body are accepted for that body.
//!
//! Input layout: lines up to the first empty line are headers (`name: value`, the value's
//! bytes kept as they are); the rest is the body.

use bytes::BytesMut;
use http::{HeaderMap, HeaderName, HeaderValue};
use mcpwire::mcp::annotations::ToolHeaders;
use mcpwire::mcp::headers;
use mcpwire::mcp::meta::{RequestParams, str_of};
use mcpwire::{FrameParser, Kind, Limits, RawJson};
use serde_json::Value;

const VERSIONS: [&str; 2] = ["2026-07-28", "2027-01-01"];

const TOOLS: &str = r#"{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"R"},"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"B"},"o":{"type":"object","properties":{"k":{"type":"string","x-mcp-header":"K"}}}}}}]}"#;

/// Splits the input into headers and body.
pub fn split(data: &[u8]) -> (HeaderMap, &[u8]) {
    let mut h = HeaderMap::new();
    let mut rest = data;
    while let Some(nl) = memchr::memchr(b'\n', rest) {
        let line = &rest[..nl];
        rest = &rest[nl + 1..];
        if line.is_empty() {
            break;
        }
        let Some(colon) = memchr::memchr(b':', line) else { continue };
        let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(&line[..colon]), HeaderValue::from_bytes(&line[colon + 1..]))
        else {
            continue;
        };
        h.append(name, value);
    }
    (h, rest)
}

/// The whole check on one input.
pub fn check_headers(data: &[u8]) {
    let (tools, _) = ToolHeaders::from_tools_list(TOOLS).expect("the fixed tool list is valid");
    let (h, body) = split(data);
    let frame = FrameParser::new(Limits::default()).parse(BytesMut::from(body));
    if frame.kind() != Kind::Request {
        return;
    }
    let Some(msg) = frame.message() else { return };
    let method = msg.method().unwrap_or_default();
    if let Ok(e) = headers::check(&h, &msg, &VERSIONS, Some(&tools)) {
        assert!(VERSIONS.contains(&&*e.version), "accepted version {:?}", e.version);
        let one = |name: &str| {
            let mut all = h.get_all(name).iter();
            let v = all.next().expect("an accepted request has the header");
            assert!(all.next().is_none(), "an accepted request repeats {name}");
            v
        };
        let version = one(headers::PROTOCOL_VERSION).to_str().unwrap().trim_matches([' ', '\t']);
        assert_eq!(version, e.version, "version header");
        let m = one(headers::METHOD).to_str().unwrap().trim_matches([' ', '\t']);
        assert_eq!(m, method, "method header");
        let params = RequestParams::of(&msg).expect("an accepted request's params read");
        if let Some(name) = params.mirrored_name(method) {
            let decoded = headers::decode_value("Mcp-Name", one(headers::NAME), true)
                .expect("an accepted name header decodes");
            assert_eq!(str_of(name).as_deref(), Some(&*decoded), "name header");
        }
    }
    compare_with_serde(msg.params());
    // What a client would write for this body passes the check.
    let mut mirrored = HeaderMap::new();
    if headers::mirror(&msg, Some(&tools), &mut mirrored).is_ok() {
        let served = RequestParams::of(&msg)
            .ok()
            .and_then(|p| p.meta().ok().flatten())
            .and_then(|m| m.protocol_version_str())
            .is_some_and(|v| VERSIONS.contains(&&*v));
        let checked = headers::check(&mirrored, &msg, &VERSIONS, Some(&tools));
        // A body the envelope rules refuse (a bad logLevel, say) is refused with the mirrored
        // headers too; anything else must pass.
        if served && let Err(e) = &checked {
            assert_ne!(
                e.code,
                mcpwire::ErrorCode::HEADER_MISMATCH,
                "mirrored headers refused: {e}"
            );
        }
    }
}

/// The borrowed reading of `params` against serde_json's.
fn compare_with_serde(params: Option<RawJson<'_>>) {
    let Some(params) = params else { return };
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(params.get()) else { return };
    let Ok(read) = RequestParams::parse(Some(params)) else {
        // Refused only for a key given twice (serde_json keeps the last).
        assert!(has_duplicate_key(params.get()), "refused params serde_json reads: {params}");
        return;
    };
    for (key, got) in [
        ("name", read.name()),
        ("uri", read.uri()),
        ("arguments", read.arguments()),
        ("_meta", read.raw_meta()),
    ] {
        let want = map.get(key).filter(|v| !v.is_null());
        let got: Option<Value> =
            got.map(|g| serde_json::from_str(g.get()).expect("a member's text is JSON"));
        assert_eq!(got.as_ref(), want, "params.{key}");
    }
}

/// Whether a top-level key of the object repeats.
fn has_duplicate_key(text: &str) -> bool {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Dup;
    impl<'de> Visitor<'de> for Dup {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<bool, A::Error> {
            let mut seen = std::collections::HashSet::new();
            let mut dup = false;
            while let Some(k) = m.next_key::<String>()? {
                m.next_value::<IgnoredAny>()?;
                dup |= !seen.insert(k);
            }
            Ok(dup)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_map(Dup).unwrap_or(false)
}
