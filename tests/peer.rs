//! The tokio peer on a real runtime, over in-process duplex pipes: multiplexing, cancellation,
//! timeouts on tokio's paused clock, panics, disconnects, bad frames and backpressure.
//!
//! Where the other side must misbehave or be watched exactly, it is played by hand with the
//! codec (`Raw`), not by a second peer.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use mcpwire::peer::{
    CloseReason, NO_PARAMS, NoHandler, PeerBuilder, ProgressToken, RequestError, RequestOptions,
};
use mcpwire::{ErrorCode, Id, Kind, Limits, RawJson};
use serde_json::{Value, json};

mod common;

use common::{Pair, Worker, pair, with_raw};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_requests_each_reach_their_own_waiter() {
    let limits = Limits::default().max_in_flight(10_000).max_handlers(10_000);
    let b = PeerBuilder::new().limits(limits);
    let worker = Worker::default();
    let p = pair(&b, NoHandler, worker.clone());
    let client = &p.client;
    let calls = (0..10_000u64).map(|n| {
        let client = client.clone();
        tokio::spawn(async move {
            let r = client.request("work", Some(mcpwire::Json(&json!({ "n": n })))).await.unwrap();
            let v: Value = r.result_as().unwrap();
            assert_eq!(v["twice"], n * 2, "response for {n} went elsewhere");
        })
    });
    for c in futures::future::join_all(calls).await {
        c.unwrap();
    }
    let stats = client.stats();
    assert_eq!(stats.outbound.completed, 10_000);
    assert_eq!(stats.outbound.unknown + stats.outbound.late, 0);
    assert_eq!(stats.in_flight, 0);
    // The delays overlap, so the server really had many requests at once.
    assert!(
        worker.peak.load(Ordering::SeqCst) > 100,
        "peak {}",
        worker.peak.load(Ordering::SeqCst)
    );
}

#[tokio::test]
async fn a_string_id_does_not_answer_the_numeric_request() {
    let (client, _conn, mut raw) = with_raw(&PeerBuilder::new(), NoHandler);
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.request("m", NO_PARAMS).await }
    });
    let req = raw.next().await;
    let Some(Id::Num(id)) = req.id() else { panic!("numeric id expected: {req:?}") };
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":"wrong"}}"#)).await;
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"right"}}"#)).await;
    let r = call.await.unwrap().unwrap();
    assert_eq!(r.result().unwrap().get(), "\"right\"");
    assert_eq!(client.stats().outbound.unknown, 1);
}

#[tokio::test]
async fn inbound_string_and_numeric_ids_are_separate_requests() {
    let (_server, _conn, mut raw) = with_raw(&PeerBuilder::new(), Worker::default());
    raw.send(r#"{"jsonrpc":"2.0","id":"1","method":"work","params":{"n":10}}"#).await;
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"work","params":{"n":20}}"#).await;
    let mut got = [raw.next_json().await, raw.next_json().await];
    got.sort_by_key(|v| v["id"].is_string());
    assert_eq!(got[0], json!({"jsonrpc":"2.0","id":1,"result":{"twice":40}}));
    assert_eq!(got[1], json!({"jsonrpc":"2.0","id":"1","result":{"twice":20}}));
}

#[tokio::test]
async fn a_duplicate_inbound_id_is_refused_while_the_first_goes_on() {
    let (server, _conn, mut raw) = with_raw(&PeerBuilder::new(), Worker::default());
    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":"work","params":{"n":7}}"#).await;
    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#).await;
    let first = raw.next_json().await;
    assert_eq!(first["id"], 5);
    assert_eq!(first["error"]["code"], -32600, "{first}");
    let second = raw.next_json().await;
    assert_eq!(second, json!({"jsonrpc":"2.0","id":5,"result":{"twice":14}}));
    assert_eq!(server.stats().inbound.duplicates, 1);
}

