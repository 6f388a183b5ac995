//! `mcpwire bridge` in front of a legacy-only child that misbehaves on purpose
//! (`bridge/legacy_child.py`): requests the child sends that concern no client, or that could
//! concern several, are refused with a precise error and never sent to a client; garbage from
//! a client or from the child costs no one else anything; a child that exits is started again.
//! Modern clients in front of it get `server/discover` from the held `initialize`.

#[path = "bridge/support.rs"]
mod support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::{Answers, Client, legacy_child, start, text};

fn child() -> Vec<String> {
    legacy_child()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The child's `roots/list`, sent when no client request was in flight, was refused with the
/// reason; a `sampling/createMessage` sent while one client's request is in flight goes to
/// that client and its answer back to the child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_request_goes_to_the_client_it_concerns_or_is_refused() {
    let c = child();
    let bridge = start(&[], &args(&c));
    let sampler = Answers { sampled: "from A".into(), ..Answers::default() };
    let a = Client::new(&bridge.url, false, sampler).await;
    let roots = a.call("roots_error", json!({}), json!({})).await.unwrap();
    assert!(text(&roots).contains("-32000"), "{roots}");
    assert!(text(&roots).contains("roots/list was sent to no client"), "{roots}");
    assert!(text(&roots).contains("no client request is in flight"), "{roots}");
    let sampled = a.call("sample", json!({"text": "hi"}), json!({})).await.unwrap();
    assert_eq!(text(&sampled), "sampled: from A");
    let asked = a.seen.requests.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].0, "sampling/createMessage");
    assert_eq!(asked[0].1["messages"][0]["content"]["text"], "hi");
}

/// With requests of two clients in flight, the child's sampling request names neither: it is
/// refused (the child gets -32000 saying why) and neither client is asked anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_child_request_is_refused_not_misrouted() {
    let c = child();
    let bridge = start(&[], &args(&c));
    let a = Arc::new(Client::new(&bridge.url, false, Answers::default()).await);
    let b = Client::new(&bridge.url, false, Answers::default()).await;
    let held = tokio::spawn({
        let a = a.clone();
        async move { a.call("hold", json!({}), json!({})).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = b.call("sample", json!({"text": "whose?"}), json!({})).await.unwrap();
    assert_eq!(r["isError"], true, "{r}");
    assert!(text(&r).contains("sampling/createMessage was sent to no client"), "{r}");
    assert!(text(&r).contains("requests of 2 clients are in flight"), "{r}");
    assert_eq!(text(&b.call("release", json!({}), json!({})).await.unwrap()), "released all");
    assert_eq!(text(&held.await.unwrap().unwrap()), "released");
    assert!(a.seen.requests.lock().unwrap().is_empty());
    assert!(b.seen.requests.lock().unwrap().is_empty());
    // Counted where it is logged: one refusal of the sampling request, for two clients.
    let log = bridge.log.lock().unwrap().clone();
    let refused = log.lines().filter(|l| {
        l.contains("mcpwire bridge: child request refused")
            && l.contains("sampling/createMessage")
            && l.contains("requests of 2 clients are in flight")
    });
    assert_eq!(refused.count(), 1, "{log}");
}

/// Another client's request answered just before the child asks (its answer came first in the
/// child's stream, however recently) does not count: the child's request goes to the one
/// client whose request is still in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_answered_before_the_childs_request_does_not_count() {
    let c = child();
    let bridge = start(&[], &args(&c));
    let a = Client::new(&bridge.url, false, Answers::default()).await;
    let sampler = Answers { sampled: "from B".into(), ..Answers::default() };
    let b = Client::new(&bridge.url, false, sampler).await;
    for round in 0..5 {
        let echoed = a.call("echo", json!({"message": "a"}), json!({})).await.unwrap();
        assert_eq!(text(&echoed), "a");
        let r = b.call("sample", json!({"text": "mine"}), json!({})).await.unwrap();
        assert_eq!(
            text(&r),
            "sampled: from B",
            "round {round}: {r} {}",
            bridge.log.lock().unwrap()
        );
    }
    assert!(a.seen.requests.lock().unwrap().is_empty());
    assert_eq!(b.seen.requests.lock().unwrap().len(), 5);
}

/// A POST of bytes that are not JSON gets 400 and -32700; a line of garbage from the child is
/// answered by the bridge's peer and the child goes on; another client's request in flight
/// meanwhile gets its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_from_a_client_or_the_child_costs_no_one_else() {
    let c = child();
    let bridge = start(&[], &args(&c));
    let a = Arc::new(Client::new(&bridge.url, false, Answers::default()).await);
    let held = tokio::spawn({
        let a = a.clone();
        async move { a.call("hold", json!({}), json!({})).await }
    });
    let (status, body) = post_raw(&bridge.url, b"{not json");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("-32700"), "{body}");
    let b = Client::new(&bridge.url, false, Answers::default()).await;
    assert_eq!(text(&b.call("garbage", json!({}), json!({})).await.unwrap()), "after garbage");
    assert_eq!(
        text(&b.call("echo", json!({"message": "still"}), json!({})).await.unwrap()),
        "still"
    );
    b.call("release", json!({}), json!({})).await.unwrap();
    assert_eq!(text(&held.await.unwrap().unwrap()), "released");
}

