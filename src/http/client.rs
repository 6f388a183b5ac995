//! The Streamable HTTP client transport: a peer whose messages go out as POSTs to one endpoint
//! and whose incoming messages are the answers (JSON bodies, or Server-Sent Events), plus an
//! optional GET stream for the server's own messages.
//!
//! Requests are POSTed concurrently, each on a connection of the pool (HTTP/1.1, kept alive).
//! Notifications and responses are POSTed one at a time, in order, and a request waits until
//! the notifications queued before it were accepted, so the server sees
//! `notifications/initialized` before the requests that follow it. The session id from the
//! `initialize` answer, and the protocol version of its result, go on every later message; the
//! session is deleted when the connection closes.
//!
//! A request the server does not answer with a response (an HTTP error, a 202, a connection
//! failure) completes with an error response carrying its id, -32603, whose message says what
//! happened; the peer goes on.
//!
//! **Resumption** (legacy requests; MCP's "Resumability and Redelivery", SEP-1699): when a
//! request's event stream ends, or breaks, before its response came, having given an event id
//! (a priming event suffices), the client waits the stream's `retry` time (1 s when it gave
//! none, at most 60 s), then resumes it with a GET carrying `Last-Event-ID` and the session,
//! and reads that answer as it would have read the POST's. A resumed stream that ends again
//! without the response is resumed again (the server polls); three failed attempts in a row
//! (no connection, a 5xx, a broken stream) end the request with an error, and so does a 4xx
//! (the server cannot resume it; a 404 also forgets the session). The request's own timeout
//! bounds the whole. A stream that gave no event id is not resumed.
//!
//! **Modern requests** (2026-07-28 on: `params._meta` names a protocol version, as
//! [`crate::mcp::client`] writes them) are stateless: each POST carries the headers
//! [`crate::mcp::headers::mirror`] derives from its body (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, and `Mcp-Param-*` for the tool arguments annotated `x-mcp-header`), and never a
//! session id. The annotations are learnt from the `tools/list` results the transport carries;
//! a tool whose annotations are invalid is left out of the result the peer sees, with a
//! warning naming it and why. A 4xx whose body is a JSON-RPC error reaches the peer as that
//! error, with the request's id (so the caller sees -32022, -32020 or -32601, and can retry or
//! tell the eras apart). No GET stream is opened and no DELETE sent; a cancellation is the end
//! of the request's POST, and `notifications/cancelled` is not POSTed. Messages without a
//! modern `_meta` go as described above: one connection can probe with a modern request and
//! fall back to `initialize`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming as HyperBody;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::codec::Decoder;

use super::{SESSION_HEADER, VERSION_HEADER, negotiated_version};
use crate::limits::CLIENT_INBOX as INBOX;
pub use crate::limits::DEFAULT_MAX_CONCURRENT_POSTS;
use crate::limits::ORDERED_POST_TIMEOUT;
use crate::limits::{DEFAULT_RESUME_DELAY, MAX_RESUME_DELAY, RESUME_FAILURES};
use crate::mcp::annotations::{ToolHeaders, param_headers};
use crate::mcp::meta::RequestParams;
use crate::peer::{Async, AsyncOutlet, Connection, Handler, PeerBuilder, PeerHandle, Sent};
use crate::{
    ErrorCode, Frame, FrameParser, Json, Kind, Limits, Outgoing, OwnedId, RawJson, SseDecoder,
};

/// How long closing waits for the server to take the session's DELETE.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long an idle pooled connection is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(20);

/// The most of an HTTP error's body kept for the error message.
const ERROR_BODY_KEPT: usize = 512;

/// How a Streamable HTTP client connection is set up.
///
/// # Examples
///
/// ```no_run
/// use mcpwire::http::HttpClient;
/// use mcpwire::peer::{NoHandler, PeerBuilder, NO_PARAMS};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (peer, _conn) = HttpClient::new(PeerBuilder::new())
///     .connect("http://127.0.0.1:3001/mcp", NoHandler)?;
/// let init = r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}"#;
/// peer.request("initialize", Some(mcpwire::RawJson::new(init))).await.unwrap();
/// peer.notify("notifications/initialized", NO_PARAMS).await.unwrap();
/// # std::io::Result::Ok(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct HttpClient {
    peer: PeerBuilder,
    headers: Vec<(HeaderName, HeaderValue)>,
    get_stream: bool,
    max_posts: usize,
}

