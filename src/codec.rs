//! [`JsonRpcCodec`]: a framing ([`crate::framing`]: NDJSON by default, or Content-Length, or
//! either detected) plus the simd-json message parser, as a tokio-util codec; and the read
//! buffer's growth for long lines, which only a codec that owns the buffer can manage.
//! [`SseDecoder`] reads Server-Sent Events.

mod sse;

pub use sse::{SseDecoder, SseEvent};

pub use crate::framing::Framing;

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::error::{DecodeError, Error};
use crate::framing::{Cut, Splitter};
use crate::limits::Limits;
use crate::message::encode::{Outgoing, Payload};
use crate::message::{Backslash, Frame, FrameParser};

/// A read buffer's size between long lines: a reader's initial capacity.
pub(crate) const READ_BUFFER: usize = 64 * 1024;

/// An unterminated line this long switches the buffer's growth to [`JsonRpcCodec::make_room`].
const LONG_LINE: usize = 1 << 20;

/// How many times its length a long line's buffer grows to at once.
const LONG_LINE_GROWTH: usize = 8;

/// Decodes JSON-RPC frames into [`Frame`]s and encodes [`Outgoing`] messages, in a [`Framing`]:
/// newline-delimited JSON unless told otherwise.
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
    splitter: Splitter,
    parser: FrameParser,
    /// The read buffer was grown for a long line ([`JsonRpcCodec::make_room`]); it goes back to
    /// the usual size once that line is a frame or refused.
    grown: bool,
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
        Self::with_framing(limits, Framing::Ndjson)
    }

    /// A codec enforcing `limits` in the given framing.
    ///
    /// # Examples
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use mcpwire::{Framing, Id, JsonRpcCodec, Limits, Outgoing, RawJson};
    /// use tokio_util::codec::{Decoder, Encoder};
    ///
    /// let mut codec = JsonRpcCodec::with_framing(Limits::default(), Framing::ContentLength);
    /// let mut buf = BytesMut::from(&b"Content-Length: 48\r\n\r\n{\n \"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"\n}"[..]);
    /// let frame = codec.decode(&mut buf).unwrap().unwrap();
    /// assert_eq!(frame.method(), Some("ping"));
    ///
    /// let mut out = BytesMut::new();
    /// codec.encode(Outgoing::Result { id: frame.id().unwrap(), result: RawJson::new("{}") }, &mut out).unwrap();
    /// assert_eq!(&out[..], b"Content-Length: 36\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
    /// # let _ = Id::Null;
    /// ```
    #[must_use]
    pub fn with_framing(limits: Limits, framing: Framing) -> Self {
        Self {
            splitter: Splitter::new(framing, limits.frame_bytes()),
            parser: FrameParser::new(limits),
            grown: false,
        }
    }

    /// The framing in effect: [`Framing::Detect`] only until the first bytes decide.
    #[must_use]
    pub fn framing(&self) -> Framing {
        self.splitter.framing()
    }

    /// The limits in effect.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.parser.limits()
    }

    #[inline]
    fn next_frame(&mut self, buf: &mut BytesMut, eof: bool) -> Option<Frame> {
        match self.splitter.next(buf, eof) {
            None => {
                self.make_room(buf);
                None
            }
            Some(Cut::Frame { start, end, consumed, backslash }) => {
                Some(self.cut(buf, start, end, consumed, backslash))
            }
            Some(Cut::Refused(e)) => {
                // The refused bytes are gone; so is the room grown for them (here, or by the
                // reader's own doubling when the frame limit is below `LONG_LINE`).
                let doubled = matches!(e, DecodeError::FrameTooLarge { .. })
                    && buf.capacity() > 4 * READ_BUFFER;
                if self.grown || doubled {
                    self.shrink(buf);
                }
                Some(Frame::from_error(Bytes::new(), e))
            }
        }
    }

    /// Parses the body at `buf[start..end]` into a frame cut off the buffer, and drops the rest
    /// of what the framing consumed (`buf[end..consumed]`), in any framing.
    #[inline]
    fn cut(
        &mut self,
        buf: &mut BytesMut,
        start: usize,
        end: usize,
        consumed: usize,
        backslash: Backslash,
    ) -> Frame {
        let frame = self.parser.parse_in(buf, start, end, backslash);
        buf.advance(consumed - end);
        if self.grown {
            // The long body's room now lives only as long as its frame.
            self.shrink(buf);
        }
        frame
    }

    /// Grows the buffer for a long unterminated line before the reader does.
    ///
    /// A reader grows a full buffer by doubling, which for a line near the frame limit ends at
    /// twice the limit, and leaves each smaller buffer behind on the way (an allocator may keep
    /// them). Past [`LONG_LINE`] the buffer grows instead by [`LONG_LINE_GROWTH`] times at once,
    /// and never past what the longest frame needs: the limit, a CRLF, and the parser's padding.
    /// Untouched capacity costs address space, not memory, and the grown buffer is given up as
    /// soon as the line is a frame or refused ([`JsonRpcCodec::shrink`]).
    fn make_room(&mut self, buf: &mut BytesMut) {
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
            self.grown = true;
        }
    }

    /// Moves what is buffered to a buffer of the usual size, dropping this one's share of a
    /// larger one (a frame cut from it keeps it only while it lives).
    #[cold]
    fn shrink(&mut self, buf: &mut BytesMut) {
        self.grown = false;
        let mut fresh = BytesMut::with_capacity(READ_BUFFER.max(buf.len()));
        fresh.extend_from_slice(buf);
        *buf = fresh;
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
        self.splitter.write(&item, dst)
    }
}

/// Forwards a decoded frame's bytes, as a proxy does: exactly as received, except that in NDJSON
/// raw line breaks (JSON whitespace, present only in a pretty-printed body from
/// [`FrameParser`](crate::FrameParser) or Content-Length framing) become spaces so the frame
/// stays one line. In Content-Length framing the bytes go out exactly as received.
impl Encoder<&Frame> for JsonRpcCodec {
    type Error = Error;

    fn encode(&mut self, frame: &Frame, dst: &mut BytesMut) -> Result<(), Error> {
        self.splitter.write_frame(frame.as_bytes(), dst);
        Ok(())
    }
}
