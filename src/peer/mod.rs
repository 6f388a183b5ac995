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
mod handler;
mod queue;
pub mod transport;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use handler::{Context, Handler, Incoming, NoHandler, Reply, RpcError};

use crate::mux::{Inbound, InboundStats, Outbound, OutboundStats};
use crate::{Id, Limits, Outgoing, Payload, RawJson, ReplyDetail};
use queue::{SendError, WriteQueue};

/// Default for [`PeerBuilder::request_timeout`]: 60 seconds, as the MCP SDKs use.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Default for [`PeerBuilder::unaddressed_replies_per_second`]: 4.
///
/// Replies to garbage carry `"id": null`, so nobody can match them; answering every one would let
/// two peers that both answer garbage with garbage flood each other.
pub const DEFAULT_UNADDRESSED_REPLIES_PER_SECOND: u32 = 4;

/// Params for a request or notification that has none.
pub const NO_PARAMS: Option<RawJson<'static>> = None;

/// How a peer is set up. `Clone`, so one builder can make many peers (an accept loop).
#[derive(Clone, Debug)]
pub struct PeerBuilder {
    limits: Limits,
    request_timeout: Option<Duration>,
    reply_detail: ReplyDetail,
    unaddressed_per_second: u32,
    read_buffer: usize,
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
            read_buffer: 64 * 1024,
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
    /// Heap bytes held by the outbound table (slots, free list, deadline heap).
    pub outbound_table_bytes: usize,
}

type Waiter = oneshot::Sender<Result<Incoming, RequestError>>;

/// State shared by the handles and the loops.
pub(crate) struct Shared {
    state: Mutex<State>,
    queue: WriteQueue,
    in_flight: Arc<Semaphore>,
    /// Wakes the timer when a deadline earlier than the one it sleeps to is registered.
    timer: Notify,
    /// Cancelled once the connection is closing.
    closing: CancellationToken,
    request_timeout: Option<Duration>,
}

struct State {
    outbound: Outbound<Waiter>,
    inbound: Inbound<CancellationToken>,
    progress: HashMap<ProgressToken, Progress>,
    timer_target: Option<std::time::Instant>,
    closed: Option<CloseReason>,
    peak_in_flight: usize,
    invalid_received: u64,
    replies_suppressed: u64,
    handler_panics: u64,
}

struct Progress {
    id: u64,
    timeout: Duration,
    cap: Option<std::time::Instant>,
}

impl Shared {
    fn new(b: &PeerBuilder) -> Self {
        Self {
            state: Mutex::new(State {
                outbound: Outbound::new(b.limits.in_flight()),
                // Running handlers plus as many waiting for a slot.
                inbound: Inbound::new(b.limits.handlers().saturating_mul(2)),
                progress: HashMap::new(),
                timer_target: None,
                closed: None,
                peak_in_flight: 0,
                invalid_received: 0,
                replies_suppressed: 0,
                handler_panics: 0,
            }),
            queue: WriteQueue::new(b.limits.write_queue_bytes()),
            in_flight: Arc::new(Semaphore::new(b.limits.in_flight())),
            timer: Notify::new(),
            closing: CancellationToken::new(),
            request_timeout: b.request_timeout,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the tables consistent before anything that can panic
        // (waiters are completed after the lock is released), so a poisoned lock is usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the connection: every waiter fails with `reason`, every handler is cancelled, the
    /// queue takes nothing more (what it holds is still written). The first reason sticks.
    pub(crate) fn close(&self, reason: CloseReason) {
        let (waiters, handlers, reason) = {
            let mut st = self.lock();
            if st.closed.is_some() {
                return;
            }
            st.closed = Some(reason.clone());
            st.progress.clear();
            let waiters: Vec<_> = st.outbound.drain().collect();
            let handlers: Vec<_> = st.inbound.drain().collect();
            (waiters, handlers, reason)
        };
        self.in_flight.close();
        self.queue.close();
        self.closing.cancel();
        for (_, w) in waiters {
            let _ = w.send(Err(RequestError::Closed(reason.clone())));
        }
        for token in handlers {
            token.cancel();
        }
        tracing::debug!(%reason, "connection closed");
    }

    fn closed_error(&self) -> RequestError {
        RequestError::Closed(self.lock().closed.clone().unwrap_or(CloseReason::Local))
    }

    /// Queues `notifications/cancelled` for one of our requests, without waiting.
    fn send_cancelled(&self, id: u64, reason: &str) {
        let _ = self.queue.send_now(|buf| write_cancelled(buf, id, reason));
    }
}

fn write_cancelled(buf: &mut BytesMut, id: u64, reason: &str) {
    #[derive(serde::Serialize)]
    struct Cancelled<'a> {
        #[serde(rename = "requestId")]
        request_id: u64,
        reason: &'a str,
    }
    let params = crate::Json(&Cancelled { request_id: id, reason });
    let msg = Outgoing::Notification { method: "notifications/cancelled", params: Some(params) };
    // Serialising a u64 and a &str cannot fail.
    let _ = msg.write(buf);
}

/// A cloneable handle to one connection: send requests and notifications, read counters, close.
#[derive(Clone)]
pub struct PeerHandle {
    shared: Arc<Shared>,
}

impl fmt::Debug for PeerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerHandle").field("closed", &self.is_closed()).finish()
    }
}

