//! A typed view of a message's object read member by member ([`Members`]): a struct's members
//! are deserialized each from its own value's text, and a member the struct does not have is
//! skipped without reading a byte of it (a 2026-07-28 result's `resultType` and `_meta`, say;
//! where the parse recorded the members, not even to find where it ends), where `serde_json`
//! over the whole object has to scan every skipped value. Whatever else a type asks for is read
//! from the whole object's text.
//!
//! The parse has already checked the whole frame as JSON, so a skipped value needs no look.

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};

use crate::message::members::{Each, Members};
use crate::message::scan::unescape;

type Error = serde_json::Error;

/// The members of one object of a parsed frame, as a map for serde: keys unescaped, values as
/// their exact JSON text.
///
/// Only a struct (and an `Option` of one) is read member by member; anything else a type asks
/// for (an enum, a map with keys that are not strings, a raw value, a flattened struct, which
/// serde reads as a map), or text that is not an object, is read by `serde_json` from `whole`,
/// the object's text.
pub(super) struct ByMember<'de> {
    members: Members<'de>,
    whole: &'de str,
}

impl<'de> ByMember<'de> {
    pub(super) fn new(members: Members<'de>) -> Self {
        Self { members, whole: members.text() }
    }
}

/// [`ByMember`] being read as a map.
struct Map<'de> {
    each: Each<'de>,
    value: Option<&'de str>,
}

/// One member's value, as its exact JSON text: read by `serde_json`, or, when the type skips
/// it, not read at all.
struct Value<'de>(&'de str);

/// Reads `text` with `serde_json`, the whole of it (nothing may follow the value).
fn read<'de, T>(
    text: &'de str,
    f: impl FnOnce(&mut serde_json::Deserializer<serde_json::de::StrRead<'de>>) -> Result<T, Error>,
) -> Result<T, Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = f(&mut de)?;
    de.end()?;
    Ok(v)
}

/// `Deserializer` methods that hand the text in `self.$text` to `serde_json`: those named
/// (they take only the visitor), and with `named` those that take a name or a length too,
/// `deserialize_struct` aside (each deserializer has its own).
macro_rules! to_json {
    ($text:tt; named) => {
        fn deserialize_unit_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            read(self.$text, |de| de::Deserializer::deserialize_unit_struct(de, name, visitor))
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            read(self.$text, |de| de::Deserializer::deserialize_newtype_struct(de, name, visitor))
        }

        fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
            read(self.$text, |de| de::Deserializer::deserialize_tuple(de, len, visitor))
        }

        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            len: usize,
            visitor: V,
        ) -> Result<V::Value, Error> {
            read(self.$text, |de| de::Deserializer::deserialize_tuple_struct(de, name, len, visitor))
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            name: &'static str,
            variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            read(self.$text, |de| de::Deserializer::deserialize_enum(de, name, variants, visitor))
        }
    };
    ($text:tt; $($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            read(self.$text, |de| de::Deserializer::$method(de, visitor))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for ByMember<'de> {
    type Error = Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.members.each() {
            Ok(each) => visitor.visit_map(Map { each, value: None }),
            Err(_) => read(self.whole, |de| {
                de::Deserializer::deserialize_struct(de, name, fields, visitor)
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.members.each() {
            Ok(_) => visitor.visit_some(self),
            Err(_) => read(self.whole, |de| de::Deserializer::deserialize_option(de, visitor)),
        }
    }

    to_json! {
        whole; deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_unit deserialize_seq deserialize_map deserialize_identifier
        deserialize_ignored_any
    }
    to_json! { whole; named }
}

impl<'de> MapAccess<'de> for Map<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(m) = self.each.next() else { return Ok(None) };
        let m = m.map_err(|_| de::Error::custom("the object is not well-formed"))?;
        self.value = Some(m.value);
        if !m.escaped {
            return seed.deserialize(de::value::BorrowedStrDeserializer::new(m.key)).map(Some);
        }
        let key = unescape(m.key).ok_or_else(|| de::Error::custom("a key's escape is invalid"))?;
        seed.deserialize(de::value::StringDeserializer::new(key.into_owned())).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let text = self.value.take().ok_or_else(|| de::Error::custom("a value without its key"))?;
        seed.deserialize(Value(text))
    }
}

impl<'de> de::Deserializer<'de> for Value<'de> {
    type Error = Error;

    /// A member the type does not have: the parse checked it, so it is not read again.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        read(self.0, |de| de::Deserializer::deserialize_struct(de, name, fields, visitor))
    }

    to_json! {
        0; deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier
    }
    to_json! { 0; named }
}

#[cfg(test)]
mod tests;
