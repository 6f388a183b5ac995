//! Resuming an event stream (MCP "Resumability and Redelivery", SEP-1699 polling): a legacy
//! POST's stream that ends, or breaks, before the response came, having given an event id, is
//! resumed with `GET` and `Last-Event-ID` after the stream's `retry` time, so the request still
//! completes; against `HttpServer` (whose handler closes its stream with `close_sse_stream`)
//! and against a scripted server (refusals, failures, a server that polls).

use std::time::Instant;

use crate::harness::*;

// ---------------------------------------------------------------------------------------------
// Against the real server.
// ---------------------------------------------------------------------------------------------

/// `poll` sends a progress notification, closes its POST's stream, waits 100 ms, sends
/// another, and answers.
#[derive(Clone, Default)]
struct Poller;

impl Handler for Poller {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "initialize" => Ok(Reply::raw(INIT_RESULT)),
            "poll" => {
                let token = params_of(req)["_meta"]["progressToken"].clone();
                let note = |i: u32| json!({"progressToken": token, "progress": i});
                let sent =
                    |r: Result<(), RequestError>| r.map_err(|e| RpcError::internal(e.to_string()));
                sent(cx.peer().notify("notifications/progress", Some(Json(&note(1)))).await)?;
                mcpwire::http::close_sse_stream(cx);
                tokio::time::sleep(Duration::from_millis(100)).await;
                sent(cx.peer().notify("notifications/progress", Some(Json(&note(2)))).await)?;
                Ok(Reply::raw(r#"{"polled":true}"#))
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

/// The client's handler: logs each notification's progress.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Value>>>);

impl Handler for Log {
    async fn request(&self, req: &Incoming, _: &Context) -> Result<Reply, RpcError> {
        Err(RpcError::method_not_found(req.method()))
    }

    async fn notification(&self, n: &Incoming, _: &Context) {
        self.0.lock().unwrap().push(params_of(n)["progress"].clone());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_stream_the_server_closes_completes_on_the_resumed_stream() {
    let server = HttpServer::new(PeerBuilder::new()).sse_retry(Duration::from_millis(50));
    let served = serve_http(server.clone(), || Poller).await;
    let log = Log::default();
    let (peer, _conn) = connect(&PeerBuilder::new(), &served.url(), log.clone()).unwrap();
    handshake(&peer).await;
    for id in 0..3 {
        let params = json!({"_meta": {"progressToken": format!("t{id}")}});
        let started = Instant::now();
        let r = within(peer.request("poll", Some(Json(&params)))).await.unwrap();
        assert_eq!(r.result_as::<Value>().unwrap(), json!({"polled": true}));
        assert!(started.elapsed() >= Duration::from_millis(100), "the handler's wait");
    }
    // Each notification once, in order: the one before the close on the POST, the one after
    // on the resumed stream (nothing replayed twice).
    eventually("six notifications", || log.0.lock().unwrap().len() >= 6).await;
    assert_eq!(
        *log.0.lock().unwrap(),
        [json!(1), json!(2), json!(1), json!(2), json!(1), json!(2)]
    );
    assert_eq!(server.stats().messages_dropped, 0);
    drop(served);
}

// ---------------------------------------------------------------------------------------------
// Against a scripted server.
// ---------------------------------------------------------------------------------------------

/// What the scripted server answers to one GET.
#[derive(Clone)]
enum Get {
    /// 200, these events, then the end of the stream.
    Events(String),
    /// A status with a JSON-RPC error body.
    Status(u16, &'static str),
    /// The connection closed with no answer.
    Hangup,
}

/// An HTTP/1.1 server, one request per connection: `initialize` gets a session; a
/// notification 202; `call` a stream of `posted` (its events) that then ends; each GET the
/// next answer of `gets` (the last one repeats; `{id}` in its events is the `call`'s id),
/// recorded with its head and when it came.
struct Scripted {
    server: ByHand,
    script: Arc<Script>,
}

/// What the scripted server answers, and what it records.
struct Script {
    posted: String,
    gets: Mutex<Vec<Get>>,
    /// The `call`'s id, as JSON.
    call_id: Mutex<String>,
    seen: Mutex<Vec<(Instant, String)>>,
    /// When the `call` POST's stream ended.
    ended: Mutex<Option<Instant>>,
}

impl Scripted {
    async fn start(posted: &str, gets: Vec<Get>) -> Self {
        let script = Arc::new(Script {
            posted: posted.to_owned(),
            gets: Mutex::new(gets),
            call_id: Mutex::new(String::new()),
            seen: Mutex::new(Vec::new()),
            ended: Mutex::new(None),
        });
        let played = script.clone();
        let server = ByHand::start(move |sock| scripted_exchange(sock, played.clone())).await;
        Self { server, script }
    }

    fn gets(&self) -> Vec<(Instant, String)> {
        self.script.seen.lock().unwrap().clone()
    }

    /// When the `call` POST's stream ended.
    fn ended(&self) -> Option<Instant> {
        *self.script.ended.lock().unwrap()
    }
}

/// One connection of [`Scripted`].
async fn scripted_exchange(mut sock: TcpStream, script: Arc<Script>) {
    let Some((head, body)) = read_request(&mut sock).await else { return };
    let answer = if head.starts_with("GET ") {
        script.seen.lock().unwrap().push((Instant::now(), head.to_ascii_lowercase()));
        let next = {
            let mut s = script.gets.lock().unwrap();
            if s.len() > 1 { s.remove(0) } else { s[0].clone() }
        };
        match next {
            Get::Events(ev) => sse(&ev.replace("{id}", &script.call_id.lock().unwrap())),
            Get::Status(code, msg) => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32000,"message":"{msg}"}}}}"#
                );
                closing_answer(&format!("{code} X"), "application/json", "", &body)
            }
            Get::Hangup => return,
        }
    } else if head.starts_with("DELETE ") {
        "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into()
    } else {
        let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match msg["method"].as_str() {
            Some("initialize") => {
                let reply =
                    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{INIT_RESULT}}}"#, msg["id"]);
                closing_answer("200 OK", "application/json", "mcp-session-id: s1\r\n", &reply)
            }
            Some("call") => {
                *script.call_id.lock().unwrap() = msg["id"].to_string();
                let _ = sock.write_all(sse(&script.posted).as_bytes()).await;
                let _ = sock.shutdown().await;
                *script.ended.lock().unwrap() = Some(Instant::now());
                return;
            }
            _ => "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into(),
        }
    };
    let _ = sock.write_all(answer.as_bytes()).await;
    let _ = sock.shutdown().await;
}

