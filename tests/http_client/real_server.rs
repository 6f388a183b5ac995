//! Against `HttpServer` served in-process with the tests' own handler.

use crate::harness::*;

// ---------------------------------------------------------------------------------------------
// The real server.
// ---------------------------------------------------------------------------------------------

/// The server's handler: `initialize`, `ping`, `echo`; `slow` sends `notifications/progress`
/// for its `_meta.progressToken` before answering; `announce` sends a notification of its own,
/// outside the request's answer; `fail` answers an error; `hang` never answers and counts its
/// cancellation; `order` and every notification are written in `log`.
#[derive(Clone, Default)]
struct Host {
    log: Arc<Mutex<Vec<String>>>,
    hangs_begun: Arc<AtomicUsize>,
    hangs_cancelled: Arc<AtomicUsize>,
}

impl Host {
    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    fn logged(&self, entry: &str) -> bool {
        self.log.lock().unwrap().iter().any(|e| e == entry)
    }
}

/// Counts a handler's future dropped before it finished: cancelled.
struct CountOnDrop(Arc<AtomicUsize>);

impl Drop for CountOnDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Handler for Host {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        let sent = |r: Result<(), RequestError>| r.map_err(|e| RpcError::internal(e.to_string()));
        match req.method() {
            "initialize" => Ok(Reply::raw(INIT_RESULT)),
            "ping" => Ok(Reply::empty()),
            "echo" => Ok(Reply::raw(req.params().map_or("null", |p| p.get()))),
            "slow" => {
                let p = params_of(req);
                let token = p["_meta"]["progressToken"].clone();
                let steps = p["steps"].as_u64().unwrap_or(3);
                let every = Duration::from_millis(p["every_ms"].as_u64().unwrap_or(0));
                for i in 0..steps {
                    tokio::time::sleep(every).await;
                    let note = json!({ "progressToken": token, "progress": i, "total": steps });
                    sent(cx.peer().notify("notifications/progress", Some(Json(&note))).await)?;
                }
                Ok(Reply::raw(r#""done""#))
            }
            "announce" => {
                let note = json!({ "level": "info", "data": params_of(req) });
                sent(cx.peer().notify("notifications/message", Some(Json(&note))).await)?;
                Ok(Reply::empty())
            }
            "fail" => Err(RpcError::new(TOLD_TO_FAIL, "told to fail")),
            "hang" => {
                self.hangs_begun.fetch_add(1, Ordering::SeqCst);
                let _cancelled = CountOnDrop(self.hangs_cancelled.clone());
                std::future::pending().await
            }
            "order" => {
                let entry = format!("request {}", req.params().map_or("null", |p| p.get()));
                self.log.lock().unwrap().push(entry);
                Ok(Reply::empty())
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }

    async fn notification(&self, n: &Incoming, _: &Context) {
        let entry = format!("{} {}", n.method(), n.params().map_or("null", |p| p.get()));
        self.log.lock().unwrap().push(entry);
    }
}

/// `HttpServer` serving a [`Host`] on `127.0.0.1:0`; stops when dropped.
struct Served {
    url: String,
    server: HttpServer,
    host: Host,
    serving: ServedHttp,
}

impl Served {
    async fn start() -> Self {
        Self::with(HttpServer::new(PeerBuilder::new())).await
    }

    async fn with(server: HttpServer) -> Self {
        let host = Host::default();
        let serving = serve_http(server.clone(), {
            let host = host.clone();
            move || host.clone()
        })
        .await;
        Self { url: serving.url(), server, host, serving }
    }

    fn sessions(&self) -> usize {
        self.server.stats().sessions
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.serving.task.abort();
    }
}

/// The client's handler: keeps every notification it is given, in order.
#[derive(Clone, Default)]
struct Inbox {
    got: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Inbox {
    fn got(&self) -> Vec<(String, Value)> {
        self.got.lock().unwrap().clone()
    }

    fn count(&self, method: &str) -> usize {
        self.got.lock().unwrap().iter().filter(|(m, _)| m == method).count()
    }
}

impl Handler for Inbox {
    async fn request(&self, req: &Incoming, _: &Context) -> Result<Reply, RpcError> {
        Err(RpcError::method_not_found(req.method()))
    }

    async fn notification(&self, n: &Incoming, _: &Context) {
        self.got.lock().unwrap().push((n.method().to_owned(), params_of(n)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_requests_after_the_handshake_each_get_their_own_answer() {
    let srv = Served::start().await;
    let (peer, _conn) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    let calls = (0..1000u32).map(|i| {
        let peer = peer.clone();
        async move {
            let params = json!({ "i": i, "text": format!("é \"{i}\"\n") });
            let r = peer.request("echo", Some(Json(&params))).await.unwrap();
            assert_eq!(r.result_as::<Value>().unwrap(), params, "the answer to {i} went elsewhere");
        }
    });
    within(futures::future::join_all(calls)).await;
    let stats = peer.stats();
    assert_eq!(stats.outbound.completed, 1001, "{stats:?}");
    assert_eq!(stats.outbound.unknown + stats.outbound.late, 0, "{stats:?}");
    assert_eq!(stats.in_flight, 0);
    assert!(stats.peak_in_flight > 1, "the requests never overlapped: {stats:?}");
    assert!(stats.bytes_read > 0, "{stats:?}");
    assert!(stats.bytes_written > 0, "{stats:?}");
    assert_eq!(srv.server.stats().sessions_started, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_carries_every_request_and_closing_deletes_it() {
    let srv = Served::start().await;
    let (peer, mut conn) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    for round in 0..5 {
        let calls = (0..40).map(|_| peer.request("ping", NO_PARAMS));
        for r in within(futures::future::join_all(calls)).await {
            r.unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
    }
    // A request without the session id would be refused (400), and a second initialize would
    // have started a second session: one session, every request answered.
    let stats = srv.server.stats();
    assert_eq!((stats.sessions, stats.sessions_started), (1, 1), "{stats:?}");
    conn.close();
    assert_eq!(within(conn.closed()).await, CloseReason::Local);
    eventually("the DELETE ended the session", || srv.sessions() == 0).await;
    assert_eq!(srv.server.stats().sessions_expired, 0, "ended by the DELETE, not by expiry");
    assert!(matches!(peer.request("ping", NO_PARAMS).await, Err(RequestError::Closed(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_connection_deletes_the_session() {
    let srv = Served::start().await;
    let (peer, conn) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    within(peer.request("ping", NO_PARAMS)).await.unwrap();
    assert_eq!(srv.sessions(), 1);
    drop(conn);
    eventually("the DELETE ended the session", || srv.sessions() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_get_two_sessions() {
    let srv = Served::start().await;
    let (a, _ka) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    let (b, kb) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    tokio::join!(handshake(&a), handshake(&b));
    assert_eq!(srv.sessions(), 2);
    drop(kb);
    eventually("only b's session ended", || srv.sessions() == 1).await;
    within(a.request("ping", NO_PARAMS)).await.unwrap();
}

/// The peer hands `notifications/progress` to `Handler::notification` as well (after using it
/// to restart the request's timeout when asked to): the client's handler sees every progress
/// notification of its own requests, in order, and nothing else; and it has seen them by the
/// time the caller has the response that followed them in the stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_comes_in_the_requests_event_stream_and_the_client_handler_sees_it() {
    let srv = Served::start().await;
    let inbox = Inbox::default();
    // Without the GET stream, progress can only come in the POST's own answer.
    let client = HttpClient::new(PeerBuilder::new()).get_stream(false);
    let (peer, _conn) = client.connect(&srv.url, inbox.clone()).unwrap();
    handshake(&peer).await;
    let params = json!({ "steps": 3, "_meta": { "progressToken": "tok-1" } });
    let r = within(peer.request("slow", Some(Json(&params)))).await.unwrap();
    assert_eq!(r.result().unwrap().get(), r#""done""#);
    let got = inbox.got();
    let progress: Vec<_> = got
        .iter()
        .map(|(m, p)| {
            assert_eq!(m, "notifications/progress", "{got:?}");
            assert_eq!(p["progressToken"], "tok-1", "{got:?}");
            p["progress"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(progress, [0, 1, 2]);
    assert_eq!(srv.server.stats().messages_dropped, 0);
}

/// The event stream is read as it comes: each progress event restarts the request's timeout
/// before the response is there. A client that waited for the end of the body would time out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_events_restart_the_request_timeout_as_they_arrive() {
    let srv = Served::start().await;
    let (peer, _conn) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    // 6 steps 400 ms apart: 2.4 s in all, against a timeout of 1 s that each step restarts.
    let params = json!({ "steps": 6, "every_ms": 400, "_meta": { "progressToken": 99 } });
    let options = RequestOptions::new()
        .timeout(Some(Duration::from_secs(1)))
        .reset_on_progress(mcpwire::peer::ProgressToken::Num(99), None);
    let r = within(peer.request_with("slow", Some(Json(&params)), options)).await.unwrap();
    assert_eq!(r.result().unwrap().get(), r#""done""#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_notification_outside_any_request_comes_over_the_get_stream() {
    let srv = Served::start().await;
    let inbox = Inbox::default();
    let (peer, _conn) = connect(&PeerBuilder::new(), &srv.url, inbox.clone()).unwrap();
    handshake(&peer).await;
    // The client opens the GET stream once `notifications/initialized` was accepted, and
    // nothing tells it (or the test) when the server has it: until then the server drops what
    // it has for the stream. So announce until one arrives.
    let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
    let mut k = 0;
    while inbox.count("notifications/message") == 0 {
        assert!(tokio::time::Instant::now() < deadline, "no notification came over GET");
        within(peer.request("announce", Some(Json(&json!({ "k": k }))))).await.unwrap();
        k += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // With the stream open, every one arrives, in order.
    let before = inbox.count("notifications/message");
    for j in 0..20 {
        within(peer.request("announce", Some(Json(&json!({ "after": j }))))).await.unwrap();
    }
    eventually("20 more notifications", || inbox.count("notifications/message") == before + 20)
        .await;
    let after: Vec<_> =
        inbox.got().into_iter().filter_map(|(_, p)| p["data"]["after"].as_u64()).collect();
    assert_eq!(after, (0..20).collect::<Vec<_>>());
    assert!(inbox.got().iter().all(|(m, _)| m == "notifications/message"), "{:?}", inbox.got());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_from_the_server_handler_arrives_with_its_code() {
    let srv = Served::start().await;
    let (peer, _conn) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    let e = rpc_error(within(peer.request("fail", NO_PARAMS)).await);
    assert_eq!((e.code, &*e.message), (TOLD_TO_FAIL, "told to fail"));
    let e = rpc_error(within(peer.request("no/such/method", NO_PARAMS)).await);
    assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
    within(peer.request("ping", NO_PARAMS)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_times_out_is_cancelled_on_the_server() {
    let srv = Served::start().await;
    let (peer, _conn) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    let options = RequestOptions::new().timeout(Some(Duration::from_millis(300)));
    let r = within(peer.request_with("hang", NO_PARAMS, options)).await;
    assert!(matches!(r, Err(RequestError::Timeout)), "{r:?}");
    let cancelled = &srv.host.hangs_cancelled;
    eventually("the server's handler was cancelled", || cancelled.load(Ordering::SeqCst) == 1)
        .await;
    // Giving up on a request (dropping its future) cancels it too.
    let call = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("hang", NO_PARAMS).await }
    });
    let begun = &srv.host.hangs_begun;
    eventually("the second hang runs on the server", || begun.load(Ordering::SeqCst) == 2).await;
    call.abort();
    eventually("the second handler was cancelled", || cancelled.load(Ordering::SeqCst) == 2).await;
    within(peer.request("ping", NO_PARAMS)).await.unwrap();
}

/// Notifications are POSTed one at a time and a request waits for those queued before it, so
/// the server's handler sees `notification(A)` before `request(B)`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_sent_before_a_request_reaches_the_server_first() {
    let srv = Served::start().await;
    let (peer, _conn) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    for k in 0..50 {
        let p = json!({ "k": k });
        // `notify` returns once the message is queued on the client, not once the server has
        // it: nothing waits for the server between the two.
        within(peer.notify("notifications/order", Some(Json(&p)))).await.unwrap();
        within(peer.request("order", Some(Json(&p)))).await.unwrap();
        let log = srv.host.log();
        let at = |entry: &str| log.iter().position(|e| e == entry);
        let a = at(&format!(r#"notifications/order {{"k":{k}}}"#));
        let b = at(&format!(r#"request {{"k":{k}}}"#));
        assert!(
            a.is_some() && a < b,
            "round {k}: notification at {a:?}, request at {b:?}: {log:?}"
        );
    }
}

/// `PeerHandle::close` says "what was already queued is written before the write side shuts
/// down": a notification queued just before closing must reach the server, before the DELETE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_queued_before_close_reaches_the_server() {
    let srv = Served::start().await;
    let (peer, mut conn) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    within(peer.request("ping", NO_PARAMS)).await.unwrap();
    within(peer.notify("notifications/last", Some(Json(&json!({ "bye": true }))))).await.unwrap();
    conn.close();
    within(conn.closed()).await;
    eventually("the last notification reached the server", || {
        srv.host.logged(r#"notifications/last {"bye":true}"#)
    })
    .await;
}

#[tokio::test]
async fn connect_refuses_what_is_not_an_http_or_https_url() {
    for url in [
        "ftp://127.0.0.1/mcp",
        "ws://127.0.0.1/mcp",
        "not a url",
        "",
        "/mcp",
        "127.0.0.1:3000/mcp",
        "http://",
        "http:///mcp",
    ] {
        match connect(&PeerBuilder::new(), url, NoHandler) {
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{url:?}: {e}"),
            Ok(_) => panic!("{url:?} was accepted"),
        }
    }
    // Upper-case scheme and host are still http; https is taken with the `tls` feature, and
    // named as needing it without.
    let (_peer, _conn) = connect(&PeerBuilder::new(), "HTTP://LOCALHOST:1/mcp", NoHandler)
        .expect("an upper-case http URL is an http URL");
    for url in ["https://127.0.0.1:3000/mcp", "HTTPS://example.com/mcp"] {
        let taken = connect(&PeerBuilder::new(), url, NoHandler);
        #[cfg(feature = "tls")]
        assert!(taken.is_ok(), "{url:?}: {:?}", taken.err());
        #[cfg(not(feature = "tls"))]
        match taken {
            Ok(_) => panic!("{url:?} was accepted without TLS"),
            Err(e) => assert!(e.to_string().contains("`tls` feature"), "{url:?}: {e}"),
        }
    }
}

/// A request given up on right after it was sent: its `notifications/cancelled` goes in the
/// ordered lane while the request's own POST may still be on its way (here, 4 MiB of params
/// to read), so the cancellation can reach the server first. The request must still end up
/// cancelled (and its POST end, or it holds one of the client's POST slots for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_given_up_at_once_is_still_cancelled_on_the_server() {
    let srv = Served::start().await;
    let (peer, _conn) = connect(&PeerBuilder::new(), &srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    let pad = json!({ "pad": "x".repeat(4 << 20) });
    for _ in 0..20 {
        let written = peer.stats().bytes_written;
        let call = tokio::spawn({
            let (peer, pad) = (peer.clone(), pad.clone());
            async move { peer.request("hang", Some(Json(&pad))).await }
        });
        eventually("the request was handed to the transport", || {
            peer.stats().bytes_written > written + (4 << 20)
        })
        .await;
        call.abort();
    }
    let options = RequestOptions::new().timeout(Some(Duration::from_secs(5)));
    let ping = within(peer.request_with("ping", NO_PARAMS, options)).await;
    let host = &srv.host;
    let counts =
        || (host.hangs_begun.load(Ordering::SeqCst), host.hangs_cancelled.load(Ordering::SeqCst));
    let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
    while counts().0 != counts().1 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (begun, cancelled) = counts();
    assert_eq!(
        begun, cancelled,
        "of {begun} requests begun on the server, {cancelled} were cancelled"
    );
    ping.unwrap();
}

/// A request that times out (or is given up on) is cancelled, and the server's handler sends
/// no response; the POST that carried it must not keep one of the client's POST slots for
/// good, or after `max_concurrent_posts` of them the client can send nothing at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_time_out_do_not_use_up_the_clients_posts() {
    let srv = Served::start().await;
    let client = HttpClient::new(PeerBuilder::new()).max_concurrent_posts(4);
    let (peer, _conn) = client.connect(&srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    let options = RequestOptions::new().timeout(Some(Duration::from_millis(100)));
    for i in 0..8 {
        let r = within(peer.request_with("hang", NO_PARAMS, options.clone())).await;
        assert!(matches!(r, Err(RequestError::Timeout)), "hang {i}: {r:?}");
    }
    let cancelled = &srv.host.hangs_cancelled;
    eventually("the server's handlers were cancelled", || cancelled.load(Ordering::SeqCst) >= 4)
        .await;
    let options = RequestOptions::new().timeout(Some(Duration::from_secs(5)));
    within(peer.request_with("ping", NO_PARAMS, options)).await.unwrap();
}

/// The server expired the session: a request then fails naming the 404, and the client forgets
/// the session, so a new `initialize` over the same peer starts another (naming the old one,
/// it would get 404 too, and no session would start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_server_expires_the_session_a_new_initialize_starts_another() {
    let idle = Some(Duration::from_millis(200));
    let srv = Served::with(HttpServer::new(PeerBuilder::new()).session_idle_timeout(idle)).await;
    // An open GET stream keeps a session busy, and a busy session never expires.
    let client = HttpClient::new(PeerBuilder::new()).get_stream(false);
    let (peer, _conn) = client.connect(&srv.url, NoHandler).unwrap();
    handshake(&peer).await;
    within(peer.request("ping", NO_PARAMS)).await.unwrap();
    eventually("the idle session expired", || srv.sessions() == 0).await;
    assert_eq!(srv.server.stats().sessions_expired, 1);
    transport_error(within(peer.request("ping", NO_PARAMS)).await, "404");

    handshake(&peer).await;
    let stats = srv.server.stats();
    assert_eq!((stats.sessions, stats.sessions_started), (1, 2), "{stats:?}");
    let params = json!({ "again": true });
    let r = within(peer.request("echo", Some(Json(&params)))).await.unwrap();
    assert_eq!(r.result_as::<Value>().unwrap(), params);
}
