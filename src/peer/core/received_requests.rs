//! The other side's requests: admission, handler slots, cancellation, batches, and replies
//! waiting for room.
//!
//! A request is *held* from the moment it is admitted until its reply is queued (or it is known
//! that none is owed); held requests are bounded by count (`max_handlers + max_queued_requests`)
//! and by frame bytes (`max_held_request_bytes`), and a request that does not fit is not
//! admitted: the connection stops reading until one lets go, which holds the other side back
//! through the transport's own flow control. A lone request is always admitted, whatever its
//! size. At most `max_handlers` handlers run at once; a handler's slot is free only once its
//! reply has room in the write buffer, so a peer that does not read stops the handlers too.

use std::collections::VecDeque;
use std::task::Waker;

use bytes::{BufMut, BytesMut};

use super::transmit::Route;
use crate::mux::{Inbound, InboundStats, Refused};
use crate::peer::incoming::{Incoming, Reply, RpcError};
use crate::{error::ErrorCode, message::Id, message::encode::Outgoing, message::owned::OwnedId};

/// One admitted request of the other side, as the driver holds it while its handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    index: u32,
    generation: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Free,
    /// Admitted, waiting for a handler slot (or for the notifications read before it).
    Waiting,
    /// Its handler runs (or has run and its reply waits for room).
    Running,
}

struct Run {
    generation: u32,
    stage: Stage,
    /// Its entry in the inbound table.
    entry: u64,
    cancelled: bool,
    /// The task running its handler, woken when it is cancelled.
    waker: Option<Waker>,
    batch: Option<u32>,
    /// Frame bytes it holds.
    bytes: usize,
    initialize: bool,
}

/// The requests of one batch, answered together with one array.
struct Batch {
    /// `,`-separated replies of its handlers, the first comma to become `[`.
    body: BytesMut,
    /// Then those to the requests refused, then those to its invalid elements.
    refused: BytesMut,
    invalid: BytesMut,
    /// Elements whose handler has not finished.
    remaining: usize,
    /// Elements held until the array is queued.
    held: Vec<Ticket>,
    ids: Vec<OwnedId>,
    live: bool,
}

/// A reply that found no room, holding its handler slot (or, for a batch, its elements) until
/// it is queued.
pub(crate) struct Blocked {
    pub(crate) bytes: BytesMut,
    pub(crate) route: Route,
    pub(crate) from: From,
}

/// Whose reply a [`Blocked`] is.
#[derive(Clone, Copy)]
pub(crate) enum From {
    Request(Ticket),
    Batch(u32),
}

/// The reply a finished handler leaves owed.
pub(crate) enum Owed<'a> {
    Nothing,
    /// A lone request's response.
    Reply {
        id: Id<'a>,
        outcome: Result<Reply, RpcError>,
        initialize: bool,
        from: From,
    },
    /// A batch's array of responses, encoded, with its line ending.
    Batch {
        body: BytesMut,
        route: Route,
        from: From,
    },
}

/// What holding a request gave.
pub(crate) enum Hold {
    Held(Ticket),
    /// The bounds are full: try again when a held request lets go.
    Stall,
    /// Refused, with the error to answer it with.
    Refused(RpcError),
}

pub(crate) struct ReceivedRequests {
    table: Inbound<u32>,
    runs: Vec<Run>,
    free: Vec<u32>,
    batches: Vec<Batch>,
    free_batches: Vec<u32>,
    /// Admitted requests waiting for a handler slot (or for the notifications read before
    /// them, whose count each carries), oldest first.
    pub(crate) waiting: VecDeque<(Ticket, Incoming, u64)>,
    /// Replies waiting for room, oldest first.
    pub(crate) blocked: VecDeque<Blocked>,
    max_handlers: usize,
    max_held: usize,
    max_held_bytes: usize,
    /// Handler slots taken: running, or with a reply blocked.
    running: usize,
    held: usize,
    held_bytes: usize,
}

