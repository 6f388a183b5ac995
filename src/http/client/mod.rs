//! The Streamable HTTP client transport: a peer whose messages go out as POSTs to one endpoint
//! and whose incoming messages are the answers (JSON bodies, or Server-Sent Events), plus an
//! optional GET stream for the server's own messages.
//!
//! Requests are POSTed concurrently, each on a connection of the pool (HTTP/1.1, kept alive).
//! A request's POST runs in the future that awaits it ([`PeerHandle::request`]): no task of its
//! own, and nothing through the connection's task; a response that comes alone, or first in
//! its event stream, completes the caller's wait from there. What comes before it in the
//! stream (progress, the server's requests) goes to the connection's task, and the response
//! then follows it there, so the handler has seen it before the caller has the response. A
//! request begun while a notification of ours is still queued goes behind it, through the
//! connection's task. Notifications and responses are POSTed one at a time, in order, and a
//! request waits until the notifications queued before it were accepted, so the server sees
//! `notifications/initialized` before the requests that follow it. The session id from the
//! `initialize` answer, and the protocol version of its result, go on every later message; the
//! session is deleted when the connection closes.
//!
//! A request the server does not answer with a response (an HTTP error, a 202, a connection
//! failure) fails with [`RequestError::Transport`](crate::peer::RequestError::Transport) saying
//! what happened ([`TransportError`]: connecting, TLS, the status, the session lost, a broken
//! exchange); the peer goes on.
//!
//! **Resumption** (legacy requests; MCP's "Resumability and Redelivery", SEP-1699): when a
//! request's event stream ends, or breaks, before its response came, having given an event id
//! (a priming event suffices), the client waits the stream's `retry` time (1 s when it gave
//! none, at most 60 s: [`HttpClient::max_resume_delay`]), then resumes it with a GET carrying `Last-Event-ID` and the session,
//! and reads that answer as it would have read the POST's. A resumed stream that ends again
//! without the response is resumed again (the server polls); three failed attempts in a row
//! (no connection, a 5xx, a broken stream; [`HttpClient::resume_failures`]) end the request
//! with an error, and so does a 4xx
//! (the server cannot resume it; a 404 also forgets the session). The request's own timeout
//! bounds the whole. A stream that gave no event id is not resumed.
//!
//! **Modern requests** (2026-07-28 on: `params._meta` names a protocol version, as
//! [`crate::client`] writes them) are stateless: each POST carries the headers
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

use crate::limits::DEFAULT_MAX_CONCURRENT_POSTS;
use crate::limits::DEFAULT_MAX_RESUME_DELAY;
use crate::limits::DEFAULT_RESUME_FAILURES;
use crate::sync::{Locked, RwLocked};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

#[cfg(feature = "tls")]
use crate::tls::ClientTls;
use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderName, HeaderValue};
use http::{Method, Request, Uri};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinHandle;

use super::dial::{Connector, Dialer};
use super::{SESSION_HEADER, VERSION_HEADER};
use crate::http::outlet::{Async, AsyncOutlet};
use crate::limits::CLIENT_INBOX as INBOX;
use crate::mcp::annotations::ToolHeaders;
use crate::peer::core::transmit::Sent;
use crate::peer::{
    ConnectionTask, Handler, PeerBuilder, PeerHandle, RequestFailer, TransportError,
};
use crate::{
    error::ErrorCode, limits::Limits, message::Frame, message::FrameParser, message::Kind,
    message::RawJson, message::encode::Outgoing, message::owned::OwnedId,
};

mod receive;
mod send;
mod session;

use send::{ordered_worker, post_request};

