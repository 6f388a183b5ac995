//! [`Frame`]: one decoded frame, its bytes and its index; [`Message`]: a view of one message in
//! it (the frame itself, or one batch element).

use std::fmt;

use bytes::Bytes;
use serde::Deserialize;

use super::index::{FrameIndex, IdRepr, MessageIndex, Span, Text, Unescaped};
use super::members::{Members, Recorded, Records};
use super::{ErrorObject, Id, Kind, RawJson};
use crate::error::{DecodeError, PayloadError};

/// One decoded frame: its bytes (split off the read buffer, not copied) and an index of the
/// message, or of each batch element, in it.
///
/// # Examples
///
/// ```
/// use bytes::BytesMut;
/// use mcpwire::{Id, JsonRpcCodec, Kind};
/// use tokio_util::codec::Decoder;
///
/// let mut codec = JsonRpcCodec::new();
/// let mut buf = BytesMut::from(&br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}
/// "#[..]);
/// let frame = codec.decode(&mut buf).unwrap().unwrap();
/// assert_eq!(frame.kind(), Kind::Request);
/// assert_eq!(frame.id(), Some(Id::Num(7)));
/// assert_eq!(frame.method(), Some("tools/call"));
/// assert_eq!(frame.params().unwrap().get(), r#"{"name":"echo"}"#);
///
/// #[derive(serde::Deserialize)]
/// struct Call<'a> { name: &'a str }
/// let call: Call<'_> = frame.params_as().unwrap();
/// assert_eq!(call.name, "echo");
/// ```
///
/// A `Frame` is at most 128 bytes (its bytes' handle, the index of one message inline, a small
/// unescaped buffer), so returning it through the codec moves little; a batch's index is on the heap.
#[derive(Clone, PartialEq, Eq)]
pub struct Frame {
    pub(super) bytes: Bytes,
    pub(super) index: FrameIndex,
    pub(super) unescaped: Unescaped,
}

impl Frame {
    /// A frame with no bytes and a blank index, for the parser to fill.
    pub(super) fn empty() -> Self {
        Self {
            bytes: Bytes::new(),
            index: FrameIndex::One(MessageIndex::BLANK),
            unescaped: Unescaped::new(),
        }
    }

    /// A frame that carries only a decode error, such as an over-long line whose bytes are gone.
    #[must_use]
    pub fn from_error(bytes: Bytes, error: DecodeError) -> Self {
        Self { bytes, index: FrameIndex::Unreadable(error), unescaped: Unescaped::new() }
    }

    /// The frame's kind; [`Kind::Batch`] for an array of messages.
    #[must_use]
    pub fn kind(&self) -> Kind {
        match &self.index {
            FrameIndex::One(env) => env.kind,
            FrameIndex::Batch(_) => Kind::Batch,
            FrameIndex::Unreadable(_) => Kind::Invalid,
        }
    }

    /// The exact bytes received for this frame, without its line ending.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Copies the frame's bytes into an allocation of their own.
    ///
    /// A decoded frame's bytes are a slice of the read buffer it was cut from, so keeping the
    /// frame keeps that whole buffer alive: a 100-byte frame can pin a 64 KiB read chunk (or a
    /// much larger one after a big frame), whatever else the chunk held. Anything that keeps
    /// frames for a while under a byte budget (the peer, for the requests and notifications it
    /// holds) calls this first, so the budget counts what is actually kept. The index stays
    /// valid: it holds offsets, not pointers. Costs one allocation and a copy of the frame.
    pub fn unshare(&mut self) {
        if !self.bytes.is_empty() {
            self.bytes = Bytes::copy_from_slice(&self.bytes);
        }
    }

    /// The frame's bytes, shared (a reference count, no copy).
    #[cfg(feature = "http")]
    #[must_use]
    pub(crate) fn shared_bytes(&self) -> Bytes {
        self.bytes.clone()
    }

