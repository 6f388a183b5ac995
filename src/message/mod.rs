//! Decoded messages: [`Frame`] owns one frame's bytes and a small index; [`Message`] is a view of
//! one message in it (the frame itself, or one batch element).
//!
//! Invariants, established by the parser and relied on by every accessor:
//! - `Frame::bytes` is exactly the frame body as received (line ending, leading whitespace and a
//!   byte order mark removed). Parsing never leaves it modified.
//! - Every span of a message that is not [`Kind::Invalid`] with a syntax error satisfies
//!   `start <= end <= bytes.len()`, starts and ends on a UTF-8 character boundary (at an ASCII
//!   quote or a JSON structural character), and lies in a frame simd-json validated as UTF-8.
//! - A [`Text`] with the side flag points into `Frame::side`, which holds the unescaped form of
//!   envelope strings (`method`, a string `id`, `error.message`) whose wire form had escapes.

pub(crate) mod encode;
pub(crate) mod owned;
pub(crate) mod parse;

use std::fmt;

use bytes::Bytes;
use serde::Deserialize;
use smallvec::SmallVec;

use crate::error::{DecodeError, PayloadError};

/// What kind of message a frame (or batch element) is, decided by which members it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `id` and `method`: must be answered.
    Request,
    /// `method` without `id`: never answered.
    Notification,
    /// `id` and `result`: a success response.
    Response,
    /// `id` and `error`: an error response.
    Error,
    /// A JSON array of messages.
    Batch,
    /// Not a valid message; [`Frame::decode_error`] says why.
    Invalid,
}

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::Request,
        Self::Notification,
        Self::Response,
        Self::Error,
        Self::Batch,
        Self::Invalid,
    ];

    /// The lower-case name used by `mcpwire inspect`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Notification => "notification",
            Self::Response => "response",
            Self::Error => "error",
            Self::Batch => "batch",
            Self::Invalid => "invalid",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A JSON-RPC request id. The number `1` and the string `"1"` are different ids.
///
/// `Null` appears only in an error response answering a request whose id could not be read.
///
/// # Examples
///
/// ```
/// use mcpwire::Id;
///
/// assert_ne!(Id::Num(1), Id::Str("1"));
/// assert_eq!(Id::Str("a\"b").to_string(), r#""a\"b""#);
/// assert_eq!(Id::Num(-7).to_string(), "-7");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id<'a> {
    /// An integer id.
    Num(i64),
    /// A string id, unescaped.
    Str(&'a str),
    /// `null`.
    Null,
}

impl fmt::Display for Id<'_> {
    /// Writes the id as JSON: strings quoted and escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Num(n) => write!(f, "{n}"),
            Self::Null => f.write_str("null"),
            Self::Str(s) => {
                f.write_str("\"")?;
                let mut written = Ok(());
                encode::escape(s, |chunk| written = written.and_then(|()| f.write_str(chunk)));
                written?;
                f.write_str("\"")
            }
        }
    }
}

/// A borrowed JSON value as its exact text: `params`, `result`, `error.data`, or a payload to
/// encode.
///
/// # Examples
///
/// ```
/// use mcpwire::RawJson;
///
/// let raw = RawJson::new(r#"{"n": [1, 2]}"#);
/// let v: serde_json::Value = raw.deserialize().unwrap();
/// assert_eq!(v["n"][1], 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawJson<'a>(&'a str);

impl<'a> RawJson<'a> {
    /// Wraps text the caller vouches is one JSON value. It is not validated: encoding it writes it
    /// as is (with any raw line breaks turned into spaces, so the frame stays one line).
    #[must_use]
    pub const fn new(json: &'a str) -> Self {
        Self(json)
    }

    /// The JSON text.
    #[must_use]
    pub const fn get(&self) -> &'a str {
        self.0
    }

    /// Deserialises the value, borrowing strings that need no unescaping.
    ///
    /// # Errors
    ///
    /// When the text does not match `T`.
    pub fn deserialize<T: Deserialize<'a>>(&self) -> Result<T, PayloadError> {
        Ok(serde_json::from_str(self.0)?)
    }
}

impl fmt::Display for RawJson<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// The `error` member of an error response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorObject<'a> {
    /// `error.code`.
    pub code: i64,
    /// `error.message`, unescaped.
    pub message: &'a str,
    /// `error.data`, when present.
    pub data: Option<RawJson<'a>>,
}

