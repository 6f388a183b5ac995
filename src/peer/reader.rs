//! The read loop: decodes frames and routes them. Responses complete their waiters; requests
//! are admitted to handler tasks; notifications go to an ordered worker; invalid messages are
//! answered.
//!
//! Backpressure: a request is admitted only while the requests held (running, waiting for a
//! handler slot, or answered but not yet written) stay within `max_handlers +
//! max_queued_requests` and their frames within `max_held_request_bytes`; otherwise the read loop
//! waits for one to finish, and so stops reading, which holds the other side back through the
//! transport's own flow control. Replies the read loop itself owes (errors) go into the write
//! queue's control lane, which waits only when the other side has stopped reading altogether.

use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::BytesMut;
use futures_util::{FutureExt, StreamExt};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::driver::{CLOSE_FLUSH_GRACE, CloseOnExit, Limiter};
use super::handler::{Context, Handler, Incoming, RpcError};
use super::inbound::{Admitted, Batch, Held, Slot, refusal, run_queued, write_outcome};
use super::queue::{Lane, SendError};
use super::shared::Shared;
use super::{CloseReason, PeerBuilder, PeerHandle, ProgressToken};
use crate::{Frame, Id, Kind, Outgoing, ReplyDetail};

/// Notifications waiting for the notification worker, and their frame bytes; past either the
/// read loop waits. Generous, because a notification handler may be awaiting a response that
/// only the read loop can deliver.
const NOTIFICATIONS_HELD: usize = 4096;
const NOTIFICATION_BYTES_HELD: usize = 16 * 1024 * 1024;

pub(crate) struct Reader<H> {
    shared: Arc<Shared>,
    /// Requests held at once (running, waiting, or with their reply not yet written), and
    /// the frame bytes they may hold; past either bound the read loop waits.
    max_held: usize,
    max_held_bytes: usize,
    detail: ReplyDetail,
    limiter: Limiter,
    peer: PeerHandle,
    handler: Arc<H>,
    notes: mpsc::UnboundedSender<(Incoming, Held)>,
    /// Notifications handed to the worker so far.
    notes_sent: u64,
}

impl<H: Handler> Reader<H> {
    pub(crate) fn new(b: &PeerBuilder, peer: PeerHandle, handler: Arc<H>) -> Self {
        let shared = peer.shared.clone();
        // Bounded by `NOTIFICATIONS_HELD` and `NOTIFICATION_BYTES_HELD`, counted by `NoteHeld`.
        let (notes, queue) = mpsc::unbounded_channel();
        tokio::spawn(notification_worker(shared.clone(), handler.clone(), peer.clone(), queue));
        Self {
            shared,
            max_held: b.limits.handlers().saturating_add(b.limits.queued_requests()),
            max_held_bytes: b.limits.held_request_bytes(),
            detail: b.reply_detail,
            limiter: Limiter::new(b.unaddressed_per_second),
            peer,
            handler,
            notes,
            notes_sent: 0,
        }
    }

    pub(crate) async fn run<S>(mut self, frames: S)
    where
        S: futures_util::Stream<Item = Result<Frame, crate::Error>> + Send,
    {
        let _exit = CloseOnExit(self.shared.clone());
        tokio::pin!(frames);
        let closing = self.shared.closing.clone();
        let reason = loop {
            let next = tokio::select! {
                biased;
                () = closing.cancelled() => break None,
                next = frames.next() => next,
            };
            match next {
                None => break Some(CloseReason::Eof),
                Some(Err(e)) => break Some(CloseReason::Io(e.to_string())),
                Some(Ok(frame)) => {
                    if !self.dispatch(frame).await {
                        break None;
                    }
                }
            }
        };
        match reason {
            // The other side closed its end: no response can come, but requests it sent before
            // are still answered (a client may half-close after writing), for a while.
            Some(CloseReason::Eof) => {
                self.shared.read_ended(CloseReason::Eof);
                self.shared.draining.store(true, Ordering::SeqCst);
                let drained = async {
                    loop {
                        let idle = self.shared.idle.notified();
                        tokio::pin!(idle);
                        idle.as_mut().enable();
                        if self.shared.requests.count.load(Ordering::Acquire) == 0 {
                            break;
                        }
                        idle.await;
                    }
                };
                let _ = tokio::time::timeout(CLOSE_FLUSH_GRACE, drained).await;
                self.shared.close(CloseReason::Eof);
            }
            Some(reason) => self.shared.close(reason),
            None => {}
        }
    }

