//! A stateless (2026-07-28) POST: no session is named or minted. The headers are checked
//! against the body ([`crate::mcp::headers::check`]), then a handler that takes it without a
//! peer ([`Handler::peerless`]) answers it in the connection's own future (`inline.rs`);
//! otherwise (and always for `subscriptions/listen`) the request runs in a peer of its
//! own: closing the response cancels the request (the peer ends), and once answered the peer
//! waits, idle, for another stateless request (at most `IDLE_STATELESS_PEERS` wait), so a request
//! does not pay for starting one; a peer whose handler kept a handle to it (a task it spawned
//! could still speak) is ended instead. Nothing of a request outlives its answer: any instance
//! behind a load balancer can serve any such request. The server's stop ends them all.

use super::response::*;
use super::*;
use crate::mcp::checked::Checked;
use crate::mcp::headers;
use crate::peer::Incoming;

impl HttpServer {
    /// Answers a POST that names no session and is not `initialize`.
    pub(super) async fn modern<H: Handler>(
        &self,
        head: &http::request::Parts,
        frame: Frame,
        json: bool,
        sse: bool,
        principal: Option<Arc<Principal>>,
        (make, shared): (&(dyn Fn() -> Arc<H> + Send + Sync), &OnceLock<Arc<H>>),
    ) -> Response<Body> {
        match frame.kind() {
            Kind::Request => {}
            // The only client notification of 2026-07-28 is `notifications/cancelled`, which
            // over HTTP is the closing of the request's stream: there is nothing to deliver it
            // to, and it is accepted as the specification asks.
            Kind::Notification => return status(StatusCode::ACCEPTED),
            _ => {
                let msg = "Invalid Request: the body must be a single JSON-RPC request or \
                           notification object";
                return error(StatusCode::BAD_REQUEST, Id::Null, ErrorCode::INVALID_REQUEST, msg);
            }
        }
        let Some(msg) = frame.message() else {
            return error(StatusCode::BAD_REQUEST, Id::Null, ErrorCode::INVALID_REQUEST, "");
        };
        let id = msg.id().unwrap_or(Id::Null);
        if msg.method() == Some("subscriptions/listen") && !sse {
            let msg = "Not Acceptable: subscriptions/listen answers with a text/event-stream";
            return error(StatusCode::NOT_ACCEPTABLE, id, ErrorCode::SERVER_ERROR, msg);
        }
        let tools = self.config.tool_headers.as_deref();
        let checked = match headers::check(&head.headers, &msg, &self.config.modern_versions, tools)
        {
            // Handed on with the request: its server need not read `_meta` again.
            Ok(envelope) => msg.params().and_then(|p| Checked::of(&envelope, p.get())),
            Err(r) => return json_response(error_status(r.code), rejection_json(id, &r)),
        };
        // `subscriptions/listen` is long-lived and keeps a handle to send changes: it runs in
        // a peer. Any other request goes to a handler that can take it without one.
        let listen = msg.method() == Some("subscriptions/listen");
        let frame = if listen {
            frame
        } else {
            let request = Incoming::own(frame);
            if H::peerless(&request) {
                if self.state.stopped.load(Ordering::SeqCst) {
                    return stopping(request.id().unwrap_or(Id::Null));
                }
                let handler = shared.get_or_init(make).clone();
                let cx = (principal, checked);
                return self.inline(handler, request, json, sse, cx).await;
            }
            request.into_frame().expect("made from a frame of its own")
        };
        let id = frame.id().unwrap_or(Id::Null);
        let session = self
            .idle_peer()
            .unwrap_or_else(|| Session::start_single(&self.config.peer, make(), &self.state.idle));
        // Started after the stop ended the stateless peers (the request came just before it):
        // answered as one that came after.
        if self.state.stopped.load(Ordering::SeqCst) && !session.is_open() {
            return stopping(id);
        }
        // The peer serves one request at a time: its handler sees this request's caller.
        session.set_principal(principal);
        let uses = session.uses.load(Ordering::Acquire);
        // Boxed, as in `post`: a request in a peer is the rarer path.
        let answer = Box::pin(self.deliver(&session, frame, json, sse)).await;
        // The POST's receiver decides the session's fate (idle once answered, ended when the
        // client closed the POST); a session no POST was registered with ends here.
        if session.uses.load(Ordering::Acquire) == uses {
            session.close();
        }
        answer
    }

    /// A peer an earlier stateless request left idle, if one is still running.
    fn idle_peer(&self) -> Option<Arc<Session>> {
        self.state.idle.take()
    }
}

/// A [`crate::mcp::meta::Rejection`] as an error response with `id`.
fn rejection_json(id: Id<'_>, r: &crate::mcp::meta::Rejection) -> Bytes {
    let mut out = BytesMut::new();
    let reply: crate::Outgoing<'_> =
        crate::Outgoing::Error { id, code: r.code, message: &r.message, data: r.data() };
    if reply.write_value(&mut out).is_err() {
        return error_json(id, r.code, &r.message);
    }
    out.freeze()
}

/// A request's response as JSON, with status `code`: a scope refusal instead, when a
/// resource-server guard finds one in it.
pub(super) fn json_reply(cfg: &Config, body: Bytes, code: StatusCode) -> Response<Body> {
    #[cfg(feature = "oauth")]
    if let Some(rs) = &cfg.auth
        && let Some(refused) = super::guard::scope_refusal(rs, &body)
    {
        return refused;
    }
    #[cfg(not(feature = "oauth"))]
    let _ = cfg;
    json_response(code, body)
}

/// The HTTP status of a stateless request's JSON answer: 400 or 404 for the error codes the
/// specification maps ([`crate::mcp::http_status`]), 200 for a result or any other error.
pub(super) fn answer_status(body: &Bytes) -> StatusCode {
    static ERROR_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"error\""));
    // A result never needs the parse.
    if ERROR_KEY.find(body).is_none() {
        return StatusCode::OK;
    }
    let frame = FrameParser::parse_bytes_with(crate::Limits::default(), body.clone());
    let code = frame.message().and_then(|m| m.error()).map(|e| ErrorCode(e.code));
    code.map_or(StatusCode::OK, error_status)
}

/// The HTTP status of a stateless request answered with error `code`
/// ([`crate::mcp::http_status`]).
pub(super) fn error_status(code: ErrorCode) -> StatusCode {
    StatusCode::from_u16(crate::mcp::http_status(code)).unwrap_or(StatusCode::OK)
}
