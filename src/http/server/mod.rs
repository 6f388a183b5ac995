//! The Streamable HTTP server: one endpoint, serving both eras of MCP at once. A legacy client
//! (2024-11-05 … 2025-11-25) opens a session with `initialize` and gets a peer of its own
//! running the host's [`Handler`]; a modern one (2026-07-28) names no session, and each of its
//! requests is handed to the handler inside the connection's own future when the handler takes
//! it without a peer ([`Handler::peerless`]: the typed [`Server`](crate::server::Server)'s do,
//! but for `subscriptions/listen`), else runs in a peer of its own that ends with the request's
//! POST (stateless either way: any instance behind a load balancer can serve it).
//!
//! What each request gets, in the order it is checked:
//!
//! | request | answer |
//! |---|---|
//! | a request that arrives while `serve` is stopping (it ends the sessions and the stateless requests' peers, lets each connection finish the exchange under way, closes it, for up to 5 s, then returns), or a stateless one whose body was still arriving when it stopped | 503, -32000 (with the request's id where it was read) |
//! | a path other than the endpoint | 404 |
//! | a method other than POST, GET, DELETE | 405, with `Allow` |
//! | an `Origin` that is not loopback or allowed with `allow_origin` (DNS rebinding) | 403, -32000 |
//! | POST: `Content-Type` not `application/json` | 415, -32000 |
//! | POST: `Accept` with neither `application/json` nor `text/event-stream` (absent takes both) | 406, -32000 |
//! | POST: a `Content-Length` over `max_frame_bytes` | 413, -32600 |
//! | POST: no room for the body within `read_timeout` (bodies held past `max_body_bytes`) | 503, -32000 |
//! | GET: `get_stream(false)` (and no `Last-Event-ID`) / no `text/event-stream` in `Accept` | 405 / 406, -32000 |
//! | a session id with a modern `MCP-Protocol-Version` (2026-07-28 on) | the session id is ignored: a stateless request |
//! | a session id with an `MCP-Protocol-Version` not among the legacy versions (absent is fine) | 400, -32000 |
//! | a session id that is unknown, expired or deleted | 404, -32001 |
//! | GET or DELETE without a session id (a stateless client's) | 405, `Allow: POST` |
//! | POST: a body that does not arrive within `read_timeout` | 408, -32000 |
//! | headers that do not all arrive within `header_timeout` of the request's first byte, however slowly they are dribbled | the connection is closed |
//! | a new connection past `max_connections` | the oldest connection with no request in progress (idle, or still sending headers) is closed for it; accepting waits only when every connection is busy (an HTTP/2 connection is busy while any of its streams is) |
//! | a connection with no request in progress for `header_timeout` (HTTP/2 with no stream being answered, or stopped inside the preface) | told to close (HTTP/2: `GOAWAY`, `NO_ERROR`), dropped if still open one more `header_timeout` later |
//! | HTTP/2: a stream past `http2_max_concurrent_streams` (advertised in `SETTINGS_MAX_CONCURRENT_STREAMS`) | `RST_STREAM` `REFUSED_STREAM`; the other streams go on |
//! | HTTP/2: body past a stream's window (`http2_initial_windows`) | `RST_STREAM` `FLOW_CONTROL_ERROR`; past the connection's window, `GOAWAY` |
//! | HTTP/2: a header list that reaches `http2_max_header_list_size` | 431, then `RST_STREAM` `REFUSED_STREAM`; the connection goes on (past four times it, `GOAWAY` `ENHANCE_YOUR_CALM`) |
//! | HTTP/2: streams opened and reset before the server took them, past `http2_reset_limits` (rapid reset), or too many streams the server had to reset | `GOAWAY` `ENHANCE_YOUR_CALM`, the connection closed |
//! | HTTP/2: a `PING` unanswered for `http2_keep_alive`'s timeout | the connection is closed |
//! | POST: a chunked body that grows over `max_frame_bytes` | 413, -32600 |
//! | POST: a body that is not JSON / JSON that is not a message | 400, -32700 / -32600, with the reason |
//! | POST: `initialize` with a session id | 400, -32600 |
//! | POST: `initialize` under a modern `MCP-Protocol-Version` | a stateless request (for a method 2026-07-28 removed) |
//! | POST: no session id, not `initialize`, and a legacy `MCP-Protocol-Version` (the client lost its session) | 400, -32000 |
//! | POST, stateless: a notification | 202, no body (nothing to deliver it to) |
//! | POST, stateless: a response or a batch | 400, -32600 |
//! | POST, stateless: `subscriptions/listen` from a client that takes no `text/event-stream` | 406, -32000 |
//! | POST, stateless: `MCP-Protocol-Version`, `Mcp-Method` or `Mcp-Name` given twice; the envelope malformed (-32602); a mirrored header missing or not the body's value (-32020); the version not served (-32022, naming those that are); `Mcp-Param-*` not matching an `x-mcp-header` argument of a tool set with `tool_headers` (-32020) | 400, with the request's id ([`crate::mcp::headers::check`]) |
//! | POST, stateless: a request | its answer as for a session's request (below), with no session id (without a peer, a handler's answer given at once is written by the connection's own future: no task, no channel); an error answered by the handler gets 400 (-32700, -32600, -32602, -32020, -32021, -32022) or 404 (-32601); every notification its handler sends goes on its event stream; closing the POST cancels it |
//! | POST: a batch, unless the session negotiated 2025-03-26 | 400, -32600 |
//! | POST: a batch with invalid elements and no request (its answer could not be routed) | 400, -32600 |
//! | POST: a request whose id is already waiting in the session | 400, -32600 with that id |
//! | a new session past `max_sessions`: ended and idle ones are removed, then the least recently used one with no request in flight and no open stream is ended (its client gets 404 and initializes again) | 503, -32000 only when every session is busy |
//! | POST: notifications and responses only | 202, no body |
//! | POST: a request | 200: the response as `application/json` (as one event of a `text/event-stream` for a client that takes only that); or a `text/event-stream` (with `X-Accel-Buffering: no`, and a `: keep-alive` comment every 15 s) when a notification for the request comes first (and the client takes it): the notifications, then the response, then the stream ends. In a session, the stream is resumable (below) |
//! | POST in a session of 2025-11-25 on, whose handler calls [`close_sse_stream`](crate::http::close_sse_stream) (and whose client takes `text/event-stream`) | 200, a `text/event-stream`: the priming event, what the handler sent before the call, then the end; the rest (the response included) waits in the stream for the client to resume it |
//! | POST: a request the client then cancels (`notifications/cancelled`, alone or in a batch, even one that overtakes the request on another connection) | the POST ends with no response: an empty event stream (202 for a JSON-only client) |
//! | POST: a request whose session ends before it is answered | 200 with an error response, -32603 (404, -32001, if it ended before the request went in) |
//! | GET: a stream already open for the session (a connection delivers it now) | 409, -32000 |
//! | GET | 200, a `text/event-stream` of the session's other messages (notifications, the server's own requests), with a `: keep-alive` comment every 15 s; resumable (below) |
//! | GET with `Last-Event-ID` given twice, or not an event id of this server (`N-K`, decimal, at most 41 bytes), or naming an event its stream has not sent | 400, -32000 |
//! | GET with `Last-Event-ID` naming no stream the session keeps (never its own: another session's, or unknown; or forgotten, past [`resumable_streams`](HttpServer::resumable_streams)), or an event after which some were dropped ([`replay_buffer`](HttpServer::replay_buffer)) | 410, -32000 |
//! | GET with `Last-Event-ID: N-K` | 200, a `text/event-stream`: stream `N`'s events after `K`, then its later ones as they come (the response of a POST that stream carried, then the end; or the session's other messages, for a GET stream); a connection that delivered the stream ends |
//! | DELETE | 200; the session's peer closes (running handlers are dropped) |
//!
//! **Resumable streams** (legacy sessions; MCP's "Resumability and Redelivery", and SEP-1699's
//! polling from 2025-11-25). Each event stream of a session, a POST's that streams and each
//! GET's, is numbered (`N`, from a counter of the server's, so it names one stream of one
//! session), and its events carry `id: N-K`, `K` counting from 1. In a session that negotiated
//! 2025-11-25 or later, each begins with a priming event: `id: N-0`, `retry` (the
//! [`sse_retry`](HttpServer::sse_retry), 1 s by default) and empty data (older clients may fail
//! on empty data, so earlier sessions get none). A stream keeps its latest events (up to
//! [`replay_buffer`](HttpServer::replay_buffer)), and a session keeps the streams no connection
//! delivers for a while ([`resumable_streams`](HttpServer::resumable_streams)), so a client
//! whose connection ended, or whose stream the handler closed, resumes with a GET and
//! `Last-Event-ID`. A POST whose connection ends once it streams does not lose its response:
//! the stream takes it. A GET stream no connection delivers still takes the session's messages
//! until it is forgotten (a new GET replaces it).
//!
//! **HTTP/2.** The port takes HTTP/1.1 and HTTP/2 over cleartext with prior knowledge (a
//! client that opens with the HTTP/2 preface; no `Upgrade: h2c`, no TLS here), told apart by
//! the first bytes ([`http2`](HttpServer::http2) turns it off). Every row above holds for each
//! HTTP/2 stream as for an HTTP/1.1 request; the `http2_*` builder methods bound what one
//! HTTP/2 connection may open (see `connection.rs` and [`crate::limits`]).
//!
//! Every error body is a JSON-RPC error response with `"id": null` (or the request's id where it
//! could be read). `max_frame_bytes` is the sessions' [`Limits::max_frame_bytes`](crate::Limits::max_frame_bytes).
//! Header sections past hyper's bounds (100 headers, about 400 KiB) are refused by hyper
//! itself (431, or the connection closed).

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{
    ACCEPT, ALLOW, CACHE_CONTROL, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HeaderName,
    HeaderValue, ORIGIN,
};
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Body as _, Incoming as HyperBody};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

