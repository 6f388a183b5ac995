//! The three loops of a connection: read (decode, route, answer what is invalid), write (one
//! write per wake-up of everything queued), and the timer that fails requests past their
//! deadline.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use futures_util::{FutureExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use super::handler::{Context, Handler, Incoming, Reply, RpcError};
use super::queue::SendError;
use super::{CloseReason, PeerBuilder, PeerHandle, ProgressToken, RequestError, Shared};
use crate::mux::Refused;
use crate::{ErrorCode, Frame, Id, JsonRpcCodec, Kind, Outgoing, ReplyDetail};

/// How long the writer keeps trying to flush after the connection started closing: a peer that
/// stopped reading must not keep a closed connection alive forever.
const CLOSE_FLUSH_GRACE: Duration = Duration::from_secs(5);

/// The writer's buffer is dropped after a write when it grew past this, so one huge message
/// does not pin its memory for the connection's life.
const WRITE_BUFFER_KEEP: usize = 1 << 20;

pub(super) fn start<R, W, H>(
    b: &PeerBuilder,
    peer: PeerHandle,
    reader: R,
    writer: W,
    handler: Arc<H>,
) -> Vec<JoinHandle<()>>
where
    R: AsyncRead + Send + 'static,
    W: AsyncWrite + Send + 'static,
    H: Handler,
{
    let shared = peer.shared.clone();
    let read = Reader {
        shared: shared.clone(),
        handlers: Arc::new(Semaphore::new(b.limits.handlers())),
        waiting: VecDeque::new(),
        max_waiting: b.limits.handlers(),
        detail: b.reply_detail,
        limiter: Limiter::new(b.unaddressed_per_second),
        peer,
        handler,
    };
    let codec = JsonRpcCodec::with_limits(b.limits);
    let frames = FramedRead::with_capacity(reader, codec, b.read_buffer);
    vec![
        tokio::spawn(read.run(frames)),
        tokio::spawn(write_loop(shared.clone(), writer)),
        tokio::spawn(timer_loop(shared)),
    ]
}

async fn write_loop<W: AsyncWrite + Send>(shared: Arc<Shared>, writer: W) {
    tokio::pin!(writer);
    let io = async {
        let mut out = BytesMut::new();
        while shared.queue.take(&mut out).await {
            writer.write_all(&out).await?;
            writer.flush().await?;
            out.clear();
            if out.capacity() > WRITE_BUFFER_KEEP {
                out = BytesMut::new();
            }
        }
        writer.shutdown().await
    };
    let give_up = async {
        shared.closing.cancelled().await;
        tokio::time::sleep(CLOSE_FLUSH_GRACE).await;
    };
    let outcome = tokio::select! {
        r = io => r,
        () = give_up => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the other side did not take the last messages",
        )),
    };
    match outcome {
        Ok(()) => shared.close(CloseReason::Local),
        Err(e) => {
            tracing::debug!(error = %e, "write loop ended");
            shared.close(CloseReason::Io(e.to_string()));
        }
    }
}

