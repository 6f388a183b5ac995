//! Against a hand-made HTTP/1.1 server that answers with fixed responses.

use crate::harness::*;

// ---------------------------------------------------------------------------------------------
// A hand-made server with fixed answers.
// ---------------------------------------------------------------------------------------------

/// An HTTP/1.1 server made by hand, one request per connection (`Connection: close`). A POST is
/// answered by the `method` of its body:
///
/// | method | answer |
/// |---|---|
/// | `initialize` | 200, the result as JSON, with a session id |
/// | a notification or response | 202 |
/// | `http500` | 500 with an HTML body |
/// | `accept` | 202 to the request |
/// | `badjson` | 200 `application/json` that is not JSON |
/// | `sse_no_response` | 200 `text/event-stream` with a progress event, then the end |
/// | `hangup` | the connection closed without an answer |
/// | `never` | no answer, the connection kept open until the client closes it |
/// | `sse_kept_open` | 200 `text/event-stream` with the response, then the stream kept open |
/// | `progress_first` | 200 `text/event-stream`, in one write: two progress events, then the response |
/// | `gone` | 404, -32001: the session ended |
/// | anything else | 200, `{"method": ...}` as the result |
///
/// GET is answered 405 (and counted), DELETE 200. Every POST is kept (its head, lower-cased, and
/// its body), in the order they came.
struct Fake {
    server: ByHand,
    posts: Arc<Mutex<Vec<(String, Value)>>>,
    gets: Arc<AtomicUsize>,
}

impl Fake {
    async fn start() -> Self {
        let posts = Arc::new(Mutex::new(Vec::new()));
        let gets = Arc::new(AtomicUsize::new(0));
        let server = ByHand::start({
            let (posts, gets) = (posts.clone(), gets.clone());
            move |sock| fake_exchange(sock, posts.clone(), gets.clone())
        })
        .await;
        Self { server, posts, gets }
    }

    fn bodies(&self) -> Vec<Value> {
        self.posts.lock().unwrap().iter().map(|(_, b)| b.clone()).collect()
    }

    fn heads(&self) -> Vec<String> {
        self.posts.lock().unwrap().iter().map(|(h, _)| h.clone()).collect()
    }
}

async fn fake_exchange(
    mut sock: TcpStream,
    posts: Arc<Mutex<Vec<(String, Value)>>>,
    gets: Arc<AtomicUsize>,
) {
    let Some((head, body)) = read_request(&mut sock).await else { return };
    let fixed = closing_answer;
    let answer = if head.starts_with("GET ") {
        gets.fetch_add(1, Ordering::SeqCst);
        fixed("405 Method Not Allowed", "text/plain", "allow: POST, DELETE\r\n", "")
    } else if head.starts_with("DELETE ") {
        fixed("200 OK", "text/plain", "", "")
    } else {
        let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        posts.lock().unwrap().push((head.to_ascii_lowercase(), msg.clone()));
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            None => fixed("202 Accepted", "text/plain", "", ""),
            Some(_) if id.is_null() => fixed("202 Accepted", "text/plain", "", ""),
            Some("initialize") => {
                let reply = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{INIT_RESULT}}}"#);
                fixed("200 OK", "application/json", "mcp-session-id: fake-session\r\n", &reply)
            }
            Some("http500") => fixed(
                "500 Internal Server Error",
                "text/html",
                "",
                "<html><body><h1>500 Internal Server Error</h1></body></html>",
            ),
            Some("accept") => fixed("202 Accepted", "text/plain", "", ""),
            Some("badjson") => fixed("200 OK", "application/json", "", "this is {not json"),
            Some("sse_no_response") => {
                let note = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#;
                format!("{SSE_HEAD}event: message\ndata: {note}\n\n")
            }
            Some("hangup") => return,
            Some("never") => return hold_open(sock).await,
            Some("sse_kept_open") => {
                let reply = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"method":"sse_kept_open"}}}}"#
                );
                let answer = format!("{SSE_HEAD}event: message\ndata: {reply}\n\n");
                if sock.write_all(answer.as_bytes()).await.is_ok() {
                    hold_open(sock).await;
                }
                return;
            }
            Some("progress_first") => {
                let note = |i| {
                    format!(
                        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"t","progress":{i}}}}}"#
                    )
                };
                let reply = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
                format!(
                    "{SSE_HEAD}event: message\ndata: {}\n\nevent: message\ndata: {}\n\nevent: message\ndata: {reply}\n\n",
                    note(1),
                    note(2)
                )
            }
            Some("gone") => fixed(
                "404 Not Found",
                "application/json",
                "",
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#,
            ),
            Some(m) => {
                let reply = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"method":"{m}"}}}}"#);
                fixed("200 OK", "application/json", "", &reply)
            }
        }
    };
    let _ = sock.write_all(answer.as_bytes()).await;
    let _ = sock.shutdown().await;
}

