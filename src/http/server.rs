//! The Streamable HTTP server: one endpoint, a table of sessions, each with a peer of its own
//! running the host's [`Handler`].
//!
//! What each request gets, in the order it is checked:
//!
//! | request | answer |
//! |---|---|
//! | a request that arrives while `serve` is stopping (it ends the sessions, lets each connection finish the exchange under way, closes it, for up to 5 s, then returns) | 503, -32000 |
//! | a path other than the endpoint | 404 |
//! | a method other than POST, GET, DELETE | 405, with `Allow` |
//! | an `Origin` that is not loopback or allowed with `allow_origin` (DNS rebinding) | 403, -32000 |
//! | POST: `Content-Type` not `application/json` | 415, -32000 |
//! | POST: `Accept` with neither `application/json` nor `text/event-stream` (absent takes both) | 406, -32000 |
//! | POST: a `Content-Length` over `max_frame_bytes` | 413, -32600 |
//! | POST: no room for the body within `read_timeout` (bodies held past `max_body_bytes`) | 503, -32000 |
//! | GET: `get_stream(false)` / no `text/event-stream` in `Accept` | 405 / 406, -32000 |
//! | an `MCP-Protocol-Version` not supported (absent is fine) | 400, -32000 |
//! | a session id that is unknown, expired or deleted | 404, -32001 |
//! | GET or DELETE without a session id | 400, -32000 |
//! | POST: a body that does not arrive within `read_timeout` (headers that do not: the connection is closed) | 408, -32000 |
//! | POST: a chunked body that grows over `max_frame_bytes` | 413, -32600 |
//! | POST: a body that is not JSON / JSON that is not a message | 400, -32700 / -32600, with the reason |
//! | POST: `initialize` with a session id | 400, -32600 |
//! | POST: anything else without a session id | 400, -32000 |
//! | POST: a batch, unless the session negotiated 2025-03-26 | 400, -32600 |
//! | POST: a batch with invalid elements and no request (its answer could not be routed) | 400, -32600 |
//! | POST: a request whose id is already waiting in the session | 400, -32600 with that id |
//! | a new session past `max_sessions` (after idle and ended ones are removed) | 503, -32000 |
//! | POST: notifications and responses only | 202, no body |
//! | POST: a request | 200: the response as `application/json` (as one event of a `text/event-stream` for a client that takes only that); or a `text/event-stream` when progress for the request's `_meta.progressToken` comes first (and the client takes it): the progress events, then the response, then the stream ends |
//! | POST: a request the client then cancels (`notifications/cancelled`, alone or in a batch, even one that overtakes the request on another connection) | the POST ends with no response: an empty event stream (202 for a JSON-only client) |
//! | POST: a request whose session ends before it is answered | 200 with an error response, -32603 (404, -32001, if it ended before the request went in) |
//! | GET: a stream already open for the session | 409, -32000 |
//! | GET | 200, a `text/event-stream` of the session's other messages (notifications, the server's own requests), with a `: keep-alive` comment every 15 s |
//! | DELETE | 200; the session's peer closes (running handlers are dropped) |
//!
//! Every error body is a JSON-RPC error response with `"id": null` (or the request's id where it
//! could be read). `max_frame_bytes` is the sessions' [`Limits::max_frame_bytes`](crate::Limits::max_frame_bytes).

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{
    ACCEPT, ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, ORIGIN,
};
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::Incoming as HyperBody;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::session::{PostReceiver, Refused, Session};
use super::{
    BATCH_VERSION, Key, PROTOCOL_VERSIONS, SESSION_HEADER, VERSION_HEADER, cancelled_request,
    error_json, new_session_id, requested_progress, sse_event,
};
use crate::peer::{Handler, PeerBuilder};
use crate::{ErrorCode, Frame, FrameParser, Id, Kind};

/// Default for [`HttpServer::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// Default for [`HttpServer::session_idle_timeout`]: 10 minutes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Default for [`HttpServer::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// Default for [`HttpServer::max_body_bytes`]: 256 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// Default for [`HttpServer::read_timeout`]: 30 seconds.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long `serve` waits, once stopped, for its connections to finish what they are doing.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How often an open GET stream carries a comment, so a client that went away is noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The JSON-RPC code for "session not found", as the MCP SDKs answer it.
const SESSION_NOT_FOUND: ErrorCode = ErrorCode(-32001);