#[tokio::test]
async fn dropping_a_request_sends_cancelled_and_frees_its_slot() {
    let b = PeerBuilder::new().limits(Limits::default().max_in_flight(1));
    let (client, _conn, mut raw) = with_raw(&b, NoHandler);
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.request("m", NO_PARAMS).await }
    });
    let req = raw.next().await;
    let id = req.id().unwrap().to_string();
    call.abort();
    let cancel = raw.next_json().await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"].to_string(), id);
    assert_eq!(client.stats().outbound.cancelled, 1);
    // The one slot is free again; a late answer to the cancelled request is counted, not
    // delivered to the next one.
    let next = tokio::spawn({
        let client = client.clone();
        async move { client.request("n", NO_PARAMS).await }
    });
    let req2 = raw.next().await;
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"late"}}"#)).await;
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":"ok"}}"#, req2.id().unwrap())).await;
    assert_eq!(next.await.unwrap().unwrap().result().unwrap().get(), "\"ok\"");
    assert_eq!(client.stats().outbound.late, 1);
}

#[tokio::test]
async fn an_inbound_cancellation_stops_the_handler_and_nothing_is_answered() {
    let worker = Worker::default();
    let (server, _conn, mut raw) = with_raw(&PeerBuilder::new(), worker.clone());
    raw.send(r#"{"jsonrpc":"2.0","id":"h","method":"hang"}"#).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"h","reason":"enough"}}"#).await;
    // Unknown and malformed cancellations are ignored.
    raw.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}"#,
    )
    .await;
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"id":1}}"#).await;
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert_eq!(raw.next_json().await, json!({"jsonrpc":"2.0","id":2,"result":{}}));
    // Both handlers ended: the ping's returned, the hung one was dropped.
    assert_eq!(worker.ended.load(Ordering::SeqCst), 2);
    assert_eq!(worker.running.load(Ordering::SeqCst), 0);
    let s = server.stats().inbound;
    assert_eq!((s.cancelled, s.cancel_unknown), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_request_times_out_on_the_paused_clock_and_is_cancelled() {
    let b = PeerBuilder::new().request_timeout(Some(Duration::from_secs(2)));
    let worker = Worker::default();
    let p = pair(&b, NoHandler, worker.clone());
    let (client, server) = (&p.client, &p.server);
    let started = tokio::time::Instant::now();
    let r = client.request("hang", NO_PARAMS).await;
    assert!(matches!(r, Err(RequestError::Timeout)), "{r:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    // The server got notifications/cancelled and dropped the handler.
    client.request("ping", NO_PARAMS).await.unwrap();
    assert_eq!(server.stats().inbound.cancelled, 1);
    assert_eq!(client.stats().outbound.timed_out, 1);
    // A per-request timeout overrides the peer's.
    let opts = RequestOptions::new().timeout(Some(Duration::from_millis(300)));
    let started = tokio::time::Instant::now();
    let r = client.request_with("hang", NO_PARAMS, opts).await;
    assert!(matches!(r, Err(RequestError::Timeout)));
    assert_eq!(started.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn progress_resets_the_timeout_up_to_the_total_cap() {
    let b = PeerBuilder::new().request_timeout(Some(Duration::from_secs(1)));
    let p = pair(&b, NoHandler, Worker::default());
    let client = &p.client;
    let params = json!({"_meta": {"progressToken": "p1"}});
    // Progress every 500 ms for 3 s keeps a 1 s timeout alive.
    let opts = RequestOptions::new().reset_on_progress(ProgressToken::Str("p1".into()), None);
    let r = client.request_with("progress", Some(mcpwire::Json(&params)), opts).await.unwrap();
    assert_eq!(r.result().unwrap().get(), "\"finished\"");
    // With a 2 s total cap it fails at 2 s despite the progress.
    let opts = RequestOptions::new()
        .reset_on_progress(ProgressToken::Str("p1".into()), Some(Duration::from_secs(2)));
    let started = tokio::time::Instant::now();
    let r = client.request_with("progress", Some(mcpwire::Json(&params)), opts).await;
    assert!(matches!(r, Err(RequestError::Timeout)), "{r:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    // Without the option, the plain timeout applies.
    let started = tokio::time::Instant::now();
    let r = client.request("progress", Some(mcpwire::Json(&params))).await;
    assert!(matches!(r, Err(RequestError::Timeout)));
    assert_eq!(started.elapsed(), Duration::from_secs(1));
}

#[tokio::test]
async fn a_panicking_handler_is_answered_internal_error_and_the_peer_survives() {
    let p = pair(&PeerBuilder::new(), NoHandler, Worker::default());
    let (client, server) = (&p.client, &p.server);
    match client.request("panic", NO_PARAMS).await {
        Err(RequestError::Rpc(e)) => assert_eq!(e.code, ErrorCode::INTERNAL_ERROR),
        other => panic!("{other:?}"),
    }
    client.request("ping", NO_PARAMS).await.unwrap();
    assert_eq!(server.stats().handler_panics, 1);
    match client.request("nope", NO_PARAMS).await {
        Err(RequestError::Rpc(e)) => assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnect_fails_a_thousand_pending_requests_at_once() {
    let b = PeerBuilder::new().limits(Limits::default().max_handlers(2000));
    let worker = Worker::default();
    let Pair { client, server, client_conn: _c1, server_conn } =
        pair(&b, NoHandler, worker.clone());
    let calls: Vec<_> = (0..1000)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.request("hang", NO_PARAMS).await })
        })
        .collect();
    while worker.running.load(Ordering::SeqCst) < 1000 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(client.stats().in_flight, 1000);
    drop(server_conn);
    drop(server);
    let all = tokio::time::timeout(Duration::from_secs(10), futures::future::join_all(calls))
        .await
        .expect("every waiter completes");
    for r in all {
        assert!(matches!(r.unwrap(), Err(RequestError::Closed(CloseReason::Eof))));
    }
    assert_eq!(client.stats().in_flight, 0);
    assert!(matches!(client.request("ping", NO_PARAMS).await, Err(RequestError::Closed(_))));
}

#[tokio::test]
async fn unknown_duplicate_and_late_responses_are_counted_and_dropped() {
    let b = PeerBuilder::new().request_timeout(Some(Duration::from_millis(50)));
    let (client, _conn, mut raw) = with_raw(&b, NoHandler);
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.request("m", NO_PARAMS).await }
    });
    let id = raw.next().await.id().unwrap().to_string();
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":1}}"#)).await;
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":2}}"#)).await;
    raw.send(r#"{"jsonrpc":"2.0","id":999999999,"result":3}"#).await;
    raw.send(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#)
        .await;
    assert_eq!(call.await.unwrap().unwrap().result().unwrap().get(), "1");
    // One that times out, then is answered late.
    let r = client.request("slow", NO_PARAMS).await;
    assert!(matches!(r, Err(RequestError::Timeout)));
    let slow = raw.next().await.id().unwrap().to_string();
    let cancelled = raw.next_json().await;
    assert_eq!(cancelled["params"]["requestId"].to_string(), slow);
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{slow},"result":4}}"#)).await;
    // A round trip after, so every response above has been read.
    let ping = tokio::spawn({
        let client = client.clone();
        async move { client.request("ping", NO_PARAMS).await }
    });
    let p = raw.next().await.id().unwrap().to_string();
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{p},"result":{{}}}}"#)).await;
    ping.await.unwrap().unwrap();
    let s = client.stats().outbound;
    assert_eq!((s.late, s.unknown, s.timed_out), (2, 2, 1), "{s:?}");
}

