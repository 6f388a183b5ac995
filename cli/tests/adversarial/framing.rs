//! Framing, UTF-8 and escapes, JSON oddities and nesting, malformed messages and batches.

use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{
    DEFAULT_MAX_BATCH_LEN, DEFAULT_MAX_DEPTH, INVALID, NO_RATE_LIMIT, NOT_FOUND, PARSE, error_of,
    errors_of, null, ping_of_len, session, tool_text,
};

// ---------------------------------------------------------------------------------------------
// Framing
// ---------------------------------------------------------------------------------------------

/// Lines at and around the frame limit, CRLF, a lone CR, blank lines, byte order marks,
/// UTF-16, trailing bytes, pretty-printed JSON, U+2028/U+2029, NUL and raw control characters,
/// and 10,000 frames in one write.
#[test]
fn framing_edge_cases_get_their_exact_replies_and_the_stream_goes_on() {
    const MAX: usize = 256;
    let max = MAX.to_string();
    let mut args = vec!["--max-frame-bytes", max.as_str()];
    args.extend_from_slice(NO_RATE_LIMIT);
    let rest = session(&args, |s| {
        // Exactly the limit, then the limit plus a CR before the newline: both accepted.
        s.send(format!("{}\n", ping_of_len("exact", MAX)).as_bytes());
        s.send(format!("{}\r\n", ping_of_len("exact-crlf", MAX)).as_bytes());
        // One byte over: -32600, null id (the line is never parsed, so its id is unknown).
        s.send(format!("{}\n", ping_of_len("over", MAX + 1)).as_bytes());
        // An over-long line and a valid frame in the same write.
        let mut both = vec![b'x'; 3 * MAX];
        both.extend_from_slice(
            b"\n{\"jsonrpc\":\"2.0\",\"id\":\"same-write\",\"method\":\"ping\"}\n",
        );
        s.send(&both);
        // A lone CR is JSON whitespace inside a line, not a line ending.
        s.send(b"{\"jsonrpc\":\"2.0\",\r\"id\":\"lone-cr\",\"method\":\"ping\"}\n");
        // Blank and whitespace-only lines are skipped without a reply.
        s.send(b"\n\r\n  \t \r\n\n");
        // A byte order mark on a later frame is dropped; a truncated one is not JSON.
        s.send(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":\"bom\",\"method\":\"ping\"}\n");
        s.send(b"\xEF\xBB{\"jsonrpc\":\"2.0\",\"id\":\"half-bom\",\"method\":\"ping\"}\n");
        // UTF-16LE: not UTF-8 JSON.
        let utf16: Vec<u8> = r#"{"jsonrpc":"2.0","id":"utf16","method":"ping"}"#
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        s.send(&[&utf16[..], b"\n"].concat());
        // Trailing bytes after a complete value.
        s.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"trailing\",\"method\":\"ping\"} x\n");
        s.send(b"{}{}\n");
        // Pretty-printed JSON: each of its five lines is a frame, none of them JSON.
        s.send(b"{\n  \"jsonrpc\": \"2.0\",\n  \"id\": \"pretty\",\n  \"method\": \"ping\"\n}\n");
        // U+2028 and U+2029 raw inside a string do not end a frame.
        s.send(
            "{\"jsonrpc\":\"2.0\",\"id\":\"ls\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"a\u{2028}b\u{2029}c\"}}}\n"
                .as_bytes(),
        );
        // NUL outside a string, before and after the value; a raw control character and a raw
        // tab inside a string (JSON requires them escaped).
        s.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"nul-after\",\"method\":\"ping\"}\0\n");
        s.send(b"\0{\"jsonrpc\":\"2.0\",\"id\":\"nul-before\",\"method\":\"ping\"}\n");
        s.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"ctrl\",\"method\":\"pi\x01ng\"}\n");
        s.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"tab\",\"method\":\"ping\",\"params\":{\"a\":\"x\ty\"}}\n");
        s.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"nul-in\",\"method\":\"ping\",\"params\":{\"a\":\"x\0y\"}}\n");
        // 10,000 frames in one write.
        let many: String = (0..10_000)
            .map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":\"k{i}\",\"method\":\"ping\"}}\n"))
            .collect();
        s.send(many.as_bytes());
    });

    let (errors, results): (Vec<_>, Vec<_>) = rest.iter().partition(|r| r.get("error").is_some());
    let mut answered: Vec<&str> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    for r in &results {
        if r["id"] == "ls" {
            assert_eq!(tool_text(r), ("a\u{2028}b\u{2029}c", false));
        } else {
            assert_eq!(r["result"], json!({}), "{r}");
        }
    }
    answered.sort_unstable();
    let mut expected: Vec<String> = ["exact", "exact-crlf", "same-write", "lone-cr", "bom", "ls"]
        .into_iter()
        .map(String::from)
        .chain((0..10_000).map(|i| format!("k{i}")))
        .collect();
    expected.sort_unstable();
    assert_eq!(answered, expected);

    // Errors come from the read loop, in the order the lines were read.
    let errors: Vec<Value> = errors.into_iter().cloned().collect();
    let reasons: Vec<&str> = errors.iter().map(|e| e["error"]["data"].as_str().unwrap()).collect();
    assert_eq!(
        errors_of(&errors),
        [
            (null(), INVALID), // over
            (null(), INVALID), // the over-long line of the same write
            (null(), PARSE),   // truncated BOM
            (null(), PARSE),   // UTF-16
            (null(), PARSE),   // `… x`
            (null(), PARSE),   // `{}{}`
            (null(), PARSE),   // `{`
            (null(), PARSE),   // `"jsonrpc": "2.0",`
            (null(), PARSE),   // `"id": "pretty",`
            (null(), PARSE),   // `"method": "ping"`
            (null(), PARSE),   // `}`
            (null(), PARSE),   // NUL after
            (null(), PARSE),   // NUL before
            (null(), PARSE),   // raw U+0001 in a string
            (null(), PARSE),   // raw tab in a string
            (null(), PARSE),   // raw NUL in a string
        ],
        "{reasons:#?}"
    );
    assert!(reasons[0].starts_with("frame too large"), "{reasons:?}");
    assert!(reasons[1].starts_with("frame too large"), "{reasons:?}");
    assert_eq!(reasons[4], "trailing bytes after the JSON value");
    assert_eq!(reasons[5], "trailing bytes after the JSON value");
}

