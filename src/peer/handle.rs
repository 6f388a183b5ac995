//! The cloneable handle a host sends requests and notifications through, and the lock it shares
//! with the connection's driver.

use crate::sync::Locked;
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use smallvec::SmallVec;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::core::{Config, Core, PeerStats};
use super::core::{Started, Timeout};
use super::error::{CloseReason, RequestError};
use super::incoming::{Incoming, RpcError};
use super::principal::Principal;
use crate::{message::encode::Payload, message::owned::OwnedId};

/// An MCP progress token: a string or an integer.
pub type ProgressToken = OwnedId;

/// Options for one request.
#[derive(Clone, Debug, Default)]
pub struct RequestOptions {
    pub(crate) timeout: Timeout,
    pub(crate) progress: Option<(ProgressToken, Option<Duration>)>,
    /// Where the request's id is written once it has one (before it is sent).
    pub(crate) id_sink: Option<Arc<AtomicU64>>,
    /// Where the position in the stream read at which it stops being in flight is written
    /// (its answer's, or the last frame's read before it timed out, failed or was given up).
    pub(crate) settled_sink: Option<Arc<AtomicU64>>,
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
        self.timeout = Timeout::from_option(timeout);
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

/// The now of the tokio clock (paused in tests), as the core takes it.
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// A transport that sends a request itself, from the caller's task: the Streamable HTTP
/// client, whose POST then runs in the future of the caller's request, not in a task of its
/// own behind the connection's task.
pub(crate) trait Direct: Send + Sync + 'static {
    /// The exchange that sends request `id` (`body`, one JSON-RPC request without a line
    /// ending) and hands its answer to the core: the response straight to its waiter
    /// ([`RequestFailer::deliver`]), or whatever came before it to the connection's task, and
    /// then the response after it. Dropping the future ends the exchange.
    fn post(&self, body: BytesMut, id: u64) -> DirectPost;
}

/// An exchange a [`Direct`] transport runs in the caller's task.
pub(crate) type DirectPost = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What a connection's handles, driver and handler tasks share: the core behind its lock, and
/// the signals that live outside it.
pub(crate) struct Shared {
    core: Mutex<Core>,
    /// One permit per outbound request in flight: callers past the bound wait here, in order.
    pub(crate) in_flight: Semaphore,
    /// Cancelled once the connection is closing.
    pub(crate) closing: CancellationToken,
    /// Cancelled once the driver has ended (flushed, failed or given up).
    pub(crate) done: CancellationToken,
    /// Bytes read from the transport.
    pub(crate) bytes_read: Arc<AtomicU64>,
    /// Published by the driver at each turn: every message read at a position below this has
    /// had its handler polled at least once ([`Core::first_unbegun`]).
    pub(crate) begun_below: AtomicU64,
    /// Who the transport says is on the other side now (an HTTP server's checked token);
    /// each request's [`Context`](super::Context) takes it as the request comes in.
    principal: Mutex<Option<Arc<Principal>>>,
    /// Whether `principal` was ever set: a peer with none skips its lock.
    has_principal: AtomicBool,
    /// The transport's way to send a request from the caller's task, if it has one.
    pub(crate) direct: OnceLock<Arc<dyn Direct>>,
}

/// Tasks to wake once the lock is released; four fit without allocating.
pub(crate) type Wakers = SmallVec<[Waker; 4]>;

impl Shared {
    pub(crate) fn new(cfg: &Config) -> Self {
        Self {
            core: Mutex::new(Core::new(cfg)),
            in_flight: Semaphore::new(cfg.limits.in_flight()),
            closing: CancellationToken::new(),
            done: CancellationToken::new(),
            bytes_read: Arc::new(AtomicU64::new(0)),
            begun_below: AtomicU64::new(1),
            principal: Mutex::new(None),
            has_principal: AtomicBool::new(false),
            direct: OnceLock::new(),
        }
    }

    /// Sets who is on the other side, for the requests that come in from now on (the HTTP
    /// server's guard is the one transport that checks).
    #[cfg(feature = "http")]
    pub(crate) fn set_principal(&self, p: Option<Arc<Principal>>) {
        if p.is_none() && !self.has_principal.load(Ordering::Acquire) {
            return;
        }
        self.has_principal.store(true, Ordering::Release);
        *self.principal.locked() = p;
    }