    /// Routes one frame; `false` when the connection is closing.
    async fn dispatch(&mut self, frame: Frame) -> bool {
        match frame.kind() {
            Kind::Response | Kind::Error => {
                self.deliver(Incoming::own(frame));
                true
            }
            Kind::Request => {
                let bytes = frame.as_bytes().len();
                let mut req = Incoming::own(frame);
                req.unshare();
                self.request(req, bytes).await
            }
            Kind::Notification => {
                let bytes = frame.as_bytes().len();
                self.notification(Incoming::own(frame), bytes).await
            }
            Kind::Invalid => self.invalid(&frame).await,
            Kind::Batch => self.batch(frame).await,
        }
    }

    fn deliver(&self, response: Incoming) {
        let completed = {
            let id = response.id().unwrap_or(Id::Null);
            self.shared.lock().outbound.complete(id)
        };
        match completed {
            // The caller may have given up in the meantime; the slot is free either way.
            Ok(waiter) => drop(waiter.send(Ok(response))),
            Err(why) => match response.message().error() {
                Some(e) => {
                    tracing::debug!(?why, code = e.code, e.message, "dropped an error response")
                }
                None => tracing::debug!(?why, id = ?response.id(), "dropped a response"),
            },
        }
    }

    /// Takes a place for a request of `bytes` if the bounds allow: a handler slot at once, or
    /// a place in the queue for one. A lone request is always let in, whatever its size.
    fn try_admit(&self, bytes: usize) -> Option<Slot> {
        if !self.shared.requests.fits(bytes, self.max_held, self.max_held_bytes) {
            return None;
        }
        // The semaphore is fair: a permit is free only when nobody waits for one, so taking it
        // here never jumps the queue.
        Some(match self.shared.handlers.clone().try_acquire_owned() {
            Ok(permit) => Slot::Ready(permit),
            Err(_) => Slot::Queued,
        })
    }

    /// Waits until a request of `bytes` may be admitted; `None` once closing. While it waits
    /// nothing more is read.
    async fn admit(&self, bytes: usize) -> Option<Slot> {
        self.shared.room.until(|| self.try_admit(bytes), self.shared.closing.cancelled()).await
    }

    /// Admits a request and registers it under its id; `Ok(None)` once closing, `Err` with the
    /// error to answer when its id is already in flight.
    async fn begin(&self, id: Id<'_>, bytes: usize) -> Result<Option<Admitted>, RpcError> {
        let Some(slot) = self.admit(bytes).await else { return Ok(None) };
        // A token of its own, not a child of `closing`: children share their parent's lock, and
        // `Shared::close` cancels every token in the table anyway. Registered under the same lock
        // that `close` takes, so a request is either cancelled by it or never begun.
        let token = CancellationToken::new();
        let begun = {
            let mut st = self.shared.lock();
            if st.closed.is_some() {
                return Ok(None);
            }
            st.inbound.begin(id, token.clone())
        };
        match begun {
            Ok(entry) => {
                let held = Held::request(&self.shared, bytes);
                Ok(Some(Admitted { entry, token, slot, held }))
            }
            Err(why) => Err(refusal(&why)),
        }
    }

