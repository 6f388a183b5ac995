//! The connection's state machine, sans-IO: every rule of a JSON-RPC connection, and nothing
//! that waits.
//!
//! ```text
//!  handle_frame(now, frame) ──►  sent requests:     a response completes its waiter cell
//!  handle_eof / handle_error       received requests: admitted, then handed out as an Event
//!  handle_timeout(now)             notifications:     handed out, in order
//!  start_request / notify /        invalid:           -32700 / -32600 queued (rate-limited without an id)
//!  forget_request (the handle)
//!  start_direct / deliver_response  a request the transport sends from the caller's task, and
//!                                   its response straight to the waiter (`direct.rs`)
//!  handler_done / notification_*  ──►  transmit: encoded replies, requests, notifications
//!  close()
//!                                 ◄──  poll_event, poll_transmit, poll_timeout, wants_read,
//!                                      take_wakers
//! ```
//!
//! The core reads no clock (time comes in as `now`), spawns nothing and does no I/O; the
//! driver (`peer::driver`) moves bytes and runs handlers, and the handle
//! (`peer::handle`) starts requests. Wakers are collected while the caller holds the
//! connection's lock and handed back by [`Core::take_wakers`], to be woken after it is
//! released. The tests drive two cores against each other in memory (`tests.rs`).
//!
//! Invariants, kept by every method:
//! - Reading is wanted ([`Core::wants_read`]) only while the connection is open and no frame is
//!   stalled; a stalled frame is the one message read that no bound had room for, and it is
//!   taken up again, in order, before anything read after it.
//! - A request is held (counted against the bounds) from its admission until its reply is
//!   queued or known not to be owed; the drain after the other side's end of stream ends when
//!   none is held and every notification read has been handled, or at its deadline.
//! - Once closed, every waiter has its outcome, every handler is told to stop, and the transmit
//!   buffer takes nothing more (what it holds is still written).

mod direct;
mod order;
mod receive;
mod received_notifications;
mod received_requests;
mod sent_requests;
pub(crate) mod transmit;

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use bytes::BytesMut;

pub(crate) use direct::Started;
use receive::Limiter;
use received_notifications::ReceivedNotifications;
use received_requests::ReceivedRequests;
pub(crate) use received_requests::Ticket;
#[cfg(feature = "http")]
pub(crate) use received_requests::write_outcome;
use sent_requests::SentRequests;
pub use sent_requests::Timeout;
use transmit::{Lane, PushError, Route, Sent, Transmit};

#[cfg(feature = "http")]
use super::error::TransportError;
use super::error::{CloseReason, RequestError};
use super::incoming::{Incoming, Reply, RpcError};
use crate::limits::CLOSE_GRACE;
use crate::mux::{InboundStats, OutboundStats};
use crate::{
    limits::Limits, message::Frame, message::Id, message::encode::Outgoing,
    message::encode::Payload, message::encode::ReplyDetail, message::owned::OwnedId,
};

/// What the core is set up with.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) limits: Limits,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) detail: ReplyDetail,
    pub(crate) unaddressed_per_second: u32,
    /// Whether the transport routes messages one by one and wants a [`Sent`] record for each.
    pub(crate) track: bool,
}

/// Work for the driver.
pub(crate) enum Event {
    /// Run the handler of this request; report its end with [`Core::handler_done`].
    Request { ticket: Ticket, request: Incoming },
    /// Run the handler of this notification; report with [`Core::notification_waiting`] (if
    /// its first poll returned `Pending`) and [`Core::notification_done`].
    Notification(Incoming),
}

enum Phase {
    Open,
    /// The other side's end of stream: no response can come, but held requests are still
    /// answered, until none is held or `until`.
    Draining {
        reason: CloseReason,
        until: Instant,
    },
    Closed(CloseReason),
}

