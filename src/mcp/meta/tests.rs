use super::*;

#[test]
fn str_of_agrees_with_serde_json_on_every_kind_of_string() {
    let cases = [
        r#""plain""#,
        r#""""#,
        r#""with \"escape\"""#,
        r#""tab\there""#,
        "\"raw\ttab\"",
        "\"raw\u{1}ctl\"",
        "\"del\u{7f}\"",
        r#""héllo 世界""#,
        r#""a"b""#,
        r#"""#,
        "7",
        "null",
        r#"{"a":1}"#,
        r#""\u0041""#,
        r#""trailing\""#,
    ];
    for text in cases {
        let ours = str_of(RawJson::new(text)).map(Cow::into_owned);
        let theirs = serde_json::from_str::<String>(text).ok();
        assert_eq!(ours, theirs, "{text:?}");
    }
}

use crate::{FrameParser, Limits};

fn frame(json: &str) -> crate::Frame {
    FrameParser::new(Limits::default()).parse(bytes::BytesMut::from(json))
}

const V: [&str; 1] = ["2026-07-28"];

fn envelope_of(params: &str) -> Result<String, Rejection> {
    let f = frame(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#));
    let p = RequestParams::of(&f.message().unwrap())?;
    check_envelope(&p, &V).map(|e| e.version.into_owned())
}

#[test]
fn a_full_envelope_passes_and_borrows() {
    let f = frame(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\"b","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"x":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"warning","traceparent":"00-ab-cd-01","tracestate":"k=v","baggage":"b=1","progressToken":9}}}"#,
    );
    let p = RequestParams::of(&f.message().unwrap()).unwrap();
    assert_eq!(p.name_str().as_deref(), Some("a\"b"));
    let e = check_envelope(&p, &V).unwrap();
    assert!(matches!(e.version, Cow::Borrowed("2026-07-28")));
    assert_eq!(e.capabilities.get(), r#"{"x":{}}"#);
    assert_eq!(e.client_info.unwrap().get(), r#"{"name":"c","version":"1"}"#);
    assert_eq!(e.log_level, Some(3));
    assert_eq!(e.meta.traceparent().unwrap().get(), r#""00-ab-cd-01""#);
    assert_eq!(e.meta.tracestate().unwrap().get(), r#""k=v""#);
    assert_eq!(e.meta.baggage().unwrap().get(), r#""b=1""#);
    assert_eq!(e.meta.progress_token().unwrap().get(), "9");
}

#[test]
fn each_malformed_envelope_gets_its_own_error() {
    let vpair = r#""io.modelcontextprotocol/protocolVersion""#;
    let cases = [
        (r#"{}"#, ErrorCode::INVALID_PARAMS, "must be an object carrying"),
        (r#"[1]"#, ErrorCode::INVALID_PARAMS, "params must be an object"),
        (r#"{"_meta":7}"#, ErrorCode::INVALID_PARAMS, "must be an object"),
        (r#"{"_meta":[]}"#, ErrorCode::INVALID_PARAMS, "must be an object"),
        (
            r#"{"_meta":{}}"#,
            ErrorCode::INVALID_PARAMS,
            "is missing io.modelcontextprotocol/protocolVersion and",
        ),
        (
            &format!(
                r#"{{"_meta":{{{vpair}:5,"io.modelcontextprotocol/clientCapabilities":{{}}}}}}"#
            ),
            ErrorCode::INVALID_PARAMS,
            "must be a string",
        ),
        (
            &format!(
                r#"{{"_meta":{{{vpair}:"2026-07-28","io.modelcontextprotocol/clientCapabilities":3}}}}"#
            ),
            ErrorCode::INVALID_PARAMS,
            "must be an object",
        ),
        (
            &format!(r#"{{"_meta":{{{vpair}:"2026-07-28"}}}}"#),
            ErrorCode::INVALID_PARAMS,
            "is missing io.modelcontextprotocol/clientCapabilities",
        ),
        (
            &format!(
                r#"{{"_meta":{{{vpair}:"2026-07-28",{vpair}:"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}"#
            ),
            ErrorCode::INVALID_PARAMS,
            "names io.modelcontextprotocol/protocolVersion twice",
        ),
        (
            &format!(
                r#"{{"_meta":{{{vpair}:"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/logLevel":"loud"}}}}"#
            ),
            ErrorCode::INVALID_PARAMS,
            "must be one of debug",
        ),
        (
            &format!(
                r#"{{"_meta":{{{vpair}:"1900-01-01","io.modelcontextprotocol/clientCapabilities":{{}}}}}}"#
            ),
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        ),
    ];
    for (params, code, says) in cases {
        let e = envelope_of(params).unwrap_err();
        assert_eq!(e.code, code, "{params}: {e}");
        assert!(e.message.contains(says), "{params}: {e}");
    }
    let e = envelope_of(&format!(
        r#"{{"_meta":{{{vpair}:"1900-01-01","io.modelcontextprotocol/clientCapabilities":{{}}}}}}"#
    ))
    .unwrap_err();
    assert_eq!(e.data.as_deref(), Some(r#"{"supported":["2026-07-28"],"requested":"1900-01-01"}"#));
}

#[test]
fn escaped_versions_are_unescaped_and_still_match() {
    let v = envelope_of(
        r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-\u0032\u0038","io.modelcontextprotocol/clientCapabilities":{}}}"#,
    );
    assert_eq!(v.unwrap(), "2026-07-28");
}

#[test]
fn result_types_are_read() {
    assert_eq!(result_type(RawJson::new(r#"{"a":1}"#)).unwrap(), None);
    assert_eq!(
        result_type(RawJson::new(r#"{"resultType":"complete"}"#)).unwrap().as_deref(),
        Some("complete")
    );
    assert!(result_type(RawJson::new(r#"{"resultType":1}"#)).is_err());
    assert!(result_type(RawJson::new(r#"[]"#)).is_err());
}

#[test]
fn mirrored_names_follow_the_method() {
    let p = RequestParams::parse(Some(RawJson::new(r#"{"name":"t","uri":"u"}"#))).unwrap();
    assert_eq!(p.mirrored_name("tools/call").unwrap().get(), r#""t""#);
    assert_eq!(p.mirrored_name("prompts/get").unwrap().get(), r#""t""#);
    assert_eq!(p.mirrored_name("resources/read").unwrap().get(), r#""u""#);
    assert_eq!(p.mirrored_name("tools/list"), None);
    let null = RequestParams::parse(Some(RawJson::new(r#"{"name":null}"#))).unwrap();
    assert_eq!(null.mirrored_name("tools/call"), None);
}

/// `params` bodies that the parse's member table records, partly records, or leaves to the
/// scanner, for the reads through it to be compared with the scanner's.
const TABLE_CASES: &[&str] = &[
    r#"{"name":"route","arguments":{"region":"us","n":7},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"e":{}},"traceparent":"00-a"}}"#,
    "{ \"_meta\" : {\n\"io.modelcontextprotocol/protocolVersion\" :\"2025-11-25\" , \"io.modelcontextprotocol/clientCapabilities\":{} } ,\t\"uri\":\"file:///a\" }",
    r#"{"name":"a","name":"b"}"#,
    r#"{"_meta":{"progressToken":1},"_meta":{"progressToken":2}}"#,
    r#"{"_meta":{"traceparent":"x","traceparent":"y"}}"#,
    r#"{"_meta":"not an object","name":"x"}"#,
    r#"{"_meta":null,"arguments":null,"name":null}"#,
    r#"{"n\u0061me":"escaped key","_meta":{"\u0070rogressToken":3}}"#,
    r#"{"name":"esc\"aped value","requestState":"s","inputResponses":{"a":{}},"_meta":{"baggage":"\u00e9"}}"#,
    r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"name":"ninth"}"#,
    r#"{"a":1,"b":2,"c":3,"name":"x","_meta":{"progressToken":1,"traceparent":"t","tracestate":"s","baggage":"b"}}"#,
    r#"{"arguments":[1],"name":7,"taskId":"t-1"}"#,
    "{}",
    "[1,2]",
];

#[test]
fn reads_through_the_parse_s_member_table_agree_with_the_scanner_s() {
    use crate::mcp::types::CallToolParams;
    for params in TABLE_CASES {
        let f = frame(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#));
        let msg = f.message().unwrap();
        let (indexed, scanned) = (RequestParams::of(&msg), RequestParams::parse(msg.params()));
        match (&indexed, &scanned) {
            (Ok(i), Ok(s)) => {
                fn reads<'a>(p: &RequestParams<'a>) -> impl PartialEq + std::fmt::Debug + use<'a> {
                    (p.raw_params(), p.raw_meta(), p.name(), p.uri(), p.arguments(), p.meta())
                }
                assert_eq!(reads(i), reads(s), "{params}");
                for method in ["tools/call", "resources/read", "tasks/get"] {
                    assert_eq!(i.mirrored_name(method), s.mirrored_name(method), "{params}");
                }
            }
            (i, s) => assert_eq!(i.as_ref().err(), s.as_ref().err(), "{params}"),
        }
        let typed = CallToolParams::of(&msg);
        let from_text = msg.params().map(CallToolParams::from_params);
        if let Some(from_text) = from_text {
            assert_eq!(typed, from_text, "{params}");
        }
    }
    // The table was used where it could be: these are not all left to the scanner.
    let recorded = TABLE_CASES
        .iter()
        .filter(|p| {
            let f = frame(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{p}}}"#));
            f.message().unwrap().param_records().is_some_and(|(_, meta)| meta.is_some())
        })
        .count();
    assert_eq!(recorded, 5);
}
