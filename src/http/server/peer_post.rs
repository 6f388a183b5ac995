//! A POST served by a peer: a legacy session's (opened by `initialize`, or named by the POST),
//! or a stateless request's pooled one (`stateless.rs` says which requests take it). The frame
//! is fed to the peer in the order of the session's POSTs, its requests registered for their
//! answers, and the POST answered as those come: JSON, or an event stream of the request's
//! progress and then its response (in a session, a resumable one).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};

use super::config::Config;
use super::response::{
    Accepts, answer_status, error, json_reply, json_response, session_gone, sse_response, status,
    stream_response,
};
use super::session::{Note, PostIds, PostReceiver, Refused, Session};
use super::{Body, State, sessions};
use crate::http::{BATCH_VERSION, cancelled_request, sse_event};
use crate::peer::{Handler, Principal};
use crate::{
    error::ErrorCode, message::Frame, message::FrameParser, message::Id, message::Kind,
    message::owned::OwnedId,
};

/// Serves an `initialize`: a session opened for it, kept once it succeeded.
pub(super) async fn open<H: Handler>(
    cfg: &Config,
    state: &State,
    make: &(dyn Fn() -> Arc<H> + Send + Sync),
    principal: Option<Arc<Principal>>,
    frame: Frame,
    accepts: Accepts,
) -> Response<Body> {
    let session = match sessions::open(cfg, state, make, principal) {
        Ok(s) => s,
        Err(answer) => return *answer,
    };
    let answer = deliver(cfg, &session, frame, accepts).await;
    sessions::admit(cfg, state, session, answer)
}

/// Hands a valid frame to the session and waits for what it owes the client.
pub(super) async fn deliver(
    cfg: &Config,
    session: &Arc<Session>,
    frame: Frame,
    accepts: Accepts,
) -> Response<Body> {
    let mut requests = PostIds::new();
    if frame.kind() == Kind::Batch {
        let version = session.routes().version.clone();
        if version.as_deref() != Some(BATCH_VERSION) {
            let msg =
                "Invalid Request: batches are accepted only under protocol version 2025-03-26";
            return error(StatusCode::BAD_REQUEST, Id::Null, ErrorCode::INVALID_REQUEST, msg);
        }
        // Invalid elements are answered in the batch's reply, which is routed by the ids of
        // the batch's requests: without one it could not reach this POST.
        let elements = || frame.batch().into_iter().flatten();
        let answered =
            |m: &crate::message::Message<'_>| m.kind() == Kind::Invalid && !m.is_response_shaped();
        if elements().any(|m| answered(&m)) && !elements().any(|m| m.kind() == Kind::Request) {
            let msg = "Invalid Request: a batch with invalid elements must hold a request";
            return error(StatusCode::BAD_REQUEST, Id::Null, ErrorCode::INVALID_REQUEST, msg);
        }
        for m in elements().filter(|m| m.kind() == Kind::Request) {
            let id = m.id().and_then(OwnedId::from_id).expect("a request has an id");
            if requests.contains(&id) {
                let msg = "Invalid Request: duplicate id in the batch";
                let (code, rpc) = (StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST);
                return error(code, id.as_id(), rpc, msg);
            }
            requests.push(id);
        }
    } else if let Some(m) = frame.message()
        && m.kind() == Kind::Request
    {
        let id = m.id().and_then(OwnedId::from_id).expect("a request has an id");
        requests.push(id);
    }
    // Cancellations (alone or in a batch) end the POSTs of the requests they name.
    let cancels: Vec<OwnedId> = match frame.batch() {
        Some(b) => b.filter_map(|m| cancelled_request(&m)).collect(),
        None => frame.message().and_then(|m| cancelled_request(&m)).into_iter().collect(),
    };
    if requests.is_empty() {
        let order = (!cancels.is_empty()).then(|| session.order.lock());
        let _order = match order {
            Some(o) => Some(o.await),
            None => None,
        };
        for id in &cancels {
            session.cancel(id);
        }
        if !session.feed(frame).await {
            return session_gone();
        }
        return status(StatusCode::ACCEPTED);
    }
    let order = session.order.lock().await;
    for id in &cancels {
        session.cancel(id);
    }
    let mut early = Vec::new();
    let waiting = match session.expect(requests, &mut early) {
        Ok(w) => Some(w),
        Err(Refused::Duplicate(id)) => {
            let msg = "Invalid Request: a request with this id is already in progress";
            return error(StatusCode::BAD_REQUEST, id.as_id(), ErrorCode::INVALID_REQUEST, msg);
        }
        Err(Refused::Cancelled) => None,
        Err(Refused::Closed) => return session_gone(),
    };
    // A request cancelled before it came is not fed alone; in a batch, the batch's other
    // messages (a response the server waits for, say) still go in, and the request is
    // cancelled right after it.
    if waiting.is_some() || frame.kind() == Kind::Batch {
        if !session.feed(frame).await {
            return session_gone();
        }
        for id in &early {
            if !session.feed(cancellation(id)).await {
                return session_gone();
            }
        }
    }
    drop(order);
    match waiting {
        Some(w) => reply(w, accepts, cfg).await,
        None => cancelled_answer(accepts.sse),
    }
}