/// Opens a Streamable HTTP connection to `url` with the defaults of [`HttpClient`].
///
/// # Errors
///
/// When `url` is not an `http://` URL.
pub fn connect<H: Handler>(
    builder: &PeerBuilder,
    url: &str,
    handler: H,
) -> std::io::Result<(PeerHandle, Connection)> {
    HttpClient::new(builder.clone()).connect(url, handler)
}

impl HttpClient {
    /// A client whose peer is made by `peer` (its frame limit also bounds each answer).
    #[must_use]
    pub fn new(peer: PeerBuilder) -> Self {
        Self {
            peer,
            headers: Vec::new(),
            get_stream: true,
            max_posts: DEFAULT_MAX_CONCURRENT_POSTS,
        }
    }

    /// A header sent with every HTTP request (an `Authorization`, say).
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Whether to open the GET stream for the server's own messages once initialized (`true`
    /// by default; a server that answers 405 is fine).
    #[must_use]
    pub fn get_stream(mut self, open: bool) -> Self {
        self.get_stream = open;
        self
    }

    /// POSTs in flight at once; past it the peer's writer waits.
    /// [`DEFAULT_MAX_CONCURRENT_POSTS`] by default.
    #[must_use]
    pub fn max_concurrent_posts(mut self, n: usize) -> Self {
        self.max_posts = n.max(1);
        self
    }

    /// Starts a peer talking to the endpoint at `url`. Nothing is sent until the peer sends:
    /// start with `initialize`. Must be called inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// When `url` is not an `http://` URL (TLS is not built in).
    pub fn connect<H: Handler>(
        &self,
        url: &str,
        handler: H,
    ) -> std::io::Result<(PeerHandle, Connection)> {
        let uri: Uri = url.parse().map_err(|e| invalid(format!("{url}: {e}")))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(invalid(format!("{url}: only http://HOST[:PORT]/PATH URLs are supported")));
        }
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(self.max_posts)
            // Under the 30 s a server such as ours keeps an idle connection.
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .build(connector);
        let (inject, rx) = mpsc::channel::<Frame>(INBOX);
        let frames = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|f| (Ok(f), rx))
        });
        let (ordered, ordered_rx) = mpsc::channel::<Frame>(INBOX);
        let (acked, acked_rx) = watch::channel(0u64);
        let ctx = Arc::new(Ctx {
            client,
            uri,
            headers: self.headers.clone(),
            session: RwLock::new(None),
            version: RwLock::new(None),
            inject,
            limits: self.peer.limits,
            get_stream: self.get_stream,
            get_task: Mutex::new(None),
            get_started: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            posts: Mutex::new(std::collections::HashMap::new()),
            acked: acked_rx,
            tools: RwLock::new(ToolHeaders::new()),
            modern: RwLock::new(None),
        });
        let worker = tokio::spawn(ordered_worker(ctx.clone(), ordered_rx, acked));
        let poster = Poster {
            ctx,
            parser: FrameParser::new(
                Limits::default()
                    .max_frame_bytes(crate::limits::MAX_FRAME_BYTES_CEILING)
                    .max_depth(usize::MAX / 2),
            ),
            slots: Arc::new(Semaphore::new(self.max_posts)),
            ordered: Some(ordered),
            queued: AtomicU64::new(0),
            worker: Some(worker),
        };
        Ok(self.peer.spawn_parts(frames, Async::new(poster), Arc::new(handler)))
    }
}

fn invalid(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
}

struct Ctx {
    client: Client<HttpConnector, Full<Bytes>>,
    uri: Uri,
    headers: Vec<(HeaderName, HeaderValue)>,
    session: RwLock<Option<HeaderValue>>,
    version: RwLock<Option<HeaderValue>>,
    inject: mpsc::Sender<Frame>,
    limits: Limits,
    get_stream: bool,
    get_task: Mutex<Option<JoinHandle<()>>>,
    get_started: AtomicBool,
    /// Set once the outlet is gone: no GET stream is opened any more.
    closed: AtomicBool,
    /// The POST of each request in flight, so a cancellation of ours can end it.
    posts: Mutex<std::collections::HashMap<OwnedId, tokio::task::AbortHandle>>,
    /// How many ordered messages the server has taken.
    acked: watch::Receiver<u64>,
    /// The `x-mcp-header` annotations of the tools listed so far (modern requests).
    tools: RwLock<ToolHeaders>,
    /// The version of the last modern request, until an `initialize`: while set, the client
    /// speaks the modern era.
    modern: RwLock<Option<HeaderValue>>,
}

