//! Sans-IO framings over a [`BytesMut`] read buffer: each one's splitter, which finds where the
//! next frame lies without copying it (so the message layer can parse it in place and the codec
//! can then split it off), and beside it the writer that frames an outgoing message.
//!
//! - [`ndjson`]: one message per line, as MCP's stdio transport frames them (the default).
//! - [`content_length`]: a `Content-Length` header block before each body, as LSP and DAP do.
//! - [`sse`]: Server-Sent Events, one message per event's data, as MCP's Streamable HTTP
//!   transport sends them.
//!
//! [`Framing`] names the first two for a byte stream, plus [`Framing::Detect`], which picks one
//! from the stream's first bytes. [`JsonRpcCodec`](crate::JsonRpcCodec) is a framing and the
//! message parser, nothing more.

pub mod content_length;
pub mod ndjson;
pub mod sse;

use bytes::{Buf, BytesMut};

pub use content_length::{BodySplit, ContentLengthFramer};
pub use ndjson::{NdjsonFramer, Split};
pub use sse::{EventData, SseFramer, SseSplit};

use crate::error::{DecodeError, Error};
use crate::message::Backslash;
use crate::message::encode::{Outgoing, Payload};

/// How messages are delimited on a byte stream.
///
/// # Examples
///
/// ```
/// use bytes::BytesMut;
/// use mcpwire::{Framing, JsonRpcCodec, Limits};
/// use tokio_util::codec::Decoder;
///
/// let mut codec = JsonRpcCodec::with_framing(Limits::default(), Framing::Detect);
/// let mut buf = BytesMut::from(&b"content-length: 30\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}"[..]);
/// assert_eq!(codec.decode(&mut buf).unwrap().unwrap().method(), Some("m"));
/// assert_eq!(codec.framing(), Framing::ContentLength);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
#[non_exhaustive]
pub enum Framing {
    /// One message per line ([`ndjson`]), as MCP's stdio transport frames them. The default.
    #[default]
    Ndjson,
    /// A `Content-Length` header block before each body ([`content_length`]), as LSP and DAP
    /// frame them. The encoder writes `Content-Length: N\r\n\r\n` and the body, with no newline
    /// after it.
    ContentLength,
    /// Decided by the first bytes of the stream that are not whitespace (or a byte order mark):
    /// `Content-Length` in any case selects Content-Length framing; anything else, `{` and `[`
    /// included, selects NDJSON, which answers bytes that are not JSON line by line with -32700
    /// as usual. Until the decision the encoder writes NDJSON, after it the framing detected, so
    /// a server answers in its client's framing. Detection never holds more than 14 bytes.
    Detect,
}

/// What [`Splitter::next`] found in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// A body at `buf[start..end]`; the caller parses it and removes `buf[..consumed]`.
    Frame { start: usize, end: usize, consumed: usize, backslash: Backslash },
    /// A message refused by the framing; its bytes are gone or will be dropped as they arrive.
    Refused(DecodeError),
}

/// The framing when it is not NDJSON.
#[derive(Clone, Debug)]
enum Other {
    /// [`Framing::Detect`] before the first bytes that decide.
    Undecided,
    ContentLength(ContentLengthFramer),
}

/// The splitter and writer of a stream in one [`Framing`], with [`Framing::Detect`]'s decision
/// made on the way.
#[derive(Clone, Debug)]
pub(crate) struct Splitter {
    ndjson: NdjsonFramer,
    /// `None` for NDJSON, so its path costs one test of this field per frame and nothing more.
    other: Option<Box<Other>>,
    max_frame_bytes: usize,
}

impl Splitter {
    pub(crate) fn new(framing: Framing, max_frame_bytes: usize) -> Self {
        let other = match framing {
            Framing::Ndjson => None,
            Framing::ContentLength => {
                Some(Box::new(Other::ContentLength(ContentLengthFramer::new(max_frame_bytes))))
            }
            Framing::Detect => Some(Box::new(Other::Undecided)),
        };
        Self { ndjson: NdjsonFramer::new(max_frame_bytes), other, max_frame_bytes }
    }

