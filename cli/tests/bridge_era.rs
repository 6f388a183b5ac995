//! How `mcpwire bridge` opens its child, and legacy clients of a child that speaks 2026-07-28
//! only: `bridge/era_child.py` serves one era per connection, picked by its opening request (as
//! the official SDKs' stdio servers do), and logs every message it reads. The bridge sends
//! `server/discover` first; the child answers it, refuses the `initialize` that asks whether it
//! also keeps a legacy session, and is then spoken to in 2026-07-28 only: each legacy client's
//! request translated (its envelope from the session), `initialize`, `ping` and
//! `logging/setLevel` answered by the bridge, `input_required` asked of the calling client,
//! resource subscriptions and list changes through the bridge's own listen stream. A child that
//! refuses `server/discover`, or does not answer it within `--discover-timeout`, is opened with
//! `initialize`.

#[path = "bridge/support.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpwire::RawJson;
use mcpwire::peer::{NoHandler, PeerBuilder};
use serde_json::{Value, json};
use support::{Answers, Bridge, Client, start, text};

fn era_child(flag: &[&str]) -> Vec<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bridge/era_child.py");
    let mut v: Vec<String> = vec!["python3".into(), "-u".into(), script.into()];
    v.extend(flag.iter().map(|f| (*f).to_owned()));
    v
}

fn started(flags: &[&str], child: &[String]) -> Bridge {
    let child: Vec<&str> = child.iter().map(String::as_str).collect();
    start(flags, &child)
}

/// The child's log of what it read: `METHOD ERA` for each message, in order.
fn child_log(b: &Bridge) -> Vec<String> {
    let log = b.log.lock().unwrap();
    log.lines()
        .filter_map(|l| l.split_once("era-child: ").map(|(_, rest)| rest.to_owned()))
        .collect()
}

