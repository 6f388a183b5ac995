//! Decoded messages: [`Frame`] owns one frame's bytes and a small index; [`Message`] is a view of
//! one message in it (the frame itself, or one batch element).
//!
//! Invariants, established by the parser and relied on by every accessor:
//! - `Frame::bytes` is exactly the frame body as received (line ending, leading whitespace and a
//!   byte order mark removed). Parsing never leaves it modified.
//! - Every span of a message that is not [`Kind::Invalid`] with a syntax error satisfies
//!   `start <= end <= bytes.len()`, starts and ends on a UTF-8 character boundary (at an ASCII
//!   quote or a JSON structural character), and lies in a frame simd-json validated as UTF-8.
//! - A [`Text`] with the unescaped flag points into `Frame::unescaped`, which holds the unescaped form of
//!   envelope strings (`method`, a string `id`, `error.message`) whose wire form had escapes.

pub(crate) mod encode;
pub(crate) mod owned;
pub(crate) mod parse;

pub(crate) use parse::Backslash;

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
/// the frame's unescaped buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Text {
    pub(crate) at: u32,
    pub(crate) len: u32,
    pub(crate) unescaped: bool,
}

/// A byte range `start..end` of the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
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

/// Why one message of a frame that is valid JSON is invalid: the [`DecodeError`]s that carry no
/// number, in one byte. (A problem with the frame as a whole, such as a syntax error or a refused
/// batch, is kept once per frame, as [`FrameIndex::Unreadable`].)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    NotAnObject,
    UnknownMember,
    DuplicateMember(crate::error::Member),
    MissingVersion,
    WrongVersion,
    MethodNotString,
    ParamsNotStructured,
    InvalidId,
    NullId,
    MethodWithOutcome,
    ResultAndError,
    ParamsOnResponse,
    NoMethodOrOutcome,
    ResponseWithoutId,
    ErrorNotObject,
    ErrorCodeNotInteger,
    ErrorMessageNotString,
}

impl Problem {
    /// The error, as a constant: a message lends it out for as long as its frame lives
    /// ([`Message::error_reply`]), and a constant outlives any frame.
    pub(crate) const fn get(self) -> &'static DecodeError {
        use crate::error::Member as M;
        match self {
            Self::NotAnObject => &DecodeError::NotAnObject,
            Self::UnknownMember => &DecodeError::UnknownMember,
            Self::DuplicateMember(m) => match m {
                M::Jsonrpc => &DecodeError::DuplicateMember(M::Jsonrpc),
                M::Id => &DecodeError::DuplicateMember(M::Id),
                M::Method => &DecodeError::DuplicateMember(M::Method),
                M::Params => &DecodeError::DuplicateMember(M::Params),
                M::Result => &DecodeError::DuplicateMember(M::Result),
                M::Error => &DecodeError::DuplicateMember(M::Error),
                M::ErrorCode => &DecodeError::DuplicateMember(M::ErrorCode),
                M::ErrorMessage => &DecodeError::DuplicateMember(M::ErrorMessage),
                M::ErrorData => &DecodeError::DuplicateMember(M::ErrorData),
            },
            Self::MissingVersion => &DecodeError::MissingVersion,
            Self::WrongVersion => &DecodeError::WrongVersion,
            Self::MethodNotString => &DecodeError::MethodNotString,
            Self::ParamsNotStructured => &DecodeError::ParamsNotStructured,
            Self::InvalidId => &DecodeError::InvalidId,
            Self::NullId => &DecodeError::NullId,
            Self::MethodWithOutcome => &DecodeError::MethodWithOutcome,
            Self::ResultAndError => &DecodeError::ResultAndError,
            Self::ParamsOnResponse => &DecodeError::ParamsOnResponse,
            Self::NoMethodOrOutcome => &DecodeError::NoMethodOrOutcome,
            Self::ResponseWithoutId => &DecodeError::ResponseWithoutId,
            Self::ErrorNotObject => &DecodeError::ErrorNotObject,
            Self::ErrorCodeNotInteger => &DecodeError::ErrorCodeNotInteger,
            Self::ErrorMessageNotString => &DecodeError::ErrorMessageNotString,
        }
    }
}

/// What an id slot holds; the value itself is in [`MessageIndex::id`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdTag {
    Absent,
    Null,
    Num,
    Str,
    Unreadable,
}

/// [`MessageIndex::flags`] bits.
/// The longest body [`FrameParser::parse_bytes_with`] parses with the parser its thread keeps
/// (whose buffers grow to the longest body it parsed, and stay).
const KEPT_PARSER_BYTES: usize = 64 * 1024;