/// A server error with no more specific code.
const SERVER_ERROR: ErrorCode = ErrorCode(-32000);

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Counters of a running server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpStats {
    /// Sessions open now.
    pub sessions: usize,
    /// Sessions started since the server started.
    pub sessions_started: u64,
    /// Sessions removed for being idle too long, or because their peer had ended.
    pub sessions_expired: u64,
    /// Messages the sessions' handlers sent that had nowhere to go (no GET stream open, or the
    /// client stopped waiting), over the sessions open now.
    pub messages_dropped: u64,
}

/// A Streamable HTTP server. `Clone`: the clones share one session table.
///
/// # Examples
///
/// ```no_run
/// use mcpwire::http::HttpServer;
/// use mcpwire::peer::{Context, Handler, Incoming, PeerBuilder, Reply, RpcError};
///
/// struct Ping;
/// impl Handler for Ping {
///     async fn request(&self, req: &Incoming, _: &Context) -> Result<Reply, RpcError> {
///         match req.method() {
///             "initialize" => Ok(Reply::raw(r#"{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"ping","version":"1"}}"#)),
///             "ping" => Ok(Reply::empty()),
///             m => Err(RpcError::method_not_found(m)),
///         }
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// HttpServer::new(PeerBuilder::new()).serve(listener, || Ping, std::future::pending::<()>()).await
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct HttpServer {
    config: Arc<Config>,
    state: Arc<State>,
}

#[derive(Clone)]
struct Config {
    peer: PeerBuilder,
    path: String,
    allowed_origins: Vec<String>,
    versions: Vec<String>,
    max_sessions: usize,
    idle_timeout: Option<Duration>,
    max_connections: usize,
    max_body_bytes: usize,
    read_timeout: Duration,
    get_stream: bool,
}

#[derive(Default)]
struct State {
    /// Set once `serve` returns: connections still open get 503 and open no session.
    stopped: std::sync::atomic::AtomicBool,
    sessions: Mutex<HashMap<Box<str>, Arc<Session>>>,
    started: AtomicU64,
    expired: AtomicU64,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("path", &self.config.path)
            .field("sessions", &self.stats().sessions)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// A server whose sessions are peers made by `peer` (its limits bound each session; its
    /// frame limit also bounds a POST's body). Endpoint `/mcp`; only loopback origins allowed.
    #[must_use]
    pub fn new(peer: PeerBuilder) -> Self {
        Self {
            config: Arc::new(Config {
                peer,
                path: "/mcp".into(),
                allowed_origins: Vec::new(),
                versions: PROTOCOL_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
                max_sessions: DEFAULT_MAX_SESSIONS,
                idle_timeout: Some(DEFAULT_SESSION_IDLE_TIMEOUT),
                max_connections: DEFAULT_MAX_CONNECTIONS,
                max_body_bytes: DEFAULT_MAX_BODY_BYTES,
                read_timeout: DEFAULT_READ_TIMEOUT,
                get_stream: true,
            }),
            state: Arc::new(State::default()),
        }
    }

    fn config(&mut self) -> &mut Config {
        Arc::make_mut(&mut self.config)
    }

