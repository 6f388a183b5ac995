//! The server under test, its handler, and the HTTP clients that drive it.

pub(crate) use std::convert::Infallible;
pub(crate) use std::net::SocketAddr;
pub(crate) use std::sync::Arc;
pub(crate) use std::time::{Duration, Instant};

pub(crate) use bytes::Bytes;
pub(crate) use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
pub(crate) use http_body_util::combinators::BoxBody;
pub(crate) use http_body_util::{BodyExt, Empty, Full, StreamBody};
pub(crate) use hyper::body::Incoming as ResponseBody;
pub(crate) use hyper::client::conn::http1::SendRequest;
pub(crate) use hyper_util::rt::TokioIo;
pub(crate) use mcpwire::http::{HttpServer, SESSION_HEADER, VERSION_HEADER};
pub(crate) use mcpwire::mcp::LEGACY_VERSIONS;
pub(crate) use mcpwire::peer::{
    Context, Handler, Incoming, NO_PARAMS, PeerBuilder, Reply, RequestError, RpcError,
};
pub(crate) use mcpwire::{Json, Limits};
pub(crate) use serde_json::{Value, json};
pub(crate) use tokio::io::{AsyncReadExt, AsyncWriteExt};
pub(crate) use tokio::net::TcpStream;
pub(crate) use tokio::sync::{Semaphore, oneshot};
pub(crate) use tokio::time::timeout;

pub(crate) use crate::common::{ServedHttp, serve_http};

/// Bound for anything that should happen promptly; only a broken server reaches it.
pub(crate) const WAIT: Duration = Duration::from_secs(5);

/// What a conforming client sends in `Accept` on a POST.
pub(crate) const BOTH: &str = "application/json, text/event-stream";

/// The version under which a session may take batches.
pub(crate) const BATCHES: &str = "2025-03-26";

/// A version without batches.
pub(crate) const NO_BATCHES: &str = "2025-06-18";

/// JSON-RPC and MCP error codes the server answers with.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const INTERNAL_ERROR: i64 = -32603;
pub(crate) const SERVER_ERROR: i64 = -32000;
pub(crate) const SESSION_NOT_FOUND: i64 = -32001;

// ---------------------------------------------------------------------------------------------
// The handler under the server.

/// A small MCP handler: `initialize` agrees to the offered version when it is one of
/// [`LEGACY_VERSIONS`] (else the latest), and fails without one; `ping`; `echo` answers its
/// params; `slow` sends `steps` progress notifications for its `_meta.progressToken` before it
/// answers; `announce` sends a notification that answers no request (it goes to the GET stream);
/// `hold` answers only once the test releases it (`announce_hold` sends a notification first);
/// `late` answers at once and sends a notification 100 ms later from a task of its own; `ask` sends the client a `roots/list` request
/// and answers `{"answer": result}` or `{"failed": {"code", "message"}}` with what came back;
/// `poll` sends `before` progress notifications, closes its POST's event stream
/// (`close_sse_stream`), then (with `hold`) waits to be released like `hold`, sends `after`
/// more, and answers `{"polled": true}`.
#[derive(Clone)]
pub(crate) struct Probe {
    /// A permit for each `hold` request that has started.
    pub(crate) holding: Arc<Semaphore>,
    /// Each `hold` request takes one permit before it answers.
    pub(crate) release: Arc<Semaphore>,
}

impl Probe {
    pub(crate) fn new() -> Self {
        Self { holding: Arc::new(Semaphore::new(0)), release: Arc::new(Semaphore::new(0)) }
    }

    /// Waits until one more `hold` request runs.
    pub(crate) async fn held(&self) {
        let started = timeout(WAIT, self.holding.acquire()).await;
        started.expect("the hold request runs").unwrap().forget();
    }
}

