//! `mcpwire bridge` between modern (2026-07-28) clients and a legacy-only child that asks for
//! input mid-call (`bridge/legacy_child.py`'s `ask` and `sample`): the child's call is held,
//! the client answered `input_required` with the child's request and a sealed `requestState`,
//! and the client's retry answers the child, whose call goes on. Each client gets its own
//! questions; a changed, replayed or expired state is refused; the bound on held calls at and
//! past it. And `subscriptions/listen`, which the bridge serves itself from the child's
//! session, with its bound at and past it.

#[path = "bridge/support.rs"]
mod support;

use std::time::Duration;

use mcpwire::peer::RpcError;
use serde_json::{Value, json};
use support::{Answers, Client, legacy_child, start, text};

fn child() -> Vec<String> {
    legacy_child()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A moment for what the child sent meanwhile to reach the listen streams.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(150)).await;
}

async fn modern(url: &str) -> Client {
    Client::new(url, true, Answers::default()).await
}

/// `tools/call` of `tool` with `extra` members (a retry's) in the params, from a client that
/// declares elicitation, and sampling for the tool `sample`.
async fn call(m: &Client, tool: &str, arguments: Value, extra: Value) -> Result<Value, RpcError> {
    let caps = match tool {
        "sample" => json!({"elicitation": {}, "sampling": {}}),
        _ => json!({"elicitation": {}}),
    };
    call_as(m, tool, arguments, extra, caps).await
}

/// [`call`] with the client's declared capabilities.
async fn call_as(
    m: &Client,
    tool: &str,
    arguments: Value,
    extra: Value,
    caps: Value,
) -> Result<Value, RpcError> {
    let mut p = json!({"name": tool, "arguments": arguments});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        p[k] = v;
    }
    let p = m.params(p, json!({"io.modelcontextprotocol/clientCapabilities": caps}));
    match m.peer.request("tools/call", Some(mcpwire::RawJson::new(&p))).await {
        Ok(a) => Ok(serde_json::from_str(a.result().unwrap().get()).unwrap()),
        Err(mcpwire::peer::RequestError::Rpc(e)) => Err(e),
        Err(e) => Err(RpcError::internal(e.to_string())),
    }
}

/// The one input request of an `input_required` result, and its state.
fn input(r: &Value) -> (&Value, String) {
    assert_eq!(r["resultType"], "input_required", "{r}");
    let reqs = r["inputRequests"].as_object().unwrap();
    assert_eq!(reqs.len(), 1, "{r}");
    (&reqs["input"], r["requestState"].as_str().unwrap().to_owned())
}

fn accept(answer: &str, state: &str) -> Value {
    json!({
        "inputResponses": {"input": {"action": "accept", "content": {"answer": answer}}},
        "requestState": state,
    })
}

/// Two rounds of elicitation, then a sampling request: each asked in an `input_required`
/// result, each answer reaching the child, the result complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_childs_requests_are_asked_in_input_required_results() {
    let c = child();
    let bridge = start(&[], &args(&c));
    let m = modern(&bridge.url).await;
    let q = json!({"question": "name?", "rounds": 2});
    let r = call(&m, "ask", q.clone(), json!({})).await.unwrap();
    let (req, state) = input(&r);
    assert_eq!(req["method"], "elicitation/create", "{r}");
    assert_eq!(req["params"]["message"], "name?", "{r}");
    let r = call(&m, "ask", q.clone(), accept("ann", &state)).await.unwrap();
    let (req, state) = input(&r);
    assert_eq!(req["params"]["message"], "name? again", "{r}");
    let r = call(&m, "ask", q, accept("bob", &state)).await.unwrap();
    assert_eq!(text(&r), "answers: ann, bob", "{r}");
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "legacy-child", "{r}");

    let s = json!({"text": "hi"});
    let r = call(&m, "sample", s.clone(), json!({})).await.unwrap();
    let (req, state) = input(&r);
    assert_eq!(req["method"], "sampling/createMessage", "{r}");
    assert_eq!(req["params"]["messages"][0]["content"]["text"], "hi", "{r}");
    let sampled =
        json!({"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"});
    let retry = json!({"inputResponses": {"input": sampled}, "requestState": state});
    let r = call(&m, "sample", s, retry).await.unwrap();
    assert_eq!(text(&r), "sampled: yes", "{r}");
}