    async fn request(&mut self, req: Incoming, bytes: usize) -> bool {
        let id = req.id().expect("a request has an id");
        match self.begin(id, bytes).await {
            Ok(Some(admitted)) => {
                let shared = self.shared.clone();
                let handler = self.handler.clone();
                let Admitted { entry, token, slot, held } = admitted;
                let cx = Context { peer: self.peer.clone(), cancel: token };
                let after = self.notes_sent;
                tokio::spawn(async move {
                    let outcome = run_queued(&shared, &*handler, &req, &cx, slot, after).await;
                    let id = req.id().expect("a request has an id");
                    if shared.finish_inbound(id, entry)
                        && let Some((outcome, permit)) = outcome
                    {
                        let _ = shared
                            .queue
                            .send(Lane::Normal, |buf| write_outcome(buf, id, &outcome))
                            .await;
                        drop(permit);
                    }
                    // Held until the reply is queued (or known not to be owed).
                    drop(held);
                });
                true
            }
            Ok(None) => false,
            Err(err) => self.control(|buf| write_outcome(buf, id, &Err(err))).await,
        }
    }

    /// A notification of `bytes`: cancellation and progress are handled here, at once; the
    /// others are held for the notification worker, in order.
    async fn notification(&mut self, mut n: Incoming, bytes: usize) -> bool {
        match n.method() {
            "notifications/cancelled" => {
                self.cancelled(&n);
                return true;
            }
            "notifications/progress" => self.progress(&n),
            _ => {}
        }
        let fits = || {
            self.shared.notes.fits(bytes, NOTIFICATIONS_HELD, NOTIFICATION_BYTES_HELD).then_some(())
        };
        if self.shared.room.until(fits, self.shared.closing.cancelled()).await.is_none() {
            return false;
        }
        // Held from here on; cancellation and progress, handled above, were never copied.
        n.unshare();
        let held = Held::notification(&self.shared, bytes);
        self.notes_sent += 1;
        self.notes.send((n, held)).is_ok()
    }

    /// `notifications/cancelled {requestId, reason?}`: the handler stops and sends nothing.
    /// Unknown or malformed cancellations are ignored (and counted by the table).
    fn cancelled(&self, n: &Incoming) {
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(rename = "requestId", borrow)]
            request_id: WireId<'a>,
        }
        let Ok(p) = n.params_as::<Params<'_>>() else {
            tracing::debug!(params = ?n.params(), "ignored a malformed cancellation");
            return;
        };
        let id = p.request_id.as_id();
        let token = self.shared.lock().inbound.cancel(id);
        if let Some(token) = token {
            token.cancel();
        }
    }

    /// `notifications/progress {progressToken, …}` restarts the timeout of the request that
    /// asked for it, up to its total cap.
    fn progress(&self, n: &Incoming) {
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(rename = "progressToken", borrow)]
            token: WireId<'a>,
        }
        let Ok(p) = n.params_as::<Params<'_>>() else { return };
        let token = match p.token {
            WireId::Num(n) => ProgressToken::Num(n),
            WireId::Str(s) => ProgressToken::Str(s.into()),
        };
        let now = Instant::now().into_std();
        let mut st = self.shared.lock();
        let Some(entry) = st.progress.get(&token) else { return };
        let mut deadline = now.checked_add(entry.timeout);
        if let Some(cap) = entry.cap {
            deadline = Some(deadline.map_or(cap, |d| d.min(cap)));
        }
        let id = entry.id;
        st.outbound.set_deadline(id, deadline);
        self.shared.arm_timer(&mut st, deadline);
    }

    async fn invalid(&mut self, frame: &Frame) -> bool {
        self.shared.lock().invalid_received += 1;
        let Some(msg) = frame.message() else { return true };
        tracing::debug!(reason = ?msg.decode_error(), "received an invalid message");
        // JSON-RPC never answers a response, even a broken one.
        if msg.is_response_shaped() {
            return true;
        }
        let Some(reply) = msg.error_reply(self.detail) else { return true };
        if matches!(reply, Outgoing::Error { id: Id::Null, .. })
            && !self.limiter.allow(Instant::now())
        {
            self.shared.lock().replies_suppressed += 1;
            return true;
        }
        self.control(|buf| reply.write(buf)).await
    }

    async fn batch(&mut self, mut frame: Frame) -> bool {
        // Its elements may be held: the frame gets bytes of its own, as `Incoming::unshare` gives
        // a lone message.
        frame.unshare();
        let frame = Arc::new(frame);
        // Each request and notification of the batch may hold the frame: each counts an equal
        // share of its bytes against its bound, so together they count all of them.
        let held = frame.batch().map_or(0, |b| {
            b.filter(|m| matches!(m.kind(), Kind::Request | Kind::Notification)).count()
        });
        let share = frame.as_bytes().len() / held.max(1);
        let mut admitted = Vec::new();
        let mut refused = Vec::new();
        let mut invalid = Vec::new();
        for i in 0..frame.len() {
            let Some(m) = frame.element(i) else { break };
            match m.kind() {
                Kind::Response | Kind::Error => self.deliver(Incoming::element(frame.clone(), i)),
                Kind::Notification => {
                    if !self.notification(Incoming::element(frame.clone(), i), share).await {
                        return false;
                    }
                }
                // Each request of the batch is tracked, bounded and cancellable on its own.
                Kind::Request => {
                    match self.begin(m.id().expect("a request has an id"), share).await {
                        Ok(Some(a)) => admitted.push((i, a)),
                        Ok(None) => return false,
                        Err(err) => refused.push((i, err)),
                    }
                }
                Kind::Invalid => {
                    self.shared.lock().invalid_received += 1;
                    if !m.is_response_shaped() {
                        invalid.push(i);
                    }
                }
                Kind::Batch => unreachable!("batches do not nest"),
            }
        }
        if admitted.is_empty() && refused.is_empty() && invalid.is_empty() {
            return true;
        }
        let batch = Batch { frame, admitted, refused, invalid, after: self.notes_sent };
        let (shared, handler, peer) =
            (self.shared.clone(), self.handler.clone(), self.peer.clone());
        let detail = self.detail;
        tokio::spawn(async move { batch.run(&shared, &handler, &peer, detail).await });
        true
    }

    /// Queues a reply the read loop owes, in the control lane; `false` once closing.
    async fn control(
        &self,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), crate::Error>,
    ) -> bool {
        match self.shared.queue.send(Lane::Control, encode).await {
            Ok(()) => true,
            Err(SendError::Closed) => false,
            Err(SendError::Encode(e)) => {
                tracing::error!(error = %e, "a reply could not be encoded");
                true
            }
        }
    }
}

