//! Content-Length framing, as the Language Server Protocol and the Debug Adapter Protocol frame
//! messages: a block of `Name: value` header lines, an empty line, then exactly `Content-Length`
//! bytes of body.
//!
//! ```text
//! Content-Length: 40\r\n
//! Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n
//! \r\n
//! {"jsonrpc":"2.0","id":1,"method":"ping"}
//! ```
//!
//! - **Headers.** `Content-Length` (name case-insensitive) is required, given once, as 1 to
//!   [`MAX_LENGTH_DIGITS`] decimal digits with no sign; whitespace around a value is dropped.
//!   Every other header, `Content-Type` included, is ignored, as LSP asks. The charset is not
//!   checked: a body that is not UTF-8 fails the message parser's own validation (-32700), so a
//!   check here would only refuse, earlier, what is refused anyway.
//! - **Line endings.** Header lines end with CRLF; a bare LF is tolerated too. The end of the
//!   block is unambiguous either way (it is the first empty line), and nothing sits between the
//!   two ends of a stdio pipe that could read the block differently. A CR anywhere else in a
//!   header line is malformed.
//! - **Between messages**, empty lines before a header block are skipped, so a writer that ends
//!   each body with a newline stays in step.
//! - **Body.** Its bytes are never copied: the splitter returns where the body lies in the read
//!   buffer, without the whitespace and byte order mark around it, so the codec parses it in place
//!   exactly as it does an NDJSON line. A body may hold raw line breaks (pretty-printed JSON).
//! - **Bounds.** A header block longer than [`MAX_HEADER_BYTES`] is refused without being held.
//!   A declared length above the frame limit is refused as soon as the block ends, before any
//!   body byte is held: the body's bytes are then dropped as they arrive.
//! - **Errors** are reported once each, as [`BodySplit::Refused`], and the stream goes on. After
//!   a malformed block (a bad line, a bad or missing or repeated `Content-Length`, a block too
//!   long) the splitter cannot know where the body ends, so it resynchronises: it drops bytes up
//!   to the next occurrence of `Content-Length` (any case), wherever it is. Searching anywhere,
//!   not only at a line start, is what finds the next message after an unterminated body, since
//!   LSP writers put the next header block straight after a body that does not end in a newline.
//!   A body that itself contains the text `Content-Length` can make the resync start early; that
//!   costs at most one more error. A malformed header line drops only its first byte before the
//!   search, so a header block that starts later on the same line (after a body shorter than
//!   declared) is still found; and a block with one malformed line is answered once for that
//!   line, then read from its `Content-Length` on, so its message is still delivered.
//! - **End of input** inside a header block or a body is one [`DecodeError::Truncated`].
//! - **The writer** (`write_message`, `write_frame`) writes `Content-Length: N\r\n\r\n` and
//!   the body, with no newline after it.

use crate::limits::MAX_HEADER_BYTES;
use bytes::{Buf, BufMut, BytesMut};

use crate::error::{DecodeError, Error};
use crate::message::encode::{Outgoing, Payload};

/// The most digits a `Content-Length` value may have: 10, enough for any length below the frame
/// limit's ceiling (4 GiB), and few enough that the value cannot overflow a `u64`.
pub const MAX_LENGTH_DIGITS: usize = 10;

/// The header name, lower case; matched without regard to case.
pub(crate) const NAME: &[u8] = b"content-length";

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// JSON whitespace.
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// What the Content-Length splitter found next in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodySplit {
    /// A body at `buf[start..end]` (whitespace and a byte order mark around it excluded). The
    /// whole body is `buf[..consumed]`: the header block is already gone from the buffer, and the
    /// caller removes the body (`start <= end <= consumed <= buf.len()`).
    Frame {
        /// First byte of the JSON value.
        start: usize,
        /// One past its last byte.
        end: usize,
        /// The declared length: bytes the body occupies.
        consumed: usize,
    },
    /// A message refused for the reason given: a declared length above the frame limit
    /// ([`DecodeError::FrameTooLarge`], its body dropped as it arrives), a malformed header block
    /// (the stream resynchronises at the next `Content-Length`), or the end of input inside a
    /// message.
    Refused(DecodeError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading header lines.
    Headers,
    /// The block declared this many body bytes.
    Body(usize),
    /// Dropping the body of a message whose declared length was over the limit.
    Discard(u64),
    /// Dropping bytes up to the next `Content-Length` after a malformed block.
    Resync,
    /// Dropping the rest of an over-long header line, then resynchronising.
    SkipLine,
}