    /// The endpoint's path; `/mcp` by default.
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.config().path = path.into();
        self
    }

    /// Allows requests whose `Origin` is exactly `origin` (as `https://app.example`), besides
    /// the loopback origins (`http://localhost`, `http://127.0.0.1`, `http://[::1]`, any port),
    /// which are always allowed. A request with no `Origin` (not from a browser) is allowed.
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.config().allowed_origins.push(origin.into());
        self
    }

    /// The protocol versions accepted in `MCP-Protocol-Version`; [`PROTOCOL_VERSIONS`] by
    /// default.
    #[must_use]
    pub fn protocol_versions<I: IntoIterator<Item = S>, S: Into<String>>(mut self, v: I) -> Self {
        self.config().versions = v.into_iter().map(Into::into).collect();
        self
    }

    /// Sessions open at once; an `initialize` past it is answered 503 (after idle and ended
    /// sessions are removed). [`DEFAULT_MAX_SESSIONS`] by default; 0 is taken as 1.
    #[must_use]
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.config().max_sessions = n.max(1);
        self
    }

    /// A session with no request or stream open for this long ends (its id then gets 404);
    /// `None` keeps sessions until they are deleted. [`DEFAULT_SESSION_IDLE_TIMEOUT`] by
    /// default.
    #[must_use]
    pub fn session_idle_timeout(mut self, t: Option<Duration>) -> Self {
        self.config().idle_timeout = t;
        self
    }

    /// TCP connections served at once; past it the server stops accepting until one closes.
    /// [`DEFAULT_MAX_CONNECTIONS`] by default; 0 is taken as 1.
    #[must_use]
    pub fn max_connections(mut self, n: usize) -> Self {
        self.config().max_connections = n.max(1);
        self
    }

    /// Bytes of POST bodies the server holds at once, counted from before a body is read until
    /// its POST is answered (its `Content-Length`, or `max_frame_bytes` for a chunked body); a
    /// POST that finds no room within `read_timeout` is answered 503 without its body being
    /// read. With `max_connections` and each session's limits this bounds the server's memory.
    /// [`DEFAULT_MAX_BODY_BYTES`] by default; a single body always fits.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.config().max_body_bytes = bytes.clamp(1, Semaphore::MAX_PERMITS);
        self
    }

    /// How long a client may take to send a request's headers, and then a POST's body; past it
    /// the connection is closed (headers) or the POST answered 408 (body). It also bounds how
    /// long a kept-alive connection may sit idle between requests. [`DEFAULT_READ_TIMEOUT`] by
    /// default; at least 1 ms.
    #[must_use]
    pub fn read_timeout(mut self, t: Duration) -> Self {
        self.config().read_timeout = t.max(Duration::from_millis(1));
        self
    }

    /// Whether GET opens a stream of the server's other messages (`true` by default); without
    /// it GET is answered 405.
    #[must_use]
    pub fn get_stream(mut self, open: bool) -> Self {
        self.config().get_stream = open;
        self
    }

    /// The endpoint's path.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.config.path
    }

    /// The server's counters.
    #[must_use]
    pub fn stats(&self) -> HttpStats {
        let sessions = self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        HttpStats {
            sessions: sessions.len(),
            sessions_started: self.state.started.load(Ordering::Relaxed),
            sessions_expired: self.state.expired.load(Ordering::Relaxed),
            messages_dropped: sessions
                .values()
                .map(|s| s.stats.dropped.load(Ordering::Relaxed))
                .sum(),
        }
    }

    /// Serves `listener` until `stop` completes; each new session runs a handler from `make`.
    /// Once stopped it ends the sessions (those of every clone serving the same table: the
    /// requests they were answering get -32603), lets each connection finish the exchange
    /// under way and closes it, waiting up to 5 s, then returns. A request that arrives
    /// meanwhile is answered 503.
    ///
    /// # Errors
    ///
    /// Never for a failed connection (logged, and the server goes on); only when accepting
    /// fails in a way that does not pass.
    pub async fn serve<H, F, S>(
        &self,
        listener: TcpListener,
        make: F,
        stop: S,
    ) -> std::io::Result<()>
    where
        H: Handler,
        F: Fn() -> H + Send + Sync + 'static,
        S: Future<Output = ()>,
    {
        self.state.stopped.store(false, Ordering::SeqCst);
        let make: Arc<dyn Fn() -> Arc<H> + Send + Sync> = Arc::new(move || Arc::new(make()));
        let slots = Arc::new(Semaphore::new(self.config.max_connections));
        let budget = Arc::new(Semaphore::new(self.config.max_body_bytes));
        let sweeper =
            self.config.idle_timeout.map(|idle| tokio::spawn(sweep(self.state.clone(), idle)));
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        tokio::pin!(stop);
        let outcome = loop {
            let permit = tokio::select! {
                () = &mut stop => break Ok(()),
                p = slots.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            };
            let (stream, remote) = tokio::select! {
                () = &mut stop => break Ok(()),
                a = listener.accept() => match a {
                    Ok(a) => a,
                    Err(e) if transient(&e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                    Err(e) => break Err(e),
                },
            };
            let _ = stream.set_nodelay(true);
            let server = self.clone();
            let make = make.clone();
            let budget = budget.clone();
            let read_timeout = self.config.read_timeout;
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let server = server.clone();
                    let make = make.clone();
                    let budget = budget.clone();
                    async move { Ok::<_, Infallible>(server.handle(req, &*make, &budget).await) }
                });
                let served = watcher
                    .watch(
                        hyper::server::conn::http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(read_timeout)
                            .serve_connection(TokioIo::new(stream), service),
                    )
                    .await;
                if let Err(e) = served {
                    tracing::debug!(%remote, error = %e, "connection ended");
                }
                drop(permit);
            });
        };
        if let Some(s) = sweeper {
            s.abort();
        }
        self.state.stopped.store(true, Ordering::SeqCst);
        let sessions: Vec<_> = {
            let mut map = self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            map.drain().map(|(_, s)| s).collect()
        };
        for s in sessions {
            s.close();
        }
        // The connections finish the exchange under way (the POSTs of the sessions just ended
        // get their answer, GET streams end) and close, kept-alive ones at once; past the
        // grace, whatever is left is dropped.
        if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await.is_err() {
            tracing::warn!("connections still open {SHUTDOWN_GRACE:?} after the stop");
        }
        outcome
    }

    async fn handle<H: Handler>(
        &self,
        req: Request<HyperBody>,
        make: &(dyn Fn() -> Arc<H> + Send + Sync),
        budget: &Arc<Semaphore>,
    ) -> Response<Body> {
        if self.state.stopped.load(Ordering::SeqCst) {
            let msg = "Service Unavailable: the server is stopping";
            return error(StatusCode::SERVICE_UNAVAILABLE, Id::Null, SERVER_ERROR, msg);
        }
        if req.uri().path() != self.config.path {
            return status(StatusCode::NOT_FOUND);
        }
        if !matches!(*req.method(), Method::POST | Method::GET | Method::DELETE) {
            let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            return r;
        }
        if let Some(origin) = req.headers().get(ORIGIN)
            && !self.origin_allowed(origin)
        {
            return error(
                StatusCode::FORBIDDEN,
                Id::Null,
                SERVER_ERROR,
                "Forbidden: origin not allowed",
            );
        }
        match *req.method() {
            Method::POST => self.post(req, make, budget).await,
            Method::GET => self.get(&req),
            _ => self.delete(&req),
        }
    }

    fn origin_allowed(&self, origin: &HeaderValue) -> bool {
        let Ok(origin) = origin.to_str() else { return false };
        if self.config.allowed_origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            return true;
        }
        let Some((scheme, rest)) = origin.split_once("://") else { return false };
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return false;
        }
        let host = if let Some(v6) = rest.strip_prefix('[') {
            match v6.split_once(']') {
                Some((h, port)) if port.is_empty() || port.starts_with(':') => h,
                _ => return false,
            }
        } else {
            rest.split_once(':').map_or(rest, |(h, _)| h)
        };
        host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "::1"
    }

    /// The session a request names: `Ok(None)` when it names none, `Err` with the answer when
    /// it names one that is unknown or gives a version that is not accepted.
    fn session_of(
        &self,
        req: &Request<HyperBody>,
    ) -> Result<Option<Arc<Session>>, Box<Response<Body>>> {
        if let Some(v) = req.headers().get(VERSION_HEADER)
            && !v.to_str().is_ok_and(|v| self.config.versions.iter().any(|s| s == v))
        {
            let msg = format!(
                "Bad Request: unsupported protocol version (supported: {})",
                self.config.versions.join(", ")
            );
            return Err(Box::new(error(StatusCode::BAD_REQUEST, Id::Null, SERVER_ERROR, &msg)));
        }
        let Some(id) = req.headers().get(SESSION_HEADER) else { return Ok(None) };
        let found = id.to_str().ok().and_then(|id| {
            self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
        });
        match found {
            Some(s) if s.is_open() => Ok(Some(s)),
            _ => Err(Box::new(error(
                StatusCode::NOT_FOUND,
                Id::Null,
                SESSION_NOT_FOUND,
                "Session not found",
            ))),
        }
    }

    /// The session a GET or DELETE must name.
    fn required_session(
        &self,
        req: &Request<HyperBody>,
    ) -> Result<Arc<Session>, Box<Response<Body>>> {
        self.session_of(req)?.ok_or_else(|| {
            let msg = "Bad Request: Mcp-Session-Id header is required";
            Box::new(error(StatusCode::BAD_REQUEST, Id::Null, SERVER_ERROR, msg))
        })
    }

    async fn post<H: Handler>(
        &self,
        req: Request<HyperBody>,
        make: &(dyn Fn() -> Arc<H> + Send + Sync),
        budget: &Arc<Semaphore>,
    ) -> Response<Body> {
        let h = req.headers();
        if !h.get(CONTENT_TYPE).is_some_and(|v| media_type_is(v, "application/json")) {
            return error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Id::Null,
                SERVER_ERROR,
                "Unsupported Media Type: Content-Type must be application/json",
            );
        }
        let (json, sse) = accepts(h);
        if !json && !sse {
            return error(
                StatusCode::NOT_ACCEPTABLE,
                Id::Null,
                SERVER_ERROR,
                "Not Acceptable: Accept must include application/json or text/event-stream",
            );
        }
        let limit = self.config.peer.limits.frame_bytes();
        let declared = h.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return too_large(limit);
        }
        let session = match self.session_of(&req) {
            Ok(s) => s,
            Err(answer) => return *answer,
        };
        // Room for the body in the server's budget, held until the POST is answered.
        let want = declared.map_or(limit, |n| usize::try_from(n).unwrap_or(limit));
        let want = want.clamp(1, self.config.max_body_bytes);
        let want = u32::try_from(want).unwrap_or(u32::MAX);
        let room = budget.clone().acquire_many_owned(want);
        let Ok(Ok(_room)) = tokio::time::timeout(self.config.read_timeout, room).await else {
            let msg = "Service Unavailable: too many request bytes in flight";
            return error(StatusCode::SERVICE_UNAVAILABLE, Id::Null, SERVER_ERROR, msg);
        };
        let body = Limited::new(req.into_body(), limit).collect();
        let read = tokio::time::timeout(self.config.read_timeout, body);
        let Ok(read) = read.await else {
            let msg = "Request Timeout: the body did not arrive in time";
            return error(StatusCode::REQUEST_TIMEOUT, Id::Null, SERVER_ERROR, msg);
        };
        let body = match read {
            Ok(b) => b.to_bytes(),
            Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
                return too_large(limit);
            }
            Err(e) => {
                tracing::debug!(error = %e, "reading a POST body failed");
                return error(
                    StatusCode::BAD_REQUEST,
                    Id::Null,
                    SERVER_ERROR,
                    "Bad Request: body unreadable",
                );
            }
        };
        let frame = FrameParser::new(self.config.peer.limits).parse(BytesMut::from(body));
        if let Some(m) = frame.message()
            && m.kind() == Kind::Invalid
        {
            let mut out = BytesMut::new();
            let detail = self.config.peer.reply_detail;
            if let Some(reply) = m.error_reply(detail) {
                let _ = reply.write_value(&mut out);
            }
            return json_response(StatusCode::BAD_REQUEST, out.freeze());
        }
        let initialize = frame.kind() == Kind::Request && frame.method() == Some("initialize");
        let (session, new) = match session {
            Some(s) if initialize => {
                drop(s);
                let id = frame.id().unwrap_or(Id::Null);
                let msg = "Invalid Request: the session is already initialized";
                return error(StatusCode::BAD_REQUEST, id, ErrorCode::INVALID_REQUEST, msg);
            }
            Some(s) => (s, false),
            None if initialize => match self.open_session(make) {
                Ok(s) => (s, true),
                Err(answer) => return *answer,
            },
            None => {
                let msg = "Bad Request: Mcp-Session-Id header is required";
                return error(StatusCode::BAD_REQUEST, Id::Null, SERVER_ERROR, msg);
            }
        };
        let answer = self.deliver(&session, frame, json, sse).await;
        if new { self.admit(session, answer) } else { answer }
    }

    /// Starts a session for an `initialize` request.
    fn open_session<H: Handler>(
        &self,
        make: &(dyn Fn() -> Arc<H> + Send + Sync),
    ) -> Result<Arc<Session>, Box<Response<Body>>> {
        let full = || {
            let msg = "Service Unavailable: too many sessions";
            error(StatusCode::SERVICE_UNAVAILABLE, Id::Null, SERVER_ERROR, msg)
        };
        if self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner).len()
            >= self.config.max_sessions
        {
            // Ended sessions go whatever the idle timeout; idle ones once past it.
            expire(&self.state, self.config.idle_timeout.unwrap_or(Duration::MAX));
            if self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner).len()
                >= self.config.max_sessions
            {
                return Err(Box::new(full()));
            }
        }
        let id = new_session_id().map_err(|e| {
            tracing::error!(error = %e, "no randomness for a session id");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                Id::Null,
                ErrorCode::INTERNAL_ERROR,
                "Internal error",
            )
        })?;
        Ok(Session::start(id, &self.config.peer, make()))
    }

    /// Keeps a new session when its `initialize` succeeded, and names it in the answer.
    fn admit(&self, session: Arc<Session>, mut answer: Response<Body>) -> Response<Body> {
        // A failed `initialize` is answered 200 too, with an error: only a result, which names
        // the protocol version, opens the session (an event stream may carry it later).
        // An event stream whose response has not come yet (progress came first) may still
        // carry a result: the session is kept, as the client will learn its id.
        let (negotiated, pending) = session.initialize_outcome();
        if answer.status() != StatusCode::OK || !(negotiated || pending) {
            session.close();
            return answer;
        }
        {
            let mut map = self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let stopping = self.state.stopped.load(Ordering::SeqCst);
            if map.len() >= self.config.max_sessions || stopping {
                drop(map);
                session.close();
                let msg = if stopping {
                    "Service Unavailable: the server is stopping"
                } else {
                    "Service Unavailable: too many sessions"
                };
                return error(StatusCode::SERVICE_UNAVAILABLE, Id::Null, SERVER_ERROR, msg);
            }
            map.insert(session.id.clone(), session.clone());
        }
        self.state.started.fetch_add(1, Ordering::Relaxed);
        if let Ok(v) = HeaderValue::from_str(&session.id) {
            answer.headers_mut().insert(SESSION_HEADER, v);
        }
        answer
    }

    /// Hands a valid frame to the session and waits for what it owes the client.
    async fn deliver(
        &self,
        session: &Arc<Session>,
        frame: Frame,
        json: bool,
        sse: bool,
    ) -> Response<Body> {
        let mut requests = Vec::new();
        if frame.kind() == Kind::Batch {
            let version = session.routes().version.clone();
            if version.as_deref() != Some(BATCH_VERSION) {
                let msg =
                    "Invalid Request: batches are accepted only under protocol version 2025-03-26";
                return error(StatusCode::BAD_REQUEST, Id::Null, ErrorCode::INVALID_REQUEST, msg);
            }
            // Invalid elements are answered in the batch's reply, which is routed by the ids of
            // the batch's requests: without one it could not reach this POST.
            let elements = || frame.batch().into_iter().flatten();
            let answered =
                |m: &crate::Message<'_>| m.kind() == Kind::Invalid && !m.is_response_shaped();
            if elements().any(|m| answered(&m)) && !elements().any(|m| m.kind() == Kind::Request) {
                let msg = "Invalid Request: a batch with invalid elements must hold a request";
                return error(StatusCode::BAD_REQUEST, Id::Null, ErrorCode::INVALID_REQUEST, msg);
            }
            for m in elements().filter(|m| m.kind() == Kind::Request) {
                let id = m.id().and_then(Key::of).expect("a request has an id");
                if requests.iter().any(|(k, _)| *k == id) {
                    let msg = "Invalid Request: duplicate id in the batch";
                    let (code, rpc) = (StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST);
                    return error(code, id.as_id(), rpc, msg);
                }
                requests.push((id, requested_progress(&m)));
            }
        } else if let Some(m) = frame.message()
            && m.kind() == Kind::Request
        {
            let id = m.id().and_then(Key::of).expect("a request has an id");
            requests.push((id, requested_progress(&m)));
        }
        // Cancellations (alone or in a batch) end the POSTs of the requests they name.
        let cancels: Vec<Key> = match frame.batch() {
            Some(b) => b.filter_map(|m| cancelled_request(&m)).collect(),
            None => frame.message().and_then(|m| cancelled_request(&m)).into_iter().collect(),
        };
        if requests.is_empty() {
            let order = (!cancels.is_empty()).then(|| session.order.lock());
            let _order = match order {
                Some(o) => Some(o.await),
                None => None,
            };
            for id in &cancels {
                session.cancel(id);
            }
            if !session.feed(frame).await {
                return session_gone();
            }
            return status(StatusCode::ACCEPTED);
        }
        let order = session.order.lock().await;
        for id in &cancels {
            session.cancel(id);
        }
        let mut early = Vec::new();
        let waiting = match session.expect(requests, &mut early) {
            Ok(w) => Some(w),
            Err(Refused::Duplicate(id)) => {
                let msg = "Invalid Request: a request with this id is already in progress";
                return error(StatusCode::BAD_REQUEST, id.as_id(), ErrorCode::INVALID_REQUEST, msg);
            }
            Err(Refused::Cancelled) => None,
            Err(Refused::Closed) => return session_gone(),
        };
        // A request cancelled before it came is not fed alone; in a batch, the batch's other
        // messages (a response the server waits for, say) still go in, and the request is
        // cancelled right after it.
        if waiting.is_some() || frame.kind() == Kind::Batch {
            if !session.feed(frame).await {
                return session_gone();
            }
            for id in &early {
                if !session.feed(cancellation(id)).await {
                    return session_gone();
                }
            }
        }
        drop(order);
        match waiting {
            Some(w) => reply(w, json, sse).await,
            None => cancelled_answer(sse),
        }
    }

    fn get(&self, req: &Request<HyperBody>) -> Response<Body> {
        if !self.config.get_stream {
            let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut().insert(ALLOW, HeaderValue::from_static("POST, DELETE"));
            return r;
        }
        if !accepts(req.headers()).1 {
            let msg = "Not Acceptable: Accept must include text/event-stream";
            return error(StatusCode::NOT_ACCEPTABLE, Id::Null, SERVER_ERROR, msg);
        }
        let session = match self.required_session(req) {
            Ok(s) => s,
            Err(answer) => return *answer,
        };
        let Some(guard) = session.open_stream() else {
            let msg = "Conflict: a stream is already open for this session";
            return error(StatusCode::CONFLICT, Id::Null, SERVER_ERROR, msg);
        };
        let tick = tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
        let events = futures_util::stream::unfold((guard, tick), |(mut g, mut tick)| async move {
            let chunk = tokio::select! {
                m = g.rx.recv() => m?,
                _ = tick.tick() => Bytes::from_static(b": keep-alive\n\n"),
            };
            Some((Ok(hyper::body::Frame::data(chunk)), (g, tick)))
        });
        sse_response(BodyExt::boxed_unsync(StreamBody::new(events)))
    }

    fn delete(&self, req: &Request<HyperBody>) -> Response<Body> {
        let session = match self.required_session(req) {
            Ok(s) => s,
            Err(answer) => return *answer,
        };
        self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner).remove(&session.id);
        session.close();
        status(StatusCode::OK)
    }
}

