//! [`OwnedId`], an id kept past its frame, and the few params the wire core itself reads: a
//! cancellation's `requestId` and a progress notification's token. Each is parsed here and
//! nowhere else.

#[cfg(feature = "peer")]
use std::borrow::Cow;
use std::fmt;

#[cfg(feature = "peer")]
use serde::Deserialize;

use super::Id;
#[cfg(feature = "peer")]
use super::Message;

/// A request id or progress token kept past the frame it came in: an integer or a string.
///
/// The key of every table that outlives a frame (the requests a transport routes, the progress
/// tokens a request asked for). Like [`Id`], `7` and `"7"` are different.
///
/// # Examples
///
/// ```
/// use mcpwire::{Id, OwnedId};
///
/// let id = OwnedId::from_id(Id::Str("a")).unwrap();
/// assert_eq!(id.as_id(), Id::Str("a"));
/// assert_ne!(OwnedId::Num(7), OwnedId::Str("7".into()));
/// assert_eq!(OwnedId::from_id(Id::Null), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OwnedId {
    /// An integer.
    Num(i64),
    /// A string, unescaped.
    Str(Box<str>),
}

impl OwnedId {
    /// The owned form of `id`; `None` for `null`, which names nothing.
    #[must_use]
    pub fn from_id(id: Id<'_>) -> Option<Self> {
        match id {
            Id::Num(n) => Some(Self::Num(n)),
            Id::Str(s) => Some(Self::Str(s.into())),
            Id::Null => None,
        }
    }

    /// The id, borrowed.
    #[must_use]
    pub fn as_id(&self) -> Id<'_> {
        match self {
            Self::Num(n) => Id::Num(*n),
            Self::Str(s) => Id::Str(s),
        }
    }
}

impl fmt::Display for OwnedId {
    /// As JSON, like [`Id`]'s.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_id().fmt(f)
    }
}

impl From<i64> for OwnedId {
    fn from(n: i64) -> Self {
        Self::Num(n)
    }
}

impl From<&str> for OwnedId {
    fn from(s: &str) -> Self {
        Self::Str(s.into())
    }
}

/// An id or token as JSON writes it, borrowed where it has no escapes.
#[cfg(feature = "peer")]
#[derive(Deserialize)]
#[serde(untagged)]
enum WireId<'a> {
    Num(i64),
    Str(#[serde(borrow)] Cow<'a, str>),
}

#[cfg(feature = "peer")]
impl From<WireId<'_>> for OwnedId {
    fn from(w: WireId<'_>) -> Self {
        match w {
            WireId::Num(n) => Self::Num(n),
            WireId::Str(s) => Self::Str(s.into()),
        }
    }
}

/// The `requestId` of a `notifications/cancelled` (`None` for any other message, or params
/// that do not name one).
#[cfg(feature = "peer")]
#[must_use]
pub fn cancelled_request(m: &Message<'_>) -> Option<OwnedId> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "requestId", borrow)]
        id: WireId<'a>,
    }
    if m.method() != Some("notifications/cancelled") {
        return None;
    }
    let p: Params<'_> = m.params()?.deserialize().ok()?;
    Some(p.id.into())
}

/// The `progressToken` of a `notifications/progress` (`None` for any other message).
#[cfg(feature = "peer")]
#[must_use]
pub fn progress_token(m: &Message<'_>) -> Option<OwnedId> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "progressToken", borrow)]
        token: WireId<'a>,
    }
    if m.method() != Some("notifications/progress") {
        return None;
    }
    let p: Params<'_> = m.params()?.deserialize().ok()?;
    Some(p.token.into())
}

#[cfg(all(test, feature = "peer"))]
mod tests;