/// The Content-Length splitter's state: where it is in the header block, body, or a discarded
/// stretch of input.
///
/// # Examples
///
/// ```
/// use bytes::BytesMut;
/// use mcpwire::framing::content_length::{BodySplit, ContentLengthFramer};
///
/// let mut framer = ContentLengthFramer::new(1024);
/// let mut buf = BytesMut::from(&b"Content-Length: 9\r\n\r\n {\"a\":1}\nContent-Len"[..]);
/// let split = framer.next(&mut buf, false);
/// assert_eq!(split, Some(BodySplit::Frame { start: 1, end: 8, consumed: 9 }));
/// assert_eq!(&buf[1..8], b"{\"a\":1}");
/// ```
#[derive(Clone, Debug)]
pub struct ContentLengthFramer {
    state: State,
    /// Bytes of the current header block already read and removed from the buffer.
    header_bytes: usize,
    /// Bytes at the front of the buffer already searched for `\n` without finding one.
    next_index: usize,
    /// The block's `Content-Length`, once read.
    length: Option<u64>,
    max_frame_bytes: usize,
}

impl ContentLengthFramer {
    /// A splitter that refuses bodies longer than `max_frame_bytes`.
    #[must_use]
    pub fn new(max_frame_bytes: usize) -> Self {
        Self {
            state: State::Headers,
            header_bytes: 0,
            next_index: 0,
            length: None,
            max_frame_bytes,
        }
    }

    /// Finds the next body in `buf`, removing header blocks and dropped bytes from its front.
    ///
    /// Returns `None` when `buf` holds no complete message yet. With `eof` set, what is left of
    /// an incomplete message is dropped and reported once as [`DecodeError::Truncated`]. A
    /// returned [`BodySplit::Frame`] is still in `buf`: the caller removes `consumed` bytes before
    /// calling again.
    pub fn next(&mut self, buf: &mut BytesMut, eof: bool) -> Option<BodySplit> {
        loop {
            match self.state {
                State::Headers => {
                    if let Some(split) = self.header_line(buf, eof)? {
                        return Some(split);
                    }
                }
                State::Body(len) => {
                    if buf.len() < len {
                        return eof.then(|| self.truncated(buf));
                    }
                    self.state = State::Headers;
                    let body = &buf[..len];
                    let bom = if body.starts_with(BOM) { BOM.len() } else { 0 };
                    let start =
                        body[bom..].iter().position(|&b| !is_ws(b)).map_or(len, |i| bom + i);
                    let end = body.iter().rposition(|&b| !is_ws(b)).map_or(start, |i| i + 1);
                    return Some(BodySplit::Frame { start, end: end.max(start), consumed: len });
                }
                State::Discard(left) => {
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
                    buf.advance(n);
                    let left = left - n as u64;
                    if left > 0 {
                        self.state = State::Discard(left);
                        return None;
                    }
                    self.state = State::Headers;
                }
                State::SkipLine => match memchr::memchr(b'\n', buf) {
                    Some(nl) => {
                        buf.advance(nl + 1);
                        self.state = State::Resync;
                    }
                    None => {
                        buf.clear();
                        return None;
                    }
                },
                State::Resync => {
                    if !resync(buf) {
                        if eof {
                            buf.clear();
                        }
                        return None;
                    }
                    self.state = State::Headers;
                }
            }
        }
    }