    /// Who is on the other side now.
    pub(crate) fn principal(&self) -> Option<Arc<Principal>> {
        if !self.has_principal.load(Ordering::Acquire) {
            return None;
        }
        self.principal.locked().clone()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Core> {
        // The core keeps its tables consistent at every return, and nothing that can panic runs
        // under the lock but the core's own code, so a poisoned lock is still usable.
        self.core.locked()
    }

    /// Runs `f` on the core, then wakes the tasks it left to wake.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Core) -> R) -> R {
        self.with_from(None, f)
    }

    /// [`Shared::with`] for the task whose waker is `me`, which is not woken: it is running,
    /// and looks at the core again before it waits.
    pub(crate) fn with_from<R>(&self, me: Option<&Waker>, f: impl FnOnce(&mut Core) -> R) -> R {
        let mut wake = Wakers::new();
        let (r, closed) = {
            let mut core = self.lock();
            let r = f(&mut core);
            core.take_wakers(&mut wake);
            (r, core.is_closed())
        };
        if let Some(me) = me {
            wake.retain(|w| !w.will_wake(me));
        }
        self.after(wake, closed);
        r
    }

    /// Wakes `wake` and, once the core has closed, tells those outside it.
    pub(crate) fn after(&self, wake: Wakers, closed: bool) {
        for w in wake {
            w.wake();
        }
        if closed && !self.closing.is_cancelled() {
            self.in_flight.close();
            self.closing.cancel();
        }
    }

    /// Closes the connection.
    pub(crate) fn close(&self, reason: CloseReason) {
        self.with(|c| c.close(reason));
    }
}

/// A transport's way to fail one request of the connection's (the HTTP client's, whose
/// exchanges fail one by one), which does not keep the connection alive.
#[cfg(feature = "http")]
#[derive(Clone, Default)]
pub(crate) struct RequestFailer(std::sync::Weak<Shared>);

#[cfg(feature = "http")]
impl RequestFailer {
    /// Fails request `id` with `error`; `false` when the connection is gone.
    pub(crate) fn fail(&self, id: crate::message::Id<'_>, error: super::TransportError) -> bool {
        let Some(shared) = self.0.upgrade() else { return false };
        shared.with(|c| c.handle_transport_failure(id, error));
        true
    }

    /// Hands a response the transport read straight to its waiter, from the task whose waker
    /// is `me` (not woken: it is running). Gives `frame` back when it is no response, or the
    /// connection is gone.
    pub(crate) fn deliver(
        &self,
        frame: crate::message::Frame,
        me: &Waker,
    ) -> Result<(), crate::message::Frame> {
        let Some(shared) = self.0.upgrade() else { return Err(frame) };
        let len = frame.as_bytes().len() as u64;
        shared.with_from(Some(me), |c| c.deliver_response(frame))?;
        shared.bytes_read.fetch_add(len, Ordering::Relaxed);
        Ok(())
    }
}

/// A cloneable handle to one connection: send requests and notifications, read counters, close.
#[derive(Clone)]
pub struct PeerHandle {
    pub(crate) shared: Arc<Shared>,
    /// The request of the other side whose handler holds this handle (through its
    /// [`Context`](super::Context)), for a transport that routes what it sends.
    pub(crate) related: Option<OwnedId>,
}

impl fmt::Debug for PeerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerHandle").field("closed", &self.is_closed()).finish()
    }
}

impl PeerHandle {
    /// What fails this connection's requests one by one, for its transport.
    #[cfg(feature = "http")]
    pub(crate) fn failer(&self) -> RequestFailer {
        RequestFailer(Arc::downgrade(&self.shared))
    }