impl Handler for Probe {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        let params = || req.params_as::<Value>().map_err(RpcError::invalid_params);
        match req.method() {
            "initialize" => {
                let p = params()?;
                let offered = p["protocolVersion"]
                    .as_str()
                    .ok_or_else(|| RpcError::invalid_params("protocolVersion is required"))?;
                let agreed = LEGACY_VERSIONS
                    .iter()
                    .find(|v| **v == offered)
                    .unwrap_or(&LEGACY_VERSIONS[LEGACY_VERSIONS.len() - 1]);
                Reply::json(&json!({
                    "protocolVersion": agreed,
                    "capabilities": {},
                    "serverInfo": {"name": "probe", "version": "1"},
                }))
            }
            "ping" => Ok(Reply::empty()),
            "echo" => Ok(Reply::raw(req.params().map_or("null", |p| p.get()))),
            "slow" => {
                let p = params()?;
                let steps = p["steps"].as_u64().unwrap_or(1);
                let token = &p["_meta"]["progressToken"];
                if !token.is_null() {
                    for i in 1..=steps {
                        let note = json!({"progressToken": token, "progress": i, "total": steps});
                        cx.peer()
                            .notify("notifications/progress", Some(Json(&note)))
                            .await
                            .map_err(|e| RpcError::internal(e.to_string()))?;
                    }
                }
                Reply::json(&json!({"steps": steps}))
            }
            // Unrelated to the request: what a session's GET stream carries.
            "announce" => {
                let note = json!({"level": "info", "logger": "probe", "data": params()?});
                cx.peer()
                    .unrelated()
                    .notify("notifications/message", Some(Json(&note)))
                    .await
                    .map_err(|e| RpcError::internal(e.to_string()))?;
                Ok(Reply::empty())
            }
            "late" => {
                // A task that keeps the handler's handle and speaks after the answer.
                let peer = cx.peer().clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let note = json!({"level": "info", "logger": "probe", "data": "late"});
                    let _ = peer.notify("notifications/message", Some(Json(&note))).await;
                });
                Ok(Reply::empty())
            }
            "hold" | "announce_hold" => {
                if req.method() == "announce_hold" {
                    let note = json!({"level": "info", "logger": "probe", "data": "holding"});
                    cx.peer()
                        .notify("notifications/message", Some(Json(&note)))
                        .await
                        .map_err(|e| RpcError::internal(e.to_string()))?;
                }
                self.holding.add_permits(1);
                let permit =
                    self.release.acquire().await.map_err(|e| RpcError::internal(e.to_string()))?;
                permit.forget();
                Reply::json(&json!({"released": true}))
            }
            "poll" => {
                let p = params()?;
                let token = p["_meta"]["progressToken"].clone();
                let count = |k: &str| p[k].as_u64().unwrap_or(0);
                let (before, after) = (count("before"), count("after"));
                let progress = |i: u64| {
                    let note = json!({"progressToken": token, "progress": i});
                    async move {
                        cx.peer()
                            .notify("notifications/progress", Some(Json(&note)))
                            .await
                            .map_err(|e| RpcError::internal(e.to_string()))
                    }
                };
                for i in 1..=before {
                    progress(i).await?;
                }
                mcpwire::http::close_sse_stream(cx);
                if p["hold"] == true {
                    self.holding.add_permits(1);
                    let permit = self
                        .release
                        .acquire()
                        .await
                        .map_err(|e| RpcError::internal(e.to_string()))?;
                    permit.forget();
                }
                for i in before + 1..=before + after {
                    progress(i).await?;
                }
                Reply::json(&json!({"polled": true}))
            }
            // `ask` on the GET stream, `ask_related` on the request's own stream.
            "ask" | "ask_related" => match if req.method() == "ask" {
                cx.peer().unrelated().request("roots/list", NO_PARAMS).await
            } else {
                cx.peer().request("roots/list", NO_PARAMS).await
            } {
                Ok(r) => {
                    let answer: Value =
                        r.result_as().map_err(|e| RpcError::internal(e.to_string()))?;
                    Reply::json(&json!({"answer": answer}))
                }
                Err(RequestError::Rpc(e)) => {
                    Reply::json(&json!({"failed": {"code": e.code.0, "message": e.message}}))
                }
                Err(e) => Err(RpcError::internal(e.to_string())),
            },
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The server on a socket.

