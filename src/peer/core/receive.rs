//! What the core does with a frame read: a response to its waiter, a request admitted (or
//! stalled, or refused) under the bounds, a notification held in order (cancellation and
//! progress at once), a batch element by element, an invalid message answered (rate-limited
//! without an id); and the replies owed written back as there is room.

use std::sync::Arc;
use std::time::Instant;

use bytes::{BufMut, BytesMut};

use super::received_requests::{Hold, Owed, write_outcome};
use super::transmit::{Lane, PushError, Route};
use super::{Core, Event, Phase, Stalled};
use crate::message::owned::cancelled_request;
use crate::message::owned::progress_token;
use crate::peer::error::CloseReason;
use crate::peer::incoming::{Incoming, Reply, RpcError};
use crate::{
    message::Frame, message::Id, message::Kind, message::encode::Outgoing, message::owned::OwnedId,
};

impl Core {
    /// Routes one frame; returns it when no bound has room for it yet.
    pub(super) fn dispatch(&mut self, frame: Frame) -> Option<Stalled> {
        match frame.kind() {
            Kind::Response | Kind::Error => {
                self.sent.deliver(Incoming::own(frame).at(self.read), &mut self.wake);
                None
            }
            Kind::Request => self.request(frame),
            Kind::Notification => {
                let bytes = frame.as_bytes().len();
                self.notification(Incoming::own(frame).at(self.read), bytes)
                    .and_then(Incoming::into_frame)
                    .map(Stalled::Frame)
            }
            Kind::Invalid => {
                if !self.tx.has_room(Lane::Control) {
                    return Some(Stalled::Frame(frame));
                }
                self.invalid(&frame);
                None
            }
            Kind::Batch => {
                let mut frame = frame;
                // Its elements may be held: the frame gets bytes of its own, as a lone message
                // held does, so what the bounds count is what stays in memory.
                frame.unshare();
                let frame = Arc::new(frame);
                // Each request and notification of the batch may hold the frame: each counts an
                // equal share of its bytes, so together they count all of them.
                let held = frame.batch().map_or(0, |b| {
                    b.filter(|m| matches!(m.kind(), Kind::Request | Kind::Notification)).count()
                });
                let share = frame.as_bytes().len() / held.max(1);
                let batch = self.received.open_batch();
                self.batch(frame, 0, batch, share)
            }
        }
    }

    pub(super) fn request(&mut self, frame: Frame) -> Option<Stalled> {
        let bytes = frame.as_bytes().len();
        let (id, initialize) = {
            let m = frame.message()?;
            (m.id().unwrap_or(Id::Null), m.method() == Some("initialize"))
        };
        match self.received.hold(id, bytes, None, initialize) {
            Hold::Stall => Some(Stalled::Frame(frame)),
            Hold::Refused(err) => {
                if !self.tx.has_room(Lane::Control) {
                    return Some(Stalled::Frame(frame));
                }
                let id = frame.id().unwrap_or(Id::Null);
                let route = || Route::Response { id: OwnedId::from_id(id), initialize: false };
                let _ = self.push(Lane::Control, |buf| write_reply(buf, id, &Err(err)), route);
                None
            }
            Hold::Held(ticket) => {
                let mut req = Incoming::own(frame).at(self.read);
                // Held from here on: bytes of its own, so the bound counts what it keeps.
                req.unshare();
                let after = self.notifications.read();
                if self.received.waiting.is_empty()
                    && self.received.has_slot()
                    && self.notifications.lets_begin(after)
                {
                    // Nothing before it: it begins now.
                    self.received.start(ticket);
                    self.events.push_back(Event::Request { ticket, request: req });
                    self.kick();
                } else {
                    self.received.waiting.push_back((ticket, req, after));
                }
                None
            }
        }
    }

    /// A notification of `bytes`: cancellation and progress are handled here, at once; the
    /// others are held for their handler, in order. Returns it when there is no room.
    pub(super) fn notification(&mut self, mut n: Incoming, bytes: usize) -> Option<Incoming> {
        match n.method() {
            "notifications/cancelled" => {
                // Unknown or malformed cancellations are ignored (and counted by the table).
                match cancelled_request(&n.message()) {
                    Some(id) => {
                        let (task, owed) = self.received.cancel(id.as_id());
                        self.wake.extend(task);
                        self.queue_owed(owed);
                    }
                    None => {
                        tracing::debug!(params = ?n.params(), "ignored a malformed cancellation")
                    }
                }
                return None;
            }
            "notifications/progress" if self.sent.wants_progress() => {
                if let (Some(token), Some(now)) = (progress_token(&n.message()), self.now) {
                    self.sent.progress(&token, now);
                }
            }
            _ => {}
        }
        if !self.notifications.fits(bytes) {
            return Some(n);
        }
        n.unshare();
        self.notifications.push(n, bytes);
        None
    }

    pub(super) fn invalid(&mut self, frame: &Frame) {
        self.stats.invalid_received += 1;
        let Some(msg) = frame.message() else { return };
        tracing::debug!(reason = ?msg.decode_error(), "received an invalid message");
        // JSON-RPC never answers a response, even a broken one.
        if msg.is_response_shaped() {
            return;
        }
        let Some(reply) = msg.error_reply(self.detail) else { return };
        let unaddressed = matches!(reply, Outgoing::Error { id: Id::Null, .. });
        if unaddressed && !self.now.is_some_and(|now| self.limiter.allow(now)) {
            self.stats.replies_suppressed += 1;
            return;
        }
        let id = match &reply {
            Outgoing::Error { id, .. } => OwnedId::from_id(*id),
            _ => None,
        };
        let _ = self.push(
            Lane::Control,
            |buf| reply.write(buf),
            || Route::Response { id, initialize: false },
        );
    }