const RESPONSE_SHAPED: u8 = 1;
const ID_UNESCAPED: u8 = 1 << 1;
const HAS_TEXT: u8 = 1 << 2;
const TEXT_UNESCAPED: u8 = 1 << 3;
const HAS_PAYLOAD: u8 = 1 << 4;
const HAS_DATA: u8 = 1 << 5;

/// The index of one message: its kind and where each member lies, in 48 bytes.
///
/// Every `Frame` carries one inline, and it is moved with the frame, so its fields are packed by
/// hand rather than as `Option`s of enums (which cost a tag word each): members that no one
/// message has together share a slot (`text` is `method` of a request or notification and
/// `error.message` of an error response), and the presence of each is a bit of `flags`. The
/// accessors below are the only readers and writers of the packed fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MessageIndex {
    /// The id: an integer's bits, or a string's `at` (low half) and `len` (high half).
    id: u64,
    /// `error.code` of an error response.
    code: i64,
    /// `method`, or `error.message` of an error response: `at..at + len`.
    text: Span,
    /// `params` of a request or notification, `result` of a response, `error` of an error
    /// response: the kinds are exclusive, so one slot serves.
    payload: Span,
    /// `error.data` of an error response.
    data: Span,
    pub(crate) kind: Kind,
    pub(crate) problem: Option<Problem>,
    id_tag: IdTag,
    flags: u8,
}

impl MessageIndex {
    /// A message with no members yet, classified as invalid for want of any.
    pub(crate) const BLANK: Self = Self {
        id: 0,
        code: 0,
        text: Span { start: 0, end: 0 },
        payload: Span { start: 0, end: 0 },
        data: Span { start: 0, end: 0 },
        kind: Kind::Invalid,
        problem: Some(Problem::NoMethodOrOutcome),
        id_tag: IdTag::Absent,
        flags: 0,
    };

    /// The view of a frame that is not a message at all ([`FrameIndex::Unreadable`]): invalid, no
    /// members; its error is the frame's.
    const UNREADABLE: Self = Self { problem: None, ..Self::BLANK };

    pub(crate) const fn invalid(problem: Problem) -> Self {
        Self { problem: Some(problem), ..Self::BLANK }
    }

    pub(crate) fn id(&self) -> IdRepr {
        match self.id_tag {
            IdTag::Absent => IdRepr::Absent,
            IdTag::Null => IdRepr::Null,
            IdTag::Num => IdRepr::Num(self.id as i64),
            IdTag::Str => IdRepr::Str(Text {
                at: self.id as u32,
                len: (self.id >> 32) as u32,
                unescaped: self.flags & ID_UNESCAPED != 0,
            }),
            IdTag::Unreadable => IdRepr::Unreadable,
        }
    }

    pub(crate) fn set_id(&mut self, id: IdRepr) {
        self.flags &= !ID_UNESCAPED;
        (self.id_tag, self.id) = match id {
            IdRepr::Absent => (IdTag::Absent, 0),
            IdRepr::Null => (IdTag::Null, 0),
            IdRepr::Num(n) => (IdTag::Num, n as u64),
            IdRepr::Str(t) => {
                self.set_flag(ID_UNESCAPED, t.unescaped);
                (IdTag::Str, u64::from(t.at) | (u64::from(t.len) << 32))
            }
            IdRepr::Unreadable => (IdTag::Unreadable, 0),
        };
    }

    /// The `text` slot: `method`, or `error.message` of an error response.
    fn text(&self) -> Option<Text> {
        (self.flags & HAS_TEXT != 0).then_some(Text {
            at: self.text.start,
            len: self.text.end,
            unescaped: self.flags & TEXT_UNESCAPED != 0,
        })
    }

    fn set_text(&mut self, t: Text) {
        self.flags |= HAS_TEXT;
        self.set_flag(TEXT_UNESCAPED, t.unescaped);
        self.text = Span { start: t.at, end: t.len };
    }

    /// `method`, whatever the kind, except an error response's (which has none).
    pub(crate) fn method(&self) -> Option<Text> {
        if self.kind == Kind::Error { None } else { self.text() }
    }

    pub(crate) fn set_method(&mut self, t: Text) {
        debug_assert!(self.kind != Kind::Error);
        self.set_text(t);
    }

    pub(crate) fn payload(&self) -> Option<Span> {
        (self.flags & HAS_PAYLOAD != 0).then_some(self.payload)
    }

    pub(crate) fn set_payload(&mut self, span: Option<Span>) {
        self.set_flag(HAS_PAYLOAD, span.is_some());
        self.payload = span.unwrap_or_default();
    }

    /// `error` of an error response.
    pub(crate) fn error(&self) -> Option<ErrorRepr> {
        (self.kind == Kind::Error).then(|| ErrorRepr {
            code: self.code,
            message: self.text().expect("an error response has a message"),
            data: (self.flags & HAS_DATA != 0).then_some(self.data),
        })
    }