/// A client of the fake server, past the handshake.
async fn fake_client() -> (Fake, PeerHandle, ConnectionTask) {
    let fake = Fake::start().await;
    let (peer, conn) = connect(&PeerBuilder::new(), &fake.server.url, NoHandler).unwrap();
    handshake(&peer).await;
    (fake, peer, conn)
}

/// The peer goes on after a failed exchange: the next request is answered.
async fn still_works(peer: &PeerHandle) {
    let r = within(peer.request("ok", NO_PARAMS)).await.unwrap();
    assert_eq!(r.result_as::<Value>().unwrap(), json!({ "method": "ok" }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_500_with_an_html_body_fails_the_request_naming_the_status() {
    let (_fake, peer, _conn) = fake_client().await;
    let e = transport_error(within(peer.request("http500", NO_PARAMS)).await, "500");
    let TransportError::Status { status: 500, www_authenticate: None, body } = &e else {
        panic!("an HTTP status error expected: {e:?}");
    };
    assert!(body.starts_with("<html>") && body.len() <= 512, "{body:?}");
    still_works(&peer).await;
}

/// An answer that is not a JSON-RPC message (an HTML error page, a JSON body that does not
/// parse) is not a message from the server's peer: the client must not hand it to its own peer
/// as one, which counts it invalid and POSTs a -32700 about it back to the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_is_not_a_message_is_not_handed_to_the_peer() {
    let (fake, peer, _conn) = fake_client().await;
    transport_error(within(peer.request("http500", NO_PARAMS)).await, "500");
    transport_error(within(peer.request("badjson", NO_PARAMS)).await, "HTTP 200");
    still_works(&peer).await;
    let bodies = fake.bodies();
    assert!(
        !bodies.iter().any(|b| b["error"]["code"] == -32700),
        "the client answered the server's answer with a parse error: {bodies:?}"
    );
    assert_eq!(peer.stats().invalid_received, 0, "{:?}", peer.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_202_to_a_request_fails_it_naming_the_status() {
    let (_fake, peer, _conn) = fake_client().await;
    transport_error(within(peer.request("accept", NO_PARAMS)).await, "202");
    still_works(&peer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_answer_that_is_not_json_fails_the_request() {
    let (_fake, peer, _conn) = fake_client().await;
    transport_error(within(peer.request("badjson", NO_PARAMS)).await, "HTTP 200");
    still_works(&peer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_that_ends_without_the_response_fails_the_request() {
    let (_fake, peer, _conn) = fake_client().await;
    transport_error(within(peer.request("sse_no_response", NO_PARAMS)).await, "no response");
    still_works(&peer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_closed_without_an_answer_fails_the_request() {
    let (_fake, peer, _conn) = fake_client().await;
    transport_error(within(peer.request("hangup", NO_PARAMS)).await, "HTTP request failed");
    still_works(&peer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failure_in_turn_leaves_the_peer_working() {
    let (fake, peer, _conn) = fake_client().await;
    for round in 0..3 {
        for (method, says) in [
            ("http500", "500"),
            ("accept", "202"),
            ("badjson", "HTTP 200"),
            ("sse_no_response", "no response"),
            ("hangup", "HTTP request failed"),
        ] {
            let r = within(peer.request(method, NO_PARAMS)).await;
            let e = transport_error(r, says);
            assert!(e.to_string().contains(says), "round {round}, {method}: {e}");
            still_works(&peer).await;
        }
    }
    assert_eq!(peer.stats().in_flight, 0);
    // Every POST after `initialize` names the session the fake gave and the version its result
    // named; `notifications/initialized` went before the first request after it.
    let heads = fake.heads();
    assert!(!heads[0].contains("mcp-session-id"), "{}", heads[0]);
    for head in &heads[1..] {
        assert!(head.contains("\r\nmcp-session-id: fake-session\r\n"), "{head}");
        assert!(head.contains("\r\nmcp-protocol-version: 2025-11-25\r\n"), "{head}");
    }
    let bodies = fake.bodies();
    let at = |m: &str| bodies.iter().position(|b| b["method"] == m);
    assert!(at("notifications/initialized") < at("http500"), "{bodies:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_closes_every_connection_at_once_fails_each_request() {
    let closing = ByHand::start(|sock| async move { drop(sock) }).await;
    let (peer, _conn) = connect(&PeerBuilder::new(), &closing.url, NoHandler).unwrap();
    let init = within(peer.request("initialize", Some(RawJson::new(INIT_PARAMS)))).await;
    transport_error(init, "HTTP request failed");
    for _ in 0..3 {
        transport_error(within(peer.request("ping", NO_PARAMS)).await, "HTTP request failed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_fails_each_request() {
    // A port that was just free, and that nothing listens on now.
    let port = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (peer, _conn) = connect(&PeerBuilder::new(), &url, NoHandler).unwrap();
    let init = within(peer.request("initialize", Some(RawJson::new(INIT_PARAMS)))).await;
    let e = transport_error(init, "cannot connect");
    assert!(matches!(e, TransportError::Connect(_)), "{e:?}");
    // A notification that cannot be sent does not stop the requests after it.
    within(peer.notify("notifications/initialized", NO_PARAMS)).await.unwrap();
    for _ in 0..3 {
        transport_error(within(peer.request("ping", NO_PARAMS)).await, "cannot connect");
    }
    assert!(!peer.is_closed());
}

/// The order check without a peer on the other side: the fake keeps the POST bodies as they
/// arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_and_requests_are_posted_in_the_order_they_were_sent() {
    let (fake, peer, _conn) = fake_client().await;
    for k in 0..50 {
        within(peer.notify("notifications/order", Some(Json(&json!({ "k": k }))))).await.unwrap();
        within(peer.request("order", Some(Json(&json!({ "k": k }))))).await.unwrap();
    }
    let order: Vec<(String, u64)> = fake
        .bodies()
        .into_iter()
        .filter(|b| b["method"].as_str().is_some_and(|m| m.ends_with("order")))
        .map(|b| (b["method"].as_str().unwrap().to_owned(), b["params"]["k"].as_u64().unwrap()))
        .collect();
    let want: Vec<(String, u64)> = (0..50)
        .flat_map(|k| [("notifications/order".to_owned(), k), ("order".to_owned(), k)])
        .collect();
    assert_eq!(order, want);
}

/// A request that times out is cancelled, and its POST, which the server never answers, must
/// end with it: else each holds one of the client's POST slots for good, and past
/// `max_concurrent_posts` of them the client sends nothing at all (its cancellations included).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_the_server_never_answers_free_their_slots_when_their_requests_time_out() {
    let fake = Fake::start().await;
    let builder = PeerBuilder::new().request_timeout(Some(Duration::from_millis(200)));
    let client = HttpClient::new(builder).max_concurrent_posts(2);
    let (peer, _conn) = client.connect(&fake.server.url, NoHandler).unwrap();
    handshake(&peer).await;
    for i in 0..5 {
        let r = within(peer.request("never", Some(Json(&json!({ "i": i }))))).await;
        assert!(matches!(r, Err(RequestError::Timeout)), "never {i}: {r:?}");
    }
    let options = RequestOptions::new().timeout(Some(Duration::from_secs(5)));
    let r = within(peer.request_with("ok", NO_PARAMS, options)).await.unwrap();
    assert_eq!(r.result_as::<Value>().unwrap(), json!({ "method": "ok" }));
    // `ok` went after the cancellations queued before it were taken: the fake has them all.
    let bodies = fake.bodies();
    let of = |method: &str, field: fn(&Value) -> Value| -> Vec<Value> {
        bodies.iter().filter(|b| b["method"] == method).map(field).collect()
    };
    let never = of("never", |b| b["id"].clone());
    let cancelled = of("notifications/cancelled", |b| b["params"]["requestId"].clone());
    assert_eq!(never.len(), 5, "{bodies:?}");
    assert_eq!(cancelled, never, "{bodies:?}");
}

/// The response came in the event stream and the server keeps the stream open: the request
/// is done, and its POST must end there, or it keeps its slot as long as the server wants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_kept_open_after_the_response_does_not_keep_its_post() {
    let fake = Fake::start().await;
    let client = HttpClient::new(PeerBuilder::new()).max_concurrent_posts(1);
    let (peer, _conn) = client.connect(&fake.server.url, NoHandler).unwrap();
    handshake(&peer).await;
    let options = RequestOptions::new().timeout(Some(Duration::from_secs(5)));
    for round in 0..3 {
        let r = within(peer.request_with("sse_kept_open", NO_PARAMS, options.clone())).await;
        let r = r.unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(r.result_as::<Value>().unwrap(), json!({ "method": "sse_kept_open" }));
    }
    let r = within(peer.request_with("ok", NO_PARAMS, options)).await.unwrap();
    assert_eq!(r.result_as::<Value>().unwrap(), json!({ "method": "ok" }));
}

/// A 404 to a message that named the session means the server ended it: the client forgets
/// it, the next `initialize` names no session (nor a version) and starts a new one, and the
/// new session gets a GET stream of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_404_to_the_session_the_next_initialize_starts_a_new_one() {
    let (fake, peer, _conn) = fake_client().await;
    eventually("the GET stream was asked for", || fake.gets.load(Ordering::SeqCst) == 1).await;
    let e = transport_error(within(peer.request("gone", NO_PARAMS)).await, "404");
    assert!(matches!(e, TransportError::SessionLost(_)), "{e:?}");
    handshake(&peer).await;
    eventually("a GET stream for the new session", || fake.gets.load(Ordering::SeqCst) == 2).await;
    still_works(&peer).await;
    let heads = fake.heads();
    let bodies = fake.bodies();
    let inits: Vec<_> =
        bodies.iter().enumerate().filter(|(_, b)| b["method"] == "initialize").collect();
    assert_eq!(inits.len(), 2, "{bodies:?}");
    let again = inits[1].0;
    assert!(!heads[again].contains("mcp-session-id"), "{}", heads[again]);
    assert!(!heads[again].contains("mcp-protocol-version"), "{}", heads[again]);
    // What follows names the new session.
    for head in &heads[again + 1..] {
        assert!(head.contains("\r\nmcp-session-id: fake-session\r\n"), "{head}");
    }
}

/// Every POST names its host once: the URL's by default, or the caller's own `Host` (a virtual
/// host behind a proxy) in its place, never both; other headers of the caller's ride along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_header_is_sent_once_the_callers_own_in_place_of_the_urls() {
    let fake = Fake::start().await;
    let port =
        fake.server.url.split(':').nth(2).and_then(|p| p.split('/').next()).unwrap().to_owned();
    let (peer, _conn) = connect(&PeerBuilder::new(), &fake.server.url, NoHandler).unwrap();
    handshake(&peer).await;
    still_works(&peer).await;
    let named = |heads: &[String], host: &str| {
        for head in heads {
            assert_eq!(head.matches("\r\nhost: ").count(), 1, "{head}");
            assert!(head.contains(&format!("\r\nhost: {host}\r\n")), "{head}");
        }
    };
    named(&fake.heads(), &format!("127.0.0.1:{port}"));

    let fake = Fake::start().await;
    let (peer, _conn) = HttpClient::new(PeerBuilder::new())
        .header(http::header::HOST, http::HeaderValue::from_static("mcp.example"))
        .header(http::HeaderName::from_static("x-tenant"), http::HeaderValue::from_static("blue"))
        .connect(&fake.server.url, NoHandler)
        .unwrap();
    handshake(&peer).await;
    still_works(&peer).await;
    let heads = fake.heads();
    assert!(heads.len() >= 3, "{heads:?}");
    named(&heads, "mcp.example");
    assert!(heads.iter().all(|h| h.contains("\r\nx-tenant: blue\r\n")), "{heads:?}");
}

/// Counts the progress notifications it is handed.
#[derive(Clone, Default)]
struct Progress(Arc<AtomicUsize>);

impl Handler for Progress {
    async fn request(&self, req: &Incoming, _: &Context) -> Result<Reply, RpcError> {
        Err(RpcError::method_not_found(req.method()))
    }

    async fn notification(&self, n: &Incoming, _: &Context) {
        if n.method() == "notifications/progress" {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The progress a request's event stream carries before its response reaches the client's
/// handler before the caller has the response: the response, which would otherwise go straight
/// to its waiter from the exchange, follows the notifications through the connection's task.
/// On one thread the exchange runs in the caller's task, and all three events come in one
/// read: a response that overtook them would reach the caller before the connection's task had
/// run at all.
#[tokio::test]
async fn progress_before_a_response_reaches_the_handler_before_the_caller_has_the_response() {
    let fake = Fake::start().await;
    let handler = Progress::default();
    let (peer, _conn) = connect(&PeerBuilder::new(), &fake.server.url, handler.clone()).unwrap();
    handshake(&peer).await;
    for k in 1..=20 {
        let r = within(peer.request("progress_first", NO_PARAMS)).await.unwrap();
        assert_eq!(r.result().unwrap().get(), "{}");
        assert_eq!(handler.0.load(Ordering::SeqCst), 2 * k, "after request {k}");
    }
}

/// A response alone goes straight to its waiter, on one thread as on many, and the peer counts
/// its bytes as read.
#[tokio::test]
async fn a_response_alone_completes_its_request_and_is_counted_as_read() {
    let (_fake, peer, _conn) = fake_client().await;
    let before = peer.stats().bytes_read;
    for _ in 0..20 {
        still_works(&peer).await;
    }
    let one = r#"{"jsonrpc":"2.0","id":0,"result":{"method":"ok"}}"#.len() as u64;
    assert!(peer.stats().bytes_read >= before + 20 * one, "{:?}", peer.stats());
}