/// Runs notification handlers one at a time, in order, outside the read loop: a handler may
/// send requests and await their responses, which the read loop goes on delivering.
async fn notification_worker<H: Handler>(
    shared: Arc<Shared>,
    handler: Arc<H>,
    peer: PeerHandle,
    mut queue: mpsc::UnboundedReceiver<(Incoming, Held)>,
) {
    let cx = Context { peer, cancel: shared.closing.clone() };
    loop {
        let n = tokio::select! {
            biased;
            () = shared.closing.cancelled() => return,
            n = queue.recv() => match n { Some(n) => n, None => return },
        };
        let (n, _held) = n;
        let run = AssertUnwindSafe(async { handler.notification(&n, &cx).await }).catch_unwind();
        tokio::pin!(run);
        // The handler runs up to its first await before the requests read after this
        // notification are let in (they wait for `notes_begun`), and no further: while it
        // waits, every request is let in, since one may be what it waits for.
        let first = std::future::poll_fn(|c| std::task::Poll::Ready(run.as_mut().poll(c))).await;
        let waits = first.is_pending();
        shared.notes_begun.send_modify(|b| *b = (b.0 + 1, waits));
        let r = match first {
            std::task::Poll::Ready(r) => r,
            std::task::Poll::Pending => {
                let r = tokio::select! {
                    biased;
                    () = shared.closing.cancelled() => return,
                    r = &mut run => r,
                };
                shared.notes_begun.send_modify(|b| b.1 = false);
                r
            }
        };
        if r.is_err() {
            tracing::error!(method = n.method(), "a notification handler panicked");
            shared.lock().handler_panics += 1;
        }
    }
}

/// An id or progress token as the other side wrote it: a string or an integer.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum WireId<'a> {
    Num(i64),
    Str(#[serde(borrow)] Cow<'a, str>),
}

impl WireId<'_> {
    fn as_id(&self) -> Id<'_> {
        match self {
            Self::Num(n) => Id::Num(*n),
            Self::Str(s) => Id::Str(s),
        }
    }
}
