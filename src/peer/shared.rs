//! The state a connection's handles and loops share: the in-flight tables under one lock, the
//! write queue, and the signals between the loops.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::BytesMut;
use tokio::sync::{Notify, Semaphore, oneshot};
use tokio_util::sync::CancellationToken;

use super::handler::Incoming;
use super::queue::{TrySendError, WriteQueue};
use super::room::Room;
use super::{CloseReason, PeerBuilder, ProgressToken, RequestError};
use crate::mux::{Inbound, Outbound};
use crate::{Id, Outgoing};

pub(crate) type Waiter = oneshot::Sender<Result<Incoming, RequestError>>;

pub(crate) struct Shared {
    state: Mutex<State>,
    pub(crate) queue: WriteQueue,
    /// One permit per outbound request in flight.
    pub(crate) in_flight: Arc<Semaphore>,
    /// One permit per running inbound handler.
    pub(crate) handlers: Arc<Semaphore>,
    /// Inbound requests admitted and not yet answered (running, waiting for a handler slot, or
    /// with their reply not yet queued), and their frame bytes.
    pub(crate) requests: Holding,
    /// Notifications waiting for (or in) their handler, and their frames' bytes.
    pub(crate) notes: Holding,
    /// Wakes the read loop when a held request lets go, or a notification is handled.
    pub(crate) room: Room,
    /// Wakes the timer when a deadline earlier than the one it sleeps to is registered.
    pub(crate) timer: Notify,
    /// Wakes the read loop, after the other side's end of stream, when no request is held;
    /// `draining` is set then (SeqCst, as for [`Room`]'s count), so the wake costs nothing before.
    pub(crate) idle: Notify,
    pub(crate) draining: AtomicBool,
    /// Cancelled once the connection is closing.
    pub(crate) closing: CancellationToken,
    /// Cancelled once the write loop has ended (flushed, failed or given up).
    pub(crate) writer_done: CancellationToken,
    pub(crate) request_timeout: Option<Duration>,
    /// Control messages dropped because the other side stopped reading.
    pub(crate) control_dropped: AtomicU64,
    /// Notifications whose handler the notification worker has begun, in order, and whether
    /// the worker is waiting inside a handler now: a request read after `n` notifications
    /// waits until the count reaches `n`, or the worker waits (then the notifications behind
    /// the one it runs cannot begin before it ends, and holding requests back for them could
    /// deadlock a handler that awaits the other side).
    pub(crate) notes_begun: tokio::sync::watch::Sender<(u64, bool)>,
    /// Bytes read from and written to the transport.
    pub(crate) bytes_read: Arc<AtomicU64>,
    pub(crate) bytes_written: AtomicU64,
}

/// How many messages the read loop has taken in and not yet seen through, and their bytes.
#[derive(Default)]
pub(crate) struct Holding {
    pub(crate) count: AtomicUsize,
    pub(crate) bytes: AtomicUsize,
}

impl Holding {
    /// Whether one more of `bytes` fits within `max` messages and `max_bytes`; the first one
    /// always does, whatever its size.
    pub(crate) fn fits(&self, bytes: usize, max: usize, max_bytes: usize) -> bool {
        let count = self.count.load(Ordering::SeqCst);
        let held = self.bytes.load(Ordering::SeqCst);
        count == 0 || (count < max && held.saturating_add(bytes) <= max_bytes)
    }
}

pub(crate) struct State {
    pub(crate) outbound: Outbound<Waiter>,
    pub(crate) inbound: Inbound<CancellationToken>,
    pub(crate) progress: HashMap<ProgressToken, Progress>,
    pub(crate) timer_target: Option<std::time::Instant>,
    /// Set when reading has ended: no response can arrive any more.
    pub(crate) read_ended: Option<CloseReason>,
    pub(crate) closed: Option<CloseReason>,
    pub(crate) peak_in_flight: usize,
    pub(crate) invalid_received: u64,
    pub(crate) replies_suppressed: u64,
    pub(crate) handler_panics: u64,
}

pub(crate) struct Progress {
    pub(crate) id: u64,
    pub(crate) timeout: Duration,
    pub(crate) cap: Option<std::time::Instant>,
}

impl Shared {
    /// Waits until the notification worker has begun the first `n` notifications (so a
    /// request's handler never runs before a notification read earlier), or waits inside a
    /// handler, or `cancel`.
    pub(crate) async fn notes_begun_up_to(&self, n: u64, cancel: &CancellationToken) {
        let ready = |&(begun, waiting): &(u64, bool)| begun >= n || waiting;
        if ready(&self.notes_begun.borrow()) {
            return;
        }
        let mut begun = self.notes_begun.subscribe();
        tokio::select! {
            biased;
            () = cancel.cancelled() => {}
            () = self.closing.cancelled() => {}
            _ = begun.wait_for(ready) => {}
        }
    }

