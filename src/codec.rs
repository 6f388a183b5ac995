//! [`JsonRpcCodec`]: NDJSON framing plus the simd-json message parser, as a tokio-util codec.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::error::{DecodeError, Error};
use crate::framing::{NdjsonFramer, Split};
use crate::limits::Limits;
use crate::message::encode::{Outgoing, Payload, write_one_line};
use crate::message::{Frame, FrameParser};

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
        match self.framer.next(buf, eof)? {
            Split::TooLarge => Some(Frame::from_error(
                Bytes::new(),
                DecodeError::FrameTooLarge { limit: self.limits().frame_bytes() },
            )),
            Split::Frame { start, end, consumed } => {
                let frame = self.parser.parse_in(buf, start, end);
                buf.advance(consumed - end);
                Some(frame)
            }
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