/// A client that declared elicitation but not sampling: the child's sampling request for its
/// call is refused to the child (which answers the call with the refusal), never asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_a_capability_the_client_did_not_declare_is_refused() {
    let c = child();
    let bridge = start(&[], &args(&c));
    let m = modern(&bridge.url).await;
    let caps = json!({"elicitation": {}});
    let r = call_as(&m, "sample", json!({"text": "hi"}), json!({}), caps).await.unwrap();
    assert_eq!(r["isError"], true, "{r}");
    assert!(text(&r).contains("did not declare the sampling capability"), "{r}");
}

/// Four modern clients, each call held in turn (each earlier one waiting for its answer), then
/// all answered at once in the reverse order: each gets its own question and the child gets
/// each client's answer for that client's call (0 misrouted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_modern_clients_each_get_their_own_question() {
    let c = child();
    let bridge = start(&[], &args(&c));
    let mut held = Vec::new();
    for i in 0..4 {
        let m = modern(&bridge.url).await;
        let q = json!({"question": format!("client {i}?")});
        let r = call(&m, "ask", q.clone(), json!({})).await.unwrap();
        let (req, state) = input(&r);
        assert_eq!(req["params"]["message"], format!("client {i}?"), "{r}");
        held.push((m, q, state, i));
    }
    let answers = held.iter().rev().map(|(m, q, state, i)| async move {
        let r = call(m, "ask", q.clone(), accept(&format!("from {i}"), state)).await.unwrap();
        (text(&r).to_owned(), *i)
    });
    for (got, i) in futures::future::join_all(answers).await {
        assert_eq!(got, format!("answers: from {i}"));
    }
}

/// A `requestState` with a byte changed is refused (-32602) and the held call stays held: the
/// state as given still resumes it, once; used again, or on another tool, it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_or_replayed_request_state_is_refused() {
    let c = child();
    let bridge = start(&[], &args(&c));
    let m = modern(&bridge.url).await;
    let q = json!({"question": "pin?"});
    let (_, state) = input(&call(&m, "ask", q.clone(), json!({})).await.unwrap());
    let mut bytes = state.clone().into_bytes();
    bytes[3] = if bytes[3] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(bytes).unwrap();
    let e = call(&m, "ask", q.clone(), accept("x", &changed)).await.unwrap_err();
    assert_eq!(e.code, mcpwire::ErrorCode::INVALID_PARAMS, "{e:?}");
    assert!(e.message.contains("requestState integrity check failed"), "{e:?}");
    let e = call(&m, "echo", json!({"message": "m"}), accept("x", &state)).await.unwrap_err();
    assert!(e.message.contains("requestState integrity check failed"), "{e:?}");
    let r = call(&m, "ask", q.clone(), accept("1234", &state)).await.unwrap();
    assert_eq!(text(&r), "answers: 1234", "{r}");
    let e = call(&m, "ask", q, accept("again", &state)).await.unwrap_err();
    assert!(e.message.contains("names no held call"), "{e:?}");
}

