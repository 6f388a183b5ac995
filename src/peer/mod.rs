//! The tokio peer: one read loop on the codec, one write loop that coalesces queued messages,
//! a timer for request deadlines, and a cloneable [`PeerHandle`] to send requests and
//! notifications, all over any `AsyncRead` + `AsyncWrite`.
//!
//! ```text
//!  PeerHandle::request ──► Outbound table (id, waiter, deadline) ──► write queue ──► writer
//!                                 ▲                                       ▲
//!  reader ──► JsonRpcCodec ──► response: complete the waiter             │
//!                          ├─► request: Handler task ──► reply ───────────┘
//!                          ├─► notifications/cancelled: stop that handler
//!                          └─► invalid: -32700 / -32600 reply (rate-limited without an id)
//! ```
//!
//! # Examples
//!
//! ```
//! use mcpwire::peer::{Context, Handler, Incoming, NoHandler, PeerBuilder, Reply, RpcError};
//! use mcpwire::RawJson;
//!
//! struct Ping;
//! impl Handler for Ping {
//!     async fn request(&self, req: &Incoming, _: &Context) -> Result<Reply, RpcError> {
//!         match req.method() {
//!             "ping" => Ok(Reply::empty()),
//!             m => Err(RpcError::method_not_found(m)),
//!         }
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let (a, b) = tokio::io::duplex(64 * 1024);
//! let (_server, _server_conn) = PeerBuilder::new().connect(a, Ping);
//! let (client, _client_conn) = PeerBuilder::new().connect(b, NoHandler);
//! let pong = client.request("ping", None::<RawJson<'_>>).await.unwrap();
//! assert_eq!(pong.result().unwrap().get(), "{}");
//! # });
//! ```

mod driver;
mod handle;
mod handler;
mod inbound;
mod queue;
mod reader;
mod room;
mod shared;
pub mod transport;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;

#[cfg(feature = "http")]
pub(crate) use driver::Outlet;
pub use handle::PeerHandle;
pub use handler::{Context, Handler, Incoming, NoHandler, Reply, RpcError};

use crate::mux::{InboundStats, OutboundStats};
use crate::{Limits, RawJson, ReplyDetail};
use shared::Shared;

/// Default for [`PeerBuilder::request_timeout`]: 60 seconds, as the MCP SDKs use.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Default for [`PeerBuilder::unaddressed_replies_per_second`]: 4.
///
/// Replies to garbage carry `"id": null`, so nobody can match them; answering every one would let
/// two peers that both answer garbage with garbage flood each other.
pub const DEFAULT_UNADDRESSED_REPLIES_PER_SECOND: u32 = 4;

/// Bytes of control messages (error replies to invalid messages, cancellations) the write queue
/// takes past [`Limits::max_write_queue_bytes`], so the read loop keeps reading while handlers
/// wait for room. Only once these too are spent has the other side stopped reading altogether,
/// and the read loop waits as well.
pub const CONTROL_BUDGET_BYTES: usize = queue::CONTROL_BUDGET;

/// Params for a request or notification that has none.
pub const NO_PARAMS: Option<RawJson<'static>> = None;

/// How a peer is set up. `Clone`, so one builder can make many peers (an accept loop).
#[derive(Clone, Debug)]
pub struct PeerBuilder {
    pub(crate) limits: Limits,
    request_timeout: Option<Duration>,
    pub(crate) reply_detail: ReplyDetail,
    unaddressed_per_second: u32,
}

impl Default for PeerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl PeerBuilder {
    /// The defaults: [`Limits::default`], a 60 s request timeout, reasons in error replies.
    #[must_use]
    pub fn new() -> Self {
        Self {
            limits: Limits::default(),
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            reply_detail: ReplyDetail::Reason,
            unaddressed_per_second: DEFAULT_UNADDRESSED_REPLIES_PER_SECOND,
        }
    }

    /// Decoder limits, outbound in-flight bound, handler concurrency and write queue bound.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How long a request waits for its response before it fails with
    /// [`RequestError::Timeout`] (and `notifications/cancelled` is sent); `None` waits forever.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Whether error replies to invalid messages carry the reason in `data`.
    #[must_use]
    pub fn reply_detail(mut self, detail: ReplyDetail) -> Self {
        self.reply_detail = detail;
        self
    }

    /// How many replies with `"id": null` (to bytes that are not JSON, or to messages whose id
    /// cannot be read) are sent per second at most, with a burst of as many; the rest are
    /// counted and dropped. 0 sends none.
    #[must_use]
    pub fn unaddressed_replies_per_second(mut self, n: u32) -> Self {
        self.unaddressed_per_second = n;
        self
    }

    /// Starts a peer over one duplex stream (a socket, `tokio::io::duplex`). Must be called
    /// inside a tokio runtime.
    #[must_use = "dropping the Connection closes it"]
    pub fn connect<T, H>(&self, io: T, handler: H) -> (PeerHandle, Connection)
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
        H: Handler,
    {
        let (r, w) = tokio::io::split(io);
        self.spawn(r, w, handler)
    }

    /// Starts a peer over a separate reader and writer (a child's stdout and stdin, the halves
    /// of a TCP stream). Must be called inside a tokio runtime.
    #[must_use = "dropping the Connection closes it"]
    pub fn spawn<R, W, H>(&self, reader: R, writer: W, handler: H) -> (PeerHandle, Connection)
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
        H: Handler,
    {
        let shared = Arc::new(Shared::new(self));
        let handle = PeerHandle { shared: shared.clone() };
        let tasks = driver::start(self, handle.clone(), reader, writer, Arc::new(handler));
        (handle, Connection { shared, tasks, extra: None, pid: None })
    }