async fn timer_loop(shared: Arc<Shared>) {
    loop {
        let next = {
            let mut st = shared.lock();
            let next = st.outbound.next_deadline();
            st.timer_target = next;
            next
        };
        let sleep = async {
            match next {
                Some(at) => tokio::time::sleep_until(Instant::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shared.closing.cancelled() => return,
            () = shared.timer.notified() => continue,
            () = sleep => {}
        }
        let now = Instant::now().into_std();
        let mut expired = Vec::new();
        {
            let mut st = shared.lock();
            while let Some(e) = st.outbound.poll_expired(now) {
                expired.push(e);
            }
        }
        for (id, waiter) in expired {
            let _ = waiter.send(Err(RequestError::Timeout));
            // MCP: a request that timed out SHOULD be followed by notifications/cancelled.
            shared.send_cancelled(id, "the request timed out");
        }
    }
}

/// At most `rate` events per second, with a burst of `rate`.
struct Limiter {
    rate: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl Limiter {
    fn new(rate: u32) -> Self {
        Self { rate: f64::from(rate), tokens: f64::from(rate), last: None }
    }

    fn allow(&mut self, now: Instant) -> bool {
        if let Some(last) = self.last {
            let refill = now.duration_since(last).as_secs_f64() * self.rate;
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

struct Reader<H> {
    shared: Arc<Shared>,
    handlers: Arc<Semaphore>,
    waiting: VecDeque<Job>,
    max_waiting: usize,
    detail: ReplyDetail,
    limiter: Limiter,
    peer: PeerHandle,
    handler: Arc<H>,
}

/// What became of one inbound request: `None` when it was cancelled (no response is sent).
type Outcome = Option<Result<Reply, RpcError>>;

impl<H: Handler> Reader<H> {
    async fn run<R: AsyncRead + Send>(mut self, frames: FramedRead<R, JsonRpcCodec>) {
        tokio::pin!(frames);
        let closing = self.shared.closing.clone();
        let reason = loop {
            // Requests past `max_handlers` wait in `waiting`, and reading goes on, so that
            // cancellations and responses to the handlers' own requests still get through. Once
            // as many wait as may run, reading stops: a client that pipelines faster than it is
            // answered is then held back by the transport's flow control.
            let read = self.waiting.len() < self.max_waiting;
            let next = tokio::select! {
                biased;
                () = closing.cancelled() => break None,
                permit = self.handlers.clone().acquire_owned(), if !self.waiting.is_empty() => {
                    let Ok(permit) = permit else { break None };
                    if let Some(job) = self.waiting.pop_front() {
                        self.start(job, permit);
                    }
                    continue;
                }
                next = frames.next(), if read => next,
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
        if let Some(reason) = reason {
            self.shared.close(reason);
        }
        // Let running handlers see the end before the loop's handle to them goes.
        self.handlers.close();
    }

    /// Runs `job` now if a handler slot is free, else queues it.
    fn admit(&mut self, job: Job) {
        match self.handlers.clone().try_acquire_owned() {
            Ok(permit) if self.waiting.is_empty() => self.start(job, permit),
            _ => self.waiting.push_back(job),
        }
    }

    fn start(&self, job: Job, permit: OwnedSemaphorePermit) {
        match job {
            Job::One { req, entry, token } => {
                // Cancelled while it waited: it never runs.
                if token.is_cancelled() {
                    let id = req.id().expect("a request has an id");
                    self.shared.lock().inbound.finish(id, entry);
                    return;
                }
                let shared = self.shared.clone();
                let handler = self.handler.clone();
                let cx = Context { peer: self.peer.clone(), cancel: token };
                tokio::spawn(async move {
                    let outcome = run_handler(&shared, &*handler, &req, &cx).await;
                    let id = req.id().expect("a request has an id");
                    shared.lock().inbound.finish(id, entry);
                    if let Some(outcome) = outcome {
                        let _ = shared.queue.send(|buf| write_outcome(buf, id, &outcome)).await;
                    }
                    drop(permit);
                });
            }
            Job::Batch(batch) => {
                let shared = self.shared.clone();
                let handler = self.handler.clone();
                let peer = self.peer.clone();
                let detail = self.detail;
                tokio::spawn(async move {
                    batch.run(&shared, &handler, &peer, detail).await;
                    drop(permit);
                });
            }
        }
    }

    /// Routes one frame; `false` when the connection is closing.
    async fn dispatch(&mut self, frame: Frame) -> bool {
        match frame.kind() {
            Kind::Response | Kind::Error => {
                self.deliver(Incoming::own(frame));
                true
            }
            Kind::Request => self.request(Incoming::own(frame)).await,
            Kind::Notification => self.notification(Incoming::own(frame)).await,
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
            Ok(waiter) => {
                // The caller may have given up in the meantime; the slot is free either way.
                let _ = waiter.send(Ok(response));
            }
            Err(why) => {
                if let Some(e) = response.message().error() {
                    tracing::debug!(
                        ?why,
                        code = e.code,
                        message = e.message,
                        "dropped an error response"
                    );
                } else {
                    tracing::debug!(?why, id = ?response.id(), "dropped a response");
                }
            }
        }
    }

    async fn request(&mut self, req: Incoming) -> bool {
        let token = self.shared.closing.child_token();
        let id = req.id().expect("a request has an id");
        let begun = self.shared.lock().inbound.begin(id, token.clone());
        match begun {
            Ok(entry) => {
                self.admit(Job::One { req, entry, token });
                true
            }
            Err(refused) => {
                let why = match refused {
                    Refused::Duplicate(_) => "a request with this id is already in flight",
                    _ => "the request could not be admitted",
                };
                let err =
                    RpcError::new(ErrorCode::INVALID_REQUEST, "Invalid Request").with_data(why);
                self.send(|buf| write_outcome(buf, id, &Err(err))).await
            }
        }
    }

    async fn notification(&mut self, n: Incoming) -> bool {
        match n.method() {
            "notifications/cancelled" => {
                self.cancelled(&n);
                return true;
            }
            "notifications/progress" => self.progress(&n),
            _ => {}
        }
        let cx = Context { peer: self.peer.clone(), cancel: self.shared.closing.clone() };
        let run = AssertUnwindSafe(self.handler.notification(&n, &cx)).catch_unwind();
        tokio::select! {
            biased;
            () = self.shared.closing.cancelled() => return false,
            r = run => if r.is_err() {
                tracing::error!(method = n.method(), "a notification handler panicked");
                self.shared.lock().handler_panics += 1;
            },
        }
        true
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
        let mut deadline = now + entry.timeout;
        if let Some(cap) = entry.cap {
            deadline = deadline.min(cap);
        }
        let id = entry.id;
        st.outbound.set_deadline(id, Some(deadline));
        if st.timer_target.is_none_or(|t| deadline < t) {
            st.timer_target = Some(deadline);
            self.shared.timer.notify_one();
        }
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
        self.send(|buf| reply.write(buf)).await
    }

    async fn batch(&mut self, frame: Frame) -> bool {
        let frame = Arc::new(frame);
        let mut requests = Vec::new();
        let mut invalid = Vec::new();
        for i in 0..frame.len() {
            let Some(m) = frame.element(i) else { break };
            match m.kind() {
                Kind::Response | Kind::Error => self.deliver(Incoming::element(frame.clone(), i)),
                Kind::Notification => {
                    if !self.notification(Incoming::element(frame.clone(), i)).await {
                        return false;
                    }
                }
                Kind::Request => requests.push(i),
                Kind::Invalid => {
                    self.shared.lock().invalid_received += 1;
                    if !m.is_response_shaped() {
                        invalid.push(i);
                    }
                }
                Kind::Batch => unreachable!("batches do not nest"),
            }
        }
        if requests.is_empty() && invalid.is_empty() {
            return true;
        }
        // Each request of the batch is tracked on its own, so it can be cancelled on its own.
        let mut admitted = Vec::new();
        let mut refused = Vec::new();
        for i in requests {
            let token = self.shared.closing.child_token();
            let id = frame.element(i).and_then(|m| m.id()).expect("a request has an id");
            match self.shared.lock().inbound.begin(id, token.clone()) {
                Ok(entry) => admitted.push((i, entry, token)),
                Err(_) => refused.push(i),
            }
        }
        self.admit(Job::Batch(Batch { frame, admitted, refused, invalid }));
        true
    }

    async fn send(&self, encode: impl FnOnce(&mut BytesMut) -> Result<(), crate::Error>) -> bool {
        match self.shared.queue.send(encode).await {
            Ok(()) => true,
            Err(SendError::Closed) => false,
            Err(SendError::Encode(e)) => {
                tracing::error!(error = %e, "a reply could not be encoded");
                true
            }
        }
    }
}

/// Work for a handler slot.
enum Job {
    One { req: Incoming, entry: u64, token: CancellationToken },
    Batch(Batch),
}

/// The requests of one batch, answered together with one array.
struct Batch {
    frame: Arc<Frame>,
    /// Element index, inbound table entry, cancellation.
    admitted: Vec<(usize, u64, CancellationToken)>,
    /// Requests refused for a duplicate id.
    refused: Vec<usize>,
    /// Invalid elements to answer.
    invalid: Vec<usize>,
}

impl Batch {
    async fn run<H: Handler>(
        self,
        shared: &Arc<Shared>,
        handler: &Arc<H>,
        peer: &PeerHandle,
        detail: ReplyDetail,
    ) {
        let Self { frame, admitted, refused, invalid } = self;
        let runs = admitted.into_iter().map(|(i, entry, token)| {
            let frame = &frame;
            let cx = Context { peer: peer.clone(), cancel: token };
            async move {
                let req = Incoming::element(frame.clone(), i);
                let outcome = run_handler(shared, &**handler, &req, &cx).await;
                let id = req.id().expect("a request has an id");
                shared.lock().inbound.finish(id, entry);
                (i, outcome)
            }
        });
        let outcomes = futures_util::future::join_all(runs).await;
        let mut body = BytesMut::new();
        let id_of = |i: usize| frame.element(i).and_then(|m| m.id()).expect("a request has an id");
        for (i, outcome) in outcomes {
            let Some(outcome) = outcome else { continue };
            body.put_u8(b',');
            write_outcome_value(&mut body, id_of(i), &outcome);
        }
        for i in refused {
            let err = RpcError::new(ErrorCode::INVALID_REQUEST, "Invalid Request")
                .with_data("a request with this id is already in flight");
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
                .send(|buf| {
                    buf.extend_from_slice(&body);
                    Ok(())
                })
                .await;
        }
    }
}

/// Runs a handler until it answers, panics (-32603) or is cancelled (`None`).
async fn run_handler<H: Handler>(
    shared: &Shared,
    handler: &H,
    req: &Incoming,
    cx: &Context,
) -> Outcome {
    let run = AssertUnwindSafe(handler.request(req, cx)).catch_unwind();
    let outcome = tokio::select! {
        biased;
        // MCP: the receiver of a cancellation SHOULD NOT send a response for that request.
        () = cx.cancel.cancelled() => return None,
        outcome = run => outcome,
    };
    Some(outcome.unwrap_or_else(|_| {
        tracing::error!(method = req.method(), "a request handler panicked");
        shared.lock().handler_panics += 1;
        Err(RpcError::internal("Internal error").with_data("the handler panicked"))
    }))
}

fn write_outcome(
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