/// The one frame read that no bound had room for.
enum Stalled {
    Frame(Frame),
    /// A batch, from element `next` on.
    Batch {
        frame: Arc<Frame>,
        next: usize,
        batch: u32,
        share: usize,
    },
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

pub(crate) struct Core {
    detail: ReplyDetail,
    request_timeout: Option<Duration>,
    sent: SentRequests,
    received: ReceivedRequests,
    notifications: ReceivedNotifications,
    tx: Transmit,
    events: VecDeque<Event>,
    wake: Vec<Waker>,
    stalled: Option<Stalled>,
    limiter: Limiter,
    phase: Phase,
    /// The latest time passed in.
    now: Option<Instant>,
    /// The driver's waker, taken when there is work for it.
    driver: Option<Waker>,
    /// The deadline the driver last read from [`Core::poll_timeout`].
    armed: Option<Instant>,
    /// Whether the writer holds messages it took and has not yet reported written.
    writer_busy: bool,
    /// Frames read so far: the position of the latest (see `order.rs`).
    read: u64,
    stats: PeerStats,
}

impl Core {
    pub(crate) fn new(cfg: &Config) -> Self {
        let l = &cfg.limits;
        Self {
            detail: cfg.detail,
            request_timeout: cfg.request_timeout,
            sent: SentRequests::new(l.in_flight()),
            received: ReceivedRequests::new(
                l.handlers(),
                l.queued_requests(),
                l.held_request_bytes(),
            ),
            notifications: ReceivedNotifications::new(),
            tx: Transmit::new(l.write_queue_bytes(), cfg.track),
            events: VecDeque::new(),
            wake: Vec::new(),
            stalled: None,
            limiter: Limiter::new(cfg.unaddressed_per_second),
            phase: Phase::Open,
            now: None,
            driver: None,
            armed: None,
            writer_busy: false,
            read: 0,
            stats: PeerStats::default(),
        }
    }

    // ---- Input from the transport. ----

    /// One frame read. Call only while [`Core::wants_read`].
    pub(crate) fn handle_frame(&mut self, now: Instant, frame: Frame) {
        self.now = Some(now);
        debug_assert!(self.stalled.is_none());
        self.read += 1;
        if matches!(self.phase, Phase::Open) {
            self.stalled = self.dispatch(frame);
        }
        self.pump();
    }

    /// The other side closed its end: no response can come, so every waiter fails now and new
    /// requests are refused; requests it sent before are still answered and its notifications
    /// handled (a client may half-close after writing), for [`CLOSE_GRACE`] at most.
    pub(crate) fn handle_eof(&mut self, now: Instant) {
        self.now = Some(now);
        if !matches!(self.phase, Phase::Open) {
            return;
        }
        self.sent.fail_all(&CloseReason::Eof, self.read, &mut self.wake);
        let until = now.checked_add(CLOSE_GRACE).unwrap_or(now);
        self.phase = Phase::Draining { reason: CloseReason::Eof, until };
        self.stalled = None;
        self.pump();
    }

    /// The transport could not carry request `id` of ours, or its answer: it fails with
    /// `error`, and the connection goes on.
    #[cfg(feature = "http")]
    pub(crate) fn handle_transport_failure(
        &mut self,
        id: crate::message::Id<'_>,
        error: TransportError,
    ) {
        self.sent.fail(id, RequestError::Transport(error), self.read, &mut self.wake);
    }

    /// Time passed: requests past their deadline fail, and a drain past its deadline ends.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        self.now = Some(now);
        self.sent.expire(now, self.read, &mut self.wake);
        if let Phase::Draining { until, .. } = self.phase
            && now >= until
        {
            self.close(CloseReason::Eof);
        }
        self.pump();
    }

    // ---- Input from the handle: our requests and notifications. ----

