//! Sans-IO frame splitters over a [`BytesMut`](bytes::BytesMut) read buffer.
//!
//! A splitter finds where the next frame lies in the buffer without copying it, so the message
//! layer can parse it in place and the codec can then split it off.
//!
//! - [`ndjson`]: one message per line, as MCP's stdio transport frames them (the default).
//! - [`content_length`]: a `Content-Length` header block before each body, as LSP and DAP do.
//! - [`sse`]: Server-Sent Events, one message per event's data, as MCP's Streamable HTTP
//!   transport sends them.

pub mod content_length;
pub mod ndjson;
pub mod sse;

pub use content_length::{BodySplit, ContentLengthFramer};
pub use ndjson::{NdjsonFramer, Split};
pub use sse::{EventData, SseFramer, SseSplit};
