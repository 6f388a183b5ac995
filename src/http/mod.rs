//! MCP's Streamable HTTP transport, on hyper: a [`server`] that gives each session a peer of its
//! own, and a [`client`] transport that carries a peer's messages as POSTs.
//!
//! Messages keep their shape over HTTP: a POST carries one JSON-RPC message (or, under protocol
//! version 2025-03-26 only, a batch); a notification or response is answered `202 Accepted`
//! with no body; a request is answered with its response as `application/json`, or as a
//! `text/event-stream` when the handler sends progress notifications before its result. A GET
//! opens a stream for the server's other messages, a DELETE ends the session.
//!
//! ```text
//!  POST ──► checks (origin, type, size, version, session) ──► FrameParser ──► session's peer
//!                                                                                  │
//!  JSON or SSE reply ◄── route: response by id, progress by its request ◄── peer's core ┘
//!  GET stream        ◄── route: everything else
//! ```

pub mod client;
pub mod server;
mod session;

use std::borrow::Cow;

use bytes::{Bytes, BytesMut};
use serde::Deserialize;

use crate::{ErrorCode, Id, Message, Outgoing, RawJson};

pub use client::{HttpClient, connect};
pub use server::{HttpServer, HttpStats, bind};

/// The header that carries a session's id, issued at `initialize`.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The header that carries the negotiated protocol version on every request after
/// `initialize`.
pub const VERSION_HEADER: &str = crate::mcp::headers::PROTOCOL_VERSION;

/// The protocol versions the server accepts in [`VERSION_HEADER`] by default, oldest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = crate::mcp::LEGACY_VERSIONS;

/// The one protocol version under which a POST may carry a batch.
pub const BATCH_VERSION: &str = "2025-03-26";

/// The version a server assumes when a request after `initialize` has no [`VERSION_HEADER`],
/// as the specification says.
pub const ASSUMED_VERSION: &str = "2025-03-26";

pub(crate) use crate::message::owned::cancelled_request;

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
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_32_hex_digits_and_differ() {
        let a = new_session_id().unwrap();
        let b = new_session_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn an_sse_event_carries_the_message_as_its_data() {
        assert_eq!(&sse_event(br#"{"a":1}"#)[..], b"event: message\ndata: {\"a\":1}\n\n");
    }
}