mod accept;
mod config;
mod connection;
mod connections;
mod get;
#[cfg(feature = "oauth")]
mod guard;
mod inline;
mod post;
mod response;
mod sessions;
mod stateless;
#[cfg(feature = "tls")]
mod tls;

use super::session::Session;
use super::stream::{ResumeConfig, Unresumable, parse_event_id};
use super::{
    BATCH_VERSION, PROTOCOL_VERSIONS, SESSION_HEADER, VERSION_HEADER, cancelled_request,
    error_json, new_session_id, sse_event,
};
/// The session and version headers as `http` names: a name given as `&str` is parsed on each
/// look-up.
const SESSION_NAME: HeaderName = HeaderName::from_static(SESSION_HEADER);
const VERSION_NAME: HeaderName = HeaderName::from_static(VERSION_HEADER);
pub use crate::limits::DEFAULT_HEADER_TIMEOUT;
pub use crate::limits::DEFAULT_KEEP_ALIVE;
pub use crate::limits::DEFAULT_MAX_BODY_BYTES;
pub use crate::limits::DEFAULT_MAX_CONNECTIONS;
pub use crate::limits::DEFAULT_MAX_SESSIONS;
pub use crate::limits::DEFAULT_READ_TIMEOUT;
pub use crate::limits::DEFAULT_REPLAY_BYTES;
pub use crate::limits::DEFAULT_REPLAY_EVENTS;
pub use crate::limits::DEFAULT_RESUMABLE_STREAMS;
pub use crate::limits::DEFAULT_SESSION_IDLE_TIMEOUT;
pub use crate::limits::DEFAULT_SSE_RETRY;
pub use crate::limits::DEFAULT_STREAM_RETENTION;
use crate::limits::SHUTDOWN_GRACE;
pub use crate::limits::{
    DEFAULT_HTTP2_CONNECTION_WINDOW, DEFAULT_HTTP2_MAX_FRAME, DEFAULT_HTTP2_MAX_HEADER_LIST,
    DEFAULT_HTTP2_MAX_LOCAL_RESETS, DEFAULT_HTTP2_MAX_PENDING_RESETS,
    DEFAULT_HTTP2_MAX_SEND_BUFFER, DEFAULT_HTTP2_MAX_STREAMS, DEFAULT_HTTP2_PING_INTERVAL,
    DEFAULT_HTTP2_PING_TIMEOUT, DEFAULT_HTTP2_STREAM_WINDOW,
};
pub use crate::limits::{DEFAULT_MAX_TLS_HANDSHAKES, DEFAULT_TLS_HANDSHAKE_TIMEOUT};
use crate::peer::{Handler, PeerBuilder, Principal};
use crate::{ErrorCode, Frame, FrameParser, Id, Kind, OwnedId};
use config::Config;
use connections::{Conn, Connections, Guarded};
use response::{error, status, stopping};
use sessions::{sweep, sweep_while_alive};

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
    /// TCP connections served now.
    pub connections: usize,
    /// Connections closed, oldest idle first, to make room for a new one when the table was
    /// full.
    pub connections_shed: u64,
    /// Sessions ended, least recently used first, to make room for a new one when the table was
    /// full (their clients get 404 and initialize again).
    pub sessions_evicted: u64,
    /// Messages the sessions' handlers sent that had nowhere to go (no GET stream open or kept
    /// for a resumption, or the client stopped waiting), or that a connection too slow for its
    /// stream's replay buffer skipped, over the sessions open now.
    pub messages_dropped: u64,
    /// TLS connections closed before they were served: the handshake failed or took longer
    /// than [`HttpServer::tls_handshake_timeout`], or [`HttpServer::max_tls_handshakes`] were
    /// already in progress, or the connection was shed for a newer one meanwhile.
    pub tls_handshakes_failed: u64,
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

