//! Multiplexer abuse: floods of unknown responses and cancellations, error storms, colliding ids.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{INVALID, PARSE, error_of, errors_of, session, tool_text};

// ---------------------------------------------------------------------------------------------
// Multiplexer abuse
// ---------------------------------------------------------------------------------------------

/// 10^5 responses for ids the server never sent (results, errors, string and numeric ids, and
/// error responses with `"id": null`), then 10^5 cancellations of requests it never received
/// (and some malformed ones): the server answers none of them, and answers the ping.
#[test]
fn a_flood_of_unknown_responses_and_cancellations_is_dropped_silently() {
    const N: usize = 100_000;
    let started = Instant::now();
    let mut flood = String::with_capacity(16 << 20);
    for i in 0..N {
        let line = match i % 4 {
            0 => format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{}}}}"#),
            1 => format!(r#"{{"jsonrpc":"2.0","id":"r{i}","result":{{"x":[1,2]}}}}"#),
            2 => {
                format!(r#"{{"jsonrpc":"2.0","id":{i},"error":{{"code":-32000,"message":"no"}}}}"#)
            }
            _ => r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
                .to_owned(),
        };
        flood.push_str(&line);
        flood.push('\n');
    }
    for i in 0..N {
        let line = match i % 5 {
            0 => format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":"c{i}"}}}}"#),
            1 => r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#.to_owned(),
            2 => r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":1}}}"#.to_owned(),
            _ => format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{i},"reason":"r"}}}}"#),
        };
        flood.push_str(&line);
        flood.push('\n');
    }
    let mut ping_after = Duration::ZERO;
    let rest = session(&[], |s| {
        let sent = Instant::now();
        s.send(flood.as_bytes());
        s.line(r#"{"jsonrpc":"2.0","id":"probe","method":"ping"}"#);
        assert_eq!(s.take_id("probe")["result"], json!({}));
        ping_after = sent.elapsed();
    });
    assert!(rest.is_empty(), "{rest:?}");
    eprintln!(
        "flood of {} MiB: answered the probe {ping_after:.2?} after it began; test took {:.2?}",
        flood.len() >> 20,
        started.elapsed()
    );
}

/// Garbage storms: 10,000 lines that are not JSON earn -32700 replies with `"id": null` at the
/// default rate (a burst of 4, then 4 a second), the rest dropped; 10,000 invalid requests that
/// carry an id are each answered once with that id; the ping still gets through.
#[test]
fn an_error_storm_is_rate_limited_and_addressed_errors_all_answered() {
    const N: usize = 10_000;
    let garbage = "not json\n".repeat(N);
    let addressed: String =
        (0..N).map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":5}}\n")).collect();
    let started = Instant::now();
    let rest = session(&[], |s| {
        s.send(garbage.as_bytes());
        s.send(addressed.as_bytes());
    });
    let elapsed = started.elapsed();
    let errors = errors_of(&rest);
    let unaddressed = errors.iter().filter(|(id, _)| id.is_null()).count();
    assert!(errors.iter().filter(|(id, _)| id.is_null()).all(|(_, code)| *code == PARSE));
    // The burst, and at most 4 more per second the session lasted.
    let allowed = 4 + (4.0 * elapsed.as_secs_f64()).ceil() as usize;
    assert!((4..=allowed).contains(&unaddressed), "{unaddressed} in {elapsed:?}");
    let mut ids: Vec<i64> = errors
        .iter()
        .filter(|(id, _)| !id.is_null())
        .map(|(id, code)| {
            assert_eq!(*code, INVALID);
            id.as_i64().unwrap()
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..N as i64).collect::<Vec<_>>());
    eprintln!("error storm: {unaddressed} unaddressed replies in {elapsed:.2?}");
}

/// Colliding ids: a request reusing an id still in flight is refused with -32600 and that id
/// (the first one keeps running and can be cancelled, after which it answers nothing); `"1"`
/// and `1` are different ids; cancelling a finished request does nothing.
#[test]
fn colliding_ids_and_late_cancellations() {
    let rest = session(&[], |s| {
        s.line(r#"{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"sleep","arguments":{"ms":30000}}}"#);
        s.line(r#"{"jsonrpc":"2.0","id":"dup","method":"ping"}"#);
        let reply = s.take_id("dup");
        assert_eq!(error_of(&reply), (json!("dup"), INVALID), "{reply}");
        assert_eq!(reply["error"]["data"], "a request with this id is already in flight");
        s.line(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"dup"}}"#,
        );

        s.line(r#"{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{"name":"sleep","arguments":{"ms":200}}}"#);
        s.line(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert_eq!(s.take_id(1)["result"], json!({}));
        assert_eq!(tool_text(&s.take_id("1")), ("slept 200", false));

        s.line(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
        s.line(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"init"}}"#,
        );
    });
    // Nothing for the cancelled sleep, nor for the late cancellations.
    assert!(rest.is_empty(), "{rest:?}");
}
