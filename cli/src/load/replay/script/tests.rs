use super::*;

const HEADER: &str = "{\"mcpwire_capture\":1,\"source\":\"stdio\"}\n";

fn line(t: u64, dir: &str, frame: &str) -> String {
    format!("{{\"t_us\":{t},\"dir\":\"{dir}\",\"conn\":0,\"frame\":{frame}}}\n")
}

/// A legacy session: the handshake, two echo calls (the second answered isError), a list
/// and a call answered with an error, with notifications and a batch between.
fn capture() -> String {
    let mut c = HEADER.to_owned();
    c += &line(0, "c2s", r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#);
    c += &line(5, "s2c", r#"{"jsonrpc":"2.0","id":0,"result":{}}"#);
    c += &line(6, "c2s", r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    c += &line(
        1_000_000,
        "c2s",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"a"},"_meta":{"x":1}}}"#,
    );
    c += &line(1_000_100, "s2c", r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#);
    c += &line(
        2_000_000,
        "c2s",
        r#"{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
    );
    c += &line(
        2_000_100,
        "s2c",
        r#"{"jsonrpc":"2.0","id":"b","result":{"content":[],"isError":true}}"#,
    );
    c += &line(2_500_000, "c2s", r#"[{"jsonrpc":"2.0","id":9,"method":"ping"}]"#);
    c += &line(3_000_000, "c2s", r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    c += &line(
        3_000_100,
        "s2c",
        r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[],"resultType":"complete"}}"#,
    );
    c += &line(
        4_000_000,
        "c2s",
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}"#,
    );
    c += &line(
        4_000_100,
        "s2c",
        r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"no"}}"#,
    );
    c += "{\"t_us\":4000200,\"dir\":\"c2s\",\"conn\":0,\"bad\":\"x\",\"reason\":\"not JSON\"}\n";
    c
}

fn script(text: &str, speed: f64, sample: f64, looped: bool) -> Script {
    Script::read(text.as_bytes(), "test", speed, sample, looped).unwrap()
}

