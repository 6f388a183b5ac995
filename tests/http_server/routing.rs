//! Which stream carries what the server sends: its own requests to the client travel on the
//! stream of the client's request they concern (or the GET stream), a request with no stream
//! open fails at once, and a response whose POST is gone is dropped, not sent on the GET stream.

use crate::harness::*;

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
