//! A request handled without a peer: what its [`Context`](super::Context) shares with the
//! transport that runs the handler in its own future (the Streamable HTTP server's stateless
//! requests). The handler's notifications wait here, in order, for the transport to take them;
//! the transport marks the call ended once it answered or the client went away.

// Only the HTTP server handles requests without a peer.
#![cfg_attr(not(feature = "http"), allow(dead_code))]

use crate::sync::Locked;
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::task::{Poll, Waker};

use bytes::{Bytes, BytesMut};

use super::error::{CloseReason, RequestError};
use crate::message::encode::Payload;

/// One request's link to the transport running its handler.
#[derive(Debug)]
pub(crate) struct Inline {
    state: Mutex<State>,
    /// The most notifications that wait for the transport; past it a new one is dropped (a
    /// later progress notification carries newer progress anyway).
    max_notes: usize,
}

#[derive(Debug, Default)]
struct State {
    /// Notifications sent and not yet taken, each one encoded message.
    notes: VecDeque<Bytes>,
    /// The transport, to wake when a note comes from another task.
    transport: Option<Waker>,
    /// Those waiting in [`Inline::ended`].
    waiting: Vec<Waker>,
    /// The request was answered, or the client went away.
    ended: bool,
}

impl Inline {
    /// A call whose transport keeps at most `max_notes` notifications waiting.
    pub(crate) fn new(max_notes: usize) -> Self {
        Self { state: Mutex::new(State::default()), max_notes: max_notes.max(1) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.locked()
    }

    /// The state, with `waker` kept to be woken by the next notification when none waits.
    fn watched(&self, waker: &Waker) -> MutexGuard<'_, State> {
        let mut s = self.state();
        if s.notes.is_empty() && !s.transport.as_ref().is_some_and(|w| w.will_wake(waker)) {
            s.transport = Some(waker.clone());
        }
        s
    }

    /// Queues a notification; an error once the call ended (nothing carries it any more).
    pub(crate) fn notify<P: Payload>(
        &self,
        method: &str,
        params: Option<P>,
    ) -> Result<(), RequestError> {
        let mut out = BytesMut::new();
        let note: crate::message::encode::Outgoing<'_, P> =
            crate::message::encode::Outgoing::Notification { method, params };
        note.write_value(&mut out).map_err(|e| RequestError::Encode(e.to_string()))?;
        let mut s = self.state();
        if s.ended {
            return Err(RequestError::Closed(CloseReason::Local));
        }
        if s.notes.len() >= self.max_notes {
            return Ok(());
        }
        s.notes.push_back(out.freeze());
        if let Some(w) = s.transport.take() {
            drop(s);
            w.wake();
        }
        Ok(())
    }

    /// The oldest notification waiting; when there is none, `waker` is woken by the next.
    pub(crate) fn take(&self, waker: &Waker) -> Option<Bytes> {
        self.watched(waker).notes.pop_front()
    }

    /// Every notification waiting, oldest first.
    pub(crate) fn drain(&self) -> VecDeque<Bytes> {
        std::mem::take(&mut self.state().notes)
    }

    /// Whether a notification waits; when none does, `waker` is woken by the next.
    pub(crate) fn noted(&self, waker: &Waker) -> bool {
        !self.watched(waker).notes.is_empty()
    }

    /// The request was answered or abandoned: later notifications are refused, and
    /// [`Inline::ended`] completes.
    pub(crate) fn end(&self) {
        let waiting = {
            let mut s = self.state();
            s.ended = true;
            s.transport = None;
            std::mem::take(&mut s.waiting)
        };
        for w in waiting {
            w.wake();
        }
    }

    /// Whether the call ended.
    pub(crate) fn is_ended(&self) -> bool {
        self.state().ended
    }

    /// Completes once the call ended.
    pub(crate) fn ended(&self, waker: &Waker) -> Poll<()> {
        let mut s = self.state();
        if s.ended {
            return Poll::Ready(());
        }
        if !s.waiting.iter().any(|w| w.will_wake(waker)) {
            s.waiting.push(waker.clone());
        }
        Poll::Pending
    }
}