/// How a request's answer is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `initialize`: its result names the version.
    Initialize,
    /// Any other request without a modern `_meta`.
    Legacy,
    /// A modern request; `tools/list` when `tools`.
    Modern { tools: bool },
}

impl Ctx {
    /// An HTTP request to the endpoint. Every message but `initialize` (`fresh`) names the
    /// session and the negotiated version.
    fn request(&self, method: Method, body: Bytes, fresh: bool) -> Request<Full<Bytes>> {
        let mut b = Request::builder()
            .method(method)
            .uri(self.uri.clone())
            .header(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        if !body.is_empty() {
            b = b.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if !fresh {
            if let Some(s) = self.session.read().unwrap_or_else(PoisonError::into_inner).clone() {
                b = b.header(SESSION_HEADER, s);
            }
            if let Some(v) = self.version.read().unwrap_or_else(PoisonError::into_inner).clone() {
                b = b.header(VERSION_HEADER, v);
            }
        }
        for (k, v) in &self.headers {
            b = b.header(k, v);
        }
        b.body(Full::new(body)).expect("a request of valid parts")
    }

    /// Hands a frame to the peer's connection task; `false` once it has ended.
    async fn inject(&self, frame: Frame) -> bool {
        self.inject.send(frame).await.is_ok()
    }

    /// Completes the request `id` with an error response saying why no response came.
    async fn fail(&self, id: &OwnedId, why: &str) {
        self.fail_with(id, ErrorCode::INTERNAL_ERROR, why, None).await;
    }

    /// Completes the request `id` with an error response.
    async fn fail_with(&self, id: &OwnedId, code: ErrorCode, why: &str, data: Option<RawJson<'_>>) {
        let mut out = BytesMut::new();
        let msg: Outgoing<'_> = Outgoing::Error { id: id.as_id(), code, message: why, data };
        if msg.write_value(&mut out).is_ok() {
            self.inject(FrameParser::new(self.limits).parse(out)).await;
        }
    }

    /// A modern `tools/list` result as the peer sees it: each listed tool's `x-mcp-header`
    /// annotations learnt, and the tools whose annotations are invalid left out, each with a
    /// warning. The frame is rewritten only when a tool is left out.
    fn learn_tools(&self, frame: Frame) -> Frame {
        let Some(m) = frame.message() else { return frame };
        let (Some(result), Some(id)) = (m.result(), m.id()) else { return frame };
        let Ok(mut list) = serde_json::from_str::<serde_json::Value>(result.get()) else {
            return frame;
        };
        let Some(tools) = list.get_mut("tools").and_then(serde_json::Value::as_array_mut) else {
            return frame;
        };
        let before = tools.len();
        {
            let mut known = self.tools.write().unwrap_or_else(PoisonError::into_inner);
            tools.retain(|tool| {
                let Some(name) = tool.get("name").and_then(serde_json::Value::as_str) else {
                    return true;
                };
                match tool.get("inputSchema").map_or(Ok(Vec::new()), param_headers) {
                    Ok(params) => {
                        known.insert(name, params);
                        true
                    }
                    Err(reason) => {
                        tracing::warn!(
                            tool = name,
                            %reason,
                            "tools/list: a tool with invalid x-mcp-header annotations is left out"
                        );
                        known.insert(name, Vec::new());
                        false
                    }
                }
            });
        }
        if tools.len() == before {
            return frame;
        }
        let mut out = BytesMut::new();
        let reply: Outgoing<'_, Json<'_, serde_json::Value>> =
            Outgoing::Result { id, result: Json(&list) };
        if reply.write_value(&mut out).is_err() {
            return frame;
        }
        FrameParser::new(self.limits).parse(out)
    }

    /// Takes the session id an answer names (a new `initialize` replaces the old one), and
    /// forgets the session on a 404 to a message that named it: the server ended it, and the
    /// next `initialize` starts a new one.
    fn remember_session(
        &self,
        resp: &http::Response<HyperBody>,
        initialize: bool,
        named: Option<&HeaderValue>,
    ) {
        let mut cur = self.session.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(named) = named
            && resp.status() == StatusCode::NOT_FOUND
        {
            // Only the session this message named: a new one may have begun meanwhile.
            if cur.as_ref() == Some(named) {
                *cur = None;
                *self.version.write().unwrap_or_else(PoisonError::into_inner) = None;
                self.stop_get_stream();
            }
            return;
        }
        if let Some(s) = resp.headers().get(SESSION_HEADER)
            && (cur.is_none() || initialize)
            && cur.as_ref() != Some(s)
        {
            if cur.is_some() {
                // A new session replaces the old: its GET stream is opened afresh.
                self.stop_get_stream();
            }
            *cur = Some(s.clone());
        }
    }

    /// The session a message names now, if any.
    fn session(&self) -> Option<HeaderValue> {
        self.session.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Stops the GET stream, so the next `notifications/initialized` opens one again.
    fn stop_get_stream(&self) {
        let old = self.get_task.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(old) = old {
            old.abort();
        }
        self.get_started.store(false, Ordering::Release);
    }

    /// Reads an answer's body: one JSON message, or a stream of events (whose last event id
    /// and `retry` go into `cursor`). Returns whether a response to `expect` was among them.
    async fn take_answer(
        &self,
        resp: http::Response<HyperBody>,
        expect: Option<&OwnedId>,
        mode: Mode,
        cursor: &mut Cursor,
    ) -> Result<bool, String> {
        let initialize = mode == Mode::Initialize;
        let sse = resp.headers().get(CONTENT_TYPE).is_some_and(|v| {
            v.to_str()
                .is_ok_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
        });
        cursor.sse = sse;
        let mut answered = false;
        // Whether `frame` is the response expected; an `initialize` result names the version.
        let take = |frame: &Frame| {
            let Some(m) = frame.message() else { return false };
            let is = expect.is_some_and(|k| {
                matches!(m.kind(), Kind::Response | Kind::Error)
                    && m.id().and_then(OwnedId::from_id).as_ref() == Some(k)
            });
            if is
                && initialize
                && m.kind() == Kind::Response
                && let Some(v) = negotiated_version(&m)
                && let Ok(v) = HeaderValue::from_str(&v)
            {
                *self.version.write().unwrap_or_else(PoisonError::into_inner) = Some(v);
            }
            is
        };
        let ok = resp.status().is_success();
        let body = resp.into_body();
        if sse {
            let mut decoder = SseDecoder::new(self.limits);
            let outcome = self.take_events(body, &mut decoder, expect, mode, take).await;
            cursor.read(&decoder);
            return outcome;
        }
        let bytes = Limited::new(body, self.limits.frame_bytes())
            .collect()
            .await
            .map_err(|e| format!("reading the answer failed: {e}"))?
            .to_bytes();
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(false);
        }
        let frame = FrameParser::new(self.limits).parse(BytesMut::from(bytes.clone()));
        if frame.kind() == Kind::Invalid {
            // Not a message from the server (an error page, a proxy's body): say so in the
            // request's error, never hand it to the peer, which would answer it -32700.
            let kept = &bytes[..bytes.len().min(ERROR_BODY_KEPT)];
            return Err(format!(
                "the answer is not a JSON-RPC message: {}",
                String::from_utf8_lossy(kept)
            ));
        }
        let is = take(&frame);
        answered |= is;
        if let Mode::Modern { tools } = mode {
            if is && tools && ok {
                self.inject(self.learn_tools(frame)).await;
                return Ok(true);
            }
            // A modern server's 4xx carries the JSON-RPC error of the request it refused; one
            // that could not read the id says `null`: either way it is this request's error.
            if !ok
                && !is
                && let Some(m) = frame.message()
                && let Some(e) = m.error()
                && let Some(id) = expect
            {
                self.fail_with(id, ErrorCode(e.code), e.message, e.data).await;
                return Ok(true);
            }
        }
        if !ok && !answered {
            // An HTTP error whose body answers no request of ours (`"id": null`): its message
            // goes into the request's error; the peer is not handed a response to nothing.
            let m = frame.message();
            let why = m.as_ref().and_then(crate::Message::error).map(|e| e.message.to_owned());
            return Err(why.unwrap_or_else(|| "the answer is not a response".into()));
        }
        self.inject(frame).await;
        Ok(answered)
    }

    /// Reads an event stream, handing each message to the peer; returns whether a response to
    /// `expect` was among them (`is` says which is), and stops reading once it was.
    async fn take_events(
        &self,
        mut body: HyperBody,
        decoder: &mut SseDecoder,
        expect: Option<&OwnedId>,
        mode: Mode,
        is: impl Fn(&Frame) -> bool,
    ) -> Result<bool, String> {
        let mut answered = false;
        let mut buf = BytesMut::new();
        loop {
            let chunk = match body.frame().await {
                None => None,
                Some(Ok(f)) => f.into_data().ok(),
                Some(Err(e)) => return Err(format!("the event stream failed: {e}")),
            };
            let end = match chunk {
                Some(c) => {
                    buf.extend_from_slice(&c);
                    false
                }
                None => true,
            };
            loop {
                let event =
                    if end { decoder.decode_eof(&mut buf) } else { decoder.decode(&mut buf) };
                match event {
                    Ok(Some(ev)) => {
                        let mut frame = ev.into_frame();
                        let it = is(&frame);
                        answered |= it;
                        if it && mode == (Mode::Modern { tools: true }) {
                            frame = self.learn_tools(frame);
                        }
                        // The stream has done its work once the response came: a server
                        // that keeps it open must not keep this request's POST slot.
                        if !self.inject(frame).await || (expect.is_some() && answered) {
                            return Ok(answered);
                        }
                    }
                    Ok(None) => break,
                    Err(e) => return Err(format!("the event stream failed: {e}")),
                }
            }
            if end {
                return Ok(answered);
            }
        }
    }

    /// Resumes the event stream that was to carry the response to request `id` (a legacy
    /// POST's, which ended before the response came), as the specification's "Resumability
    /// and Redelivery" says: after the stream's `retry` time (or [`DEFAULT_RESUME_DELAY`]), a
    /// GET with `Last-Event-ID`, read like the POST's answer. A resumed stream that ends
    /// without the response (the server polls) is resumed again; [`RESUME_FAILURES`] failed
    /// attempts in a row (no connection, a 5xx, a broken stream) end it, and so does a 4xx (the
    /// server cannot resume it; a 404 also ends the session). The request's own timeout bounds
    /// the whole.
    async fn resume(&self, id: &OwnedId, mode: Mode, cursor: &mut Cursor) -> Result<bool, String> {
        let Some(session) = self.session() else {
            return Err("the event stream ended before the response, with no session to resume \
                        it in"
                .into());
        };
        let mut failures = 0;
        loop {
            tokio::time::sleep(cursor.delay()).await;
            if self.closed.load(Ordering::Acquire) {
                return Err("the connection closed while the event stream was resumed".into());
            }
            if self.session().as_ref() != Some(&session) {
                return Err("the session ended before the event stream was resumed".into());
            }
            let Ok(last) = HeaderValue::from_str(&cursor.last_id) else {
                return Err(format!("the event id {:?} cannot be sent back", cursor.last_id));
            };
            let mut req = self.request(Method::GET, Bytes::new(), false);
            req.headers_mut().insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            req.headers_mut().insert(LAST_EVENT_ID, last);
            let why = match self.client.request(req).await {
                Ok(resp) if resp.status() == StatusCode::OK => {
                    match self.take_answer(resp, Some(id), mode, cursor).await {
                        Ok(true) => return Ok(true),
                        Ok(false) if !cursor.sse => {
                            return Err("resuming the event stream got no event stream".into());
                        }
                        // Ended again before the response: the server polls.
                        Ok(false) => {
                            failures = 0;
                            continue;
                        }
                        Err(e) => e,
                    }
                }
                Ok(resp) if resp.status().is_client_error() => {
                    self.remember_session(&resp, false, Some(&session));
                    let status = resp.status();
                    let body = Limited::new(resp.into_body(), ERROR_BODY_KEPT).collect();
                    let body = tokio::time::timeout(DELETE_TIMEOUT, body).await;
                    let text = body.ok().and_then(Result::ok).map(|b| b.to_bytes());
                    let frame =
                        text.map(|t| FrameParser::new(self.limits).parse(BytesMut::from(t)));
                    let m = frame.as_ref().and_then(Frame::message);
                    let msg =
                        m.as_ref().and_then(crate::Message::error).map(|e| e.message.to_owned());
                    return Err(format!(
                        "resuming the event stream was refused with {status}{}",
                        msg.map(|m| format!(": {m}")).unwrap_or_default()
                    ));
                }
                Ok(resp) => format!("resuming the event stream got {}", resp.status()),
                Err(e) => format!("resuming the event stream failed: {e}"),
            };
            failures += 1;
            if failures >= RESUME_FAILURES {
                return Err(why);
            }
            tracing::debug!(error = %why, "resuming an event stream failed; trying again");
        }
    }

    /// Opens the GET stream once, if asked for.
    fn start_get_stream(self: &Arc<Self>) {
        let mut slot = self.get_task.lock().unwrap_or_else(PoisonError::into_inner);
        if !self.get_stream
            || self.closed.load(Ordering::Acquire)
            || self.get_started.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let ctx = self.clone();
        let task = tokio::spawn(async move {
            let mut req = ctx.request(Method::GET, Bytes::new(), false);
            req.headers_mut().insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            match ctx.client.request(req).await {
                Ok(resp) if resp.status() == StatusCode::OK => {
                    let mut cursor = Cursor::default();
                    if let Err(e) = ctx.take_answer(resp, None, Mode::Legacy, &mut cursor).await {
                        tracing::debug!(error = %e, "the GET stream ended");
                    }
                }
                Ok(resp) => tracing::debug!(status = %resp.status(), "no GET stream"),
                Err(e) => tracing::debug!(error = %e, "the GET stream failed"),
            }
        });
        if let Some(old) = slot.replace(task) {
            old.abort();
        }
    }
}

/// The header a client resuming an event stream names the last event it got in.
const LAST_EVENT_ID: &str = "last-event-id";

/// Where the client is in one of the server's event streams: what resuming it takes.
#[derive(Debug, Default)]
struct Cursor {
    /// Whether the answer was an event stream.
    sse: bool,
    /// The last event id the stream gave; empty when it gave none.
    last_id: String,
    /// The stream's reconnection time in milliseconds, from its last `retry` field.
    retry: Option<u64>,
}

impl Cursor {
    /// Takes what a decoder read of the stream (a later connection's id replaces the earlier).
    fn read(&mut self, decoder: &SseDecoder) {
        let id = decoder.last_event_id();
        if !id.is_empty() && id != self.last_id {
            id.clone_into(&mut self.last_id);
        }
        if decoder.retry().is_some() {
            self.retry = decoder.retry();
        }
    }

    /// Whether the stream can be resumed: it gave an event id.
    fn resumable(&self) -> bool {
        self.sse && !self.last_id.is_empty()
    }

    /// How long to wait before resuming: the stream's `retry`, bounded.
    fn delay(&self) -> Duration {
        self.retry.map_or(DEFAULT_RESUME_DELAY, Duration::from_millis).min(MAX_RESUME_DELAY)
    }
}

/// The headers a modern request carries, or `None` for a request without a modern `_meta`.
fn modern_headers(
    ctx: &Ctx,
    frame: &Frame,
) -> Option<Result<(http::HeaderMap, Mode), crate::mcp::meta::Rejection>> {
    // Legacy requests are not parsed again: they cannot name the key.
    memchr::memmem::find(frame.as_bytes(), crate::mcp::PROTOCOL_VERSION_KEY.as_bytes())?;
    let m = frame.message()?;
    let meta = RequestParams::of(&m).ok()?.meta().ok()??;
    if !meta.is_modern() {
        return None;
    }
    let mut headers = http::HeaderMap::new();
    let tools = ctx.tools.read().unwrap_or_else(PoisonError::into_inner);
    Some(
        crate::mcp::headers::mirror(&m, Some(&tools), &mut headers)
            .map(|()| (headers, Mode::Modern { tools: m.method() == Some("tools/list") })),
    )
}

/// POSTs one request and hands its answer to the peer.
async fn post_request(ctx: Arc<Ctx>, frame: Frame, id: OwnedId, after: u64) {
    // Notifications sent before this request are taken first.
    let mut acked = ctx.acked.clone();
    if *acked.borrow() < after && acked.wait_for(|n| *n >= after).await.is_err() {
        return;
    }
    let modern = match modern_headers(&ctx, &frame) {
        None => None,
        Some(Ok(h)) => Some(h),
        Some(Err(e)) => {
            let data = e.data.as_deref().map(RawJson::new);
            return ctx.fail_with(&id, e.code, &e.message, data).await;
        }
    };
    let initialize = frame.method() == Some("initialize");
    if initialize {
        *ctx.modern.write().unwrap_or_else(PoisonError::into_inner) = None;
    }
    let (req, mode, named) = match modern {
        Some((headers, mode)) => {
            let version = headers.get(crate::mcp::headers::PROTOCOL_VERSION);
            let known =
                ctx.modern.read().unwrap_or_else(PoisonError::into_inner).as_ref() == version;
            if !known {
                *ctx.modern.write().unwrap_or_else(PoisonError::into_inner) = version.cloned();
            }
            // No session and no legacy version header: the mirrored ones say it all.
            let mut req = ctx.request(Method::POST, frame.into_bytes(), true);
            req.headers_mut().extend(headers);
            (req, mode, None)
        }
        None => {
            let named = if initialize { None } else { ctx.session() };
            let req = ctx.request(Method::POST, frame.into_bytes(), initialize);
            (req, if initialize { Mode::Initialize } else { Mode::Legacy }, named)
        }
    };
    let resp = match ctx.client.request(req).await {
        Ok(r) => r,
        Err(e) => return ctx.fail(&id, &format!("the HTTP request failed: {e}")).await,
    };
    if !matches!(mode, Mode::Modern { .. }) {
        ctx.remember_session(&resp, initialize, named.as_ref());
    }
    let status = resp.status();
    let mut cursor = Cursor::default();
    let mut outcome = ctx.take_answer(resp, Some(&id), mode, &mut cursor).await;
    // A legacy event stream that ended (or broke) before the response, having given an event
    // id: the server closed it to be polled, or the connection failed. Resumed with a GET.
    if cursor.resumable() && !matches!(mode, Mode::Modern { .. }) && !matches!(outcome, Ok(true)) {
        outcome = ctx.resume(&id, mode, &mut cursor).await;
    }
    match outcome {
        Ok(true) => {}
        Ok(false) if status.is_success() => {
            ctx.fail(&id, &format!("HTTP {status}: the server sent no response to the request"))
                .await;
        }
        Ok(false) => ctx.fail(&id, &format!("HTTP {status}")).await,
        Err(why) => ctx.fail(&id, &format!("HTTP {status}: {why}")).await,
    }
}

/// POSTs notifications and responses one at a time, in order.
async fn ordered_worker(ctx: Arc<Ctx>, mut rx: mpsc::Receiver<Frame>, acked: watch::Sender<u64>) {
    while let Some(frame) = rx.recv().await {
        let initialized = frame.method() == Some("notifications/initialized");
        let modern = ctx.modern.read().unwrap_or_else(PoisonError::into_inner).clone();
        let named = ctx.session();
        if modern.is_some() && frame.method() == Some("notifications/cancelled") {
            // The modern era cancels a request by ending its POST, which is done.
            acked.send_modify(|n| *n += 1);
            continue;
        }
        let method = frame.method().and_then(|m| HeaderValue::from_str(m).ok());
        let mut req = ctx.request(Method::POST, frame.into_bytes(), modern.is_some());
        if let Some(version) = modern {
            req.headers_mut().insert(crate::mcp::headers::PROTOCOL_VERSION, version);
            if let Some(method) = method {
                req.headers_mut().insert(crate::mcp::headers::METHOD, method);
            }
        }
        let sent = tokio::time::timeout(ORDERED_POST_TIMEOUT, ctx.client.request(req)).await;
        let Ok(sent) = sent else {
            tracing::warn!("a message was not taken within {ORDERED_POST_TIMEOUT:?}; going on");
            acked.send_modify(|n| *n += 1);
            continue;
        };
        match sent {
            Ok(resp) => {
                let status = resp.status();
                ctx.remember_session(&resp, false, named.as_ref());
                if status.is_success() {
                    if initialized {
                        ctx.start_get_stream();
                    }
                } else {
                    let body = Limited::new(resp.into_body(), ERROR_BODY_KEPT).collect();
                    let body = tokio::time::timeout(ORDERED_POST_TIMEOUT, body).await;
                    let text =
                        body.ok().and_then(Result::ok).map(|b| b.to_bytes()).unwrap_or_default();
                    tracing::warn!(%status, body = %String::from_utf8_lossy(&text), "a message was refused");
                }
            }
            Err(e) => tracing::warn!(error = %e, "a message could not be sent"),
        }
        acked.send_modify(|n| *n += 1);
    }
}

/// The peer's outlet: each message it writes becomes a POST.
struct Poster {
    ctx: Arc<Ctx>,
    parser: FrameParser,
    slots: Arc<Semaphore>,
    /// `None` once shutting down, which ends the worker after what was queued.
    ordered: Option<mpsc::Sender<Frame>>,
    /// Ordered messages queued so far.
    queued: AtomicU64,
    worker: Option<JoinHandle<()>>,
}

impl Drop for Poster {
    /// Whatever ends the connection's writing (a shutdown that was not let finish included) ends the
    /// tasks that feed the peer.
    fn drop(&mut self) {
        {
            let mut slot = self.ctx.get_task.lock().unwrap_or_else(PoisonError::into_inner);
            self.ctx.closed.store(true, Ordering::Release);
            if let Some(task) = slot.take() {
                task.abort();
            }
        }
        if let Some(worker) = self.worker.take() {
            worker.abort();
        }
        for (_, post) in self.ctx.posts.lock().unwrap_or_else(PoisonError::into_inner).drain() {
            post.abort();
        }
    }
}

impl AsyncOutlet for Poster {
    async fn send(&mut self, out: BytesMut, _: Vec<Sent>) -> std::io::Result<()> {
        let mut chunk = out;
        while !chunk.is_empty() {
            let end = memchr::memchr(b'\n', &chunk).map_or(chunk.len(), |i| i + 1);
            let mut line = chunk.split_to(end);
            if line.ends_with(b"\n") {
                line.truncate(line.len() - 1);
            }
            // A lone line ending is no message: a transport hint
            // (`close_sse_stream` from a handler of ours), which has no meaning here.
            if line.is_empty() {
                continue;
            }
            let frame = self.parser.parse(line);
            match frame.message().filter(|m| m.kind() == Kind::Request) {
                Some(m) => {
                    let id = m.id().and_then(OwnedId::from_id).expect("a request has an id");
                    let permit = self.slots.clone().acquire_owned().await.expect("never closed");
                    let after = self.queued.load(Ordering::Relaxed);
                    let ctx = self.ctx.clone();
                    let key = id.clone();
                    // Held until the task is in the table, so it cannot finish (and look for
                    // itself there) first.
                    let mut posts = self.ctx.posts.lock().unwrap_or_else(PoisonError::into_inner);
                    let task = tokio::spawn(async move {
                        post_request(ctx.clone(), frame, id.clone(), after).await;
                        let mut posts = ctx.posts.lock().unwrap_or_else(PoisonError::into_inner);
                        if posts.get(&id).is_some_and(|t| t.id() == tokio::task::id()) {
                            posts.remove(&id);
                        }
                        drop(permit);
                    });
                    posts.insert(key, task.abort_handle());
                }
                None => {
                    // Our cancellation of a request (its timeout, or the caller gave up) ends
                    // that request's POST: nothing waits for its answer any more, and its slot
                    // is free at once.
                    if let Some(id) = frame.message().and_then(|m| super::cancelled_request(&m)) {
                        let post = self
                            .ctx
                            .posts
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .remove(&id);
                        if let Some(post) = post {
                            post.abort();
                        }
                    }
                    self.queued.fetch_add(1, Ordering::Relaxed);
                    let sent = match &self.ordered {
                        Some(o) => o.send(frame).await.is_ok(),
                        None => false,
                    };
                    if !sent {
                        return Err(std::io::Error::other("the HTTP sender stopped"));
                    }
                }
            }
        }
        Ok(())
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        if let Some(task) = self.ctx.get_task.lock().unwrap_or_else(PoisonError::into_inner).take()
        {
            task.abort();
        }
        // What was queued before closing is POSTed, in order, before the DELETE (as
        // `PeerHandle::close` promises): closing the channel lets the worker finish and end.
        self.ordered = None;
        if let Some(worker) = self.worker.take() {
            let abort = worker.abort_handle();
            if tokio::time::timeout(DELETE_TIMEOUT, worker).await.is_err() {
                abort.abort();
            }
        }
        let session = self.ctx.session.read().unwrap_or_else(PoisonError::into_inner).clone();
        if session.is_some() {
            let req = self.ctx.request(Method::DELETE, Bytes::new(), false);
            let _ = tokio::time::timeout(DELETE_TIMEOUT, self.ctx.client.request(req)).await;
        }
        Ok(())
    }
}
