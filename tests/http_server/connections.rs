//! Connections: each goes on after a bad request, and the server holds to `max_connections`.

use crate::harness::*;
// =============================================================================================
// 3. The connection and the session go on after each bad request.

#[tokio::test]
async fn the_connection_and_the_session_go_on_after_each_bad_request() {
    let s =
        serve(HttpServer::new(PeerBuilder::new().limits(Limits::default().max_frame_bytes(1000))))
            .await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let post = |c: &Client, body: &str| c.post_of(body);
    let with = |mut r: Request<Body>, name: &'static str, v: &'static str| {
        r.headers_mut().insert(name, HeaderValue::from_static(v));
        r
    };
    let without = |mut r: Request<Body>, name: &'static str| {
        r.headers_mut().remove(name);
        r
    };
    let mut wrong_path = post(&c, &request(1, "ping"));
    *wrong_path.uri_mut() = "/elsewhere".parse().unwrap();
    let cases: Vec<(&str, Request<Body>, StatusCode)> = vec![
        ("wrong path", wrong_path, StatusCode::NOT_FOUND),
        ("PUT", c.to(Method::PUT).body(full("{}")).unwrap(), StatusCode::METHOD_NOT_ALLOWED),
        (
            "origin",
            with(post(&c, &request(1, "ping")), "origin", "http://evil.example"),
            StatusCode::FORBIDDEN,
        ),
        (
            "content type",
            with(post(&c, &request(1, "ping")), "content-type", "text/plain"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "no content type",
            without(post(&c, &request(1, "ping")), "content-type"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "accept",
            with(post(&c, &request(1, "ping")), "accept", "text/html"),
            StatusCode::NOT_ACCEPTABLE,
        ),
        ("not json", post(&c, "{\"jsonrpc\":"), StatusCode::BAD_REQUEST),
        ("not a message", post(&c, r#"{"foo":1}"#), StatusCode::BAD_REQUEST),
        (
            "unknown session",
            with(post(&c, &request(1, "ping")), SESSION_HEADER, "ffff"),
            StatusCode::NOT_FOUND,
        ),
        (
            "no session",
            without(post(&c, &request(1, "ping")), SESSION_HEADER),
            StatusCode::BAD_REQUEST,
        ),
        (
            "version",
            with(post(&c, &request(1, "ping")), VERSION_HEADER, "1999-01-01"),
            StatusCode::BAD_REQUEST,
        ),
        ("batch", post(&c, &format!("[{}]", request(1, "ping"))), StatusCode::BAD_REQUEST),
        (
            "initialize again",
            post(
                &c,
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
            ),
            StatusCode::BAD_REQUEST,
        ),
        (
            "GET accept",
            with(c.to(Method::GET).body(empty()).unwrap(), "accept", "application/json"),
            StatusCode::NOT_ACCEPTABLE,
        ),
        (
            "too large, chunked",
            {
                let body = Bytes::from(echo_of_len(1, 1001));
                let parts = vec![body.slice(..500), body.slice(500..)];
                c.to(Method::POST)
                    .header("content-type", "application/json")
                    .body(chunked(parts))
                    .unwrap()
            },
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        ("too large", post(&c, &echo_of_len(1, 1001)), StatusCode::PAYLOAD_TOO_LARGE),
    ];
    for (i, (name, req, status)) in cases.into_iter().enumerate() {
        let a = c.call(req).await;
        assert_eq!(a.status, status, "{name}: {a:?}");
        assert!(!c.send.is_closed(), "{name}: the connection closed");
        c.ping_ok(100 + i as i64).await;
    }
}

#[tokio::test]
async fn a_malformed_http_request_gets_400_and_the_server_goes_on() {
    let s = serve_default().await;
    let c = Client::session(s.addr, NO_BATCHES).await;
    for bytes in [
        &b"GARBAGE\r\n\r\n"[..],
        b"POST /mcp HTTP/9.9\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}",
        b"POST /mcp HTTP/1.1\r\nBad Header\r\n\r\n",
    ] {
        let mut raw = TcpStream::connect(s.addr).await.unwrap();
        raw.write_all(bytes).await.unwrap();
        let (status, head, _) = timeout(WAIT, read_raw_response(&mut raw)).await.unwrap();
        assert!(
            status == 400 || status == 505,
            "{:?}: {status} {head}",
            String::from_utf8_lossy(bytes)
        );
    }
    let mut c = c.beside().await;
    c.ping_ok(1).await;
}

// =============================================================================================
// 4. The connection bound.

#[tokio::test]
async fn past_max_connections_the_oldest_idle_connection_makes_room() {
    let s = serve(HttpServer::new(PeerBuilder::new()).max_connections(2)).await;
    let ask = b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n";
    // Two connections: one answered and idle (kept alive), one still sending its headers.
    let mut idle = TcpStream::connect(s.addr).await.unwrap();
    idle.write_all(ask).await.unwrap();
    let (status, _, _) = timeout(WAIT, read_raw_response(&mut idle)).await.unwrap();
    assert_eq!(status, 404);
    let mut slow = TcpStream::connect(s.addr).await.unwrap();
    slow.write_all(b"GET /nowhere HTTP/1.1\r\nHost").await.unwrap();
    wait_for(|| s.server.stats().connections == 2).await;

    // A third is served at once: the oldest idle one (the kept-alive one) is closed for it.
    let mut third = TcpStream::connect(s.addr).await.unwrap();
    third.write_all(ask).await.unwrap();
    let (status, _, _) = timeout(WAIT, read_raw_response(&mut third)).await.unwrap();
    assert_eq!(status, 404);
    let mut rest = Vec::new();
    timeout(WAIT, idle.read_to_end(&mut rest))
        .await
        .expect("the shed connection is closed")
        .unwrap();
    // And a fourth: the one still sending headers has no request in progress either.
    let mut fourth = TcpStream::connect(s.addr).await.unwrap();
    fourth.write_all(ask).await.unwrap();
    let (status, _, _) = timeout(WAIT, read_raw_response(&mut fourth)).await.unwrap();
    assert_eq!(status, 404);
    let stats = s.server.stats();
    assert!(stats.connections_shed >= 2 && stats.connections <= 2, "{stats:?}");
}

#[tokio::test]
async fn a_connection_whose_request_is_in_progress_is_never_shed() {
    let s = serve(HttpServer::new(PeerBuilder::new()).max_connections(2)).await;
    let c = Client::session(s.addr, NO_BATCHES).await;
    // Two connections each with a request held in its handler (the session's own, idle
    // connection is shed for the second of them).
    let mut held = Vec::new();
    for id in 1..=2 {
        let mut working = c.beside().await;
        held.push(tokio::spawn(async move { working.post(request(id, "hold")).await }));
        s.probe.held().await;
    }
    let ask = b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut third = TcpStream::connect(s.addr).await.unwrap();
    third.write_all(ask).await.unwrap();
    let waited = timeout(Duration::from_millis(300), read_raw_response(&mut third)).await;
    assert!(waited.is_err(), "served while every connection had a request in progress");
    // The held requests are answered, not cut; then the third connection is served.
    s.probe.release.add_permits(2);
    for h in held {
        let a = timeout(WAIT, h).await.expect("the held POST ends").unwrap();
        assert_eq!(a.json()["result"]["released"], true, "{a:?}");
    }
    let (status, _, _) = timeout(WAIT, read_raw_response(&mut third)).await.unwrap();
    assert_eq!(status, 404);
}

/// Polls `done` until it holds (within `WAIT`).
async fn wait_for(done: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "not within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

// =============================================================================================
// 5. The bound on body bytes held.

#[tokio::test]
async fn bodies_past_max_body_bytes_wait_then_get_503_and_fit_once_room_is_made() {
    let one = request(1, "hold").len();
    assert_eq!(one, request(3, "ping").len());
    let server = HttpServer::new(PeerBuilder::new())
        .max_body_bytes(2 * one)
        .read_timeout(Duration::from_millis(300));
    let s = serve(server).await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    // Two bodies held by their handlers fill the budget exactly.
    let first = c.hold(&s.probe, 1, BOTH).await;
    let _second = c.hold(&s.probe, 2, BOTH).await;
    // A third finds no room within the read timeout.
    let started = Instant::now();
    let a = c.post(request(3, "ping")).await;
    a.assert_error(StatusCode::SERVICE_UNAVAILABLE, SERVER_ERROR, Value::Null);
    assert!(started.elapsed() >= Duration::from_millis(250), "{:?}", started.elapsed());
    // Once one is answered its room is free again.
    s.probe.release.add_permits(1);
    let answered = timeout(WAIT, first).await.expect("the held POST is answered").unwrap();
    assert_eq!(answered.status, StatusCode::OK, "{answered:?}");
    c.ping_ok(4).await;
    s.probe.release.add_permits(1);
    // The default, and a body larger than the whole budget still fits alone.
    assert_eq!(mcpwire::limits::DEFAULT_MAX_BODY_BYTES, 256 << 20);
    let s = serve(HttpServer::new(PeerBuilder::new()).max_body_bytes(8)).await;
    Client::session(s.addr, NO_BATCHES).await.ping_ok(1).await;
}

/// `serve_connection`: one connection over an in-memory pipe, served as `serve` serves a socket;
/// its sessions expire after the idle timeout as under `serve`.
#[tokio::test]
async fn serve_connection_serves_a_pipe_and_its_idle_sessions_expire() {
    const IDLE: Duration = Duration::from_millis(100);
    let server = HttpServer::new(PeerBuilder::new()).session_idle_timeout(Some(IDLE));
    let probe = Probe::new();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
    let post = |body: &str, session: Option<&str>| {
        let session = session.map_or(String::new(), |s| format!("{SESSION_HEADER}: {s}\r\n"));
        format!(
            "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: {BOTH}\r\n\
             {session}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let (mut client, conn) = tokio::io::duplex(64 * 1024);
    let served = {
        let server = server.clone();
        let probe = probe.clone();
        tokio::spawn(async move { server.serve_connection(conn, move || probe.clone()).await })
    };
    client.write_all(post(init, None).as_bytes()).await.unwrap();
    let (status, head, _) = timeout(WAIT, read_raw_response(&mut client)).await.unwrap();
    assert_eq!(status, 200, "{head}");
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{SESSION_HEADER}: ")))
        .unwrap_or_else(|| panic!("no session: {head}"))
        .trim()
        .to_owned();
    assert_eq!(server.stats().sessions, 1);
    tokio::time::sleep(IDLE * 4).await;
    assert_eq!(server.stats().sessions, 0, "the idle session expired");
    client.write_all(post(&request(2, "ping"), Some(&session)).as_bytes()).await.unwrap();
    let (status, head, _) = timeout(WAIT, read_raw_response(&mut client)).await.unwrap();
    assert_eq!(status, 404, "{head}");
    drop(client);
    timeout(WAIT, served).await.expect("the connection ends with its client").unwrap().ok();
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
