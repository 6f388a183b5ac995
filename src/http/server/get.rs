//! GET (a session's event stream, opened or resumed) and DELETE.

use crate::sync::Locked;
use http::header::{ALLOW, HeaderValue};
use http::{Request, Response, StatusCode};

use super::config::Config;
use super::response::{Accepts, error, status, stream_response};
use super::stream::{ResumeConfig, Unresumable, parse_event_id};
use super::{Body, State, sessions};
use crate::peer::Principal;
use crate::{error::ErrorCode, message::Id};

/// A GET: a session's event stream, opened, or resumed from its `Last-Event-ID`.
pub(super) fn get<B>(
    cfg: &Config,
    state: &State,
    req: &Request<B>,
    principal: Option<&Principal>,
) -> Response<Body> {
    let resuming = req.headers().get(LAST_EVENT_ID).is_some_and(|v| !v.is_empty());
    if !cfg.get_stream && !resuming {
        let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("POST, DELETE"));
        return r;
    }
    if !Accepts::of(req.headers()).sse {
        let msg = "Not Acceptable: Accept must include text/event-stream";
        return error(StatusCode::NOT_ACCEPTABLE, Id::Null, ErrorCode::SERVER_ERROR, msg);
    }
    let session = match sessions::required(cfg, state, req, principal) {
        Ok(s) => s,
        Err(answer) => return *answer,
    };
    let guard = if resuming {
        let (number, after) = match last_event_id(req.headers()) {
            Ok(id) => id,
            Err(answer) => return *answer,
        };
        match session.resume(number, after) {
            Ok(g) => g,
            Err(why) => return unresumable(why, &cfg.resume),
        }
    } else {
        let Some(guard) = session.open_stream() else {
            let msg = "Conflict: a stream is already open for this session";
            return error(StatusCode::CONFLICT, Id::Null, ErrorCode::SERVER_ERROR, msg);
        };
        guard
    };
    stream_response(guard, cfg.keep_alive)
}

/// A DELETE: the session it names ends.
pub(super) fn delete<B>(
    cfg: &Config,
    state: &State,
    req: &Request<B>,
    principal: Option<&Principal>,
) -> Response<Body> {
    let session = match sessions::required(cfg, state, req, principal) {
        Ok(s) => s,
        Err(answer) => return *answer,
    };
    state.sessions.locked().remove(&session.id);
    session.close();
    status(StatusCode::OK)
}

/// The header a client resuming an event stream names the last event it got in.
const LAST_EVENT_ID: &str = "last-event-id";

/// The stream and event a GET's `Last-Event-ID` names (given once, not empty), or the 400 that
/// answers one that is not an event id of this server's.
fn last_event_id(h: &http::HeaderMap) -> Result<(u64, u64), Box<Response<Body>>> {
    let bad = |msg: &str| {
        Box::new(error(StatusCode::BAD_REQUEST, Id::Null, ErrorCode::SERVER_ERROR, msg))
    };
    let mut all = h.get_all(LAST_EVENT_ID).iter();
    let value = all.next().map(|v| v.as_bytes().trim_ascii()).unwrap_or_default();
    if all.next().is_some() {
        return Err(bad("Bad Request: Last-Event-ID given more than once"));
    }
    parse_event_id(value)
        .ok_or_else(|| bad("Bad Request: Last-Event-ID is not an event id of this server"))
}

/// The answer to a resumption that cannot be served.
fn unresumable(why: Unresumable, cfg: &ResumeConfig) -> Response<Body> {
    let (code, msg) = match why {
        Unresumable::Future => (
            StatusCode::BAD_REQUEST,
            "Bad Request: Last-Event-ID names an event the stream has not sent".to_owned(),
        ),
        Unresumable::Unknown => (
            StatusCode::GONE,
            "Gone: Last-Event-ID names no stream this session keeps (unknown, another \
             session's, or no longer kept)"
                .to_owned(),
        ),
        Unresumable::Dropped => (
            StatusCode::GONE,
            format!(
                "Gone: events after Last-Event-ID were dropped (a stream keeps its latest {} \
                 events, at most {} bytes)",
                cfg.events, cfg.bytes
            ),
        ),
    };
    error(code, Id::Null, ErrorCode::SERVER_ERROR, &msg)
}
