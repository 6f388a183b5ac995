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
//! HTTP/2 connection may open (set in `config.rs`, applied in `connection.rs`; see
//! [`crate::limits`]).
//!
//! Every error body is a JSON-RPC error response with `"id": null` (or the request's id where it
//! could be read). `max_frame_bytes` is the sessions' [`Limits::max_frame_bytes`](crate::Limits::max_frame_bytes).
//! Header sections past hyper's bounds (100 headers, about 400 KiB) are refused by hyper
//! itself (431, or the connection closed).
//!
//! # Stages
//!
//! Each stage is a file of its own, and a request walks them top to bottom from
//! [`HttpServer::handle`](HttpServer) (here), entering none twice:
//!
//! | stage | file | job |
//! |---|---|---|
//! | accept | `accept.rs`, `connection.rs`, `connections.rs`, `tls.rs` | the accept loop, a place in the connection table, the TLS handshake, one connection served (HTTP/1.1 or HTTP/2) |
//! | gate | `gate.rs`, `guard.rs` | from the head alone: stop, path, method, origin, token (`guard.rs`); a POST's type, `Accept`, size, the session it names (`sessions.rs`), room in the body budget |
//! | body | `body.rs` | the body read within its bounds, parsed into a frame |
//! | route | `route.rs` | the era decision: the session named, a session to open, or a stateless request |
//! | serve in a peer | `peer_post.rs` (with `session/`, `stream.rs`) | a session's POST (an `initialize` opening one), or a stateless request's pooled peer: fed to the peer, answered as the peer answers |
//! | serve a stateless request | `stateless.rs`, then `peerless.rs` or `peer_post.rs` | the header check of 2026-07-28, then served without a peer when the handler allows it |
//! | answer | `response.rs` | JSON, event streams, errors, the status a stateless answer takes |
//!
//! GET and DELETE (`get.rs`) pass the gate and name a session. The builder's methods are all
//! in `config.rs`; the session table (lookup, opening, upkeep) in `sessions.rs`.

use crate::sync::Locked;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use http::header::HeaderName;
use http::{Method, Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming as HyperBody;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

mod accept;
mod body;
mod config;
mod connection;
mod connections;
mod gate;
mod get;
#[cfg(feature = "oauth")]
mod guard;
mod peer_post;
mod peerless;
mod response;
mod route;
mod session;
mod sessions;
mod stateless;
mod stream;
#[cfg(feature = "tls")]
mod tls;

use super::{SESSION_HEADER, VERSION_HEADER};
use crate::peer::{Handler, Principal};
use config::Config;
use connections::Connections;
use route::Route;
use session::Session;

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// The session and version headers as `http` names: a name given as `&str` is parsed on each
/// look-up.
const SESSION_NAME: HeaderName = HeaderName::from_static(SESSION_HEADER);
const VERSION_NAME: HeaderName = HeaderName::from_static(VERSION_HEADER);

/// The handlers of one connection: `make` builds one for a new session (or a stateless
/// request's peer); `shared` is the one built for the connection's stateless requests served
/// without a peer, made once, for the first of them.
struct Handlers<'a, H> {
    make: &'a (dyn Fn() -> Arc<H> + Send + Sync),
    shared: &'a OnceLock<Arc<H>>,
}

impl<H> Clone for Handlers<'_, H> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<H> Copy for Handlers<'_, H> {}

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
    idle: Arc<session::Idle>,
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
        let sessions = self.state.sessions.locked();
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

    /// One request, stage by stage: the gate before the body, then by method.
    async fn handle<H: Handler>(
        &self,
        req: Request<HyperBody>,
        handlers: Handlers<'_, H>,
        budget: &Arc<Semaphore>,
    ) -> Response<Body> {
        let principal = match gate::before_body(&self.config, &self.state, &req).await {
            Ok(principal) => principal,
            Err(answer) => return gate::unread(req, *answer).await,
        };
        match *req.method() {
            Method::POST => self.post(req, principal, handlers, budget).await,
            Method::GET => get::get(&self.config, &self.state, &req, principal.as_deref()),
            _ => get::delete(&self.config, &self.state, &req, principal.as_deref()),
        }
    }

    /// A POST: its headers and room for its body (the gate), its body read and parsed, the
    /// era it belongs to (the route), then served by a peer (a session's, or a pooled one for a
    /// stateless request a handler takes only in a peer) or without one (`peerless.rs`).
    async fn post<H: Handler>(
        &self,
        req: Request<HyperBody>,
        principal: Option<Arc<Principal>>,
        handlers: Handlers<'_, H>,
        budget: &Arc<Semaphore>,
    ) -> Response<Body> {
        // `_room` holds the body's place in the server's budget until the POST is answered.
        let (head, body, post, _room) =
            match gate::post(&self.config, &self.state, req, principal.as_deref(), budget).await {
                Ok(admitted) => admitted,
                Err(answer) => return *answer,
            };
        let frame = match body::read(&self.config, body).await {
            Ok(frame) => frame,
            Err(answer) => return *answer,
        };
        let accepts = post.accepts;
        match route::route(&self.config, &head, &frame, post.session) {
            Err(answer) => *answer,
            // Boxed: a peer's path is the largest state of this future, which hyper moves
            // into place for every request, the stateless ones served without a peer too.
            Ok(Route::Session(session)) => {
                Box::pin(peer_post::deliver(&self.config, &session, frame, accepts)).await
            }
            Ok(Route::Open) => {
                let (config, state) = (&self.config, &self.state);
                Box::pin(peer_post::open(config, state, handlers.make, principal, frame, accepts))
                    .await
            }
            Ok(Route::Stateless) => {
                stateless::serve(
                    &self.config,
                    &self.state,
                    &head,
                    frame,
                    accepts,
                    principal,
                    handlers,
                )
                .await
            }
        }
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
