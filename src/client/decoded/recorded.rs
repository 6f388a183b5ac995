//! A typed view read from the members the parse recorded: each member's value is deserialized
//! from its own text, and a member the type does not have is skipped without reading a byte
//! of it (a 2026-07-28 result's `resultType` and `_meta`, say), where `serde_json` over the
//! whole object has to scan every skipped value to find where it ends.
//!
//! The parse has already checked the whole frame as JSON, so a skipped value needs no look.

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};

type Error = serde_json::Error;

/// The members of one object, as a map for serde: keys as written (recorded keys have no
/// escapes), values as their exact JSON text.
pub(super) struct Recorded<'de, I> {
    members: I,
    value: Option<&'de str>,
}

impl<'de, I: Iterator<Item = (&'de str, &'de str)>> Recorded<'de, I> {
    pub(super) fn new(members: I) -> Self {
        Self { members, value: None }
    }
}

impl<'de, I: Iterator<Item = (&'de str, &'de str)>> de::Deserializer<'de> for Recorded<'de, I> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_map(self)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, I: Iterator<Item = (&'de str, &'de str)>> MapAccess<'de> for Recorded<'de, I> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.members.next() else { return Ok(None) };
        self.value = Some(value);
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let text = self.value.take().ok_or_else(|| de::Error::custom("a value without its key"))?;
        seed.deserialize(Value(text))
    }
}

/// One member's value, as its exact JSON text: read by `serde_json`, or, when the type skips
/// it, not read at all.
struct Value<'de>(&'de str);

impl Value<'_> {
    /// Reads the value with `serde_json`, the whole text (nothing may follow it).
    fn read<'de, T>(
        text: &'de str,
        f: impl FnOnce(&mut serde_json::Deserializer<serde_json::de::StrRead<'de>>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let v = f(&mut de)?;
        de.end()?;
        Ok(v)
    }
}

/// Methods that take only the visitor, passed on to `serde_json`.
macro_rules! to_json {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            Value::read(self.0, |de| de::Deserializer::$method(de, visitor))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Value<'de> {
    type Error = Error;

    to_json! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier
    }

    /// A member the type does not have: the parse checked it, so it is not read again.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        Value::read(self.0, |de| de::Deserializer::deserialize_unit_struct(de, name, visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        Value::read(self.0, |de| de::Deserializer::deserialize_newtype_struct(de, name, visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        Value::read(self.0, |de| de::Deserializer::deserialize_tuple(de, len, visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        Value::read(self.0, |de| de::Deserializer::deserialize_tuple_struct(de, name, len, visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        Value::read(self.0, |de| de::Deserializer::deserialize_struct(de, name, fields, visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        Value::read(self.0, |de| de::Deserializer::deserialize_enum(de, name, variants, visitor))
    }
}

#[cfg(test)]
mod tests;
