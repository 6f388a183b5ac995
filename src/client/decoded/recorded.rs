//! A typed view read from the members the parse recorded: a struct's members are deserialized
//! each from its own value's text, and a member the struct does not have is skipped without
//! reading a byte of it (a 2026-07-28 result's `resultType` and `_meta`, say), where
//! `serde_json` over the whole object has to scan every skipped value to find where it ends.
//! Whatever else a type asks for is read from the whole object's text, as before.
//!
//! The parse has already checked the whole frame as JSON, so a skipped value needs no look.

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};

type Error = serde_json::Error;

/// The members of one object, as a map for serde: keys as written (recorded keys have no
/// escapes), values as their exact JSON text.
///
/// Only a struct (and an `Option` of one) is read member by member; anything else a type asks
/// for (an enum, a map with keys that are not strings, a raw value, a flattened struct, which
/// serde reads as a map) is read by `serde_json` from `whole`, the object's text, exactly as
/// before.
pub(super) struct Recorded<'de, I> {
    members: I,
    value: Option<&'de str>,
    whole: &'de str,
}

impl<'de, I: Iterator<Item = (&'de str, &'de str)>> Recorded<'de, I> {
    pub(super) fn new(members: I, whole: &'de str) -> Self {
        Self { members, value: None, whole }
    }
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

impl<'de, I: Iterator<Item = (&'de str, &'de str)>> de::Deserializer<'de> for Recorded<'de, I> {
    type Error = Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_map(self)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
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