/// A server serving on a loopback port until the value is dropped (or the test's runtime ends).
pub(crate) struct Served {
    pub(crate) addr: SocketAddr,
    pub(crate) server: HttpServer,
    pub(crate) probe: Probe,
    pub(crate) _serving: ServedHttp,
}

pub(crate) async fn serve(server: HttpServer) -> Served {
    serve_with(server, |probe| probe).await
}

/// [`serve`] with each session's (and stateless peer's) handler made from the probe by `make`.
pub(crate) async fn serve_with<H, F>(server: HttpServer, make: F) -> Served
where
    H: Handler,
    F: Fn(Probe) -> H + Send + Sync + 'static,
{
    let probe = Probe::new();
    let make = {
        let probe = probe.clone();
        move || make(probe.clone())
    };
    let serving = serve_http(server.clone(), make).await;
    Served { addr: serving.addr, server, probe, _serving: serving }
}

/// The process's resident memory, in KiB (Linux); panics where it cannot be read, so that no
/// bound on its growth passes by reading 0.
pub(crate) fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status")
        .expect("/proc/self/status, where the resident memory is read");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS in /proc/self/status")
}

pub(crate) async fn serve_default() -> Served {
    serve(HttpServer::new(PeerBuilder::new())).await
}

// ---------------------------------------------------------------------------------------------
// The client: one kept-alive HTTP/1.1 connection.

pub(crate) type Body = BoxBody<Bytes, Infallible>;

pub(crate) fn full(body: impl Into<Bytes>) -> Body {
    Full::new(body.into()).boxed()
}

pub(crate) fn empty() -> Body {
    Empty::new().boxed()
}

/// A body of unknown length, so hyper sends it with `Transfer-Encoding: chunked`.
pub(crate) fn chunked(parts: Vec<Bytes>) -> Body {
    let frames = parts.into_iter().map(|b| Ok(hyper::body::Frame::data(b)));
    StreamBody::new(futures::stream::iter(frames)).boxed()
}

/// One TCP connection, and the session and version it names in its requests.
pub(crate) struct Client {
    pub(crate) send: SendRequest<Body>,
    pub(crate) addr: SocketAddr,
    pub(crate) session: Option<String>,
    pub(crate) version: Option<String>,
    /// Sent as `Authorization: Bearer` with every request.
    pub(crate) token: Option<String>,
}

impl Client {
    pub(crate) async fn connect(addr: SocketAddr) -> Self {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Self { send, addr, session: None, version: None, token: None }
    }

