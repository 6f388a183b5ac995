//! The cloneable handle a host sends requests and notifications through.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::{OwnedSemaphorePermit, oneshot};
use tokio::time::Instant;

use super::handler::{Incoming, RpcError};
use super::queue::{Lane, SendError};
use super::shared::{Progress, Shared};
use super::{CloseReason, PeerStats, ProgressToken, RequestError, RequestOptions};
use crate::{Id, Outgoing, Payload};

/// A cloneable handle to one connection: send requests and notifications, read counters, close.
#[derive(Clone)]
pub struct PeerHandle {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for PeerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerHandle").field("closed", &self.is_closed()).finish()
    }
}

impl PeerHandle {
    /// Sends a request and waits for its response.
    ///
    /// Waits first for a free slot when [`Limits::max_in_flight`](crate::Limits::max_in_flight) requests are outstanding.
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
            if let Some(reason) = Shared::refusing(&st) {
                return Err(RequestError::Closed(reason));
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
            shared.arm_timer(&mut st, deadline);
            id
        };
        let mut guard = Pending {
            shared,
            id,
            sent: false,
            done: false,
            // MCP: "The initialize request MUST NOT be cancelled by clients".
            cancellable: method != "initialize",
            progress: options.progress.map(|(t, _)| t),
            _permit: permit,
        };
        let wire_id = Id::Num(i64::try_from(id).expect("ids stay below 2^53"));
        let mut rx = rx;
        let send = shared
            .queue
            .send(Lane::Normal, |buf| Outgoing::Request { id: wire_id, method, params }.write(buf));
        // The deadline runs while the request waits for room in the write queue too: a timeout
        // (or the connection's end) before it is sent returns at once, and nothing is sent.
        let sent = tokio::select! {
            biased;
            outcome = &mut rx => {
                guard.done = true;
                return outcome_of(shared, outcome);
            }
            sent = send => sent,
        };
        match sent {
            Ok(()) => guard.sent = true,
            Err(SendError::Closed) => return Err(shared.closed_error()),
            Err(SendError::Encode(e)) => return Err(RequestError::Encode(e.to_string())),
        }
        let outcome = rx.await;
        guard.done = true;
        if matches!(outcome, Ok(Err(RequestError::Timeout))) && guard.cancellable {
            // MCP: a request that timed out SHOULD be followed by notifications/cancelled.
            shared.send_cancelled(id, "the request timed out");
        }
        outcome_of(shared, outcome)
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
            .send(Lane::Normal, |buf| Outgoing::Notification { method, params }.write(buf))
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
    /// [`Connection::closed`](super::Connection::closed) for the end).
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
            control_dropped: self.shared.control_dropped.load(Ordering::Relaxed),
            bytes_read: self.shared.bytes_read.load(Ordering::Relaxed),
            bytes_written: self.shared.bytes_written.load(Ordering::Relaxed),
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
    cancellable: bool,
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
            if let Some(token) = self.progress.take()
                && st.progress.get(&token).is_some_and(|p| p.id == self.id)
            {
                st.progress.remove(&token);
            }
            if self.done { None } else { st.outbound.cancel(self.id) }
        };
        // MCP: a request given up on SHOULD be followed by notifications/cancelled.
        if cancelled.is_some() && self.sent && self.cancellable {
            self.shared.send_cancelled(self.id, "the caller gave up on the request");
        }
    }
}

/// What a request returns, from what its waiter received.
fn outcome_of(
    shared: &Shared,
    outcome: Result<Result<Incoming, RequestError>, oneshot::error::RecvError>,
) -> Result<Incoming, RequestError> {
    match outcome {
        Ok(Ok(response)) => match response.message().error() {
            Some(e) => Err(RequestError::Rpc(RpcError::from_object(&e))),
            None => Ok(response),
        },
        Ok(Err(e)) => Err(e),
        Err(_) => Err(shared.closed_error()),
    }
}