    /// Starts a request: registers it (with its deadline, and the progress token that restarts
    /// it) and queues it if the write buffer has room. Returns its id, and whether it was
    /// queued (if not, [`Core::send_request`] again once there is room).
    ///
    /// # Errors
    ///
    /// The connection's end, no id left, or params that cannot be encoded.
    pub(crate) fn start_request<P: Payload>(
        &mut self,
        now: Instant,
        method: &str,
        params: &Option<P>,
        timeout: Timeout,
        progress: Option<(OwnedId, Option<Duration>)>,
        related: Option<&OwnedId>,
    ) -> Result<(u64, bool), RequestError> {
        let id = self.register_request(now, timeout, progress)?;
        match self.send_request(id, method, params, related) {
            Ok(sent) => Ok((id, sent)),
            Err(e) => {
                self.sent.forget(id, None, self.read);
                Err(e)
            }
        }
    }

    /// Registers a request of ours: its slot, its deadline (the driver's timer moved earlier
    /// when it is the first), the progress token that restarts it.
    fn register_request(
        &mut self,
        now: Instant,
        timeout: Timeout,
        progress: Option<(OwnedId, Option<Duration>)>,
    ) -> Result<u64, RequestError> {
        self.now = Some(now);
        if let Some(reason) = self.refusing() {
            return Err(RequestError::Closed(reason));
        }
        let timeout = timeout.resolve(self.request_timeout);
        let Some(id) = self.sent.register(now, timeout, progress) else {
            return Err(RequestError::Closed(CloseReason::Io("request ids exhausted".into())));
        };
        let deadline = self.sent.next_deadline();
        if deadline.is_some() && (self.armed.is_none() || deadline < self.armed) {
            self.kick();
        }
        Ok(id)
    }

    /// Queues request `id` if there is room; `Ok(false)` when there is none yet. `related` is
    /// the request of the other side whose handler sends it.
    ///
    /// # Errors
    ///
    /// The connection's end, or params that cannot be encoded.
    pub(crate) fn send_request<P: Payload>(
        &mut self,
        id: u64,
        method: &str,
        params: &Option<P>,
        related: Option<&OwnedId>,
    ) -> Result<bool, RequestError> {
        let wire = Id::Num(i64::try_from(id).expect("ids stay below 2^53"));
        let msg = Outgoing::Request { id: wire, method, params: params.as_ref() };
        let route = || Route::Request { id, related: related.cloned() };
        let pushed = self.push(Lane::Normal, |buf| msg.write(buf), route);
        self.queued(pushed)
    }

    /// The caller's view of request `id`: its outcome (freeing its slot), or `Pending` with
    /// `waker` kept (and, while it is not yet queued, registered for room too).
    pub(crate) fn poll_request(
        &mut self,
        id: u64,
        queued: bool,
        waker: &Waker,
    ) -> Poll<Result<Incoming, RequestError>> {
        let outcome = self.sent.poll(id, waker);
        if outcome.is_pending() && !queued {
            self.tx.wait_for_room(waker);
        }
        outcome
    }

    /// The caller gave up on request `id` (or is done with it): its slot is freed and, when it is
    /// still in flight and `notify` (it was sent, and may be cancelled), `notifications/cancelled`
    /// is queued (dropped and counted when the other side has stopped reading).
    pub(crate) fn forget_request(&mut self, id: u64, notify: bool, token: Option<&OwnedId>) {
        if self.sent.forget(id, token, self.read) && notify {
            self.send_cancelled(id, "the caller gave up on the request");
        }
    }