#[derive(Default)]
struct State {
    /// Set once `serve` returns: connections still open get 503 and open no session.
    stopped: std::sync::atomic::AtomicBool,
    sessions: Mutex<HashMap<Box<str>, Arc<Session>>>,
    started: AtomicU64,
    expired: AtomicU64,
    /// Sessions ended to make room for a new one.
    evicted: AtomicU64,
    /// Peers of stateless requests waiting for the next one.
    idle: Arc<super::session::Idle>,
    /// Cancelled when `serve` stops (a new one for each `serve`): stateless requests handled
    /// without a peer that still wait are answered -32603.
    halt: Mutex<tokio_util::sync::CancellationToken>,
    /// Event streams numbered so far, over every session.
    streams: Arc<AtomicU64>,
    /// The TCP connections served now.
    connections: Arc<Connections>,
    /// `serve_connection` started the task that expires idle sessions.
    sweeping: std::sync::atomic::AtomicBool,
    /// TLS handshakes that failed, timed out, were shed, or found no slot.
    tls_failed: AtomicU64,
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
    /// The server's counters.
    #[must_use]
    pub fn stats(&self) -> HttpStats {
        let sessions = self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        HttpStats {
            sessions: sessions.len(),
            sessions_started: self.state.started.load(Ordering::Relaxed),
            sessions_expired: self.state.expired.load(Ordering::Relaxed),
            sessions_evicted: self.state.evicted.load(Ordering::Relaxed),
            connections: self.state.connections.len(),
            connections_shed: self.state.connections.shed.load(Ordering::Relaxed),
            messages_dropped: sessions
                .values()
                .map(|s| s.stats.dropped.load(Ordering::Relaxed))
                .sum(),
            tls_handshakes_failed: self.state.tls_failed.load(Ordering::Relaxed),
        }
    }