/// A ~120-byte request written one byte per millisecond (so it is split at every byte: inside
/// multi-byte UTF-8, inside an escape, between CR and LF) is answered exactly.
#[test]
fn a_frame_sent_one_byte_per_millisecond_is_answered() {
    let message = "h\u{e9}llo \\\"\u{65e5}\u{672c}\\\" \u{1f600}";
    let request = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":\"slow\",\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"{message}\"}}}}}}\r\n"
    );
    assert!((100..140).contains(&request.len()), "{}", request.len());
    let mut took = Duration::ZERO;
    let rest = session(&[], |s| {
        let started = Instant::now();
        for b in request.as_bytes() {
            s.send(std::slice::from_ref(b));
            thread::sleep(Duration::from_millis(1));
        }
        took = started.elapsed();
        let reply = s.take_id("slow");
        assert_eq!(tool_text(&reply), ("h\u{e9}llo \"\u{65e5}\u{672c}\" \u{1f600}", false));
    });
    assert!(took >= Duration::from_millis(request.len() as u64), "{took:?}");
    // `before` may come after `slow`; both are checked. Nothing else was sent.
    assert!(rest.is_empty(), "{rest:?}");
}

// ---------------------------------------------------------------------------------------------
// UTF-8 and escapes
// ---------------------------------------------------------------------------------------------

