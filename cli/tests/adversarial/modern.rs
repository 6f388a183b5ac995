//! The 2026-07-28 envelope and `subscriptions/listen` under hostile input, over stdio: each
//! fault gets its own precise error with the request's id, and the stream goes on.

use serde_json::{Value, json};

use crate::harness::{Server, error_of, session};

const V: &str = "io.modelcontextprotocol/protocolVersion";
const C: &str = "io.modelcontextprotocol/clientCapabilities";

fn modern(id: &str, method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn meta() -> Value {
    json!({V: "2026-07-28", C: {}})
}

#[test]
fn each_malformed_envelope_gets_its_own_error_and_the_stream_goes_on() {
    let cases: Vec<(&str, String, i64)> = vec![
        ("meta-number", modern("meta-number", "tools/list", &json!({"_meta": 7})), -32602),
        ("meta-array", modern("meta-array", "tools/list", &json!({"_meta": [V]})), -32602),
        (
            "version-number",
            modern("version-number", "tools/list", &json!({"_meta": {V: 20260728, C: {}}})),
            -32602,
        ),
        ("no-caps", modern("no-caps", "tools/list", &json!({"_meta": {V: "2026-07-28"}})), -32602),
        (
            "caps-string",
            modern("caps-string", "tools/list", &json!({"_meta": {V: "2026-07-28", C: "all"}})),
            -32602,
        ),
        (
            "old-version",
            modern("old-version", "tools/list", &json!({"_meta": {V: "1900-01-01", C: {}}})),
            -32022,
        ),
        (
            "bad-level",
            modern(
                "bad-level",
                "tools/list",
                &json!({"_meta": {V: "2026-07-28", C: {}, "io.modelcontextprotocol/logLevel": 3}}),
            ),
            -32602,
        ),
        // The same key twice: refused, never resolved to one of them.
        (
            "twice",
            format!(
                r#"{{"jsonrpc":"2.0","id":"twice","method":"tools/list","params":{{"_meta":{{"{V}":"2026-07-28","{V}":"1900-01-01","{C}":{{}}}}}}}}"#
            ),
            -32602,
        ),
        ("init", modern("init", "initialize", &json!({"_meta": meta()})), -32601),
        ("ping", modern("ping-modern", "ping", &json!({"_meta": meta()})), -32601),
        (
            "caps",
            modern(
                "caps",
                "tools/call",
                &json!({"name": "confirm", "arguments": {"question": "?"}, "_meta": meta()}),
            ),
            -32021,
        ),
    ];
    let mut data = None;
    let rest = session(&[], |s| {
        for (_, line, _) in &cases {
            s.line(line);
        }
        // The stateless requests still work after all of it.
        s.line(&modern("discover", "server/discover", &json!({"_meta": meta()})));
        let d = s.take_id("discover");
        assert_eq!(d["result"]["supportedVersions"], json!(["2026-07-28"]), "{d}");
        data = Some(s.take_id("old-version")["error"]["data"].clone());
    });
    assert_eq!(data.unwrap(), json!({"supported": ["2026-07-28"], "requested": "1900-01-01"}));
    let mut got: Vec<(Value, i64)> = rest.iter().map(error_of).collect();
    got.sort_by_key(|(id, _)| id.to_string());
    let mut want: Vec<(Value, i64)> = cases
        .iter()
        .filter(|(id, _, _)| *id != "old-version")
        .map(|(id, _, code)| (json!(if *id == "ping" { "ping-modern" } else { id }), *code))
        .collect();
    want.sort_by_key(|(id, _)| id.to_string());
    assert_eq!(got, want);
}

#[test]
fn a_flood_of_subscriptions_is_bounded_per_connection() {
    const N: usize = 2_000;
    let mut s = Server::start(&[]);
    let listen = |i: usize| {
        modern(
            &format!("sub{i}"),
            "subscriptions/listen",
            &json!({"_meta": meta(),
            "notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
        )
    };
    let mut flood = String::new();
    for i in 0..N {
        flood.push_str(&listen(i));
        flood.push('\n');
    }
    s.send(flood.as_bytes());
    s.line(r#"{"jsonrpc":"2.0","id":"probe","method":"ping"}"#);
    let replies = s.until("probe");
    let acks: Vec<&Value> = replies
        .iter()
        .filter(|r| r["method"] == "notifications/subscriptions/acknowledged")
        .collect();
    let refused = replies
        .iter()
        .filter(|r| {
            r["error"]["code"] == -32000 && r["id"].as_str().is_some_and(|i| i.starts_with("sub"))
        })
        .count();
    // Each stream open is acknowledged first, tagged with its id, with only what it honours.
    assert_eq!(acks.len(), 16, "{:?}", &replies[..4.min(replies.len())]);
    for a in &acks {
        let id = &a["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"];
        assert!(id.as_str().is_some_and(|i| i.starts_with("sub")), "{a}");
        assert_eq!(a["params"]["notifications"], json!({"toolsListChanged": true}), "{a}");
    }
    assert_eq!(refused, N - 16);
    // Cancelling one opens a place for another, once its handler is gone (the cancellation
    // drops it on the server's own time: a listen sent at once may still find no place).
    let first = acks[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
    s.line(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": first}}).to_string());
    let mut acked = false;
    for attempt in 0..100 {
        let id = format!("sub{}", N + attempt);
        s.line(&listen(N + attempt));
        let r = s.take(|r| {
            r["id"] == id.as_str()
                || r["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == id.as_str()
        });
        if r["method"] == "notifications/subscriptions/acknowledged" {
            acked = true;
            break;
        }
        assert_eq!(r["error"]["code"], -32000, "{r}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(acked, "no place opened after a cancellation");
    assert!(s.peak_rss() < 256 << 20, "peak RSS {} MiB", s.peak_rss() >> 20);
    assert!(s.alive());
}