/// Answers a POST that carried requests: `application/json` when the response comes first (or
/// the client takes only JSON), else a `text/event-stream` of the progress and then the
/// response.
async fn reply(mut w: PostReceiver, json: bool, sse: bool) -> Response<Body> {
    // Progress queued before the response makes it an event stream (when the client takes one).
    let first = tokio::select! {
        biased;
        note = w.notes.recv(), if sse => Ok(note),
        done = &mut w.done => Err(done),
    };
    let note = match first {
        // A client that takes only event streams gets the response as one.
        Err(Ok(frame)) if !json => {
            let event = Full::new(sse_event(frame.as_bytes()));
            return sse_response(BodyExt::boxed_unsync(event));
        }
        Err(Ok(frame)) => return json_response(StatusCode::OK, frame.into_bytes()),
        Err(Err(_)) if w.cancelled() => return cancelled_answer(sse),
        Err(Err(_)) => return json_response(StatusCode::OK, w.abandoned()),
        Ok(note) => note,
    };
    let Some(note) = note else {
        return json_response(StatusCode::OK, w.abandoned());
    };
    let first = sse_event(note.as_bytes());
    let events = futures_util::stream::unfold((Some(first), Some(w)), |(first, w)| async move {
        if let Some(chunk) = first {
            return Some((Ok(hyper::body::Frame::data(chunk)), (None, w)));
        }
        let mut w = w?;
        let chunk = tokio::select! {
            biased;
            note = w.notes.recv() => match note {
                Some(n) => Some(sse_event(n.as_bytes())),
                None => match (&mut w.done).await {
                    Ok(f) => Some(sse_event(f.as_bytes())),
                    Err(_) if w.cancelled() => None,
                    Err(_) => Some(sse_event(&w.abandoned())),
                },
            },
            done = &mut w.done => {
                // Progress queued before the response goes first.
                let mut out = BytesMut::new();
                while let Ok(n) = w.notes.try_recv() {
                    out.extend_from_slice(&sse_event(n.as_bytes()));
                }
                match done {
                    Ok(done) => out.extend_from_slice(&sse_event(done.as_bytes())),
                    Err(_) if w.cancelled() => {}
                    Err(_) => out.extend_from_slice(&sse_event(&w.abandoned())),
                }
                return Some((Ok(hyper::body::Frame::data(out.freeze())), (None, None)));
            }
        };
        let chunk = chunk?;
        Some((Ok(hyper::body::Frame::data(chunk)), (None, Some(w))))
    });
    sse_response(BodyExt::boxed_unsync(StreamBody::new(events)))
}

