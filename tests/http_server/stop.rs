//! The stop: a stateless (2026-07-28) request held in its handler when `serve` stops is ended by
//! the stop (its POST gets -32603 with the request's id, 200 as for any error the table does not
//! map) and `serve` returns without waiting out its grace, over HTTP/1.1 and HTTP/2, on a peer
//! started for it (no idle peer left by an earlier request); so is one whose body is still
//! arriving at the stop (no peer starts that the stop never reaches); and a connection whose
//! client stops reading its answer does not outlive `serve`.

use hyper_util::rt::TokioExecutor;

use crate::harness::*;

const MODERN: &str = "2026-07-28";

/// Well under the server's 5 s shutdown grace: a stop that waits the grace out fails.
const PROMPT: Duration = Duration::from_secs(3);

/// `tools/call` of `park`: parks for ever (after saying so); any other tool answers at once.
#[derive(Clone)]
struct Parked(Arc<tokio::sync::Notify>);

impl Handler for Parked {
    async fn request(&self, req: &Incoming, _: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "tools/call" => {
                let p = req.params_as::<Value>().map_err(RpcError::invalid_params)?;
                if p["name"] == "park" {
                    self.0.notify_one();
                    std::future::pending::<()>().await;
                }
                Reply::json(&json!({"content": []}))
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

struct Running {
    addr: SocketAddr,
    parked: Arc<tokio::sync::Notify>,
    stop: oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start() -> Running {
    let parked = Arc::new(tokio::sync::Notify::new());
    let (addr, stop, serving) = serve_stoppable(Parked(parked.clone())).await;
    Running { addr, parked, stop, serving }
}

/// `serve` with `handler` until the sender is used (or dropped).
async fn serve_stoppable<H: Handler + Clone>(
    handler: H,
) -> (SocketAddr, oneshot::Sender<()>, tokio::task::JoinHandle<std::io::Result<()>>) {
    let s = serve_http(HttpServer::new(PeerBuilder::new()), move || handler.clone()).await;
    (s.addr, s.stop, s.task)
}

/// The stateless `tools/call` of `park`, id 7.
fn park(uri: String) -> Request<Body> {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "park", "arguments": {},
                                 "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                           "io.modelcontextprotocol/clientCapabilities": {}}}});
    Request::post(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, BOTH)
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "park")
        .body(full(body.to_string()))
        .unwrap()
}

/// Stops the server while `held` (the parked POST) waits, and checks both end promptly.
async fn stop_while_parked(r: Running, held: tokio::task::JoinHandle<Answer>) {
    timeout(WAIT, r.parked.notified()).await.expect("the tool call parks");
    r.stop.send(()).unwrap();
    let answer = timeout(PROMPT, held).await.expect("the parked POST is ended by the stop");
    answer.unwrap().assert_error(StatusCode::OK, INTERNAL_ERROR, json!(7));
    let served = timeout(PROMPT, r.serving).await.expect("serve returns without its grace");
    served.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_stateless_request_is_ended_by_the_stop_over_http1() {
    let r = start().await;
    let mut c = Client::connect(r.addr).await;
    let req = park(format!("http://{}/mcp", r.addr));
    let held = tokio::spawn(async move { c.call(req).await });
    stop_while_parked(r, held).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_stateless_request_is_ended_by_the_stop_over_http2() {
    let r = start().await;
    let tcp = TcpStream::connect(r.addr).await.unwrap();
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .expect("an HTTP/2 handshake");
    tokio::spawn(conn);
    let req = park(format!("http://{}/mcp", r.addr));
    let held = tokio::spawn(async move {
        let response = send.send_request(req).await.expect("a response");
        assert_eq!(response.version(), http::Version::HTTP_2);
        Answer::read(response).await
    });
    stop_while_parked(r, held).await;
}

/// A stateless request that came just before the stop (its head read, its body still on the
/// way) reaches its peer only after the stop ended the stateless peers: it is answered as one
/// that came after (503, -32000, with its id), not left running where no stop reaches it.
#[tokio::test]
async fn a_stateless_request_whose_body_ends_after_the_stop_is_answered_503() {
    let r = start().await;
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "park", "arguments": {},
                                 "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                           "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let (first, rest) = body.split_at(10);
    let mut tcp = TcpStream::connect(r.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: {BOTH}\r\n\
         MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: park\r\n\
         Content-Length: {}\r\n\r\n{first}",
        r.addr,
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    // The head is taken in (past the stop's check) before the stop; on this one-thread runtime
    // the serve task, once woken, ends the stateless peers before it next yields.
    tokio::time::sleep(Duration::from_millis(200)).await;
    r.stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    tcp.write_all(rest.as_bytes()).await.unwrap();
    let (status, _, answer) =
        timeout(PROMPT, read_raw_response(&mut tcp)).await.expect("the POST is answered");
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&answer));
    let v: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!((&v["id"], &v["error"]["code"]), (&json!(7), &json!(-32000)), "{v}");
    let served = timeout(PROMPT, r.serving).await.expect("serve returns without its grace");
    served.unwrap().unwrap();
}

/// A tool answering with `BIG` bytes of text.
#[derive(Clone)]
struct Big;

const BIG: usize = 32 << 20;

/// How long the `BIG` answer may take to begin (a hang past it fails the test).
const BIG_ANSWER_BEGINS: Duration = Duration::from_secs(60);

impl Handler for Big {
    async fn request(&self, _: &Incoming, _: &Context) -> Result<Reply, RpcError> {
        Reply::json(&json!({"content": [{"type": "text", "text": "x".repeat(BIG)}]}))
    }
}

/// A client that stops reading its answer holds its connection's graceful close open for ever:
/// after the stop, the connection is dropped once the shutdown grace has passed, and `serve`
/// returns after it, with no connection task left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_whose_client_does_not_read_is_dropped_after_the_stop_grace() {
    let (addr, stop, serving) = serve_stoppable(Big).await;
    let mut sock = TcpStream::connect(addr).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "big", "arguments": {},
                                 "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                           "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nMCP-Protocol-Version: {MODERN}\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: big\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    sock.write_all(format!("{head}{body}").as_bytes()).await.unwrap();
    // The answer fills the socket's buffers; nothing reads it. Making 32 MiB of text and its
    // JSON takes a debug build seconds on a loaded machine: the bound is for a hang only.
    let mut first = [0u8; 1];
    timeout(BIG_ANSWER_BEGINS, sock.read_exact(&mut first))
        .await
        .expect("the answer begins")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let stopped = std::time::Instant::now();
    stop.send(()).unwrap();
    let grace = mcpwire::limits::SHUTDOWN_GRACE;
    let served = timeout(grace + Duration::from_secs(5), serving).await.expect("serve returns");
    served.unwrap().unwrap();
    let took = stopped.elapsed();
    assert!(took >= grace - Duration::from_millis(500), "serve returned after {took:?}");

    // The connection was dropped part way: what is left to read ends well short of the answer.
    let mut read = 1usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match timeout(WAIT, sock.read(&mut buf)).await.expect("the connection ends") {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    assert!(read < BIG, "read {read} bytes: the whole answer was written after the stop");
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
