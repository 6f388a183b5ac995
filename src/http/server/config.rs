//! How an [`HttpServer`] is built: its settings (`Config`, shared by its clones) and every
//! builder method that sets them (the HTTP/2 bounds and the resource-server guard's included),
//! each bound backed by a `DEFAULT_*` constant of [`crate::limits`].

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::connection::{FRAME_SIZES, H2Config, INITIAL_CONNECTION_WINDOW, MAX_WINDOW};
use super::stream::ResumeConfig;
use super::{HttpServer, State};
use crate::limits::{
    DEFAULT_HEADER_TIMEOUT, DEFAULT_KEEP_ALIVE, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_SESSIONS, DEFAULT_READ_TIMEOUT, DEFAULT_REPLAY_BYTES, DEFAULT_REPLAY_EVENTS,
    DEFAULT_RESUMABLE_STREAMS, DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_SSE_RETRY,
    DEFAULT_STREAM_RETENTION,
};
use crate::limits::{DEFAULT_MAX_TLS_HANDSHAKES, DEFAULT_TLS_HANDSHAKE_TIMEOUT};
use crate::mcp::LEGACY_VERSIONS;
use crate::peer::PeerBuilder;

/// The server's settings, set by the builder methods before it serves.
#[derive(Clone)]
pub(super) struct Config {
    pub(super) peer: PeerBuilder,
    pub(super) path: String,
    pub(super) allowed_origins: Vec<String>,
    pub(super) versions: Vec<String>,
    pub(super) modern_versions: Vec<String>,
    pub(super) tool_headers: Option<Arc<crate::mcp::annotations::ToolHeaders>>,
    pub(super) max_sessions: usize,
    pub(super) idle_timeout: Option<Duration>,
    pub(super) max_connections: usize,
    pub(super) max_body_bytes: usize,
    pub(super) read_timeout: Duration,
    pub(super) header_timeout: Duration,
    pub(super) get_stream: bool,
    pub(super) keep_alive: Duration,
    pub(super) resume: ResumeConfig,
    pub(super) h2: H2Config,
    #[cfg(feature = "tls")]
    pub(super) tls: Option<crate::tls::ServerTls>,
    pub(super) max_tls_handshakes: usize,
    pub(super) tls_handshake_timeout: Duration,
    #[cfg(feature = "oauth")]
    pub(super) auth: Option<Arc<crate::auth::resource::ResourceServer>>,
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
                versions: LEGACY_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
                modern_versions: crate::mcp::MODERN_VERSIONS
                    .iter()
                    .map(|v| (*v).to_owned())
                    .collect(),
                tool_headers: None,
                max_sessions: DEFAULT_MAX_SESSIONS,
                idle_timeout: Some(DEFAULT_SESSION_IDLE_TIMEOUT),
                max_connections: DEFAULT_MAX_CONNECTIONS,
                max_body_bytes: DEFAULT_MAX_BODY_BYTES,
                read_timeout: DEFAULT_READ_TIMEOUT,
                header_timeout: DEFAULT_HEADER_TIMEOUT,
                get_stream: true,
                keep_alive: DEFAULT_KEEP_ALIVE,
                resume: ResumeConfig {
                    retry: DEFAULT_SSE_RETRY,
                    events: DEFAULT_REPLAY_EVENTS,
                    bytes: DEFAULT_REPLAY_BYTES,
                    streams: DEFAULT_RESUMABLE_STREAMS,
                    retention: DEFAULT_STREAM_RETENTION,
                },
                h2: H2Config::default(),
                #[cfg(feature = "tls")]
                tls: None,
                max_tls_handshakes: DEFAULT_MAX_TLS_HANDSHAKES,
                tls_handshake_timeout: DEFAULT_TLS_HANDSHAKE_TIMEOUT,
                #[cfg(feature = "oauth")]
                auth: None,
            }),
            state: Arc::new(State::default()),
        }
    }

    pub(super) fn config(&mut self) -> &mut Config {
        Arc::make_mut(&mut self.config)
    }

    /// Serves TLS on the listener [`HttpServer::serve`] is given: every connection is
    /// `https://`, and ALPN chooses HTTP/2 or HTTP/1.1. [`ServerTls::reload`](crate::tls::ServerTls::reload)
    /// on the value given (or a clone) changes the certificate for new connections.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, tls: crate::tls::ServerTls) -> Self {
        self.config().tls = Some(tls);
        self
    }

    /// TLS handshakes in progress at once; past it the oldest one still in progress is closed
    /// for the new connection.
    /// [`DEFAULT_MAX_TLS_HANDSHAKES`] by default; 0 is taken as 1.
    #[must_use]
    pub fn max_tls_handshakes(mut self, n: usize) -> Self {
        self.config().max_tls_handshakes = n.max(1);
        self
    }

    /// How long a TLS handshake may take, from the accept; past it the connection is closed.
    /// [`DEFAULT_TLS_HANDSHAKE_TIMEOUT`] by default.
    #[must_use]
    pub fn tls_handshake_timeout(mut self, t: Duration) -> Self {
        self.config().tls_handshake_timeout = t;
        self
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

    /// The protocol versions accepted in `MCP-Protocol-Version`; [`LEGACY_VERSIONS`] by
    /// default.
    #[must_use]
    pub fn protocol_versions<I: IntoIterator<Item = S>, S: Into<String>>(mut self, v: I) -> Self {
        self.config().versions = v.into_iter().map(Into::into).collect();
        self
    }

    /// The stateless (2026-07-28 on) protocol versions served; [`crate::mcp::MODERN_VERSIONS`]
    /// by default. A request naming another is answered 400, -32022, with this list; an empty
    /// list serves the legacy era alone.
    #[must_use]
    pub fn modern_versions<I: IntoIterator<Item = S>, S: Into<String>>(mut self, v: I) -> Self {
        self.config().modern_versions = v.into_iter().map(Into::into).collect();
        self
    }

    /// The `x-mcp-header` annotations of the tools the handler serves (read them from its
    /// `tools/list` result with [`ToolHeaders::from_tools_list`]): a stateless `tools/call`
    /// of an annotated tool must carry a matching `Mcp-Param-{Name}` header for each argument
    /// it gives, or it is answered 400, -32020.
    ///
    /// [`ToolHeaders::from_tools_list`]: crate::mcp::annotations::ToolHeaders::from_tools_list
    #[must_use]
    pub fn tool_headers(mut self, tools: crate::mcp::annotations::ToolHeaders) -> Self {
        self.config().tool_headers = Some(Arc::new(tools));
        self
    }

    /// Sessions open at once. When the table is full, an `initialize` removes ended and idle
    /// sessions, then ends the least recently used session with no request in flight and no
    /// open stream (its client gets 404 and initializes again); it is answered 503 only when
    /// every session is busy. [`DEFAULT_MAX_SESSIONS`] by default; 0 is taken as 1.
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

    /// TCP connections served at once (and at most the process's open-file limit less 64).
    /// Past it a new connection sheds the oldest one with no request in progress (idle between
    /// requests, or still sending headers); only when every connection is busy does accepting
    /// wait for one to end. [`DEFAULT_MAX_CONNECTIONS`] by default; 0 is taken as 1.
    #[must_use]
    pub fn max_connections(mut self, n: usize) -> Self {
        self.config().max_connections = n.max(1);
        self
    }

    /// Bytes of POST bodies the server holds at once, counted from before a body is read until
    /// its POST is answered (its `Content-Length`, or `max_frame_bytes` for a chunked body); a
    /// POST that finds no room within `read_timeout` is answered 503 without its body being
    /// read. With `max_connections` and each session's limits this bounds the server's memory,
    /// but for two things:
    /// - What an HTTP/2 client sends before its POST is taken is held outside this budget,
    ///   bounded by the flow-control windows instead (`http2_initial_windows`): up to the
    ///   connection window per connection, 1 MiB at the defaults.
    /// - A POST with no `Content-Length` reserves `max_frame_bytes`, so a few such POSTs on one
    ///   HTTP/2 connection (16 at the defaults) can hold the whole budget, and others wait or get
    ///   503. Clients that send `Content-Length` (the MCP SDKs do) reserve only their bodies.
    ///
    /// [`DEFAULT_MAX_BODY_BYTES`] by default; a single body always fits.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.config().max_body_bytes = bytes.clamp(1, Semaphore::MAX_PERMITS);
        self
    }

    /// How long a client may take to send a POST's body (and to find room for it in
    /// `max_body_bytes`); past it the POST is answered 408 (503 for room). [`DEFAULT_READ_TIMEOUT`]
    /// by default; at least 1 ms. The headers have their own, shorter bound:
    /// [`HttpServer::header_timeout`].
    #[must_use]
    pub fn read_timeout(mut self, t: Duration) -> Self {
        self.config().read_timeout = t.max(Duration::from_millis(1));
        self
    }

    /// How long a client may take to send a request's headers, from the first byte of the
    /// request (or the end of the previous response on a kept-alive connection), however
    /// slowly it dribbles them; past it the connection is closed. It also bounds how long any
    /// connection, HTTP/1.1 or HTTP/2, sits with no request in progress (an HTTP/2 one is
    /// told to close with `GOAWAY`, and dropped if still open as long again).
    /// [`DEFAULT_HEADER_TIMEOUT`] by default; at least 1 ms.
    #[must_use]
    pub fn header_timeout(mut self, t: Duration) -> Self {
        self.config().header_timeout = t.max(Duration::from_millis(1));
        self
    }

    /// Whether GET opens a stream of the server's other messages (`true` by default); without
    /// it GET is answered 405.
    #[must_use]
    pub fn get_stream(mut self, open: bool) -> Self {
        self.config().get_stream = open;
        self
    }

    /// How often a quiet event stream carries a `: keep-alive` comment; [`DEFAULT_KEEP_ALIVE`]
    /// by default, at least 1 ms.
    #[must_use]
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.config().keep_alive = every.max(Duration::from_millis(1));
        self
    }

    /// The `retry` a legacy session's event streams announce in their priming event (sessions
    /// of 2025-11-25 on): how long a client whose stream the server closed
    /// ([`close_sse_stream`](crate::http::close_sse_stream)) waits before it resumes it.
    /// [`DEFAULT_SSE_RETRY`] by default; whole milliseconds.
    #[must_use]
    pub fn sse_retry(mut self, retry: Duration) -> Self {
        self.config().resume.retry = retry;
        self
    }

    /// How much of each event stream of a legacy session (a POST's that streams, a GET's) is
    /// kept for a client that resumes it (`GET` with `Last-Event-ID`): its latest `events`
    /// events (at least 1), and of those no more than `bytes` bytes, though its newest event is
    /// kept whatever its size. Past either bound the oldest go: a resumption from before them is
    /// answered 410, and a connection too slow to deliver them skips them (counted in
    /// [`HttpStats::messages_dropped`](super::HttpStats::messages_dropped)). [`DEFAULT_REPLAY_EVENTS`] and
    /// [`DEFAULT_REPLAY_BYTES`] by default.
    #[must_use]
    pub fn replay_buffer(mut self, events: usize, bytes: usize) -> Self {
        let r = &mut self.config().resume;
        r.events = events.max(1);
        r.bytes = bytes;
        self
    }

    /// How many event streams that no connection delivers (closed by the client or the
    /// server, or ended) a legacy session keeps for a resumption, at least 1, and for how long
    /// after the last connection left each; past either the stream is forgotten (a resumption
    /// is answered 410, and a forgotten GET stream takes no more messages).
    /// [`DEFAULT_RESUMABLE_STREAMS`] and [`DEFAULT_STREAM_RETENTION`] by default.
    #[must_use]
    pub fn resumable_streams(mut self, streams: usize, retention: Duration) -> Self {
        let r = &mut self.config().resume;
        r.streams = streams.max(1);
        r.retention = retention;
        self
    }

    /// Whether the port also takes HTTP/2 (cleartext, with prior knowledge: a client that opens
    /// with the HTTP/2 preface), beside HTTP/1.1; `true` by default. Without it such a client
    /// gets HTTP/1.1's answer to a malformed request.
    #[must_use]
    pub fn http2(mut self, enabled: bool) -> Self {
        self.config().h2.enabled = enabled;
        self
    }

    /// Streams (requests) one HTTP/2 connection may have open at once, advertised in its
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`; a stream past it is refused (`RST_STREAM`
    /// `REFUSED_STREAM`) and the others go on. [`DEFAULT_HTTP2_MAX_STREAMS`](crate::limits::DEFAULT_HTTP2_MAX_STREAMS) by default; 0 is
    /// taken as 1 (0 would refuse every HTTP/2 request).
    #[must_use]
    pub fn http2_max_concurrent_streams(mut self, n: u32) -> Self {
        self.config().h2.max_streams = n.max(1);
        self
    }

    /// HTTP/2 flow control: how many bytes of body a client may send on one stream, and over
    /// all the streams of a connection, before the server has read them (and so how many it
    /// holds unread): the stream window within 1 ..= 2^31-1, the connection window within
    /// 65,535 ..= 2^31-1. A client that sends past a window is a protocol error
    /// (`FLOW_CONTROL_ERROR`). [`DEFAULT_HTTP2_STREAM_WINDOW`](crate::limits::DEFAULT_HTTP2_STREAM_WINDOW) and
    /// [`DEFAULT_HTTP2_CONNECTION_WINDOW`](crate::limits::DEFAULT_HTTP2_CONNECTION_WINDOW) by default.
    ///
    /// Every HTTP/2 connection starts with a window of 65,535 bytes, which only grows (by
    /// `WINDOW_UPDATE`): a smaller connection window could not be enforced, and would only
    /// make the server reopen the window a few bytes at a time once those first bytes are
    /// read, so it is taken as 65,535.
    #[must_use]
    pub fn http2_initial_windows(mut self, stream: u32, connection: u32) -> Self {
        let h2 = &mut self.config().h2;
        h2.stream_window = stream.clamp(1, MAX_WINDOW);
        h2.connection_window = connection.clamp(INITIAL_CONNECTION_WINDOW, MAX_WINDOW);
        self
    }

    /// The largest header list (decoded, as HTTP/2 counts it: name, value and 32 bytes per
    /// field) an HTTP/2 request may carry, advertised in `SETTINGS_MAX_HEADER_LIST_SIZE`;
    /// a request whose list reaches it is answered 431 (its fields not kept), and one more
    /// than four times it closes the connection (`GOAWAY`, `ENHANCE_YOUR_CALM`).
    /// [`DEFAULT_HTTP2_MAX_HEADER_LIST`](crate::limits::DEFAULT_HTTP2_MAX_HEADER_LIST) by default.
    ///
    /// The value is taken as it is, 0 included, and means what it says: no request's list fits
    /// in 0 bytes (nor in four times 0), so with 0 every HTTP/2 request closes its connection,
    /// while HTTP/1.1 (whose headers have their own bound) is served as before. A request's own
    /// pseudo-header fields take 160 bytes or more: a bound below that answers every request 431,
    /// and one below a quarter of that closes the connection for each.
    #[must_use]
    pub fn http2_max_header_list_size(mut self, bytes: u32) -> Self {
        self.config().h2.max_header_list = bytes;
        self
    }

    /// The largest HTTP/2 frame payload the server accepts (`SETTINGS_MAX_FRAME_SIZE`), within
    /// 16 KiB ..= 16 MiB - 1 as HTTP/2 allows. [`DEFAULT_HTTP2_MAX_FRAME`](crate::limits::DEFAULT_HTTP2_MAX_FRAME) by default.
    #[must_use]
    pub fn http2_max_frame_size(mut self, bytes: u32) -> Self {
        self.config().h2.max_frame = bytes.clamp(*FRAME_SIZES.start(), *FRAME_SIZES.end());
        self
    }

    /// The "rapid reset" bounds of an HTTP/2 connection: how many streams the client opened
    /// and reset before the server took them may be pending at once, and how many streams the
    /// server may reset for the client's errors; past either the connection is closed
    /// (`GOAWAY`, `ENHANCE_YOUR_CALM`). [`DEFAULT_HTTP2_MAX_PENDING_RESETS`](crate::limits::DEFAULT_HTTP2_MAX_PENDING_RESETS) and
    /// [`DEFAULT_HTTP2_MAX_LOCAL_RESETS`](crate::limits::DEFAULT_HTTP2_MAX_LOCAL_RESETS) by default.
    #[must_use]
    pub fn http2_reset_limits(mut self, pending_accept: usize, local_error: usize) -> Self {
        let h2 = &mut self.config().h2;
        h2.max_pending_resets = pending_accept;
        h2.max_local_resets = local_error;
        self
    }

    /// How much of a response an HTTP/2 stream buffers while the client's window is closed;
    /// past it the stream takes no more of its body (an event stream's later events wait; a
    /// JSON answer is already whole). [`DEFAULT_HTTP2_MAX_SEND_BUFFER`](crate::limits::DEFAULT_HTTP2_MAX_SEND_BUFFER) by default; at least 1
    /// byte, at most 4 GiB - 1.
    #[must_use]
    pub fn http2_max_send_buffer(mut self, bytes: usize) -> Self {
        self.config().h2.max_send_buffer = bytes.clamp(1, u32::MAX as usize);
        self
    }

    /// How often an HTTP/2 connection is sent a `PING` (`None`: never), and how long its
    /// acknowledgement may take before the connection is closed, so a peer that vanished is
    /// noticed. The interval counts from the last frame read from the client, so a busy
    /// connection is not pinged. [`DEFAULT_HTTP2_PING_INTERVAL`](crate::limits::DEFAULT_HTTP2_PING_INTERVAL) and
    /// [`DEFAULT_HTTP2_PING_TIMEOUT`](crate::limits::DEFAULT_HTTP2_PING_TIMEOUT) by default; the interval at least 1 ms (a zero one would
    /// send the next `PING` as soon as the last is acknowledged, with only the timer's next
    /// tick, often well under a millisecond, between them).
    #[must_use]
    pub fn http2_keep_alive(mut self, every: Option<Duration>, timeout: Duration) -> Self {
        let h2 = &mut self.config().h2;
        h2.ping_interval = every.map(|e| e.max(Duration::from_millis(1)));
        h2.ping_timeout = timeout;
        self
    }

    /// Guards the endpoint as a resource server: each request needs a token `rs` accepts,
    /// and its metadata is served (the table in the server's `guard.rs`). The principal of the token is
    /// handed to the handler; a legacy session is bound to the principal that opened it.
    #[cfg(feature = "oauth")]
    #[must_use]
    pub fn auth(mut self, rs: crate::auth::resource::ResourceServer) -> Self {
        self.config().auth = Some(Arc::new(rs));
        self
    }

    /// The endpoint's path.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.config.path
    }
}
