//! The values a frame lends: its [`Kind`], an [`Id`], [`RawJson`] text and an [`ErrorObject`].

use std::fmt;

use serde::Deserialize;

use super::escape::escape;
use crate::error::PayloadError;

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
    /// Not a valid message; [`Frame::decode_error`](crate::Frame::decode_error) says why.
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
                escape(s, |chunk| written = written.and_then(|()| f.write_str(chunk)));
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
pub struct RawJson<'a>(pub(super) &'a str);

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