/// Where a string lives: in the frame's bytes, or (when its wire form had escapes) unescaped in
/// the frame's side buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Text {
    at: u32,
    len: u32,
    side: bool,
}

/// A byte range `start..end` of the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) end: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdRepr {
    Absent,
    Null,
    Num(i64),
    Str(Text),
    /// Present but of a type an id may not have, or given twice.
    Unreadable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ErrorRepr {
    pub(crate) code: i64,
    pub(crate) message: Text,
    pub(crate) data: Option<Span>,
}

/// The index of one message: its kind and where each member lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Envelope {
    pub(crate) kind: Kind,
    pub(crate) problem: Option<DecodeError>,
    pub(crate) id: IdRepr,
    pub(crate) method: Option<Text>,
    /// `params` of a request or notification, `result` of a response, `error` of an error
    /// response: the kinds are exclusive, so one slot serves.
    pub(crate) payload: Option<Span>,
    pub(crate) error: Option<ErrorRepr>,
    /// Carries `result` or `error` and no `method`: a response, even when an invalid one.
    pub(crate) response_shaped: bool,
}

impl Envelope {
    pub(crate) const fn invalid(problem: DecodeError) -> Self {
        Self {
            kind: Kind::Invalid,
            problem: Some(problem),
            id: IdRepr::Absent,
            method: None,
            payload: None,
            error: None,
            response_shaped: false,
        }
    }
}

/// Unescaped envelope strings; inline up to this many bytes, so a frame whose error message has
/// a quoted word or two still costs no allocation.
pub(crate) type Side = SmallVec<[u8; 48]>;

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
#[derive(Clone, PartialEq, Eq)]
pub struct Frame {
    bytes: Bytes,
    batch: bool,
    messages: SmallVec<[Envelope; 1]>,
    side: Side,
}

impl Frame {
    /// A frame with no bytes and no messages, for the parser to fill.
    fn empty() -> Self {
        Self { bytes: Bytes::new(), batch: false, messages: SmallVec::new(), side: Side::new() }
    }

    /// A frame that carries only a decode error, such as an over-long line whose bytes are gone.
    #[must_use]
    pub fn from_error(bytes: Bytes, error: DecodeError) -> Self {
        Self {
            bytes,
            batch: false,
            messages: smallvec::smallvec![Envelope::invalid(error)],
            side: Side::new(),
        }
    }

    /// The frame's kind; [`Kind::Batch`] for an array of messages.
    #[must_use]
    pub fn kind(&self) -> Kind {
        if self.batch { Kind::Batch } else { self.messages[0].kind }
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

    /// Gives up the index and returns the frame's bytes.
    #[must_use]
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }

    /// The frame as one message, or `None` for a batch.
    #[must_use]
    pub fn message(&self) -> Option<Message<'_>> {
        (!self.batch).then(|| Message { frame: self, env: &self.messages[0] })
    }

    /// The elements of a batch, each classified on its own, or `None` when the frame is not a
    /// batch.
    pub fn batch(&self) -> Option<impl ExactSizeIterator<Item = Message<'_>> + '_> {
        self.batch.then(|| self.messages.iter().map(|env| Message { frame: self, env }))
    }

    /// Element `i` of a batch, or the message itself at 0 when the frame is not a batch.
    #[must_use]
    pub fn element(&self, i: usize) -> Option<Message<'_>> {
        self.messages.get(i).map(|env| Message { frame: self, env })
    }

    /// How many messages the frame holds: its batch length, or 1.
    #[must_use]
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Always `false`: a frame holds at least one message (an empty batch is one invalid one).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
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
        let buf = if t.side { &self.side[..] } else { &self.bytes[..] };
        let bytes = &buf[t.at as usize..(t.at + t.len) as usize];
        debug_assert!(std::str::from_utf8(bytes).is_ok());
        // SAFETY: the parser makes a `Text` only for a JSON string of a frame simd-json accepted,
        // which it validated as UTF-8 in full. A frame text starts after an opening quote and ends
        // before the closing one; a side text is the exact bytes of a `&str` simd-json produced,
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
    env: &'a Envelope,
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
        self.env.problem
    }

    /// Whether the message carries `result` or `error` and no `method`: a response, valid or
    /// not. An invalid one must not be answered: JSON-RPC never answers a response, and two peers
    /// that answered each other's malformed responses would loop.
    #[must_use]
    pub fn is_response_shaped(&self) -> bool {
        self.env.response_shaped
    }

    /// The id: of a request or response, or of an invalid message when it could be read (so the
    /// error reply can carry it). `Some(Id::Null)` only for an error response.
    #[must_use]
    pub fn id(&self) -> Option<Id<'a>> {
        match self.env.id {
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
            Kind::Request | Kind::Notification => self.env.method.map(|t| self.frame.text(t)),
            _ => None,
        }
    }

    /// The `params` of a valid request or notification, as their exact JSON text.
    #[must_use]
    pub fn params(&self) -> Option<RawJson<'a>> {
        match self.env.kind {
            Kind::Request | Kind::Notification => self.env.payload.map(|s| self.frame.raw(s)),
            _ => None,
        }
    }

    /// The `result` of a success response, as its exact JSON text.
    #[must_use]
    pub fn result(&self) -> Option<RawJson<'a>> {
        match self.env.kind {
            Kind::Response => self.env.payload.map(|s| self.frame.raw(s)),
            _ => None,
        }
    }

    /// The `error` of an error response.
    #[must_use]
    pub fn error(&self) -> Option<ErrorObject<'a>> {
        match (self.env.kind, self.env.error) {
            (Kind::Error, Some(e)) => Some(ErrorObject {
                code: e.code,
                message: self.frame.text(e.message),
                data: e.data.map(|s| self.frame.raw(s)),
            }),
            _ => None,
        }
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