    /// Gives up the index and returns the frame's bytes.
    #[must_use]
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }

    /// The frame as one message, or `None` for a batch.
    #[must_use]
    pub fn message(&self) -> Option<Message<'_>> {
        match &self.index {
            FrameIndex::One(env) => Some(Message { frame: self, env }),
            FrameIndex::Batch(_) => None,
            FrameIndex::Unreadable(_) => {
                Some(Message { frame: self, env: &MessageIndex::UNREADABLE })
            }
        }
    }

    /// The elements of a batch, each classified on its own, or `None` when the frame is not a
    /// batch.
    pub fn batch(&self) -> Option<impl ExactSizeIterator<Item = Message<'_>> + '_> {
        match &self.index {
            FrameIndex::Batch(envs) => Some(envs.iter().map(|env| Message { frame: self, env })),
            _ => None,
        }
    }

    /// Element `i` of a batch, or the message itself at 0 when the frame is not a batch.
    #[must_use]
    pub fn element(&self, i: usize) -> Option<Message<'_>> {
        match &self.index {
            FrameIndex::Batch(envs) => envs.get(i).map(|env| Message { frame: self, env }),
            _ if i == 0 => self.message(),
            _ => None,
        }
    }

    /// How many messages the frame holds: its batch length, or 1.
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.index {
            FrameIndex::Batch(envs) => envs.len(),
            _ => 1,
        }
    }

    /// Always `false`: a frame holds at least one message (an empty batch is one invalid one).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The error of a frame that is not a message at all.
    fn unreadable(&self) -> Option<&DecodeError> {
        match &self.index {
            FrameIndex::Unreadable(e) => Some(e),
            _ => None,
        }
    }

    /// Why the frame is [`Kind::Invalid`]; `None` for a valid message or a batch (whose
    /// elements may each be invalid).
    #[must_use]
    pub fn decode_error(&self) -> Option<DecodeError> {
        self.message().and_then(|m| m.decode_error())
    }

    /// See [`Message::id`].
    #[must_use]
    pub fn id(&self) -> Option<Id<'_>> {
        self.message().and_then(|m| m.id())
    }

    /// See [`Message::method`].
    #[must_use]
    pub fn method(&self) -> Option<&str> {
        self.message().and_then(|m| m.method())
    }

    /// See [`Message::params`].
    #[must_use]
    pub fn params(&self) -> Option<RawJson<'_>> {
        self.message().and_then(|m| m.params())
    }

    /// See [`Message::result`].
    #[must_use]
    pub fn result(&self) -> Option<RawJson<'_>> {
        self.message().and_then(|m| m.result())
    }

    /// See [`Message::error`].
    #[must_use]
    pub fn error(&self) -> Option<ErrorObject<'_>> {
        self.message().and_then(|m| m.error())
    }

    /// See [`Message::params_as`]. A batch has no params of its own and reads as absent ones.
    ///
    /// # Errors
    ///
    /// When the params do not match `T`.
    pub fn params_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, PayloadError> {
        payload_as(self.params())
    }

    /// See [`Message::result_as`].
    ///
    /// # Errors
    ///
    /// When the result does not match `T`.
    pub fn result_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, PayloadError> {
        payload_as(self.result())
    }

    fn text(&self, t: Text) -> &str {
        let buf = if t.unescaped { &self.unescaped[..] } else { &self.bytes[..] };
        let bytes = &buf[t.at as usize..(t.at + t.len) as usize];
        debug_assert!(std::str::from_utf8(bytes).is_ok());
        // SAFETY: the parser makes a `Text` only for a JSON string of a frame simd-json accepted,
        // which it validated as UTF-8 in full. A frame text starts after an opening quote and ends
        // before the closing one; a unescaped text is the exact bytes of a `&str` simd-json produced,
        // appended whole. Both ends therefore fall on character boundaries of valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    fn raw(&self, s: Span) -> RawJson<'_> {
        let bytes = &self.bytes[s.start as usize..s.end as usize];
        debug_assert!(std::str::from_utf8(bytes).is_ok());
        // SAFETY: a `Span` covers one whole JSON value of a frame simd-json validated as UTF-8 in
        // full. A value starts at its first byte ('{', '[', '"', a digit, '-' or a letter of a
        // literal) and ends after its last ('}', ']', '"', a digit or a letter), all ASCII, so
        // both ends are character boundaries.
        RawJson(unsafe { std::str::from_utf8_unchecked(bytes) })
    }
}

fn payload_as<'a, T: Deserialize<'a>>(raw: Option<RawJson<'a>>) -> Result<T, PayloadError> {
    raw.unwrap_or(RawJson("null")).deserialize()
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Frame");
        d.field("kind", &self.kind()).field("len", &self.bytes.len());
        match self.batch() {
            Some(items) => d.field("items", &items.collect::<Vec<_>>()),
            None => d.field("message", &self.message()),
        };
        d.finish()
    }
}

/// A view of one message: a whole frame, or one element of a batch.
#[derive(Clone, Copy)]
pub struct Message<'a> {
    frame: &'a Frame,
    env: &'a MessageIndex,
}

impl<'a> Message<'a> {
    /// The message's kind (never [`Kind::Batch`]).
    #[must_use]
    pub fn kind(&self) -> Kind {
        self.env.kind
    }

    /// Why the message is [`Kind::Invalid`].
    #[must_use]
    pub fn decode_error(&self) -> Option<DecodeError> {
        self.decode_error_ref().copied()
    }

