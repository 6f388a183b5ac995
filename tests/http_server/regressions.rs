//! Bugs these tests found in the first version of the server (each failed before its fix in
//! 4a57261), one test each.

use crate::harness::*;
// =============================================================================================
// Suspected bugs: these fail against the server as it is (see the report).

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
async fn a_client_that_takes_only_event_streams_gets_one() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let req = c
        .to(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "text/event-stream")
        .body(full(request(1, "ping")))
        .unwrap();
    let a = c.call(req).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.events(), [json!({"jsonrpc": "2.0", "id": 1, "result": {}})]);
}

/// How long these tests wait for what a correct server does at once.
const SHORT: Duration = Duration::from_secs(1);

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

#[tokio::test]
async fn a_batch_whose_requests_are_all_cancelled_ends_its_post() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, BATCHES).await;
    let mut first = c.beside().await;
    let batch = format!("[{},{}]", request(15, "hold"), request(16, "hold"));
    let held = tokio::spawn(async move { first.post(batch).await });
    for _ in 0..2 {
        s.probe.held().await;
    }
    c.post(cancel(15)).await.assert_empty(StatusCode::ACCEPTED);
    c.post(cancel(16)).await.assert_empty(StatusCode::ACCEPTED);
    let a = timeout(SHORT, held).await.expect("the POST ends").unwrap();
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.events(), Vec::<Value>::new(), "{a:?}");
    c.ping_ok(15).await;
}

#[tokio::test]
async fn a_response_whose_post_is_gone_is_not_sent_on_the_get_stream() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let mut g = c.beside().await;
    let mut stream = g.open_stream().await.into_body();
    let mut buf = String::new();
    let mut first = c.beside().await;
    let held = tokio::spawn(async move { first.post(request(11, "hold")).await });
    s.probe.held().await;
    // The client goes away; then the handler answers.
    held.abort();
    let _ = held.await;
    let deadline = Instant::now() + WAIT;
    while c.post(request(11, "ping")).await.status != StatusCode::OK {
        assert!(Instant::now() < deadline, "the abandoned POST is never noticed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.probe.release.add_permits(1);
    let a = c.post(r#"{"jsonrpc":"2.0","id":1,"method":"announce","params":["next"]}"#).await;
    assert_eq!(a.json()["id"], 1);
    let e = next_event(&mut stream, &mut buf).await;
    assert_eq!(e["method"], "notifications/message", "a response on the GET stream: {e}");
}