/// Answers a POST that carried requests: `application/json` when the response comes first (or
/// the client takes only JSON), else a `text/event-stream` of the progress and then the
/// response. In a legacy session the event stream is resumable (its events have ids, it begins
/// with a priming event from 2025-11-25 on), and a handler closing it ends this POST while the
/// stream goes on for the client to resume.
async fn reply(mut w: PostReceiver, accepts: Accepts, cfg: &Config) -> Response<Body> {
    let Accepts { json, sse } = accepts;
    let every = cfg.keep_alive;
    let resumable = w.resumable();
    let note = loop {
        // Progress queued before the response makes it an event stream (when the client takes
        // one).
        let first = tokio::select! {
            biased;
            note = w.notes.recv(), if sse => Ok(note),
            done = &mut w.done => Err(done),
        };
        let note = match first {
            // A client that takes only event streams gets the response as one.
            Err(Ok(frame)) if !json => {
                if resumable {
                    return stream_response(w.one_event_stream(&frame), every);
                }
                let event = Full::new(sse_event(&frame));
                return sse_response(BodyExt::boxed_unsync(event));
            }
            Err(Ok(frame)) => {
                let code = if w.stateless() { answer_status(&frame) } else { StatusCode::OK };
                return json_reply(cfg, frame, code);
            }
            Err(Err(_)) if w.cancelled() => return cancelled_answer(sse),
            Err(Err(_)) | Ok(None) => return json_response(StatusCode::OK, w.abandoned()),
            Ok(Some(note)) => note,
        };
        match note {
            // Closing a stream that could not be resumed would lose the response: it comes on
            // this POST as usual.
            Note::Close if !(resumable && w.pollable()) => {}
            note if resumable => return stream_response(w.into_stream(note), every),
            Note::Message(m) => break m,
            Note::Close => {}
        }
    };
    stateless_stream(w, note, every)
}

/// A stateless request's event stream: `first` (a notification its handler sent), what the
/// handler sends next, then the response, then the end.
fn stateless_stream(w: PostReceiver, first: Bytes, every: Duration) -> Response<Body> {
    let first = sse_event(&first);
    // A long stream (`subscriptions/listen`, a slow tool) carries a comment now and then, so
    // proxies and clients do not time out a quiet stream, and a client gone is noticed.
    let tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let state = (Some(first), Some(w), tick);
    let events = futures_util::stream::unfold(state, |(first, w, mut tick)| async move {
        if let Some(chunk) = first {
            return Some((Ok(hyper::body::Frame::data(chunk)), (None, w, tick)));
        }
        let mut w = w?;
        let chunk = tokio::select! {
            biased;
            _ = tick.tick() => Some(Bytes::from_static(b": keep-alive\n\n")),
            note = w.notes.recv() => match note {
                Some(Note::Message(n)) => Some(sse_event(&n)),
                // Never sent to a stateless request's POST.
                Some(Note::Close) => Some(Bytes::from_static(b": keep-alive\n\n")),
                None => match (&mut w.done).await {
                    Ok(f) => Some(sse_event(&f)),
                    Err(_) if w.cancelled() => None,
                    Err(_) => Some(sse_event(&w.abandoned())),
                },
            },
            done = &mut w.done => {
                // Progress queued before the response goes first.
                let mut out = BytesMut::new();
                while let Ok(n) = w.notes.try_recv() {
                    if let Note::Message(n) = n {
                        out.extend_from_slice(&sse_event(&n));
                    }
                }
                match done {
                    Ok(done) => out.extend_from_slice(&sse_event(&done)),
                    Err(_) if w.cancelled() => {}
                    Err(_) => out.extend_from_slice(&sse_event(&w.abandoned())),
                }
                return Some((Ok(hyper::body::Frame::data(out.freeze())), (None, None, tick)));
            }
        };
        let chunk = chunk?;
        Some((Ok(hyper::body::Frame::data(chunk)), (None, Some(w), tick)))
    });
    sse_response(BodyExt::boxed_unsync(StreamBody::new(events)))
}

/// A `notifications/cancelled` for request `id`, as the session's peer reads it.
fn cancellation(id: &OwnedId) -> Frame {
    let mut out = BytesMut::new();
    let params =
        format!("{{\"requestId\":{},\"reason\":\"cancelled before it came\"}}", id.as_id());
    let note: crate::message::encode::Outgoing<'_> =
        crate::message::encode::Outgoing::Notification {
            method: "notifications/cancelled",
            params: Some(crate::message::RawJson::new(&params)),
        };
    note.write_value(&mut out).expect("a notification of raw params always encodes");
    FrameParser::new(crate::limits::Limits::default()).parse(out)
}

/// The end of a POST whose request the client cancelled: an event stream with no event, or
/// `202 Accepted` with no body for a client that takes only JSON. No response is sent, as
/// JSON-RPC asks of a cancelled request.
fn cancelled_answer(sse: bool) -> Response<Body> {
    if sse {
        sse_response(BodyExt::boxed_unsync(http_body_util::Empty::new()))
    } else {
        status(StatusCode::ACCEPTED)
    }
}
