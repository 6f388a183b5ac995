//! The connection's one task: reads frames into the core, runs the handlers it hands out,
//! writes what it queues, and keeps its timer.
//!
//! A request's handler is polled here first; one that completes on that poll costs no task and
//! no allocation (its future lives in a box this task reuses). One that waits moves, box and
//! all, to a task of its own, which also watches for the request's cancellation. Notification
//! handlers run here, one at a time, in order. Everything the core decides (what to read, what
//! to answer, what to hold back) is the core's; this file only moves bytes and polls futures.

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::io;
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context as TaskContext, Poll, Waker, ready};

use bytes::BytesMut;
use futures_util::{FutureExt, Stream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::core::transmit::Sent;
use super::core::{Core, Event, Ticket};
use super::error::CloseReason;
use super::handle::{PeerHandle, Shared, Wakers, now};
use super::handler::{Context, Handler};
use super::incoming::{Incoming, Reply, RpcError};
use crate::limits::CLOSE_GRACE;
use crate::limits::WRITE_BUFFER_KEEP;
use crate::{message::Frame, message::owned::OwnedId};

/// Frames read per turn of the loop before the other work gets its turn.
const READ_BUDGET: usize = 64;

/// Turns of the loop before the task yields to the runtime.
const TURNS: usize = 32;

/// Where the driver puts what the core queued: whole messages, each one line of JSON ending in
/// `\n`, as many as were queued since the last write.
pub(crate) trait Outlet: Send + 'static {
    /// Sends the messages in `out` (described by `sent`, when the core records them); `Ready`
    /// once all of them are sent. May take their bytes (leaving `out` empty); the driver clears
    /// both after.
    fn poll_send(
        &mut self,
        cx: &mut TaskContext<'_>,
        out: &mut BytesMut,
        sent: &mut Vec<Sent>,
    ) -> Poll<io::Result<()>>;

    /// No more messages: the connection is closing.
    fn poll_shutdown(&mut self, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>>;
}

/// A byte stream as an outlet: the messages are written as they are (NDJSON).
pub(crate) struct ByteStream<W> {
    io: Pin<Box<W>>,
    written: usize,
}

impl<W: AsyncWrite + Send + 'static> ByteStream<W> {
    pub(crate) fn new(io: W) -> Self {
        Self { io: Box::pin(io), written: 0 }
    }
}

impl<W: AsyncWrite + Send + 'static> Outlet for ByteStream<W> {
    fn poll_send(
        &mut self,
        cx: &mut TaskContext<'_>,
        out: &mut BytesMut,
        _: &mut Vec<Sent>,
    ) -> Poll<io::Result<()>> {
        while self.written < out.len() {
            let n = ready!(self.io.as_mut().poll_write(cx, &out[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        ready!(self.io.as_mut().poll_flush(cx))?;
        self.written = 0;
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(&mut self, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        self.io.as_mut().poll_shutdown(cx)
    }
}

/// Counts the bytes a reader yields. The reader is boxed so the wrapper is `Unpin` whatever it
/// wraps (one allocation per connection).
pub(crate) struct Counting<R> {
    pub(crate) inner: Pin<Box<R>>,
    pub(crate) count: Arc<AtomicU64>,
}

impl<R: AsyncRead> AsyncRead for Counting<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = self.inner.as_mut().poll_read(cx, buf);
        let read = buf.filled().len() - before;
        self.count.fetch_add(read as u64, Ordering::Relaxed);
        polled
    }
}

/// Closes the connection if the driver ends without doing so itself (a panic): its waiters must
/// fail loudly, never hang.
struct CloseOnExit<'a>(&'a Shared);

impl Drop for CloseOnExit<'_> {
    fn drop(&mut self) {
        if !self.0.closing.is_cancelled() {
            self.0.close(CloseReason::Io("the connection's task stopped unexpectedly".into()));
        }
        self.0.done.cancel();
    }
}

/// A request's handler run to its end: the request back, and the outcome (or the panic).
async fn run_request<H: Handler>(
    handler: Arc<H>,
    request: Incoming,
    cx: Context,
) -> (Incoming, Option<Result<Reply, RpcError>>) {
    // The call itself is inside the guarded future, so a handler that panics before returning
    // its future is caught too.
    let outcome =
        AssertUnwindSafe(async { handler.request(&request, &cx).await }).catch_unwind().await;
    (request, outcome.ok())
}

/// A notification's handler run to its end; `true` if it panicked.
async fn run_notification<H: Handler>(
    handler: Arc<H>,
    notification: Incoming,
    cx: Context,
) -> bool {
    let run = AssertUnwindSafe(async { handler.notification(&notification, &cx).await });
    run.catch_unwind().await.is_err()
}