    pub(crate) fn new(b: &PeerBuilder) -> Self {
        let handlers = b.limits.handlers();
        Self {
            state: Mutex::new(State {
                outbound: Outbound::new(b.limits.in_flight()),
                // What the read loop admits at most: running handlers plus the queued.
                inbound: Inbound::new(handlers.saturating_add(b.limits.queued_requests())),
                progress: HashMap::new(),
                timer_target: None,
                read_ended: None,
                closed: None,
                peak_in_flight: 0,
                invalid_received: 0,
                replies_suppressed: 0,
                handler_panics: 0,
            }),
            queue: WriteQueue::new(b.limits.write_queue_bytes()),
            in_flight: Arc::new(Semaphore::new(b.limits.in_flight())),
            handlers: Arc::new(Semaphore::new(handlers)),
            requests: Holding::default(),
            notes: Holding::default(),
            room: Room::new(),
            timer: Notify::new(),
            idle: Notify::new(),
            draining: AtomicBool::new(false),
            closing: CancellationToken::new(),
            writer_done: CancellationToken::new(),
            request_timeout: b.request_timeout,
            control_dropped: AtomicU64::new(0),
            notes_begun: tokio::sync::watch::Sender::new((0, false)),
            bytes_read: Arc::new(AtomicU64::new(0)),
            bytes_written: AtomicU64::new(0),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the tables consistent before anything that can panic
        // (waiters are completed after the lock is released), so a poisoned lock is usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reading has ended: no response can come, so every waiter fails now and new requests are
    /// refused; handlers already admitted may still answer (see the read loop).
    pub(crate) fn read_ended(&self, reason: CloseReason) {
        let waiters: Vec<_> = {
            let mut st = self.lock();
            if st.read_ended.is_some() || st.closed.is_some() {
                return;
            }
            st.read_ended = Some(reason.clone());
            st.progress.clear();
            st.outbound.drain().collect()
        };
        for (_, w) in waiters {
            let _ = w.send(Err(RequestError::Closed(reason.clone())));
        }
    }

    /// Ends the connection: every waiter fails with `reason`, every handler is cancelled, the
    /// queue takes nothing more (what it holds is still written). The first reason sticks.
    pub(crate) fn close(&self, reason: CloseReason) {
        let (waiters, handlers, reason) = {
            let mut st = self.lock();
            if st.closed.is_some() {
                return;
            }
            let reason = st.read_ended.clone().unwrap_or(reason);
            st.closed = Some(reason.clone());
            st.progress.clear();
            let waiters: Vec<_> = st.outbound.drain().collect();
            let handlers: Vec<_> = st.inbound.drain().collect();
            (waiters, handlers, reason)
        };
        self.in_flight.close();
        self.handlers.close();
        self.queue.close();
        self.closing.cancel();
        for (_, w) in waiters {
            let _ = w.send(Err(RequestError::Closed(reason.clone())));
        }
        for token in handlers {
            token.cancel();
        }
        self.idle.notify_waiters();
        tracing::debug!(%reason, "connection closed");
    }

    /// Wakes the timer loop when `deadline` comes before the one it sleeps to.
    pub(crate) fn arm_timer(&self, st: &mut State, deadline: Option<std::time::Instant>) {
        if deadline.is_some_and(|d| st.timer_target.is_none_or(|t| d < t)) {
            st.timer_target = deadline;
            self.timer.notify_one();
        }
    }

    /// Why requests are refused now, if they are.
    pub(crate) fn refusing(st: &State) -> Option<CloseReason> {
        st.closed.clone().or_else(|| st.read_ended.clone())
    }

    pub(crate) fn closed_error(&self) -> RequestError {
        RequestError::Closed(Self::refusing(&self.lock()).unwrap_or(CloseReason::Local))
    }

    /// An inbound request is done: removes its entry if it is still its own. `false` when it
    /// was cancelled (or the connection closed) meanwhile, and so must not be answered.
    pub(crate) fn finish_inbound(&self, id: Id<'_>, entry: u64) -> bool {
        self.lock().inbound.finish(id, entry).is_some()
    }

    /// Queues `notifications/cancelled` for one of our requests without waiting; dropped (and
    /// counted) when the other side has stopped reading.
    pub(crate) fn send_cancelled(&self, id: u64, reason: &str) {
        if self.queue.try_send_control(|buf| write_cancelled(buf, id, reason))
            == Err(TrySendError::Full)
        {
            self.control_dropped.fetch_add(1, Ordering::Relaxed);
        }
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