/// `--held-timeout 1`: a client that does not come back within it finds its state expired;
/// the child's elicitation was answered `cancel`, and the held state freed (another call is
/// held under `--max-held-calls 1`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_whose_client_never_comes_back_expires() {
    let c = child();
    let bridge = start(&["--held-timeout", "1", "--max-held-calls", "1"], &args(&c));
    let m = modern(&bridge.url).await;
    let q = json!({"question": "late?"});
    let (_, state) = input(&call(&m, "ask", q.clone(), json!({})).await.unwrap());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let e = call(&m, "ask", q.clone(), accept("too late", &state)).await.unwrap_err();
    assert_eq!(e.code, mcpwire::ErrorCode::INVALID_PARAMS, "{e:?}");
    assert!(e.message.contains("expired"), "{e:?}");
    let log = bridge.log.lock().unwrap().clone();
    assert!(log.contains(r#"legacy-child: elicitation answered {"action": "cancel"}"#), "{log}");
    let (_, state) = input(&call(&m, "ask", q.clone(), json!({})).await.unwrap());
    assert_eq!(text(&call(&m, "ask", q, accept("now", &state)).await.unwrap()), "answers: now");
}

/// `--max-held-calls 2`: two calls held (at the bound), a third refused with -32000 and
/// `data.maxHeldCalls` (past it: the child's request refused, its call cancelled); once one
/// is answered, another is held again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_calls_are_bounded() {
    let c = child();
    let bridge = start(&["--max-held-calls", "2"], &args(&c));
    let m = modern(&bridge.url).await;
    let q = |i: u32| json!({"question": format!("q{i}")});
    let (_, s1) = input(&call(&m, "ask", q(1), json!({})).await.unwrap());
    let (_, s2) = input(&call(&m, "ask", q(2), json!({})).await.unwrap());
    let e = call(&m, "ask", q(3), json!({})).await.unwrap_err();
    assert_eq!(e.code, mcpwire::ErrorCode::SERVER_ERROR, "{e:?}");
    assert!(e.message.contains("too many calls held"), "{e:?}");
    assert_eq!(
        e.data().map(|d| d.get().to_owned()).as_deref(),
        Some(r#"{"maxHeldCalls":2}"#),
        "{e:?}"
    );
    assert_eq!(text(&call(&m, "ask", q(1), accept("a1", &s1)).await.unwrap()), "answers: a1");
    let (_, s4) = input(&call(&m, "ask", q(4), json!({})).await.unwrap());
    assert_eq!(text(&call(&m, "ask", q(2), accept("a2", &s2)).await.unwrap()), "answers: a2");
    assert_eq!(text(&call(&m, "ask", q(4), accept("a4", &s4)).await.unwrap()), "answers: a4");
}

/// mcpwire's own `Client` (it negotiates 2026-07-28 with the bridge from `server/discover`)
/// answers each round with its `on_elicit` callback, and `call_tool` returns the child's
/// result after two rounds. Its first call: the client lists the tools just before it (a
/// request of another modern "client", answered a moment before the child asks), and the
/// child asks at once; the list's answer came before the child's request in the child's
/// stream, so the call alone concerns it and is held, not refused as ambiguous.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcpwire_client_answers_a_held_calls_rounds() {
    use mcpwire::mcp::types::{ElicitAction, ElicitResult, Raw};
    let c = child();
    let bridge = start(&[], &args(&c));
    let client = mcpwire::client::Client::builder()
        .on_elicit(|asked| async move {
            let reply = json!({"answer": format!("re: {}", asked.get().message)}).to_string();
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: Some(Raw::owned(reply).unwrap()),
            })
        })
        .connect(bridge.url.as_str())
        .await
        .unwrap();
    assert_eq!(client.era(), mcpwire::mcp::Era::Modern);
    for round in 0..3 {
        let r = client.call_tool("ask", json!({"question": "who?", "rounds": 2})).await;
        let r = r.unwrap_or_else(|e| panic!("call {round}: {e:?} {}", bridge.log.lock().unwrap()));
        assert_eq!(r.get().content[0].as_text(), Some("answers: re: who?, re: who? again"));
    }
}

