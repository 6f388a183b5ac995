//! Newline-delimited JSON, as MCP's stdio transport frames messages.
//!
//! - Frames end at `\n` only. JSON forbids raw control characters inside strings and U+2028 /
//!   U+2029 are multi-byte in UTF-8, so neither can end a frame early.
//! - One `\r` before the `\n` is dropped, so CRLF peers work.
//! - Lines holding only JSON whitespace (space, tab, `\r`) are skipped; a frame's body excludes
//!   the whitespace around it.
//! - A UTF-8 byte order mark at the start of a line is dropped. RFC 8259 lets a parser ignore
//!   one; writers that prefix every chunk of output with it exist, and refusing would lose a
//!   valid message.
//! - At end of input, bytes after the last `\n` form a final frame.
//! - A line longer than the limit (not counting its line ending) is never buffered whole: the
//!   splitter reports it once as [`Split::TooLarge`], discards its bytes as they arrive up to the
//!   next `\n`, then carries on with the next frame.
//! - **One pass over each byte** finds the line's end and whether the line holds a backslash
//!   (`memchr2` for both until the first backslash, then `memchr` for the newline alone), and
//!   both are remembered across partial reads. A frame without a backslash can be parsed where it
//!   lies (simd-json rewrites only strings with escapes), and the parser need not look again.
//! - The writer (`write_frame`, and [`Outgoing::write`]) puts each message on one line and ends
//!   it with `\n`.

use bytes::{Buf, BufMut, BytesMut};

use crate::error::Error;
use crate::message::encode::{Outgoing, Payload, write_one_line};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// JSON whitespace other than `\n`, which ends the line.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

/// Where the next frame lies in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// A frame whose body is `buf[start..end]`. The line, with its ending, is `buf[..consumed]`;
    /// the caller removes it (`start <= end <= consumed <= buf.len()`).
    Frame {
        /// First byte of the body: after a byte order mark and leading whitespace.
        start: usize,
        /// One past the last byte of the body: before trailing whitespace and the line ending.
        end: usize,
        /// Bytes the line occupies, its line ending included.
        consumed: usize,
        /// Whether the line holds a backslash (found by the same scan that found its end).
        backslash: bool,
    },
    /// A line longer than the limit. Its bytes are already gone from the buffer, or will be
    /// discarded as they arrive; it is reported once.
    TooLarge,
}

/// The NDJSON splitter's state: where the newline search stopped, whether the bytes searched hold
/// a backslash, and whether it is discarding the rest of an over-long line.
///
/// # Examples
///
/// ```
/// use bytes::BytesMut;
/// use mcpwire::framing::{NdjsonFramer, Split};
///
/// let mut framer = NdjsonFramer::new(1024);
/// let mut buf = BytesMut::from(&b"\r\n{\"a\":1}\r\n{\"b\""[..]);
/// assert_eq!(
///     framer.next(&mut buf, false),
///     Some(Split::Frame { start: 0, end: 7, consumed: 9, backslash: false })
/// );
/// ```
#[derive(Clone, Debug)]
pub struct NdjsonFramer {
    /// Bytes of `buf` already searched for `\n` without finding one.
    next_index: usize,
    /// `buf[..next_index]` holds a backslash: only the newline is still looked for.
    backslash: bool,
    /// Dropping bytes up to the next `\n` after an over-long line.
    discarding: bool,
    max_frame_bytes: usize,
}

impl NdjsonFramer {
    /// A splitter that refuses lines longer than `max_frame_bytes` (line ending excluded).
    #[must_use]
    pub fn new(max_frame_bytes: usize) -> Self {
        Self { next_index: 0, backslash: false, discarding: false, max_frame_bytes }
    }

    /// Whether the splitter is dropping the rest of an over-long line.
    #[must_use]
    pub fn is_discarding(&self) -> bool {
        self.discarding
    }