/// The first `n` requests (and era) of the child's log, once it has written them (its stderr is
/// read apart from the bridge's announcement).
async fn opening(b: &Bridge, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut log = child_log(b);
        // A discover that timed out is cancelled: no part of the era's choice.
        log.retain(|l| !l.starts_with("got notifications/cancelled"));
        if log.len() >= n || Instant::now() > deadline {
            return log.into_iter().take(n).collect();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The child's listen streams (its `streams` tool), once they are one stream whose resources
/// end the text with `uris` (the stream replaced is closed after its successor is taken).
async fn one_stream(c: &Client, uris: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let streams = c.call("streams", json!({}), json!({})).await.unwrap();
        let streams = text(&streams).to_owned();
        let one = !streams.contains(' ') && streams.ends_with(uris);
        if one || Instant::now() > deadline {
            return streams;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn request(c: &Client, method: &str, params: Value) -> Value {
    let p = params.to_string();
    let answer = c.peer.request(method, Some(RawJson::new(&p))).await;
    let answer = answer.unwrap_or_else(|e| panic!("{method}: {e}"));
    serde_json::from_str(answer.result().unwrap().get()).unwrap()
}

/// Waits until `c` was sent a notification `method` that `pick` takes; how many there are.
async fn notes(c: &Client, method: &str, pick: impl Fn(&Value) -> bool, want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n = c.seen.notes.lock().unwrap().iter().filter(|(m, p)| m == method && pick(p)).count();
        if n >= want || Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The legacy `initialize` answered from the child's `DiscoverResult`.
async fn initialize(url: &str, version: &str) -> Value {
    let (peer, _conn) = mcpwire::http::connect(&PeerBuilder::new(), url, NoHandler).unwrap();
    let p = json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "i", "version": "1"}})
    .to_string();
    let a = peer.request("initialize", Some(RawJson::new(&p))).await.unwrap();
    serde_json::from_str(a.result().unwrap().get()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_picks_its_era_is_opened_with_discover_and_legacy_clients_are_translated() {
    let bridge = started(&[], &era_child(&[]));
    let first = opening(&bridge, 4).await;
    assert_eq!(
        first[..],
        ["got server/discover modern", "era modern", "got ping modern", "got initialize plain"],
        "{first:?}"
    );

    // `initialize` answered from the discover result, at the client's own legacy version.
    let init = initialize(&bridge.url, "2025-11-25").await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["serverInfo"]["name"], "era-child");
    assert_eq!(init["instructions"], "one era per connection");
    assert_eq!(init["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(initialize(&bridge.url, "2025-06-18").await["protocolVersion"], "2025-06-18");

    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let answers =
        |confirmed| Answers { confirmed, barrier: Some(barrier.clone()), ..Answers::default() };
    let a = Client::new(&bridge.url, false, answers(true)).await;
    let b = Client::new(&bridge.url, false, answers(false)).await;

    // The envelope of a translated request: the session's capabilities, info and level.
    assert_eq!(request(&a, "ping", json!({})).await, json!({}));
    assert_eq!(request(&a, "logging/setLevel", json!({"level": "warning"})).await, json!({}));
    let env = a.call("envelope", json!({}), json!({})).await.unwrap();
    let env: Value = serde_json::from_str(text(&env)).unwrap();
    assert_eq!(
        env,
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/logLevel": "warning",
        })
    );

    // Results as a legacy server gives them: no resultType, caching hints or server identity.
    let tools = request(&a, "tools/list", json!({})).await;
    assert_eq!(tools["tools"].as_array().unwrap().len(), 7, "{tools}");
    for r in [&tools, &a.call("echo", json!({"message": "hi"}), json!({})).await.unwrap()] {
        for k in ["resultType", "ttlMs", "cacheScope", "_meta"] {
            assert!(r.get(k).is_none(), "{k} in {r}");
        }
    }
    let read = request(&a, "resources/read", json!({"uri": "era://note"})).await;
    assert_eq!(read["contents"][0]["text"], "a note");
    let greet =
        request(&b, "prompts/get", json!({"name": "greet", "arguments": {"name": "B"}})).await;
    assert_eq!(greet["messages"][0]["content"]["text"], "Hello, B!");

    // Progress under the client's own token.
    let done = a.call("progress", json!({"steps": 3}), json!({"progressToken": "tok-a"})).await;
    assert_eq!(text(&done.unwrap()), "done");
    let tok = |p: &Value| p["progressToken"] == "tok-a";
    assert_eq!(notes(&a, "notifications/progress", tok, 3).await, 3);

    // Both clients' calls ask at once: each question reaches its own client.
    let (ra, rb) = tokio::join!(
        a.call("ask", json!({"question": "A?"}), json!({})),
        b.call("ask", json!({"question": "B?"}), json!({})),
    );
    assert_eq!(text(&ra.unwrap()), r#"answered: {"confirmed": true}"#);
    assert_eq!(text(&rb.unwrap()), r#"answered: {"confirmed": false}"#);
    for (c, q) in [(&a, "A?"), (&b, "B?")] {
        let asked = c.seen.requests.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0].0, "elicitation/create");
        assert_eq!(asked[0].1["message"], q);
    }

    // Subscriptions through the bridge's one listen stream to the child.
    assert_eq!(request(&a, "resources/subscribe", json!({"uri": "era://a"})).await, json!({}));
    assert_eq!(request(&b, "resources/subscribe", json!({"uri": "era://b"})).await, json!({}));
    let streams = one_stream(&a, ":era://a,era://b").await;
    assert!(streams.ends_with(":era://a,era://b") && !streams.contains(' '), "{streams}");
    a.call("touch", json!({"uri": "era://a"}), json!({})).await.unwrap();
    let is_a = |p: &Value| p == &json!({"uri": "era://a"});
    assert_eq!(notes(&a, "notifications/resources/updated", is_a, 1).await, 1);
    a.call("change_tools", json!({}), json!({})).await.unwrap();
    for c in [&a, &b] {
        let any = |p: &Value| p.get("_meta").is_none();
        assert_eq!(notes(c, "notifications/tools/list_changed", any, 1).await, 1);
    }
    assert_eq!(notes(&b, "notifications/resources/updated", |_| true, 0).await, 0);
    assert_eq!(request(&a, "resources/unsubscribe", json!({"uri": "era://a"})).await, json!({}));
    let streams = one_stream(&b, ":era://b").await;
    assert!(streams.ends_with(":era://b") && !streams.contains(' '), "{streams}");
    // A session that ends (its client's DELETE) takes its subscriptions with it.
    let c = Client::new(&bridge.url, false, Answers::default()).await;
    assert_eq!(request(&c, "resources/subscribe", json!({"uri": "era://c"})).await, json!({}));
    let streams = one_stream(&b, ":era://b,era://c").await;
    assert!(streams.ends_with(":era://b,era://c") && !streams.contains(' '), "{streams}");
    c.peer.close();
    let streams = one_stream(&b, ":era://b").await;
    assert!(streams.ends_with(":era://b") && !streams.contains(' '), "{streams}");

    // Everything after the opening reached the child in 2026-07-28, nothing was refused.
    let log = child_log(&bridge);
    let plain: Vec<&String> = log
        .iter()
        .filter(|l| l.ends_with(" plain") && !l.starts_with("got notifications/"))
        .collect();
    assert_eq!(plain, ["got initialize plain"], "{log:?}");
    assert!(!log.iter().any(|l| l == "era legacy"), "{log:?}");
    assert!(!log.iter().any(|l| l.starts_with("got notifications/initialized")), "{log:?}");
    let bridge_log = bridge.log.lock().unwrap().clone();
    assert!(!bridge_log.contains("refused"), "{bridge_log}");
}

/// The child's first three lines: the bridge's `server/discover`, then `initialize`, which the
/// child took as a legacy session's opening.
async fn opened_legacy(bridge: &Bridge) {
    let first = opening(bridge, 3).await;
    assert_eq!(
        first[..],
        ["got server/discover modern", "got initialize plain", "era legacy"],
        "{first:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_refuses_discover_is_opened_with_initialize() {
    let bridge = started(&[], &era_child(&["--legacy-only"]));
    opened_legacy(&bridge).await;
    let a = Client::new(&bridge.url, false, Answers::default()).await;
    let echo = a.call("echo", json!({"message": "legacy"}), json!({})).await.unwrap();
    assert_eq!(text(&echo), "legacy");
    // A modern client of the legacy child: its envelope stripped, the result made modern.
    let m = Client::new(&bridge.url, true, Answers::default()).await;
    let echo = m.call("echo", json!({"message": "modern"}), json!({})).await.unwrap();
    assert_eq!(text(&echo), "modern");
    assert_eq!(echo["resultType"], "complete");
}

/// `--discover-timeout 1`: a child silent to `server/discover` is opened with `initialize` once
/// the second is up (past the bound); one that answers within it is modern (at the bound).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_silent_to_discover_is_opened_with_initialize_after_the_discover_timeout() {
    let t = Instant::now();
    let bridge = started(&["--discover-timeout", "1"], &era_child(&["--silent-discover"]));
    let took = t.elapsed();
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    opened_legacy(&bridge).await;
    let a = Client::new(&bridge.url, false, Answers::default()).await;
    assert_eq!(text(&a.call("echo", json!({"message": "x"}), json!({})).await.unwrap()), "x");

    let bridge = started(&["--discover-timeout", "1"], &era_child(&[]));
    assert_eq!(opening(&bridge, 2).await, ["got server/discover modern", "era modern"]);
}