/// How long closing waits for the server to take the session's DELETE.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// The bounds our own messages are parsed with, on their way to a POST: they are ours, so
/// only the ceilings.
fn own_frames() -> Limits {
    Limits::default()
        .max_frame_bytes(crate::limits::MAX_FRAME_BYTES_CEILING)
        .max_depth(usize::MAX / 2)
}

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
    http2: bool,
    resume_failures: u32,
    max_resume_delay: Duration,
    #[cfg(feature = "tls")]
    tls: Option<ClientTls>,
    #[cfg(feature = "oauth")]
    oauth: Option<crate::auth::OAuth>,
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
) -> std::io::Result<(PeerHandle, ConnectionTask)> {
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
            http2: false,
            resume_failures: DEFAULT_RESUME_FAILURES,
            max_resume_delay: DEFAULT_MAX_RESUME_DELAY,
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }

    /// Authorizes with `oauth` when the server asks (a 401, or a 403 `insufficient_scope`):
    /// the request is sent again with the token, and every later one carries it.
    #[cfg(feature = "oauth")]
    #[must_use]
    pub fn oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// What an `https://` URL's server is checked against, and the certificate shown to it
    /// ([`ClientTls::builder`]'s defaults, the webpki roots, when not given). `http://` URLs
    /// ignore it.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, tls: ClientTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Failed attempts in a row (no connection, a 5xx, a broken stream) after which resuming a
    /// request's event stream is given up and the request fails. [`DEFAULT_RESUME_FAILURES`] by
    /// default; 0 is taken as 1.
    #[must_use]
    pub fn resume_failures(mut self, n: u32) -> Self {
        self.resume_failures = n.max(1);
        self
    }

    /// The longest wait before resuming an event stream, whatever `retry` the server gave.
    /// [`DEFAULT_MAX_RESUME_DELAY`] by default.
    #[must_use]
    pub fn max_resume_delay(mut self, max: Duration) -> Self {
        self.max_resume_delay = max;
        self
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

    /// Whether to speak HTTP/2 over cleartext with prior knowledge (no upgrade, no TLS; `false`
    /// by default, HTTP/1.1): one connection then carries every POST in flight and the GET
    /// stream, each on a stream of its own, as many at once as the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` lets (the others wait for a stream). The server must
    /// accept HTTP/2 with prior knowledge, as [`HttpServer`](crate::http::HttpServer) does on
    /// the port it serves HTTP/1.1 on.
    #[must_use]
    pub fn http2(mut self, on: bool) -> Self {
        self.http2 = on;
        self
    }

    /// Starts a peer talking to the endpoint at `url`. Nothing is sent until the peer sends:
    /// start with `initialize`. Must be called inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// When `url` is not an `http://` or `https://` URL (the latter needs the `tls` feature),
    /// or the default TLS configuration cannot be built.
    pub fn connect<H: Handler>(
        &self,
        url: &str,
        handler: H,
    ) -> std::io::Result<(PeerHandle, ConnectionTask)> {
        let uri: Uri = url.parse().map_err(|e| invalid(format!("{url}: {e}")))?;
        let secure = match uri.scheme_str() {
            Some("http") => false,
            Some("https") if cfg!(feature = "tls") => true,
            Some("https") => {
                return Err(invalid(format!("{url}: https:// needs mcpwire's `tls` feature")));
            }
            _ => None.ok_or_else(|| invalid(format!("{url}: expected http:// or https://")))?,
        };
        if uri.host().is_none() {
            return Err(invalid(format!("{url}: no host")));
        }
        let dialer = Dialer::new().https(secure).http2(self.http2).nodelay(true);
        #[cfg(feature = "tls")]
        let dialer = match &self.tls {
            Some(tls) => dialer.tls(tls.clone()),
            None => dialer,
        };
        let client = dialer
            .max_idle_per_host(self.max_posts)
            // Under the 30 s a server such as ours keeps an idle connection.
            .idle_timeout(POOL_IDLE_TIMEOUT)
            .client()?;
        let (inject, rx) = mpsc::channel::<Frame>(INBOX);
        let frames = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|f| (Ok(f), rx))
        });
        let (ordered, ordered_rx) = mpsc::channel::<Frame>(INBOX);
        let (acked, acked_rx) = watch::channel(0u64);
        let host = match (uri.host(), uri.port_u16()) {
            // A `Host` of the caller's own (`header`) is sent instead, once; over TLS the HTTP
            // client writes it (HTTP/2 carries the URL's authority instead).
            _ if secure || self.http2 || self.headers.iter().any(|(k, _)| k == HOST) => None,
            (Some(h), Some(p)) => HeaderValue::from_str(&format!("{h}:{p}")).ok(),
            (Some(h), None) => HeaderValue::from_str(h).ok(),
            (None, _) => None,
        };
        #[cfg(feature = "oauth")]
        let oauth = match &self.oauth {
            Some(o) => {
                let url = url::Url::parse(url).map_err(|e| invalid(format!("{url}: {e}")))?;
                Some((o.clone(), crate::auth::canonical_resource(&url), url))
            }
            None => None,
        };
        let ctx = Arc::new(Ctx {
            client,
            #[cfg(feature = "oauth")]
            oauth,
            host,
            uri,
            headers: self.headers.clone(),
            session: RwLock::new(None),
            version: RwLock::new(None),
            inject,
            limits: self.peer.limits,
            get_stream: self.get_stream,
            resume_failures: self.resume_failures,
            max_resume_delay: self.max_resume_delay,
            get_task: Mutex::new(None),
            get_started: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            posts: Mutex::new(std::collections::HashMap::new()),
            queued: AtomicU64::new(0),
            acked: acked_rx,
            tools: RwLock::new(ToolHeaders::new()),
            modern: RwLock::new(None),
            lost: AtomicBool::new(false),
            failer: std::sync::OnceLock::new(),
        });
        let worker = tokio::spawn(ordered_worker(ctx.clone(), ordered_rx, acked));
        let slots = Arc::new(Semaphore::new(self.max_posts));
        let poster = Poster {
            ctx: ctx.clone(),
            parser: FrameParser::new(own_frames()),
            slots: slots.clone(),
            ordered: Some(ordered),
            worker: Some(worker),
        };
        let (peer, connection) =
            self.peer.spawn_parts(frames, Async::new(poster), Arc::new(handler));
        let _ = ctx.failer.set(peer.failer());
        // Requests are POSTed from their callers' tasks (`send::Posts`).
        let _ = peer.shared.direct.set(Arc::new(send::Posts { ctx, slots }));
        Ok((peer, connection))
    }
}

