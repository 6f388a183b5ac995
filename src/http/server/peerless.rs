//! A stateless (2026-07-28) request served without a peer, for a handler whose
//! [`Handler::peerless`](crate::peer::Handler::peerless) says so: checked by `stateless.rs`, then handed
//! to the handler inside the connection's own service future. A handler that answers at once
//! answers on that path (no task, no channel, no route); one that waits keeps the service
//! future polling it. The first notification it sends (through
//! [`Context::notify`](crate::peer::Context::notify)) turns the answer into an event stream at
//! that point: the body polls the handler from then on, and carries what it sends, then its
//! response, then the end, with a `: keep-alive` comment when it is quiet.
//!
//! The guards are those of a stateless request in a peer: closing the POST (or the connection)
//! drops the handler's future, cancelling it; the server's stop answers a request still
//! waiting with -32603; a handler that panics is answered -32603.

use crate::sync::Locked;
use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::FutureExt as _;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};

use super::config::Config;
use super::response::{Accepts, error_status, json_reply, sse_response};
use super::{Body, State};
use crate::http::{error_json, sse_event};
use crate::limits::POST_NOTES;
use crate::mcp::envelope_spans::EnvelopeSpans;
use crate::peer::{Context, Handler, Incoming, Inline, Principal, Reply, RpcError};
use crate::{error::ErrorCode, message::Id, message::owned::OwnedId};

/// A handler's run: the request back, and its outcome (`None`: it panicked).
type Run = Pin<Box<dyn Future<Output = (Incoming, Option<Result<Reply, RpcError>>)> + Send>>;

/// Ends the call (its context refuses later notifications) once the request is answered or
/// its POST dropped.
struct Ended(Arc<Inline>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Answers a checked stateless request with `handler`, without a peer; its context carries the
/// caller and the envelope the header check found.
pub(super) async fn serve<H: Handler>(
    cfg: &Config,
    state: &State,
    handler: Arc<H>,
    request: Incoming,
    accepts: Accepts,
    (principal, checked): (Option<Arc<Principal>>, Option<EnvelopeSpans>),
) -> Response<Body> {
    let Accepts { json, sse } = accepts;
    let id = request.id().and_then(OwnedId::from_id);
    let call = Arc::new(Inline::new(POST_NOTES));
    let ended = Ended(call.clone());
    let cx = Context::inline(call.clone(), principal).with_envelope_spans(checked);
    let mut run: Run = Box::pin(async move {
        // The call is inside the guarded future, so a handler that panics before returning
        // its future is caught too.
        let outcome =
            AssertUnwindSafe(async { handler.request(&request, &cx).await }).catch_unwind();
        let outcome = outcome.await.ok();
        (request, outcome)
    });
    let mut stop = None;
    let first = std::future::poll_fn(|task| {
        if let Poll::Ready(done) = run.as_mut().poll(task) {
            return Poll::Ready(Some(Ok(done)));
        }
        // A notification came first (sent by another task, too: it wakes this one): the
        // rest goes on an event stream.
        if sse && call.noted(task.waker()) {
            return Poll::Ready(None);
        }
        let stop = stop.get_or_insert_with(|| stopping(state));
        if stop.as_mut().poll(task).is_ready() {
            return Poll::Ready(Some(Err(())));
        }
        Poll::Pending
    })
    .await;
    match first {
        Some(Ok((request, outcome))) => {
            drop(ended);
            let (body, code) = outcome_json(&request, outcome);
            let notes = if sse { call.drain() } else { Default::default() };
            if notes.is_empty() {
                return json_answer(cfg, body, json, code);
            }
            // Notifications sent before an answer given at once: one chunk of events.
            let mut out = BytesMut::new();
            for note in notes.iter().chain([&body]) {
                out.extend_from_slice(&sse_event(note));
            }
            sse_response(BodyExt::boxed_unsync(Full::new(out.freeze())))
        }
        Some(Err(())) => {
            let id = id.as_ref().map_or(Id::Null, OwnedId::as_id);
            let code = error_status(ErrorCode::INTERNAL_ERROR);
            json_answer(cfg, stopped_json(id), json, code)
        }
        None => {
            let stop = stop.unwrap_or_else(|| stopping(state));
            let events = Events { run, call, ended, id, stop, done: false };
            let every = cfg.keep_alive;
            let tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            sse_response(BodyExt::boxed_unsync(StreamBody::new(events.with(tick))))
        }
    }
}

/// A stateless request's response: JSON with the status its error maps to (a scope
/// refusal instead, under a resource-server guard), or one event for a client that takes
/// only event streams.
/// `code`: the status its error maps to, known to the answer's maker.
fn json_answer(cfg: &Config, body: Bytes, json: bool, code: StatusCode) -> Response<Body> {
    if !json {
        return sse_response(BodyExt::boxed_unsync(Full::new(sse_event(&body))));
    }
    json_reply(cfg, body, code)
}

/// Completes once the server stops.
fn stopping(state: &State) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    let token = state.halt.locked().clone();
    Box::pin(token.cancelled_owned())
}

