//! Our requests: their waiters, deadlines and progress resets.
//!
//! Each request in flight has a [`Waiter`] cell in its slot of the [`Outbound`] table: the
//! caller's waker while it waits, then its outcome. A response, a timeout or the connection's
//! end writes the outcome into the cell in place and hands back the waker to wake; the caller
//! collects the outcome, which frees the slot. No channel and no allocation per request.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use crate::mux::{Outbound, Unmatched};
use crate::peer::error::{CloseReason, RequestError};
use crate::peer::incoming::Incoming;
use crate::{message::Id, message::owned::OwnedId};

/// How long one request waits for its answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Timeout {
    /// The peer's request timeout ([`PeerBuilder::request_timeout`](crate::peer::PeerBuilder::request_timeout)).
    #[default]
    PeerDefault,
    /// No bound: the request waits until it is answered or the connection ends.
    Never,
    /// This long.
    After(Duration),
}

impl Timeout {
    /// `Never` for `None`, `After(d)` for `Some(d)`.
    #[must_use]
    pub fn from_option(timeout: Option<Duration>) -> Self {
        timeout.map_or(Self::Never, Self::After)
    }

    /// The bound this choice gives on a peer whose own request timeout is `peer`.
    #[must_use]
    pub fn resolve(self, peer: Option<Duration>) -> Option<Duration> {
        match self {
            Self::PeerDefault => peer,
            Self::Never => None,
            Self::After(d) => Some(d),
        }
    }

    /// This choice, or `fallback` where this one leaves it to the peer.
    #[must_use]
    pub fn or(self, fallback: Self) -> Self {
        if self == Self::PeerDefault { fallback } else { self }
    }
}

/// Where one request of ours stands: the task to wake, then what it gets.
#[derive(Default)]
pub(crate) struct Waiter {
    waker: Option<Waker>,
    outcome: Option<Result<Incoming, RequestError>>,
    /// Where the position in the stream read at which it stopped being in flight is written
    /// (see [`SentRequests::watch`]).
    settled: Option<Arc<AtomicU64>>,
}

impl Waiter {
    /// Its outcome, decided when the connection had read `at` frames (the answer's own
    /// position, for an answer).
    fn finish(&mut self, outcome: Result<Incoming, RequestError>, at: u64, wake: &mut Vec<Waker>) {
        self.outcome = Some(outcome);
        self.settle(at);
        wake.extend(self.waker.take());
    }

    fn settle(&mut self, at: u64) {
        if let Some(s) = self.settled.take() {
            s.store(at, Ordering::Release);
        }
    }
}

/// A progress token's request and how its deadline restarts.
struct Reset {
    id: u64,
    timeout: Duration,
    /// No restart goes past this.
    cap: Option<Instant>,
}

/// Our requests in flight.
pub(crate) struct SentRequests {
    table: Outbound<Waiter>,
    progress: HashMap<OwnedId, Reset>,
    peak: usize,
}

impl SentRequests {
    pub(crate) fn new(max_in_flight: usize) -> Self {
        Self { table: Outbound::new(max_in_flight), progress: HashMap::new(), peak: 0 }
    }

    /// Registers a request; `None` when no id is left (the caller's in-flight permit keeps the
    /// table within its capacity otherwise).
    pub(crate) fn register(
        &mut self,
        now: Instant,
        timeout: Option<Duration>,
        progress: Option<(OwnedId, Option<Duration>)>,
    ) -> Option<u64> {
        let deadline = timeout.and_then(|t| now.checked_add(t));
        let id = self.table.register(Waiter::default(), deadline).ok()?;
        self.peak = self.peak.max(self.table.len());
        if let (Some((token, total)), Some(timeout)) = (progress, timeout) {
            let cap = total.and_then(|d| now.checked_add(d));
            self.progress.insert(token, Reset { id, timeout, cap });
        }
        Some(id)
    }

    /// A response came: its waiter gets it. Late and unknown responses are counted by the table
    /// and dropped.
    pub(crate) fn deliver(&mut self, response: Incoming, wake: &mut Vec<Waker>) {
        let id = response.id().unwrap_or(Id::Null);
        let at = response.position();
        match self.table.answer(id) {
            Ok(w) => w.finish(Ok(response), at, wake),
            Err(why) => log_dropped(why, &response),
        }
    }