/// Parses message bodies that arrive already delimited (an HTTP request body, a test vector),
/// with the same rules and limits as [`JsonRpcCodec`](crate::JsonRpcCodec).
///
/// Unlike an NDJSON line, a body may contain raw line breaks (JSON whitespace, as in
/// pretty-printed JSON). Whitespace around the value and a leading byte order mark are dropped.
///
/// # Examples
///
/// ```
/// use bytes::BytesMut;
/// use mcpwire::{FrameParser, Kind, Limits};
///
/// let mut parser = FrameParser::new(Limits::default());
/// let frame = parser.parse(BytesMut::from("{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"ping\"\n}\n"));
/// assert_eq!(frame.kind(), Kind::Notification);
/// ```
#[derive(Debug)]
pub struct FrameParser {
    inner: parse::Parser,
}

impl FrameParser {
    /// A parser enforcing `limits` (the frame size bound applies to the body).
    #[must_use]
    pub fn new(limits: crate::Limits) -> Self {
        Self { inner: parse::Parser::new(limits) }
    }

    /// The limits in effect.
    #[must_use]
    pub fn limits(&self) -> crate::Limits {
        self.inner.limits()
    }

    /// Parses one body into a frame that owns it.
    pub fn parse(&mut self, mut body: bytes::BytesMut) -> Frame {
        use bytes::Buf;
        if body.starts_with(b"\xEF\xBB\xBF") {
            body.advance(3);
        }
        let start = body.iter().position(|&b| !parse::is_ws(b)).unwrap_or(body.len());
        body.advance(start);
        let end = parse::trim_back(&body, body.len());
        let limit = self.limits().frame_bytes();
        if end > limit {
            return Frame::from_error(Bytes::new(), DecodeError::FrameTooLarge { limit });
        }
        body.truncate(end);
        // The body is ours whole: it becomes the frame's bytes as it is, with no split (a split
        // and the drop of the empty remainder each touch the buffer's shared reference count).
        let mut frame = Frame::empty();
        frame.batch = self.inner.parse(&mut body, end, &mut frame.messages, &mut frame.side);
        frame.bytes = body.freeze();
        frame
    }

    /// Parses `buf[start..end]` (what follows `end` may serve as parse padding) and splits it off
    /// `buf` as the frame's bytes: on return `buf` starts with what followed `end`. The caller
    /// has already held the body to the frame size limit (the codec's framer does).
    #[inline]
    pub(crate) fn parse_in(
        &mut self,
        buf: &mut bytes::BytesMut,
        start: usize,
        end: usize,
    ) -> Frame {
        use bytes::Buf;
        debug_assert!(end - start <= self.limits().frame_bytes());
        let mut frame = Frame::empty();
        frame.batch =
            self.inner.parse(&mut buf[start..], end - start, &mut frame.messages, &mut frame.side);
        buf.advance(start);
        frame.bytes = buf.split_to(end - start).freeze();
        debug_assert!(frame.batch || frame.messages.len() == 1);
        frame
    }
}
