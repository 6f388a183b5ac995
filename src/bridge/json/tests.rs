use super::*;
use crate::{Frame, FrameParser, Limits};

fn parse(line: String) -> Frame {
    FrameParser::new(Limits::default()).parse(line.as_str().into())
}

/// `edit` applied to `params` read both ways, from their text and from the members a request's
/// parse recorded (when it records them): the two must agree.
fn edit(params: &str, edit: &RequestEdit<'_>) -> Edited {
    let scanned = edit_request(Some(Members::scanned(params)), edit);
    let f = parse(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#));
    if let Some(members) = f.message().and_then(|msg| msg.param_members()) {
        assert_eq!(edit_request(Some(members), edit), scanned, "{params}");
    }
    scanned
}

/// `strip` of `result` read both ways, as [`edit`] does for params.
fn both(result: &str, strip: fn(Members<'_>, &str) -> Option<String>) -> Option<String> {
    let k = "io.modelcontextprotocol/serverInfo";
    let scanned = strip(Members::scanned(result), k);
    let f = parse(format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#));
    if let Some(members) = f.message().and_then(|msg| msg.result_members()) {
        assert_eq!(strip(members, k), scanned, "{result}");
    }
    scanned
}

fn legacy(result: &str) -> Option<String> {
    both(result, legacy_result)
}

fn complete(result: &str) -> Option<String> {
    both(result, complete_legacy_result)
}

#[test]
fn a_request_without_meta_is_not_touched() {
    let e = edit(r#"{"name":"echo"}"#, &RequestEdit { token: Some(7), ..Default::default() });
    assert_eq!(e, Edited::default());
    assert_eq!(edit_request(None, &RequestEdit::default()), Edited::default());
}

#[test]
fn the_progress_token_is_replaced_and_kept() {
    let p = r#"{"name":"s","_meta":{"a":1,"progressToken":"tok\"1","b":[1]},"arguments":{}}"#;
    let e = edit(p, &RequestEdit { token: Some(42), ..Default::default() });
    assert_eq!(
        e.params.as_deref(),
        Some(r#"{"name":"s","_meta":{"a":1,"progressToken":42,"b":[1]},"arguments":{}}"#)
    );
    assert_eq!(e.token.as_deref(), Some(r#""tok\"1""#));
}

#[test]
fn meta_members_are_dropped_and_added() {
    let p = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"x":1}"#;
    let drop = ["io.modelcontextprotocol/protocolVersion"];
    let e = edit(p, &RequestEdit { drop_meta: &drop, ..Default::default() });
    assert_eq!(e.params.as_deref(), Some(r#"{"x":1}"#));
    let add = members_text(&[("k", "\"v\""), ("n", "1")]);
    assert_eq!(add, r#""k":"v","n":1"#);
    let e = edit_request(None, &RequestEdit { add_meta: &add, ..Default::default() });
    assert_eq!(e.params.as_deref(), Some(r#"{"_meta":{"k":"v","n":1}}"#));
    let e = edit(r#"{"a":{}}"#, &RequestEdit { add_meta: &add, ..Default::default() });
    assert_eq!(e.params.as_deref(), Some(r#"{"a":{},"_meta":{"k":"v","n":1}}"#));
    // Added after the members kept, the dropped ones gone.
    let e = edit(
        r#"{"_meta":{"a":1,"io.modelcontextprotocol/protocolVersion":"x"},"b":2}"#,
        &RequestEdit { drop_meta: &drop, add_meta: &add, ..Default::default() },
    );
    assert_eq!(e.params.as_deref(), Some(r#"{"_meta":{"a":1,"k":"v","n":1},"b":2}"#));
}

#[test]
fn params_that_are_not_objects_are_left_alone() {
    for p in ["[1,2]", "42", r#"{"_meta":[1]}"#, r#"{"_meta":"#] {
        let e = edit(p, &RequestEdit { token: Some(1), ..Default::default() });
        assert!(e.token.is_none(), "{p}");
    }
}

#[test]
fn results_are_translated_between_eras() {
    let k = "io.modelcontextprotocol/serverInfo";
    let modern = r#"{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x"}}}"#;
    assert_eq!(legacy(modern).as_deref(), Some(r#"{"tools":[]}"#));
    assert_eq!(complete(modern).as_deref(), Some(r#"{"tools":[]}"#));
    // No resultType at all is complete too; `_meta` keeps what is not the server's identity.
    let bare = r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{},"a":1}}"#;
    assert_eq!(complete(bare).as_deref(), Some(r#"{"content":[],"_meta":{"a":1}}"#));
    // Anything but a complete result is left for the full read, and a result that is not a
    // well-formed object too.
    for other in [
        r#"{"resultType":"input_required","inputRequests":{}}"#,
        r#"{"resultType":"task","task":{}}"#,
        r#"{"resultType":7}"#,
        r#"{"content":[],"resultType":"complete""#,
    ] {
        assert_eq!(complete(other), None, "{other}");
    }
    // The full read still strips a task's modern members.
    assert_eq!(
        legacy(r#"{"resultType":"task","task":{"x":1},"ttlMs":3}"#).as_deref(),
        Some(r#"{"task":{"x":1}}"#)
    );
    assert_eq!(
        modern_result(r#"{"tools":[]}"#, k, r#"{"name":"x"}"#).as_deref(),
        Some(
            r#"{"tools":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x"}}}"#
        )
    );
    assert_eq!(progress_token(r#"{"progressToken": 12 ,"progress":1}"#), Some(12));
    let note = r#"{"_meta":{"sub":7,"x":1},"y":2}"#;
    assert_eq!(meta_member(note, "sub"), Some("7"));
    assert_eq!(
        set_meta_member(note, "sub", "\"c\"").as_deref(),
        Some(r#"{"_meta":{"sub":"c","x":1},"y":2}"#)
    );
    assert_eq!(progress_token(r#"{"progressToken":"a"}"#), None);
    assert_eq!(
        set_member(r#"{"progressToken":12,"progress":1}"#, "progressToken", "\"a\"").as_deref(),
        Some(r#"{"progressToken":"a","progress":1}"#)
    );
}

#[test]
fn params_with_nothing_to_edit_go_as_they_came() {
    let drop = ["io.modelcontextprotocol/protocolVersion"];
    let e = RequestEdit { token: Some(3), drop_meta: &drop, ..Default::default() };
    // A `_meta` with neither the token nor a member dropped: nothing is written again,
    // whitespace and an empty `_meta` included.
    for p in [
        r#"{"name":"echo","_meta":{"a":1}}"#,
        r#"{ "_meta" : { } , "x" : [1] }"#,
        r#"{"_meta":{"a":1},"_meta":{"b":2}}"#,
    ] {
        assert_eq!(edit(p, &e), Edited::default(), "{p}");
    }
    // The parse recorded these (the fast path is the one taken), and not those below.
    let f = parse(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a":1}}}"#.into());
    assert!(f.message().unwrap().param_records().unwrap().1.is_some());
    // Any `_meta` that holds one is edited, recorded or not: a second one, one whose keys
    // were written with an escape, one past the slots the parse records.
    let many = (0..9).map(|i| format!(r#""k{i}":{i}"#)).collect::<Vec<_>>().join(",");
    for p in [
        r#"{"_meta":{"a":1},"_meta":{"progressToken":"t"}}"#.to_owned(),
        r#"{"_meta":{"\u0061":1,"progressToken":"t"}}"#.to_owned(),
        format!(r#"{{{many},"_meta":{{"progressToken":"t"}}}}"#),
        format!(r#"{{"_meta":{{{many},"progressToken":"t"}}}}"#),
    ] {
        let out = edit(&p, &e);
        assert_eq!(out.token.as_deref(), Some(r#""t""#), "{p}");
        assert!(out.params.unwrap().contains(r#""progressToken":3"#), "{p}");
    }
    let f = parse(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{{many}}}}}"#));
    assert!(f.message().unwrap().param_records().is_none());
}

#[test]
fn results_read_from_recorded_members_strip_the_same() {
    let info = r#""io.modelcontextprotocol/serverInfo":{"name":"x"}"#;
    for r in [
        format!(
            r#"{{"content":[{{"type":"text","text":"hi"}}],"resultType":"complete","_meta":{{{info},"a":1}}}}"#
        ),
        format!(r#"{{ "content" : [] , "_meta" : {{ {info} }} , "ttlMs" : 0 }}"#),
        // The second `_meta` is not the one the parse recorded.
        format!(r#"{{"_meta":{{"a":1}},"_meta":{{{info},"b":2}}}}"#),
        format!(r#"{{"_meta":7,"_meta":{{{info},"b":2}}}}"#),
    ] {
        assert!(complete(&r).is_some(), "{r}");
        assert!(!legacy(&r).unwrap().contains("serverInfo"), "{r}");
    }
    let r = format!(r#"{{"content":[],"resultType":"complete","_meta":{{{info}}}}}"#);
    let f = parse(format!(r#"{{"jsonrpc":"2.0","id":1,"result":{r}}}"#));
    assert!(f.message().unwrap().result_records().unwrap().1.is_some());
    assert_eq!(complete(&r).as_deref(), Some(r#"{"content":[]}"#));
}