    /// Queues `notifications/cancelled` for request `id` of ours, without waiting.
    pub(crate) fn send_cancelled(&mut self, id: u64, reason: &str) {
        #[derive(serde::Serialize)]
        struct Cancelled<'a> {
            #[serde(rename = "requestId")]
            request_id: u64,
            reason: &'a str,
        }
        let params = crate::message::encode::Json(&Cancelled { request_id: id, reason });
        let msg =
            Outgoing::Notification { method: "notifications/cancelled", params: Some(params) };
        let route = || Route::Notification { progress: false, related: None };
        if matches!(self.push(Lane::Control, |buf| msg.write(buf), route), Err(PushError::Full)) {
            self.stats.control_dropped += 1;
        }
    }

    /// Queues a notification if there is room; `Ok(false)` when there is none yet (the caller
    /// waits with [`Core::wait_for_room`]). `related` is the request whose handler sends it.
    ///
    /// # Errors
    ///
    /// The connection's end, or params that cannot be encoded.
    pub(crate) fn notify<P: Payload>(
        &mut self,
        method: &str,
        params: &Option<P>,
        related: Option<&OwnedId>,
    ) -> Result<bool, RequestError> {
        let msg = Outgoing::Notification { method, params: params.as_ref() };
        let route = || Route::Notification {
            progress: method == "notifications/progress",
            related: related.cloned(),
        };
        let pushed = self.push(Lane::Normal, |buf| msg.write(buf), route);
        self.queued(pushed)
    }

    /// Queues, for a routing transport, the hint that request `related`'s handler closes the
    /// event stream carrying its answer: a lone line ending, after what the handler queued
    /// before. In the control lane (it is one byte, and never waits); dropped when the
    /// connection is ending or past even that lane's bound.
    #[cfg(feature = "http")]
    pub(crate) fn close_stream(&mut self, related: &OwnedId) {
        let line = |buf: &mut BytesMut| {
            buf.extend_from_slice(b"\n");
            Ok(())
        };
        let route = || Route::CloseStream { related: related.clone() };
        let _ = self.push(Lane::Control, line, route);
    }

    /// Remembers a task to wake once the write buffer has room again.
    pub(crate) fn wait_for_room(&mut self, waker: &Waker) {
        self.tx.wait_for_room(waker);
    }

    // ---- Input from the driver: handlers. ----

    /// Request `ticket`'s handler ended: with its outcome, or `None` (it was cancelled, or the
    /// connection closed). The reply is queued, or waits for room holding its handler slot.
    pub(crate) fn handler_done(
        &mut self,
        ticket: Ticket,
        id: Option<Id<'_>>,
        outcome: Option<Result<Reply, RpcError>>,
    ) {
        let id = id.unwrap_or(Id::Null);
        let owed = self.received.done(ticket, outcome.map(|o| (id, o)));
        self.queue_owed(owed);
        self.pump();
        self.kick();
    }

    /// A handler panicked (its request is answered -32603 by the caller).
    pub(crate) fn handler_panicked(&mut self) {
        self.stats.handler_panics += 1;
    }

    /// Whether request `ticket` was cancelled (its handler is to stop); otherwise keeps `waker`
    /// to wake when it is.
    pub(crate) fn handler_cancelled(&mut self, ticket: Ticket, waker: Option<&Waker>) -> bool {
        self.received.cancelled(ticket, waker)
    }

    /// The notification handler handed out returned `Pending` on its first poll: requests read
    /// after it are no longer held back for the notifications behind it.
    pub(crate) fn notification_waiting(&mut self) {
        self.notifications.waiting();
        self.pump();
    }

    /// The notification handler handed out finished.
    pub(crate) fn notification_done(&mut self) {
        self.notifications.done();
        self.pump();
    }

    /// The writer wrote `n` bytes.
    pub(crate) fn wrote(&mut self, n: usize) {
        self.writer_busy = false;
        self.stats.bytes_written += n as u64;
    }

    /// Ends the connection: every waiter fails with `reason` (or the reason reading ended, if
    /// it did), every handler is told to stop, the transmit buffer takes nothing more. The
    /// first reason sticks.
    pub(crate) fn close(&mut self, reason: CloseReason) {
        let reason = match &self.phase {
            Phase::Closed(_) => return,
            Phase::Draining { reason, .. } => reason.clone(),
            Phase::Open => reason,
        };
        self.sent.fail_all(&reason, self.read, &mut self.wake);
        self.received.close(&mut self.wake);
        self.notifications.close();
        self.events.clear();
        self.stalled = None;
        self.tx.close(&mut self.wake);
        tracing::debug!(%reason, "connection closed");
        self.phase = Phase::Closed(reason);
        self.kick();
    }

    // ---- Output. ----

    /// The next piece of work for the driver.
    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Swaps what is queued into `out` (empty) and its records into `sent`; replies that
    /// waited for room take it. `false` when nothing was queued.
    pub(crate) fn poll_transmit(&mut self, out: &mut BytesMut, sent: &mut Vec<Sent>) -> bool {
        if !self.tx.take(out, sent, &mut self.wake) {
            return false;
        }
        self.writer_busy = true;
        self.flush_blocked();
        self.pump();
        true
    }

    /// When to call [`Core::handle_timeout`] next.
    pub(crate) fn poll_timeout(&mut self) -> Option<Instant> {
        let drain = match self.phase {
            Phase::Draining { until, .. } => Some(until),
            _ => None,
        };
        let next = match (self.sent.next_deadline(), drain) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.armed = next;
        next
    }

    /// Whether the transport routes messages and gets a [`Sent`] record for each.
    pub(crate) fn tracks(&self) -> bool {
        self.tx.tracks()
    }

    /// Whether the driver should read the next frame.
    pub(crate) fn wants_read(&self) -> bool {
        matches!(self.phase, Phase::Open) && self.stalled.is_none()
    }

    /// Whether the connection is closed.
    pub(crate) fn is_closed(&self) -> bool {
        matches!(self.phase, Phase::Closed(_))
    }

    /// Why the connection ended, once it has.
    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        match &self.phase {
            Phase::Closed(r) => Some(r.clone()),
            _ => None,
        }
    }

    /// Whether nothing is left to write.
    pub(crate) fn transmit_is_empty(&self) -> bool {
        self.tx.is_empty()
    }

    /// Bytes waiting for the writer.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.tx.len()
    }

    /// The tasks to wake, now that the caller is done with the core.
    pub(crate) fn take_wakers(&mut self, into: &mut impl Extend<Waker>) {
        into.extend(self.wake.drain(..));
    }

    /// Keeps the driver's waker, to be woken when there is work for it.
    pub(crate) fn set_driver(&mut self, waker: &Waker) {
        match &mut self.driver {
            Some(w) if w.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
    }

    /// The connection's counters (`bytes_read` is the transport's to fill in).
    pub(crate) fn stats(&self) -> PeerStats {
        let table = self.sent.table();
        PeerStats {
            outbound: table.stats(),
            inbound: self.received.stats(),
            in_flight: table.len(),
            peak_in_flight: self.sent.peak(),
            outbound_table_bytes: table.memory_bytes(),
            ..self.stats
        }
    }

    /// Why requests are refused now, if they are.
    pub(crate) fn refusing(&self) -> Option<CloseReason> {
        match &self.phase {
            Phase::Open => None,
            Phase::Draining { reason, .. } | Phase::Closed(reason) => Some(reason.clone()),
        }
    }

    pub(crate) fn closed_error(&self) -> RequestError {
        RequestError::Closed(self.refusing().unwrap_or(CloseReason::Local))
    }

    // ---- Inside. ----

    /// A message of the handle's, as its caller sees the push: queued (`true`), no room yet
    /// (`false`), or why it never will be.
    fn queued(&self, pushed: Result<(), PushError>) -> Result<bool, RequestError> {
        match pushed {
            Ok(()) => Ok(true),
            Err(PushError::Full) => Ok(false),
            Err(PushError::Closed) => Err(self.closed_error()),
            Err(PushError::Encode(e)) => Err(RequestError::Encode(e.to_string())),
        }
    }

    fn kick(&mut self) {
        self.wake.extend(self.driver.take());
    }

    /// Queues one message, waking the driver when the buffer was empty.
    fn push(
        &mut self,
        lane: Lane,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), crate::error::Error>,
        route: impl FnOnce() -> Route,
    ) -> Result<(), PushError> {
        let was_empty = self.tx.is_empty();
        self.tx.push(lane, encode, route)?;
        if was_empty {
            self.kick();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