/// A modern client in front of a legacy child: `server/discover` from the held
/// `initialize`, and results typed as the modern era wants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_client_is_served_by_a_legacy_child() {
    let c = child();
    let bridge = start(&[], &args(&c));
    let m = Client::new(&bridge.url, true, Answers::default()).await;
    let p = m.params(json!({}), json!({}));
    let d = m.peer.request("server/discover", Some(mcpwire::RawJson::new(&p))).await.unwrap();
    let d: serde_json::Value = serde_json::from_str(d.result().unwrap().get()).unwrap();
    assert_eq!(d["supportedVersions"], json!(["2026-07-28"]), "{d}");
    assert_eq!(d["capabilities"]["tools"]["listChanged"], true, "{d}");
    assert_eq!(d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "legacy-child", "{d}");
    let r = m.call("echo", json!({"message": "modern"}), json!({})).await.unwrap();
    assert_eq!(text(&r), "modern");
    assert_eq!(r["resultType"], "complete", "{r}");
}

/// The child exits: the request that made it exit and another in flight fail saying so, the
/// legacy sessions end (404: their clients initialize again), the child is started again, its
/// stderr is in the bridge's log, and a new session is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_exits_is_started_again() {
    let c = child();
    let bridge = start(&["--restart-min", "0.05"], &args(&c));
    let a = Arc::new(Client::new(&bridge.url, false, Answers::default()).await);
    let b = Client::new(&bridge.url, false, Answers::default()).await;
    let held = tokio::spawn({
        let a = a.clone();
        async move { a.call("hold", json!({}), json!({})).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let gone = b.call("exit", json!({}), json!({})).await.unwrap_err();
    assert!(
        gone.message.contains("the child server ended before it answered tools/call"),
        "{gone:?}"
    );
    let held = held.await.unwrap().unwrap_err();
    assert!(held.message.contains("the child server ended"), "{held:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let lost = a.call("echo", json!({"message": "x"}), json!({})).await.unwrap_err();
    assert!(lost.message.to_lowercase().contains("session"), "{lost:?}");
    // Started again within the backoff and the child's own start.
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !post_raw(&bridge.url, init).1.contains("\"serverInfo\"") {
        assert!(std::time::Instant::now() < deadline, "{}", bridge.log.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let fresh = Client::new(&bridge.url, false, Answers::default()).await;
    assert_eq!(
        text(&fresh.call("echo", json!({"message": "back"}), json!({})).await.unwrap()),
        "back"
    );
    let log = bridge.log.lock().unwrap().clone();
    assert!(log.contains("mcpwire: bridge: child: legacy-child: exiting on request"), "{log}");
}

/// POSTs `body` to `url` over HTTP/1.1 by hand: the status and the body.
fn post_raw(url: &str, body: &[u8]) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = std::net::TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out)
}
