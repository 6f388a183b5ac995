//! [`JsonRpcCodec`]: NDJSON framing plus the simd-json message parser, as a tokio-util codec.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::error::{DecodeError, Error};
use crate::framing::{NdjsonFramer, Split};
use crate::limits::Limits;
use crate::message::encode::{Outgoing, Payload, write_one_line};
use crate::message::{Frame, FrameParser};

/// A read buffer's size between long lines: a reader's initial capacity.
pub(crate) const READ_BUFFER: usize = 64 * 1024;

/// An unterminated line this long switches the buffer's growth to [`JsonRpcCodec::make_room`].
const LONG_LINE: usize = 1 << 20;

/// How many times its length a long line's buffer grows to at once.
const LONG_LINE_GROWTH: usize = 8;

/// Decodes newline-delimited JSON-RPC frames into [`Frame`]s and encodes [`Outgoing`] messages.
///
/// A malformed or over-long frame decodes to a [`Frame`] of [`Kind::Invalid`](crate::Kind)
/// carrying its [`DecodeError`], so the stream goes on and the peer can be answered; `Err` is
/// only ever an I/O failure (after which a `FramedRead` ends).
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use mcpwire::{JsonRpcCodec, Kind};
/// use tokio_util::codec::FramedRead;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\nnot json\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}";
/// let kinds: Vec<Kind> = FramedRead::new(input, JsonRpcCodec::new())
///     .map(|frame| frame.unwrap().kind())
///     .collect()
///     .await;
/// assert_eq!(kinds, [Kind::Request, Kind::Invalid, Kind::Notification]);
/// # });
/// ```
#[derive(Debug)]
pub struct JsonRpcCodec {
    framer: NdjsonFramer,
    parser: FrameParser,
}

impl Default for JsonRpcCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonRpcCodec {
    /// A codec with the default [`Limits`].
    #[must_use]
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    /// A codec enforcing `limits`.
    #[must_use]
    pub fn with_limits(limits: Limits) -> Self {
        Self { framer: NdjsonFramer::new(limits.frame_bytes()), parser: FrameParser::new(limits) }
    }

    /// The limits in effect.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.parser.limits()
    }

    #[inline]
    fn next_frame(&mut self, buf: &mut BytesMut, eof: bool) -> Option<Frame> {
        let Some(split) = self.framer.next(buf, eof) else {
            self.make_room(buf);
            return None;
        };
        match split {
            Split::TooLarge => {
                // The line's bytes are gone; so is the room grown for them.
                if buf.is_empty() && buf.capacity() > 4 * READ_BUFFER {
                    *buf = BytesMut::with_capacity(READ_BUFFER);
                }
                Some(Frame::from_error(
                    Bytes::new(),
                    DecodeError::FrameTooLarge { limit: self.limits().frame_bytes() },
                ))
            }
            Split::Frame { start, end, consumed } => {
                let frame = self.parser.parse_in(buf, start, end);
                buf.advance(consumed - end);
                Some(frame)
            }
        }
    }
}

impl JsonRpcCodec {
    /// Grows the buffer for a long unterminated line before the reader does.
    ///
    /// A reader grows a full buffer by doubling, which for a line near the frame limit ends at
    /// twice the limit, and leaves each smaller buffer behind on the way (an allocator may keep
    /// them). Past [`LONG_LINE`] the buffer grows instead by [`LONG_LINE_GROWTH`] times at once,
    /// and never past what the longest frame needs: the limit, a CRLF, and the parser's padding.
    /// Untouched capacity costs address space, not memory.
    fn make_room(&self, buf: &mut BytesMut) {
        let len = buf.len();
        if len < LONG_LINE || buf.capacity() - len >= READ_BUFFER {
            return;
        }
        let most = self.limits().frame_bytes() + 2 + simd_json::INPUT_PADDING;
        let room = len.saturating_mul(LONG_LINE_GROWTH).min(most);
        if room > buf.capacity() {
            let mut bigger = BytesMut::with_capacity(room);
            bigger.extend_from_slice(buf);
            *buf = bigger;
        }
    }
}

impl Decoder for JsonRpcCodec {
    type Item = Frame;
    type Error = Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Error> {
        Ok(self.next_frame(buf, false))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Error> {
        Ok(self.next_frame(buf, true))
    }
}

impl<P: Payload> Encoder<Outgoing<'_, P>> for JsonRpcCodec {
    type Error = Error;

    fn encode(&mut self, item: Outgoing<'_, P>, dst: &mut BytesMut) -> Result<(), Error> {
        item.write(dst)
    }
}

/// Forwards a decoded frame's bytes, as a proxy does: exactly as received, except that raw line
/// breaks (JSON whitespace, present only in a pretty-printed body from
/// [`FrameParser`](crate::FrameParser)) become spaces so the frame stays one line.
impl Encoder<&Frame> for JsonRpcCodec {
    type Error = Error;

    fn encode(&mut self, frame: &Frame, dst: &mut BytesMut) -> Result<(), Error> {
        if !frame.as_bytes().is_empty() {
            dst.reserve(frame.as_bytes().len() + 1);
            write_one_line(dst, frame.as_bytes());
            dst.extend_from_slice(b"\n");
        }
        Ok(())
    }
}
