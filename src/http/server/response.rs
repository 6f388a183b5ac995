//! The HTTP answers the server builds (JSON, event streams, errors, the status a stateless
//! answer takes, a scope refusal under a resource-server guard), and how it reads what a
//! client accepts.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
#[cfg(feature = "oauth")]
use http::header::WWW_AUTHENTICATE;
use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};

use super::Body;
use super::config::Config;
use super::session::StreamGuard;
#[cfg(feature = "oauth")]
use crate::auth::resource::{Refusal, ResourceServer};
use crate::http::error_json;
use crate::{error::ErrorCode, message::FrameParser, message::Id};

/// Which answers a client takes, from its `Accept`: JSON, event streams, or both.
#[derive(Clone, Copy, Debug)]
pub(super) struct Accepts {
    pub(super) json: bool,
    pub(super) sse: bool,
}

impl Accepts {
    /// What `h`'s `Accept` takes: an absent one takes both.
    pub(super) fn of(h: &http::HeaderMap) -> Self {
        let (json, sse) = accepts(h);
        Self { json, sse }
    }
}

/// Which of JSON and SSE the client takes: an absent `Accept` takes both.
fn accepts(h: &http::HeaderMap) -> (bool, bool) {
    // What MCP clients send (the specification asks for both types), told at once.
    const BOTH: &[u8] = b"application/json, text/event-stream";
    let mut all = h.get_all(ACCEPT).iter();
    if let (Some(v), None) = (all.next(), all.next())
        && v.as_bytes() == BOTH
    {
        return (true, true);
    }
    let mut any = false;
    let (mut json, mut sse) = (false, false);
    for v in h.get_all(ACCEPT) {
        any = true;
        let Ok(v) = v.to_str() else { continue };
        for item in v.split(',') {
            // `trim_ascii`: a header value is visible ASCII, spaces and tabs (`to_str`).
            let media = item.split(';').next().unwrap_or("").trim_ascii();
            let is = |m: &str| media.eq_ignore_ascii_case(m);
            json |= is("application/json") || is("application/*") || is("*/*");
            sse |= is("text/event-stream") || is("text/*") || is("*/*");
        }
    }
    if any { (json, sse) } else { (true, true) }
}

pub(super) fn media_type_is(v: &HeaderValue, want: &str) -> bool {
    // The type alone, as clients write it, told at once.
    if v.as_bytes() == want.as_bytes() {
        return true;
    }
    let media = |v: &str| v.split(';').next().unwrap_or("").trim_ascii().eq_ignore_ascii_case(want);
    v.to_str().is_ok_and(media)
}

pub(super) fn status(code: StatusCode) -> Response<Body> {
    let mut r = Response::new(BodyExt::boxed_unsync(http_body_util::Empty::new()));
    *r.status_mut() = code;
    r
}

pub(super) fn json_response(code: StatusCode, body: Bytes) -> Response<Body> {
    let mut r = Response::new(BodyExt::boxed_unsync(Full::new(body)));
    *r.status_mut() = code;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

pub(super) fn sse_response(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Reverse proxies pass each event on at once instead of buffering the stream.
    r.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// A `text/event-stream` delivering one of a session's resumable streams, with a
/// `: keep-alive` comment every `every` while it is quiet.
pub(super) fn stream_response(guard: StreamGuard, every: Duration) -> Response<Body> {
    let tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let events = futures_util::stream::unfold((guard, tick), |(mut g, mut tick)| async move {
        let chunk = tokio::select! {
            biased;
            c = g.next() => c?,
            _ = tick.tick() => Bytes::from_static(b": keep-alive\n\n"),
        };
        Some((Ok(hyper::body::Frame::data(chunk)), (g, tick)))
    });
    sse_response(BodyExt::boxed_unsync(StreamBody::new(events)))
}

pub(super) fn error(code: StatusCode, id: Id<'_>, rpc: ErrorCode, message: &str) -> Response<Body> {
    json_response(code, error_json(id, rpc, message))
}

/// 503 for a request that came while the server stops.
pub(super) fn stopping(id: Id<'_>) -> Response<Body> {
    let msg = "Service Unavailable: the server is stopping";
    error(StatusCode::SERVICE_UNAVAILABLE, id, ErrorCode::SERVER_ERROR, msg)
}

pub(super) fn too_large(limit: usize) -> Response<Body> {
    let msg = format!("Payload Too Large: the body is over {limit} bytes");
    error(StatusCode::PAYLOAD_TOO_LARGE, Id::Null, ErrorCode::INVALID_REQUEST, &msg)
}

pub(super) fn session_gone() -> Response<Body> {
    error(
        StatusCode::NOT_FOUND,
        Id::Null,
        ErrorCode::SESSION_NOT_FOUND,
        "Session not found: it ended",
    )
}

/// A [`crate::mcp::meta::Rejection`] as an error response with `id`.
pub(super) fn rejection_json(id: Id<'_>, r: &crate::mcp::meta::Rejection) -> Bytes {
    let mut out = BytesMut::new();
    let reply: crate::message::encode::Outgoing<'_> = crate::message::encode::Outgoing::Error {
        id,
        code: r.code,
        message: &r.message,
        data: r.data(),
    };
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
        && let Some(refused) = scope_refusal(rs, &body)
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
    let frame = FrameParser::parse_bytes_with(crate::limits::Limits::default(), body.clone());
    let code = frame.message().and_then(|m| m.error()).map(|e| ErrorCode(e.code));
    code.map_or(StatusCode::OK, error_status)
}

/// The HTTP status of a stateless request answered with error `code`
/// ([`crate::mcp::http_status`]).
pub(super) fn error_status(code: ErrorCode) -> StatusCode {
    StatusCode::from_u16(crate::mcp::http_status(code)).unwrap_or(StatusCode::OK)
}

#[cfg(feature = "oauth")]
/// A JSON answer that is [`ErrorCode::INSUFFICIENT_SCOPE`] (a typed server's tool, prompt or
/// resource needs a scope the token lacks), as 403 with the `insufficient_scope` challenge
/// naming its `data.scope`, the error response as the body; `None` for any other answer.
fn scope_refusal(rs: &ResourceServer, answer: &Bytes) -> Option<Response<Body>> {
    static CODE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"-32003"));
    // A result never needs the parse.
    CODE.find(answer)?;
    let frame = FrameParser::parse_bytes_with(crate::limits::Limits::default(), answer.clone());
    let error = frame.message()?.error()?;
    if ErrorCode(error.code) != ErrorCode::INSUFFICIENT_SCOPE {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Data {
        scope: String,
    }
    let wanted = error
        .data
        .and_then(|d| serde_json::from_str::<Data>(d.get()).ok())
        .map(|d| d.scope.split_ascii_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let mut r = json_response(StatusCode::FORBIDDEN, answer.clone());
    if let Some(c) = rs
        .challenge(&Refusal::InsufficientScope(wanted))
        .and_then(|c| HeaderValue::from_str(&c).ok())
    {
        r.headers_mut().insert(WWW_AUTHENTICATE, c);
    }
    Some(r)
}
