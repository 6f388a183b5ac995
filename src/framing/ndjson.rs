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
mod tests {
    use super::*;

    fn split_all(input: &[u8], max: usize) -> Vec<Result<Vec<u8>, ()>> {
        let mut framer = NdjsonFramer::new(max);
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(s) = framer.next(&mut buf, true) {
            match s {
                Split::Frame { start, end, consumed, backslash } => {
                    assert_eq!(backslash, buf[start..end].contains(&b'\\'));
                    out.push(Ok(buf[start..end].to_vec()));
                    buf.advance(consumed);
                }
                Split::TooLarge => out.push(Err(())),
            }
        }
        assert!(buf.is_empty());
        out
    }

    #[test]
    fn crlf_blank_lines_and_final_frame_without_newline() {
        let got = split_all(b"a\r\n\n  \r\n\t\nb\n\r\nc", 16);
        assert_eq!(got, vec![Ok(b"a".to_vec()), Ok(b"b".to_vec()), Ok(b"c".to_vec())]);
    }

    #[test]
    fn lone_cr_is_not_a_line_ending() {
        assert_eq!(split_all(b"a\rb\n", 16), vec![Ok(b"a\rb".to_vec())]);
    }

    #[test]
    fn bom_is_dropped_on_any_line() {
        let got = split_all(b"\xEF\xBB\xBF{}\n\xEF\xBB\xBF {}\n\xEF\xBB\n", 16);
        assert_eq!(got, vec![Ok(b"{}".to_vec()), Ok(b"{}".to_vec()), Ok(b"\xEF\xBB".to_vec())]);
    }

    #[test]
    fn line_at_limit_passes_and_one_past_is_too_large() {
        let got = split_all(b"abcd\nabcde\nabcd\r\nabcd\r\r\nok\n", 4);
        assert_eq!(
            got,
            vec![Ok(b"abcd".to_vec()), Err(()), Ok(b"abcd".to_vec()), Err(()), Ok(b"ok".to_vec())]
        );
    }

    #[test]
    fn over_long_line_is_reported_once_while_its_bytes_arrive() {
        let mut framer = NdjsonFramer::new(4);
        let mut buf = BytesMut::from(&b"abcdef"[..]);
        assert_eq!(framer.next(&mut buf, false), Some(Split::TooLarge));
        assert!(buf.is_empty() && framer.is_discarding());
        buf.extend_from_slice(b"ghijkl");
        assert_eq!(framer.next(&mut buf, false), None);
        assert!(buf.is_empty(), "discarded bytes are not kept");
        buf.extend_from_slice(b"mn\n{}\n");
        assert_eq!(
            framer.next(&mut buf, false),
            Some(Split::Frame { start: 0, end: 2, consumed: 3, backslash: false })
        );
    }

    #[test]
    fn unterminated_line_of_max_plus_cr_waits_for_its_newline() {
        let mut framer = NdjsonFramer::new(4);
        let mut buf = BytesMut::from(&b"abcd\r"[..]);
        assert_eq!(framer.next(&mut buf, false), None);
        buf.extend_from_slice(b"\n");
        assert_eq!(
            framer.next(&mut buf, false),
            Some(Split::Frame { start: 0, end: 4, consumed: 6, backslash: false })
        );
    }

    #[test]
    fn partial_reads_resume_the_search_where_it_stopped() {
        let mut framer = NdjsonFramer::new(64);
        let mut buf = BytesMut::new();
        for &b in b"{\"a\":1}" {
            buf.extend_from_slice(&[b]);
            assert_eq!(framer.next(&mut buf, false), None);
            assert_eq!(framer.next_index, buf.len());
        }
        buf.extend_from_slice(b"\n");
        assert_eq!(
            framer.next(&mut buf, false),
            Some(Split::Frame { start: 0, end: 7, consumed: 8, backslash: false })
        );
    }

    type Got = Vec<Option<(Vec<u8>, bool)>>;

    /// Bodies and backslash flags (`None` for a line too large) of `input` fed in `chunks`, end
    /// of input after the last.
    fn split_chunks(chunks: &[&[u8]], max: usize) -> Got {
        let mut framer = NdjsonFramer::new(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            buf.extend_from_slice(chunk);
            let eof = i + 1 == chunks.len();
            while let Some(s) = framer.next(&mut buf, eof) {
                match s {
                    Split::Frame { start, end, consumed, backslash } => {
                        out.push(Some((buf[start..end].to_vec(), backslash)));
                        buf.advance(consumed);
                    }
                    Split::TooLarge => out.push(None),
                }
            }
        }
        out
    }

    /// A naive oracle: every line split whole, its backslash looked for on its own.
    fn reference(input: &[u8], max: usize) -> Got {
        let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
        if lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        let mut out = Vec::new();
        for line in lines {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.len() > max {
                out.push(None);
                continue;
            }
            let body = line.strip_prefix(BOM).unwrap_or(line);
            let Some(first) = body.iter().position(|&b| !is_blank(b)) else { continue };
            let last = body.iter().rposition(|&b| !is_blank(b)).expect("a non-blank byte");
            let body = &body[first..=last];
            out.push(Some((body.to_vec(), body.contains(&b'\\'))));
        }
        out
    }

    const ESCAPES: &[&[u8]] = &[
        b"{\"a\":\"x\\\"y\"}\n{\"b\":1}\r\n\\\n  \n\xEF\xBB\xBF{\"c\":\"\\\\\"}\n\"tail\\",
        b"\\{}\n{}\\\n{}\n\\\\\\\n\n{\"no\":1}",
        b"0123456789abcdef\\xyz\n{\"after\":1}\n0123\\456789abcdef0\r\n{}\n",
        b"{\"plain\":true}\n",
    ];

    #[test]
    fn input_cut_at_every_byte_gives_the_frames_and_flags_of_whole_input() {
        for input in ESCAPES {
            let want = reference(input, 16);
            assert_eq!(split_chunks(&[input], 16), want, "whole {:?}", input.escape_ascii());
            for cut in 0..=input.len() {
                let (a, b) = input.split_at(cut);
                assert_eq!(
                    split_chunks(&[a, b], 16),
                    want,
                    "cut at {cut}: {:?}",
                    input.escape_ascii()
                );
            }
            let bytes: Vec<&[u8]> = input.chunks(1).collect();
            assert_eq!(split_chunks(&bytes, 16), want, "bytewise {:?}", input.escape_ascii());
        }
    }

    #[test]
    fn a_backslash_is_noted_once_and_the_search_resumes_past_it() {
        let mut framer = NdjsonFramer::new(64);
        let mut buf = BytesMut::from(&b"{\"a\":\"\\n"[..]);
        assert_eq!(framer.next(&mut buf, false), None);
        assert!(framer.backslash);
        assert_eq!(framer.next_index, buf.len());
        buf.extend_from_slice(b"\"}\n{}\n");
        assert_eq!(
            framer.next(&mut buf, false),
            Some(Split::Frame { start: 0, end: 10, consumed: 11, backslash: true })
        );
        buf.advance(11);
        // The next line starts afresh: no backslash carried over.
        assert_eq!(
            framer.next(&mut buf, false),
            Some(Split::Frame { start: 0, end: 2, consumed: 3, backslash: false })
        );
    }
}
