//! `server::Server` over a real peer pair (tokio, in-process duplex pipes), both eras: the
//! protocol the server speaks around a host's handlers, what it refuses, and each of its bounds
//! at and just past the limit.

use mcpwire::limits::MAX_INPUT_ROUNDS;
use mcpwire::limits::MAX_LISTEN_STREAMS;
use mcpwire::limits::MAX_REQUEST_STATE_BYTES;
use mcpwire::limits::MAX_RESOURCE_SUBSCRIPTIONS;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpwire::mcp::types::{
    CallToolResult, ElicitParams, ElicitResult, InputRequest, LoggingLevel, ReadResourceResult,
    Resource, ResourceContents, Tool,
};
use mcpwire::peer::{Context, Handler, Incoming, PeerBuilder, PeerHandle, Reply, RpcError};
use mcpwire::server::{HandlerError, InputRequired, Server};
use mcpwire::{Json, RawJson};
use serde_json::{Value, json};
use tokio::sync::mpsc;

mod common;

use common::{FORM, MODERN, ask_name, greet, pair_over};

fn server() -> Server {
    Server::builder("test-server", "0.0.1")
        .tool(
            Tool::new("greet").input_schema(
                r#"{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}"#,
            ),
            greet,
        )
        .tool(Tool::new("ask_name"), ask_name)
        .tool(Tool::new("two_rounds"), |call| async move {
            match (call.state(), call.answer("second")?) {
                (Some("round-2"), Some(_)) => Ok(CallToolResult::text("done in two")),
                (Some("round-1"), _) if call.answer("first")?.is_some() => {
                    Err(InputRequired::new()
                        .request(
                            "second",
                            InputRequest::elicit(&ElicitParams::form("Again?", FORM)),
                        )
                        .state("round-2")
                        .into())
                }
                _ => Err(InputRequired::new()
                    .request("first", InputRequest::elicit(&ElicitParams::form("First?", FORM)))
                    .state("round-1")
                    .into()),
            }
        })
        .tool(Tool::new("exactly_max_rounds"), |call| async move {
            // Asks once per round until the state counts MAX_INPUT_ROUNDS answered rounds.
            let done: usize = call.state().and_then(|s| s.parse().ok()).unwrap_or(0);
            if done == MAX_INPUT_ROUNDS as usize {
                return Ok(CallToolResult::text(format!("{done} rounds")));
            }
            Err(InputRequired::new()
                .request("again", InputRequest::list_roots())
                .state((done + 1).to_string())
                .into())
        })
        .tool(Tool::new("never_done"), |_call| async move {
            Err(InputRequired::new().request("again", InputRequest::list_roots()).into())
        })
        .tool(Tool::new("count_roots"), |call| async move {
            let a = call.ask("roots", InputRequest::list_roots()).await?;
            let roots: mcpwire::mcp::types::ListRootsResult<'_> = a.decode()?;
            Ok(CallToolResult::text(roots.roots.len().to_string()))
        })
        .tool(Tool::new("ask_two"), |call| async move {
            let form = |m: &'static str| InputRequest::elicit(&ElicitParams::form(m, FORM));
            let first = call.ask("first", form("First?")).await?;
            let second = call.ask("second", form("Second?")).await?;
            let (a, b): (ElicitResult<'_>, ElicitResult<'_>) = (first.decode()?, second.decode()?);
            let (a, b) = (a.text("name")?.unwrap_or_default(), b.text("name")?.unwrap_or_default());
            Ok(CallToolResult::text(format!("{a}+{b}")))
        })
        .tool(Tool::new("chatty"), |call| async move {
            call.log(LoggingLevel::Info, "an info line").await;
            call.log(LoggingLevel::Error, "an error line").await;
            Ok(CallToolResult::text("logged"))
        })
        .tool(Tool::new("change"), |call| async move {
            call.server().tools_changed();
            call.server().resource_updated("test://a");
            Ok(CallToolResult::text("changed"))
        })
        .tool(Tool::new("fails"), |_| async { Err(HandlerError::tool("it broke")) })
        .tool(Tool::new("asks_nothing"), |_call| async move { Err(InputRequired::new().into()) })
        .tool(Tool::new("big_state"), |call| async move {
            let n: usize = call.arguments::<Value>()?["n"].as_u64().unwrap_or(0) as usize;
            if call.state().is_some() {
                return Ok(CallToolResult::text("state back"));
            }
            Err(InputRequired::new().state("x".repeat(n)).into())
        })
        .tool(Tool::new("echo_state"), |call| async move {
            Ok(CallToolResult::text(call.state().unwrap_or("no state").to_owned()))
        })
        .resource(Resource::new("test://a", "a"), |_| async {
            Ok(ReadResourceResult::new(ResourceContents::text("test://a", "text/plain", "A")))
        })
        .build()
}

/// The client side: answers the server's elicitation and roots requests, and records every
/// notification.
struct ClientSide {
    asked: Arc<AtomicUsize>,
    notes: mpsc::UnboundedSender<Value>,
}

