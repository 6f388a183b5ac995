//! [`JsonRpcCodec`]: a framing (NDJSON by default, or Content-Length, or either detected) plus
//! the simd-json message parser, as a tokio-util codec. [`SseDecoder`] reads Server-Sent Events.

mod sse;

pub use sse::{SseDecoder, SseEvent};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::error::{DecodeError, Error};
use crate::framing::content_length::{self, BodySplit, ContentLengthFramer};
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
    /// One message per line ([`crate::framing::ndjson`]), as MCP's stdio transport frames
    /// them. The default.
    #[default]
    Ndjson,
    /// A `Content-Length` header block before each body ([`crate::framing::content_length`]),
    /// as LSP and DAP frame them. The encoder writes `Content-Length: N\r\n\r\n` and the body,
    /// with no newline after it.
    ContentLength,
    /// Decided by the first bytes of the stream that are not whitespace (or a byte order mark):
    /// `Content-Length` in any case selects Content-Length framing; anything else, `{` and `[`
    /// included, selects NDJSON, which answers bytes that are not JSON line by line with -32700
    /// as usual. Until the decision the encoder writes NDJSON, after it the framing detected, so
    /// a server answers in its client's framing. Detection never holds more than 14 bytes.
    Detect,
}

/// The framing when it is not NDJSON.
#[derive(Clone, Debug)]
enum Other {
    /// [`Framing::Detect`] before the first bytes that decide.
    Undecided,
    ContentLength(ContentLengthFramer),
}

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
    framer: NdjsonFramer,
    parser: FrameParser,
    /// `None` for NDJSON, so its path costs one test of this field per call and nothing more.
    other: Option<Box<Other>>,
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
        Self {
            framer: NdjsonFramer::new(limits.frame_bytes()),
            parser: FrameParser::new(limits),
            other: None,
            grown: false,
        }
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
        let mut codec = Self::with_limits(limits);
        codec.other = match framing {
            Framing::Ndjson => None,
            Framing::ContentLength => {
                Some(Box::new(Other::ContentLength(ContentLengthFramer::new(limits.frame_bytes()))))
            }
            Framing::Detect => Some(Box::new(Other::Undecided)),
        };
        codec
    }

    /// The framing in effect: [`Framing::Detect`] only until the first bytes decide.
    #[must_use]
    pub fn framing(&self) -> Framing {
        match self.other.as_deref() {
            None => Framing::Ndjson,
            Some(Other::Undecided) => Framing::Detect,
            Some(Other::ContentLength(_)) => Framing::ContentLength,
        }
    }

    /// The limits in effect.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.parser.limits()
    }

    #[inline]
    fn next_frame(&mut self, buf: &mut BytesMut, eof: bool) -> Option<Frame> {
        if self.other.is_some() {
            return self.next_other(buf, eof);
        }
        let Some(split) = self.framer.next(buf, eof) else {
            self.make_room(buf);
            return None;
        };
        match split {
            Split::TooLarge => {
                // The line's bytes are gone; so is the room grown for them (here or by the
                // reader's own doubling, when the limit is below `LONG_LINE`).
                if self.grown || buf.capacity() > 4 * READ_BUFFER {
                    self.shrink(buf);
                }
                Some(Frame::from_error(
                    Bytes::new(),
                    DecodeError::FrameTooLarge { limit: self.limits().frame_bytes() },
                ))
            }
            Split::Frame { start, end, consumed } => Some(self.cut(buf, start, end, consumed)),
        }
    }
}

impl JsonRpcCodec {
    /// Parses the body at `buf[start..end]` into a frame cut off the buffer, and drops the rest
    /// of what the framing consumed (`buf[end..consumed]`), in any framing.
    #[inline]
    fn cut(&mut self, buf: &mut BytesMut, start: usize, end: usize, consumed: usize) -> Frame {
        let frame = self.parser.parse_in(buf, start, end);
        buf.advance(consumed - end);
        if self.grown {
            // The long body's room now lives only as long as its frame.
            self.shrink(buf);
        }
        frame
    }

    /// The next frame in a framing other than NDJSON.
    #[inline(never)]
    fn next_other(&mut self, buf: &mut BytesMut, eof: bool) -> Option<Frame> {
        loop {
            let other = self.other.as_deref_mut()?;
            match other {
                Other::Undecided => match detect(buf, eof)? {
                    Framing::ContentLength => {
                        *other = Other::ContentLength(ContentLengthFramer::new(
                            self.parser.limits().frame_bytes(),
                        ));
                    }
                    _ => {
                        self.other = None;
                        return self.next_frame(buf, eof);
                    }
                },
                Other::ContentLength(framer) => {
                    let split = framer.next(buf, eof);
                    return match split {
                        None => {
                            self.make_room(buf);
                            None
                        }
                        Some(BodySplit::Refused(e)) => {
                            if self.grown {
                                self.shrink(buf);
                            }
                            Some(Frame::from_error(Bytes::new(), e))
                        }
                        Some(BodySplit::Frame { start, end, consumed }) => {
                            Some(self.cut(buf, start, end, consumed))
                        }
                    };
                }
            }
        }
    }

    /// Whether the encoder writes Content-Length framing.
    fn writes_content_length(&self) -> bool {
        matches!(self.other.as_deref(), Some(Other::ContentLength(_)))
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
        if self.other.is_some() && self.writes_content_length() {
            return write_content_length(&item, dst);
        }
        item.write(dst)
    }
}

/// Appends `Content-Length: N\r\n\r\n` and the message. The length is known only once the
/// message is written, so the header is written after it and the two swapped in place: one move
/// of the message's bytes, no allocation.
fn write_content_length<P: Payload>(
    item: &Outgoing<'_, P>,
    dst: &mut BytesMut,
) -> Result<(), Error> {
    let mark = dst.len();
    item.write_value(dst)?;
    let len = dst.len() - mark;
    put_header(dst, len);
    let header = dst.len() - mark - len;
    dst[mark..].rotate_right(header);
    Ok(())
}

fn put_header(dst: &mut BytesMut, len: usize) {
    dst.put_slice(b"Content-Length: ");
    dst.put_slice(itoa::Buffer::new().format(len).as_bytes());
    dst.put_slice(b"\r\n\r\n");
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

/// Forwards a decoded frame's bytes, as a proxy does: exactly as received, except that in NDJSON
/// raw line breaks (JSON whitespace, present only in a pretty-printed body from
/// [`FrameParser`](crate::FrameParser) or Content-Length framing) become spaces so the frame
/// stays one line. In Content-Length framing the bytes go out exactly as received.
impl Encoder<&Frame> for JsonRpcCodec {
    type Error = Error;

    fn encode(&mut self, frame: &Frame, dst: &mut BytesMut) -> Result<(), Error> {
        if self.other.is_some() && self.writes_content_length() {
            if !frame.as_bytes().is_empty() {
                dst.reserve(frame.as_bytes().len() + 32);
                put_header(dst, frame.as_bytes().len());
                dst.extend_from_slice(frame.as_bytes());
            }
            return Ok(());
        }
        if !frame.as_bytes().is_empty() {
            dst.reserve(frame.as_bytes().len() + 1);
            write_one_line(dst, frame.as_bytes());
            dst.extend_from_slice(b"\n");
        }
        Ok(())
    }
}
