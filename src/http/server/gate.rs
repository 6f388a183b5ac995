//! The gate before the body: what is decided from a request's head alone. The server's stop,
//! the path, the method, the `Origin` (DNS rebinding), the caller's token (`guard.rs`, feature
//! `oauth`); for a POST, its `Content-Type`, `Accept`, declared length, the session it names,
//! and room for its body in the server's budget. A request refused here is answered without its
//! body being read ([`unread`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http::header::{ALLOW, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, ORIGIN};
use http::request::Parts;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::{Body as _, Incoming as HyperBody};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::config::Config;
use super::response::{Accepts, error, media_type_is, status, stopping, too_large};
use super::session::Session;
use super::{Body, State, sessions};
use crate::peer::Principal;
use crate::{error::ErrorCode, message::Id};

/// What the gate learnt of a POST it let through.
pub(super) struct PostHead {
    /// Which answers the client takes.
    pub(super) accepts: Accepts,
    /// The legacy session it names (`None`: none, or a stateless request's).
    pub(super) session: Option<Arc<Session>>,
}

/// The caller's principal, or the answer (the metadata, or a refusal) given without reading
/// the body.
pub(super) async fn before_body(
    cfg: &Config,
    state: &State,
    req: &Request<HyperBody>,
) -> Result<Option<Arc<Principal>>, Box<Response<Body>>> {
    if state.stopped.load(Ordering::SeqCst) {
        return Err(Box::new(stopping(Id::Null)));
    }
    #[cfg(feature = "oauth")]
    if let Some(metadata) = super::guard::metadata(cfg, req) {
        return Err(Box::new(metadata));
    }
    if req.uri().path() != cfg.path {
        return Err(Box::new(status(StatusCode::NOT_FOUND)));
    }
    if !matches!(*req.method(), Method::POST | Method::GET | Method::DELETE) {
        let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
        return Err(Box::new(r));
    }
    if let Some(origin) = req.headers().get(ORIGIN)
        && !origin_allowed(cfg, origin)
    {
        let (code, msg) = (ErrorCode::SERVER_ERROR, "Forbidden: origin not allowed");
        return Err(Box::new(error(StatusCode::FORBIDDEN, Id::Null, code, msg)));
    }
    #[cfg(feature = "oauth")]
    let principal = super::guard::guard(cfg, req).await?;
    #[cfg(not(feature = "oauth"))]
    let principal = None;
    Ok(principal)
}

fn origin_allowed(cfg: &Config, origin: &HeaderValue) -> bool {
    let Ok(origin) = origin.to_str() else { return false };
    if cfg.allowed_origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else { return false };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let host = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, port)) if port.is_empty() || port.starts_with(':') => h,
            _ => return false,
        }
    } else {
        rest.split_once(':').map_or(rest, |(h, _)| h)
    };
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "::1"
}

/// A POST's head, checked: its type, what it accepts, its declared size, the session it
/// names; then room for its body, held until the POST is answered. Each wait is bounded by the
/// read timeout; room ready at once is taken without arming its timer.
pub(super) async fn post(
    cfg: &Config,
    state: &State,
    req: Request<HyperBody>,
    principal: Option<&Principal>,
    budget: &Arc<Semaphore>,
) -> Result<(Parts, HyperBody, PostHead, OwnedSemaphorePermit), Box<Response<Body>>> {
    let h = req.headers();
    if !h.get(CONTENT_TYPE).is_some_and(|v| media_type_is(v, "application/json")) {
        return Err(Box::new(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Id::Null,
            ErrorCode::SERVER_ERROR,
            "Unsupported Media Type: Content-Type must be application/json",
        )));
    }
    let accepts = Accepts::of(h);
    if !accepts.json && !accepts.sse {
        return Err(Box::new(error(
            StatusCode::NOT_ACCEPTABLE,
            Id::Null,
            ErrorCode::SERVER_ERROR,
            "Not Acceptable: Accept must include application/json or text/event-stream",
        )));
    }
    let limit = cfg.peer.limits.frame_bytes();
    let declared = h.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(Box::new(too_large(limit)));
    }
    let session = sessions::named(cfg, state, &req, principal)?;
    let (head, body) = req.into_parts();
    let want = declared.map_or(limit, |n| usize::try_from(n).unwrap_or(limit));
    let want = want.clamp(1, cfg.max_body_bytes);
    let want = u32::try_from(want).unwrap_or(u32::MAX);
    let room = match budget.clone().try_acquire_many_owned(want) {
        Ok(room) => Some(room),
        Err(_) => {
            let room = budget.clone().acquire_many_owned(want);
            match tokio::time::timeout(cfg.read_timeout, room).await {
                Ok(Ok(room)) => Some(room),
                _ => None,
            }
        }
    };
    let Some(room) = room else {
        let msg = "Service Unavailable: too many request bytes in flight";
        return Err(Box::new(error(
            StatusCode::SERVICE_UNAVAILABLE,
            Id::Null,
            ErrorCode::SERVER_ERROR,
            msg,
        )));
    };
    Ok((head, body, PostHead { accepts, session }, room))
}

/// The most of an unread request body drained before answering, and how long that may take.
const DRAIN_BYTES: usize = 64 * 1024;
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// `answer`, given to `req` without reading its body. Over HTTP/1.1 a connection can carry
/// the next request only once this one's body is read: hyper reads what already arrived and
/// otherwise closes the connection after the answer, without saying so, and a client that
/// sends its next request on it at once (an OAuth client fetching the metadata after a 401)
/// finds it closed. So a small body is drained and the connection kept; a larger or slower
/// one, or one the client waits to be asked for (`Expect: 100-continue`), is not read, and the
/// answer says `Connection: close`.
pub(super) async fn unread(req: Request<HyperBody>, mut answer: Response<Body>) -> Response<Body> {
    if req.version() >= http::Version::HTTP_2 || req.body().is_end_stream() {
        return answer;
    }
    let drained = if req.headers().contains_key(http::header::EXPECT) {
        false
    } else {
        let drain = http_body_util::Limited::new(req.into_body(), DRAIN_BYTES).collect();
        matches!(tokio::time::timeout(DRAIN_TIME, drain).await, Ok(Ok(_)))
    };
    if !drained {
        answer.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
    }
    answer
}
