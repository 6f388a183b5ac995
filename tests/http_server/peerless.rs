//! Stateless requests handled without a peer ([`Handler::peerless`]): answered in the
//! connection's own future, their notifications turning the answer into an event stream, with
//! the guards of a request run in a peer (cancelled when the client closes the POST, answered
//! -32603 when the server stops or the handler panics).

use std::sync::atomic::{AtomicUsize, Ordering};

use mcpwire::limits::POST_NOTES;

use crate::harness::*;
use crate::modern::{body, meta, mirrored, post};

/// A handler that takes every stateless request without a peer: `echo` answers its params;
/// `notes` sends `n` progress notifications through its context, then answers; `hold` waits to
/// be released (`spawned: true`: a task it spawned sends one notification first); `boom`
/// panics; `handle` tries the closed handle of `Context::peer`.
#[derive(Clone)]
struct Quick {
    holding: Arc<Semaphore>,
    release: Arc<Semaphore>,
    /// `hold` handlers dropped before their answer.
    dropped: Arc<AtomicUsize>,
}

/// Counts a `hold` dropped before it answered.
struct Dropped(Arc<AtomicUsize>, bool);

impl Drop for Dropped {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn progress(i: usize) -> Value {
    json!({"progressToken": 1, "progress": i})
}

impl Handler for Quick {
    fn peerless(_: &Incoming) -> bool {
        true
    }

    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        let params: Value = req.params_as().unwrap_or(Value::Null);
        match req.method() {
            "echo" => Ok(Reply::json(&params)?),
            "notes" => {
                for i in 0..params["n"].as_u64().unwrap_or(0) as usize {
                    let sent = cx.notify("notifications/progress", Some(Json(&progress(i)))).await;
                    sent.map_err(|e| RpcError::internal(e.to_string()))?;
                }
                Reply::json(&json!({"done": true}))
            }
            "hold" => {
                let mut guard = Dropped(self.dropped.clone(), false);
                if params["spawned"] == true {
                    let cx = cx.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let _ = cx.notify("notifications/progress", Some(Json(&progress(7)))).await;
                    });
                }
                self.holding.add_permits(1);
                self.release.acquire().await.unwrap().forget();
                guard.1 = true;
                Reply::json(&json!({"released": true}))
            }
            "boom" => panic!("the handler failed"),
            "handle" => {
                let note = progress(0);
                let sent = cx.peer().notify("notifications/progress", Some(Json(&note))).await;
                Reply::json(&json!({"closed": sent.is_err()}))
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

struct Harness {
    addr: SocketAddr,
    server: HttpServer,
    handler: Quick,
    made: Arc<AtomicUsize>,
    serving: ServedHttp,
}

async fn start(server: HttpServer) -> Harness {
    let handler = Quick {
        holding: Arc::new(Semaphore::new(0)),
        release: Arc::new(Semaphore::new(0)),
        dropped: Arc::default(),
    };
    let made = Arc::new(AtomicUsize::new(0));
    let (h, m) = (handler.clone(), made.clone());
    let serving = serve_http(server.clone(), move || {
        m.fetch_add(1, Ordering::SeqCst);
        h.clone()
    })
    .await;
    Harness { addr: serving.addr, server, handler, made, serving }
}

fn params(extra: Value) -> Value {
    let mut p = extra;
    p["_meta"] = meta();
    p
}

#[tokio::test]
async fn an_answer_given_at_once_is_json_and_no_peer_or_session_is_made() {
    let h = start(HttpServer::new(PeerBuilder::new())).await;
    let mut c = Client::connect(h.addr).await;
    for i in 0..10 {
        let a =
            c.call(post(&c, body(i, "echo", &params(json!({"i": i}))), &mirrored("echo"))).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(a.json()["id"], i, "{a:?}");
        assert_eq!(a.json()["result"]["i"], i, "{a:?}");
    }
    // One handler for the connection's requests; no session, no peer behind them.
    assert_eq!(h.made.load(Ordering::SeqCst), 1);
    assert_eq!(h.server.stats().sessions_started, 0);
    // An error keeps its status mapping (404 for -32601).
    let a = c.call(post(&c, body(11, "nope", &params(json!({}))), &mirrored("nope"))).await;
    a.assert_error(StatusCode::NOT_FOUND, -32601, json!(11));
}

#[tokio::test]
async fn notifications_turn_the_answer_into_an_event_stream_in_order() {
    let h = start(HttpServer::new(PeerBuilder::new())).await;
    let mut c = Client::connect(h.addr).await;
    let a = c.call(post(&c, body(1, "notes", &params(json!({"n": 3}))), &mirrored("notes"))).await;
    assert_eq!(content_type(&a.headers), Some("text/event-stream"), "{a:?}");
    let events = a.events();
    assert_eq!(events.len(), 4, "{events:?}");
    for (i, e) in events[..3].iter().enumerate() {
        assert_eq!(e["method"], "notifications/progress", "{events:?}");
        assert_eq!(e["params"]["progress"], i, "{events:?}");
    }
    assert_eq!(events[3]["id"], 1);
    assert_eq!(events[3]["result"]["done"], true);
    // A client that takes only JSON gets the response alone.
    let req = c
        .to(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "notes")
        .body(full(body(2, "notes", &params(json!({"n": 3})))))
        .unwrap();
    let a = c.call(req).await;
    assert_eq!(a.json()["result"]["done"], true, "{a:?}");
}

#[tokio::test]
async fn notifications_wait_up_to_the_bound_and_past_it_are_dropped() {
    let h = start(HttpServer::new(PeerBuilder::new())).await;
    let mut c = Client::connect(h.addr).await;
    for (n, kept) in [(POST_NOTES, POST_NOTES), (POST_NOTES + 1, POST_NOTES)] {
        let req = post(&c, body(1, "notes", &params(json!({"n": n}))), &mirrored("notes"));
        let events = c.call(req).await.events();
        assert_eq!(events.len(), kept + 1, "{n} sent");
        assert_eq!(events[kept]["result"]["done"], true);
        assert_eq!(events[kept - 1]["params"]["progress"], kept - 1);
    }
}

#[tokio::test]
async fn a_notification_from_another_task_starts_the_stream() {
    let h = start(HttpServer::new(PeerBuilder::new())).await;
    let mut c = Client::connect(h.addr).await;
    let req = post(&c, body(5, "hold", &params(json!({"spawned": true}))), &mirrored("hold"));
    let r = timeout(WAIT, c.send(req)).await.expect("the stream begins before the answer");
    assert_eq!(content_type(r.headers()), Some("text/event-stream"));
    let mut body = r.into_body();
    let first = timeout(WAIT, body.frame()).await.expect("an event").unwrap().unwrap();
    let first = String::from_utf8(first.into_data().unwrap().to_vec()).unwrap();
    assert_eq!(sse_events(&first)[0]["params"]["progress"], 7, "{first:?}");
    h.handler.release.add_permits(1);
    let mut rest = String::new();
    while let Some(f) = timeout(WAIT, body.frame()).await.expect("the end in time") {
        rest.push_str(std::str::from_utf8(&f.unwrap().into_data().unwrap()).unwrap());
    }
    let events = sse_events(&rest);
    assert_eq!(events.last().unwrap()["result"]["released"], true, "{rest:?}");
}

#[tokio::test]
async fn a_quiet_stream_carries_keep_alive_comments() {
    let server = HttpServer::new(PeerBuilder::new()).keep_alive(Duration::from_millis(50));
    let h = start(server).await;
    let mut c = Client::connect(h.addr).await;
    let req = post(&c, body(5, "hold", &params(json!({"spawned": true}))), &mirrored("hold"));
    let mut body = c.send(req).await.into_body();
    let mut text = String::new();
    while !text.contains(": keep-alive") {
        let f = timeout(WAIT, body.frame()).await.expect("a keep-alive in time").unwrap();
        text.push_str(std::str::from_utf8(&f.unwrap().into_data().unwrap()).unwrap());
    }
    h.handler.release.add_permits(1);
}

#[tokio::test]
async fn closing_the_post_drops_the_handler() {
    let h = start(HttpServer::new(PeerBuilder::new())).await;
    let mut c = Client::connect(h.addr).await;
    let req = post(&c, body(1, "hold", &params(json!({}))), &mirrored("hold"));
    let task = tokio::spawn(async move { c.send(req).await });
    timeout(WAIT, h.handler.holding.acquire()).await.unwrap().unwrap().forget();
    task.abort();
    let _ = task.await;
    let deadline = Instant::now() + WAIT;
    while h.handler.dropped.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the handler was not dropped");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_stop_answers_a_waiting_request_and_a_panic_is_an_internal_error() {
    let h = start(HttpServer::new(PeerBuilder::new())).await;
    let mut c = Client::connect(h.addr).await;
    let a = c.call(post(&c, body(3, "boom", &params(json!({}))), &mirrored("boom"))).await;
    a.assert_error(StatusCode::OK, INTERNAL_ERROR, json!(3));
    let a = c.call(post(&c, body(4, "handle", &params(json!({}))), &mirrored("handle"))).await;
    assert_eq!(a.json()["result"]["closed"], true, "a closed handle: {a:?}");
    let req = post(&c, body(2, "hold", &params(json!({}))), &mirrored("hold"));
    let held = tokio::spawn(async move { c.call(req).await });
    timeout(WAIT, h.handler.holding.acquire()).await.unwrap().unwrap().forget();
    let ServedHttp { stop, task, .. } = h.serving;
    stop.send(()).unwrap();
    let answer = timeout(WAIT, held).await.expect("the POST ends").unwrap();
    answer.assert_error(StatusCode::OK, INTERNAL_ERROR, json!(2));
    timeout(WAIT, task).await.expect("serve returns").unwrap().unwrap();
}

/// The typed server behind the HTTP server reads a stateless request's envelope as the header
/// check found it (handed on with the request, not read again): its log level decides which
/// log messages the answer carries, its capabilities are the ones the handler sees, written as
/// the client wrote them; a version spelled with an escape (which the check decodes, so it is
/// not handed on) is read again by the server, with the same outcome.
#[tokio::test]
async fn a_typed_server_reads_the_envelope_the_header_check_found() {
    /// The version as written, the capabilities as written, the log level, the answer's
    /// text, the levels of the log messages it carries.
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, &'a str, &'a [&'a str]);
    use mcpwire::mcp::types::{CallToolResult, LoggingLevel, Tool};
    use mcpwire::server::Server;

    let mcp = Server::builder("envelope", "1")
        .tool(Tool::new("envelope"), |call| async move {
            call.log(LoggingLevel::Info, "an info line").await;
            call.log(LoggingLevel::Error, "an error line").await;
            let caps = call.client_capabilities().unwrap_or("none").to_owned();
            let elicits = call.client_supports("elicitation");
            Ok(CallToolResult::text(format!("{caps} {elicits}")))
        })
        .build();
    let served = serve_with(HttpServer::new(PeerBuilder::new()), move |_| mcp.handler()).await;
    let mut c = Client::connect(served.addr).await;
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "envelope"),
    ];
    let cases: [Case; 4] = [
        (r#""2026-07-28""#, "{}", None, "{} false", &[]),
        (
            r#""2026-07-28""#,
            r#"{ "elicitation" : {} }"#,
            Some("error"),
            r#"{ "elicitation" : {} } true"#,
            &["error"],
        ),
        (
            r#""2026-07-28""#,
            r#"{"sampling":{}}"#,
            Some("info"),
            r#"{"sampling":{}} false"#,
            &["info", "error"],
        ),
        (
            r#""\u0032026-07-28""#,
            r#"{"elicitation":{}}"#,
            Some("info"),
            r#"{"elicitation":{}} true"#,
            &["info", "error"],
        ),
    ];
    for (i, (version, caps, level, text, levels)) in cases.into_iter().enumerate() {
        let level = level
            .map_or(String::new(), |l| format!(r#","io.modelcontextprotocol/logLevel":"{l}""#));
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"envelope","_meta":{{"io.modelcontextprotocol/protocolVersion":{version},"io.modelcontextprotocol/clientCapabilities":{caps}{level}}}}}}}"#
        );
        let a = c.call(post(&c, body, &headers)).await;
        assert_eq!(a.status, StatusCode::OK, "case {i}: {a:?}");
        let messages = if levels.is_empty() { vec![a.json()] } else { a.events() };
        let (answer, logs) = messages.split_last().unwrap_or_else(|| panic!("case {i}: {a:?}"));
        assert_eq!(answer["id"], i, "case {i}: {a:?}");
        assert_eq!(answer["result"]["content"][0]["text"], *text, "case {i}: {a:?}");
        let got: Vec<&str> = logs
            .iter()
            .map(|m| {
                assert_eq!(m["method"], "notifications/message", "case {i}: {m}");
                m["params"]["level"].as_str().unwrap()
            })
            .collect();
        assert_eq!(got, levels, "case {i}: {a:?}");
    }
    // An error answered on this path takes the status its code maps to.
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let nope = format!(r#"{{"jsonrpc":"2.0","id":9,"method":"nope","params":{{"_meta":{meta}}}}}"#);
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "nope")];
    let a = c.call(post(&c, nope, &headers)).await;
    a.assert_error(StatusCode::NOT_FOUND, -32601, json!(9));
}