    /// Makes the message an error response with `e` as its `error`.
    pub(crate) fn set_error(&mut self, e: ErrorRepr) {
        self.kind = Kind::Error;
        self.code = e.code;
        self.set_text(e.message);
        self.set_flag(HAS_DATA, e.data.is_some());
        self.data = e.data.unwrap_or_default();
    }

    pub(crate) fn response_shaped(&self) -> bool {
        self.flags & RESPONSE_SHAPED != 0
    }

    pub(crate) fn set_response_shaped(&mut self, yes: bool) {
        self.set_flag(RESPONSE_SHAPED, yes);
    }

    fn set_flag(&mut self, bit: u8, on: bool) {
        if on {
            self.flags |= bit;
        } else {
            self.flags &= !bit;
        }
    }
}

/// Where the messages of a frame are described.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FrameIndex {
    /// One message (possibly invalid, with the id it could read).
    One(MessageIndex),
    /// A batch: one envelope per element, each classified on its own. On the heap: a batch is
    /// rare (MCP 2025-06-18 removed them) and its length is known before the first element is
    /// read, so it costs one allocation of the right size.
    Batch(Vec<MessageIndex>),
    /// Not a message at all: not JSON, not an object or array, a refused batch, or refused by a
    /// framing (too large, a malformed header block). Nothing of it could be read.
    Unreadable(DecodeError),
}

/// Unescaped envelope strings; inline up to this many bytes, so a frame whose error message has
/// a quoted word still costs no allocation.
pub(crate) type Unescaped = SmallVec<[u8; 32]>;

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
    bytes: Bytes,
    index: FrameIndex,
    unescaped: Unescaped,
}

impl Frame {
    /// A frame with no bytes and a blank index, for the parser to fill.
    fn empty() -> Self {
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
        self.inner.parse(
            &mut body,
            end,
            Backslash::Unknown,
            &mut frame.index,
            &mut frame.unescaped,
        );
        frame.bytes = body.freeze();
        frame
    }

    /// Parses one body shared with others (an HTTP body as the HTTP library hands it over)
    /// into a frame that keeps it: the body itself is never written and the frame holds it, not
    /// a copy; the parse reads the parser's own scratch copy of it (the one a body without
    /// padding room needs anyway).
    pub fn parse_bytes(&mut self, body: Bytes) -> Frame {
        let mut start = usize::from(body.starts_with(b"\xEF\xBB\xBF")) * 3;
        start += body[start..].iter().position(|&b| !parse::is_ws(b)).unwrap_or(body.len() - start);
        let end = start + parse::trim_back(&body[start..], body.len() - start);
        let limit = self.limits().frame_bytes();
        if end - start > limit {
            return Frame::from_error(Bytes::new(), DecodeError::FrameTooLarge { limit });
        }
        let body = body.slice(start..end);
        let mut frame = Frame::empty();
        self.inner.parse_shared(&body, &mut frame.index, &mut frame.unescaped);
        frame.bytes = body;
        frame
    }

    /// [`parse_bytes`](Self::parse_bytes) with a parser this thread keeps from call to call, for
    /// a caller with no parser of its own: a fresh parser allocates its buffers on every use.
    /// A thread keeps one parser for each of the last two `limits` it was asked with. A body
    /// longer than 64 KiB gets a parser of its own, dropped after, so what a thread keeps is
    /// bounded by a small body's buffers, whatever the largest body it saw.
    pub fn parse_bytes_with(limits: crate::Limits, body: Bytes) -> Frame {
        thread_local! {
            static PARSERS: std::cell::RefCell<[Option<FrameParser>; 2]> =
                const { std::cell::RefCell::new([None, None]) };
        }
        if body.len() > KEPT_PARSER_BYTES {
            return Self::new(limits).parse_bytes(body);
        }
        PARSERS.with(|cell| {
            let Ok(mut slots) = cell.try_borrow_mut() else {
                // Only if a parse ever re-entered this one on the same thread.
                return Self::new(limits).parse_bytes(body);
            };
            let kept = slots.iter().position(|p| p.as_ref().is_some_and(|p| p.limits() == limits));
            let parser = match kept {
                Some(i) => &mut slots[i],
                None => {
                    // The older of the two goes.
                    slots[1] = slots[0].take();
                    &mut slots[0]
                }
            };
            parser.get_or_insert_with(|| Self::new(limits)).parse_bytes(body)
        })
    }