    /// A client on a fresh connection that has initialized a session under `version`.
    pub(crate) async fn session(addr: SocketAddr, version: &str) -> Self {
        let mut c = Self::connect(addr).await;
        let a = c.initialize(version).await;
        assert_eq!(a.status, StatusCode::OK, "initialize: {a:?}");
        let a = c.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "notifications/initialized: {a:?}");
        c
    }

    /// A client on a fresh connection naming the same session and version.
    pub(crate) async fn beside(&self) -> Self {
        let mut c = Self::connect(self.addr).await;
        c.session.clone_from(&self.session);
        c.version.clone_from(&self.version);
        c.token.clone_from(&self.token);
        c
    }

    /// On a connection of its own, POSTs request `id` to the `hold` method with this `accept`,
    /// and returns once the handler runs; the task ends with the POST's answer.
    pub(crate) async fn hold(
        &self,
        probe: &Probe,
        id: i64,
        accept: &'static str,
    ) -> tokio::task::JoinHandle<Answer> {
        let mut side = self.beside().await;
        let held = tokio::spawn(async move {
            let req = side
                .to(Method::POST)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, accept)
                .body(full(request(id, "hold")))
                .unwrap();
            side.call(req).await
        });
        probe.held().await;
        held
    }

    /// A request to the endpoint naming the client's session and version.
    pub(crate) fn to(&self, method: Method) -> http::request::Builder {
        let mut b = Request::builder()
            .method(method)
            .uri("/mcp")
            .header(header::HOST, self.addr.to_string());
        if let Some(s) = &self.session {
            b = b.header(SESSION_HEADER, s);
        }
        if let Some(v) = &self.version {
            b = b.header(VERSION_HEADER, v);
        }
        if let Some(t) = &self.token {
            b = b.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        b
    }

    /// A POST of `body` with the headers a conforming client sends.
    pub(crate) fn post_of(&self, body: impl AsRef<[u8]>) -> Request<Body> {
        self.to(Method::POST)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, BOTH)
            .body(full(Bytes::copy_from_slice(body.as_ref())))
            .unwrap()
    }

    pub(crate) async fn send(&mut self, req: Request<Body>) -> Response<ResponseBody> {
        let sent = async {
            self.send.ready().await?;
            self.send.send_request(req).await
        };
        timeout(WAIT, sent).await.expect("response headers in time").expect("a response")
    }

    pub(crate) async fn call(&mut self, req: Request<Body>) -> Answer {
        let r = self.send(req).await;
        Answer::read(r).await
    }

    pub(crate) async fn post(&mut self, body: impl AsRef<[u8]>) -> Answer {
        let req = self.post_of(body);
        self.call(req).await
    }

    /// `initialize` offering `version`; keeps the session id and the agreed version it gets.
    pub(crate) async fn initialize(&mut self, version: &str) -> Answer {
        let body = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}},
        });
        let a = self.post(body.to_string()).await;
        if a.status == StatusCode::OK {
            self.session = a.header(SESSION_HEADER).map(str::to_owned);
            self.version = a.json()["result"]["protocolVersion"].as_str().map(str::to_owned);
        }
        a
    }

    /// `ping` with `id`, which must be answered 200 with `{}` for that id.
    pub(crate) async fn ping_ok(&mut self, id: i64) {
        let a = self.post(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    }

    /// Opens the session's GET stream.
    pub(crate) async fn open_stream(&mut self) -> Response<ResponseBody> {
        let req = self.to(Method::GET).header(header::ACCEPT, "text/event-stream").body(empty());
        let r = self.send(req.unwrap()).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(content_type(r.headers()), Some("text/event-stream"));
        r
    }
}

/// A response read whole.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answer")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &String::from_utf8_lossy(&self.body))
            .finish()
    }
}

impl Answer {
    pub(crate) async fn read(r: Response<ResponseBody>) -> Self {
        let (parts, body) = r.into_parts();
        let body = timeout(WAIT, body.collect()).await.expect("the body in time").unwrap();
        Self { status: parts.status, headers: parts.headers, body: body.to_bytes() }
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// The body as one JSON value; the content type must say so.
    pub(crate) fn json(&self) -> Value {
        assert_eq!(content_type(&self.headers), Some("application/json"), "{self:?}");
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    /// The body as Server-Sent Events, each event's data as JSON; the content type must say so.
    pub(crate) fn events(&self) -> Vec<Value> {
        assert_eq!(content_type(&self.headers), Some("text/event-stream"), "{self:?}");
        sse_events(std::str::from_utf8(&self.body).unwrap())
    }

    /// Asserts an error answer: `status`, a JSON-RPC error response with `code` and `id`.
    #[track_caller]
    pub(crate) fn assert_error(&self, status: StatusCode, code: i64, id: Value) {
        assert_eq!(self.status, status, "{self:?}");
        let v = self.json();
        assert_eq!(v["jsonrpc"], "2.0", "{self:?}");
        assert_eq!(v["error"]["code"], code, "{self:?}");
        assert!(v["error"]["message"].is_string(), "{self:?}");
        assert_eq!(v["id"], id, "{self:?}");
        assert!(v.get("result").is_none(), "{self:?}");
    }

    /// Asserts a status with no body and no content type.
    #[track_caller]
    pub(crate) fn assert_empty(&self, status: StatusCode) {
        assert_eq!(self.status, status, "{self:?}");
        assert!(self.body.is_empty(), "{self:?}");
        assert_eq!(content_type(&self.headers), None, "{self:?}");
    }
}

pub(crate) fn content_type(h: &HeaderMap) -> Option<&str> {
    h.get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap())
}

/// The data of each event in `text` (comments and blank events skipped), as JSON.
pub(crate) fn sse_events(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for event in text.split("\n\n").filter(|e| !e.trim().is_empty()) {
        let mut data = String::new();
        for line in event.lines() {
            if let Some(d) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(d.strip_prefix(' ').unwrap_or(d));
            } else {
                assert!(
                    line.starts_with(':')
                        || line.starts_with("event: ")
                        || line.starts_with("id: ")
                        || line.starts_with("retry: "),
                    "unexpected SSE line {line:?} in {text:?}"
                );
            }
        }
        if !data.is_empty() {
            out.push(serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data:?}")));
        }
    }
    out
}

