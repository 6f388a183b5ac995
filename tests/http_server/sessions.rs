//! Sessions: the GET stream, DELETE, `max_sessions` and idle expiry.

use crate::harness::*;
#[tokio::test]
async fn a_get_without_event_stream_in_accept_gets_406() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    for accept in [Some("application/json"), Some("text/html"), Some("application/*")] {
        let mut req = c.to(Method::GET);
        if let Some(accept) = accept {
            req = req.header(header::ACCEPT, accept);
        }
        let a = c.call(req.body(empty()).unwrap()).await;
        a.assert_error(StatusCode::NOT_ACCEPTABLE, SERVER_ERROR, Value::Null);
    }
    c.ping_ok(1).await;
}

#[tokio::test]
async fn the_get_stream_carries_messages_that_answer_no_request() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    // With no stream open, the notification has nowhere to go: dropped, and counted.
    let a = c.post(r#"{"jsonrpc":"2.0","id":0,"method":"announce","params":["lost"]}"#).await;
    assert_eq!(a.json()["id"], 0);
    assert_eq!(s.server.stats().messages_dropped, 1);

    let mut g = c.beside().await;
    let mut stream = g.open_stream().await.into_body();
    let mut buf = String::new();
    let a =
        c.post(r#"{"jsonrpc":"2.0","id":1,"method":"announce","params":{"text":"hello"}}"#).await;
    assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    let e = next_event(&mut stream, &mut buf).await;
    assert_eq!(
        e,
        json!({"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "info", "logger": "probe", "data": {"text": "hello"}}})
    );
    // Progress for a request goes to its POST, not here.
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"slow","params":{"steps":2,"_meta":{"progressToken":2}}}"#;
    assert_eq!(c.post(body).await.events().len(), 3);
    let a = c.post(r#"{"jsonrpc":"2.0","id":3,"method":"announce","params":[2]}"#).await;
    assert_eq!(a.json()["id"], 3);
    assert_eq!(next_event(&mut stream, &mut buf).await["params"]["data"], json!([2]));

    // A second stream for the session while this one is open: 409.
    let mut h = c.beside().await;
    let req = h.to(Method::GET).header(header::ACCEPT, "text/event-stream").body(empty());
    h.call(req.unwrap()).await.assert_error(StatusCode::CONFLICT, SERVER_ERROR, Value::Null);

    // Once it is closed, a new one opens (the server notices the close when it writes).
    drop(stream);
    drop(g);
    let deadline = Instant::now() + WAIT;
    let mut reopened = loop {
        let mut h = c.beside().await;
        let req = h.to(Method::GET).header(header::ACCEPT, "text/event-stream").body(empty());
        let r = h.send(req.unwrap()).await;
        if r.status() == StatusCode::OK {
            break (h, r.into_body());
        }
        assert_eq!(r.status(), StatusCode::CONFLICT);
        assert!(Instant::now() < deadline, "the closed stream is never noticed");
        // Something for the old stream to write, so its end is noticed.
        let _ = c.post(r#"{"jsonrpc":"2.0","id":4,"method":"announce","params":[0]}"#).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let a = c.post(r#"{"jsonrpc":"2.0","id":5,"method":"announce","params":["again"]}"#).await;
    assert_eq!(a.json()["id"], 5);
    let mut buf = String::new();
    loop {
        let e = next_event(&mut reopened.1, &mut buf).await;
        if e["params"]["data"] == json!(["again"]) {
            break;
        }
    }
}

#[tokio::test]
async fn get_is_405_when_the_stream_is_turned_off() {
    let s = serve(HttpServer::new(PeerBuilder::new()).get_stream(false)).await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let req = c.to(Method::GET).header(header::ACCEPT, "text/event-stream").body(empty());
    let a = c.call(req.unwrap()).await;
    a.assert_empty(StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(a.header("allow"), Some("POST, DELETE"));
    c.ping_ok(1).await;
}

#[tokio::test]
async fn delete_ends_the_session_and_its_id_then_gets_404() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let mut g = c.beside().await;
    let mut stream = g.open_stream().await.into_body();

    c.call(c.to(Method::DELETE).body(empty()).unwrap()).await.assert_empty(StatusCode::OK);
    assert_eq!(s.server.stats().sessions, 0);
    // The GET stream ends.
    let end = timeout(WAIT, async {
        while let Some(f) = stream.frame().await {
            f.unwrap();
        }
    });
    end.await.expect("the stream ends");

    c.post(request(1, "ping")).await.assert_error(
        StatusCode::NOT_FOUND,
        SESSION_NOT_FOUND,
        Value::Null,
    );
    let req = c.to(Method::GET).header(header::ACCEPT, "text/event-stream").body(empty());
    let a = c.call(req.unwrap()).await;
    a.assert_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, Value::Null);
    let a = c.call(c.to(Method::DELETE).body(empty()).unwrap()).await;
    a.assert_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, Value::Null);

    // The connection serves a new session.
    c.session = None;
    assert_eq!(c.initialize(NO_BATCHES).await.status, StatusCode::OK);
    c.ping_ok(2).await;
}

#[tokio::test]
async fn a_full_table_ends_the_least_recently_used_idle_session_for_a_new_client() {
    let s = serve(HttpServer::new(PeerBuilder::new()).max_sessions(2)).await;
    let mut a = Client::session(s.addr, NO_BATCHES).await;
    let mut b = Client::session(s.addr, NO_BATCHES).await;
    // `a` was used after `b`: `b` is the least recently used.
    a.ping_ok(1).await;
    let mut c = Client::connect(s.addr).await;
    let ans = c.initialize(NO_BATCHES).await;
    assert_eq!(ans.status, StatusCode::OK, "{ans:?}");
    assert!(ans.header(SESSION_HEADER).is_some());
    c.ping_ok(1).await;
    a.ping_ok(2).await;
    // `b`'s client learns its session ended, and initializes again (evicting `a`, now the LRU).
    b.post(request(3, "ping")).await.assert_error(
        StatusCode::NOT_FOUND,
        SESSION_NOT_FOUND,
        Value::Null,
    );
    let stats = s.server.stats();
    assert_eq!((stats.sessions, stats.sessions_evicted), (2, 1), "{stats:?}");
    b.session = None;
    assert_eq!(b.initialize(NO_BATCHES).await.status, StatusCode::OK);
    b.ping_ok(4).await;
    assert_eq!(s.server.stats().sessions_evicted, 2);
}

#[tokio::test]
async fn a_full_table_of_busy_sessions_refuses_a_new_one_until_one_is_idle() {
    let s = serve(HttpServer::new(PeerBuilder::new()).max_sessions(2)).await;
    // Both sessions busy: one with its GET stream open, one with a request in flight.
    let streaming = Client::session(s.addr, NO_BATCHES).await;
    let mut g = streaming.beside().await;
    let stream = g.open_stream().await;
    let working = Client::session(s.addr, NO_BATCHES).await;
    let mut w = working.beside().await;
    let held = tokio::spawn(async move { w.post(request(1, "hold")).await });
    s.probe.held().await;
    let mut c = Client::connect(s.addr).await;
    let ans = c.initialize(NO_BATCHES).await;
    ans.assert_error(StatusCode::SERVICE_UNAVAILABLE, SERVER_ERROR, Value::Null);
    assert_eq!(ans.header(SESSION_HEADER), None);
    assert_eq!(s.server.stats().sessions_evicted, 0);
    // The request answered, that session is idle again: it makes room.
    s.probe.release.add_permits(1);
    assert_eq!(held.await.unwrap().json()["result"]["released"], true);
    let ans = c.initialize(NO_BATCHES).await;
    assert_eq!(ans.status, StatusCode::OK, "{ans:?}");
    c.ping_ok(2).await;
    // The streaming session was never touched.
    drop(stream);
    assert_eq!(s.server.stats().sessions_evicted, 1);
}

/// The session-exhaustion attack at the default table size: `max_sessions` `initialize` requests
/// never followed up no longer lock a new legacy client out.
#[tokio::test]
async fn initializes_never_followed_up_do_not_lock_out_a_new_client() {
    let s = serve_default().await;
    let max = mcpwire::limits::DEFAULT_MAX_SESSIONS;
    let mut attacker = Client::connect(s.addr).await;
    for _ in 0..max {
        attacker.session = None;
        assert_eq!(attacker.initialize(NO_BATCHES).await.status, StatusCode::OK);
    }
    assert_eq!(s.server.stats().sessions, max);
    let started = Instant::now();
    let mut legit = Client::connect(s.addr).await;
    assert_eq!(legit.initialize(NO_BATCHES).await.status, StatusCode::OK);
    legit.ping_ok(1).await;
    assert!(started.elapsed() < WAIT, "served in {:?}", started.elapsed());
    assert_eq!(s.server.stats().sessions, max);
    assert_eq!(s.server.stats().sessions_evicted, 1);
}

#[tokio::test]
async fn an_idle_session_expires_and_a_busy_one_does_not() {
    const IDLE: Duration = Duration::from_millis(200);
    let s = serve(HttpServer::new(PeerBuilder::new()).session_idle_timeout(Some(IDLE))).await;
    // One session with its GET stream open, one with a request in flight, one idle.
    let mut streaming = Client::session(s.addr, NO_BATCHES).await;
    let mut g = streaming.beside().await;
    let stream = g.open_stream().await;
    let mut working = Client::session(s.addr, NO_BATCHES).await;
    let mut w = working.beside().await;
    let held = tokio::spawn(async move { w.post(request(1, "hold")).await });
    s.probe.held().await;
    let mut idle = Client::session(s.addr, NO_BATCHES).await;

    let deadline = Instant::now() + WAIT;
    loop {
        let a = idle.post(request(1, "ping")).await;
        if a.status == StatusCode::NOT_FOUND {
            a.assert_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, Value::Null);
            break;
        }
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert!(Instant::now() < deadline, "the idle session never expires");
        // A request keeps a session alive: let it idle.
        tokio::time::sleep(IDLE * 2).await;
    }
    let a = idle.call(idle.to(Method::DELETE).body(empty()).unwrap()).await;
    a.assert_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, Value::Null);
    // The busy sessions outlived it by far.
    tokio::time::sleep(IDLE * 2).await;
    streaming.ping_ok(2).await;
    s.probe.release.add_permits(1);
    let a = timeout(WAIT, held).await.unwrap().unwrap();
    assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": 1, "result": {"released": true}}));
    working.ping_ok(3).await;
    let stats = s.server.stats();
    assert_eq!((stats.sessions, stats.sessions_expired), (2, 1), "{stats:?}");
    drop(stream);
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
async fn a_failed_initialize_opens_no_session() {
    let s = serve(HttpServer::new(PeerBuilder::new()).max_sessions(1)).await;
    let mut c = Client::connect(s.addr).await;
    let a = c.post(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json()["error"]["code"], -32602);
    assert_eq!(a.header(SESSION_HEADER), None, "{a:?}");
    assert_eq!(s.server.stats().sessions, 0);
    // The slot is free for a real one.
    let mut d = Client::connect(s.addr).await;
    assert_eq!(d.initialize(NO_BATCHES).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_request_in_flight_when_the_session_is_deleted_is_answered_internal_error() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    for (id, accept) in [(9, BOTH), (10, "application/json")] {
        let held = c.hold(&s.probe, id, accept).await;
        c.call(c.to(Method::DELETE).body(empty()).unwrap()).await.assert_empty(StatusCode::OK);
        let a = timeout(SHORT, held).await.expect("the waiting POST is answered").unwrap();
        a.assert_error(StatusCode::OK, INTERNAL_ERROR, json!(id));
        c.session = None;
        assert_eq!(c.initialize(NO_BATCHES).await.status, StatusCode::OK);
    }
}