fn invalid(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
}

struct Ctx {
    client: Client<Connector, Full<Bytes>>,
    uri: Uri,
    /// The OAuth client, and the server's canonical URI its tokens are kept under.
    #[cfg(feature = "oauth")]
    oauth: Option<(crate::auth::OAuth, String, url::Url)>,
    /// The `Host` header of every HTTP/1.1 request: the URL's host and port.
    host: Option<HeaderValue>,
    headers: Vec<(HeaderName, HeaderValue)>,
    session: RwLock<Option<HeaderValue>>,
    version: RwLock<Option<HeaderValue>>,
    inject: mpsc::Sender<Frame>,
    limits: Limits,
    get_stream: bool,
    /// Bounds on resuming an event stream ([`HttpClient::resume_failures`],
    /// [`HttpClient::max_resume_delay`]).
    resume_failures: u32,
    max_resume_delay: Duration,
    get_task: Mutex<Option<JoinHandle<()>>>,
    get_started: AtomicBool,
    /// Set once the outlet is gone: no GET stream is opened any more.
    closed: AtomicBool,
    /// The POST of each request in flight, so a cancellation of ours can end it.
    posts: Mutex<std::collections::HashMap<OwnedId, tokio::task::AbortHandle>>,
    /// Ordered messages queued so far.
    queued: AtomicU64,
    /// How many ordered messages the server has taken.
    acked: watch::Receiver<u64>,
    /// The `x-mcp-header` annotations of the tools listed so far (modern requests).
    tools: RwLock<ToolHeaders>,
    /// The version of the last modern request, until an `initialize`: while set, the client
    /// speaks the modern era.
    modern: RwLock<Option<HeaderValue>>,
    /// Set once the server ended the session, until a new one begins.
    lost: AtomicBool,
    /// Fails a request with a [`TransportError`] (set once the peer is started).
    failer: std::sync::OnceLock<RequestFailer>,
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
        // HTTP/1.1's `Host` given here, made once, spares the HTTP client writing it out for
        // each request (HTTP/2 carries the URL's authority instead).
        if let Some(host) = &self.host {
            b = b.header(HOST, host.clone());
        }
        if !body.is_empty() {
            b = b.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if !fresh {
            if let Some(s) = self.session.read_locked().clone() {
                b = b.header(SESSION_HEADER, s);
            }
            if let Some(v) = self.version.read_locked().clone() {
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

    /// Hands a response to one of our requests straight to its waiter, from this task (the
    /// connection's task is not involved); anything else, or once the peer is gone, goes to the
    /// connection's task. `false` once it has ended.
    async fn answer(&self, frame: Frame) -> bool {
        let Some(failer) = self.failer.get() else { return self.inject(frame).await };
        let mut frame = Some(frame);
        let handed = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(frame.take().map(|f| failer.deliver(f, cx.waker())))
        })
        .await;
        match handed {
            Some(Ok(())) => true,
            Some(Err(f)) => self.inject(f).await,
            None => false,
        }
    }

    /// Fails the request `id` with why no response came: a [`TransportError`] the caller
    /// sees as such (an error response of ours, -32603, once the peer is gone).
    async fn fail(&self, id: &OwnedId, why: TransportError) {
        if self.failer.get().is_some_and(|f| f.fail(id.as_id(), why.clone())) {
            return;
        }
        self.fail_with(id, ErrorCode::INTERNAL_ERROR, &why.to_string(), None).await;
    }

    /// Completes the request `id` with an error response.
    async fn fail_with(&self, id: &OwnedId, code: ErrorCode, why: &str, data: Option<RawJson<'_>>) {
        let mut out = BytesMut::new();
        let msg: Outgoing<'_> = Outgoing::Error { id: id.as_id(), code, message: why, data };
        if msg.write_value(&mut out).is_ok() {
            self.answer(FrameParser::new(self.limits).parse(out)).await;
        }
    }
}

/// The peer's outlet: each message it writes becomes a POST.
struct Poster {
    ctx: Arc<Ctx>,
    parser: FrameParser,
    slots: Arc<Semaphore>,
    /// `None` once shutting down, which ends the worker after what was queued.
    ordered: Option<mpsc::Sender<Frame>>,
    worker: Option<JoinHandle<()>>,
}

impl Drop for Poster {
    /// Whatever ends the connection's writing (a shutdown that was not let finish included) ends the
    /// tasks that feed the peer.
    fn drop(&mut self) {
        {
            let mut slot = self.ctx.get_task.locked();
            self.ctx.closed.store(true, Ordering::Release);
            if let Some(task) = slot.take() {
                task.abort();
            }
        }
        if let Some(worker) = self.worker.take() {
            worker.abort();
        }
        for (_, post) in self.ctx.posts.locked().drain() {
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
                    let after = self.ctx.queued.load(Ordering::Acquire);
                    let ctx = self.ctx.clone();
                    let key = id.clone();
                    // Held until the task is in the table, so it cannot finish (and look for
                    // itself there) first.
                    let mut posts = self.ctx.posts.locked();
                    let task = tokio::spawn(async move {
                        post_request(ctx.clone(), frame, id.clone(), after).await;
                        let mut posts = ctx.posts.locked();
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
                        let post = self.ctx.posts.locked().remove(&id);
                        if let Some(post) = post {
                            post.abort();
                        }
                    }
                    self.ctx.queued.fetch_add(1, Ordering::Release);
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
        if let Some(task) = self.ctx.get_task.locked().take() {
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
        let session = self.ctx.session.read_locked().clone();
        if session.is_some() {
            let req = self.ctx.request(Method::DELETE, Bytes::new(), false);
            let _ = tokio::time::timeout(DELETE_TIMEOUT, self.ctx.send(req)).await;
        }
        Ok(())
    }
}
