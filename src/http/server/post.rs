//! A POST: its checks, the session it opens or names, and its answer (JSON, or an event stream
//! of the request's progress and then its response).

use std::task::Poll;

use super::response::*;
use super::sessions::make_room;
use super::*;
use crate::http::session::{Note, PostReceiver, Refused, Resumption};

impl HttpServer {
    pub(super) async fn post<H: Handler>(
        &self,
        req: Request<HyperBody>,
        principal: Option<Arc<Principal>>,
        make: &(dyn Fn() -> Arc<H> + Send + Sync),
        shared: &OnceLock<Arc<H>>,
        budget: &Arc<Semaphore>,
    ) -> Response<Body> {
        let h = req.headers();
        if !h.get(CONTENT_TYPE).is_some_and(|v| media_type_is(v, "application/json")) {
            return error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Id::Null,
                ErrorCode::SERVER_ERROR,
                "Unsupported Media Type: Content-Type must be application/json",
            );
        }
        let (json, sse) = accepts(h);
        if !json && !sse {
            return error(
                StatusCode::NOT_ACCEPTABLE,
                Id::Null,
                ErrorCode::SERVER_ERROR,
                "Not Acceptable: Accept must include application/json or text/event-stream",
            );
        }
        let limit = self.config.peer.limits.frame_bytes();
        let declared = h.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return too_large(limit);
        }
        let session = match self.session_of(&req, principal.as_deref()) {
            Ok(s) => s,
            Err(answer) => return *answer,
        };
        let (head, body) = req.into_parts();
        // Room for the body in the server's budget, held until the POST is answered.
        let want = declared.map_or(limit, |n| usize::try_from(n).unwrap_or(limit));
        let want = want.clamp(1, self.config.max_body_bytes);
        let want = u32::try_from(want).unwrap_or(u32::MAX);
        // Each wait is bounded by the read timeout; what is ready at once (room in the budget,
        // a body already received) is taken without arming its timer.
        let room = match budget.clone().try_acquire_many_owned(want) {
            Ok(room) => Ok(room),
            Err(_) => {
                let room = budget.clone().acquire_many_owned(want);
                match tokio::time::timeout(self.config.read_timeout, room).await {
                    Ok(Ok(room)) => Ok(room),
                    _ => Err(()),
                }
            }
        };
        let Ok(_room) = room else {
            let msg = "Service Unavailable: too many request bytes in flight";
            return error(StatusCode::SERVICE_UNAVAILABLE, Id::Null, ErrorCode::SERVER_ERROR, msg);
        };
        let body = crate::http::read_body(body, limit);
        tokio::pin!(body);
        let first = std::future::poll_fn(|cx| Poll::Ready(body.as_mut().poll(cx))).await;
        let read = match first {
            Poll::Ready(read) => Ok(read),
            Poll::Pending => tokio::time::timeout(self.config.read_timeout, body).await,
        };
        let Ok(read) = read else {
            let msg = "Request Timeout: the body did not arrive in time";
            return error(StatusCode::REQUEST_TIMEOUT, Id::Null, ErrorCode::SERVER_ERROR, msg);
        };
        let body = match read {
            Ok(b) => b,
            Err(crate::http::BodyError::TooLarge) => return too_large(limit),
            Err(crate::http::BodyError::Failed(e)) => {
                tracing::debug!(error = %e, "reading a POST body failed");
                return error(
                    StatusCode::BAD_REQUEST,
                    Id::Null,
                    ErrorCode::SERVER_ERROR,
                    "Bad Request: body unreadable",
                );
            }
        };
        let frame = FrameParser::parse_bytes_with(self.config.peer.limits, body);
        if let Some(m) = frame.message()
            && m.kind() == Kind::Invalid
        {
            let mut out = BytesMut::new();
            let detail = self.config.peer.reply_detail;
            if let Some(reply) = m.error_reply(detail) {
                let _ = reply.write_value(&mut out);
            }
            return json_response(StatusCode::BAD_REQUEST, out.freeze());
        }
        // An `initialize` under a modern `MCP-Protocol-Version` is a stateless request for a
        // method 2026-07-28 removed (404, -32601), not the opening of a session: a legacy
        // client sends no version header with it.
        let version =
            head.headers.get(&VERSION_NAME).and_then(|v| v.to_str().ok()).map(str::trim_ascii);
        let modern_header =
            version.is_some_and(|v| crate::mcp::Era::of(v) == crate::mcp::Era::Modern);
        let initialize =
            frame.kind() == Kind::Request && frame.method() == Some("initialize") && !modern_header;
        let (session, new) = match session {
            Some(s) if initialize => {
                drop(s);
                let id = frame.id().unwrap_or(Id::Null);
                let msg = "Invalid Request: the session is already initialized";
                return error(StatusCode::BAD_REQUEST, id, ErrorCode::INVALID_REQUEST, msg);
            }
            Some(s) => (s, false),
            None if initialize => match self.open_session(make, principal) {
                Ok(s) => (s, true),
                Err(answer) => return *answer,
            },
            // A legacy version served with no session: the client lost it (or never opened
            // one). Any other version is a stateless request's (an unknown one is refused
            // with the versions served).
            None if version.is_some_and(|v| self.config.versions.iter().any(|s| s == v)) => {
                let msg = "Bad Request: Mcp-Session-Id header is required";
                return error(StatusCode::BAD_REQUEST, Id::Null, ErrorCode::SERVER_ERROR, msg);
            }
            None => {
                let handlers = (make, shared);
                return self.modern(&head, frame, json, sse, principal, handlers).await;
            }
        };
        // Boxed: the session's path is the largest state of this future, which hyper moves
        // into place for every request, the stateless ones too.
        let answer = Box::pin(self.deliver(&session, frame, json, sse)).await;
        if new { self.admit(session, answer) } else { answer }
    }

    /// Starts a session for an `initialize` request.
    pub(super) fn open_session<H: Handler>(
        &self,
        make: &(dyn Fn() -> Arc<H> + Send + Sync),
        principal: Option<Arc<Principal>>,
    ) -> Result<Arc<Session>, Box<Response<Body>>> {
        let full = || {
            let msg = "Service Unavailable: too many sessions";
            error(StatusCode::SERVICE_UNAVAILABLE, Id::Null, ErrorCode::SERVER_ERROR, msg)
        };
        if !make_room(&self.state, self.config.max_sessions, self.config.idle_timeout) {
            return Err(Box::new(full()));
        }
        let id = new_session_id().map_err(|e| {
            tracing::error!(error = %e, "no randomness for a session id");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                Id::Null,
                ErrorCode::INTERNAL_ERROR,
                "Internal error",
            )
        })?;
        let resume = Resumption { config: self.config.resume, counter: self.state.streams.clone() };
        let session = Session::start(id, &self.config.peer, make(), resume);
        session.set_principal(principal);
        Ok(session)
    }

    /// Keeps a new session when its `initialize` succeeded, and names it in the answer.
    pub(super) fn admit(
        &self,
        session: Arc<Session>,
        mut answer: Response<Body>,
    ) -> Response<Body> {
        // A failed `initialize` is answered 200 too, with an error: only a result, which names
        // the protocol version, opens the session (an event stream may carry it later).
        // An event stream whose response has not come yet (progress came first) may still
        // carry a result: the session is kept, as the client will learn its id.
        let (negotiated, pending) = session.initialize_outcome();
        if answer.status() != StatusCode::OK || !(negotiated || pending) {
            session.close();
            return answer;
        }
        // Another `initialize` may have taken the room made for this one meanwhile.
        let room = make_room(&self.state, self.config.max_sessions, self.config.idle_timeout);
        {
            let mut map = self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let stopping = self.state.stopped.load(Ordering::SeqCst);
            if !room || map.len() >= self.config.max_sessions || stopping {
                drop(map);
                session.close();
                let msg = if stopping {
                    "Service Unavailable: the server is stopping"
                } else {
                    "Service Unavailable: too many sessions"
                };
                return error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Id::Null,
                    ErrorCode::SERVER_ERROR,
                    msg,
                );
            }
            map.insert(session.id.clone(), session.clone());
        }
        self.state.started.fetch_add(1, Ordering::Relaxed);
        if let Ok(v) = HeaderValue::from_str(&session.id) {
            answer.headers_mut().insert(SESSION_NAME, v);
        }
        answer
    }

    /// Hands a valid frame to the session and waits for what it owes the client.
    pub(super) async fn deliver(
        &self,
        session: &Arc<Session>,
        frame: Frame,
        json: bool,
        sse: bool,
    ) -> Response<Body> {
        let mut requests = crate::http::session::PostIds::new();
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
                |m: &crate::Message<'_>| m.kind() == Kind::Invalid && !m.is_response_shaped();
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
            Some(w) => reply(w, json, sse, &self.config).await,
            None => cancelled_answer(sse),
        }
    }
}

/// Answers a POST that carried requests: `application/json` when the response comes first (or
/// the client takes only JSON), else a `text/event-stream` of the progress and then the
/// response. In a legacy session the event stream is resumable (its events have ids, it begins
/// with a priming event from 2025-11-25 on), and a handler closing it ends this POST while the
/// stream goes on for the client to resume.
async fn reply(mut w: PostReceiver, json: bool, sse: bool, cfg: &Config) -> Response<Body> {
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
                let code = if w.stateless() {
                    super::stateless::answer_status(&frame)
                } else {
                    StatusCode::OK
                };
                return super::stateless::json_reply(cfg, frame, code);
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
    let note: crate::Outgoing<'_> = crate::Outgoing::Notification {
        method: "notifications/cancelled",
        params: Some(crate::RawJson::new(&params)),
    };
    note.write_value(&mut out).expect("a notification of raw params always encodes");
    FrameParser::new(crate::Limits::default()).parse(out)
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
