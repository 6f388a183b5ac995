//! Where messages stand in the stream the connection reads: each frame read is numbered (1,
//! 2, …, the elements of a batch sharing their frame's number), and the number is kept with
//! each message it hands out ([`Incoming::position`](crate::peer::Incoming)). A caller can
//! learn where in that order its request stopped being in flight
//! ([`SentRequests::watch`](super::sent_requests::SentRequests::watch)), and up to where every
//! message read has had its handler begun ([`Core::first_unbegun`]): together they tell, for a
//! message of the other side's, whether it was read before a request's answer, whichever
//! thread handles what first.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::{Core, Event};

impl Core {
    /// Frames read so far: the position of the latest.
    #[cfg_attr(not(all(feature = "http", feature = "mcp")), allow(dead_code))]
    pub(crate) fn read_position(&self) -> u64 {
        self.read
    }

    /// Has the position at which request `id` stops being in flight written into `sink`.
    pub(crate) fn watch_request(&mut self, id: u64, sink: Arc<AtomicU64>) {
        self.sent.watch(id, sink);
    }

    /// The lowest position of a message read whose handler has not yet been handed to the
    /// driver: the stalled frame, a request waiting for a slot, a notification held, work
    /// queued for the driver. One past the latest frame when there is none. The driver, which
    /// polls each handler it is handed before it next takes the lock, publishes this at each
    /// turn: below it, every message's handler has been polled at least once.
    pub(crate) fn first_unbegun(&self) -> u64 {
        let mut first = self.read.saturating_add(1);
        if self.stalled.is_some() {
            // Reading stops at a stalled frame: it is the latest read.
            first = self.read;
        }
        let waiting = self.received.waiting.front().map(|(_, r, _)| r.position());
        for p in waiting.into_iter().chain(self.notifications.first_waiting()) {
            first = first.min(p);
        }
        for e in &self.events {
            let p = match e {
                Event::Request { request, .. } => request.position(),
                Event::Notification(n) => n.position(),
            };
            first = first.min(p);
        }
        first
    }
}

#[cfg(test)]
mod tests;