/// What a handler's end tells the core: its outcome, with a panic answered -32603. The work
/// it lets begin goes into the driver's queue, when the driver reports it.
fn report(
    shared: &Shared,
    ticket: Ticket,
    request: &Incoming,
    outcome: Option<Result<Reply, RpcError>>,
    driver: Option<(&mut VecDeque<Event>, &Waker)>,
) {
    let me = driver.as_ref().map(|(_, w)| *w);
    let events = driver.map(|(e, _)| e);
    shared.with_from(me, |c| {
        let outcome = outcome.unwrap_or_else(|| {
            tracing::error!(method = request.method(), "a request handler panicked");
            c.handler_panicked();
            Err(RpcError::internal("Internal error").with_data("the handler panicked"))
        });
        c.handler_done(ticket, request.id(), Some(outcome));
        if let Some(events) = events {
            take_events(c, events);
        }
    });
}

/// A box for `fut`: `spare`'s, written over in place, or a new one. A handler future's box is
/// reused from one handler to the next, so one that completes at once allocates nothing.
fn reuse<F: Future>(spare: &mut Option<Pin<Box<F>>>, fut: F) -> Pin<Box<F>> {
    match spare.take() {
        Some(mut b) => {
            b.set(fut);
            b
        }
        None => Box::pin(fut),
    }
}

/// The notification handler handed out ended (`panicked`, or not): the core hands out what it
/// let begin, into the driver's queue.
fn notification_done(shared: &Shared, panicked: bool, events: &mut VecDeque<Event>, me: &Waker) {
    if panicked {
        tracing::error!("a notification handler panicked");
    }
    shared.with_from(Some(me), |c| {
        if panicked {
            c.handler_panicked();
        }
        c.notification_done();
        take_events(c, events);
    });
}

/// Moves the work the core handed out into the driver's queue, in order.
fn take_events(core: &mut Core, events: &mut VecDeque<Event>) {
    while let Some(e) = core.poll_event() {
        events.push_back(e);
    }
}

/// A handler that waited, in a task of its own: it runs until it answers or its request is
/// cancelled (then it is dropped, and nothing is answered).
async fn finish<F>(shared: Arc<Shared>, ticket: Ticket, mut run: Pin<Box<F>>)
where
    F: Future<Output = (Incoming, Option<Result<Reply, RpcError>>)> + Send + ?Sized,
{
    let done = poll_fn(|cx| {
        if shared.with(|c| c.handler_cancelled(ticket, Some(cx.waker()))) {
            return Poll::Ready(None);
        }
        run.as_mut().poll(cx).map(Some)
    })
    .await;
    match done {
        Some((request, outcome)) => report(&shared, ticket, &request, outcome, None),
        None => {
            // MCP: the receiver of a cancellation SHOULD NOT send a response for that request.
            drop(run);
            shared.with(|c| c.handler_done(ticket, None, None));
        }
    }
}

