//! GET (a session's event stream, opened or resumed) and DELETE.

use super::response::*;
use super::*;

impl HttpServer {
    pub(super) fn get(
        &self,
        req: &Request<HyperBody>,
        principal: Option<&Principal>,
    ) -> Response<Body> {
        let resuming = req.headers().get(LAST_EVENT_ID).is_some_and(|v| !v.is_empty());
        if !self.config.get_stream && !resuming {
            let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut().insert(ALLOW, HeaderValue::from_static("POST, DELETE"));
            return r;
        }
        if !accepts(req.headers()).1 {
            let msg = "Not Acceptable: Accept must include text/event-stream";
            return error(StatusCode::NOT_ACCEPTABLE, Id::Null, ErrorCode::SERVER_ERROR, msg);
        }
        let session = match self.required_session(req, principal) {
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
                Err(why) => return unresumable(why, &self.config.resume),
            }
        } else {
            let Some(guard) = session.open_stream() else {
                let msg = "Conflict: a stream is already open for this session";
                return error(StatusCode::CONFLICT, Id::Null, ErrorCode::SERVER_ERROR, msg);
            };
            guard
        };
        stream_response(guard, self.config.keep_alive)
    }

    pub(super) fn delete(
        &self,
        req: &Request<HyperBody>,
        principal: Option<&Principal>,
    ) -> Response<Body> {
        let session = match self.required_session(req, principal) {
            Ok(s) => s,
            Err(answer) => return *answer,
        };
        self.state.sessions.lock().unwrap_or_else(PoisonError::into_inner).remove(&session.id);
        session.close();
        status(StatusCode::OK)
    }
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