impl PeerHandle {
    /// Sends a request and waits for its response.
    ///
    /// Waits first for a free slot when [`Limits::max_in_flight`] requests are outstanding.
    /// Dropping the future before it completes cancels the request: its slot is freed and, if it
    /// was sent, `notifications/cancelled` goes to the other side.
    ///
    /// # Errors
    ///
    /// The other side's error response, a timeout, the connection's end, or params that cannot
    /// be serialised.
    pub async fn request<P: Payload>(
        &self,
        method: &str,
        params: Option<P>,
    ) -> Result<Incoming, RequestError> {
        self.request_with(method, params, RequestOptions::default()).await
    }

    /// [`PeerHandle::request`] with options.
    ///
    /// # Errors
    ///
    /// As [`PeerHandle::request`].
    pub async fn request_with<P: Payload>(
        &self,
        method: &str,
        params: Option<P>,
        options: RequestOptions,
    ) -> Result<Incoming, RequestError> {
        let shared = &self.shared;
        let permit =
            shared.in_flight.clone().acquire_owned().await.map_err(|_| shared.closed_error())?;
        let (tx, rx) = oneshot::channel();
        let timeout = options.timeout.unwrap_or(shared.request_timeout);
        let now = Instant::now().into_std();
        let deadline = timeout.and_then(|t| now.checked_add(t));
        let id = {
            let mut st = shared.lock();
            if let Some(reason) = &st.closed {
                return Err(RequestError::Closed(reason.clone()));
            }
            // The permit bounds the table to its capacity, so `Full` cannot happen unless the
            // id space of a slot ran out (after 2^32 uses); report that as an error, not a hang.
            let Ok(id) = st.outbound.register(tx, deadline) else {
                return Err(RequestError::Closed(CloseReason::Io("request ids exhausted".into())));
            };
            st.peak_in_flight = st.peak_in_flight.max(st.outbound.len());
            if let (Some((token, total)), Some(t)) = (options.progress.clone(), timeout) {
                let cap = total.and_then(|d| now.checked_add(d));
                st.progress.insert(token, Progress { id, timeout: t, cap });
            }
            if deadline.is_some_and(|d| st.timer_target.is_none_or(|t| d < t)) {
                st.timer_target = deadline;
                shared.timer.notify_one();
            }
            id
        };
        let mut guard = Pending {
            shared,
            id,
            sent: false,
            done: false,
            progress: options.progress.map(|(t, _)| t),
            _permit: permit,
        };
        let wire_id = Id::Num(i64::try_from(id).expect("ids stay below 2^53"));
        let sent = shared
            .queue
            .send(|buf| Outgoing::Request { id: wire_id, method, params }.write(buf))
            .await;
        match sent {
            Ok(()) => guard.sent = true,
            Err(SendError::Closed) => return Err(shared.closed_error()),
            Err(SendError::Encode(e)) => return Err(RequestError::Encode(e.to_string())),
        }
        let outcome = rx.await;
        guard.done = true;
        match outcome {
            Ok(Ok(response)) => match response.message().error() {
                Some(e) => Err(RequestError::Rpc(RpcError::from_object(&e))),
                None => Ok(response),
            },
            Ok(Err(e)) => Err(e),
            Err(_) => Err(shared.closed_error()),
        }
    }