    /// Starts a peer over frames a transport has already cut, and an outlet for the messages
    /// it sends (the HTTP transports). `extra` is a task the connection also waits for.
    #[cfg(feature = "http")]
    pub(crate) fn spawn_parts<S, O, H>(
        &self,
        frames: S,
        outlet: O,
        handler: Arc<H>,
    ) -> (PeerHandle, Connection)
    where
        S: futures_util::Stream<Item = Result<crate::Frame, crate::Error>> + Send + 'static,
        O: Outlet,
        H: Handler,
    {
        let shared = Arc::new(Shared::new(self));
        let handle = PeerHandle { shared: shared.clone() };
        let frames = driver::counted(frames, shared.bytes_read.clone());
        let tasks = driver::start_parts(self, handle.clone(), frames, outlet, handler);
        (handle, Connection { shared, tasks, extra: None, pid: None })
    }
}

/// Options for one request.
#[derive(Clone, Debug, Default)]
pub struct RequestOptions {
    timeout: Option<Option<Duration>>,
    progress: Option<(ProgressToken, Option<Duration>)>,
}

impl RequestOptions {
    /// The peer's defaults.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// This request's timeout instead of the peer's; `None` waits forever.
    #[must_use]
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Each `notifications/progress` carrying `token` (which the caller put in the request's
    /// `_meta.progressToken`) restarts the timeout, up to `total` after the request was sent.
    #[must_use]
    pub fn reset_on_progress(mut self, token: ProgressToken, total: Option<Duration>) -> Self {
        self.progress = Some((token, total));
        self
    }
}

/// An MCP progress token: a string or an integer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ProgressToken {
    /// An integer token.
    Num(i64),
    /// A string token.
    Str(Box<str>),
}

/// Why a request failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The other side answered with an error.
    #[error("the peer answered with an error: {0}")]
    Rpc(RpcError),
    /// No response came within the timeout; `notifications/cancelled` was sent.
    #[error("no response within the timeout")]
    Timeout,
    /// The connection ended before the response came.
    #[error("connection closed: {0}")]
    Closed(CloseReason),
    /// The params could not be serialised; nothing was sent.
    #[error("params could not be serialised: {0}")]
    Encode(String),
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The other side closed its end (end of stream).
    Eof,
    /// This side closed it ([`PeerHandle::close`], or the [`Connection`] was dropped).
    Local,
    /// Reading or writing failed.
    Io(String),
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Eof => f.write_str("the other side closed the stream"),
            Self::Local => f.write_str("closed by this side"),
            Self::Io(e) => write!(f, "transport failed: {e}"),
        }
    }
}

/// Counters for a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PeerStats {
    /// Our requests: registered, completed, unknown and late responses, cancelled, timed out.
    pub outbound: OutboundStats,
    /// Their requests: begun, finished, duplicate ids, cancelled, unknown cancellations.
    pub inbound: InboundStats,
    /// Outbound requests awaiting a response now.
    pub in_flight: usize,
    /// The most outbound requests awaiting a response at once.
    pub peak_in_flight: usize,
    /// Invalid messages received (not JSON, or not a valid message).
    pub invalid_received: u64,
    /// Replies with `"id": null` dropped by the rate limit.
    pub replies_suppressed: u64,
    /// Handlers that panicked (each answered -32603).
    pub handler_panics: u64,
    /// Control messages (cancellations) dropped because the other side stopped reading.
    pub control_dropped: u64,
    /// Bytes read from the transport.
    pub bytes_read: u64,
    /// Bytes written to the transport.
    pub bytes_written: u64,
    /// Heap bytes held by the outbound table (slots, free list, deadline heap).
    pub outbound_table_bytes: usize,
}

/// The running connection: its loops (and child process, for [`transport::spawn_child`]).
///
/// Dropping it closes the connection as [`PeerHandle::close`] does; the loops then finish
/// writing what was queued on their own. [`Connection::detach`] lets it run until it ends by
/// itself instead.
#[must_use = "dropping a Connection closes it; keep it, await `closed`, or `detach` it"]
pub struct Connection {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    /// The child's supervisor, which reaps it.
    extra: Option<JoinHandle<()>>,
    pid: Option<u32>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection").field("tasks", &self.tasks.len()).finish()
    }
}

impl Connection {
    /// Waits until the connection has ended and its queue is flushed (and, for a child process,
    /// the child has been reaped); returns why it ended.
    ///
    /// Cancel-safe: a `select!` that drops this future leaves the connection as it was.
    pub async fn closed(&mut self) -> CloseReason {
        for t in &mut self.tasks {
            let _ = t.await;
        }
        self.tasks.clear();
        if let Some(t) = &mut self.extra {
            let _ = t.await;
        }
        self.extra = None;
        self.shared.lock().closed.clone().unwrap_or(CloseReason::Local)
    }

    /// Lets the connection run on its own until either side closes it.
    pub fn detach(mut self) {
        tokio::spawn(async move {
            self.closed().await;
        });
    }

    /// The child's process id, for a connection made by [`transport::spawn_child`].
    #[must_use]
    pub fn child_id(&self) -> Option<u32> {
        self.pid
    }

    /// Closes the connection, as [`PeerHandle::close`].
    pub fn close(&self) {
        self.shared.close(CloseReason::Local);
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.close(CloseReason::Local);
    }
}
