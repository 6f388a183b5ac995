//! MCP's Streamable HTTP transport, on hyper: a [`server`] that gives each session a peer of its
//! own, and a [`client`] transport that carries a peer's messages as POSTs.
//!
//! Messages keep their shape over HTTP: a POST carries one JSON-RPC message (or, under protocol
//! version 2025-03-26 only, a batch); a notification or response is answered `202 Accepted`
//! with no body; a request is answered with its response as `application/json`, or as a
//! `text/event-stream` when the handler sends progress notifications before its result. A GET
//! opens a stream for the server's other messages, a DELETE ends the session. In a session
//! (the legacy era) every event stream is resumable: its events have ids, a client resumes a
//! stream whose connection ended with a GET and `Last-Event-ID`, and a handler may close its
//! POST's stream for the client to poll ([`close_sse_stream`]); the [`client`] resumes such a
//! stream by itself.
//!
//! ```text
//!  POST ──► checks (origin, type, size, version, session) ──► FrameParser ──► session's peer
//!                                                                                  │
//!  JSON or SSE reply ◄── route: response by id, progress by its request ◄── peer's core ┘
//!  GET stream        ◄── route: everything else
//! ```

pub mod client;
pub(crate) mod dial;
mod outlet;
pub mod server;

use std::borrow::Cow;

use bytes::{Bytes, BytesMut};
use serde::Deserialize;

use crate::{
    error::ErrorCode, message::Id, message::Message, message::RawJson, message::encode::Outgoing,
};

pub use client::{HttpClient, connect};
pub use dial::{Connector, Dialer};
pub use server::{HttpServer, HttpStats, bind};

/// The header that carries a session's id, issued at `initialize`.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The header that carries the negotiated protocol version on every request after
/// `initialize`.
pub const VERSION_HEADER: &str = crate::mcp::headers::PROTOCOL_VERSION;

/// The one protocol version under which a POST may carry a batch.
pub const BATCH_VERSION: &str = "2025-03-26";

/// The version a server assumes when a request after `initialize` has no [`VERSION_HEADER`],
/// as the specification says.
pub const ASSUMED_VERSION: &str = "2025-03-26";

pub(crate) use crate::message::owned::cancelled_request;

/// Closes the event stream that carries the answer to the request `cx` handles, without
/// ending the request: what SEP-1699 (MCP 2025-11-25) calls polling, and the TypeScript SDK
/// `closeSSEStream`. Call it from a request's [`Handler`](crate::peer::Handler), then answer as
/// usual.
///
/// Over the Streamable HTTP server, in a session that negotiated 2025-11-25 or later (and
/// whose client takes `text/event-stream`), the POST that carried the request ends once what
/// the handler sent before this call is on it: an event stream that begins with its priming
/// event (an id, a `retry`, empty data), so the client resumes it with a `GET` and
/// `Last-Event-ID` after the `retry` time, and gets on that connection what the handler sends
/// afterwards, its response included. Until the client resumes, the stream keeps them (see
/// [`HttpServer::replay_buffer`] and [`HttpServer::resumable_streams`]). Calling it again
/// ends the connection that resumed the stream, and so on.
///
/// It does nothing on any other transport (stdio, a socket: it costs a check that the
/// context came from a routing transport), for a stateless (2026-07-28) request (its stream is
/// the request itself), in a session of an earlier version (whose clients need not resume),
/// or when the client takes only `application/json` (the response then comes as JSON, as
/// usual). It never waits.
///
/// # Examples
///
/// ```
/// use mcpwire::peer::{Context, Handler, Incoming, Reply, RpcError};
///
/// struct Slow;
/// impl Handler for Slow {
///     async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
///         // A long tool call: free the client's connection while it runs.
///         mcpwire::http::close_sse_stream(cx);
///         tokio::time::sleep(std::time::Duration::from_millis(100)).await;
///         Ok(Reply::raw(r#"{"content":[{"type":"text","text":"done"}]}"#))
///     }
/// }
/// ```
pub fn close_sse_stream(cx: &crate::peer::Context) {
    cx.close_stream();
}

/// The `protocolVersion` of an `initialize` result.
pub(crate) fn negotiated_version(m: &Message<'_>) -> Option<Box<str>> {
    #[derive(Deserialize)]
    struct Initialized<'a> {
        #[serde(rename = "protocolVersion", borrow)]
        version: Cow<'a, str>,
    }
    let r: Initialized<'_> = m.result()?.deserialize().ok()?;
    Some(r.version.into())
}

/// An error response as JSON text (no line ending).
pub(crate) fn error_json(id: Id<'_>, code: ErrorCode, message: &str) -> Bytes {
    let mut out = BytesMut::new();
    let reply: Outgoing<'_> = Outgoing::Error { id, code, message, data: None };
    reply.write_value(&mut out).expect("an error without data always encodes");
    out.freeze()
}

/// One message as a Server-Sent Event: `data: <json>` and a blank line.
pub(crate) fn sse_event(json: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(json.len() + 16);
    if let Ok(text) = std::str::from_utf8(json) {
        let msg: Outgoing<'_> = Outgoing::Raw(RawJson::new(text));
        if msg.write_sse(None, &mut out).is_err() {
            out.clear();
        }
    }
    out.freeze()
}

/// A fresh session id: 128 random bits as 32 lowercase hex digits (visible ASCII, as the
/// specification asks).
pub(crate) fn new_session_id() -> std::io::Result<String> {
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut s = String::with_capacity(32);
    for b in raw {
        use std::fmt::Write;
        let _ = write!(s, "{b:02x}");
    }
    Ok(s)
}

#[cfg(test)]
mod tests;
/// Why [`read_body`] gave no body.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// More than the limit arrived.
    TooLarge,
    /// The connection failed while the body arrived.
    Failed(String),
}

/// Reads a whole body of at most `limit` bytes. A body that comes in one chunk (most do) is
/// that chunk, as the HTTP library handed it over: no copy and no allocation; one in several
/// chunks is gathered into one buffer. Trailers are ignored.
pub(crate) async fn read_body<B>(body: B, limit: usize) -> Result<Bytes, BodyError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    use http_body_util::BodyExt as _;
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut gathered: Option<BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Failed(e.to_string()))?;
        let Ok(data) = frame.into_data() else { continue };
        len = len.saturating_add(data.len());
        if len > limit {
            return Err(BodyError::TooLarge);
        }
        if let Some(buf) = &mut gathered {
            buf.extend_from_slice(&data);
        } else if let Some(one) = first.take() {
            let mut buf = BytesMut::with_capacity(len);
            buf.extend_from_slice(&one);
            buf.extend_from_slice(&data);
            gathered = Some(buf);
        } else {
            first = Some(data);
        }
    }
    Ok(gathered.map_or_else(|| first.unwrap_or_default(), BytesMut::freeze))
}
