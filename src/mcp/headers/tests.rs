use serde_json::json;

use super::*;
use crate::{FrameParser, Limits};

const V: [&str; 1] = ["2026-07-28"];

fn frame(method: &str, params: &serde_json::Value) -> crate::Frame {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    FrameParser::new(Limits::default()).parse(bytes::BytesMut::from(&body.to_string()[..]))
}

fn meta() -> serde_json::Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

fn tools() -> ToolHeaders {
    let list = json!({"tools": [{"name": "t", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "n": {"type": "integer", "x-mcp-header": "N"},
        "flag": {"type": "boolean", "x-mcp-header": "Flag"},
        "deep": {"type": "object", "properties": {"k": {"type": "string", "x-mcp-header": "K"}}}}}}]});
    ToolHeaders::from_tools_list(&list.to_string()).unwrap().0
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_bytes(v.as_bytes()).unwrap(),
        );
    }
    h
}

fn run(h: &HeaderMap, method: &str, params: &serde_json::Value) -> Result<(), Rejection> {
    let t = tools();
    let f = frame(method, params);
    check(h, &f.message().unwrap(), &V, Some(&t)).map(|_| ())
}

fn call(args: serde_json::Value) -> serde_json::Value {
    json!({"name": "t", "arguments": args, "_meta": meta()})
}

const BASE: [(&str, &str); 3] =
    [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "t")];

fn with(extra: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut all = BASE.to_vec();
    all.extend_from_slice(extra);
    headers(&all)
}

fn code(r: Result<(), Rejection>) -> i64 {
    r.map_or_else(|e| e.code.get(), |()| 0)
}

#[test]
fn matching_headers_pass_whatever_the_name_case_and_surrounding_space() {
    let h = headers(&[
        ("mcp-protocol-version", " 2026-07-28\t"),
        ("MCP-METHOD", "tools/call"),
        ("mcp-name", "t"),
        ("Mcp-Param-Region", "us-west1"),
        ("mcp-param-n", "42"),
        ("MCP-PARAM-FLAG", "true"),
        ("Mcp-Param-K", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    ]);
    let args = json!({"region": "us-west1", "n": 42.0, "flag": true, "deep": {"k": "Hello, 世界"}});
    run(&h, "tools/call", &call(args)).unwrap();
}

#[test]
fn values_compare_with_case() {
    let h = headers(&[
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "TOOLS/CALL"),
        ("Mcp-Name", "t"),
    ]);
    assert_eq!(code(run(&h, "tools/call", &call(json!({})))), -32020);
}

#[test]
fn each_rung_fails_with_its_own_code() {
    let no_meta = json!({"name": "t"});
    let m = meta();
    let cases: Vec<(HeaderMap, &str, serde_json::Value, i64)> = vec![
        // Repeated routing header, even before the envelope is read.
        (with(&[("Mcp-Method", "tools/call")]), "tools/call", no_meta.clone(), -32020),
        (headers(&BASE), "tools/call", no_meta, -32602),
        (headers(&BASE[1..]), "tools/call", call(json!({})), -32020),
        (headers(&[BASE[0], BASE[2]]), "tools/call", call(json!({})), -32020),
        (headers(&BASE[..2]), "tools/call", call(json!({})), -32020),
        (
            headers(&[("MCP-Protocol-Version", "2025-11-25"), BASE[1], BASE[2]]),
            "tools/call",
            call(json!({})),
            -32020,
        ),
        (with(&[]), "tools/call", json!({"name": "u", "_meta": m}), -32020),
        (
            headers(&[("MCP-Protocol-Version", "1900-01-01"), ("Mcp-Method", "tools/list")]),
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1900-01-01",
                             "io.modelcontextprotocol/clientCapabilities": {}}}),
            -32022,
        ),
        (headers(&[BASE[0], ("Mcp-Method", "tools/list")]), "tools/list", json!({"_meta": m}), 0),
        // tools/list needs no Mcp-Name; a stray one is ignored.
        (
            headers(&[BASE[0], ("Mcp-Method", "tools/list"), ("Mcp-Name", "x")]),
            "tools/list",
            json!({"_meta": m}),
            0,
        ),
    ];
    for (i, (h, method, params, want)) in cases.into_iter().enumerate() {
        assert_eq!(code(run(&h, method, &params)), want, "case {i}");
    }
}

type Case = (Vec<(&'static str, &'static str)>, serde_json::Value, i64);