    /// Sends a request and waits for its response.
    ///
    /// Waits first for a free slot when [`Limits::max_in_flight`](crate::Limits::max_in_flight) requests are outstanding.
    /// Dropping the future before it completes cancels the request: its slot is freed and, if it
    /// was sent, `notifications/cancelled` goes to the other side.
    ///
    /// Over Streamable HTTP ([`crate::http::HttpClient`]) the request's POST runs inside this
    /// future, so it goes forward only while the future is polled: await it (or poll it in a
    /// `select!`) rather than leaving it unpolled and expecting it to be sent meanwhile. Over
    /// the other transports the connection's task sends it once the future has been polled once.
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
        let shared = &*self.shared;
        let Ok(_permit) = shared.in_flight.acquire().await else {
            return Err(shared.with(|c| c.closed_error()));
        };
        let token = options.progress.as_ref().map(|(t, _)| t.clone());
        let id_sink = options.id_sink.clone();
        let mut settled_sink = options.settled_sink.clone();
        let mut options = Some(options);
        // A transport that sends requests itself does so here, in this task: its exchange is
        // polled by this future, and nothing crosses the connection's task.
        let direct = shared.direct.get();
        let mut body = None;
        let mut post: Option<DirectPost> = None;
        let mut pending = Pending {
            shared,
            id: None,
            sent: false,
            done: false,
            // MCP: "The initialize request MUST NOT be cancelled by clients".
            cancellable: method != "initialize",
            token,
        };
        // The first poll starts the request (registers it and queues it if there is room) and
        // leaves its waker, under one lock. The deadline runs while the request waits for room
        // in the write buffer too: a timeout (or the connection's end) before it is sent returns
        // at once, and nothing is sent.
        let outcome = poll_fn(|cx| {
            let polled = shared.with(|c| {
                let id = match pending.id {
                    Some(id) => id,
                    None => {
                        let o = options.take().unwrap_or_default();
                        let related = self.related.as_ref();
                        let started = c.start_direct(
                            now(),
                            method,
                            &params,
                            (o.timeout, o.progress),
                            related,
                            direct.is_some(),
                        );
                        let started = started.map(|(id, how)| match how {
                            Started::Direct(b) => {
                                body = Some(b);
                                (id, true)
                            }
                            Started::Queued(sent) => (id, sent),
                        });
                        match started {
                            Ok((id, sent)) => {
                                if let Some(sink) = &id_sink {
                                    sink.store(id, Ordering::Release);
                                }
                                if let Some(sink) = settled_sink.take() {
                                    c.watch_request(id, sink);
                                }
                                pending.id = Some(id);
                                pending.sent = sent;
                                id
                            }
                            Err(e) => {
                                pending.done = true;
                                return Poll::Ready(Err(e));
                            }
                        }
                    }
                };
                if !pending.sent {
                    match c.send_request(id, method, &params, self.related.as_ref()) {
                        Ok(sent) => pending.sent = sent,
                        Err(e) => return Poll::Ready(Err(e)),
                    }
                }
                let outcome = c.poll_request(id, pending.sent, cx.waker());
                pending.done = outcome.is_ready();
                outcome
            });
            if polled.is_ready() {
                return polled;
            }
            if let (Some(b), Some(d), Some(id)) = (body.take(), direct, pending.id) {
                post = Some(d.post(b, id));
            }
            // The exchange ended: its response, if it came first, is in the waiter's cell now.
            if let (Some(p), Some(id)) = (post.as_mut(), pending.id)
                && p.as_mut().poll(cx).is_ready()
            {
                post = None;
                let outcome = shared
                    .with_from(Some(cx.waker()), |c| c.poll_request(id, pending.sent, cx.waker()));
                pending.done = outcome.is_ready();
                return outcome;
            }
            Poll::Pending
        })
        .await;
        drop(post);
        if let (Err(RequestError::Timeout), Some(id)) = (&outcome, pending.id)
            && pending.sent
            && pending.cancellable
        {
            // MCP: a request that timed out SHOULD be followed by notifications/cancelled.
            shared.with(|c| c.send_cancelled(id, "the request timed out"));
        }
        match outcome {
            Ok(response) => match response.message().error() {
                Some(e) => Err(RequestError::Rpc(RpcError::from_object(&e))),
                None => Ok(response),
            },
            Err(e) => Err(e),
        }
    }

    /// Sends a notification. Waits while the write buffer is full.
    ///
    /// # Errors
    ///
    /// The connection's end, or params that cannot be serialised.
    pub async fn notify<P: Payload>(
        &self,
        method: &str,
        params: Option<P>,
    ) -> Result<(), RequestError> {
        let related = self.related.as_ref();
        poll_fn(|cx| {
            self.shared.with(|c| match c.notify(method, &params, related) {
                Ok(true) => Poll::Ready(Ok(())),
                Ok(false) => {
                    c.wait_for_room(cx.waker());
                    Poll::Pending
                }
                Err(e) => Poll::Ready(Err(e)),
            })
        })
        .await
    }

    /// A handle to no connection, closed from the start: what [`Context::peer`](super::Context::peer)
    /// gives a request handled without a peer. Every send on it fails.
    pub(crate) fn detached() -> &'static PeerHandle {
        static DETACHED: std::sync::LazyLock<PeerHandle> = std::sync::LazyLock::new(|| {
            // Closed before anything is sent: the limits only have to be valid.
            let config = Config {
                limits: crate::limits::Limits::default(),
                request_timeout: None,
                detail: crate::message::encode::ReplyDetail::default(),
                unaddressed_per_second: 0,
                track: false,
            };
            let shared = Arc::new(Shared::new(&config));
            shared.close(CloseReason::Local);
            PeerHandle { shared, related: None }
        });
        &DETACHED
    }

    /// A handle to the same connection whose messages are not tied to the request whose
    /// handler holds this one. Over Streamable HTTP a handler's own messages travel on its
    /// request's stream while that request is open; send through this handle what answers no
    /// request (a list change, say), so it goes to the session's GET stream.
    #[must_use]
    pub fn unrelated(&self) -> PeerHandle {
        PeerHandle { shared: self.shared.clone(), related: None }
    }

    /// Closes the connection: pending requests fail with [`CloseReason::Local`], handlers are
    /// cancelled, and what was already queued is written before the write side shuts down.
    pub fn close(&self) {
        self.shared.close(CloseReason::Local);
    }

    /// How many handles to this peer exist (this one, its clones, and the connection task's):
    /// a transport that reuses a peer checks that no handler kept one.
    #[cfg(feature = "http")]
    pub(crate) fn handles(&self) -> usize {
        Arc::strong_count(&self.shared)
    }

    /// Whether `other` is a handle to the same connection.
    // For the bridge (`crate::bridge`), which needs `http` and `mcp`.
    #[cfg_attr(not(all(feature = "http", feature = "mcp")), allow(dead_code))]
    pub(crate) fn same_connection(&self, other: &PeerHandle) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Frames the connection has read so far: the position of the latest (see
    /// [`Incoming::position`]). Takes the connection's lock.
    // For the bridge (`crate::bridge`), which needs `http` and `mcp`.
    #[cfg_attr(not(all(feature = "http", feature = "mcp")), allow(dead_code))]
    pub(crate) fn read_position(&self) -> u64 {
        self.shared.lock().read_position()
    }

    /// Every message the connection read at a position below this has had its handler polled
    /// at least once (as of the connection task's latest turn; it only grows).
    // For the bridge (`crate::bridge`), which needs `http` and `mcp`.
    #[cfg_attr(not(all(feature = "http", feature = "mcp")), allow(dead_code))]
    pub(crate) fn begun_below(&self) -> u64 {
        self.shared.begun_below.load(Ordering::Acquire)
    }

    /// Whether the connection has ended.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.shared.closing.is_cancelled()
    }

    /// Completes when the connection has started closing (its queue may still be flushing; await
    /// [`ConnectionTask::closed`](super::ConnectionTask::closed) for the end).
    pub async fn closing(&self) {
        self.shared.closing.cancelled().await;
    }

    /// The connection's counters.
    #[must_use]
    pub fn stats(&self) -> PeerStats {
        let mut stats = self.shared.lock().stats();
        stats.bytes_read = self.shared.bytes_read.load(Ordering::Relaxed);
        stats
    }

    /// Bytes of encoded messages waiting to be written.
    #[must_use]
    pub fn queued_bytes(&self) -> usize {
        self.shared.lock().queued_bytes()
    }
}

/// A request on its way: frees its slot if the caller gives up before the response.
struct Pending<'a> {
    shared: &'a Shared,
    /// Set once it is started.
    id: Option<u64>,
    sent: bool,
    done: bool,
    cancellable: bool,
    token: Option<OwnedId>,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        if self.done && self.token.is_none() {
            return;
        }
        // MCP: a request given up on SHOULD be followed by notifications/cancelled.
        let notify = self.sent && self.cancellable && !self.done;
        let token = self.token.as_ref();
        self.shared.with(|c| c.forget_request(id, notify, token));
    }
}