    async fn handle<H: Handler>(
        &self,
        req: Request<HyperBody>,
        make: &(dyn Fn() -> Arc<H> + Send + Sync),
        shared: &OnceLock<Arc<H>>,
        budget: &Arc<Semaphore>,
    ) -> Response<Body> {
        let principal = match self.before_body(&req).await {
            Ok(principal) => principal,
            Err(answer) => return unread(req, *answer).await,
        };
        match *req.method() {
            Method::POST => self.post(req, principal, make, shared, budget).await,
            Method::GET => self.get(&req, principal.as_deref()),
            _ => self.delete(&req, principal.as_deref()),
        }
    }

    /// What is decided from the head alone: the caller's principal, or the answer (the
    /// metadata, or a refusal) given without reading the body.
    async fn before_body(
        &self,
        req: &Request<HyperBody>,
    ) -> Result<Option<Arc<Principal>>, Box<Response<Body>>> {
        if self.state.stopped.load(Ordering::SeqCst) {
            return Err(Box::new(stopping(Id::Null)));
        }
        #[cfg(feature = "oauth")]
        if let Some(metadata) = self.metadata(req) {
            return Err(Box::new(metadata));
        }
        if req.uri().path() != self.config.path {
            return Err(Box::new(status(StatusCode::NOT_FOUND)));
        }
        if !matches!(*req.method(), Method::POST | Method::GET | Method::DELETE) {
            let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            return Err(Box::new(r));
        }
        if let Some(origin) = req.headers().get(ORIGIN)
            && !self.origin_allowed(origin)
        {
            let (code, msg) = (ErrorCode::SERVER_ERROR, "Forbidden: origin not allowed");
            return Err(Box::new(error(StatusCode::FORBIDDEN, Id::Null, code, msg)));
        }
        #[cfg(feature = "oauth")]
        let principal = self.guard(req).await?;
        #[cfg(not(feature = "oauth"))]
        let principal = None;
        Ok(principal)
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
    /// it names one that is unknown, was opened by another caller than `principal`, or gives a
    /// version that is not accepted.
    fn session_of(
        &self,
        req: &Request<HyperBody>,
        principal: Option<&Principal>,
    ) -> Result<Option<Arc<Session>>, Box<Response<Body>>> {
        let Some(id) = req.headers().get(&SESSION_NAME) else { return Ok(None) };
        let version = req.headers().get(&VERSION_NAME).and_then(|v| v.to_str().ok());
        // A modern request names no session: a session id beside a modern version is ignored,
        // as 2026-07-28 asks.
        if version.is_some_and(|v| crate::mcp::Era::of(v.trim()) == crate::mcp::Era::Modern) {
            return Ok(None);
        }
        if let Some(v) = req.headers().get(&VERSION_NAME)
            && !v.to_str().is_ok_and(|v| self.config.versions.iter().any(|s| s == v.trim()))
        {
            let msg = format!(
                "Bad Request: unsupported protocol version (supported: {})",
                self.config.versions.join(", ")
            );
            return Err(Box::new(error(
                StatusCode::BAD_REQUEST,
                Id::Null,
                ErrorCode::SERVER_ERROR,
                &msg,
            )));
        }
        let found = id.to_str().ok().and_then(|id| {
            self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
        });
        match found {
            Some(s) if s.is_open() && s.opened_by(principal) => Ok(Some(s)),
            _ => Err(Box::new(error(
                StatusCode::NOT_FOUND,
                Id::Null,
                ErrorCode::SESSION_NOT_FOUND,
                "Session not found",
            ))),
        }
    }

    /// The session a GET or DELETE must name: without one it is a stateless client's, which
    /// may only POST (405).
    fn required_session(
        &self,
        req: &Request<HyperBody>,
        principal: Option<&Principal>,
    ) -> Result<Arc<Session>, Box<Response<Body>>> {
        self.session_of(req, principal)?.ok_or_else(|| {
            let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut().insert(ALLOW, HeaderValue::from_static("POST"));
            Box::new(r)
        })
    }
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

/// The most of an unread request body drained before answering, and how long that may take.
const DRAIN_BYTES: usize = 64 * 1024;
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// `answer`, given to `req` without reading its body. Over HTTP/1.1 a connection can carry
/// the next request only once this one's body is read: hyper reads what already arrived and
/// otherwise closes the connection after the answer, without saying so, and a client that
/// sends its next request on it at once (an OAuth client fetching the metadata after a 401)
/// finds it closed. So a small body is drained and the connection kept; a larger or slower
/// one, or one the client waits to be asked for (`Expect: 100-continue`), is not read, and the
/// answer says `Connection: close`.
async fn unread(req: Request<HyperBody>, mut answer: Response<Body>) -> Response<Body> {
    if req.version() >= http::Version::HTTP_2 || req.body().is_end_stream() {
        return answer;
    }
    let drained = if req.headers().contains_key(http::header::EXPECT) {
        false
    } else {
        let drain = http_body_util::Limited::new(req.into_body(), DRAIN_BYTES).collect();
        matches!(tokio::time::timeout(DRAIN_TIME, drain).await, Ok(Ok(_)))
    };
    if !drained {
        answer.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
    }
    answer
}