/// The next event carrying data on an open stream.
pub(crate) async fn next_event(body: &mut ResponseBody, buf: &mut String) -> Value {
    loop {
        if let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            if let Some(v) = sse_events(&event).pop() {
                return v;
            }
            continue;
        }
        read_more(body, buf).await;
    }
}

/// Appends the stream's next frame of data to `buf` (within `WAIT`; the stream must stay open).
pub(crate) async fn read_more(body: &mut ResponseBody, buf: &mut String) {
    let frame = timeout(WAIT, body.frame())
        .await
        .expect("an event in time")
        .expect("the stream is still open")
        .unwrap();
    if let Ok(data) = frame.into_data() {
        buf.push_str(std::str::from_utf8(&data).unwrap());
    }
}

pub(crate) fn request(id: i64, method: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#)
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP/1.1, for exact bytes.

/// Reads one response off `s`: status, head, and a body of its `Content-Length`.
pub(crate) async fn read_raw_response(
    s: &mut (impl tokio::io::AsyncRead + Unpin),
) -> (u16, String, Vec<u8>) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "EOF before a whole response head: {:?}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let status = head[9..12].parse().unwrap();
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<usize>().unwrap())
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "EOF inside a response body");
        body.extend_from_slice(&chunk[..n]);
    }
    (status, head, body)
}

/// An `echo` request of exactly `len` bytes.
pub(crate) fn echo_of_len(id: i64, len: usize) -> String {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"echo","params":{{"pad":""#);
    let tail = r#""}}"#;
    let pad = len.checked_sub(head.len() + tail.len()).expect("room for the envelope");
    let body = format!("{head}{}{tail}", "x".repeat(pad));
    assert_eq!(body.len(), len);
    body
}

pub(crate) fn cancel(id: i64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
    )
}

/// How long these tests wait for what a correct server does at once.
pub(crate) const SHORT: Duration = Duration::from_secs(1);

/// Asserts the end of a POST whose request was cancelled, for a client that takes event
/// streams: an event stream with no event.
#[track_caller]
pub(crate) fn assert_no_response(a: &Answer) {
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.events(), Vec::<Value>::new(), "{a:?}");
}

/// Opens the session's GET stream, then POSTs request `id` to `ask` on a connection of its own:
/// returns that POST's task, the `roots/list` the handler sent on the stream, and the stream
/// (kept open while the test runs).
pub(crate) async fn ask_over_the_stream(
    c: &Client,
    id: i64,
) -> (tokio::task::JoinHandle<Answer>, Value, (Client, ResponseBody)) {
    let mut g = c.beside().await;
    let mut stream = g.open_stream().await.into_body();
    let mut buf = String::new();
    let mut asker = c.beside().await;
    let asked = tokio::spawn(async move { asker.post(request(id, "ask")).await });
    let e = next_event(&mut stream, &mut buf).await;
    assert_eq!(e["method"], "roots/list", "{e}");
    (asked, e, (g, stream))
}
