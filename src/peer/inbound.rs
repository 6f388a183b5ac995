//! Running the other side's requests: admission bookkeeping (`Held`, `Slot`), a handler run
//! guarded against panics and cancellation, batches answered as one array, and the replies.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::{BufMut, BytesMut};
use futures_util::FutureExt;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

use super::PeerHandle;
use super::handler::{Context, Handler, Incoming, Reply, RpcError};
use super::queue::Lane;
use super::shared::{Holding, Shared};
use crate::mux::Refused;
use crate::{ErrorCode, Frame, Id, Outgoing, ReplyDetail};

/// The requests of one batch, answered together with one array.
pub(crate) struct Batch {
    pub(crate) frame: Arc<Frame>,
    /// Element index and its admission.
    pub(crate) admitted: Vec<(usize, Admitted)>,
    /// Requests refused (a duplicate id, or too many in flight), with the error to answer.
    pub(crate) refused: Vec<(usize, RpcError)>,
    /// Invalid elements to answer.
    pub(crate) invalid: Vec<usize>,
    /// Notifications read before the batch's requests run (its own included).
    pub(crate) after: u64,
}

impl Batch {
    pub(crate) async fn run<H: Handler>(
        self,
        shared: &Arc<Shared>,
        handler: &Arc<H>,
        peer: &PeerHandle,
        detail: ReplyDetail,
    ) {
        let Self { frame, admitted, refused, invalid, after } = self;
        let mut holds = Vec::with_capacity(admitted.len());
        let runs = admitted.into_iter().map(|(i, a)| {
            let Admitted { entry, token, slot, held } = a;
            holds.push(held);
            let frame = &frame;
            let cx = Context { peer: peer.clone(), cancel: token };
            async move {
                let req = Incoming::element(frame.clone(), i);
                let outcome = run_queued(shared, &**handler, &req, &cx, slot, after).await;
                let id = req.id().expect("a request has an id");
                let ours = shared.finish_inbound(id, entry);
                // The handler slot is free once the element is done (holding it until the
                // whole batch is answered would starve the batch's own later elements); the
                // element stays held, and counted, until the batch's reply is queued.
                (i, outcome.filter(|_| ours).map(|(outcome, _permit)| outcome))
            }
        });
        let runs: Vec<_> = runs.collect();
        let outcomes = futures_util::future::join_all(runs).await;
        let id_of = |i: usize| frame.element(i).and_then(|m| m.id()).expect("a request has an id");
        let mut body = BytesMut::new();
        for (i, outcome) in outcomes {
            let Some(outcome) = outcome else { continue };
            body.put_u8(b',');
            write_outcome_value(&mut body, id_of(i), &outcome);
        }
        for (i, err) in refused {
            body.put_u8(b',');
            write_outcome_value(&mut body, id_of(i), &Err(err));
        }
        for i in invalid {
            let Some(reply) = frame.element(i).and_then(|m| m.error_reply(detail)) else {
                continue;
            };
            body.put_u8(b',');
            let _ = reply.write_value(&mut body);
        }
        // JSON-RPC: when nothing in a batch is to be answered, nothing is sent at all.
        if !body.is_empty() {
            body[0] = b'[';
            body.put_slice(b"]\n");
            let _ = shared
                .queue
                .send(Lane::Normal, |buf| {
                    buf.extend_from_slice(&body);
                    Ok(())
                })
                .await;
        }
        drop(holds);
    }
}

/// A request's handler slot: taken already, or to wait for.
pub(crate) enum Slot {
    Ready(OwnedSemaphorePermit),
    Queued,
}

/// What admitting a request gives it.
pub(crate) struct Admitted {
    pub(crate) entry: u64,
    pub(crate) token: CancellationToken,
    pub(crate) slot: Slot,
    pub(crate) held: Held,
}

/// Counts one message, and its bytes, in a [`Holding`] until it is dropped: a request after its
/// reply is queued (or once none is owed), a notification after its handler. Dropping it lets
/// the read loop take in more.
pub(crate) struct Held {
    shared: Arc<Shared>,
    of: fn(&Shared) -> &Holding,
    bytes: usize,
}