    /// Takes in a batch's elements from `next` on; returns the rest when a bound has no room.
    pub(super) fn batch(
        &mut self,
        frame: Arc<Frame>,
        next: usize,
        batch: u32,
        share: usize,
    ) -> Option<Stalled> {
        for i in next..frame.len() {
            let Some(m) = frame.element(i) else { break };
            match m.kind() {
                Kind::Response | Kind::Error => {
                    self.sent
                        .deliver(Incoming::element(frame.clone(), i).at(self.read), &mut self.wake);
                }
                Kind::Notification => {
                    if self
                        .notification(Incoming::element(frame.clone(), i).at(self.read), share)
                        .is_some()
                    {
                        return Some(Stalled::Batch { frame, next: i, batch, share });
                    }
                }
                // Each request of the batch is tracked, bounded and cancellable on its own.
                Kind::Request => {
                    let id = m.id().unwrap_or(Id::Null);
                    let initialize = m.method() == Some("initialize");
                    match self.received.hold(id, share, Some(batch), initialize) {
                        Hold::Stall => {
                            return Some(Stalled::Batch { frame, next: i, batch, share });
                        }
                        Hold::Refused(err) => {
                            self.received
                                .batch_answer(batch, true, |buf| write_outcome(buf, id, &Err(err)));
                        }
                        Hold::Held(ticket) => {
                            self.received.batch_hold(batch, ticket);
                            let req = Incoming::element(frame.clone(), i).at(self.read);
                            self.received.waiting.push_back((
                                ticket,
                                req,
                                self.notifications.read(),
                            ));
                        }
                    }
                }
                Kind::Invalid => {
                    self.stats.invalid_received += 1;
                    if !m.is_response_shaped()
                        && let Some(reply) = m.error_reply(self.detail)
                    {
                        self.received.batch_answer(batch, false, |buf| {
                            let _ = reply.write_value(buf);
                        });
                    }
                }
                Kind::Batch => unreachable!("batches do not nest"),
            }
        }
        let owed = self.received.seal(batch);
        self.queue_owed(owed);
        None
    }

    /// Queues a reply a handler left owed, or blocks it until there is room.
    pub(super) fn queue_owed(&mut self, owed: Owed<'_>) {
        let (bytes, route, from) = match owed {
            Owed::Nothing => return,
            Owed::Reply { id, outcome, initialize, from } => {
                let route = || Route::Response { id: OwnedId::from_id(id), initialize };
                if self.received.blocked.is_empty() {
                    match self.push(Lane::Normal, |buf| write_reply(buf, id, &outcome), route) {
                        Err(PushError::Full) => {}
                        _ => return self.received.release(from),
                    }
                }
                let mut bytes = BytesMut::new();
                let _ = write_reply(&mut bytes, id, &outcome);
                (bytes, route(), from)
            }
            Owed::Batch { body, route, from } => (body, route, from),
        };
        self.received.block(bytes, route, from);
        self.flush_blocked();
    }

    /// Queues the replies that waited for room, oldest first, while there is room.
    pub(super) fn flush_blocked(&mut self) {
        while let Some(b) = self.received.blocked.pop_front() {
            let route = b.route.clone();
            let encode = |buf: &mut BytesMut| {
                buf.extend_from_slice(&b.bytes);
                Ok(())
            };
            if matches!(self.push(Lane::Normal, encode, move || route), Err(PushError::Full)) {
                self.received.blocked.push_front(b);
                break;
            }
            self.received.release(b.from);
        }
    }

    /// Hands out the work that may begin, takes up a stalled frame when its bound has room,
    /// and ends a drain with nothing held.
    pub(super) fn pump(&mut self) {
        if matches!(self.phase, Phase::Closed(_)) {
            return;
        }
        let before = self.events.len();
        if let Some(stalled) = self.stalled.take() {
            self.stalled = match stalled {
                Stalled::Frame(frame) => self.dispatch(frame),
                Stalled::Batch { frame, next, batch, share } => {
                    self.batch(frame, next, batch, share)
                }
            };
        }
        if let Some(n) = self.notifications.next() {
            self.events.push_back(Event::Notification(n));
        }
        while self.received.has_slot()
            && let Some((_, _, after)) = self.received.waiting.front()
            && self.notifications.lets_begin(*after)
        {
            let (ticket, request, _) = self.received.waiting.pop_front().expect("peeked");
            self.received.start(ticket);
            self.events.push_back(Event::Request { ticket, request });
        }
        if self.events.len() > before {
            self.kick();
        }
        if matches!(self.phase, Phase::Draining { .. })
            && self.received.held() == 0
            && self.notifications.is_idle()
        {
            self.close(CloseReason::Eof);
        }
    }
}

/// A handler's outcome as a response line.
fn write_reply(
    buf: &mut BytesMut,
    id: Id<'_>,
    outcome: &Result<Reply, RpcError>,
) -> Result<(), crate::error::Error> {
    write_outcome(buf, id, outcome);
    buf.put_u8(b'\n');
    Ok(())
}

/// At most `rate` events per second, with a burst of `rate`.
pub(super) struct Limiter {
    rate: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl Limiter {
    pub(super) fn new(rate: u32) -> Self {
        Self { rate: f64::from(rate), tokens: f64::from(rate), last: None }
    }

    fn allow(&mut self, now: Instant) -> bool {
        if let Some(last) = self.last {
            let refill = now.saturating_duration_since(last).as_secs_f64() * self.rate;
            self.tokens = (self.tokens + refill).min(self.rate);
        }
        self.last = Some(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}
