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
//!  JSON or SSE reply ◄── route: response by id, progress by token ◄── peer's writer ┘
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
pub const VERSION_HEADER: &str = "mcp-protocol-version";

/// The protocol versions the server accepts in [`VERSION_HEADER`] by default, oldest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The one protocol version under which a POST may carry a batch.
pub const BATCH_VERSION: &str = "2025-03-26";

/// The version a server assumes when a request after `initialize` has no [`VERSION_HEADER`],
/// as the specification says.
pub const ASSUMED_VERSION: &str = "2025-03-26";

/// A request id or progress token, owned: the key of the routing tables.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    Num(i64),
    Str(Box<str>),
}

impl Key {
    pub(crate) fn of(id: Id<'_>) -> Option<Self> {
        match id {
            Id::Num(n) => Some(Self::Num(n)),
            Id::Str(s) => Some(Self::Str(s.into())),
            Id::Null => None,
        }
    }

    pub(crate) fn as_id(&self) -> Id<'_> {
        match self {
            Self::Num(n) => Id::Num(*n),
            Self::Str(s) => Id::Str(s),
        }
    }
}

/// An id or token as it appears in JSON: an integer or a string.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireKey<'a> {
    Num(i64),
    Str(#[serde(borrow)] Cow<'a, str>),
}

impl From<WireKey<'_>> for Key {
    fn from(k: WireKey<'_>) -> Self {
        match k {
            WireKey::Num(n) => Self::Num(n),
            WireKey::Str(s) => Self::Str(s.into()),
        }
    }
}

/// The `_meta.progressToken` a request asks progress for, if any.
pub(crate) fn requested_progress(m: &Message<'_>) -> Option<Key> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<Meta<'a>>,
    }
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "progressToken", borrow)]
        token: Option<WireKey<'a>>,
    }
    let p: Params<'_> = m.params()?.deserialize().ok()?;
    p.meta?.token.map(Key::from)
}

/// The `progressToken` of a `notifications/progress`.
pub(crate) fn progress_token(m: &Message<'_>) -> Option<Key> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "progressToken", borrow)]
        token: WireKey<'a>,
    }
    let p: Params<'_> = m.params()?.deserialize().ok()?;
    Some(p.token.into())
}

/// The `requestId` of a `notifications/cancelled`.
pub(crate) fn cancelled_request(m: &Message<'_>) -> Option<Key> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "requestId", borrow)]
        id: WireKey<'a>,
    }
    if m.method() != Some("notifications/cancelled") {
        return None;
    }
    let p: Params<'_> = m.params()?.deserialize().ok()?;
    Some(p.id.into())
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
mod tests {
    use super::*;
    use crate::{FrameParser, Limits};

    fn parse(json: &str) -> crate::Frame {
        FrameParser::new(Limits::default()).parse(BytesMut::from(json))
    }

    #[test]
    fn progress_tokens_are_read_from_requests_and_notifications() {
        let req = parse(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"}}}"#,
        );
        assert_eq!(requested_progress(&req.message().unwrap()), Some(Key::Str("t".into())));
        let req = parse(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{}}}"#);
        assert_eq!(requested_progress(&req.message().unwrap()), None);
        let req = parse(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#);
        assert_eq!(requested_progress(&req.message().unwrap()), None);
        let note = parse(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#,
        );
        assert_eq!(progress_token(&note.message().unwrap()), Some(Key::Num(7)));
    }

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
