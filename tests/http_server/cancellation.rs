//! `notifications/cancelled` over HTTP: the POST of the request it names ends (with no
//! response), whether the cancellation comes in a batch, before its request, or after the
//! response; the other messages of a batch still reach the session.

use crate::harness::*;

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
