//! Ways a peer could hang, deadlock, leak or die: one scenario each, kept so it stays fixed.

mod common;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Pair, Raw, pair, pair_over, with_raw, with_raw_over};
use futures::StreamExt;
use mcpwire::peer::{
    Context, Handler, Incoming, NO_PARAMS, NoHandler, PeerBuilder, ProgressToken, Reply,
    RequestError, RequestOptions, RpcError,
};
use mcpwire::{ErrorCode, Limits, RawJson};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

/// Sends `roots/list` back from its `notifications/initialized` handler, as MCP servers do.
#[derive(Clone, Default)]
struct AsksRoots(Arc<AtomicUsize>);

impl Handler for AsksRoots {
    async fn request(&self, r: &Incoming, _: &Context) -> Result<Reply, RpcError> {
        Err(RpcError::method_not_found(r.method()))
    }
    async fn notification(&self, n: &Incoming, cx: &Context) {
        if n.method() == "notifications/initialized"
            && cx.peer().request("roots/list", NO_PARAMS).await.is_ok()
        {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

struct Roots;

impl Handler for Roots {
    async fn request(&self, _: &Incoming, _: &Context) -> Result<Reply, RpcError> {
        Ok(Reply::raw(r#"{"roots":[]}"#))
    }
}

#[tokio::test(start_paused = true)]
async fn a_notification_handler_can_send_a_request_and_get_its_response() {
    let asks = AsksRoots::default();
    let p = pair(&PeerBuilder::new(), Roots, asks.clone());
    let (client, server) = (&p.client, &p.server);
    client.notify("notifications/initialized", NO_PARAMS).await.unwrap();
    let started = tokio::time::Instant::now();
    // Answered -32601 by the server's handler; what matters is that it is read at once.
    let _ = client.request("ping", NO_PARAMS).await;
    assert!(started.elapsed() < Duration::from_secs(1), "ping stalled {:?}", started.elapsed());
    while asks.0.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(server.stats().outbound.timed_out, 0);
}

#[tokio::test(start_paused = true)]
async fn a_notification_handler_awaiting_a_response_behind_many_notifications_gets_it() {
    let asks = AsksRoots::default();
    let p = pair(&PeerBuilder::new(), Roots, asks.clone());
    let client = &p.client;
    let started = tokio::time::Instant::now();
    client.notify("notifications/initialized", NO_PARAMS).await.unwrap();
    // Queued behind the handler that waits for roots/list's response.
    for i in 0..1000 {
        let params = RawJson::new(r#"{"level":"info","data":"x"}"#);
        client.notify("notifications/message", Some(params)).await.unwrap();
        if i % 100 == 0 {
            tokio::task::yield_now().await;
        }
    }
    while asks.0.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(started.elapsed() < Duration::from_secs(1), "stalled {:?}", started.elapsed());
}

/// A peer whose other side never reads, with a tiny write queue already full.
async fn stuck_writer() -> (mcpwire::peer::PeerHandle, mcpwire::peer::ConnectionTask, Raw) {
    let b = PeerBuilder::new().limits(Limits::default().max_write_queue_bytes(64));
    let (client, conn, raw) = with_raw_over(&b, 64, NoHandler);
    let big = format!("[\"{}\"]", "x".repeat(4096));
    let c = client.clone();
    tokio::spawn(async move {
        let _ = c.request("big", Some(RawJson::new(&big))).await;
    });
    tokio::task::yield_now().await;
    // The writer is stuck on `big`; this one waits in the queue behind it and fills it.
    let c = client.clone();
    tokio::spawn(async move {
        let _ = c.request("fill", NO_PARAMS).await;
    });
    tokio::task::yield_now().await;
    assert!(client.queued_bytes() > 0);
    (client, conn, raw)
}

#[tokio::test(start_paused = true)]
async fn a_request_times_out_while_it_waits_for_room_to_be_sent() {
    let (client, _conn, _raw) = stuck_writer().await;
    let opts = RequestOptions::new().timeout(Some(Duration::from_millis(100)));
    let r = tokio::time::timeout(
        Duration::from_secs(600),
        client.request_with("ping", NO_PARAMS, opts),
    )
    .await;
    assert!(matches!(r, Ok(Err(RequestError::Timeout))), "{r:?}");
}

#[tokio::test(start_paused = true)]
async fn requests_that_time_out_unsent_do_not_grow_the_write_queue() {
    let (client, _conn, _raw) = stuck_writer().await;
    let before = client.queued_bytes();
    for _ in 0..2000 {
        let opts = RequestOptions::new().timeout(Some(Duration::from_millis(10)));
        let r = client.request_with("ping", NO_PARAMS, opts).await;
        assert!(matches!(r, Err(RequestError::Timeout)));
    }
    // Never sent, so no cancellation is owed either.
    assert_eq!(client.queued_bytes(), before);
}

/// Panics in the synchronous part of its methods, before any future exists.
struct SyncPanic;

impl Handler for SyncPanic {
    fn request(
        &self,
        r: &Incoming,
        _: &Context,
    ) -> impl Future<Output = Result<Reply, RpcError>> + Send {
        assert!(r.method() != "boom", "sync part of request()");
        async { Ok(Reply::empty()) }
    }
    fn notification(&self, n: &Incoming, _: &Context) -> impl Future<Output = ()> + Send {
        assert!(n.method() != "boom", "sync part of notification()");
        async {}
    }
}

#[tokio::test]
async fn a_synchronous_panic_in_a_notification_handler_leaves_the_peer_working() {
    let (peer, _conn, mut raw) = with_raw(&PeerBuilder::new(), SyncPanic);
    raw.send(r#"{"jsonrpc":"2.0","method":"boom"}"#).await;
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"ok"}"#).await;
    assert_eq!(raw.next_json().await["id"], 1);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(peer.stats().handler_panics, 1);
}

#[tokio::test]
async fn a_synchronous_panic_in_a_request_handler_is_answered_and_frees_its_slot() {
    let b = PeerBuilder::new().limits(Limits::default().max_handlers(1));
    let (_peer, _conn, mut raw) = with_raw(&b, SyncPanic);
    for i in 0..3 {
        raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"boom"}}"#)).await;
    }
    raw.send(r#"{"jsonrpc":"2.0","id":9,"method":"ok"}"#).await;
    for i in 0..3 {
        let v = raw.next_json().await;
        assert_eq!((v["id"].as_i64(), v["error"]["code"].as_i64()), (Some(i), Some(-32603)));
    }
    assert_eq!(raw.next_json().await["id"], 9);
    // The ids are free again.
    raw.send(r#"{"jsonrpc":"2.0","id":0,"method":"ok"}"#).await;
    assert!(raw.next_json().await["result"].is_object());
}

#[tokio::test]
async fn progress_for_a_request_with_an_endless_timeout_does_not_break_the_reader() {
    let (peer, mut conn, mut raw) = with_raw(&PeerBuilder::new(), NoHandler);
    let opts = RequestOptions::new()
        .timeout(Some(Duration::MAX))
        .reset_on_progress(ProgressToken::Num(1), None);
    let pending = tokio::spawn({
        let p = peer.clone();
        async move {
            let params = RawJson::new(r#"{"_meta":{"progressToken":1}}"#);
            p.request_with("long", Some(params), opts).await
        }
    });
    let _ = raw.next().await;
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#).await;
    drop(raw);
    let r = tokio::time::timeout(Duration::from_secs(5), pending).await.expect("no hang").unwrap();
    assert!(matches!(r, Err(RequestError::Closed(_))), "{r:?}");
    assert!(tokio::time::timeout(Duration::from_secs(5), conn.closed()).await.is_ok());
}

/// Counts how many run at once; each takes 50 ms.
#[derive(Clone, Default)]
struct Count(Arc<AtomicUsize>, Arc<AtomicUsize>);

impl Handler for Count {
    async fn request(&self, _: &Incoming, _: &Context) -> Result<Reply, RpcError> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        self.1.fetch_max(n, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.0.fetch_sub(1, Ordering::SeqCst);
        Ok(Reply::empty())
    }
}

fn batch_of(ids: impl Iterator<Item = usize>) -> String {
    let items: Vec<_> =
        ids.map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"w"}}"#)).collect();
    format!("[{}]", items.join(","))
}

#[tokio::test(start_paused = true)]
async fn a_batch_runs_within_max_handlers_and_what_follows_it_waits() {
    let count = Count::default();
    let b = PeerBuilder::new().limits(Limits::default().max_handlers(2));
    let (_p, _c, mut raw) = with_raw(&b, count.clone());
    raw.send(&batch_of(0..6)).await;
    raw.send(&batch_of(10..16)).await;
    raw.send(r#"{"jsonrpc":"2.0","id":100,"method":"w"}"#).await;
    let mut answered = 0;
    for _ in 0..3 {
        let v = raw.next_json().await;
        assert!(!v.to_string().contains("error"), "refused instead of waiting: {v}");
        answered += v.as_array().map_or(1, Vec::len);
    }
    assert_eq!(answered, 13);
    assert_eq!(count.1.load(Ordering::SeqCst), 2, "peak over max_handlers");
}

struct Echo;

impl Handler for Echo {
    async fn request(&self, r: &Incoming, _: &Context) -> Result<Reply, RpcError> {
        Ok(Reply::raw(r.params().map_or("null", |p| p.get())))
    }
}

/// Two peers flooding each other with large requests; with `tight`, queues and handler slots
/// are as small as they go.
async fn flood_both_ways(tight: bool, per_side: usize) {
    let mut b = PeerBuilder::new().request_timeout(None);
    let mut pipe = 1 << 16;
    if tight {
        b = b.limits(Limits::default().max_handlers(1).max_write_queue_bytes(1024));
        pipe = 1024;
    }
    let Pair { client, server, client_conn: _c1, server_conn: _c2 } =
        pair_over(&b, pipe, Echo, Echo);
    let body = format!("[\"{}\"]", "y".repeat(16 * 1024));
    let mut calls = Vec::new();
    for p in [client, server] {
        for _ in 0..per_side {
            let (p, body) = (p.clone(), body.clone());
            calls.push(tokio::spawn(
                async move { p.request("echo", Some(RawJson::new(&body))).await },
            ));
        }
    }
    let all = tokio::time::timeout(Duration::from_secs(60), futures::future::join_all(calls))
        .await
        .expect("the two peers deadlocked");
    for r in all {
        assert_eq!(r.unwrap().unwrap().result().unwrap().get(), body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_default_peers_flooding_each_other_with_requests_do_not_deadlock() {
    flood_both_ways(false, 1000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tightly_bounded_peers_flooding_each_other_do_not_deadlock() {
    flood_both_ways(true, 8).await;
}

#[tokio::test]
async fn a_request_followed_by_end_of_stream_is_still_answered() {
    let (_p, mut conn, mut raw) = with_raw(&PeerBuilder::new(), Count::default());
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"w"}"#).await;
    raw.out.shutdown().await.unwrap();
    let f = tokio::time::timeout(Duration::from_secs(5), raw.frames.next()).await.unwrap();
    let v: Value =
        serde_json::from_slice(f.expect("an answer, not EOF").unwrap().as_bytes()).unwrap();
    assert_eq!(v["id"], 1);
    assert!(raw.frames.next().await.is_none());
    conn.closed().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_waiting_for_room_after_end_of_stream_are_all_written() {
    // Replies larger than the pipe and the write queue: they wait for the client to read, which
    // it does only after it has closed its end.
    let b = PeerBuilder::new().limits(Limits::default().max_write_queue_bytes(1024));
    let (_p, mut conn, mut raw) = with_raw_over(&b, 1024, Echo);
    let body = format!("[\"{}\"]", "z".repeat(64 * 1024));
    for i in 0..8 {
        raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"echo","params":{body}}}"#)).await;
    }
    raw.out.shutdown().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut ids = Vec::new();
    while let Some(f) = raw.frames.next().await {
        let f = f.unwrap();
        assert_eq!(f.result().unwrap().get(), body);
        ids.push(f.id().unwrap().to_string());
    }
    ids.sort();
    assert_eq!(ids, ["0", "1", "2", "3", "4", "5", "6", "7"]);
    conn.closed().await;
}

#[tokio::test(start_paused = true)]
async fn initialize_is_never_cancelled() {
    let b = PeerBuilder::new().request_timeout(Some(Duration::from_secs(1)));
    let (client, _conn, mut raw) = with_raw(&b, NoHandler);
    let r = client.request("initialize", NO_PARAMS).await;
    assert!(matches!(r, Err(RequestError::Timeout)));
    let init = raw.next_json().await;
    assert_eq!(init["method"], "initialize");
    // Dropped as well as timed out: still no cancellation on the wire.
    let dropped =
        tokio::time::timeout(Duration::from_millis(10), client.request("initialize", NO_PARAMS));
    assert!(dropped.await.is_err());
    assert_eq!(raw.next_json().await["method"], "initialize");
    client
        .request_with(
            "ping",
            NO_PARAMS,
            RequestOptions::new().timeout(Some(Duration::from_millis(5))),
        )
        .await
        .ok();
    let next = raw.next_json().await;
    assert_eq!(next["method"], "ping", "a cancellation for initialize was sent: {next}");
    let _ = ErrorCode::INTERNAL_ERROR;
}
