//! `mcpwire bridge --stdio URL`, the reverse bridge, with real processes: hosts on its stdio
//! (a scripted one on mcpwire's peer, `mcpwire load`, raw lines) and `mcpwire serve --http`
//! (plain and over TLS) behind it, in both eras; the server's requests answered by the host;
//! a bad frame; a remote that goes away and comes back; stdin's end.

#[path = "bridge/support.rs"]
mod support;

#[path = "common/everything.rs"]
mod everything;
mod load_support;
#[path = "../../tests/common/tls.rs"]
mod tls;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use everything::everything;
use load_support::{BIN, load, serve_on, stderr};
use serde_json::{Value, json};
use support::{Answers, Client, text};

/// Waits up to 10 s for `done`.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A legacy host: its calls answered (several at once, each under its own id), its progress
/// under its own token, the server's elicitation asked of it and its answer taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_host_reaches_serve_over_http() {
    let (_served, url) = serve_on(&["--http", "127.0.0.1:0"]);
    let yes = Answers { confirmed: true, ..Answers::default() };
    let host = std::sync::Arc::new(Client::stdio(&url, &[], false, yes).await);
    let mut calls = Vec::new();
    for i in 0..16 {
        let host = host.clone();
        calls.push(tokio::spawn(async move {
            let message = format!("call {i}");
            let r = host.call("echo", json!({"message": message}), json!({})).await.unwrap();
            assert_eq!(text(&r), message);
        }));
    }
    for c in calls {
        c.await.unwrap();
    }
    let r = host.call("sleep", json!({"ms": 5}), json!({"progressToken": "p1"})).await.unwrap();
    assert_eq!(text(&r), "slept 5");
    eventually("two progress notifications under the host's token", || {
        let notes = host.seen.notes.lock().unwrap();
        let p: Vec<_> = notes.iter().filter(|(m, _)| m == "notifications/progress").collect();
        p.len() == 2 && p.iter().all(|(_, p)| p["progressToken"] == "p1")
    })
    .await;
    let r = host.call("confirm", json!({"question": "ship it?"}), json!({})).await.unwrap();
    assert_eq!(text(&r), "confirmed");
    let asked = host.seen.requests.lock().unwrap();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "elicitation/create");
    assert_eq!(asked[0].1["message"], "ship it?");
}

/// A modern host: stateless requests pass as they are, the server's `input_required` reaches
/// it, and `server/discover` is the server's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_host_reaches_serve_over_http() {
    let (_served, url) = serve_on(&["--http", "127.0.0.1:0"]);
    let host = Client::stdio(&url, &[], true, Answers::default()).await;
    let r = host.call("echo", json!({"message": "hi"}), json!({})).await.unwrap();
    assert_eq!(text(&r), "hi");
    let r = host.call("confirm", json!({"question": "ok?"}), json!({})).await.unwrap();
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert_eq!(r["inputRequests"]["confirm"]["method"], "elicitation/create", "{r}");
    let p = host.params(json!({}), json!({}));
    let d = host.peer.request("server/discover", Some(mcpwire::RawJson::new(&p))).await.unwrap();
    assert!(d.result().unwrap().get().contains("2026-07-28"));
}

/// `mcpwire load --target "stdio:mcpwire bridge --stdio URL"` in both eras: every request
/// answered, the era the remote's.
#[test]
fn load_drives_serve_through_the_reverse_bridge() {
    let (_served, url) = serve_on(&["--http", "127.0.0.1:0"]);
    let target = format!("stdio:{BIN} bridge --stdio {url}");
    for (version, era) in [("2026-07-28", "modern"), ("2025-11-25", "legacy")] {
        let (out, r) = load(&[
            "--target",
            &target,
            "--protocol-version",
            version,
            "--concurrency",
            "8",
            "--requests",
            "300",
            "--warmup",
            "0",
        ]);
        assert_eq!(out.status.code(), Some(0), "{version}: {r} {}", stderr(&out));
        assert_eq!(r["requests"], 300, "{version}: {r}");
        assert_eq!(r["errors"], 0, "{version}: {r}");
        assert_eq!(r["era"], era, "{r}");
    }
}