impl ReceivedRequests {
    pub(crate) fn new(max_handlers: usize, max_queued: usize, max_held_bytes: usize) -> Self {
        let max_held = max_handlers.saturating_add(max_queued);
        Self {
            table: Inbound::new(max_held),
            runs: Vec::new(),
            free: Vec::new(),
            batches: Vec::new(),
            free_batches: Vec::new(),
            waiting: VecDeque::new(),
            blocked: VecDeque::new(),
            max_handlers: max_handlers.max(1),
            max_held,
            max_held_bytes,
            running: 0,
            held: 0,
            held_bytes: 0,
        }
    }

    /// Whether one more request of `bytes` fits the bounds; the first always does.
    pub(crate) fn fits(&self, bytes: usize) -> bool {
        self.held == 0
            || (self.held < self.max_held
                && self.held_bytes.saturating_add(bytes) <= self.max_held_bytes)
    }

    /// Holds request `id` of `bytes` frame bytes: counts it against the bounds and registers it
    /// under its id.
    pub(crate) fn hold(
        &mut self,
        id: Id<'_>,
        bytes: usize,
        batch: Option<u32>,
        initialize: bool,
    ) -> Hold {
        if !self.fits(bytes) {
            return Hold::Stall;
        }
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.runs.push(Run {
                    generation: 0,
                    stage: Stage::Free,
                    entry: 0,
                    cancelled: false,
                    waker: None,
                    batch: None,
                    bytes: 0,
                    initialize: false,
                });
                u32::try_from(self.runs.len() - 1).expect("held requests are bounded")
            }
        };
        let entry = match self.table.begin(id, index) {
            Ok(entry) => entry,
            Err(why) => {
                self.free.push(index);
                return match why {
                    Refused::Full(_) => Hold::Stall,
                    why => Hold::Refused(refusal(&why)),
                };
            }
        };
        let run = &mut self.runs[index as usize];
        run.generation = run.generation.wrapping_add(1);
        *run = Run {
            generation: run.generation,
            stage: Stage::Waiting,
            entry,
            cancelled: false,
            waker: None,
            batch,
            bytes,
            initialize,
        };
        self.held += 1;
        self.held_bytes += bytes;
        if let Some(b) = batch {
            self.batches[b as usize].remaining += 1;
        }
        Hold::Held(Ticket { index, generation: run.generation })
    }

    fn run(&self, t: Ticket) -> Option<&Run> {
        self.runs
            .get(t.index as usize)
            .filter(|r| r.generation == t.generation && r.stage != Stage::Free)
    }

    fn run_mut(&mut self, t: Ticket) -> Option<&mut Run> {
        self.runs
            .get_mut(t.index as usize)
            .filter(|r| r.generation == t.generation && r.stage != Stage::Free)
    }

    /// Whether a handler slot is free.
    pub(crate) fn has_slot(&self) -> bool {
        self.running < self.max_handlers
    }

    /// Request `t` takes a handler slot and begins.
    pub(crate) fn start(&mut self, t: Ticket) {
        if let Some(r) = self.run_mut(t) {
            r.stage = Stage::Running;
            self.running += 1;
        }
    }

    /// `notifications/cancelled` for `id`: its handler is to stop, and no reply is sent. A
    /// request still waiting for a slot lets go at once (which may complete its batch: the
    /// batch's reply is returned). Returns the task to wake, if its handler runs in one.
    pub(crate) fn cancel(&mut self, id: Id<'_>) -> (Option<Waker>, Owed<'static>) {
        let Some(index) = self.table.cancel(id) else { return (None, Owed::Nothing) };
        let run = &mut self.runs[index as usize];
        run.cancelled = true;
        let t = Ticket { index, generation: run.generation };
        match run.stage {
            Stage::Running => (run.waker.take(), Owed::Nothing),
            Stage::Waiting => {
                self.waiting.retain(|(w, _, _)| *w != t);
                (None, self.done(t, None))
            }
            Stage::Free => (None, Owed::Nothing),
        }
    }

    /// Whether request `t` was cancelled (or the connection closed); otherwise keeps `waker` to
    /// wake when it is.
    pub(crate) fn cancelled(&mut self, t: Ticket, waker: Option<&Waker>) -> bool {
        let Some(run) = self.run_mut(t) else { return true };
        if run.cancelled {
            return true;
        }
        if let Some(w) = waker {
            match &mut run.waker {
                Some(old) if old.will_wake(w) => {}
                slot => *slot = Some(w.clone()),
            }
        }
        false
    }

    /// Request `t`'s handler ended with `outcome` (`None`: cancelled, or it must not answer).
    /// Returns the reply owed now: for a lone request its own, for the last element of a
    /// batch the batch's. The caller queues it, or blocks it with [`ReceivedRequests::block`], then calls
    /// [`ReceivedRequests::release`] with its `From`.
    pub(crate) fn done<'a>(
        &mut self,
        t: Ticket,
        outcome: Option<(Id<'a>, Result<Reply, RpcError>)>,
    ) -> Owed<'a> {
        let Some(run) = self.run(t) else { return Owed::Nothing };
        let (entry, batch, initialize, cancelled) =
            (run.entry, run.batch, run.initialize, run.cancelled);
        let outcome =
            outcome.filter(|(id, _)| !cancelled && self.table.finish(*id, entry).is_some());
        if let Some(r) = self.run_mut(t) {
            r.cancelled = true;
            r.waker = None;
        }
        let Some(b) = batch else {
            let Some((id, outcome)) = outcome else {
                self.release(From::Request(t));
                return Owed::Nothing;
            };
            return Owed::Reply { id, outcome, initialize, from: From::Request(t) };
        };
        // A batch element's handler slot is free once it is done (holding it until the whole
        // batch is answered would starve the batch's own later elements); the element stays
        // held until the batch's reply is queued.
        self.free_slot(t);
        let batch = &mut self.batches[b as usize];
        if let Some((id, outcome)) = outcome {
            batch.body.put_u8(b',');
            write_outcome(&mut batch.body, id, &outcome);
            if let Some(o) = OwnedId::from_id(id) {
                batch.ids.push(o);
            }
        }
        batch.remaining -= 1;
        self.batch_reply(b)
    }

    /// A batch whose every element is done: its reply, or nothing (JSON-RPC: when nothing in a
    /// batch is to be answered, nothing is sent at all) after letting its elements go.
    fn batch_reply(&mut self, b: u32) -> Owed<'static> {
        let batch = &mut self.batches[b as usize];
        if batch.remaining > 0 || !batch.live {
            return Owed::Nothing;
        }
        let mut body = std::mem::take(&mut batch.body);
        body.extend_from_slice(&batch.refused);
        body.extend_from_slice(&batch.invalid);
        if body.is_empty() {
            self.release(From::Batch(b));
            return Owed::Nothing;
        }
        body[0] = b'[';
        body.put_slice(b"]\n");
        let route = Route::Batch { ids: std::mem::take(&mut batch.ids) };
        Owed::Batch { body, route, from: From::Batch(b) }
    }

    /// Opens a batch; its elements are admitted with it. [`ReceivedRequests::seal`] once every element
    /// is in.
    pub(crate) fn open_batch(&mut self) -> u32 {
        let fresh = Batch {
            body: BytesMut::new(),
            refused: BytesMut::new(),
            invalid: BytesMut::new(),
            remaining: 0,
            held: Vec::new(),
            ids: Vec::new(),
            live: false,
        };
        match self.free_batches.pop() {
            Some(b) => {
                self.batches[b as usize] = fresh;
                b
            }
            None => {
                self.batches.push(fresh);
                u32::try_from(self.batches.len() - 1).expect("batches are bounded by held requests")
            }
        }
    }

    /// Adds a reply the batch answers itself: to a refused request (`refused`), or to an
    /// invalid element.
    pub(crate) fn batch_answer(
        &mut self,
        b: u32,
        refused: bool,
        write: impl FnOnce(&mut BytesMut),
    ) {
        let batch = &mut self.batches[b as usize];
        let to = if refused { &mut batch.refused } else { &mut batch.invalid };
        to.put_u8(b',');
        write(to);
    }

    /// Element `t` belongs to batch `b` (held until the batch's reply is queued).
    pub(crate) fn batch_hold(&mut self, b: u32, t: Ticket) {
        self.batches[b as usize].held.push(t);
    }

    /// Every element of batch `b` is in: its reply is owed once they are all done.
    pub(crate) fn seal(&mut self, b: u32) -> Owed<'static> {
        self.batches[b as usize].live = true;
        self.batch_reply(b)
    }

    /// A reply that found no room: it waits, holding what it holds.
    pub(crate) fn block(&mut self, bytes: BytesMut, route: Route, from: From) {
        self.blocked.push_back(Blocked { bytes, route, from });
    }

    fn free_slot(&mut self, t: Ticket) {
        if let Some(r) = self.run_mut(t)
            && r.stage == Stage::Running
        {
            r.stage = Stage::Waiting;
            self.running -= 1;
        }
    }

    /// A reply was queued (or none is owed): what it held lets go.
    pub(crate) fn release(&mut self, from: From) {
        match from {
            From::Request(t) => {
                self.free_slot(t);
                let Some(r) = self.run_mut(t) else { return };
                r.stage = Stage::Free;
                let bytes = r.bytes;
                self.held -= 1;
                self.held_bytes -= bytes;
                self.free.push(t.index);
            }
            From::Batch(b) => {
                let batch = &mut self.batches[b as usize];
                batch.live = false;
                let held = std::mem::take(&mut batch.held);
                for t in held {
                    self.release(From::Request(t));
                }
                self.free_batches.push(b);
            }
        }
    }

    /// The connection closed: every handler is to stop (their tasks go into `wake`), nothing is
    /// answered, and every held request lets go.
    pub(crate) fn close(&mut self, wake: &mut Vec<Waker>) {
        for _ in self.table.drain() {}
        for r in &mut self.runs {
            r.cancelled = true;
            wake.extend(r.waker.take());
        }
        self.waiting.clear();
        self.blocked.clear();
        self.batches.clear();
        self.free_batches.clear();
        for (i, r) in self.runs.iter_mut().enumerate() {
            if r.stage != Stage::Free {
                r.stage = Stage::Free;
                self.free.push(i as u32);
            }
        }
        self.running = 0;
        self.held = 0;
        self.held_bytes = 0;
    }

    /// Requests held now.
    pub(crate) fn held(&self) -> usize {
        self.held
    }

    pub(crate) fn stats(&self) -> InboundStats {
        self.table.stats()
    }
}

