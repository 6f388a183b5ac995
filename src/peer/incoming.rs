//! The messages a peer hands over and takes back: [`Incoming`] (a request or notification for a
//! handler, a response for a caller), [`Reply`] and [`RpcError`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use serde::{Deserialize, Serialize};

use crate::{
    error::ErrorCode, error::PayloadError, message::ErrorObject, message::Frame, message::Id,
    message::Kind, message::Message, message::RawJson, message::encode::Json,
};

/// Where a message lives: a frame of its own, or an element of a batch shared by its siblings.
#[derive(Clone)]
enum Source {
    Own(Frame),
    Element(Arc<Frame>, usize),
}

/// One message received: a request or notification given to a [`Handler`](super::Handler), or a
/// response returned by [`PeerHandle::request`](super::PeerHandle::request). It owns the frame's bytes and borrows from them.
#[derive(Clone)]
pub struct Incoming {
    source: Source,
    /// Where it came in the connection's stream (see [`Incoming::position`]).
    position: u64,
}

impl Incoming {
    pub(crate) fn own(frame: Frame) -> Self {
        Self { source: Source::Own(frame), position: 0 }
    }

    pub(crate) fn element(frame: Arc<Frame>, i: usize) -> Self {
        debug_assert!(i < frame.len());
        Self { source: Source::Element(frame, i), position: 0 }
    }

    /// The message, read as the connection's `position`-th frame.
    pub(crate) fn at(mut self, position: u64) -> Self {
        self.position = position;
        self
    }

    /// Where the message came in the connection's stream: the count of frames read up to and
    /// including its own (the first frame is 1; the elements of a batch share their frame's).
    /// 0 for a message no connection read (a stateless HTTP request, a test's).
    pub(crate) fn position(&self) -> u64 {
        self.position
    }

    /// The frame of a message of its own (not a batch element).
    pub(crate) fn into_frame(self) -> Option<Frame> {
        match self.source {
            Source::Own(frame) => Some(frame),
            Source::Element(..) => None,
        }
    }

    /// Before the peer holds a message: a message of its own gets bytes of its own (see
    /// [`Frame::unshare`]), so what the held-bytes bounds count is what stays in memory. A batch
    /// element shares its batch's frame, which was given its own bytes when the batch arrived.
    pub(crate) fn unshare(&mut self) {
        if let Source::Own(frame) = &mut self.source {
            frame.unshare();
        }
    }

    /// The message.
    #[must_use]
    pub fn message(&self) -> Message<'_> {
        let found = match &self.source {
            Source::Own(f) => f.element(0),
            Source::Element(f, i) => f.element(*i),
        };
        found.expect("an Incoming is made only for an element that exists")
    }

    /// The message's kind.
    #[must_use]
    pub fn kind(&self) -> Kind {
        self.message().kind()
    }

    /// The method of a request or notification; empty for a response.
    #[must_use]
    pub fn method(&self) -> &str {
        self.message().method().unwrap_or_default()
    }

    /// The id of a request or response.
    #[must_use]
    pub fn id(&self) -> Option<Id<'_>> {
        self.message().id()
    }

    /// The params of a request or notification, as their exact JSON text.
    #[must_use]
    pub fn params(&self) -> Option<RawJson<'_>> {
        self.message().params()
    }

    /// The params as `T`, borrowing strings where it can; absent params read as `null`.
    ///
    /// # Errors
    ///
    /// When the params do not match `T`: answer with [`RpcError::invalid_params`].
    pub fn params_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, PayloadError> {
        self.message().params_as()
    }

    /// The result of a success response, as its exact JSON text.
    #[must_use]
    pub fn result(&self) -> Option<RawJson<'_>> {
        self.message().result()
    }

    /// The result as `T`, borrowing strings where it can.
    ///
    /// # Errors
    ///
    /// When the result does not match `T`.
    pub fn result_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, PayloadError> {
        self.message().result_as()
    }
}