    /// Parses `buf[start..end]` (what follows `end` may serve as parse padding) and splits it off
    /// `buf` as the frame's bytes: on return `buf` starts with what followed `end`. The caller
    /// has already held the body to the frame size limit (the codec's framer does), and says
    /// what its own scan learnt of backslashes in the body, so the parser need not look again.
    #[inline]
    pub(crate) fn parse_in(
        &mut self,
        buf: &mut bytes::BytesMut,
        start: usize,
        end: usize,
        backslash: Backslash,
    ) -> Frame {
        use bytes::Buf;
        debug_assert!(end - start <= self.limits().frame_bytes());
        let mut frame = Frame::empty();
        self.inner.parse(
            &mut buf[start..],
            end - start,
            backslash,
            &mut frame.index,
            &mut frame.unescaped,
        );
        buf.advance(start);
        frame.bytes = buf.split_to(end - start).freeze();
        frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_parser_reads_bodies_at_and_past_its_size_and_under_two_limits_at_once() {
        let body = |len: usize| {
            let head = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":""#;
            let tail = r#""}}"#;
            let pad = "x".repeat(len - head.len() - tail.len());
            Bytes::from(format!("{head}{pad}{tail}"))
        };
        let wide = crate::Limits::default();
        let deep = crate::Limits::default().max_depth(3);
        for len in [100, KEPT_PARSER_BYTES, KEPT_PARSER_BYTES + 1, 3 * KEPT_PARSER_BYTES] {
            // Alternating limits: each is served by a parser made for it.
            for limits in [wide, deep, wide] {
                let b = body(len);
                let frame = FrameParser::parse_bytes_with(limits, b.clone());
                assert_eq!(frame.kind(), Kind::Request, "{len}");
                assert_eq!(frame.as_bytes(), &b[..]);
                let params = &b[b.len() - frame.params().map_or(0, |p| p.get().len()) - 1..];
                assert!(params.starts_with(br#"{"s":"xxx"#) && params.ends_with(b"\"}}"), "{len}");
                assert_eq!(frame.params().map(|p| p.get().len()), Some(len - 47), "{len}");
            }
            // Depth 3 is past what the deep limits allow: the limits in force are the call's.
            let nested = Bytes::from_static(
                br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"b":{"c":{}}}}}"#,
            );
            assert_eq!(FrameParser::parse_bytes_with(wide, nested.clone()).kind(), Kind::Request);
            assert_ne!(FrameParser::parse_bytes_with(deep, nested).kind(), Kind::Request);
        }
    }

    #[test]
    fn the_index_of_one_message_is_packed_into_48_bytes() {
        assert_eq!(std::mem::size_of::<MessageIndex>(), 48);
        // The batch and unreadable cases fit around the envelope's own tag bytes.
        assert_eq!(std::mem::size_of::<FrameIndex>(), 48);
        assert_eq!(std::mem::size_of::<Frame>(), 32 + 48 + 40);
    }

    #[test]
    fn every_packed_member_reads_back_as_written() {
        let mut env = MessageIndex::BLANK;
        let t = |at, len, unescaped| Text { at, len, unescaped };
        for id in [
            IdRepr::Absent,
            IdRepr::Null,
            IdRepr::Num(i64::MIN),
            IdRepr::Num(-1),
            IdRepr::Num(i64::MAX),
            IdRepr::Str(t(u32::MAX - 1, u32::MAX, true)),
            IdRepr::Str(t(7, 0, false)),
            IdRepr::Unreadable,
        ] {
            env.set_id(id);
            assert_eq!(env.id(), id);
        }
        env.set_method(t(3, 4, true));
        assert_eq!(env.method(), Some(t(3, 4, true)));
        env.set_payload(Some(Span { start: 1, end: u32::MAX }));
        assert_eq!(env.payload(), Some(Span { start: 1, end: u32::MAX }));
        env.set_payload(None);
        assert_eq!(env.payload(), None);
        assert_eq!(env.error(), None);
        let e = ErrorRepr {
            code: i64::MIN,
            message: t(9, 2, false),
            data: Some(Span { start: 5, end: 6 }),
        };
        env.set_error(e);
        assert_eq!((env.kind, env.error(), env.method()), (Kind::Error, Some(e), None));
        env.set_error(ErrorRepr { data: None, ..e });
        assert_eq!(env.error().unwrap().data, None);
        env.set_response_shaped(true);
        assert!(env.response_shaped());
        assert_eq!(env.id(), IdRepr::Unreadable, "other members leave the id alone");
    }

    #[test]
    fn every_problem_is_the_decode_error_of_its_name() {
        use crate::error::Member as M;
        assert_eq!(
            *Problem::DuplicateMember(M::ErrorData).get(),
            DecodeError::DuplicateMember(M::ErrorData)
        );
        assert_eq!(
            *Problem::DuplicateMember(M::Jsonrpc).get(),
            DecodeError::DuplicateMember(M::Jsonrpc)
        );
        assert_eq!(*Problem::ErrorMessageNotString.get(), DecodeError::ErrorMessageNotString);
        assert_eq!(*Problem::NotAnObject.get(), DecodeError::NotAnObject);
    }
}
