//! The tasks extension (`io.modelcontextprotocol/tasks`) in `server::Server`, over a real peer
//! pair (tokio, in-process pipes), both eras: negotiation, the task's life (`tasks/get`,
//! `tasks/update`, `tasks/cancel`), status notifications on a listen stream, bad input, and each
//! bound at and just past its limit.

use std::time::Duration;

use mcpwire::Json;
use mcpwire::limits::DEFAULT_TASK_RESULT_TTL;
use mcpwire::mcp::types::{
    CallToolResult, ElicitParams, ElicitResult, InputRequest, TaskSupport, Tool,
};
use mcpwire::peer::{Context, Handler, Incoming, PeerBuilder, PeerHandle, Reply, RpcError};
use mcpwire::server::{HandlerError, Server, ServerBuilder};
use serde_json::{Value, json};
use tokio::sync::mpsc;

mod common;

use common::{FORM, MODERN, pair_over};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn builder() -> ServerBuilder {
    Server::builder("tasks", "0.0.1")
        .tool(Tool::new("sync"), |_| async { Ok(CallToolResult::text("sync")) })
        .tool(Tool::new("sleepy").task_support(TaskSupport::Optional), |call| async move {
            #[derive(serde::Deserialize)]
            struct A {
                #[serde(default)]
                ms: u64,
                #[serde(default)]
                bytes: usize,
            }
            let a: A = call.arguments()?;
            if a.ms > 0 {
                tokio::time::sleep(Duration::from_millis(a.ms)).await;
            }
            Ok(CallToolResult::text("x".repeat(a.bytes.max(1))))
        })
        .tool(Tool::new("needs_task").task_support(TaskSupport::Required), |_| async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Err(HandlerError::tool("tool failure"))
        })
        .tool(Tool::new("ask").task_support(TaskSupport::Optional), |call| async move {
            let a =
                call.ask("name", InputRequest::elicit(&ElicitParams::form("Name?", FORM))).await?;
            let a: ElicitResult<'_> = a.decode()?;
            Ok(CallToolResult::text(format!("hi {}", a.text("name")?.unwrap_or_default())))
        })
        .tool(Tool::new("ask_first").task_support(TaskSupport::Required), |call| async move {
            let form = ElicitParams::form("Name?", FORM);
            let a = call.ask_first("name", InputRequest::elicit(&form)).await?;
            let a: ElicitResult<'_> = a.decode()?;
            let name = a.text("name")?.unwrap_or_default().into_owned();
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok(CallToolResult::text(format!("later {name}")))
        })
}

/// `initialize` params declaring the extension.
fn legacy_init() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {"extensions": {TASKS: {}}}, "clientInfo": {"name": "t", "version": "1"}})
}

struct ClientSide(mpsc::UnboundedSender<Value>);

impl Handler for ClientSide {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        Err(RpcError::method_not_found(req.method()))
    }

    async fn notification(&self, n: &Incoming, _cx: &Context) {
        let params: Value =
            n.params().map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
        let _ = self.0.send(json!({"method": n.method(), "params": params}));
    }
}

struct Pair {
    _peers: common::Pair,
    client: PeerHandle,
    notes: mpsc::UnboundedReceiver<Value>,
}

fn pair(server: &Server) -> Pair {
    let (tx, notes) = mpsc::unbounded_channel();
    let peers = pair_over(&PeerBuilder::new(), 1 << 20, ClientSide(tx), server.handler());
    let client = peers.client.clone();
    Pair { _peers: peers, client, notes }
}