/// https://: with `--cacert` the server's certificate is trusted and calls go through; without
/// it the request fails with -32603 naming the URL, and the bridge goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_cacert() {
    let pki = tls::Pki::new("reverse", &["localhost", "127.0.0.1"]);
    let (cert, key, ca) =
        (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap(), pki.ca.to_str().unwrap());
    let (_served, url) = serve_on(&["--http", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key]);
    assert!(url.starts_with("https://"), "{url}");
    let host = Client::stdio(&url, &["--cacert", ca], false, Answers::default()).await;
    let r = host.call("echo", json!({"message": "over tls"}), json!({})).await.unwrap();
    assert_eq!(text(&r), "over tls");
    let untrusting = Client::stdio(&url, &[], true, Answers::default()).await;
    for _ in 0..2 {
        let e = untrusting.call("echo", json!({"message": "x"}), json!({})).await.unwrap_err();
        assert_eq!(e.code, mcpwire::ErrorCode::INTERNAL_ERROR, "{e:?}");
        assert!(e.message.contains(&url), "{e:?}");
    }
}

/// Raw lines on the bridge's stdin: a bad frame is answered -32700 and the stream goes on; a
/// string id comes back as it was sent; stdin's end ends the process with success.
#[test]
fn a_bad_frame_is_answered_and_stdin_end_ends_it() {
    let (_served, url) = serve_on(&["--http", "127.0.0.1:0"]);
    let mut child = Command::new(BIN)
        .args(["bridge", "--stdio", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut answer = |id: Value| -> Value {
        loop {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "stdout ended before {id}");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("id") == Some(&id) {
                return v;
            }
        }
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    writeln!(input, "{init}").unwrap();
    assert!(answer(json!(1))["result"]["protocolVersion"].is_string());
    writeln!(input, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    writeln!(input, "{{this is not json").unwrap();
    let bad = answer(Value::Null);
    assert_eq!(bad["error"]["code"], -32700, "{bad}");
    writeln!(input, r#"{{"jsonrpc":"2.0","id":"two","method":"tools/list"}}"#).unwrap();
    let listed = answer(json!("two"));
    assert!(listed["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{listed}");
    drop(input);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "stdin's end did not end the bridge");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
}

/// The remote goes away: a request fails with -32603 naming the URL; it comes back on the
/// same port without the old session (404): the bridge opens a new one with the host's own
/// `initialize` and the host's next call goes through, the host none the wiser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_that_goes_away_and_comes_back_is_initialized_again() {
    let (served, url) = serve_on(&["--http", "127.0.0.1:0"]);
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let host = Client::stdio(&url, &[], false, Answers::default()).await;
    let r = host.call("echo", json!({"message": "before"}), json!({})).await.unwrap();
    assert_eq!(text(&r), "before");
    drop(served);
    let e = host.call("echo", json!({"message": "gone"}), json!({})).await.unwrap_err();
    assert_eq!(e.code, mcpwire::ErrorCode::INTERNAL_ERROR, "{e:?}");
    assert!(e.message.contains(&url), "{e:?}");
    let (_again, url_again) = serve_on(&["--http", &addr]);
    assert_eq!(url_again, url);
    let r = host.call("echo", json!({"message": "after"}), json!({})).await.unwrap();
    assert_eq!(text(&r), "after");
}

/// `--remote-timeout 0.5`: a call the remote answers within it goes through; one past it fails
/// with -32603 naming the method and the time, and the bridge goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_remote_timeout_at_and_past_its_bound() {
    let (_served, url) = serve_on(&["--http", "127.0.0.1:0"]);
    let host = Client::stdio(&url, &["--remote-timeout", "0.5"], false, Answers::default()).await;
    let r = host.call("sleep", json!({"ms": 200}), json!({})).await.unwrap();
    assert_eq!(text(&r), "slept 200");
    let e = host.call("sleep", json!({"ms": 1500}), json!({})).await.unwrap_err();
    assert_eq!(e.code, mcpwire::ErrorCode::INTERNAL_ERROR, "{e:?}");
    assert!(e.message.contains("did not answer tools/call within 500ms"), "{e:?}");
    let r = host.call("echo", json!({"message": "still here"}), json!({})).await.unwrap();
    assert_eq!(text(&r), "still here");
}

/// `examples/everything --http` behind the reverse bridge (built here when absent): a legacy
/// host is asked the server's sampling request and its answer reaches the tool; progress comes
/// under the host's token; a modern host gets `input_required` and `server/discover`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn examples_everything_in_both_eras() {
    let everything = everything();
    let (_served, url) = load_support::announced_by(&everything, &["--http", "127.0.0.1:0"]);
    let answers = Answers { sampled: "sampled by the host".into(), ..Answers::default() };
    let legacy = Client::stdio(&url, &[], false, answers).await;
    let r = legacy.call("test_sampling", json!({"prompt": "hi"}), json!({})).await.unwrap();
    assert_eq!(text(&r), "LLM response: sampled by the host", "{r}");
    assert_eq!(legacy.seen.requests.lock().unwrap()[0].0, "sampling/createMessage");
    let modern = Client::stdio(&url, &[], true, Answers::default()).await;
    let r = modern.call("test_simple_text", json!({}), json!({})).await.unwrap();
    assert_eq!(r["resultType"], "complete", "{r}");
    let meta = json!({"progressToken": "everything-1"});
    let r = modern.call("test_tool_with_progress", json!({}), meta).await.unwrap();
    assert_eq!(text(&r), "Progress reported", "{r}");
    eventually("three progress notifications under the host's token", || {
        let notes = modern.seen.notes.lock().unwrap();
        let p: Vec<_> = notes.iter().filter(|(m, _)| m == "notifications/progress").collect();
        p.len() == 3 && p.iter().all(|(_, p)| p["progressToken"] == "everything-1")
    })
    .await;
    let r = modern
        .call("test_input_required_result_request_state", json!({}), json!({}))
        .await
        .unwrap();
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert!(r["requestState"].is_string(), "{r}");
    assert_eq!(r["inputRequests"]["confirm"]["method"], "elicitation/create", "{r}");
    let p = modern.params(json!({}), json!({}));
    let d = modern.peer.request("server/discover", Some(mcpwire::RawJson::new(&p))).await.unwrap();
    assert!(d.result().unwrap().get().contains("2026-07-28"));
}

/// What the host set on a remote session the remote then lost is set again on the new one: its
/// `logging/setLevel` (`error`: the tool's `info` logs stay away after the loss as before it)
/// and its resource subscriptions, up to `--max-remembered-subscriptions` (1 here: of two, the
/// first is made again and the one past the bound is not).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_remote_session_gets_the_level_and_the_subscriptions_back() {
    const WATCHED: &str = "test://watched-resource";
    const STATIC: &str = "test://static-text";
    let everything = everything();
    let (served, url) = load_support::announced_by(&everything, &["--http", "127.0.0.1:0"]);
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let flags = ["--max-remembered-subscriptions", "1"];
    let host = Client::stdio(&url, &flags, false, Answers::default()).await;
    let ask = |method: &'static str, params: Value| {
        let peer = host.peer.clone();
        async move {
            let p = params.to_string();
            peer.request(method, Some(mcpwire::RawJson::new(&p))).await.unwrap();
        }
    };
    ask("logging/setLevel", json!({"level": "error"})).await;
    ask("resources/subscribe", json!({"uri": WATCHED})).await;
    ask("resources/subscribe", json!({"uri": STATIC})).await;
    let updated = |uri: &str| {
        let notes = host.seen.notes.lock().unwrap();
        notes.iter().any(|(m, p)| m == "notifications/resources/updated" && p["uri"] == uri)
    };
    let logged =
        || host.seen.notes.lock().unwrap().iter().any(|(m, _)| m == "notifications/message");
    let trigger =
        |uri: &str| host.call("test_trigger_resource_update", json!({"uri": uri}), json!({}));
    // Before the loss: both subscriptions hold, the level holds.
    let r = host.call("test_tool_with_logging", json!({}), json!({})).await.unwrap();
    assert_eq!(text(&r), "Tool with logging executed successfully", "{r}");
    assert!(!logged(), "info logs came under level error: {:?}", host.seen.notes.lock().unwrap());
    trigger(WATCHED).await.unwrap();
    trigger(STATIC).await.unwrap();
    eventually("both updates before the loss", || updated(WATCHED) && updated(STATIC)).await;

    drop(served);
    let (_again, url_again) = load_support::announced_by(&everything, &["--http", &addr]);
    assert_eq!(url_again, url);
    host.seen.notes.lock().unwrap().clear();
    let r = host.call("test_tool_with_logging", json!({}), json!({})).await.unwrap();
    assert_eq!(text(&r), "Tool with logging executed successfully", "{r}");
    assert!(!logged(), "the level was not set again: {:?}", host.seen.notes.lock().unwrap());
    trigger(STATIC).await.unwrap();
    trigger(WATCHED).await.unwrap();
    eventually("the kept subscription made again", || updated(WATCHED)).await;
    // Sent before the watched one's, on the same stream: had it been made again, it would be in.
    assert!(!updated(STATIC), "a subscription past the bound was made again");
}