impl fmt::Debug for Incoming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message().fmt(f)
    }
}

/// A handler's result: the JSON text of `result`, encoded once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply(Bytes);

impl Reply {
    /// A result serialised from `value`.
    ///
    /// # Errors
    ///
    /// When `value` cannot be serialised (a map with non-string keys, say): the error to answer
    /// with, -32603.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Self, RpcError> {
        let mut buf = BytesMut::new();
        crate::message::encode::Payload::write_json(&Json(value), &mut buf)
            .map_err(|e| RpcError::internal(format!("the result could not be serialised: {e}")))?;
        Ok(Self(buf.freeze()))
    }

    /// A result given as JSON text, written as is. It must be one valid JSON value: the peer
    /// does not check it (raw line breaks are turned into spaces).
    #[must_use]
    pub fn raw(json: &str) -> Self {
        Self(Bytes::copy_from_slice(json.as_bytes()))
    }

    /// A result given as JSON text the reply takes over without a copy; as [`Reply::raw`], it
    /// must be one valid JSON value.
    #[must_use]
    pub fn raw_string(json: String) -> Self {
        Self(Bytes::from(json))
    }

    /// The empty object, `{}`: the result of `ping`.
    #[must_use]
    pub fn empty() -> Self {
        Self(Bytes::from_static(b"{}"))
    }

    /// The length of the result's JSON text in bytes.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The result's JSON text.
    #[must_use]
    pub fn as_json(&self) -> RawJson<'_> {
        // The bytes are JSON text: serde_json's output or a caller's `&str`.
        RawJson::new(std::str::from_utf8(&self.0).unwrap_or("null"))
    }
}

/// A JSON-RPC error object, owned: what a handler answers with, or what the other side answered
/// a request of ours with.
///
/// A tool that fails is not a protocol error: MCP answers it with a result whose `isError` is
/// true. Use `RpcError` for unknown methods, bad params and failures of the protocol itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcError {
    /// The code.
    pub code: ErrorCode,
    /// A short description.
    pub message: Cow<'static, str>,
    data: Option<Bytes>,
}

impl RpcError {
    /// An error with this code and message and no data.
    #[must_use]
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    /// -32601, naming the method.
    #[must_use]
    pub fn method_not_found(method: &str) -> Self {
        Self::new(ErrorCode::METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

    /// -32602 with a reason.
    #[must_use]
    pub fn invalid_params(reason: impl fmt::Display) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {reason}"))
    }

    /// -32603 with a reason.
    #[must_use]
    pub fn internal(reason: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, reason)
    }

    /// Adds `data`, serialised from `value`; when it cannot be serialised the error goes without.
    #[must_use]
    pub fn with_data<T: Serialize + ?Sized>(mut self, value: &T) -> Self {
        let mut buf = BytesMut::new();
        if crate::message::encode::Payload::write_json(&Json(value), &mut buf).is_ok() {
            self.data = Some(buf.freeze());
        }
        self
    }

    /// `data`, as its JSON text.
    #[must_use]
    pub fn data(&self) -> Option<RawJson<'_>> {
        self.data.as_ref().map(|d| RawJson::new(std::str::from_utf8(d).unwrap_or("null")))
    }

    pub(crate) fn from_object(e: &ErrorObject<'_>) -> Self {
        Self {
            code: ErrorCode(e.code),
            message: Cow::Owned(e.message.to_owned()),
            data: e.data.map(|d| Bytes::copy_from_slice(d.get().as_bytes())),
        }
    }
}

impl From<crate::mcp::meta::Rejection> for RpcError {
    /// A refused MCP request's error, its `data` kept.
    fn from(r: crate::mcp::meta::Rejection) -> Self {
        Self { code: r.code, message: r.message, data: r.data.map(|d| Bytes::from(d.into_bytes())) }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code.get())
    }
}

impl std::error::Error for RpcError {}