    /// Requests whose deadline passed get [`RequestError::Timeout`]. Returns how many.
    pub(crate) fn expire(&mut self, now: Instant, at: u64, wake: &mut Vec<Waker>) -> usize {
        let mut n = 0;
        while let Some((_, w)) = self.table.expire(now) {
            w.finish(Err(RequestError::Timeout), at, wake);
            n += 1;
        }
        n
    }

    /// The transport could not carry request `id` or its answer: its waiter gets `error`. An
    /// id no longer in flight (answered, timed out) is left alone.
    #[cfg(feature = "http")]
    pub(crate) fn fail(&mut self, id: Id<'_>, error: RequestError, at: u64, wake: &mut Vec<Waker>) {
        if let Ok(w) = self.table.answer(id) {
            w.finish(Err(error), at, wake);
        }
    }

    /// Every request in flight fails: no response can come any more.
    pub(crate) fn fail_all(&mut self, reason: &CloseReason, at: u64, wake: &mut Vec<Waker>) {
        let closed =
            |_, w: &mut Waiter| w.finish(Err(RequestError::Closed(reason.clone())), at, wake);
        self.table.drain_in_place(closed);
        self.progress.clear();
    }

    /// The caller's view of request `id`: its outcome if it has one (freeing its slot), or
    /// `Pending`, keeping `waker` to wake when it comes.
    pub(crate) fn poll(&mut self, id: u64, waker: &Waker) -> Poll<Result<Incoming, RequestError>> {
        let Some(w) = self.table.waiter_mut(id) else {
            return Poll::Ready(Err(RequestError::Closed(CloseReason::Local)));
        };
        if w.outcome.is_none() {
            match &mut w.waker {
                Some(old) if old.will_wake(waker) => {}
                slot => *slot = Some(waker.clone()),
            }
            return Poll::Pending;
        }
        let outcome = self.table.collect(id).and_then(|w| w.outcome);
        Poll::Ready(outcome.unwrap_or(Err(RequestError::Closed(CloseReason::Local))))
    }

    /// Writes into `sink`, once request `id` stops being in flight, the count of frames the
    /// connection had read then: its answer's position, or (a timeout, the connection's end,
    /// the caller giving up) the position of the last frame read before. A request no longer
    /// in flight is left alone.
    pub(crate) fn watch(&mut self, id: u64, sink: Arc<AtomicU64>) {
        if let Some(w) = self.table.waiter_mut(id)
            && w.outcome.is_none()
        {
            w.settled = Some(sink);
        }
    }

    /// The caller gave up on request `id` when `at` frames were read: its slot is freed.
    /// `true` when it was still in flight (so `notifications/cancelled` is owed if it was
    /// sent).
    pub(crate) fn forget(&mut self, id: u64, token: Option<&OwnedId>, at: u64) -> bool {
        if let Some(t) = token
            && self.progress.get(t).is_some_and(|r| r.id == id)
        {
            self.progress.remove(t);
        }
        if let Some(mut w) = self.table.cancel(id) {
            w.settle(at);
            return true;
        }
        self.table.collect(id);
        false
    }

    /// A `notifications/progress` for `token` restarts its request's deadline, up to its cap.
    /// Returns the new deadline, if any.
    pub(crate) fn progress(&mut self, token: &OwnedId, now: Instant) -> Option<Instant> {
        let reset = self.progress.get(token)?;
        let mut deadline = now.checked_add(reset.timeout);
        if let Some(cap) = reset.cap {
            deadline = Some(deadline.map_or(cap, |d| d.min(cap)));
        }
        if !self.table.set_deadline(reset.id, deadline) {
            self.progress.remove(token);
            return None;
        }
        deadline
    }

    /// Whether any request asked for progress resets (so progress notifications are worth
    /// reading).
    pub(crate) fn wants_progress(&self) -> bool {
        !self.progress.is_empty()
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.table.next_deadline()
    }

    pub(crate) fn table(&self) -> &Outbound<Waiter> {
        &self.table
    }

    pub(crate) fn peak(&self) -> usize {
        self.peak
    }
}

#[cold]
fn log_dropped(why: Unmatched, response: &Incoming) {
    match response.message().error() {
        Some(e) => tracing::debug!(?why, code = e.code, e.message, "dropped an error response"),
        None => tracing::debug!(?why, id = ?response.id(), "dropped a response"),
    }
}