impl Handler for ClientSide {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        match req.method() {
            "elicitation/create" => {
                Reply::json(&json!({"action": "accept", "content": {"name": "Ada"}}))
            }
            // A malformed answer: a root's URI that is not a string.
            "roots/list" => Reply::json(&json!({"roots": [{"uri": 5}]})),
            m => Err(RpcError::method_not_found(m)),
        }
    }

    async fn notification(&self, n: &Incoming, _cx: &Context) {
        let params: Value =
            n.params().map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
        let _ = self.notes.send(json!({"method": n.method(), "params": params}));
    }
}

/// The server's peer and a [`ClientSide`] peer, with what the client side records.
struct Pair {
    peers: common::Pair,
    asked: Arc<AtomicUsize>,
    notes: mpsc::UnboundedReceiver<Value>,
}

fn pair(server: &Server) -> Pair {
    let asked = Arc::new(AtomicUsize::new(0));
    let (tx, notes) = mpsc::unbounded_channel();
    let client = ClientSide { asked: asked.clone(), notes: tx };
    let peers = pair_over(&PeerBuilder::new(), 1 << 20, client, server.handler());
    Pair { peers, asked, notes }
}

impl Pair {
    fn client(&self) -> &PeerHandle {
        &self.peers.client
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match self.client().request(method, Some(Json(&params))).await {
            Ok(r) => Ok(serde_json::from_str(r.result().unwrap().get()).unwrap()),
            Err(mcpwire::peer::RequestError::Rpc(e)) => Err(e),
            Err(e) => panic!("{method}: {e}"),
        }
    }

    async fn legacy(server: &Server, caps: Value) -> Self {
        let p = pair(server);
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t", "version": "1"}});
        let r = p.call("initialize", init).await.unwrap();
        assert_eq!(r["protocolVersion"], "2025-11-25");
        p.client().notify("notifications/initialized", None::<RawJson<'_>>).await.unwrap();
        p
    }
}

/// Modern params: `extra` plus a `_meta` envelope declaring `caps`.
fn modern(extra: Value, caps: Value) -> Value {
    let mut p = extra;
    p["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": caps});
    p
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {result}"))
}

