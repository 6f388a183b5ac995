//! The packed index of a frame: where each member of each message lies in the frame's bytes
//! ([`MessageIndex`], 48 bytes for one message), and the unescaped form of envelope strings
//! whose wire form had escapes ([`Unescaped`]).

use smallvec::SmallVec;

use super::Kind;
use crate::error::DecodeError;

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
const RESPONSE_SHAPED: u8 = 1;
const ID_UNESCAPED: u8 = 1 << 1;
const HAS_TEXT: u8 = 1 << 2;
const TEXT_UNESCAPED: u8 = 1 << 3;
const HAS_PAYLOAD: u8 = 1 << 4;
const HAS_DATA: u8 = 1 << 5;

/// How many keys of `params` and of `params._meta` a [`MessageIndex`] records, together.
pub(crate) const KEY_SLOTS: usize = 8;

/// Where the top-level members of a request's `params`, and of its `params._meta`, lie (or of
/// a success response's `result` and `result._meta`; "`params`" below stands for either): the
/// offset of each key's first byte (past its opening quote) from the start of `params`, in the
/// order written. A value runs from after its key's `:` to the `,` before the next key (or the
/// object's closing brace), so the keys alone locate every value.
///
/// Recorded only when it fits: at most [`KEY_SLOTS`] keys in all, every key within the first
/// 64 KiB of `params`, no key written with an escape (a key of `_meta` written with one leaves
/// `_meta` out). `_meta` is recorded when it is an object and its keys fit beside those of
/// `params`. Otherwise readers find the members by scanning the text, as they would without an
/// index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct KeyTable {
    pub(crate) keys: [u16; KEY_SLOTS],
    /// The number of keys of `params` (`keys[..params]`).
    pub(crate) params: u8,
    /// The slot (in `keys[..params]`) of the `_meta` member whose keys follow, and their
    /// number (`keys[params..params + meta]`), when `_meta` is recorded.
    pub(crate) meta: Option<(u8, u8)>,
}

/// The index of one message: its kind and where each member lies, in 48 bytes.
///
/// Every `Frame` carries one inline, and it is moved with the frame, so its fields are packed by
/// hand rather than as `Option`s of enums (which cost a tag word each): members that no one
/// message has together share a slot (`text` is `method` of a request or notification and
/// `error.message` of an error response; `aux` is `error.code` and `error.data` of an error
/// response and the [`KeyTable`] of a request, notification or success response), and the
/// presence of each is a bit of `flags`. The accessors below are the only readers and writers
/// of the packed fields. Size counts: with an index of 56 bytes (a 128-byte `Frame`, tried),
/// the HTTP server spent 186 more instructions a request in `memcpy` from the POST's future
/// alone (docs/perf-log/peer-and-typed.md, "a name id per recorded key").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MessageIndex {
    /// The id: an integer's bits, or a string's `at` (low half) and `len` (high half).
    id: u64,
    /// An error response's `error.code` (`aux[..4]`, low half first) and `error.data`
    /// (`aux[4..]`: start, then end, low halves first); a request's, notification's or
    /// success response's [`KeyTable::keys`].
    aux: [u16; KEY_SLOTS],
    /// `method`, or `error.message` of an error response: `at..at + len`.
    text: Span,
    /// `params` of a request or notification, `result` of a response, `error` of an error
    /// response: the kinds are exclusive, so one slot serves.
    payload: Span,
    pub(crate) kind: Kind,
    pub(crate) problem: Option<Problem>,
    id_tag: IdTag,
    flags: u8,
    /// [`KeyTable::params`] + 1, or 0 when no table is recorded.
    table_params: u8,
    /// [`KeyTable::meta`]: the `_meta` slot in the high nibble, the key count + 1 in the low
    /// one; 0 when `_meta` is not recorded.
    table_meta: u8,
}

impl MessageIndex {
    /// A message with no members yet, classified as invalid for want of any.
    pub(crate) const BLANK: Self = Self {
        id: 0,
        aux: [0; KEY_SLOTS],
        text: Span { start: 0, end: 0 },
        payload: Span { start: 0, end: 0 },
        kind: Kind::Invalid,
        problem: Some(Problem::NoMethodOrOutcome),
        id_tag: IdTag::Absent,
        flags: 0,
        table_params: 0,
        table_meta: 0,
    };

    /// The view of a frame that is not a message at all ([`FrameIndex::Unreadable`]): invalid, no
    /// members; its error is the frame's.
    pub(crate) const UNREADABLE: Self = Self { problem: None, ..Self::BLANK };

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
        (self.kind == Kind::Error).then(|| {
            let a = |i: usize| u64::from(self.aux[i]);
            let code = a(0) | a(1) << 16 | a(2) << 32 | a(3) << 48;
            let data = Span { start: (a(4) | a(5) << 16) as u32, end: (a(6) | a(7) << 16) as u32 };
            ErrorRepr {
                code: code as i64,
                message: self.text().expect("an error response has a message"),
                data: (self.flags & HAS_DATA != 0).then_some(data),
            }
        })
    }

    /// Makes the message an error response with `e` as its `error`.
    pub(crate) fn set_error(&mut self, e: ErrorRepr) {
        self.kind = Kind::Error;
        self.set_text(e.message);
        self.set_flag(HAS_DATA, e.data.is_some());
        let data = e.data.unwrap_or_default();
        let code = e.code as u64;
        self.aux = [
            code as u16,
            (code >> 16) as u16,
            (code >> 32) as u16,
            (code >> 48) as u16,
            data.start as u16,
            (data.start >> 16) as u16,
            data.end as u16,
            (data.end >> 16) as u16,
        ];
        (self.table_params, self.table_meta) = (0, 0);
    }

    /// The key table of a request's or notification's `params`, or of a success response's
    /// `result`, when one is recorded.
    pub(crate) fn key_table(&self) -> Option<KeyTable> {
        let kinds = matches!(self.kind, Kind::Request | Kind::Notification | Kind::Response);
        if self.table_params == 0 || !kinds {
            return None;
        }
        let meta =
            (self.table_meta != 0).then(|| (self.table_meta >> 4, (self.table_meta & 15) - 1));
        Some(KeyTable { keys: self.aux, params: self.table_params - 1, meta })
    }

    /// Records (or, with `None`, forgets) the key table of a request's or notification's
    /// `params`, or of a success response's `result`.
    pub(crate) fn set_key_table(&mut self, table: Option<KeyTable>) {
        debug_assert!(self.kind != Kind::Error);
        let Some(t) = table else {
            (self.table_params, self.table_meta) = (0, 0);
            return;
        };
        debug_assert!(
            usize::from(t.params) + t.meta.map_or(0, |(_, n)| usize::from(n)) <= KEY_SLOTS
                && t.meta.is_none_or(|(at, _)| at < t.params)
        );
        self.aux = t.keys;
        self.table_params = t.params + 1;
        self.table_meta = t.meta.map_or(0, |(at, n)| at << 4 | (n + 1));
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

#[cfg(test)]
mod tests;