#[tokio::test]
async fn never_more_than_max_in_flight_requests_are_outstanding_on_the_wire() {
    let b = PeerBuilder::new().limits(Limits::default().max_in_flight(64));
    let (client, _conn, mut raw) = with_raw(&b, NoHandler);
    let calls: Vec<_> = (0..1000)
        .map(|n| {
            let client = client.clone();
            tokio::spawn(async move {
                let params = json!([n]);
                client.request("m", Some(mcpwire::Json(&params))).await
            })
        })
        .collect();
    let (mut outstanding, mut peak, mut answered) = (Vec::new(), 0, 0);
    while answered < 1000 {
        // Read what has arrived; answer the oldest half when the window fills or stalls.
        let got = tokio::time::timeout(Duration::from_millis(20), raw.frames.next()).await;
        if let Ok(Some(Ok(f))) = got {
            assert_eq!(f.kind(), Kind::Request);
            outstanding.push(f.id().unwrap().to_string());
            peak = peak.max(outstanding.len());
            assert!(outstanding.len() <= 64, "{} outstanding", outstanding.len());
            continue;
        }
        let n = outstanding.len().div_ceil(2);
        for id in outstanding.drain(..n) {
            raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null}}"#)).await;
            answered += 1;
        }
    }
    for c in calls {
        c.await.unwrap().unwrap();
    }
    assert_eq!(peak, 64);
    assert_eq!(client.stats().peak_in_flight, 64);
}

