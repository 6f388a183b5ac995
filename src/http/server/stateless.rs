//! A stateless (2026-07-28) POST: no session is named or minted. The headers are checked
//! against the body ([`crate::mcp::headers::check`]), then the request is served one of two
//! ways:
//! - without a peer (`peerless.rs`), when its handler takes it so ([`Handler::peerless`]: the
//!   typed [`Server`](crate::server::Server)'s do for every method but `subscriptions/listen`):
//!   answered in the connection's own future, no task, no channel;
//! - otherwise in a peer of its own (`peer_post.rs`, as a session's POST): closing the response
//!   cancels the request (the peer ends), and once answered the peer waits, idle, for another
//!   stateless request (at most `IDLE_STATELESS_PEERS` wait), so a request does not pay for
//!   starting one; a peer whose handler kept a handle to it (a task it spawned could still
//!   speak) is ended instead.
//!
//! The pooled peer stays, though the path without one is the fast one, for what cannot run
//! without a live [`PeerHandle`](crate::peer::PeerHandle): `subscriptions/listen` (long-lived,
//! it keeps a handle to send list changes on its stream), and every handler that does not say
//! `peerless` (a raw [`Handler`] by default), whose [`Context::peer`](crate::peer::Context::peer)
//! must stay a working handle in both eras: serving them without a peer would fail their sends.
//!
//! Nothing of a request outlives its answer: any instance behind a load balancer can serve any
//! such request. The server's stop ends them all.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use http::request::Parts;
use http::{Response, StatusCode};

use super::config::Config;
use super::peer_post::deliver;
use super::response::{
    Accepts, error, error_status, json_response, rejection_json, status, stopping,
};
use super::session::Session;
use super::{Body, Handlers, State, peerless};
use crate::mcp::envelope_spans::EnvelopeSpans;
use crate::mcp::headers;
use crate::peer::{Handler, Incoming, Principal};
use crate::{error::ErrorCode, message::Frame, message::Id, message::Kind};

/// Serves a POST that names no session and is not `initialize`.
pub(super) async fn serve<H: Handler>(
    cfg: &Config,
    state: &State,
    head: &Parts,
    frame: Frame,
    accepts: Accepts,
    principal: Option<Arc<Principal>>,
    handlers: Handlers<'_, H>,
) -> Response<Body> {
    match frame.kind() {
        Kind::Request => {}
        // The only client notification of 2026-07-28 is `notifications/cancelled`, which over
        // HTTP is the closing of the request's stream: there is nothing to deliver it to, and
        // it is accepted as the specification asks.
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
    let listen = msg.method() == Some("subscriptions/listen");
    if listen && !accepts.sse {
        let msg = "Not Acceptable: subscriptions/listen answers with a text/event-stream";
        return error(StatusCode::NOT_ACCEPTABLE, id, ErrorCode::SERVER_ERROR, msg);
    }
    let tools = cfg.tool_headers.as_deref();
    let checked = match headers::check(&head.headers, &msg, &cfg.modern_versions, tools) {
        // Handed on with the request: its server need not read `_meta` again.
        Ok(envelope) => msg.params().and_then(|p| EnvelopeSpans::of(&envelope, p.get())),
        Err(r) => return json_response(error_status(r.code), rejection_json(id, &r)),
    };
    // `subscriptions/listen` is long-lived and keeps a handle to send changes: it runs in a
    // peer. Any other request goes to a handler that can take it without one.
    let frame = if listen {
        frame
    } else {
        let request = Incoming::own(frame);
        if H::peerless(&request) {
            if state.stopped.load(Ordering::SeqCst) {
                return stopping(request.id().unwrap_or(Id::Null));
            }
            let handler = handlers.shared.get_or_init(handlers.make).clone();
            let cx = (principal, checked);
            return peerless::serve(cfg, state, handler, request, accepts, cx).await;
        }
        request.into_frame().expect("made from a frame of its own")
    };
    // Boxed, as a session's POST is: a request in a peer is the rarer path.
    Box::pin(in_pooled_peer(cfg, state, frame, accepts, principal, handlers.make)).await
}

/// Serves a stateless request in a peer an earlier one left idle, or a new one.
async fn in_pooled_peer<H: Handler>(
    cfg: &Config,
    state: &State,
    frame: Frame,
    accepts: Accepts,
    principal: Option<Arc<Principal>>,
    make: &(dyn Fn() -> Arc<H> + Send + Sync),
) -> Response<Body> {
    let id = frame.id().unwrap_or(Id::Null);
    let session =
        state.idle.take().unwrap_or_else(|| Session::start_single(&cfg.peer, make(), &state.idle));
    // Started after the stop ended the stateless peers (the request came just before it):
    // answered as one that came after.
    if state.stopped.load(Ordering::SeqCst) && !session.is_open() {
        return stopping(id);
    }
    // The peer serves one request at a time: its handler sees this request's caller.
    session.set_principal(principal);
    let uses = session.uses.load(Ordering::Acquire);
    let answer = deliver(cfg, &session, frame, accepts).await;
    // The POST's receiver decides the session's fate (idle once answered, ended when the
    // client closed the POST); a session no POST was registered with ends here.
    if session.uses.load(Ordering::Acquire) == uses {
        session.close();
    }
    answer
}