    /// Reads one header line. `None`: more input is needed; `Some(None)`: go on; `Some(Some)`:
    /// a result for the caller.
    fn header_line(&mut self, buf: &mut BytesMut, eof: bool) -> Option<Option<BodySplit>> {
        let Some(rel) = memchr::memchr(b'\n', &buf[self.next_index..]) else {
            self.next_index = buf.len();
            if self.header_bytes + buf.len() > MAX_HEADER_BYTES {
                // The rest of the line is dropped as it arrives, then the stream resynchronises
                // after it, just as when the whole line arrives at once.
                buf.clear();
                let refused = self.refuse(DecodeError::HeaderTooLarge { limit: MAX_HEADER_BYTES });
                self.state = State::SkipLine;
                return Some(Some(refused));
            }
            if !eof {
                return None;
            }
            if self.header_bytes == 0 && buf.iter().all(|&b| is_ws(b)) {
                buf.clear();
                self.next_index = 0;
                return None;
            }
            return Some(Some(self.truncated(buf)));
        };
        let nl = self.next_index + rel;
        self.next_index = 0;
        let consumed = nl + 1;
        self.header_bytes += consumed;
        let line = &buf[..nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if self.header_bytes > MAX_HEADER_BYTES {
            buf.advance(consumed);
            return Some(Some(
                self.refuse(DecodeError::HeaderTooLarge { limit: MAX_HEADER_BYTES }),
            ));
        }
        if line.is_empty() {
            buf.advance(consumed);
            if self.header_bytes == consumed {
                // An empty line before any header: between messages, skipped.
                self.header_bytes = 0;
                return Some(None);
            }
            return Some(self.end_of_block());
        }
        let parsed = parse_header(line);
        if let Err(e) = parsed {
            // Only the line's first byte is dropped: a message's next header block may start
            // later on this very line (a body shorter than declared runs into it), and resync
            // must be able to find it there.
            buf.advance(1);
            return Some(Some(self.refuse(e)));
        }
        buf.advance(consumed);
        match parsed {
            Err(_) => unreachable!("handled above"),
            Ok(None) => Some(None),
            Ok(Some(_)) if self.length.is_some() => {
                Some(Some(self.refuse(DecodeError::DuplicateContentLength)))
            }
            Ok(Some(n)) => {
                self.length = Some(n);
                Some(None)
            }
        }
    }

    /// The block's empty line arrived: the body follows, or the message is refused.
    fn end_of_block(&mut self) -> Option<BodySplit> {
        let length = self.length.take();
        self.header_bytes = 0;
        match length {
            None => Some(self.refuse(DecodeError::MissingContentLength)),
            Some(n) if n > self.max_frame_bytes as u64 => {
                self.state = State::Discard(n);
                Some(BodySplit::Refused(DecodeError::FrameTooLarge { limit: self.max_frame_bytes }))
            }
            Some(n) => {
                // At most `max_frame_bytes`, which is a `usize`.
                self.state = State::Body(n as usize);
                None
            }
        }
    }

    /// Reports a malformed block and starts resynchronising.
    #[cold]
    fn refuse(&mut self, e: DecodeError) -> BodySplit {
        self.state = State::Resync;
        self.header_bytes = 0;
        self.length = None;
        self.next_index = 0;
        BodySplit::Refused(e)
    }

    /// End of input inside a message: drops what is left and starts afresh.
    #[cold]
    fn truncated(&mut self, buf: &mut BytesMut) -> BodySplit {
        buf.clear();
        *self = Self::new(self.max_frame_bytes);
        BodySplit::Refused(DecodeError::Truncated)
    }
}

/// Parses one header line (its line ending removed): `Ok(Some(n))` for a `Content-Length`,
/// `Ok(None)` for any other well-formed header.
fn parse_header(line: &[u8]) -> Result<Option<u64>, DecodeError> {
    let colon = memchr::memchr(b':', line).ok_or(DecodeError::MalformedHeader)?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    // HTTP (RFC 9110 5.1): a field name is a token, with no whitespace before the colon.
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) || value.contains(&b'\r') {
        return Err(DecodeError::MalformedHeader);
    }
    if !name.eq_ignore_ascii_case(NAME) {
        return Ok(None);
    }
    let value = value.trim_ascii();
    if value.is_empty() || value.len() > MAX_LENGTH_DIGITS || !value.iter().all(u8::is_ascii_digit)
    {
        return Err(DecodeError::InvalidContentLength);
    }
    Ok(Some(value.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'))))
}

/// A character allowed in an HTTP token (RFC 9110 5.6.2).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Drops bytes up to the next `Content-Length` (any case). Returns whether one now starts the
/// buffer; when not, at most a partial match of the name is kept.
fn resync(buf: &mut BytesMut) -> bool {
    let mut from = 0;
    while let Some(rel) = memchr::memchr2(b'C', b'c', &buf[from..]) {
        let at = from + rel;
        let n = (buf.len() - at).min(NAME.len());
        if buf[at..at + n].eq_ignore_ascii_case(&NAME[..n]) {
            buf.advance(at);
            return n == NAME.len();
        }
        from = at + 1;
    }
    buf.clear();
    false
}

/// Appends `Content-Length: N\r\n\r\n` and the message. The length is known only once the
/// message is written, so the header is written after it and the two swapped in place: one move
/// of the message's bytes, no allocation.
///
/// # Errors
///
/// When a payload cannot be serialised; `dst` is then left as it was.
pub(crate) fn write_message<P: Payload>(
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

/// Appends a frame's bytes exactly as received, after their header. An empty frame (one refused
/// before its bytes were kept) writes nothing.
pub(crate) fn write_frame(bytes: &[u8], dst: &mut BytesMut) {
    if !bytes.is_empty() {
        dst.reserve(bytes.len() + 32);
        put_header(dst, bytes.len());
        dst.extend_from_slice(bytes);
    }
}

fn put_header(dst: &mut BytesMut, len: usize) {
    dst.put_slice(b"Content-Length: ");
    dst.put_slice(itoa::Buffer::new().format(len).as_bytes());
    dst.put_slice(b"\r\n\r\n");
}

#[cfg(test)]
mod tests;