    /// Why the message is invalid, borrowed for as long as the frame.
    pub(crate) fn decode_error_ref(&self) -> Option<&'a DecodeError> {
        match self.env.problem {
            Some(p) => Some(p.get()),
            None if self.env.kind == Kind::Invalid => self.frame.unreadable(),
            None => None,
        }
    }

    /// Whether the message carries `result` or `error` and no `method`: a response, valid or
    /// not. An invalid one must not be answered: JSON-RPC never answers a response, and two peers
    /// that answered each other's malformed responses would loop.
    #[must_use]
    pub fn is_response_shaped(&self) -> bool {
        self.env.response_shaped()
    }

    /// The id: of a request or response, or of an invalid message when it could be read (so the
    /// error reply can carry it). `Some(Id::Null)` only for an error response.
    #[must_use]
    pub fn id(&self) -> Option<Id<'a>> {
        match self.env.id() {
            IdRepr::Num(n) => Some(Id::Num(n)),
            IdRepr::Str(t) => Some(Id::Str(self.frame.text(t))),
            IdRepr::Null if self.env.kind == Kind::Error => Some(Id::Null),
            _ => None,
        }
    }

    /// The method of a request or notification, unescaped.
    #[must_use]
    pub fn method(&self) -> Option<&'a str> {
        match self.env.kind {
            Kind::Request | Kind::Notification => self.env.method().map(|t| self.frame.text(t)),
            _ => None,
        }
    }

    /// The `params` of a valid request or notification, as their exact JSON text.
    #[must_use]
    pub fn params(&self) -> Option<RawJson<'a>> {
        match self.env.kind {
            Kind::Request | Kind::Notification => self.env.payload().map(|s| self.frame.raw(s)),
            _ => None,
        }
    }

    /// The members of `params` (`None` when there are none): read from what the parse recorded
    /// of them and of `params._meta` when it did ([`param_records`](Self::param_records)), by
    /// a scan of their text otherwise.
    pub(crate) fn param_members(&self) -> Option<Members<'a>> {
        let params = self.params()?;
        Some(Members::new(params.get(), self.records_of(Some(params))))
    }

    /// The members of `result` of a success response, as
    /// [`param_members`](Self::param_members) has those of `params`.
    // Read by the typed client and the bridge only.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn result_members(&self) -> Option<Members<'a>> {
        let result = self.result()?;
        Some(Members::new(result.get(), self.records_of(Some(result))))
    }

    /// The members of `params` and of `params._meta` that the parse recorded (with their
    /// values' text, located without reading the values again), or `None` when it recorded
    /// none: `params` absent or not an object, or more members than the index holds
    /// ([`KeyTable`](super::index::KeyTable) says which). `_meta`'s are `None` when `_meta` is
    /// absent, not an object, or its members did not fit.
    #[cfg(test)]
    pub(crate) fn param_records(&self) -> Option<Records<'a>> {
        self.records_of(self.params())
    }

    /// The members of `result` of a success response that the parse recorded, and of
    /// `result._meta`, as [`param_records`](Self::param_records) has those of `params`.
    #[cfg(test)]
    pub(crate) fn result_records(&self) -> Option<Records<'a>> {
        self.records_of(self.result())
    }

    /// The recorded members of `payload` (this message's `params` or `result`).
    fn records_of(&self, payload: Option<RawJson<'a>>) -> Option<Records<'a>> {
        let t = self.env.key_table()?;
        Some(Recorded::of(payload?.get(), &t))
    }

    /// The `result` of a success response, as its exact JSON text.
    #[must_use]
    pub fn result(&self) -> Option<RawJson<'a>> {
        match self.env.kind {
            Kind::Response => self.env.payload().map(|s| self.frame.raw(s)),
            _ => None,
        }
    }

    /// The `error` of an error response.
    #[must_use]
    pub fn error(&self) -> Option<ErrorObject<'a>> {
        self.env.error().map(|e| ErrorObject {
            code: e.code,
            message: self.frame.text(e.message),
            data: e.data.map(|s| self.frame.raw(s)),
        })
    }

    /// Deserialises `params` into `T`, borrowing strings that need no unescaping. Absent params
    /// read as `null`, so `Option<T>` and `()` accept them.
    ///
    /// # Errors
    ///
    /// When the params do not match `T`.
    pub fn params_as<T: Deserialize<'a>>(&self) -> Result<T, PayloadError> {
        payload_as(self.params())
    }

    /// Deserialises `result` into `T`, as [`Message::params_as`] does.
    ///
    /// # Errors
    ///
    /// When the result does not match `T`.
    pub fn result_as<T: Deserialize<'a>>(&self) -> Result<T, PayloadError> {
        payload_as(self.result())
    }
}

impl fmt::Debug for Message<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Message");
        d.field("kind", &self.kind());
        if let Some(e) = self.decode_error() {
            d.field("decode_error", &e);
        }
        if let Some(id) = self.id() {
            d.field("id", &id);
        }
        if let Some(m) = self.method() {
            d.field("method", &m);
        }
        if let Some(e) = self.error() {
            d.field("error", &e);
        }
        d.finish_non_exhaustive()
    }
}
