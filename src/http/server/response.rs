//! The HTTP answers the server builds, and how it reads what a client accepts.

use super::*;

/// Which of JSON and SSE the client takes: an absent `Accept` takes both.
pub(super) fn accepts(h: &http::HeaderMap) -> (bool, bool) {
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
pub(super) fn stream_response(
    guard: crate::http::session::StreamGuard,
    every: Duration,
) -> Response<Body> {
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
