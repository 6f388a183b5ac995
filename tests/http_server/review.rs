//! Findings of the review fixed in 1c6aadb, one test each; each failed before that commit (the
//! read timeout's did not build: the setting is new).

use crate::harness::*;

/// How long these tests wait for what a correct server does at once.
const SHORT: Duration = Duration::from_secs(1);

/// Asserts the end of a POST whose request was cancelled, for a client that takes event
/// streams: an event stream with no event.
#[track_caller]
fn assert_no_response(a: &Answer) {
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.events(), Vec::<Value>::new(), "{a:?}");
}

#[tokio::test]
async fn a_cancellation_in_a_batch_ends_the_post_of_the_request_it_names() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, BATCHES).await;

    // A batch of notifications only: 202, and the held POST ends with no response.
    let held = c.hold(&s.probe, 20, BOTH).await;
    let batch = format!(r#"[{},{{"jsonrpc":"2.0","method":"n/other"}}]"#, cancel(20));
    c.post(batch).await.assert_empty(StatusCode::ACCEPTED);
    assert_no_response(&timeout(SHORT, held).await.expect("the cancelled POST ends").unwrap());

    // A cancellation beside a new request: the old POST ends, the new request is answered.
    let held = c.hold(&s.probe, 21, BOTH).await;
    let a = c.post(format!("[{},{}]", cancel(21), request(22, "ping"))).await;
    assert_eq!(a.json(), json!([{"jsonrpc": "2.0", "id": 22, "result": {}}]), "{a:?}");
    assert_no_response(&timeout(SHORT, held).await.expect("the cancelled POST ends").unwrap());

    // A JSON-only client's cancelled POST gets 202.
    let held = c.hold(&s.probe, 23, "application/json").await;
    c.post(format!("[{}]", cancel(23))).await.assert_empty(StatusCode::ACCEPTED);
    timeout(SHORT, held).await.expect("the POST ends").unwrap().assert_empty(StatusCode::ACCEPTED);

    // The ids are free again.
    for id in [20, 21, 23] {
        c.ping_ok(id).await;
    }
}

#[tokio::test]
async fn a_body_that_never_arrives_gets_408_and_unfinished_headers_close_the_connection() {
    const READ: Duration = Duration::from_millis(300);
    assert_eq!(mcpwire::limits::DEFAULT_READ_TIMEOUT, Duration::from_secs(30));
    assert_eq!(mcpwire::limits::DEFAULT_HEADER_TIMEOUT, Duration::from_secs(10));
    let s =
        serve(HttpServer::new(PeerBuilder::new()).read_timeout(READ).header_timeout(READ)).await;
    let c = Client::session(s.addr, NO_BATCHES).await;

    // The headers declare 100 bytes of body; 10 come.
    let mut raw = TcpStream::connect(s.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Accept: {BOTH}\r\n{SESSION_HEADER}: {}\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        c.session.as_deref().unwrap()
    );
    let started = Instant::now();
    raw.write_all(head.as_bytes()).await.unwrap();
    let (status, head, body) =
        timeout(WAIT, read_raw_response(&mut raw)).await.expect("an answer within the bound");
    assert!(started.elapsed() >= READ / 2, "answered before the timeout: {head}");
    assert_eq!(status, 408, "{head}");
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], SERVER_ERROR, "{v}");
    assert_eq!(v["id"], Value::Null, "{v}");

    // Headers that never end: the connection is closed (hyper sends nothing).
    let started = Instant::now();
    let mut raw = TcpStream::connect(s.addr).await.unwrap();
    raw.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Ty").await.unwrap();
    let mut rest = Vec::new();
    let closed = timeout(WAIT, raw.read_to_end(&mut rest)).await;
    let took = started.elapsed();
    assert!(closed.is_ok(), "the connection is still open after {took:?}");
    assert!(took >= READ / 2, "closed after {took:?}, before the timeout");

    // The server goes on (on a new connection: an idle one is closed by the timeout too).
    c.beside().await.ping_ok(1).await;
}

/// Once stopped, `serve` ends the sessions, lets the exchange under way finish (a request held
/// in its handler gets -32603, its session having ended), closes the kept-alive connections,
/// and returns; the same server served again takes sessions again.
#[tokio::test]
async fn after_serve_stops_its_connections_finish_and_close_and_its_sessions_end() {
    let server = HttpServer::new(PeerBuilder::new());
    let probe = Probe::new();
    let p = probe.clone();
    let ServedHttp { addr, stop, task: running } =
        serve_http(server.clone(), move || p.clone()).await;
    let c = Client::session(addr, NO_BATCHES).await;
    let held = c.hold(&probe, 1, BOTH).await;
    // A kept-alive connection, idle at the stop.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let ask = format!("GET /elsewhere HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    idle.write_all(ask.as_bytes()).await.unwrap();
    assert_eq!(read_raw_response(&mut idle).await.0, 404);

    stop.send(()).unwrap();
    timeout(WAIT, running).await.expect("serve returns").unwrap().unwrap();

    let a = timeout(WAIT, held).await.expect("the held POST is answered").unwrap();
    assert_eq!(a.json()["error"]["code"], INTERNAL_ERROR, "{a:?}");
    let mut rest = Vec::new();
    let closed = timeout(WAIT, idle.read_to_end(&mut rest)).await.expect("the idle one closes");
    assert!(matches!(closed, Ok(0)), "{closed:?} {rest:?}");
    let stats = server.stats();
    assert_eq!((stats.sessions, stats.sessions_started), (0, 1), "{stats:?}");

    let again = serve(server).await;
    Client::session(again.addr, NO_BATCHES).await.ping_ok(2).await;
}