#[tokio::test]
async fn a_legacy_session_lists_calls_and_reads() {
    let s = server();
    let p = Pair::legacy(&s, json!({})).await;
    let tools = p.call("tools/list", json!({})).await.unwrap();
    assert_eq!(tools["tools"][0]["name"], "greet");
    assert!(
        tools.get("ttlMs").is_none() && tools.get("resultType").is_none(),
        "legacy results carry no modern fields: {tools}"
    );
    let r =
        p.call("tools/call", json!({"name": "greet", "arguments": {"who": "you"}})).await.unwrap();
    assert_eq!(text_of(&r), "hello you");
    let r = p.call("resources/read", json!({"uri": "test://a"})).await.unwrap();
    assert_eq!(r["contents"][0]["text"], "A");
    assert_eq!(p.call("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn a_modern_request_gets_result_type_server_info_and_caching_hints() {
    let s = server();
    let p = pair(&s);
    let d = p.call("server/discover", modern(json!({}), json!({}))).await.unwrap();
    assert_eq!(d["supportedVersions"], json!([MODERN]));
    assert_eq!(d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "test-server");
    let tools = p.call("tools/list", modern(json!({}), json!({}))).await.unwrap();
    assert_eq!(
        (tools["resultType"].as_str(), tools["cacheScope"].as_str()),
        (Some("complete"), Some("public"))
    );
    assert!(tools["ttlMs"].is_u64());
    let r = p.call("resources/read", modern(json!({"uri": "test://a"}), json!({}))).await.unwrap();
    assert_eq!((r["ttlMs"].as_u64(), r["cacheScope"].as_str()), (Some(0), Some("private")));
    for removed in ["initialize", "ping", "logging/setLevel", "resources/subscribe"] {
        let e = p.call(removed, modern(json!({}), json!({}))).await.unwrap_err();
        assert_eq!(e.code.get(), -32601, "{removed}");
    }
    // Neither era: -32602.
    let e = p.call("tools/list", json!({})).await.unwrap_err();
    assert_eq!(e.code.get(), -32602);
}

#[tokio::test]
async fn bad_params_are_refused_precisely() {
    let s = server();
    let p = Pair::legacy(&s, json!({})).await;
    // Arguments that do not match: a tool failure naming the field, not a protocol error.
    let r = p.call("tools/call", json!({"name": "greet", "arguments": {"who": 7}})).await.unwrap();
    assert_eq!(r["isError"], true);
    assert!(text_of(&r).starts_with("invalid arguments.who: invalid type: integer `7`"), "{r}");
    let r = p.call("tools/call", json!({"name": "greet", "arguments": {}})).await.unwrap();
    assert!(text_of(&r).starts_with("invalid arguments: missing field `who`"), "{r}");
    let r = p.call("tools/call", json!({"name": "fails"})).await.unwrap();
    assert_eq!((r["isError"].as_bool(), text_of(&r)), (Some(true), "it broke"));
    for (params, why) in [
        (json!({"name": "nope"}), "Unknown tool: nope"),
        (json!({"name": 3}), "params.name must be a string"),
        (
            json!({"name": "greet", "name2": 1, "requestState": "forged"}),
            "requestState integrity check failed",
        ),
    ] {
        let e = p.call("tools/call", params).await.unwrap_err();
        assert_eq!(e.code.get(), -32602);
        assert!(e.message.contains(why), "{} / {why}", e.message);
    }
    let e = p.call("tools/list", json!({"cursor": "x"})).await.unwrap_err();
    assert_eq!(e.code.get(), -32602);
    // Resource not found: -32002 in the legacy era, -32602 in the modern one; the URI in data.
    let e = p.call("resources/read", json!({"uri": "test://missing"})).await.unwrap_err();
    assert_eq!(e.code.get(), -32002);
    assert_eq!(
        serde_json::from_str::<Value>(e.data().unwrap().get()).unwrap(),
        json!({"uri": "test://missing"})
    );
    let e = p
        .call("resources/read", modern(json!({"uri": "test://missing"}), json!({})))
        .await
        .unwrap_err();
    assert_eq!(e.code.get(), -32602);
}

#[tokio::test]
async fn asking_the_client_is_a_request_in_the_legacy_era_and_input_required_in_the_modern_one() {
    let s = server();
    let legacy = Pair::legacy(&s, json!({"elicitation": {}})).await;
    let r = legacy.call("tools/call", json!({"name": "ask_name"})).await.unwrap();
    assert_eq!(text_of(&r), "hi Ada");
    assert_eq!(legacy.asked.load(Ordering::SeqCst), 1);

    let p = pair(&s);
    let caps = json!({"elicitation": {}});
    let r = p.call("tools/call", modern(json!({"name": "ask_name"}), caps.clone())).await.unwrap();
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(r["inputRequests"]["name"]["method"], "elicitation/create");
    let answers = json!({"name": {"action": "accept", "content": {"name": "Bo"}}});
    let r = p
        .call("tools/call", modern(json!({"name": "ask_name", "inputResponses": answers}), caps))
        .await
        .unwrap();
    assert_eq!((r["resultType"].as_str(), text_of(&r)), (Some("complete"), "hi Bo"));
    assert_eq!(p.asked.load(Ordering::SeqCst), 0, "the modern era sends the client no request");

    // Without the capability: -32021 naming it, in both eras.
    let e = p.call("tools/call", modern(json!({"name": "ask_name"}), json!({}))).await.unwrap_err();
    assert_eq!(e.code.get(), -32021);
    let data: Value = serde_json::from_str(e.data().unwrap().get()).unwrap();
    assert_eq!(data, json!({"requiredCapabilities": {"elicitation": {}}}));
    let bare = Pair::legacy(&s, json!({})).await;
    assert_eq!(
        bare.call("tools/call", json!({"name": "ask_name"})).await.unwrap_err().code.get(),
        -32021
    );
}

#[tokio::test]
async fn request_state_is_sealed_and_a_changed_one_refused() {
    let s = server();
    let p = pair(&s);
    let caps = json!({"elicitation": {}});
    let r1 =
        p.call("tools/call", modern(json!({"name": "two_rounds"}), caps.clone())).await.unwrap();
    let state = r1["requestState"].as_str().unwrap().to_owned();
    assert!(!state.contains("round-1"), "the state is not readable as sent: {state}");
    let answer = json!({"action": "accept", "content": {"name": "x"}});
    let retry = |state: &str, key: &str| {
        modern(
            json!({"name": "two_rounds", "requestState": state, "inputResponses": {key: answer}}),
            caps.clone(),
        )
    };
    let r2 = p.call("tools/call", retry(&state, "first")).await.unwrap();
    assert_eq!(r2["resultType"], "input_required");
    let state2 = r2["requestState"].as_str().unwrap();
    assert_ne!(state2, state);
    let r3 = p.call("tools/call", retry(state2, "second")).await.unwrap();
    assert_eq!(text_of(&r3), "done in two");

    // One changed character, another server's state, and a state past the bound: -32602.
    let mut tampered = state.clone().into_bytes();
    tampered[2] ^= 1;
    let tampered = String::from_utf8(tampered).unwrap();
    let other = server();
    let foreign = pair(&other)
        .call("tools/call", modern(json!({"name": "two_rounds"}), caps.clone()))
        .await
        .unwrap();
    let long = "A".repeat(MAX_REQUEST_STATE_BYTES + 1);
    for bad in [tampered.as_str(), foreign["requestState"].as_str().unwrap(), &long] {
        let e = p.call("tools/call", retry(bad, "first")).await.unwrap_err();
        assert_eq!(e.code.get(), -32602, "{bad:.40}");
    }
}

#[tokio::test]
async fn request_state_sealed_for_one_request_is_refused_on_another() {
    // 2026-07-28 (multi round-trip requests, server requirements): the state names the request it
    // came from, and a state presented on a request that does not match is refused.
    let s = server();
    let p = pair(&s);
    let caps = json!({"elicitation": {}});
    let r1 =
        p.call("tools/call", modern(json!({"name": "two_rounds"}), caps.clone())).await.unwrap();
    let state = r1["requestState"].as_str().unwrap();
    let other_tool = modern(json!({"name": "echo_state", "requestState": state}), caps.clone());
    let e = p.call("tools/call", other_tool).await.map(|r| text_of(&r).to_owned()).unwrap_err();
    assert_eq!(e.code.get(), -32602, "{e}");
    let read = modern(json!({"uri": "test://a", "requestState": state}), caps.clone());
    let e = p.call("resources/read", read).await.unwrap_err();
    assert_eq!(e.code.get(), -32602, "{e}");
    // On its own request it still opens.
    let answer = json!({"action": "accept", "content": {"name": "x"}});
    let retry = modern(
        json!({"name": "two_rounds", "requestState": state, "inputResponses": {"first": answer}}),
        caps,
    );
    assert_eq!(p.call("tools/call", retry).await.unwrap()["resultType"], "input_required");
}

#[tokio::test]
async fn input_a_handler_requires_is_checked_against_the_clients_capabilities() {
    // 2026-07-28 (multi round-trip requests): servers MUST NOT send an input request the client has
    // not declared support for; an `InputRequired` the handler returns itself is held to it as
    // `ask` is.
    let s = server();
    let p = pair(&s);
    let e = p.call("tools/call", modern(json!({"name": "two_rounds"}), json!({}))).await;
    let e = e.map(|r| r.to_string()).unwrap_err();
    assert_eq!(e.code.get(), -32021, "{e}");
    let r = p.call("tools/call", modern(json!({"name": "two_rounds"}), json!({"elicitation": {}})));
    assert_eq!(r.await.unwrap()["resultType"], "input_required");
}

#[tokio::test]
async fn an_input_required_that_asks_nothing_and_keeps_no_state_is_refused() {
    // 2026-07-28 (multi round-trip requests): an InputRequiredResult MUST carry inputRequests or
    // requestState; one with neither would send the client round an empty loop (mcpwire's own
    // client refuses it).
    let s = server();
    let p = pair(&s);
    let r = p.call("tools/call", modern(json!({"name": "asks_nothing"}), json!({}))).await;
    let e = r.map(|r| r.to_string()).unwrap_err();
    assert_eq!(e.code.get(), -32603, "{e}");
    // The legacy era refuses it at once too, without calling the handler round after round.
    let p = Pair::legacy(&s, json!({})).await;
    let e = p.call("tools/call", json!({"name": "asks_nothing"})).await.unwrap_err();
    assert_eq!(e.code.get(), -32603, "{e}");
    assert!(!e.message.contains("more than"), "{}", e.message);
}

#[tokio::test]
async fn a_state_too_long_to_come_back_is_refused_when_sealed_not_on_the_retry() {
    // The server refuses a sealed state past MAX_REQUEST_STATE_BYTES on the retry, so handing
    // out one that long would make the request fail forever at its next round.
    let s = server();
    let p = pair(&s);
    let call = |n: usize, state: Option<&str>| {
        let mut params = json!({"name": "big_state", "arguments": {"n": n}});
        if let Some(st) = state {
            params["requestState"] = json!(st);
        }
        p.call("tools/call", modern(params, json!({})))
    };
    // Just under the bound: it is handed out and comes back.
    let fits = MAX_REQUEST_STATE_BYTES * 3 / 4 - 64;
    let r = call(fits, None).await.unwrap();
    let state = r["requestState"].as_str().unwrap().to_owned();
    assert!(state.len() <= MAX_REQUEST_STATE_BYTES);
    assert_eq!(text_of(&call(fits, Some(&state)).await.unwrap()), "state back");
    // Past it: -32603 from the handler's round, not an input_required no retry can pass.
    let e = call(MAX_REQUEST_STATE_BYTES, None).await.map(|r| r.to_string().len()).unwrap_err();
    assert_eq!(e.code.get(), -32603, "{e}");
}

#[tokio::test]
async fn a_legacy_session_runs_a_multi_round_handler_and_bounds_its_rounds() {
    let s = server();
    let p = Pair::legacy(&s, json!({"elicitation": {}, "roots": {}})).await;
    let r = p.call("tools/call", json!({"name": "two_rounds"})).await.unwrap();
    assert_eq!(text_of(&r), "done in two");
    assert_eq!(p.asked.load(Ordering::SeqCst), 2, "one request to the client per round");

    // What the client answers is untrusted: a malformed answer is -32602 naming the field.
    let e = p.call("tools/call", json!({"name": "count_roots"})).await.unwrap_err();
    assert_eq!(e.code.get(), -32602);
    assert!(e.message.contains("the client's answer.roots[0].uri: invalid type"), "{}", e.message);

    // At the bound: a handler that needs exactly MAX_INPUT_ROUNDS rounds completes.
    let before = p.asked.load(Ordering::SeqCst);
    let r = p.call("tools/call", json!({"name": "exactly_max_rounds"})).await.unwrap();
    assert_eq!(text_of(&r), format!("{MAX_INPUT_ROUNDS} rounds"));
    assert_eq!(p.asked.load(Ordering::SeqCst) - before, MAX_INPUT_ROUNDS as usize);

    // Past it: a handler that never stops asking: MAX_INPUT_ROUNDS requests, then -32603.
    let before = p.asked.load(Ordering::SeqCst);
    let e = p.call("tools/call", json!({"name": "never_done"})).await.unwrap_err();
    assert_eq!(e.code.get(), -32603, "{e}");
    assert_eq!(p.asked.load(Ordering::SeqCst) - before, MAX_INPUT_ROUNDS as usize);
}

async fn drain(notes: &mut mpsc::UnboundedReceiver<Value>) -> Vec<Value> {
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut out = Vec::new();
    while let Ok(n) = notes.try_recv() {
        out.push(n);
    }
    out
}

#[tokio::test]
async fn log_messages_go_only_where_the_client_asked_for_them() {
    let s = server();
    let mut p = Pair::legacy(&s, json!({})).await;
    p.call("tools/call", json!({"name": "chatty"})).await.unwrap();
    assert_eq!(
        drain(&mut p.notes).await.len(),
        2,
        "a legacy session gets every level until setLevel"
    );
    p.call("logging/setLevel", json!({"level": "error"})).await.unwrap();
    p.call("tools/call", json!({"name": "chatty"})).await.unwrap();
    let got = drain(&mut p.notes).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["params"]["level"], "error");

    let mut m = pair(&s);
    m.call("tools/call", modern(json!({"name": "chatty"}), json!({}))).await.unwrap();
    assert!(drain(&mut m.notes).await.is_empty(), "no logLevel, no log messages");
    let mut with_level = modern(json!({"name": "chatty"}), json!({}));
    with_level["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    m.call("tools/call", with_level).await.unwrap();
    assert_eq!(drain(&mut m.notes).await.len(), 2);
}

#[tokio::test]
async fn listen_streams_get_tagged_changes_and_are_bounded_per_connection() {
    let s = server();
    let mut p = pair(&s);
    let listen = modern(
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
        json!({}),
    );
    let mut streams = Vec::new();
    for _ in 0..MAX_LISTEN_STREAMS {
        let c = p.client().clone();
        let params = listen.clone();
        streams.push(tokio::spawn(async move {
            c.request("subscriptions/listen", Some(Json(&params))).await
        }));
    }
    let mut acks = 0;
    while acks < MAX_LISTEN_STREAMS {
        let n =
            tokio::time::timeout(Duration::from_secs(5), p.notes.recv()).await.unwrap().unwrap();
        assert_eq!(n["method"], "notifications/subscriptions/acknowledged");
        // This server has tools and no prompts: only what it can honour is acknowledged.
        assert_eq!(n["params"]["notifications"], json!({"toolsListChanged": true}));
        acks += 1;
    }
    // One past the bound: refused at once.
    let e = p.call("subscriptions/listen", listen.clone()).await.unwrap_err();
    assert_eq!(e.code.get(), -32000);
    // A change reaches every open stream, tagged with its subscription.
    p.call("tools/call", modern(json!({"name": "change"}), json!({}))).await.unwrap();
    let got = drain(&mut p.notes).await;
    let changed: Vec<_> =
        got.iter().filter(|n| n["method"] == "notifications/tools/list_changed").collect();
    assert_eq!(changed.len(), MAX_LISTEN_STREAMS, "{got:?}");
    assert!(
        changed
            .iter()
            .all(|n| n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].is_number())
    );
    // Cancelling one frees its place.
    streams.pop().unwrap().abort();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let c = p.client().clone();
    let again =
        tokio::spawn(async move { c.request("subscriptions/listen", Some(Json(&listen))).await });
    let n = tokio::time::timeout(Duration::from_secs(5), p.notes.recv()).await.unwrap().unwrap();
    assert_eq!(n["method"], "notifications/subscriptions/acknowledged");
    again.abort();
}

#[tokio::test]
async fn legacy_subscriptions_get_updates_and_are_bounded_per_session() {
    let s = server();
    let mut p = Pair::legacy(&s, json!({})).await;
    p.call("resources/subscribe", json!({"uri": "test://a"})).await.unwrap();
    p.call("tools/call", json!({"name": "change"})).await.unwrap();
    let got = drain(&mut p.notes).await;
    let methods: Vec<_> = got.iter().map(|n| n["method"].as_str().unwrap()).collect();
    assert!(methods.contains(&"notifications/tools/list_changed"), "{methods:?}");
    assert!(
        got.iter().any(|n| n["method"] == "notifications/resources/updated"
            && n["params"]["uri"] == "test://a")
    );
    p.call("resources/unsubscribe", json!({"uri": "test://a"})).await.unwrap();
    p.call("tools/call", json!({"name": "change"})).await.unwrap();
    assert!(
        !drain(&mut p.notes).await.iter().any(|n| n["method"] == "notifications/resources/updated")
    );

    // At the bound every subscription is kept; one past it is refused.
    for i in 0..MAX_RESOURCE_SUBSCRIPTIONS {
        p.call("resources/subscribe", json!({"uri": format!("test://{i}")})).await.unwrap();
    }
    let e = p.call("resources/subscribe", json!({"uri": "test://one-more"})).await.unwrap_err();
    assert_eq!(e.code.get(), -32602);
    // Subscribing again to one already held is not a new one.
    p.call("resources/subscribe", json!({"uri": "test://0"})).await.unwrap();
}

/// A handler that asks for one thing, then another: in the modern era the first answer travels
/// in the sealed state, so the second retry completes (it would otherwise ask the first again).
#[tokio::test]
async fn a_handler_asking_twice_in_a_row_completes_in_both_eras() {
    let s = server();
    let legacy = Pair::legacy(&s, json!({"elicitation": {}})).await;
    let r = legacy.call("tools/call", json!({"name": "ask_two"})).await.unwrap();
    assert_eq!(text_of(&r), "Ada+Ada");

    let p = pair(&s);
    let caps = json!({"elicitation": {}});
    let answer = |n: &str| json!({"action": "accept", "content": {"name": n}});
    let r1 = p.call("tools/call", modern(json!({"name": "ask_two"}), caps.clone())).await.unwrap();
    assert_eq!(r1["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["first"]);
    let r2 = p
        .call(
            "tools/call",
            modern(
                json!({"name": "ask_two", "inputResponses": {"first": answer("A")}}),
                caps.clone(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(r2["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["second"]);
    let state = r2["requestState"].as_str().expect("the first answer is carried").to_owned();
    let retry = json!({"name": "ask_two", "inputResponses": {"second": answer("B")}, "requestState": state});
    let r3 = p.call("tools/call", modern(retry, caps.clone())).await.unwrap();
    assert_eq!((r3["resultType"].as_str(), text_of(&r3)), (Some("complete"), "A+B"));
    // The carried answer cannot be swapped: the state is sealed.
    let mut forged = state.into_bytes();
    forged[3] ^= 1;
    let retry = json!({"name": "ask_two", "inputResponses": {"second": answer("B")}, "requestState": String::from_utf8(forged).unwrap()});
    assert_eq!(p.call("tools/call", modern(retry, caps)).await.unwrap_err().code.get(), -32602);
}

/// A listen stream that falls behind (more changes than the backlog holds before it reads one)
/// is told once that each list it listens to changed, then gets the changes still held: the
/// client never keeps a stale list.
#[tokio::test]
async fn a_listen_stream_that_falls_behind_is_told_what_may_have_changed() {
    let s = server();
    let mut p = pair(&s);
    let listen = modern(json!({"notifications": {"toolsListChanged": true}}), json!({}));
    let c = p.client().clone();
    let stream =
        tokio::spawn(async move { c.request("subscriptions/listen", Some(Json(&listen))).await });
    let ack = tokio::time::timeout(Duration::from_secs(5), p.notes.recv()).await.unwrap().unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    // On this one-thread runtime the stream's task cannot run during the loop: it falls behind.
    let backlog = mcpwire::limits::CHANGE_BACKLOG;
    for _ in 0..backlog * 3 {
        s.tools_changed();
    }
    let got = drain(&mut p.notes).await;
    let changed = got.iter().filter(|n| n["method"] == "notifications/tools/list_changed").count();
    assert_eq!(changed, backlog + 1, "one for what was missed, then the backlog held");
    stream.abort();
}

/// `params` is read once per request for the members most reads want (the name, `arguments`,
/// `_meta`), and scanned whole only for another member whose key may be in it (`requestState`,
/// `inputResponses`): each read must still find a member exactly as a scan of its own would.
#[tokio::test]
async fn params_members_are_read_as_written_from_one_scan() {
    let s = server();
    let p = Pair::legacy(&s, json!({})).await;
    let raw = |text: &'static str| {
        let client = p.client().clone();
        async move {
            match client.request("tools/call", Some(RawJson::new(text))).await {
                Ok(r) => Ok(serde_json::from_str::<Value>(r.result().unwrap().get()).unwrap()),
                Err(mcpwire::peer::RequestError::Rpc(e)) => Err(e),
                Err(e) => panic!("{e}"),
            }
        }
    };
    // An escaped key is the key it spells.
    let r = raw(r#"{"n\u0061me":"greet","arguments":{"who":"Ada"}}"#).await.unwrap();
    assert_eq!(text_of(&r), "hello Ada");
    let r = raw(r#"{"name":"greet","\u0061rguments":{"who":"Bo"}}"#).await.unwrap();
    assert_eq!(text_of(&r), "hello Bo");
    // A member named twice is refused, whichever read finds it first.
    for (text, why) in [
        (
            r#"{"name":"greet","arguments":{"who":"A"},"arguments":{"who":"B"}}"#,
            "names arguments twice",
        ),
        (r#"{"name":"greet","name":"greet","arguments":{"who":"A"}}"#, "names name twice"),
        (r#"{"name":"greet","requestState":"a","requestState":"b"}"#, "names requestState twice"),
    ] {
        let e = raw(text).await.unwrap_err();
        assert_eq!(e.code.get(), -32602, "{text}");
        assert!(e.message.contains(why), "{text}: {}", e.message);
    }
    // A key spelled with escapes is found however it is written, and refused when named twice.
    let e = raw(r#"{"name":"greet","requestState":"a","requ\u0065stState":"b"}"#).await;
    assert!(e.unwrap_err().message.contains("names requestState twice"));
    let e = raw(r#"{"name":"greet","requ\u0065stState":"x"}"#).await.unwrap_err();
    assert_eq!(e.message, "Invalid params: requestState integrity check failed");
    // A value that mentions a key is not that member.
    let r = raw(r#"{"name":"greet","arguments":{"who":"requestState"}}"#).await.unwrap();
    assert_eq!(text_of(&r), "hello requestState");
    // `null` is no member at all: absent arguments read as `{}`.
    let r = raw(r#"{"name":"greet","arguments":null}"#).await.unwrap();
    assert!(text_of(&r).starts_with("invalid arguments: missing field `who`"), "{r}");
}

/// A tool registered for one era is listed and called in that era only; to the other era's
/// requests it is an unknown tool. The list the HTTP server reads annotations from has both.
#[tokio::test]
async fn a_tool_of_one_era_is_unknown_to_the_other() {
    use mcpwire::mcp::Era;
    let s = Server::builder("eras", "1")
        .tool(Tool::new("both"), |_| async { Ok(CallToolResult::text("both")) })
        .tool_in(Era::Legacy, Tool::new("old"), |_| async { Ok(CallToolResult::text("old")) })
        .tool_in(Era::Modern, Tool::new("new"), |_| async { Ok(CallToolResult::text("new")) })
        .build();
    let names = |list: &Value| -> Vec<String> {
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().into())
            .collect()
    };
    let all: Value = serde_json::from_str(s.tools_list_json()).unwrap();
    assert_eq!(names(&all), ["both", "old", "new"]);

    let legacy = Pair::legacy(&s, json!({})).await;
    assert_eq!(names(&legacy.call("tools/list", json!({})).await.unwrap()), ["both", "old"]);
    let r = legacy.call("tools/call", json!({"name": "old"})).await.unwrap();
    assert_eq!(text_of(&r), "old");
    let e = legacy.call("tools/call", json!({"name": "new"})).await.unwrap_err();
    assert_eq!((e.code.get(), e.message.as_ref()), (-32602, "Unknown tool: new"));

    let m = pair(&s);
    let list = m.call("tools/list", modern(json!({}), json!({}))).await.unwrap();
    assert_eq!(names(&list), ["both", "new"]);
    let r = m.call("tools/call", modern(json!({"name": "new"}), json!({}))).await.unwrap();
    assert_eq!(text_of(&r), "new");
    let e = m.call("tools/call", modern(json!({"name": "old"}), json!({}))).await.unwrap_err();
    assert_eq!((e.code.get(), e.message.as_ref()), (-32602, "Unknown tool: old"));
    // Registering a name again replaces the tool, whatever era either was for.
    let s = Server::builder("eras", "1")
        .tool_in(Era::Legacy, Tool::new("t"), |_| async { Ok(CallToolResult::text("old")) })
        .tool(Tool::new("t"), |_| async { Ok(CallToolResult::text("any")) })
        .build();
    let m = pair(&s);
    let r = m.call("tools/call", modern(json!({"name": "t"}), json!({}))).await.unwrap();
    assert_eq!(text_of(&r), "any");
}

/// `lists_change(false)`: no `listChanged` is declared and list changes are not announced;
/// resource updates still are.
#[tokio::test]
async fn fixed_lists_declare_no_list_changed_and_announce_none() {
    let s = Server::builder("fixed", "1")
        .lists_change(false)
        .tool(Tool::new("t"), |_| async { Ok(CallToolResult::text("t")) })
        .resource(Resource::new("test://a", "a"), |_| async {
            Ok(ReadResourceResult::new(ResourceContents::text("test://a", "text/plain", "A")))
        })
        .build();
    let mut p = Pair::legacy(&s, json!({})).await;
    let init = p
        .call("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}}))
        .await
        .unwrap();
    assert_eq!(
        init["capabilities"],
        json!({"tools": {}, "resources": {"subscribe": true}, "logging": {}})
    );
    let d = pair(&s).call("server/discover", modern(json!({}), json!({}))).await.unwrap();
    assert_eq!(d["capabilities"], init["capabilities"]);
    p.call("resources/subscribe", json!({"uri": "test://a"})).await.unwrap();
    s.tools_changed();
    s.prompts_changed();
    s.resources_changed();
    s.resource_updated("test://a");
    let got = drain(&mut p.notes).await;
    let methods: Vec<_> = got.iter().map(|n| n["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["notifications/resources/updated"], "{got:?}");
}

/// Methods of a capability the server does not declare are unknown (-32601) in both eras, as
/// any method it does not serve.
#[tokio::test]
async fn methods_of_undeclared_capabilities_are_unknown() {
    let tools_only = Server::builder("tools", "1")
        .tool(Tool::new("t"), |_| async { Ok(CallToolResult::text("t")) })
        .build();
    let undeclared = [
        ("prompts/list", json!({})),
        ("prompts/get", json!({"name": "p"})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "test://a"})),
    ];
    let legacy = Pair::legacy(&tools_only, json!({})).await;
    let m = pair(&tools_only);
    for (method, params) in &undeclared {
        let e = legacy.call(method, params.clone()).await.unwrap_err();
        assert_eq!(e.code.get(), -32601, "legacy {method}");
        let e = m.call(method, modern(params.clone(), json!({}))).await.unwrap_err();
        assert_eq!(e.code.get(), -32601, "modern {method}");
    }
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        let e = legacy.call(method, json!({"uri": "test://a"})).await.unwrap_err();
        assert_eq!(e.code.get(), -32601, "{method}");
    }
    // What it declares is served.
    assert!(legacy.call("tools/list", json!({})).await.is_ok());
    let nothing = Server::builder("nothing", "1").build();
    let legacy = Pair::legacy(&nothing, json!({})).await;
    let e = legacy.call("tools/list", json!({})).await.unwrap_err();
    assert_eq!(e.code.get(), -32601);
    let e = pair(&nothing).call("tools/call", modern(json!({"name": "t"}), json!({}))).await;
    assert_eq!(e.unwrap_err().code.get(), -32601);
}

/// `arguments`, `params` and `_meta` are objects in every MCP schema: anything else is refused
/// with -32602 naming the field, in both eras (serde would read `[1, 2]` into a struct).
#[tokio::test]
async fn arguments_params_and_meta_that_are_not_objects_are_refused() {
    let s = server();
    let legacy = Pair::legacy(&s, json!({})).await;
    let modern_pair = pair(&s);
    for (era, p, wrap) in [
        ("legacy", &legacy, (|v: Value| v) as fn(Value) -> Value),
        ("modern", &modern_pair, |v: Value| modern(v, json!({}))),
    ] {
        for args in [json!(["you"]), json!(42), json!("who"), json!(true)] {
            let params = wrap(json!({"name": "greet", "arguments": args}));
            let e = p.call("tools/call", params).await.unwrap_err();
            assert_eq!(e.code.get(), -32602, "{era} {args}");
            assert!(e.message.contains("arguments must be an object"), "{era}: {}", e.message);
        }
        // `null` and absent arguments read as no arguments: the tool's own check answers.
        let r = p.call("tools/call", wrap(json!({"name": "greet", "arguments": null}))).await;
        assert_eq!(r.unwrap()["isError"], true, "{era}");
        // By-position params: -32602 (without a session, an array cannot carry the modern
        // envelope either, and that is what the refusal says).
        for method in ["tools/list", "tools/call", "resources/read"] {
            let e = p.call(method, json!(["greet", {"who": "you"}])).await.unwrap_err();
            assert_eq!(e.code.get(), -32602, "{era} {method}");
            let why = if era == "legacy" { "params must be an object" } else { "params._meta" };
            assert!(e.message.contains(why), "{era}: {}", e.message);
        }
    }
    for meta in [json!(42), json!(["x"]), json!("m")] {
        for method in ["tools/list", "tools/call"] {
            let params = json!({"name": "greet", "arguments": {"who": "a"}, "_meta": meta});
            let e = legacy.call(method, params).await.unwrap_err();
            assert_eq!(e.code.get(), -32602, "{method} _meta {meta}");
            assert!(e.message.contains("_meta must be an object"), "{}", e.message);
        }
    }
}

/// A scoped tool on a transport that checks no one: refused (-32003, naming the scope), hidden
/// from `tools/list` when the host asks; the unscoped ones are served as usual.
#[tokio::test]
async fn a_scoped_tool_is_refused_where_no_caller_was_checked() {
    use mcpwire::server::Scoped;
    let s = Server::builder("scoped", "1")
        .tool(Tool::new("open"), |_| async { Ok(CallToolResult::text("open")) })
        .tool(Tool::new("closed"), |_| async { Ok(CallToolResult::text("closed")) })
        .require_scope(Scoped::tool("closed"), "admin")
        .list_only_permitted(true)
        .build();
    let p = Pair::legacy(&s, json!({})).await;
    let e = p.call("tools/call", json!({"name": "closed"})).await.unwrap_err();
    assert_eq!(e.code.get(), -32003);
    assert!(e.message.contains("tool closed needs the scope admin"), "{}", e.message);
    assert_eq!(
        serde_json::from_str::<Value>(e.data().unwrap().get()).unwrap(),
        json!({"scope": "admin"})
    );
    let r = p.call("tools/call", json!({"name": "open"})).await.unwrap();
    assert_eq!(text_of(&r), "open");
    let tools = p.call("tools/list", json!({})).await.unwrap();
    assert_eq!(tools["tools"].as_array().unwrap().len(), 1, "{tools}");
    assert_eq!(tools["tools"][0]["name"], "open");
}