/// The error answering a request the inbound table refused.
fn refusal<H>(why: &Refused<H>) -> RpcError {
    match why {
        Refused::Duplicate(_) => RpcError::new(ErrorCode::INVALID_REQUEST, "Invalid Request")
            .with_data("a request with this id is already in flight"),
        Refused::NullId(_) => RpcError::new(ErrorCode::INVALID_REQUEST, "Invalid Request")
            .with_data("a request id must not be null"),
        _ => RpcError::internal("Internal error").with_data("the request could not be admitted"),
    }
}

/// Writes a handler's outcome as a response to `id` (no line ending).
pub(crate) fn write_outcome(buf: &mut BytesMut, id: Id<'_>, outcome: &Result<Reply, RpcError>) {
    // Room for the whole response at once (the envelope around a result is under 64 bytes
    // but for a long string id): growing the buffer as it is written would move it each time.
    let payload = match outcome {
        Ok(reply) => reply.len(),
        Err(e) => e.message.len() + e.data().map_or(0, |d| d.get().len()),
    };
    let id_len = match id {
        Id::Str(s) => s.len(),
        _ => 0,
    };
    buf.reserve(payload + id_len + 64);
    // Raw payloads cannot fail to encode.
    let _ = match outcome {
        Ok(reply) => Outgoing::Result { id, result: reply.as_json() }.write_value(buf),
        Err(e) => Outgoing::Error { id, code: e.code, message: &e.message, data: e.data() }
            .write_value(buf),
    };
}