    /// Sends a notification. Waits while the write queue is full.
    ///
    /// # Errors
    ///
    /// The connection's end, or params that cannot be serialised.
    pub async fn notify<P: Payload>(
        &self,
        method: &str,
        params: Option<P>,
    ) -> Result<(), RequestError> {
        match self
            .shared
            .queue
            .send(|buf| Outgoing::Notification { method, params }.write(buf))
            .await
        {
            Ok(()) => Ok(()),
            Err(SendError::Closed) => Err(self.shared.closed_error()),
            Err(SendError::Encode(e)) => Err(RequestError::Encode(e.to_string())),
        }
    }

    /// Closes the connection: pending requests fail with [`CloseReason::Local`], handlers are
    /// cancelled, and what was already queued is written before the write side shuts down.
    pub fn close(&self) {
        self.shared.close(CloseReason::Local);
    }

    /// Whether the connection has ended.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.shared.closing.is_cancelled()
    }

    /// Completes when the connection has started closing (its queue may still be flushing; await
    /// [`Connection::closed`] for the end).
    pub async fn closing(&self) {
        self.shared.closing.cancelled().await;
    }

    /// The connection's counters.
    #[must_use]
    pub fn stats(&self) -> PeerStats {
        let st = self.shared.lock();
        PeerStats {
            outbound: st.outbound.stats(),
            inbound: st.inbound.stats(),
            in_flight: st.outbound.len(),
            peak_in_flight: st.peak_in_flight,
            invalid_received: st.invalid_received,
            replies_suppressed: st.replies_suppressed,
            handler_panics: st.handler_panics,
            outbound_table_bytes: st.outbound.memory_bytes(),
        }
    }

    /// Bytes of encoded messages waiting to be written.
    #[must_use]
    pub fn queued_bytes(&self) -> usize {
        self.shared.queue.len()
    }
}

/// A request on its way: frees its slot if the caller gives up before the response.
struct Pending<'a> {
    shared: &'a Shared,
    id: u64,
    sent: bool,
    done: bool,
    progress: Option<ProgressToken>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.done && self.progress.is_none() {
            return;
        }
        let cancelled = {
            let mut st = self.shared.lock();
            if let Some(token) = self.progress.take() {
                if st.progress.get(&token).is_some_and(|p| p.id == self.id) {
                    st.progress.remove(&token);
                }
            }
            if self.done { None } else { st.outbound.cancel(self.id) }
        };
        // MCP: a request given up on SHOULD be followed by notifications/cancelled.
        if cancelled.is_some() && self.sent {
            self.shared.send_cancelled(self.id, "the caller gave up on the request");
        }
    }
}

/// The running connection: its loops (and child process, for [`transport::spawn_child`]).
///
/// Dropping it closes the connection as [`PeerHandle::close`] does; the loops then finish
/// writing what was queued on their own.
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
    pub async fn closed(mut self) -> CloseReason {
        for t in std::mem::take(&mut self.tasks) {
            let _ = t.await;
        }
        if let Some(t) = self.extra.take() {
            let _ = t.await;
        }
        self.shared.lock().closed.clone().unwrap_or(CloseReason::Local)
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