/// A 200 event stream of `events` that the server then ends (`Connection: close`).
fn sse(events: &str) -> String {
    format!("{SSE_HEAD}{events}")
}

const RESPONSE: &str = r#"{"jsonrpc":"2.0","id":{id},"result":{"resumed":true}}"#;

async fn client_of(s: &Scripted) -> (PeerHandle, ConnectionTask) {
    client_with(s, HttpClient::new(PeerBuilder::new())).await
}

async fn client_with(s: &Scripted, client: HttpClient) -> (PeerHandle, ConnectionTask) {
    let (peer, conn) = client.get_stream(false).connect(&s.server.url, NoHandler).unwrap();
    handshake(&peer).await;
    (peer, conn)
}

/// The Last-Event-ID a GET's head names.
fn last_event_id(head: &str) -> Option<&str> {
    head.lines().find_map(|l| l.strip_prefix("last-event-id:")).map(str::trim)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retry_time_is_waited_and_the_last_event_id_sent() {
    let s = Scripted::start(
        "id: e-0\nretry: 300\ndata: \n\n",
        vec![Get::Events(format!("id: e-1\ndata: {RESPONSE}\n\n"))],
    )
    .await;
    let (peer, _conn) = client_of(&s).await;
    let r = within(peer.request("call", NO_PARAMS)).await.unwrap();
    assert_eq!(r.result_as::<Value>().unwrap(), json!({"resumed": true}));
    let gets = s.gets();
    assert_eq!(gets.len(), 1, "{gets:?}");
    assert_eq!(last_event_id(&gets[0].1), Some("e-0"), "{gets:?}");
    assert!(gets[0].1.contains("mcp-session-id: s1"), "{gets:?}");
    let ended = s.ended().unwrap();
    let waited = gets[0].0.duration_since(ended);
    assert!(waited >= Duration::from_millis(290), "resumed after {waited:?}, retry is 300 ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_polls_is_resumed_again_from_the_latest_event() {
    let note = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#;
    let s = Scripted::start(
        "id: e-0\nretry: 20\ndata: \n\n",
        vec![
            // A stream that ends having given an event, one that gives nothing, then the
            // response.
            Get::Events(format!("id: e-1\ndata: {note}\n\n")),
            Get::Events(": nothing yet\n\n".into()),
            Get::Events(format!("id: e-2\ndata: {RESPONSE}\n\n")),
        ],
    )
    .await;
    let (peer, _conn) = client_of(&s).await;
    let r = within(peer.request("call", NO_PARAMS)).await.unwrap();
    assert_eq!(r.result_as::<Value>().unwrap(), json!({"resumed": true}));
    let ids: Vec<_> = s.gets().iter().map(|(_, h)| last_event_id(h).map(str::to_owned)).collect();
    assert_eq!(ids, [Some("e-0".into()), Some("e-1".into()), Some("e-1".into())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_resumption_fails_the_request_with_the_servers_answer() {
    let s = Scripted::start(
        "id: e-0\nretry: 10\ndata: \n\n",
        vec![Get::Status(410, "Gone: events after Last-Event-ID were dropped")],
    )
    .await;
    let (peer, _conn) = client_of(&s).await;
    let e = transport_error(within(peer.request("call", NO_PARAMS)).await, "410");
    assert!(e.to_string().contains("dropped"), "{e:?}");
    assert_eq!(s.gets().len(), 1, "a refusal is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_resumptions_are_bounded() {
    let s = Scripted::start("id: e-0\nretry: 10\ndata: \n\n", vec![Get::Hangup]).await;
    let (peer, _conn) = client_of(&s).await;
    transport_error(within(peer.request("call", NO_PARAMS)).await, "resuming the event stream");
    assert_eq!(s.gets().len() as u32, mcpwire::limits::DEFAULT_RESUME_FAILURES);
    // Configured: exactly that many; one more attempt, when the last of them succeeds.
    for n in [1, 5] {
        let s = Scripted::start("id: e-0\nretry: 10\ndata: \n\n", vec![Get::Hangup]).await;
        let (peer, _conn) =
            client_with(&s, HttpClient::new(PeerBuilder::new()).resume_failures(n)).await;
        transport_error(within(peer.request("call", NO_PARAMS)).await, "resuming");
        assert_eq!(s.gets().len() as u32, n);
    }
    let mut script = vec![Get::Hangup; 4];
    script.push(Get::Events(format!("id: e-1\ndata: {RESPONSE}\n\n")));
    let s = Scripted::start("id: e-0\nretry: 10\ndata: \n\n", script).await;
    let (peer, _conn) =
        client_with(&s, HttpClient::new(PeerBuilder::new()).resume_failures(5)).await;
    let r = within(peer.request("call", NO_PARAMS)).await.unwrap();
    assert_eq!(r.result_as::<Value>().unwrap(), json!({"resumed": true}));
    assert_eq!(s.gets().len(), 5);
    // A 5xx counts the same.
    let s = Scripted::start("id: e-0\nretry: 10\ndata: \n\n", vec![Get::Status(503, "busy")]).await;
    let (peer, _conn) = client_of(&s).await;
    transport_error(within(peer.request("call", NO_PARAMS)).await, "503");
    assert_eq!(s.gets().len(), 3);
}

/// A `retry` past `max_resume_delay` waits only that long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_retry_is_capped() {
    let s = Scripted::start(
        "id: e-0\nretry: 3600000\ndata: \n\n",
        vec![Get::Events(format!("id: e-1\ndata: {RESPONSE}\n\n"))],
    )
    .await;
    let client = HttpClient::new(PeerBuilder::new()).max_resume_delay(Duration::from_millis(100));
    let (peer, _conn) = client_with(&s, client).await;
    // Within the exchange bound (20 s), not the hour the server asked for.
    let r = within(peer.request("call", NO_PARAMS)).await.unwrap();
    assert_eq!(r.result_as::<Value>().unwrap(), json!({"resumed": true}));
    let ended = s.ended().unwrap();
    assert!(s.gets()[0].0.duration_since(ended) >= Duration::from_millis(95));
}

/// A stream that gave no event id cannot be resumed: the request fails at once, no GET.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_without_an_event_id_is_not_resumed() {
    let note = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#;
    let s = Scripted::start(&format!("data: {note}\n\n"), vec![Get::Hangup]).await;
    let (peer, _conn) = client_of(&s).await;
    transport_error(within(peer.request("call", NO_PARAMS)).await, "no response");
    assert_eq!(s.gets().len(), 0);
}