/// A `notifications/cancelled` for request `id`, as the session's peer reads it.
fn cancellation(id: &Key) -> Frame {
    let mut out = BytesMut::new();
    let params =
        format!("{{\"requestId\":{},\"reason\":\"cancelled before it came\"}}", id.as_id());
    let note: crate::Outgoing<'_> = crate::Outgoing::Notification {
        method: "notifications/cancelled",
        params: Some(crate::RawJson::new(&params)),
    };
    note.write_value(&mut out).expect("a notification of raw params always encodes");
    FrameParser::new(crate::Limits::default()).parse(out)
}

/// Ends idle sessions now and then.
async fn sweep(state: Arc<State>, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        expire(&state, idle);
    }
}

fn expire(state: &State, idle: Duration) {
    let now = std::time::Instant::now();
    let gone: Vec<_> = {
        let mut map = state.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let ids: Vec<_> = map
            .iter()
            .filter(|(_, s)| {
                !s.is_open()
                    || (s.busy.load(Ordering::Acquire) == 0
                        && now.duration_since(s.idle_since()) >= idle)
            })
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter().filter_map(|id| map.remove(id)).collect()
    };
    state.expired.fetch_add(gone.len() as u64, Ordering::Relaxed);
    for s in gone {
        tracing::debug!(session = %s.id, "session expired");
        s.close();
    }
}