    /// The framing in effect: [`Framing::Detect`] only until the first bytes decide.
    pub(crate) fn framing(&self) -> Framing {
        match self.other.as_deref() {
            None => Framing::Ndjson,
            Some(Other::Undecided) => Framing::Detect,
            Some(Other::ContentLength(_)) => Framing::ContentLength,
        }
    }

    /// The next frame in `buf`; `None` when more bytes are needed. `eof`: no more will come.
    #[inline]
    pub(crate) fn next(&mut self, buf: &mut BytesMut, eof: bool) -> Option<Cut> {
        if self.other.is_some() {
            return self.next_other(buf, eof);
        }
        Some(match self.ndjson.next(buf, eof)? {
            Split::Frame { start, end, consumed, backslash } => Cut::Frame {
                start,
                end,
                consumed,
                backslash: if backslash { Backslash::Present } else { Backslash::Absent },
            },
            Split::TooLarge => {
                Cut::Refused(DecodeError::FrameTooLarge { limit: self.max_frame_bytes })
            }
        })
    }

    #[inline(never)]
    fn next_other(&mut self, buf: &mut BytesMut, eof: bool) -> Option<Cut> {
        loop {
            let other = self.other.as_deref_mut()?;
            match other {
                Other::Undecided => match detect(buf, eof)? {
                    Framing::ContentLength => {
                        *other =
                            Other::ContentLength(ContentLengthFramer::new(self.max_frame_bytes));
                    }
                    _ => {
                        self.other = None;
                        return self.next(buf, eof);
                    }
                },
                Other::ContentLength(framer) => {
                    return Some(match framer.next(buf, eof)? {
                        // The body's length was declared, not scanned: the parser looks for
                        // backslashes itself.
                        BodySplit::Frame { start, end, consumed } => {
                            Cut::Frame { start, end, consumed, backslash: Backslash::Unknown }
                        }
                        BodySplit::Refused(e) => Cut::Refused(e),
                    });
                }
            }
        }
    }

    /// Appends `item` in the framing in effect (NDJSON until [`Framing::Detect`] decides).
    pub(crate) fn write<P: Payload>(
        &self,
        item: &Outgoing<'_, P>,
        dst: &mut BytesMut,
    ) -> Result<(), Error> {
        if self.writes_content_length() {
            content_length::write_message(item, dst)
        } else {
            item.write(dst)
        }
    }

    /// Appends a decoded frame's bytes in the framing in effect.
    pub(crate) fn write_frame(&self, bytes: &[u8], dst: &mut BytesMut) {
        if self.writes_content_length() {
            content_length::write_frame(bytes, dst);
        } else {
            ndjson::write_frame(bytes, dst);
        }
    }

    fn writes_content_length(&self) -> bool {
        self.other.is_some() && matches!(self.other.as_deref(), Some(Other::ContentLength(_)))
    }
}

/// Decides [`Framing::Detect`] from the first bytes that are not whitespace or a byte order mark,
/// dropping those (both framings would skip them). `None`: not enough bytes yet.
fn detect(buf: &mut BytesMut, eof: bool) -> Option<Framing> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    loop {
        let ws = buf.iter().position(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
        buf.advance(ws.unwrap_or(buf.len()));
        if !buf.starts_with(BOM) {
            break;
        }
        buf.advance(BOM.len());
    }
    let name = content_length::NAME;
    let n = buf.len().min(name.len());
    let partial = buf.len() < BOM.len() && BOM.starts_with(&buf[..]);
    if (n == 0 || partial) && !eof {
        return None;
    }
    if n > 0 && buf[..n].eq_ignore_ascii_case(&name[..n]) {
        if n == name.len() {
            return Some(Framing::ContentLength);
        }
        if !eof {
            return None;
        }
    }
    Some(Framing::Ndjson)
}