#[test]
fn param_headers_must_mirror_present_arguments_exactly() {
    let cases: Vec<Case> = vec![
        (vec![("Mcp-Param-Region", "us-west1")], json!({"region": "us-west1"}), 0),
        (vec![], json!({"region": "us-west1"}), -32020),
        (vec![("Mcp-Param-Region", "us-east1")], json!({"region": "us-west1"}), -32020),
        (vec![("Mcp-Param-Region", "us-west1")], json!({}), -32020),
        (vec![], json!({"region": null}), 0),
        (vec![("Mcp-Param-N", "42")], json!({"n": 42}), 0),
        (vec![("Mcp-Param-N", "42.0")], json!({"n": 42}), 0),
        (vec![("Mcp-Param-N", "43")], json!({"n": 42}), -32020),
        (vec![("Mcp-Param-N", "forty-two")], json!({"n": 42}), -32020),
        (vec![("Mcp-Param-Flag", "false")], json!({"flag": false}), 0),
        (vec![("Mcp-Param-Flag", "False")], json!({"flag": false}), -32020),
        (vec![("Mcp-Param-Region", "=?base64?dXMtd2VzdDE=?=")], json!({"region": "us-west1"}), 0),
        (
            vec![("Mcp-Param-Region", "=?base64?not base64?=")],
            json!({"region": "us-west1"}),
            -32020,
        ),
        // Valid base64 of bytes that are not UTF-8.
        (vec![("Mcp-Param-Region", "=?base64?//79?=")], json!({"region": "x"}), -32020),
        (
            vec![("Mcp-Param-Region", "us-west1"), ("Mcp-Param-Region", "us-west1")],
            json!({"region": "us-west1"}),
            -32020,
        ),
        (vec![("Mcp-Param-K", "v")], json!({"deep": {"k": "v"}}), 0),
        (vec![("Mcp-Param-Unknown", "anything")], json!({}), 0),
    ];
    for (i, (extra, args, want)) in cases.into_iter().enumerate() {
        assert_eq!(code(run(&with(&extra), "tools/call", &call(args))), want, "case {i}");
    }
}

#[test]
fn names_in_base64_and_invalid_characters() {
    let params = json!({"name": "wëird name", "_meta": meta()});
    let plain = headers(&[BASE[0], BASE[1], ("Mcp-Name", "=?base64?d8OraXJkIG5hbWU=?=")]);
    assert_eq!(code(run(&plain, "tools/call", &params)), 0);
    let raw = HeaderValue::from_bytes("w\u{eb}ird name".as_bytes()).unwrap();
    let mut h = headers(&BASE[..2]);
    h.insert(NAME, raw);
    let e = run(&h, "tools/call", &params).unwrap_err();
    assert_eq!(e.code, ErrorCode::HEADER_MISMATCH);
    assert!(e.message.contains("invalid characters"), "{e}");
}

#[test]
fn mirror_writes_what_check_accepts() {
    let t = tools();
    let args = json!({"region": " padded ", "n": -7, "flag": false, "deep": {"k": "=?base64?x?="}});
    let f = frame("tools/call", &call(args));
    let msg = f.message().unwrap();
    let mut h = HeaderMap::new();
    mirror(&msg, Some(&t), &mut h).unwrap();
    assert_eq!(h[PROTOCOL_VERSION], "2026-07-28");
    assert_eq!(h[METHOD], "tools/call");
    assert_eq!(h[NAME], "t");
    assert_eq!(h["mcp-param-region"], "=?base64?IHBhZGRlZCA=?=");
    assert_eq!(h["mcp-param-n"], "-7");
    assert_eq!(h["mcp-param-flag"], "false");
    check(&h, &msg, &V, Some(&t)).unwrap();
}

#[test]
fn integers_compare_as_numbers_within_the_safe_range() {
    assert_eq!(integer("42"), Some(42));
    assert_eq!(integer("42.0"), Some(42));
    assert_eq!(integer("4.2e1"), Some(42));
    assert_eq!(integer("-7"), Some(-7));
    assert_eq!(integer("42.5"), None);
    assert_eq!(integer("9007199254740993"), None);
    assert_eq!(integer("--1"), None);
    assert_eq!(integer(""), None);
}

#[test]
fn each_routing_header_given_twice_is_refused_naming_it() {
    let args = call(json!({}));
    // Given once each (others present, in any order): accepted.
    let h = headers(&[("Accept", "*/*"), BASE[2], ("X-Other", "1"), BASE[1], BASE[0]]);
    assert_eq!(code(run(&h, "tools/call", &args)), 0);
    for (i, (name, value)) in BASE.into_iter().enumerate() {
        // The second spelled in other case: the same header.
        let again = (&*name.to_ascii_uppercase(), value);
        let mut pairs = BASE.to_vec();
        pairs.insert(i + 1, again);
        let e = run(&headers(&pairs), "tools/call", &args).unwrap_err();
        assert_eq!(e.code, ErrorCode::HEADER_MISMATCH, "{name}");
        let want = format!("Header mismatch: {} is given more than once", name.to_lowercase());
        assert_eq!(e.message, want);
    }
}