impl Pair {
    async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match self.client.request(method, Some(Json(&params))).await {
            Ok(r) => Ok(serde_json::from_str(r.result().unwrap().get()).unwrap()),
            Err(mcpwire::peer::RequestError::Rpc(e)) => Err(e),
            Err(e) => panic!("{method}: {e}"),
        }
    }

    /// A modern request, declaring the extension when `tasks`.
    async fn modern(&self, method: &str, extra: Value, tasks: bool) -> Result<Value, RpcError> {
        let caps =
            if tasks { json!({"elicitation": {}, "extensions": {TASKS: {}}}) } else { json!({}) };
        let mut p = extra;
        p["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": caps});
        self.call(method, p).await
    }

    async fn get(&self, id: &str) -> Result<Value, RpcError> {
        self.modern("tasks/get", json!({"taskId": id}), true).await
    }

    /// Polls until the task is in `status` (or ended).
    async fn until(&self, id: &str, status: &str) -> Value {
        for _ in 0..500 {
            let t = self.get(id).await.unwrap();
            if t["status"] == status
                || ["completed", "failed", "cancelled"].contains(&t["status"].as_str().unwrap())
            {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("task {id} never reached {status}");
    }

    async fn start(&self, name: &str, args: Value) -> String {
        let r = self.modern("tools/call", json!({"name": name, "arguments": args}), true).await;
        let r = r.unwrap();
        assert_eq!(r["resultType"], "task", "{r}");
        r["taskId"].as_str().unwrap().to_owned()
    }
}

#[tokio::test]
async fn the_extension_is_declared_and_gates_the_task_methods_in_both_eras() {
    let s = builder().build();
    assert_eq!(
        s.capabilities().extensions.as_ref().unwrap().get(),
        format!(r#"{{"{TASKS}":{{}}}}"#)
    );
    let p = pair(&s);
    let d = p.modern("server/discover", json!({}), false).await.unwrap();
    assert_eq!(d["capabilities"]["extensions"][TASKS], json!({}));
    let tools = p.modern("tools/list", json!({}), false).await.unwrap();
    let sleepy = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "sleepy").unwrap();
    assert_eq!(sleepy["execution"]["taskSupport"], "optional");
    // Not declared: the methods are refused -32021 naming the extension; an optional tool runs
    // in the call, a required one is refused.
    for (m, extra) in [
        ("tasks/get", json!({"taskId": "x"})),
        ("tasks/cancel", json!({"taskId": "x"})),
        ("tasks/update", json!({"taskId": "x", "inputResponses": {}})),
    ] {
        let e = p.modern(m, extra, false).await.unwrap_err();
        assert_eq!(e.code.get(), -32021, "{m}");
        let data: Value = serde_json::from_str(e.data().unwrap().get()).unwrap();
        assert_eq!(data["requiredCapabilities"]["extensions"][TASKS], json!({}));
    }
    let r = p.modern("tools/call", json!({"name": "sleepy", "arguments": {"ms": 20}}), false);
    let r = r.await.unwrap();
    assert_eq!((r["resultType"].as_str(), r.get("taskId")), (Some("complete"), None));
    let e = p.modern("tools/call", json!({"name": "needs_task"}), false).await.unwrap_err();
    assert_eq!(e.code.get(), -32021);
    // The removed methods are unknown.
    for m in ["tasks/result", "tasks/list"] {
        assert_eq!(p.modern(m, json!({"taskId": "x"}), true).await.unwrap_err().code.get(), -32601);
    }
    // Legacy: declared at initialize, the same task and methods.
    let r = p.call("initialize", legacy_init()).await.unwrap();
    assert_eq!(r["capabilities"]["extensions"][TASKS], json!({}));
    let created = p.call("tools/call", json!({"name": "sleepy", "arguments": {"ms": 30}})).await;
    let created = created.unwrap();
    assert_eq!(created["resultType"], "task");
    let id = created["taskId"].as_str().unwrap();
    for _ in 0..200 {
        let t = p.call("tasks/get", json!({"taskId": id})).await.unwrap();
        if t["status"] == "completed" {
            assert_eq!(t["result"]["content"][0]["text"], "x");
            // As a legacy call would have answered it: no resultType.
            assert_eq!(t["result"].get("resultType"), None, "{t}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the legacy task never completed");
}

#[tokio::test]
async fn a_task_lives_is_polled_answered_and_cancelled() {
    let s = builder().build();
    let p = pair(&s);
    // Answered at once: no task (the immediate result).
    let r = p.modern("tools/call", json!({"name": "sleepy", "arguments": {}}), true).await.unwrap();
    assert_eq!(r["resultType"], "complete");
    // A tool failure completes the task with isError.
    let id = p.start("needs_task", json!({})).await;
    let t = p.until(&id, "completed").await;
    // As the modern call would have answered it, resultType included.
    assert_eq!(t["result"]["resultType"], "complete", "{t}");
    assert_eq!(
        (t["status"].as_str(), t["result"]["isError"].as_bool()),
        (Some("completed"), Some(true))
    );
    assert_eq!(
        t["ttlMs"].as_u64(),
        Some(u64::try_from(DEFAULT_TASK_RESULT_TTL.as_millis()).unwrap())
    );
    // Input through the task: input_required, then tasks/update resumes it; keys it did not
    // ask for are ignored.
    let id = p.start("ask", json!({})).await;
    let t = p.until(&id, "input_required").await;
    assert_eq!(t["inputRequests"]["name"]["method"], "elicitation/create");
    let ack = p
        .modern("tasks/update", json!({"taskId": id, "inputResponses": {"other": {}}}), true)
        .await
        .unwrap();
    assert_eq!(ack["resultType"], "complete");
    assert_eq!(p.get(&id).await.unwrap()["status"], "input_required");
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    p.modern("tasks/update", json!({"taskId": id, "inputResponses": {"name": answer}}), true)
        .await
        .unwrap();
    let t = p.until(&id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "hi Ada");
    // Cancelled while working; cancelling again (or after completion) is the same ack.
    let id = p.start("sleepy", json!({"ms": 60_000})).await;
    assert_eq!(p.get(&id).await.unwrap()["status"], "working");
    for _ in 0..2 {
        let ack = p.modern("tasks/cancel", json!({"taskId": id}), true).await.unwrap();
        assert_eq!(ack["resultType"], "complete");
        assert!(ack.get("status").is_none());
    }
    assert_eq!(p.get(&id).await.unwrap()["status"], "cancelled");
    // ask_first: the call's own input_required, then the task.
    let r = p.modern("tools/call", json!({"name": "ask_first"}), true).await.unwrap();
    assert_eq!(r["resultType"], "input_required");
    let retry = json!({"name": "ask_first", "inputResponses": {"name": answer}, "requestState": r["requestState"]});
    let r = p.modern("tools/call", retry, true).await.unwrap();
    assert_eq!(r["resultType"], "task");
    assert!(r.get("requestState").is_none());
    let t = p.until(r["taskId"].as_str().unwrap(), "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "later Ada");
}

#[tokio::test]
async fn unknown_ids_and_bad_params_are_refused_precisely_and_a_poll_flood_holds_nothing() {
    let s = builder().build();
    let p = pair(&s);
    for m in ["tasks/get", "tasks/cancel"] {
        let e = p.modern(m, json!({"taskId": "no-such-task"}), true).await.unwrap_err();
        assert_eq!(e.code.get(), -32602, "{m}");
        assert!(e.message.contains("no-such-task"), "{}", e.message);
    }
    let e = p
        .modern("tasks/update", json!({"taskId": "no-such-task", "inputResponses": {}}), true)
        .await
        .unwrap_err();
    assert_eq!(e.code.get(), -32602);
    for bad in [json!({}), json!({"taskId": 5}), json!({"taskId": "x", "inputResponses": 3})] {
        let m = if bad.get("inputResponses").is_some() { "tasks/update" } else { "tasks/get" };
        assert_eq!(p.modern(m, bad, true).await.unwrap_err().code.get(), -32602);
    }
    // Another client (a legacy session) does not see this one's task.
    let id = p.start("sleepy", json!({"ms": 60_000})).await;
    let other = pair(&s);
    other.call("initialize", legacy_init()).await.unwrap();
    let e = other.call("tasks/get", json!({"taskId": id})).await.unwrap_err();
    assert_eq!(e.code.get(), -32602);
    // A flood of polls: each answered, nothing more held.
    let polls: Vec<_> = (0..2000)
        .map(|_| {
            let c = p.client.clone();
            let id = id.clone();
            tokio::spawn(async move {
                let params = json!({"taskId": id, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}});
                c.request("tasks/get", Some(Json(&params))).await.map(|_| ())
            })
        })
        .collect();
    for poll in polls {
        poll.await.unwrap().unwrap();
    }
    let t = p.get(&id).await.unwrap();
    assert_eq!(t["status"], "working");
    p.modern("tasks/cancel", json!({"taskId": id}), true).await.unwrap();
}

/// Starts `n` tasks that run until cancelled; the error of the first refused, if any.
async fn fill(p: &Pair, n: usize) -> Option<RpcError> {
    for _ in 0..n {
        let r = p
            .modern("tools/call", json!({"name": "sleepy", "arguments": {"ms": 600_000}}), true)
            .await;
        if let Err(e) = r {
            return Some(e);
        }
    }
    None
}

#[tokio::test]
async fn tasks_per_client_and_in_all_are_bounded_at_and_past_the_bound() {
    // Per client: the bound is reached, one more is refused.
    let s = builder().max_tasks_per_client(3).build();
    let p = pair(&s);
    assert!(fill(&p, 3).await.is_none());
    let e = fill(&p, 1).await.unwrap();
    assert_eq!(e.code.get(), -32000);
    assert!(e.message.contains("at most 3 per client"), "{}", e.message);
    // A call answered at once needs no place: it still runs.
    let r = p.modern("tools/call", json!({"name": "sync"}), true).await.unwrap();
    assert_eq!(r["resultType"], "complete");
    // 10,000 tries from one client: every one past the bound refused before its handler runs.
    for _ in 0..10_000 {
        let e = fill(&p, 1).await.unwrap();
        assert_eq!(e.code.get(), -32000);
    }
    // In all: two clients (two legacy sessions), a bound of 4.
    let s = builder().max_tasks(4).build();
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let p = pair(&s);
        p.call("initialize", legacy_init()).await.unwrap();
        for _ in 0..2 {
            let r = p.call("tools/call", json!({"name": "sleepy", "arguments": {"ms": 600_000}}));
            assert_eq!(r.await.unwrap()["resultType"], "task");
        }
        sessions.push(p);
    }
    let e = sessions[0]
        .call("tools/call", json!({"name": "sleepy", "arguments": {"ms": 600_000}}))
        .await
        .unwrap_err();
    assert_eq!(e.code.get(), -32000);
    assert!(e.message.contains("at most 4"), "{}", e.message);
}

#[tokio::test]
async fn a_finished_task_is_kept_for_its_ttl_then_forgotten_and_its_place_freed() {
    let s = builder().max_tasks_per_client(1).task_result_ttl(Duration::from_millis(300)).build();
    let p = pair(&s);
    let id = p.start("sleepy", json!({"ms": 5})).await;
    let t = p.until(&id, "completed").await;
    assert_eq!(t["ttlMs"], 300);
    // Within its ttl: still there, and its place still taken.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(p.get(&id).await.unwrap()["status"], "completed");
    assert_eq!(fill(&p, 1).await.unwrap().code.get(), -32000);
    // Past it: forgotten (-32602), and the place is free.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(p.get(&id).await.unwrap_err().code.get(), -32602);
    assert!(fill(&p, 1).await.is_none());
}

#[tokio::test]
async fn a_result_is_kept_up_to_its_size_bound_and_a_larger_one_fails_the_task() {
    // `{"content":[{"type":"text","text":"…"}],"resultType":"complete"}`: 63 bytes around the
    // text (the result as the modern call would have answered it).
    let bound = 1000;
    let s = builder().max_task_result_bytes(bound).build();
    let p = pair(&s);
    let at = p.start("sleepy", json!({"ms": 5, "bytes": bound - 63})).await;
    let t = p.until(&at, "completed").await;
    assert_eq!(t["status"], "completed", "{t}");
    let past = p.start("sleepy", json!({"ms": 5, "bytes": bound - 62})).await;
    let t = p.until(&past, "failed").await;
    assert_eq!(t["status"], "failed");
    assert_eq!(t["error"]["code"], -32603);
    assert!(t["error"]["message"].as_str().unwrap().contains("1001 bytes"), "{t}");
    assert!(t.get("result").is_none());
}

#[tokio::test]
async fn status_changes_reach_a_listen_stream_that_follows_the_task() {
    let s = builder().build();
    let mut p = pair(&s);
    let id = p.start("ask", json!({})).await;
    p.until(&id, "input_required").await;
    let c = p.client.clone();
    let listen = json!({"notifications": {"taskIds": [id, "not-mine"]}, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}});
    let stream =
        tokio::spawn(async move { c.request("subscriptions/listen", Some(Json(&listen))).await });
    let ack = tokio::time::timeout(Duration::from_secs(5), p.notes.recv()).await.unwrap().unwrap();
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
    let answer = json!({"action": "accept", "content": {"name": "Bo"}});
    p.modern("tasks/update", json!({"taskId": id, "inputResponses": {"name": answer}}), true)
        .await
        .unwrap();
    let mut seen = Vec::new();
    while !seen.contains(&"completed".to_owned()) {
        let n =
            tokio::time::timeout(Duration::from_secs(5), p.notes.recv()).await.unwrap().unwrap();
        assert_eq!(n["method"], "notifications/tasks");
        assert_eq!(n["params"]["taskId"], id.as_str());
        assert!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].is_number());
        seen.push(n["params"]["status"].as_str().unwrap().to_owned());
    }
    // Each notification carries the task as it is when sent: working again, then completed
    // (the first may already show it completed).
    assert!(seen.iter().all(|s| s == "working" || s == "completed"), "{seen:?}");
    stream.abort();
}