/// A request's response to `outcome` (a panic answered -32603), and the HTTP status a
/// stateless answer takes ([`crate::mcp::http_status`] of an error's code; 200 for a result):
/// known here, so the answer is not searched for an error.
fn outcome_json(
    request: &Incoming,
    outcome: Option<Result<Reply, RpcError>>,
) -> (Bytes, StatusCode) {
    let outcome = outcome.unwrap_or_else(|| {
        tracing::error!(method = request.method(), "a request handler panicked");
        Err(RpcError::internal("Internal error").with_data("the handler panicked"))
    });
    let code = match &outcome {
        Ok(_) => StatusCode::OK,
        Err(e) => error_status(e.code),
    };
    let mut out = BytesMut::new();
    crate::peer::write_outcome(&mut out, request.id().unwrap_or(Id::Null), &outcome);
    (out.freeze(), code)
}

/// The response to a request still waiting when the server stopped, -32603.
fn stopped_json(id: Id<'_>) -> Bytes {
    let msg = "Internal error: the server stopped before the request was answered";
    error_json(id, ErrorCode::INTERNAL_ERROR, msg)
}

/// The event stream of a request whose handler sent a notification before its response.
struct Events {
    run: Run,
    call: Arc<Inline>,
    ended: Ended,
    id: Option<OwnedId>,
    stop: Pin<Box<dyn Future<Output = ()> + Send>>,
    done: bool,
}

impl Events {
    /// The stream's chunks: what the handler sent and its response as events, a keep-alive
    /// comment every tick of a quiet stream.
    fn with(
        mut self,
        mut tick: tokio::time::Interval,
    ) -> impl futures_util::Stream<Item = Result<hyper::body::Frame<Bytes>, Infallible>> + Send
    {
        futures_util::stream::poll_fn(move |task| {
            let chunk = self.poll_chunk(task, &mut tick);
            chunk.map(|c| c.map(|c| Ok(hyper::body::Frame::data(c))))
        })
    }

    fn poll_chunk(
        &mut self,
        task: &mut TaskContext<'_>,
        tick: &mut tokio::time::Interval,
    ) -> Poll<Option<Bytes>> {
        if self.done {
            return Poll::Ready(None);
        }
        let answer = match self.run.as_mut().poll(task) {
            Poll::Ready((request, outcome)) => Some(outcome_json(&request, outcome).0),
            Poll::Pending if self.stop.as_mut().poll(task).is_ready() => {
                Some(stopped_json(self.id.as_ref().map_or(Id::Null, OwnedId::as_id)))
            }
            Poll::Pending => None,
        };
        // What the handler sent before its response goes first.
        let mut out = BytesMut::new();
        while let Some(note) = self.call.take(task.waker()) {
            out.extend_from_slice(&sse_event(&note));
        }
        if let Some(answer) = answer {
            out.extend_from_slice(&sse_event(&answer));
            self.done = true;
            self.ended.0.end();
        }
        if !out.is_empty() {
            return Poll::Ready(Some(out.freeze()));
        }
        if tick.poll_tick(task).is_ready() {
            return Poll::Ready(Some(Bytes::from_static(b": keep-alive\n\n")));
        }
        Poll::Pending
    }
}