impl Held {
    fn new(shared: &Arc<Shared>, of: fn(&Shared) -> &Holding, bytes: usize) -> Self {
        let h = of(shared);
        h.count.fetch_add(1, Ordering::AcqRel);
        h.bytes.fetch_add(bytes, Ordering::AcqRel);
        Self { shared: shared.clone(), of, bytes }
    }

    pub(crate) fn request(shared: &Arc<Shared>, bytes: usize) -> Self {
        Self::new(shared, |s| &s.requests, bytes)
    }

    pub(crate) fn notification(shared: &Arc<Shared>, bytes: usize) -> Self {
        Self::new(shared, |s| &s.notes, bytes)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let h = (self.of)(&self.shared);
        // SeqCst: see `Room`.
        h.bytes.fetch_sub(self.bytes, Ordering::SeqCst);
        if h.count.fetch_sub(1, Ordering::SeqCst) == 1
            && self.shared.draining.load(Ordering::SeqCst)
        {
            self.shared.idle.notify_waiters();
        }
        self.shared.room.release();
    }
}

/// Waits for a handler slot, then runs the handler until it answers, panics (-32603) or is
/// cancelled (`None`). The slot's permit comes back with the outcome, to be held until the
/// reply is queued: a handler slot is free only once its reply has room.
pub(crate) async fn run_queued<H: Handler>(
    shared: &Shared,
    handler: &H,
    req: &Incoming,
    cx: &Context,
    slot: Slot,
    after: u64,
) -> Option<(Result<Reply, RpcError>, OwnedSemaphorePermit)> {
    // The notifications read before this request have begun before it does.
    shared.notes_begun_up_to(after, &cx.cancel).await;
    let permit = match slot {
        Slot::Ready(permit) => permit,
        Slot::Queued => tokio::select! {
            biased;
            () = cx.cancel.cancelled() => None,
            permit = shared.handlers.clone().acquire_owned() => permit.ok(),
        }?,
    };
    // The call itself is inside the guarded future, so a handler that panics before returning
    // its future is caught too.
    let run = AssertUnwindSafe(async { handler.request(req, cx).await }).catch_unwind();
    let outcome = tokio::select! {
        biased;
        // MCP: the receiver of a cancellation SHOULD NOT send a response for that request.
        () = cx.cancel.cancelled() => return None,
        outcome = run => outcome,
    };
    let outcome = outcome.unwrap_or_else(|_| {
        tracing::error!(method = req.method(), "a request handler panicked");
        shared.lock().handler_panics += 1;
        Err(RpcError::internal("Internal error").with_data("the handler panicked"))
    });
    Some((outcome, permit))
}

/// The error answering a request the inbound table refused. Admission keeps the table within
/// its capacity, so only a duplicate id is expected here.
pub(crate) fn refusal<H>(why: &Refused<H>) -> RpcError {
    match why {
        Refused::Duplicate(_) => RpcError::new(ErrorCode::INVALID_REQUEST, "Invalid Request")
            .with_data("a request with this id is already in flight"),
        _ => RpcError::internal("Internal error").with_data("the request could not be admitted"),
    }
}

pub(crate) fn write_outcome(
    buf: &mut BytesMut,
    id: Id<'_>,
    outcome: &Result<Reply, RpcError>,
) -> Result<(), crate::Error> {
    write_outcome_value(buf, id, outcome);
    buf.put_u8(b'\n');
    Ok(())
}

fn write_outcome_value(buf: &mut BytesMut, id: Id<'_>, outcome: &Result<Reply, RpcError>) {
    // Raw payloads cannot fail to encode.
    let _ = match outcome {
        Ok(reply) => Outgoing::Result { id, result: reply.as_json() }.write_value(buf),
        Err(e) => Outgoing::Error { id, code: e.code, message: &e.message, data: e.data() }
            .write_value(buf),
    };
}
