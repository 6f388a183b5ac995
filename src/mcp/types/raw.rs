//! [`Raw`]: a JSON value kept as its exact text, borrowed from the frame when decoded and owned
//! when built, so schemas and payloads pass through unchanged (a JSON Schema 2020-12
//! `inputSchema` keeps `$schema`, `$defs`, `$ref` and every keyword as written; nothing is
//! dereferenced or normalised).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::message::RawJson;

/// A JSON value as its exact text.
///
/// Decoded, it borrows from the message (no copy, no allocation); built, it owns its text.
/// Only a self-describing borrowed deserializer can produce one (`serde_json::from_str` and
/// `from_slice`, which is what every decoder of this crate uses).
///
/// # Examples
///
/// ```
/// use mcpwire::mcp::types::Raw;
///
/// let schema = Raw::parse(r##"{"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}}"##).unwrap();
/// assert!(schema.get().contains("$defs"));
/// let built = Raw::to_json(&serde_json::json!({"type": "object"})).unwrap();
/// assert_eq!(built.get(), r#"{"type":"object"}"#);
/// ```
#[derive(Clone)]
pub struct Raw<'a>(Repr<'a>);

#[derive(Clone)]
enum Repr<'a> {
    Value(Cow<'a, RawValue>),
    /// A member of a message the frame parser already validated, found by the member scanner
    /// (which allocates nothing, where serde_json's skipping of a nested value does).
    Scanned(&'a str),
}

impl<'a> Raw<'a> {
    /// Borrows text already known to be one JSON value.
    #[must_use]
    pub fn borrowed(value: &'a RawValue) -> Self {
        Self(Repr::Value(Cow::Borrowed(value)))
    }

    /// Takes over serde_json's owned raw value.
    #[must_use]
    pub fn from_box(value: Box<RawValue>) -> Raw<'static> {
        Raw(Repr::Value(Cow::Owned(value)))
    }

    /// A member of a validated message (a `RawJson` lent by a `Frame`).
    pub(crate) fn scanned(value: RawJson<'a>) -> Self {
        Self(Repr::Scanned(value.get()))
    }

    /// Validates `json` as one JSON value and borrows it.
    ///
    /// # Errors
    ///
    /// When `json` is not exactly one JSON value.
    pub fn parse(json: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<&RawValue>(json).map(Self::borrowed)
    }

    /// Validates `json` as one JSON value and takes it over.
    ///
    /// # Errors
    ///
    /// When `json` is not exactly one JSON value.
    pub fn owned(json: String) -> Result<Raw<'static>, serde_json::Error> {
        RawValue::from_string(json).map(|v| Raw(Repr::Value(Cow::Owned(v))))
    }

    /// Serialises `value` once and keeps its text.
    ///
    /// # Errors
    ///
    /// When `value` cannot be serialised (a map with non-string keys, say).
    pub fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<Raw<'static>, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(|v| Raw(Repr::Value(Cow::Owned(v))))
    }

    /// The JSON text.
    #[must_use]
    pub fn get(&self) -> &str {
        match &self.0 {
            Repr::Value(v) => v.get(),
            Repr::Scanned(s) => s,
        }
    }

    /// The text as the crate's borrowed raw value (for encoding, or [`crate::mcp::meta::member`]).
    #[must_use]
    pub fn as_raw_json(&self) -> RawJson<'_> {
        RawJson::new(self.get())
    }

    /// Deserialises the value, borrowing strings that need no unescaping.
    ///
    /// # Errors
    ///
    /// When the text does not match `T`.
    pub fn decode<'b, T: Deserialize<'b>>(&'b self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.get())
    }

    /// serde_json's owned raw value of the same text.
    #[must_use]
    pub fn into_box(self) -> Box<RawValue> {
        match self.0 {
            Repr::Value(Cow::Owned(v)) => v,
            Repr::Value(Cow::Borrowed(v)) => v.to_owned(),
            Repr::Scanned(s) => {
                RawValue::from_string(s.to_owned()).expect("scanned from a validated message")
            }
        }
    }

    /// An owned copy that outlives the message it was read from.
    #[must_use]
    pub fn into_owned(self) -> Raw<'static> {
        match self.0 {
            Repr::Value(v) => Raw(Repr::Value(Cow::Owned(v.into_owned()))),
            Repr::Scanned(s) => Raw(Repr::Value(Cow::Owned(
                RawValue::from_string(s.to_owned()).expect("scanned from a validated message"),
            ))),
        }
    }
}

impl fmt::Debug for Raw<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl fmt::Display for Raw<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl PartialEq for Raw<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Value(v) => v.serialize(s),
            // Borrowed again as serde_json's raw value (a check of text already valid).
            Repr::Scanned(text) => serde_json::from_str::<&RawValue>(text)
                .map_err(serde::ser::Error::custom)?
                .serialize(s),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(d).map(Self::borrowed)
    }
}

#[cfg(test)]
mod tests;