/// Runs a connection until it has closed and flushed (or given up flushing).
pub(crate) async fn run<S, O, H>(shared: Arc<Shared>, frames: S, mut outlet: O, handler: Arc<H>)
where
    S: Stream<Item = Result<Frame, crate::error::Error>> + Send,
    O: Outlet,
    H: Handler,
{
    // Borrowed, not a clone: the handles to a peer are only the ones handed out, so a
    // transport can tell when no handler kept one (`PeerHandle::handles`).
    let _exit = CloseOnExit(&shared);
    let track = shared.lock().tracks();
    let mut frames = pin!(frames);
    let mut timer = pin!(tokio::time::sleep(CLOSE_GRACE));
    let mut timer_at = None;
    let mut give_up = None;
    let mut out = BytesMut::new();
    let mut sent = Vec::new();
    let mut writing = false;
    let mut write_len = 0;
    let mut reading = true;
    let mut events = VecDeque::new();
    // Boxes for handler futures, reused: a handler that answers at once allocates nothing.
    let mut spare_request = None;
    let mut spare_note = None;
    let mut note = None;
    // Runs what the core handed out, in order, and the notification handler that waits;
    // `true` if anything ran.
    let mut run = |events: &mut VecDeque<Event>, cx: &mut TaskContext<'_>| {
        let mut ran = false;
        loop {
            while let Some(event) = events.pop_front() {
                ran = true;
                match event {
                    Event::Request { ticket, request } => {
                        let related =
                            if track { request.id().and_then(OwnedId::from_id) } else { None };
                        let peer = PeerHandle { shared: shared.clone(), related };
                        let principal = shared.principal();
                        let cxh = Context::of_peer(peer, Some(ticket), principal);
                        let fut = run_request(handler.clone(), request, cxh);
                        let mut boxed = reuse(&mut spare_request, fut);
                        match boxed.as_mut().poll(cx) {
                            Poll::Ready((request, outcome)) => {
                                report(
                                    &shared,
                                    ticket,
                                    &request,
                                    outcome,
                                    Some((&mut *events, cx.waker())),
                                );
                                spare_request = Some(boxed);
                            }
                            // Its first poll registered this task's waker; the new task polls
                            // it again at once, and from then on only the new task's counts.
                            Poll::Pending => {
                                tokio::spawn(finish(shared.clone(), ticket, boxed));
                            }
                        }
                    }
                    Event::Notification(n) => {
                        let peer = PeerHandle { shared: shared.clone(), related: None };
                        let fut = run_notification(
                            handler.clone(),
                            n,
                            Context::of_peer(peer, None, shared.principal()),
                        );
                        let mut boxed = reuse(&mut spare_note, fut);
                        match boxed.as_mut().poll(cx) {
                            Poll::Ready(panicked) => {
                                notification_done(&shared, panicked, events, cx.waker());
                                spare_note = Some(boxed);
                            }
                            Poll::Pending => {
                                note = Some(boxed);
                                shared.with_from(Some(cx.waker()), |c| {
                                    c.notification_waiting();
                                    take_events(c, events);
                                });
                            }
                        }
                    }
                }
            }

            // The notification handler that waits.
            if let Some(n) = note.as_mut()
                && let Poll::Ready(panicked) = Pin::as_mut(n).poll(cx)
            {
                spare_note = note.take();
                notification_done(&shared, panicked, events, cx.waker());
                ran = true;
                // What it let begin runs now.
                continue;
            }
            return ran;
        }
    };
    let outcome: io::Result<()> = poll_fn(|cx| {
        for _ in 0..TURNS {
            let mut progress = false;
            let mut wake = Wakers::new();
            let (want_read, deadline, closed, write_now) = {
                let mut core = shared.lock();
                core.set_driver(cx.waker());
                // Every handler handed out so far has been polled once (`run` empties the
                // queue): what is still held marks where that ends.
                shared.begun_below.store(core.first_unbegun(), Ordering::Release);
                take_events(&mut core, &mut events);
                if !writing && core.poll_transmit(&mut out, &mut sent) {
                    writing = true;
                    // The outlet may take the bytes: count them now.
                    write_len = out.len();
                }
                let r = (core.wants_read(), core.poll_timeout(), core.is_closed(), writing);
                core.take_wakers(&mut wake);
                r
            };
            // Our own waker was just registered; waking it would only poll this task again.
            wake.retain(|w| !w.will_wake(cx.waker()));
            shared.after(wake, closed);

            progress |= run(&mut events, cx);

            // Deadlines. The timer is moved only earlier: moving it costs the runtime's timer
            // a wake-up (a system call) each time, and the earliest deadline moves later with
            // nearly every response. Firing early at a deadline since moved on is harmless: the
            // core finds nothing due and the timer is set again.
            if let Some(at) = deadline
                && timer_at.is_none_or(|t| at < t)
            {
                timer_at = Some(at);
                timer.as_mut().reset(tokio::time::Instant::from_std(at));
            }
            if timer_at.is_some() && timer.as_mut().poll(cx).is_ready() {
                timer_at = None;
                shared.with_from(Some(cx.waker()), |c| c.handle_timeout(now()));
                progress = true;
            }

            // Read while the core wants more.
            if reading && want_read {
                let mut read = 0;
                while read < READ_BUDGET {
                    match frames.as_mut().poll_next(cx) {
                        Poll::Pending => break,
                        Poll::Ready(Some(Ok(frame))) => {
                            read += 1;
                            // What the frame hands out runs before the next frame is read, so
                            // work is begun in the order it came.
                            let more = shared.with_from(Some(cx.waker()), |c| {
                                c.handle_frame(now(), frame);
                                take_events(c, &mut events);
                                c.wants_read()
                            });
                            run(&mut events, cx);
                            if !more {
                                break;
                            }
                        }
                        Poll::Ready(None) => {
                            reading = false;
                            shared.with_from(Some(cx.waker()), |c| c.handle_eof(now()));
                            break;
                        }
                        Poll::Ready(Some(Err(e))) => {
                            reading = false;
                            let reason = match &e {
                                crate::error::Error::Io(io) => CloseReason::of_io(io),
                                e => CloseReason::Io(e.to_string()),
                            };
                            shared.with_from(Some(cx.waker()), |c| c.close(reason));
                            break;
                        }
                    }
                }
                progress |= read > 0 || !reading;
            }

            // Write what was queued.
            if write_now {
                match outlet.poll_send(cx, &mut out, &mut sent) {
                    Poll::Ready(Ok(())) => {
                        shared.with_from(Some(cx.waker()), |c| c.wrote(write_len));
                        out.clear();
                        sent.clear();
                        if out.capacity() > WRITE_BUFFER_KEEP {
                            out = BytesMut::new();
                        }
                        writing = false;
                        progress = true;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => {}
                }
            }

            // Once closed: flush what is left, then shut the outlet down; a peer that does not
            // take the last messages gets `CLOSE_GRACE`.
            if closed {
                if !writing {
                    if shared.lock().transmit_is_empty() {
                        return outlet.poll_shutdown(cx);
                    }
                    progress = true;
                }
                let until =
                    give_up.get_or_insert_with(|| Box::pin(tokio::time::sleep(CLOSE_GRACE)));
                if until.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the other side did not take the last messages",
                    )));
                }
            }
            if !progress {
                return Poll::Pending;
            }
        }
        // Worked a while: let the runtime's other tasks in.
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
    match outcome {
        Ok(()) => shared.close(CloseReason::Local),
        Err(e) => {
            tracing::debug!(error = %e, "connection ended");
            shared.close(CloseReason::of_io(&e));
        }
    }
}