/// A cancellation that crosses its response (the usual race with a timeout) is not taken for
/// one that overtook its request: a later request with the same id is answered.
#[tokio::test]
async fn a_cancellation_that_came_after_the_response_does_not_cancel_a_later_request() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    c.ping_ok(5).await;
    c.post(cancel(5)).await.assert_empty(StatusCode::ACCEPTED);
    c.ping_ok(5).await;
    // Whereas one that came first (id 6 never seen) does cancel the request when it comes.
    c.post(cancel(6)).await.assert_empty(StatusCode::ACCEPTED);
    assert_no_response(&c.post(request(6, "ping")).await);
}

#[tokio::test]
async fn a_failed_initialize_answered_as_an_event_stream_opens_no_session() {
    let s = serve_default().await;
    let mut c = Client::connect(s.addr).await;
    let post = |c: &Client, body: &str| {
        c.to(Method::POST)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "text/event-stream")
            .body(full(body.to_owned()))
            .unwrap()
    };
    // Without a protocol version the probe fails `initialize`.
    let a = c.call(post(&c, r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let events = a.events();
    assert_eq!(events.len(), 1, "{a:?}");
    assert_eq!(
        (events[0]["id"].clone(), events[0]["error"]["code"].clone()),
        (json!(0), json!(-32602))
    );
    assert_eq!(a.header(SESSION_HEADER), None, "{a:?}");
    let stats = s.server.stats();
    assert_eq!((stats.sessions, stats.sessions_started), (0, 0), "{stats:?}");

    // One that succeeds opens a session, event stream or not.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#;
    let a = c.call(post(&c, body)).await;
    assert_eq!(a.events()[0]["result"]["protocolVersion"], "2025-06-18", "{a:?}");
    assert!(a.header(SESSION_HEADER).is_some(), "{a:?}");
    assert_eq!(s.server.stats().sessions, 1);
}

#[tokio::test]
async fn a_request_to_the_client_with_no_stream_open_fails_at_once_and_with_one_arrives_on_it() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;

    // No GET stream: the handler's request fails at once (the client's `WAIT` bounds the
    // POST, far under the peer's 60 s request timeout).
    let a = c.post(request(1, "ask")).await;
    let v = a.json();
    assert_eq!(v["id"], 1, "{v}");
    assert_eq!(v["result"]["failed"]["code"], INTERNAL_ERROR, "{v}");

    // With the stream open, the request arrives on it, and the response POSTed to it is what
    // the handler gets.
    let (asked, e, _stream) = ask_over_the_stream(&c, 2).await;
    assert!(e["id"].is_number() || e["id"].is_string(), "{e}");
    let roots = json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]});
    let answer = json!({"jsonrpc": "2.0", "id": e["id"], "result": roots});
    c.post(answer.to_string()).await.assert_empty(StatusCode::ACCEPTED);
    let a = timeout(WAIT, asked).await.expect("the handler answers").unwrap();
    assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": 2, "result": {"answer": roots}}));
}

/// A batch whose one request was cancelled before it came (the cancellation overtook it on
/// another connection) ends its POST with no response, but the batch's other messages must
/// still reach the session: here the client's response to the server's own request.
#[tokio::test]
async fn a_batch_whose_request_was_cancelled_early_still_delivers_its_other_messages() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, BATCHES).await;
    let (asked, e, _stream) = ask_over_the_stream(&c, 2).await;

    c.post(cancel(30)).await.assert_empty(StatusCode::ACCEPTED);
    let answer = json!({"jsonrpc": "2.0", "id": e["id"], "result": {"roots": []}});
    let a = c.post(format!("[{},{answer}]", request(30, "ping"))).await;
    assert_no_response(&a);
    let a = timeout(WAIT, asked).await.expect("the handler gets the response").unwrap();
    assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": 2, "result": {"answer": {"roots": []}}}));
}

/// Opens the session's GET stream, then POSTs request `id` to `ask` on a connection of its own:
/// returns that POST's task, the `roots/list` the handler sent on the stream, and the stream
/// (kept open while the test runs).
async fn ask_over_the_stream(
    c: &Client,
    id: i64,
) -> (tokio::task::JoinHandle<Answer>, Value, (Client, ResponseBody)) {
    let mut g = c.beside().await;
    let mut stream = g.open_stream().await.into_body();
    let mut buf = String::new();
    let mut asker = c.beside().await;
    let asked = tokio::spawn(async move { asker.post(request(id, "ask")).await });
    let e = next_event(&mut stream, &mut buf).await;
    assert_eq!(e["method"], "roots/list", "{e}");
    (asked, e, (g, stream))
}

/// MCP: a server's requests and notifications related to a client's request may travel on that
/// request's stream; there they reach a client that opened no GET stream, and the response the
/// client POSTs back completes the handler.
#[tokio::test]
async fn a_handlers_own_request_travels_on_its_requests_stream() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let mut asker = c.beside().await;
    let r = asker.send(asker.post_of(request(5, "ask_related"))).await;
    assert_eq!(content_type(r.headers()), Some("text/event-stream"), "{r:?}");
    let mut body = r.into_body();
    let mut buf = String::new();
    let e = next_event(&mut body, &mut buf).await;
    assert_eq!(e["method"], "roots/list", "{e}");
    let roots = json!({"roots": []});
    let answer = json!({"jsonrpc": "2.0", "id": e["id"], "result": roots});
    c.post(answer.to_string()).await.assert_empty(StatusCode::ACCEPTED);
    let done = timeout(WAIT, next_event(&mut body, &mut buf)).await.expect("the handler answers");
    assert_eq!(done, json!({"jsonrpc": "2.0", "id": 5, "result": {"answer": roots}}));
    assert_eq!(s.server.stats().messages_dropped, 0);
}