#[test]
fn a_capture_becomes_its_requests_with_their_offsets_and_answers() {
    let s = script(&capture(), 1.0, 1.0, false);
    assert_eq!(s.len(), 4);
    let names: Vec<(&str, u64)> = s.ops.iter().map(|o| (o.name.as_str(), o.weight)).collect();
    assert_eq!(names, [("tools/call echo", 2), ("tools/list", 1), ("tools/call nope", 1)]);
    let offsets: Vec<u64> = (0..4).map(|i| s.due(i).unwrap().as_millis() as u64).collect();
    assert_eq!(offsets, [0, 1000, 2000, 3000]);
    assert_eq!(s.due(4), None);
    // _meta is dropped; the rest of the params stays.
    let (m, p, e) = s.request(0);
    assert_eq!((m, p), ("tools/call", Some(r#"{"arguments":{"message":"a"},"name":"echo"}"#)));
    assert_eq!(e, Some(&Shape::Result { result_type: None, is_error: false }));
    assert_eq!(s.request(1).2, Some(&Shape::Result { result_type: None, is_error: true }));
    assert_eq!(s.request(2).1, None);
    assert_eq!(s.request(3).2, Some(&Shape::Error(-32602)));
    let left = &s.summary()["left_out"];
    assert_eq!(
        (&left["handshake"], &left["notifications"], &left["batches"], &left["bad_frames"]),
        (&json!(1), &json!(1), &json!(1), &json!(1))
    );
    assert_eq!(s.summary()["recorded_rate_rps"], 1.0);
}

#[test]
fn speed_loop_and_due_before() {
    let s = script(&capture(), 2.0, 1.0, true);
    // Twice as fast: 0, 0.5, 1, 1.5 s; the loop starts over one mean gap (0.5 s) later.
    let at: Vec<u64> = (0..6).map(|i| s.due(i).unwrap().as_millis() as u64).collect();
    assert_eq!(at, [0, 500, 1000, 1500, 2000, 2500]);
    assert_eq!(s.due_before(Duration::ZERO), 0);
    assert_eq!(s.due_before(Duration::from_millis(1)), 1);
    assert_eq!(s.due_before(Duration::from_millis(2001)), 5);
    assert!((s.rate() - 2.0).abs() < 1e-9, "{}", s.rate());
    let once = script(&capture(), 1.0, 1.0, false);
    assert_eq!(once.due_before(Duration::from_secs(100)), 4);
}

#[test]
fn a_sample_is_fixed_and_near_its_share() {
    let mut c = HEADER.to_owned();
    for i in 0..10_000u64 {
        c += &line(
            i * 1000,
            "c2s",
            &format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list"}}"#),
        );
    }
    let a = script(&c, 1.0, 0.25, false);
    let b = script(&c, 1.0, 0.25, false);
    assert_eq!(a.len(), b.len());
    assert!((2300..2700).contains(&a.len()), "{}", a.len());
    assert_eq!(a.summary()["unanswered"], a.len());
}

#[test]
fn no_request_is_a_precise_error() {
    let mut c = HEADER.to_owned();
    c += &line(0, "c2s", r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#);
    let e = Script::read(c.as_bytes(), "t", 1.0, 1.0, false).unwrap_err();
    assert!(e.starts_with("no request to replay (1 handshake"), "{e}");
    let e = Script::read(&b"nonsense\n"[..], "t", 1.0, 1.0, false).unwrap_err();
    assert!(e.contains("line 1: not JSON"), "{e}");
}

#[test]
fn shapes_compare_as_the_issue_asks() {
    let ok = Shape::Result { result_type: None, is_error: false };
    let tool_err = Shape::Result { result_type: None, is_error: true };
    assert_eq!(
        compare(Some(&ok), &Shape::of_result(r#"{"content":[],"resultType":"complete"}"#)),
        Ok(())
    );
    assert_eq!(compare(Some(&ok), &tool_err).unwrap_err(), "mismatch_tool_error");
    assert_eq!(compare(Some(&tool_err), &ok).unwrap_err(), "mismatch_tool_ok");
    assert_eq!(compare(Some(&ok), &Shape::Error(-32601)).unwrap_err(), "mismatch_rpc_error_-32601");
    assert_eq!(
        compare(Some(&Shape::Error(-32602)), &Shape::Error(-32601)).unwrap_err(),
        "mismatch_rpc_error_-32601"
    );
    assert_eq!(compare(Some(&Shape::Error(-32602)), &Shape::Error(-32602)), Ok(()));
    assert_eq!(compare(Some(&Shape::Error(-32602)), &ok).unwrap_err(), "mismatch_result");
    let input = Shape::of_result(r#"{"resultType":"input_required"}"#);
    assert_eq!(compare(Some(&ok), &input).unwrap_err(), "mismatch_result_type_input_required");
    assert_eq!(compare(None, &Shape::Error(-1)).unwrap_err(), "rpc_error_-1");
    assert_eq!(compare(None, &tool_err), Ok(()));
}

#[test]
fn extreme_offsets_neither_panic_nor_overflow() {
    let mut c = HEADER.to_owned();
    c += &line(0, "c2s", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    c += &line(u64::MAX, "c2s", r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    for looped in [false, true] {
        let s = script(&c, 0.001, 1.0, looped);
        assert_eq!(s.due(0), Some(Duration::ZERO));
        assert!(s.due(1).unwrap() > Duration::from_secs(1 << 50));
        assert_eq!(s.due(2).is_some(), looped);
        let _ = s.due(u64::MAX);
        assert!(s.due_before(Duration::MAX) >= 2);
    }
}

#[test]
fn past_the_most_operations_the_rest_are_one_and_keep_their_methods() {
    let mut c = HEADER.to_owned();
    for i in 0..(DEFAULT_MAX_OPERATIONS as u64 + 50) {
        let frame = format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"m/{i}"}}"#);
        c += &line(i, "c2s", &frame);
    }
    let s = script(&c, 1.0, 1.0, false);
    assert_eq!(s.ops.len(), DEFAULT_MAX_OPERATIONS);
    assert_eq!(s.ops.last().unwrap().name, "other");
    assert_eq!(s.ops.last().unwrap().weight, 51);
    let last = s.len() as u64 - 1;
    assert_eq!(s.request(last).0, format!("m/{last}"));
}
