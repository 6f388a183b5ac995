//! Decoded messages: [`Frame`] owns one frame's bytes and a small index; [`Message`] is a view of
//! one message in it (the frame itself, or one batch element).
//!
//! Invariants, established by the parser and relied on by every accessor:
//! - `Frame::bytes` is exactly the frame body as received (line ending, leading whitespace and a
//!   byte order mark removed). Parsing never leaves it modified.
//! - Every span of a message that is not [`Kind::Invalid`] with a syntax error satisfies
//!   `start <= end <= bytes.len()`, starts and ends on a UTF-8 character boundary (at an ASCII
//!   quote or a JSON structural character), and lies in a frame simd-json validated as UTF-8.
//! - A [`Text`](index::Text) with the unescaped flag points into `Frame::unescaped`, which holds the unescaped form of
//!   envelope strings (`method`, a string `id`, `error.message`) whose wire form had escapes.

//!
//! The files: [`views`] (what a frame lends: [`Kind`], [`Id`], [`RawJson`], [`ErrorObject`]),
//! [`frame`] ([`Frame`] and [`Message`]), [`index`] (the packed index), [`parse`]
//! ([`FrameParser`], and the parse in two phases with [`walk`]), [`members`] (the one reader
//! of an object's members: those of `params`, `result` and their `_meta` the parse records,
//! read back, else [`scan`]ned), [`encode`] ([`Outgoing`]) and [`owned`] ([`OwnedId`], and the
//! params the peer reads); `whitespace` steps over JSON whitespace.
//!
//! [`Outgoing`]: encode::Outgoing
//! [`OwnedId`]: owned::OwnedId

pub(crate) mod encode;
mod escape;
pub(crate) mod frame;
pub(crate) mod index;
pub(crate) mod members;
pub(crate) mod owned;
pub(crate) mod parse;
pub(crate) mod scan;
pub(crate) mod views;
pub(crate) mod walk;
mod whitespace;

pub use frame::{Frame, Message};
pub(crate) use parse::Backslash;
pub use parse::FrameParser;
pub use views::{ErrorObject, Id, Kind, RawJson};
