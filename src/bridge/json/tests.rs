use super::*;

#[test]
fn a_request_without_meta_is_not_touched() {
    let e = edit_request(
        Some(r#"{"name":"echo"}"#),
        &RequestEdit { token: Some(7), ..Default::default() },
    );
    assert_eq!(e, Edited::default());
    assert_eq!(edit_request(None, &RequestEdit::default()), Edited::default());
}

#[test]
fn the_progress_token_is_replaced_and_kept() {
    let p = r#"{"name":"s","_meta":{"a":1,"progressToken":"tok\"1","b":[1]},"arguments":{}}"#;
    let e = edit_request(Some(p), &RequestEdit { token: Some(42), ..Default::default() });
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
    let e = edit_request(Some(p), &RequestEdit { drop_meta: &drop, ..Default::default() });
    assert_eq!(e.params.as_deref(), Some(r#"{"x":1}"#));
    let add = members_text(&[("k", "\"v\""), ("n", "1")]);
    assert_eq!(add, r#""k":"v","n":1"#);
    let e = edit_request(None, &RequestEdit { add_meta: &add, ..Default::default() });
    assert_eq!(e.params.as_deref(), Some(r#"{"_meta":{"k":"v","n":1}}"#));
    let e =
        edit_request(Some(r#"{"a":{}}"#), &RequestEdit { add_meta: &add, ..Default::default() });
    assert_eq!(e.params.as_deref(), Some(r#"{"a":{},"_meta":{"k":"v","n":1}}"#));
    // Added after the members kept, the dropped ones gone.
    let e = edit_request(
        Some(r#"{"_meta":{"a":1,"io.modelcontextprotocol/protocolVersion":"x"},"b":2}"#),
        &RequestEdit { drop_meta: &drop, add_meta: &add, ..Default::default() },
    );
    assert_eq!(e.params.as_deref(), Some(r#"{"_meta":{"a":1,"k":"v","n":1},"b":2}"#));
}

#[test]
fn params_that_are_not_objects_are_left_alone() {
    for p in ["[1,2]", "42", r#"{"_meta":[1]}"#, r#"{"_meta":"#] {
        let e = edit_request(Some(p), &RequestEdit { token: Some(1), ..Default::default() });
        assert!(e.token.is_none(), "{p}");
    }
}

#[test]
fn results_are_translated_between_eras() {
    let k = "io.modelcontextprotocol/serverInfo";
    let modern = r#"{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x"}}}"#;
    assert_eq!(legacy_result(modern, k).as_deref(), Some(r#"{"tools":[]}"#));
    assert_eq!(complete_legacy_result(modern, k).as_deref(), Some(r#"{"tools":[]}"#));
    // No resultType at all is complete too; `_meta` keeps what is not the server's identity.
    let bare = r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{},"a":1}}"#;
    assert_eq!(
        complete_legacy_result(bare, k).as_deref(),
        Some(r#"{"content":[],"_meta":{"a":1}}"#)
    );
    // Anything but a complete result is left for the full read, and a result that is not a
    // well-formed object too.
    for other in [
        r#"{"resultType":"input_required","inputRequests":{}}"#,
        r#"{"resultType":"task","task":{}}"#,
        r#"{"resultType":7}"#,
        r#"{"content":[],"resultType":"complete""#,
    ] {
        assert_eq!(complete_legacy_result(other, k), None, "{other}");
    }
    // The full read still strips a task's modern members.
    assert_eq!(
        legacy_result(r#"{"resultType":"task","task":{"x":1},"ttlMs":3}"#, k).as_deref(),
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