/// The first call of mcpwire's `Client` (right after its tool list) to a tool that logs at
/// once: the child's log message, read after the list's answer, reaches the call's client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_message_right_after_a_tool_list_reaches_the_calls_client() {
    let c = child();
    let bridge = start(&[], &args(&c));
    let logged = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = logged.clone();
    let client = mcpwire::client::Client::builder()
        .on_log(move |m| seen.lock().unwrap().push(m.data.get().to_owned()))
        .connect(bridge.url.as_str())
        .await
        .unwrap();
    assert_eq!(client.era(), mcpwire::mcp::Era::Modern);
    let r = client.call_tool("log", json!({"message": "first"})).await.unwrap();
    assert_eq!(r.get().content[0].as_text(), Some("logged"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while logged.lock().unwrap().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no log message: {}",
            bridge.log.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(*logged.lock().unwrap(), [r#""first""#]);
}

/// Opens a `subscriptions/listen` of `m` with `filter` (the request runs until it is aborted);
/// the acknowledgement's params once it came, or the request's error.
async fn listen(
    m: &Client,
    filter: Value,
) -> (tokio::task::JoinHandle<()>, Result<Value, RpcError>) {
    let p = m.params(json!({"notifications": filter}), json!({}));
    let peer = m.peer.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let stream = tokio::spawn(async move {
        let e = match peer.request("subscriptions/listen", Some(mcpwire::RawJson::new(&p))).await {
            Ok(a) => RpcError::internal(format!(
                "answered: {:?}",
                a.result().map(|r| r.get().to_owned())
            )),
            Err(mcpwire::peer::RequestError::Rpc(e)) => e,
            Err(e) => RpcError::internal(e.to_string()),
        };
        let _ = tx.send(e);
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut rx = rx;
    loop {
        let ack = m.seen.notes.lock().unwrap().iter().find_map(|(method, p)| {
            (method == "notifications/subscriptions/acknowledged").then(|| p.clone())
        });
        if let Some(ack) = ack {
            return (stream, Ok(ack));
        }
        if let Ok(e) = rx.try_recv() {
            return (stream, Err(e));
        }
        assert!(tokio::time::Instant::now() < deadline, "no acknowledgement");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A modern client listens through the bridge to a legacy-only child: acknowledged with what
/// the child can send (its tools' list changes and resource subscriptions; it has no prompts),
/// the child subscribed to the resource, a resource update and a list change delivered on the
/// stream under its subscription id. `--max-listen-streams 1`: one stream at the bound, a
/// second refused -32000 past it; once the first is closed the child's subscription is undone
/// and a new stream is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_of_a_legacy_child_is_served_by_the_bridge() {
    let c = child();
    let bridge = start(&["--max-listen-streams", "1"], &args(&c));
    let listener = modern(&bridge.url).await;
    let filter = json!({"toolsListChanged": true, "promptsListChanged": true,
                        "resourceSubscriptions": ["test://a", "test://a"]});
    let (stream, ack) = listen(&listener, filter.clone()).await;
    let ack = ack.unwrap();
    assert_eq!(
        ack["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]}),
        "{ack}"
    );
    let sub = ack["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
    assert!(!sub.is_null(), "{ack}");

    let other = modern(&bridge.url).await;
    let (_refused, e) = listen(&other, filter.clone()).await;
    let e = e.unwrap_err();
    assert_eq!(e.code, mcpwire::ErrorCode::SERVER_ERROR, "{e:?}");
    assert!(e.message.contains("at most 1 listen streams"), "{e:?}");

    let caller = modern(&bridge.url).await;
    assert_eq!(text(&call(&caller, "subscribed", json!({}), json!({})).await.unwrap()), "test://a");
    settle().await;
    assert_eq!(
        text(&call(&caller, "touch", json!({"uri": "test://a"}), json!({})).await.unwrap()),
        "touched"
    );
    settle().await;
    assert_eq!(
        text(&call(&caller, "change_tools", json!({}), json!({})).await.unwrap()),
        "changed"
    );
    let seen = |method: &str| {
        listener
            .seen
            .notes
            .lock()
            .unwrap()
            .iter()
            .find(|(m, _)| m == method)
            .map(|(_, p)| p.clone())
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while seen("notifications/resources/updated").is_none()
        || seen("notifications/tools/list_changed").is_none()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            listener.seen.notes.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let updated = seen("notifications/resources/updated").unwrap();
    assert_eq!(updated["uri"], "test://a", "{updated}");
    assert_eq!(updated["_meta"]["io.modelcontextprotocol/subscriptionId"], sub, "{updated}");
    let changed = seen("notifications/tools/list_changed").unwrap();
    assert_eq!(changed["_meta"]["io.modelcontextprotocol/subscriptionId"], sub, "{changed}");
    // Neither went to the client that made the calls.
    assert!(
        caller.seen.notes.lock().unwrap().is_empty(),
        "{:?}",
        caller.seen.notes.lock().unwrap()
    );

    stream.abort();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        settle().await;
        let r = call(&caller, "subscribed", json!({}), json!({})).await.unwrap();
        if text(&r).is_empty() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the child's subscription stayed: {r}");
    }
    let again = modern(&bridge.url).await;
    let (_stream, ack) = listen(&again, filter).await;
    assert_eq!(ack.unwrap()["notifications"]["resourceSubscriptions"], json!(["test://a"]));
}