fn transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionAborted | ConnectionReset | Interrupted | WouldBlock)
        || e.raw_os_error().is_some_and(|c| c == 24 || c == 23) // EMFILE, ENFILE
}

/// Which of JSON and SSE the client takes: an absent `Accept` takes both.
fn accepts(h: &http::HeaderMap) -> (bool, bool) {
    let mut any = false;
    let (mut json, mut sse) = (false, false);
    for v in h.get_all(ACCEPT) {
        any = true;
        let Ok(v) = v.to_str() else { continue };
        for item in v.split(',') {
            let media = item.split(';').next().unwrap_or("").trim();
            let is = |m: &str| media.eq_ignore_ascii_case(m);
            json |= is("application/json") || is("application/*") || is("*/*");
            sse |= is("text/event-stream") || is("text/*") || is("*/*");
        }
    }
    if any { (json, sse) } else { (true, true) }
}

fn media_type_is(v: &HeaderValue, want: &str) -> bool {
    v.to_str().is_ok_and(|v| v.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(want))
}

fn status(code: StatusCode) -> Response<Body> {
    let mut r = Response::new(BodyExt::boxed_unsync(http_body_util::Empty::new()));
    *r.status_mut() = code;
    r
}

fn json_response(code: StatusCode, body: Bytes) -> Response<Body> {
    let mut r = Response::new(BodyExt::boxed_unsync(Full::new(body)));
    *r.status_mut() = code;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn sse_response(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

fn error(code: StatusCode, id: Id<'_>, rpc: ErrorCode, message: &str) -> Response<Body> {
    json_response(code, error_json(id, rpc, message))
}

fn too_large(limit: usize) -> Response<Body> {
    let msg = format!("Payload Too Large: the body is over {limit} bytes");
    error(StatusCode::PAYLOAD_TOO_LARGE, Id::Null, ErrorCode::INVALID_REQUEST, &msg)
}

/// The end of a POST whose request the client cancelled: an event stream with no event, or
/// `202 Accepted` with no body for a client that takes only JSON. No response is sent, as
/// JSON-RPC asks of a cancelled request.
fn cancelled_answer(sse: bool) -> Response<Body> {
    if sse {
        sse_response(BodyExt::boxed_unsync(http_body_util::Empty::new()))
    } else {
        status(StatusCode::ACCEPTED)
    }
}

fn session_gone() -> Response<Body> {
    error(StatusCode::NOT_FOUND, Id::Null, SESSION_NOT_FOUND, "Session not found: it ended")
}

/// Binds `addr` (`127.0.0.1:PORT`, or a bare port for loopback) for [`HttpServer::serve`].
///
/// # Errors
///
/// When the address does not parse or cannot be bound.
pub async fn bind(addr: &str) -> std::io::Result<TcpListener> {
    let addr =
        if addr.parse::<u16>().is_ok() { format!("127.0.0.1:{addr}") } else { addr.to_owned() };
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host(&addr).await?.collect();
    TcpListener::bind(&resolved[..]).await
}
