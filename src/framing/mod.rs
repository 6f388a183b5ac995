//! Sans-IO frame splitters over a [`BytesMut`](bytes::BytesMut) read buffer.
//!
//! A splitter finds where the next frame lies in the buffer without copying it, so the message
//! layer can parse it in place and the codec can then split it off.

pub mod ndjson;

pub use ndjson::{NdjsonFramer, Split};