/// Invalid UTF-8 anywhere in a frame is -32700 with `"id": null` (never replaced with U+FFFD and
/// accepted); bad escapes likewise; valid non-ASCII and escaped surrogate pairs round-trip.
#[test]
fn invalid_utf8_and_bad_escapes_are_parse_errors() {
    let wrap = |inner: &[u8]| -> Vec<u8> {
        [
            &br#"{"jsonrpc":"2.0","id":"u","method":"tools/call","params":{"name":"echo","arguments":{"message":""#[..],
            inner,
            b"\"}}}\n",
        ]
        .concat()
    };
    const NOT_UTF8: &str = "frame is not valid UTF-8";
    const BAD_ESCAPE: &str = "invalid JSON near byte";
    let bad: Vec<(&str, Vec<u8>, &str)> = vec![
        ("overlong C0 AF", wrap(b"a\xC0\xAFb"), NOT_UTF8),
        ("surrogate ED A0 80", wrap(b"a\xED\xA0\x80b"), NOT_UTF8),
        ("lone continuation byte", wrap(b"a\x80b"), NOT_UTF8),
        ("above U+10FFFF", wrap(b"a\xF4\x90\x80\x80b"), NOT_UTF8),
        ("Latin-1", wrap(b"caf\xE9"), NOT_UTF8),
        // A sequence cut short by the end of the frame.
        (
            "truncated at the end",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"ping\"}\xE6\x97\n".to_vec(),
            NOT_UTF8,
        ),
        ("truncated in a string", wrap(b"\xE6\x97"), NOT_UTF8),
        (
            "invalid in a key",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"ping\",\"params\":{\"k\xFF\":1}}\n"
                .to_vec(),
            NOT_UTF8,
        ),
        ("lone \\uD800", wrap(br"\uD800"), BAD_ESCAPE),
        ("lone \\uDC00", wrap(br"\uDC00"), BAD_ESCAPE),
        ("inverted pair", wrap(br"\uDC00\uD800"), BAD_ESCAPE),
        ("\\uD800\\u0041", wrap(br"\uD800\u0041"), BAD_ESCAPE),
        ("\\u12G4", wrap(br"\u12G4"), BAD_ESCAPE),
        ("\\u12", wrap(br"\u12"), BAD_ESCAPE),
        ("\\x escape", wrap(br"\x41"), BAD_ESCAPE),
    ];
    let rest = session(NO_RATE_LIMIT, |s| {
        for (_, line, _) in &bad {
            s.send(line);
        }
        // A NUL escaped in a method name is a valid (unknown) method.
        s.line(r#"{"jsonrpc":"2.0","id":"nul-method","method":"pi\u0000ng"}"#);
        // Valid non-ASCII, raw and as an escaped surrogate pair, comes back exactly.
        s.line(r#"{"jsonrpc":"2.0","id":"ok","method":"tools/call","params":{"name":"echo","arguments":{"message":"é日本😀 \ud83d\ude00"}}}"#);
    });
    let (errors, results): (Vec<Value>, Vec<Value>) =
        rest.into_iter().partition(|r| r.get("error").is_some());
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["id"], "ok");
    assert_eq!(tool_text(&results[0]), ("é日本😀 😀", false));
    let got = errors_of(&errors);
    let mut want: Vec<(Value, i64)> = bad.iter().map(|_| (null(), PARSE)).collect();
    want.push((json!("nul-method"), NOT_FOUND));
    let names: Vec<_> = bad.iter().map(|(n, _, _)| *n).collect();
    assert_eq!(got, want, "cases: {names:?}; replies: {errors:#?}");
    for (e, (name, _, reason)) in errors.iter().zip(&bad) {
        let data = e["error"]["data"].as_str().unwrap();
        assert!(data.starts_with(reason), "{name}: {data}");
    }
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

/// Nesting: 100,000 unclosed `[`, 100,000 balanced levels inside `params`, 50,000 unclosed
/// `[{"":`, and depth exactly at the default limit (accepted) and one past it (refused).
#[test]
fn deep_nesting_is_refused_without_a_stack_overflow() {
    let deep_params = |levels: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":"deep{levels}","method":"ping","params":{}{}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
    };
    let rest = session(NO_RATE_LIMIT, |s| {
        s.line(&"[".repeat(100_000));
        s.line(&deep_params(100_000));
        s.line(&r#"[{"":"#.repeat(50_000));
        // The message object is level 1: `params` arrays up to level 128 are accepted.
        s.line(&deep_params(DEFAULT_MAX_DEPTH - 1));
        s.line(&deep_params(DEFAULT_MAX_DEPTH));
        // A deep value inside a tool's arguments, which the tool deserialises (and drops).
        s.line(&format!(
            r#"{{"jsonrpc":"2.0","id":"deep-args","method":"tools/call","params":{{"name":"echo","arguments":{{"message":"deep","x":{}{}}}}}}}"#,
            "[".repeat(DEFAULT_MAX_DEPTH - 3),
            "]".repeat(DEFAULT_MAX_DEPTH - 3)
        ));
    });
    let (errors, results): (Vec<Value>, Vec<Value>) =
        rest.into_iter().partition(|r| r.get("error").is_some());
    let mut ids: Vec<_> = results.iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    ids.sort();
    assert_eq!(ids, ["deep-args", "deep127"], "{results:?}");
    for r in &results {
        if r["id"] == "deep-args" {
            assert_eq!(tool_text(r), ("deep", false));
        }
    }
    assert_eq!(errors_of(&errors), vec![(null(), PARSE); 4], "{errors:#?}");
    let too_deep = format!("nesting deeper than the limit of {DEFAULT_MAX_DEPTH}");
    assert_eq!(errors[1]["error"]["data"], too_deep.as_str());
    assert_eq!(errors[3]["error"]["data"], too_deep.as_str());
}

/// Duplicate envelope keys are refused (-32600, with the id when it is unambiguous); a
/// response with a duplicate key is never answered. Non-JSON literals, trailing commas,
/// comments, single quotes and integers beyond 64 bits are -32700; an id beyond i64 is -32600.
#[test]
fn duplicate_keys_and_json_oddities_get_their_exact_replies() {
    let cases: Vec<(&str, Option<(Value, i64)>)> = vec![
        // Which `id` wins is ambiguous, so the reply cannot carry one.
        (r#"{"jsonrpc":"2.0","id":"a","id":"b","method":"ping"}"#, Some((null(), INVALID))),
        (
            r#"{"jsonrpc":"2.0","id":"dm","method":"ping","method":"tools/list"}"#,
            Some((json!("dm"), INVALID)),
        ),
        (
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":"dj","method":"ping"}"#,
            Some((json!("dj"), INVALID)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"dp","method":"ping","params":{},"params":[]}"#,
            Some((json!("dp"), INVALID)),
        ),
        // Response-shaped: never answered, even when broken.
        (r#"{"jsonrpc":"2.0","id":"dr","result":1,"result":2}"#, None),
        (
            r#"{"jsonrpc":"2.0","id":"de","error":{"code":1,"message":"m"},"error":{"code":2,"message":"n"}}"#,
            None,
        ),
        (r#"{"jsonrpc":"2.0","id":"dc","error":{"code":1,"code":2,"message":"m"}}"#, None),
        // Not JSON.
        (r#"{"jsonrpc":"2.0","id":"tc","method":"ping",}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":"cm","method":"ping"/* c */}"#, Some((null(), PARSE))),
        (r#"{'jsonrpc':'2.0','id':'sq','method':'ping'}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":"nan","method":"ping","params":[NaN]}"#, Some((null(), PARSE))),
        (
            r#"{"jsonrpc":"2.0","id":"inf","method":"ping","params":[Infinity]}"#,
            Some((null(), PARSE)),
        ),
        (r#"{"jsonrpc":"2.0","id":"lead0","method":"ping","params":[01]}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":"dot5","method":"ping","params":[.5]}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":"dot","method":"ping","params":[1.]}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":"plus","method":"ping","params":[+1]}"#, Some((null(), PARSE))),
        // Integers beyond u64 and i64 are not parsed at all (README, "Choices": -32700).
        (r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#, Some((null(), PARSE))),
        (r#"{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}"#, Some((null(), PARSE))),
        // An integer id that fits u64 but not i64: -32600, the id unreadable.
        (r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#, Some((null(), INVALID))),
        // Valid JSON numbers in params, however odd: answered.
        (
            r#"{"jsonrpc":"2.0","id":"zeros","method":"ping","params":[-0,-0.0,-0e5]}"#,
            Some((json!("zeros"), 0)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"i64","method":"ping","params":[-9223372036854775808,18446744073709551615]}"#,
            Some((json!("i64"), 0)),
        ),
    ];
    let rest = session(NO_RATE_LIMIT, |s| {
        for (line, _) in &cases {
            s.line(line);
        }
    });
    let (errors, results): (Vec<Value>, Vec<Value>) =
        rest.into_iter().partition(|r| r.get("error").is_some());
    let want_errors: Vec<_> =
        cases.iter().filter_map(|(_, w)| w.clone()).filter(|(_, code)| *code != 0).collect();
    assert_eq!(errors_of(&errors), want_errors, "{errors:#?}");
    let mut answered: Vec<_> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    answered.sort_unstable();
    assert_eq!(answered, ["i64", "zeros"], "{results:?}");
    assert!(errors[0]["error"]["data"].as_str().unwrap().contains("`id` given twice"));
}

/// Numbers JSON allows but a double cannot hold (`1e400`, 10,000 digits): whatever the server
/// decides, it decides it for that frame alone, with -32700 and `"id": null` or an answer.
#[test]
fn huge_numbers_are_one_frame_s_business() {
    let cases = [
        r#"{"jsonrpc":"2.0","id":"e400","method":"ping","params":[1e400]}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":"e-400","method":"ping","params":[1e-400]}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":"digits","method":"ping","params":[{}]}}"#,
            "9".repeat(10_000)
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":"frac","method":"ping","params":[0.{}]}}"#,
            "1".repeat(10_000)
        ),
    ];
    let rest = session(NO_RATE_LIMIT, |s| {
        for line in &cases {
            s.line(line);
        }
    });
    assert_eq!(rest.len(), cases.len(), "{rest:?}");
    for r in &rest {
        if r.get("error").is_some() {
            assert_eq!(error_of(r), (null(), PARSE), "{r}");
        } else {
            assert_eq!(r["result"], json!({}), "{r}");
        }
    }
    eprintln!("huge numbers: {rest:?}");
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC and MCP shape
// ---------------------------------------------------------------------------------------------

/// Messages of the wrong shape: -32600 with the id when it can be read, `"id": null` when not;
/// responses, however broken, never answered; a batch answered with an array.
#[test]
fn malformed_messages_get_their_exact_replies() {
    let cases: Vec<(&str, Option<(Value, i64)>)> = vec![
        (r#"{"id":"v-missing","method":"ping"}"#, Some((json!("v-missing"), INVALID))),
        (r#"{"jsonrpc":"1.0","id":"v1","method":"ping"}"#, Some((json!("v1"), INVALID))),
        (r#"{"jsonrpc":2.0,"id":"vnum","method":"ping"}"#, Some((json!("vnum"), INVALID))),
        (r#"{"jsonrpc":"2.0 ","id":"vsp","method":"ping"}"#, Some((json!("vsp"), INVALID))),
        (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":1.0,"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Some((null(), INVALID))),
        (r#"{"jsonrpc":"2.0","id":-7,"method":"ping"}"#, Some((json!(-7), 0))),
        (r#"{"jsonrpc":"2.0","id":"neither"}"#, Some((json!("neither"), INVALID))),
        (r#"{"jsonrpc":"2.0","id":"m-num","method":5}"#, Some((json!("m-num"), INVALID))),
        (r#"{"jsonrpc":"2.0","id":"m-null","method":null}"#, Some((json!("m-null"), INVALID))),
        (r#"{"jsonrpc":"2.0","id":"m-empty","method":""}"#, Some((json!("m-empty"), NOT_FOUND))),
        (
            r#"{"jsonrpc":"2.0","id":"m-rpc","method":"rpc.discover"}"#,
            Some((json!("m-rpc"), NOT_FOUND)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"p-str","method":"ping","params":"x"}"#,
            Some((json!("p-str"), INVALID)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"p-num","method":"ping","params":1}"#,
            Some((json!("p-num"), INVALID)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"p-null","method":"ping","params":null}"#,
            Some((json!("p-null"), INVALID)),
        ),
        (r#"{"jsonrpc":"2.0","method":"notifications/x","result":1}"#, Some((null(), INVALID))),
        (
            r#"{"jsonrpc":"2.0","id":"extra","method":"ping","extra":1}"#,
            Some((json!("extra"), INVALID)),
        ),
        ("42", Some((null(), INVALID))),
        ("null", Some((null(), INVALID))),
        (r#""x""#, Some((null(), INVALID))),
        ("{}", Some((null(), INVALID))),
        ("[]", Some((null(), INVALID))),
        // Responses, broken or not, are never answered.
        (r#"{"jsonrpc":"2.0","id":"both","result":1,"error":{"code":1,"message":"m"}}"#, None),
        (r#"{"jsonrpc":"2.0","id":"e-nocode","error":{"message":"m"}}"#, None),
        (r#"{"jsonrpc":"2.0","id":"e-strcode","error":{"code":"1","message":"m"}}"#, None),
        (r#"{"jsonrpc":"2.0","id":"e-float","error":{"code":1.5,"message":"m"}}"#, None),
        (r#"{"jsonrpc":"2.0","id":"e-nomsg","error":{"code":1}}"#, None),
        (r#"{"jsonrpc":"2.0","result":1}"#, None),
        (r#"{"jsonrpc":"2.0","id":"r-params","result":1,"params":{}}"#, None),
    ];
    let batches = [
        // Three elements that are not messages: three errors, in one array.
        "[1,2,3]",
        // A nested batch is an element that is not a message.
        r#"[[{"jsonrpc":"2.0","id":"nested","method":"ping"}]]"#,
        // A request, a notification and garbage: the request's result and one error.
        r#"[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},5]"#,
        // Only a response: nothing at all is sent back.
        r#"[{"jsonrpc":"2.0","id":77,"result":{}}]"#,
    ];
    let rest = session(NO_RATE_LIMIT, |s| {
        for (line, _) in &cases {
            s.line(line);
        }
        for line in &batches {
            s.line(line);
        }
    });
    let (arrays, singles): (Vec<Value>, Vec<Value>) = rest.into_iter().partition(Value::is_array);
    let (errors, results): (Vec<Value>, Vec<Value>) =
        singles.into_iter().partition(|r| r.get("error").is_some());
    // The read loop's own replies come in the order read; -32601 comes from the handler, which
    // runs as a task.
    let (handler_errors, errors): (Vec<Value>, Vec<Value>) =
        errors.into_iter().partition(|r| r["error"]["code"] == NOT_FOUND);
    let want = |pick: fn(i64) -> bool| -> Vec<(Value, i64)> {
        cases.iter().filter_map(|(_, w)| w.clone()).filter(|(_, code)| pick(*code)).collect()
    };
    assert_eq!(errors_of(&errors), want(|c| c == PARSE || c == INVALID), "{errors:#?}");
    let mut handler_errors = errors_of(&handler_errors);
    handler_errors.sort_by_key(|(id, _)| id.to_string());
    assert_eq!(handler_errors, want(|c| c == NOT_FOUND));
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!((&results[0]["id"], &results[0]["result"]), (&json!(-7), &json!({})));

    // Batch replies come from their own tasks; their order among themselves is not fixed.
    let mut arrays: Vec<Vec<(Value, i64)>> = arrays
        .iter()
        .map(|a| {
            a.as_array()
                .unwrap()
                .iter()
                .map(|r| if r.get("error").is_some() { error_of(r) } else { (r["id"].clone(), 0) })
                .collect()
        })
        .collect();
    arrays.sort_by_key(Vec::len);
    assert_eq!(
        arrays,
        [
            vec![(null(), INVALID)],
            vec![(json!("b1"), 0), (null(), INVALID)],
            vec![(null(), INVALID); 3],
        ]
    );
}

/// A batch of 10^6 elements is refused whole with one -32600 (none of it runs); a batch of
/// exactly the limit is answered in full; `--max-batch-len` and `--no-batches` take effect.
#[test]
fn batches_past_their_limits_are_refused_whole() {
    let batch = |n: usize, prefix: &str| {
        let items: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"jsonrpc":"2.0","id":"{prefix}{i}","method":"ping"}}"#))
            .collect();
        format!("[{}]", items.join(","))
    };
    let started = Instant::now();
    let million = format!("[{}{{}}]", "{},".repeat(999_999));
    let rest = session(&[], |s| {
        s.line(&million);
        s.line(&batch(DEFAULT_MAX_BATCH_LEN, "at"));
    });
    let (arrays, singles): (Vec<Value>, Vec<Value>) = rest.into_iter().partition(Value::is_array);
    assert_eq!(errors_of(&singles), [(null(), INVALID)], "{singles:?}");
    assert_eq!(
        singles[0]["error"]["data"],
        format!("batch of 1000000 elements exceeds the limit of {DEFAULT_MAX_BATCH_LEN}")
    );
    assert_eq!(arrays.len(), 1);
    let mut ids: Vec<_> = arrays[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    let mut want: Vec<_> = (0..DEFAULT_MAX_BATCH_LEN).map(|i| format!("at{i}")).collect();
    want.sort();
    assert_eq!(ids, want);
    eprintln!("batch of 10^6: {:.2?}", started.elapsed());

    let rest = session(&["--max-batch-len", "3"], |s| {
        s.line(&batch(3, "three"));
        s.line(&batch(4, "four"));
    });
    let (arrays, singles): (Vec<Value>, Vec<Value>) = rest.into_iter().partition(Value::is_array);
    assert_eq!(errors_of(&singles), [(null(), INVALID)]);
    assert_eq!(arrays.len(), 1);
    assert_eq!(arrays[0].as_array().unwrap().len(), 3);

    let rest = session(&["--no-batches"], |s| s.line(&batch(1, "off")));
    assert_eq!(errors_of(&rest), [(null(), INVALID)]);
    assert_eq!(rest[0]["error"]["data"], "batches are not accepted");
}