#[tokio::test]
async fn garbage_is_answered_parse_error_with_a_null_id_at_a_limited_rate() {
    let b = PeerBuilder::new().unaddressed_replies_per_second(3);
    let (server, _conn, mut raw) = with_raw(&b, Worker::default());
    for _ in 0..50 {
        raw.send("this is not json").await;
    }
    raw.send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#).await;
    let mut parse_errors = 0;
    loop {
        let v = raw.next_json().await;
        if v["id"] == 9 {
            assert_eq!(v["result"], json!({}));
            break;
        }
        assert_eq!(v["id"], Value::Null);
        assert_eq!(v["error"]["code"], -32700);
        parse_errors += 1;
    }
    assert_eq!(parse_errors, 3);
    let s = server.stats();
    assert_eq!((s.invalid_received, s.replies_suppressed), (50, 47));
}

#[tokio::test]
async fn invalid_messages_are_answered_with_their_id_and_broken_responses_are_not() {
    let (server, _conn, mut raw) = with_raw(&PeerBuilder::new(), Worker::default());
    raw.send(r#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#).await;
    let v = raw.next_json().await;
    assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (json!(4), json!(-32600)));
    // A broken response, an error response and a notification get no answer.
    raw.send(r#"{"jsonrpc":"2.0","id":4,"result":1,"error":{"code":1,"message":"x"}}"#).await;
    raw.send(r#"{"jsonrpc":"2.0","id":77,"error":{"code":-32601,"message":"no"}}"#).await;
    raw.send(r#"{"jsonrpc":"2.0","method":"whatever"}"#).await;
    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#).await;
    assert_eq!(raw.next_json().await, json!({"jsonrpc":"2.0","id":5,"result":{}}));
    assert_eq!(server.stats().invalid_received, 2);
}

#[tokio::test]
async fn a_batch_is_answered_with_one_array() {
    let (_server, _conn, mut raw) = with_raw(&PeerBuilder::new(), Worker::default());
    raw.send(
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"work","params":{"n":3}},{"foo":1}]"#,
    )
    .await;
    let v = raw.next_json().await;
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 3, "{v}");
    assert!(items.contains(&json!({"jsonrpc":"2.0","id":1,"result":{}})));
    assert!(items.contains(&json!({"jsonrpc":"2.0","id":2,"result":{"twice":6}})));
    assert!(items.iter().any(|i| i["error"]["code"] == -32600 && i["id"].is_null()));
    // Only notifications: nothing at all comes back.
    raw.send(r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#).await;
    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#).await;
    assert_eq!(raw.next_json().await["id"], 3);
}

#[tokio::test]
async fn a_graceful_close_flushes_what_was_queued() {
    let (client, mut conn, mut raw) = with_raw(&PeerBuilder::new(), NoHandler);
    for i in 0..100 {
        client.notify("note", Some(RawJson::new(&format!("[{i}]")))).await.unwrap();
    }
    client.close();
    assert_eq!(conn.closed().await, CloseReason::Local);
    for i in 0..100 {
        let f = raw.next().await;
        assert_eq!(f.params().unwrap().get(), format!("[{i}]"));
    }
    assert!(raw.frames.next().await.is_none(), "the write side was shut down");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_requests_leave_the_table_at_its_steady_size() {
    let p = pair(&PeerBuilder::new(), NoHandler, Worker::default());
    let client = &p.client;
    client.request("ping", NO_PARAMS).await.unwrap();
    let steady = client.stats().outbound_table_bytes;
    for _ in 0..sequential_count() {
        client.request("ping", NO_PARAMS).await.unwrap();
    }
    assert_eq!(client.stats().outbound_table_bytes, steady);
}

/// 10^6, as the issue asks; dependencies are optimised even in test builds (Cargo.toml), which
/// keeps this at well under a minute.
fn sequential_count() -> usize {
    1_000_000
}

/// A sink that records the size of every write it is given.
#[derive(Clone, Default)]
struct Writes(Arc<std::sync::Mutex<Vec<usize>>>);

impl tokio::io::AsyncWrite for Writes {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.0.lock().unwrap().push(buf.len());
        std::task::Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn messages_queued_before_the_writer_wakes_go_out_in_one_write() {
    let writes = Writes::default();
    let (_keep_open, reader) = tokio::io::duplex(64);
    let (peer, _conn) = PeerBuilder::new().spawn(reader, writes.clone(), NoHandler);
    // On a current-thread runtime the writer cannot run until this task yields.
    for i in 0..100 {
        peer.notify("note", Some(RawJson::new(&format!("[{i}]")))).await.unwrap();
    }
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    let sizes = writes.0.lock().unwrap().clone();
    assert_eq!(sizes.len(), 1, "{sizes:?}");
    let one = r#"{"jsonrpc":"2.0","method":"note","params":[0]}"#.len() + 1;
    assert_eq!(sizes[0], 10 * one + 90 * (one + 1));
    assert_eq!(peer.stats().bytes_written, sizes[0] as u64);
}

/// Records the order in which its handlers are called.
#[derive(Clone, Default)]
struct Order(Arc<std::sync::Mutex<Vec<String>>>);

impl mcpwire::peer::Handler for Order {
    async fn request(
        &self,
        req: &mcpwire::peer::Incoming,
        _: &mcpwire::peer::Context,
    ) -> Result<mcpwire::peer::Reply, mcpwire::peer::RpcError> {
        self.0.lock().unwrap().push(req.method().to_owned());
        Ok(mcpwire::peer::Reply::empty())
    }

    async fn notification(&self, n: &mcpwire::peer::Incoming, _: &mcpwire::peer::Context) {
        self.0.lock().unwrap().push(n.method().to_owned());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_handled_after_the_notifications_read_before_it() {
    let order = Order::default();
    let p = pair(&PeerBuilder::new(), NoHandler, order.clone());
    let client = &p.client;
    for round in 0..500 {
        client.notify("first", NO_PARAMS).await.unwrap();
        client.request("then", NO_PARAMS).await.unwrap();
        let seen = std::mem::take(&mut *order.0.lock().unwrap());
        assert_eq!(seen, ["first", "then"], "round {round}");
    }
}

/// Its notification handler for `wait` waits until a `release` request has run.
#[derive(Clone, Default)]
struct Gate(Arc<tokio::sync::Notify>);

impl mcpwire::peer::Handler for Gate {
    async fn request(
        &self,
        _: &mcpwire::peer::Incoming,
        _: &mcpwire::peer::Context,
    ) -> Result<mcpwire::peer::Reply, mcpwire::peer::RpcError> {
        self.0.notify_one();
        Ok(mcpwire::peer::Reply::empty())
    }

    async fn notification(&self, n: &mcpwire::peer::Incoming, _: &mcpwire::peer::Context) {
        if n.method() == "wait" {
            self.0.notified().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_handler_waiting_for_a_request_does_not_hold_it_back() {
    let p = pair(&PeerBuilder::new(), NoHandler, Gate::default());
    let client = &p.client;
    // `other` cannot begin before `wait` ends, and `wait` ends only once `release` has run.
    client.notify("wait", NO_PARAMS).await.unwrap();
    client.notify("other", NO_PARAMS).await.unwrap();
    let released =
        tokio::time::timeout(Duration::from_secs(5), client.request("release", NO_PARAMS));
    released.await.expect("the request is not held behind the waiting handler").unwrap();
}