    /// Finds the next frame in `buf`, dropping blank lines and discarded bytes from its front.
    ///
    /// Returns `None` when `buf` holds no complete frame yet; with `eof` set, bytes after the last
    /// newline count as a final frame. A returned [`Split::Frame`] is still in `buf`: the caller
    /// advances past `consumed` bytes before calling again.
    pub fn next(&mut self, buf: &mut BytesMut, eof: bool) -> Option<Split> {
        loop {
            if self.discarding {
                match memchr::memchr(b'\n', buf) {
                    Some(nl) => {
                        buf.advance(nl + 1);
                        self.discarding = false;
                        self.next_index = 0;
                        self.backslash = false;
                    }
                    None => {
                        buf.clear();
                        return None;
                    }
                }
            }
            let found = self.scan(buf);
            // The line ends here (or is refused, or skipped): the next search starts afresh.
            let backslash = self.backslash;
            let (line_end, consumed) = match found {
                Some(nl) => {
                    self.next_index = 0;
                    self.backslash = false;
                    (nl, nl + 1)
                }
                None => {
                    if self.unterminated_too_long(buf) {
                        self.next_index = 0;
                        self.backslash = false;
                        self.discarding = true;
                        buf.clear();
                        return Some(Split::TooLarge);
                    }
                    if !eof || buf.is_empty() {
                        return None;
                    }
                    self.next_index = 0;
                    self.backslash = false;
                    (buf.len(), buf.len())
                }
            };
            let end =
                if line_end > 0 && buf[line_end - 1] == b'\r' { line_end - 1 } else { line_end };
            if end > self.max_frame_bytes {
                buf.advance(consumed);
                return Some(Split::TooLarge);
            }
            let body = &buf[..end];
            let bom = if body.starts_with(BOM) { BOM.len() } else { 0 };
            match body[bom..].iter().position(|&b| !is_blank(b)) {
                Some(first) => {
                    // A non-blank byte exists, so `rposition` finds one at or after `first`.
                    let last = body.iter().rposition(|&b| !is_blank(b)).unwrap_or(end - 1);
                    return Some(Split::Frame {
                        start: bom + first,
                        end: last + 1,
                        consumed,
                        backslash,
                    });
                }
                None => buf.advance(consumed),
            }
        }
    }

    /// Finds the line's `\n` from where the last search stopped, noting a backslash before it in
    /// the same pass. `None`: no newline in `buf` yet (all of it is searched, and remembered so).
    #[inline]
    fn scan(&mut self, buf: &[u8]) -> Option<usize> {
        let mut from = self.next_index;
        if !self.backslash {
            match memchr::memchr2(b'\n', b'\\', &buf[from..]) {
                Some(rel) if buf[from + rel] == b'\n' => return Some(from + rel),
                Some(rel) => {
                    // One backslash is all the parser needs to know: the rest of the line is
                    // searched for its end alone, at memchr's full speed.
                    self.backslash = true;
                    from += rel + 1;
                }
                None => {
                    self.next_index = buf.len();
                    return None;
                }
            }
        }
        match memchr::memchr(b'\n', &buf[from..]) {
            Some(rel) => Some(from + rel),
            None => {
                self.next_index = buf.len();
                None
            }
        }
    }

    /// Whether a buffered line without its `\n` is already known to exceed the limit. A line of
    /// exactly `max + 1` bytes ending in `\r` may still be a `max`-byte body followed by CRLF.
    fn unterminated_too_long(&self, buf: &BytesMut) -> bool {
        let max = self.max_frame_bytes;
        buf.len() > max + 1 || (buf.len() == max + 1 && buf[max] != b'\r')
    }
}

impl<P: Payload> Outgoing<'_, P> {
    /// Appends the message and its `\n` to `dst`: one NDJSON frame.
    ///
    /// # Errors
    ///
    /// When a payload cannot be serialised; `dst` is then left as it was.
    pub fn write(&self, dst: &mut BytesMut) -> Result<(), Error> {
        self.write_value(dst)?;
        dst.put_u8(b'\n');
        Ok(())
    }
}

/// Appends a frame's bytes as one line, as a proxy forwards it: exactly as received, except that
/// raw line breaks (JSON whitespace, present only in a pretty-printed body that arrived in
/// another framing) become spaces so the frame stays one line. An empty frame (one refused
/// before its bytes were kept) writes nothing.
pub(crate) fn write_frame(bytes: &[u8], dst: &mut BytesMut) {
    if !bytes.is_empty() {
        dst.reserve(bytes.len() + 1);
        write_one_line(dst, bytes);
        dst.put_u8(b'\n');
    }
}

#[cfg(test)]
mod tests;
