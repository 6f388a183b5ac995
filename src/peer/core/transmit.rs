//! What the connection has to write: encoded messages appended to one buffer, taken whole by
//! the writer, so every message queued between two writes goes out in one write.
//!
//! Two lanes share the buffer. [`Lane::Normal`] (requests, notifications, handlers' replies)
//! has room while the buffer holds less than `cap` bytes. [`Lane::Control`] (what the
//! connection owes without waiting on the other side: error replies to invalid messages,
//! cancellations) may go [`CONTROL_BUDGET`] bytes past it, so reading goes on while handlers
//! wait for room; only when that budget too is spent has the other side stopped reading
//! altogether, and then reading stops as well. A message larger than its lane's bound goes
//! alone into an empty buffer.
//!
//! A transport that routes messages one by one (Streamable HTTP) asks for a [`Sent`] record
//! per message: its length and what it is, as the connection knew when it encoded it, so
//! nothing is parsed again.

use std::task::Waker;

use bytes::BytesMut;

use crate::limits::CONTROL_BUDGET_BYTES as CONTROL_BUDGET;
use crate::{error::Error, message::owned::OwnedId};

/// Which bound a message is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// Room while fewer than `cap` bytes are queued.
    Normal,
    /// Room while fewer than `cap + CONTROL_BUDGET` bytes are queued.
    Control,
}

/// Why a message was not queued.
#[derive(Debug)]
pub(crate) enum PushError {
    /// The connection is ending and nothing more is written.
    Closed,
    /// No room in the message's lane: try again once the writer has taken the buffer.
    Full,
    /// The message could not be encoded; nothing was queued.
    Encode(Error),
}

/// One message in the buffer, for a transport that routes messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sent {
    /// Its length in bytes, line ending included.
    pub(crate) len: usize,
    /// How a router directs it.
    pub(crate) route: Route,
}

/// How a router directs a message the connection wrote: what it answers or relates to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// A response (success or error) to the other side's request `id` (`None`: an error
    /// answering a message whose id could not be read); `initialize` when it answers an
    /// `initialize` request.
    Response { id: Option<OwnedId>, initialize: bool },
    /// A batch of responses to these requests.
    Batch { ids: Vec<OwnedId> },
    /// A request of ours, with its id; `related` is the request of the other side whose
    /// handler sent it, when it was sent through that handler's
    /// [`Context`](crate::peer::Context).
    Request { id: u64, related: Option<OwnedId> },
    /// A notification; `related` is the request of the other side whose handler sent it, when
    /// it was sent through that handler's [`Context`](crate::peer::Context).
    Notification { progress: bool, related: Option<OwnedId> },
    /// No message (its bytes, a lone line ending, are not one): the handler of request
    /// `related` asks the transport to close the event stream that carries its answer
    /// (`mcpwire::http::close_sse_stream`), after what it sent before.
    #[cfg(feature = "http")]
    CloseStream { related: OwnedId },
}

pub(crate) struct Transmit {
    buf: BytesMut,
    cap: usize,
    closed: bool,
    /// One record per message in `buf`, when the transport routes messages.
    sent: Option<Vec<Sent>>,
    /// Tasks waiting for room in the normal lane.
    space: Vec<Waker>,
}

impl Transmit {
    pub(crate) fn new(cap: usize, track: bool) -> Self {
        Self {
            buf: BytesMut::new(),
            cap,
            closed: false,
            sent: track.then(Vec::new),
            space: Vec::new(),
        }
    }

    fn bound(&self, lane: Lane) -> usize {
        match lane {
            Lane::Normal => self.cap,
            Lane::Control => self.cap.saturating_add(CONTROL_BUDGET),
        }
    }

    /// Whether a message in `lane` would be queued now (if it is not larger than the room left).
    pub(crate) fn has_room(&self, lane: Lane) -> bool {
        !self.closed && (self.buf.is_empty() || self.buf.len() < self.bound(lane))
    }

    /// Whether the transport wants [`Sent`] records.
    pub(crate) fn tracks(&self) -> bool {
        self.sent.is_some()
    }

    /// Encodes one message at the end of the buffer if it fits in `lane`; `what` describes it
    /// for a routing transport (called only when one is attached).
    pub(crate) fn push(
        &mut self,
        lane: Lane,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), Error>,
        route: impl FnOnce() -> Route,
    ) -> Result<(), PushError> {
        if self.closed {
            return Err(PushError::Closed);
        }
        let before = self.buf.len();
        if let Err(e) = encode(&mut self.buf) {
            self.buf.truncate(before);
            return Err(PushError::Encode(e));
        }
        if before > 0 && self.buf.len() > self.bound(lane) {
            self.buf.truncate(before);
            return Err(PushError::Full);
        }
        if let Some(sent) = &mut self.sent {
            sent.push(Sent { len: self.buf.len() - before, route: route() });
        }
        Ok(())
    }

    /// Remembers a task to wake once the writer takes the buffer.
    pub(crate) fn wait_for_room(&mut self, waker: &std::task::Waker) {
        if !self.space.iter().any(|w| w.will_wake(waker)) {
            self.space.push(waker.clone());
        }
    }

    /// Swaps everything queued into `out` (which must be empty) and its records into `sent`;
    /// the tasks waiting for room go into `wake`. `false` when nothing was queued.
    pub(crate) fn take(
        &mut self,
        out: &mut BytesMut,
        sent: &mut Vec<Sent>,
        wake: &mut Vec<Waker>,
    ) -> bool {
        debug_assert!(out.is_empty() && sent.is_empty());
        if self.buf.is_empty() {
            return false;
        }
        std::mem::swap(&mut self.buf, out);
        if let Some(s) = &mut self.sent {
            std::mem::swap(s, sent);
        }
        wake.append(&mut self.space);
        true
    }

    /// Takes nothing more; what is queued is still written. Tasks waiting for room go into
    /// `wake` (they will find the connection closed).
    pub(crate) fn close(&mut self, wake: &mut Vec<Waker>) {
        self.closed = true;
        wake.append(&mut self.space);
    }

    /// Bytes waiting for the writer.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

#[cfg(test)]
mod tests;
