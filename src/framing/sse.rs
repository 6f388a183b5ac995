//! Server-Sent Events, parsed as the WHATWG HTML standard's EventSource parses them ("Parsing an
//! event stream"), with each event's data one JSON-RPC message.
//!
//! - **Lines** end at LF, CRLF or a lone CR. A CR that ends a read may be half of a CRLF: an LF
//!   first in the next read is taken as its second half, not as an empty line.
//! - A UTF-8 byte order mark at the very start of the stream is dropped (only there).
//! - **Fields**: `name: value`, one leading space of the value dropped; a line without a colon is
//!   a field with an empty value; a line starting with `:` is a comment. `data` appends its value
//!   (several `data` lines join with `\n`), `event` sets the event's type (`message` when absent
//!   or empty), `id` sets the last event id, which carries over to later events (an `id` whose
//!   value holds a NUL is ignored), `retry` sets the reconnection time when its value is all ASCII
//!   digits (ignored otherwise, or past `u64`). Other fields are ignored.
//! - **An empty line dispatches the event.** An event whose data is empty (no `data` line, or one
//!   `data:` with nothing after it) is not dispatched: that is the priming event an MCP server
//!   sends to hand the client an id to resume from, and its id is still recorded.
//! - **Zero copy for one-line data.** When an event's data is one line and nothing but its end
//!   follows that line, the data is returned where it lies in the read buffer
//!   ([`EventData::InPlace`]), so the codec parses and keeps it exactly as it does an NDJSON line.
//!   Otherwise (several `data` lines, or another field after the data) the values are copied and
//!   joined into a buffer of their own ([`EventData::Joined`]): one allocation and one copy, and
//!   the parser copies that buffer once more to its padded scratch, as for any frame with no
//!   room after it.
//! - **Bounds.** An event's data (joined, `\n`s included) may hold up to the frame limit, and no
//!   line may be longer than the limit plus [`LINE_SLACK`] bytes (room for `data: `), so nothing is
//!   held without bound. Past either, the event is reported once as [`EventData::TooLarge`] and
//!   the rest of it is dropped as it arrives, up to the empty line that ends it (its `id`, if any
//!   follows, is dropped with it). An over-long comment is dropped silently.
//! - **End of input**: an event not yet ended by an empty line is dropped, as the standard says.
//! - Event data that is not UTF-8 is refused by the message parser (-32700), not repaired with
//!   U+FFFD as a browser would: a JSON-RPC message must be UTF-8. Event types and ids are decoded
//!   with replacement, as the standard says.
//! - **The writer**, [`Outgoing::write_sse`], puts one message in one event: `event: message`, an
//!   optional `id`, the message on one `data` line.

use std::sync::Arc;

use bytes::{Buf, BufMut, BytesMut};

use crate::error::Error;
use crate::message::encode::{Outgoing, Payload};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How much longer than the frame limit a line may be: `data: ` before a value of the limit's
/// length.
pub const LINE_SLACK: usize = 6;

/// Where an event's data lies.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventData {
    /// One line of data at `buf[start..end]` (whitespace and a byte order mark around it
    /// excluded). The event, its empty line included, is `buf[..consumed]`; the caller removes it
    /// (`start <= end <= consumed <= buf.len()`).
    InPlace {
        /// First byte of the data's JSON value.
        start: usize,
        /// One past its last byte.
        end: usize,
        /// Bytes the event occupies in the buffer.
        consumed: usize,
    },
    /// Several lines of data, joined with `\n` into a buffer of their own. The event is already
    /// gone from the read buffer.
    Joined(BytesMut),
    /// The event's data or one of its lines was over the limit. Reported once; the rest of the
    /// event is dropped as it arrives.
    TooLarge,
}

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseSplit {
    /// The event's type: its `event` field, or `message`.
    pub event: Arc<str>,
    /// The last event id: set by this event's `id` field or carried over from an earlier event;
    /// empty when none was given.
    pub last_event_id: Arc<str>,
    /// The reconnection time in milliseconds, from the last valid `retry` field so far.
    pub retry: Option<u64>,
    /// The event's data.
    pub data: EventData,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Data {
    None,
    /// One data line, still in the buffer: its value is `buf[start..end]`, and `buf[..scan]` is
    /// that line with its ending.
    Kept {
        start: usize,
        end: usize,
    },
    Joined(BytesMut),
}

/// The SSE parser's state: the event being built, and the stream-wide last event id and
/// reconnection time.
///
/// # Examples
///
/// ```
/// use bytes::BytesMut;
/// use mcpwire::framing::sse::{EventData, SseFramer};
///
/// let mut framer = SseFramer::new(1024);
/// let mut buf = BytesMut::from(&b": hello\r\nevent: message\r\nid: 7\r\ndata: {\"a\":1}\r\n\r\n"[..]);
/// let ev = framer.next(&mut buf, false).unwrap();
/// assert_eq!((&*ev.event, &*ev.last_event_id), ("message", "7"));
/// assert_eq!(ev.data, EventData::InPlace { start: 6, end: 13, consumed: 17 });
/// assert_eq!(&buf[6..13], b"{\"a\":1}");
/// ```
#[derive(Clone, Debug)]
pub struct SseFramer {
    /// Start of the next line not yet read; bytes before it are a kept data line.
    scan: usize,
    /// Bytes from `scan` already searched for a line ending without finding one.
    searched: usize,
    /// The last line ended with a CR that ended the buffer: an LF next is part of that ending.
    pending_lf: bool,
    /// Nothing of the stream has been read yet (a byte order mark may come).
    at_start: bool,
    /// The current line grew past the bound: its bytes are dropped up to its end.
    skipping_line: bool,
    /// The current event was refused: its lines are dropped up to the empty line.
    discarding_event: bool,
    data: Data,
    /// Length of the event's data so far, `\n`s between lines included.
    data_len: usize,
    event_type: Option<Arc<str>>,
    last_event_id: Arc<str>,
    retry: Option<u64>,
    /// `message`, the default type, and the last other type seen: reused, so a stream of
    /// events of one type allocates no names.
    message: Arc<str>,
    type_cache: Arc<str>,
    max_data_bytes: usize,
}

impl SseFramer {
    /// A parser that refuses events whose data is longer than `max_data_bytes`.
    #[must_use]
    pub fn new(max_data_bytes: usize) -> Self {
        let message: Arc<str> = Arc::from("message");
        Self {
            scan: 0,
            searched: 0,
            pending_lf: false,
            at_start: true,
            skipping_line: false,
            discarding_event: false,
            data: Data::None,
            data_len: 0,
            event_type: None,
            last_event_id: Arc::from(""),
            retry: None,
            type_cache: message.clone(),
            message,
            max_data_bytes,
        }
    }

    /// The last event id so far (empty when none), for a `Last-Event-ID` header on reconnection.
    #[must_use]
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time in milliseconds from the last valid `retry` field, if any.
    #[must_use]
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Reads lines up to the next event to dispatch, removing what it has read from the front of
    /// `buf` (except a one-line event's data, returned in place).
    ///
    /// Returns `None` when `buf` holds no complete event yet. With `eof` set, an event not ended
    /// by an empty line is dropped. A returned [`EventData::InPlace`] is still in `buf`: the
    /// caller removes `consumed` bytes before calling again.
    pub fn next(&mut self, buf: &mut BytesMut, eof: bool) -> Option<SseSplit> {
        loop {
            if self.at_start {
                if buf.len() < BOM.len() && BOM.starts_with(&buf[..]) && !eof {
                    return None;
                }
                if buf.starts_with(BOM) {
                    buf.advance(BOM.len());
                }
                self.at_start = false;
            }
            if self.pending_lf && buf.len() > self.scan {
                self.pending_lf = false;
                if buf[self.scan] == b'\n' {
                    self.consume_to(buf, self.scan + 1);
                }
            }
            if let Data::Kept { start, end } = self.data
                && buf.len() > self.scan
                && !matches!(buf[self.scan], b'\n' | b'\r')
            {
                // Another line follows the data line: the data can no longer be returned where
                // it lies once that line is read, so it moves to a buffer of its own.
                let mut joined = BytesMut::with_capacity(end - start + 64);
                joined.put_slice(&buf[start..end]);
                buf.advance(self.scan);
                self.scan = 0;
                self.data = Data::Joined(joined);
            }
            let from = self.scan + self.searched;
            let Some(rel) = memchr::memchr2(b'\n', b'\r', &buf[from..]) else {
                return self.unterminated(buf, eof);
            };
            let at = from + rel;
            let mut next = at + 1;
            if buf[at] == b'\r' {
                match buf.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.pending_lf = true,
                }
            }
            self.searched = 0;
            let skipped = std::mem::take(&mut self.skipping_line);
            let (start, end) = (self.scan, at);
            if start == end && !skipped {
                if std::mem::take(&mut self.discarding_event) {
                    self.consume_to(buf, next);
                    continue;
                }
                if let Some(split) = self.dispatch(buf, next) {
                    return Some(split);
                }
                continue;
            }
            if skipped || self.discarding_event {
                self.consume_to(buf, next);
                continue;
            }
            if let Some(split) = self.field(buf, start, end, next) {
                return Some(split);
            }
        }
    }

    /// No line ending in what is buffered: waits, drops an over-long line's bytes, or at end of
    /// input drops the unfinished event.
    fn unterminated(&mut self, buf: &mut BytesMut, eof: bool) -> Option<SseSplit> {
        if eof {
            buf.clear();
            self.scan = 0;
            self.searched = 0;
            self.skipping_line = false;
            self.discarding_event = false;
            self.reset_event();
            return None;
        }
        // In the kept state every byte after the data line is a line ending, so an unfinished
        // line is only ever at the front of the buffer.
        self.searched = buf.len() - self.scan;
        if self.skipping_line {
            buf.clear();
            self.searched = 0;
            return None;
        }
        if self.searched <= self.max_data_bytes + LINE_SLACK {
            return None;
        }
        debug_assert_eq!(self.scan, 0);
        let comment = buf[0] == b':';
        buf.clear();
        self.searched = 0;
        self.skipping_line = true;
        if comment || self.discarding_event {
            return None;
        }
        Some(self.refuse())
    }

    /// Reads one field line `buf[start..end]`; the next line starts at `next`.
    fn field(
        &mut self,
        buf: &mut BytesMut,
        start: usize,
        end: usize,
        next: usize,
    ) -> Option<SseSplit> {
        let line = &buf[start..end];
        let (name, value_at) = match memchr::memchr(b':', line) {
            Some(0) => {
                self.consume_to(buf, next);
                return None;
            }
            Some(colon) => {
                let space = usize::from(line.get(colon + 1) == Some(&b' '));
                (&line[..colon], start + colon + 1 + space)
            }
            None => (line, end),
        };
        let value = &buf[value_at..end];
        if end - start > self.max_data_bytes + LINE_SLACK {
            buf.advance(next);
            self.scan = 0;
            return Some(self.refuse());
        }
        match name {
            b"data" => {
                let joiner = usize::from(self.data != Data::None);
                let len = self.data_len + joiner + value.len();
                if len > self.max_data_bytes {
                    buf.advance(next);
                    self.scan = 0;
                    return Some(self.refuse());
                }
                self.data_len = len;
                match &mut self.data {
                    Data::None => {
                        self.data = Data::Kept { start: value_at, end };
                        self.scan = next;
                        return None;
                    }
                    Data::Joined(joined) => {
                        joined.put_u8(b'\n');
                        joined.extend_from_slice(value);
                    }
                    Data::Kept { .. } => unreachable!("a kept data line is moved before the next"),
                }
            }
            b"event" if value.is_empty() => self.event_type = None,
            b"event" => self.event_type = Some(intern(&mut self.type_cache, value)),
            // "If the field value does not contain U+0000 NULL, then set the last event ID
            // buffer to the field value. Otherwise, ignore the field."
            b"id" if !value.contains(&0) && *self.last_event_id.as_bytes() != *value => {
                self.last_event_id = Arc::from(String::from_utf8_lossy(value));
            }
            // "If the field value consists of only ASCII digits, then interpret the field value
            // as an integer in base ten, and set the event stream's reconnection time to that
            // integer. Otherwise, ignore the field."
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let n = value
                    .iter()
                    .try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')));
                if n.is_some() {
                    self.retry = n;
                }
            }
            _ => {}
        }
        self.consume_to(buf, next);
        None
    }

    /// The empty line ending an event, at `buf[scan..next]`.
    fn dispatch(&mut self, buf: &mut BytesMut, next: usize) -> Option<SseSplit> {
        let data = std::mem::replace(&mut self.data, Data::None);
        let event = self.event_type.take().unwrap_or_else(|| self.message.clone());
        self.data_len = 0;
        let data = match data {
            Data::Kept { start, end } if start < end => {
                self.scan = 0;
                let value = &buf[start..end];
                let bom = if value.starts_with(BOM) { BOM.len() } else { 0 };
                let first =
                    value[bom..].iter().position(|&b| !is_ws(b)).map_or(end, |i| start + bom + i);
                let last = value.iter().rposition(|&b| !is_ws(b)).map_or(first, |i| start + i + 1);
                EventData::InPlace { start: first, end: last.max(first), consumed: next }
            }
            Data::Joined(joined) if !joined.is_empty() => {
                self.consume_to(buf, next);
                EventData::Joined(joined)
            }
            // "If the data buffer is an empty string, set the data buffer and the event type
            // buffer to the empty string and return." (And the priming event's one empty line,
            // whether other fields come before it or after.)
            Data::None | Data::Kept { .. } | Data::Joined(_) => {
                self.consume_to(buf, next);
                return None;
            }
        };
        Some(self.split(event, data))
    }

    /// Refuses the event being built: reported once, the rest dropped up to its empty line.
    #[cold]
    fn refuse(&mut self) -> SseSplit {
        let event = self.event_type.take().unwrap_or_else(|| self.message.clone());
        self.reset_event();
        self.discarding_event = true;
        self.split(event, EventData::TooLarge)
    }

    fn split(&self, event: Arc<str>, data: EventData) -> SseSplit {
        SseSplit { event, last_event_id: self.last_event_id.clone(), retry: self.retry, data }
    }

    fn reset_event(&mut self) {
        self.data = Data::None;
        self.data_len = 0;
        self.event_type = None;
    }

    /// Marks `buf[..upto]` read: kept when it holds the event's data line, removed otherwise.
    fn consume_to(&mut self, buf: &mut BytesMut, upto: usize) {
        if matches!(self.data, Data::Kept { .. }) {
            self.scan = upto;
        } else {
            buf.advance(upto);
            self.scan = 0;
        }
    }
}

/// JSON whitespace that can occur inside one line.
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t')
}

/// The cached name when `value` is the same, a new one (kept as the cache) otherwise.
fn intern(cache: &mut Arc<str>, value: &[u8]) -> Arc<str> {
    if *cache.as_bytes() != *value {
        *cache = Arc::from(String::from_utf8_lossy(value));
    }
    cache.clone()
}

impl<P: Payload> Outgoing<'_, P> {
    /// Appends the message as one Server-Sent Event: `event: message`, then `id: <id>` when
    /// given, then `data: <the message on one line>`, then an empty line.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSseId`] when `id` holds a CR, an LF (either would end the line early) or
    /// a NUL (a client ignores such an id); otherwise when a payload cannot be serialised. `dst`
    /// is then left as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use mcpwire::{Id, Outgoing, RawJson};
    ///
    /// let mut out = BytesMut::new();
    /// Outgoing::Result { id: Id::Num(1), result: RawJson::new("{\n}") }
    ///     .write_sse(Some("s1-7"), &mut out)
    ///     .unwrap();
    /// assert_eq!(&out[..], &b"event: message\nid: s1-7\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{ }}\n\n"[..]);
    /// ```
    pub fn write_sse(&self, id: Option<&str>, dst: &mut BytesMut) -> Result<(), Error> {
        if id.is_some_and(|id| id.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0))) {
            return Err(Error::InvalidSseId);
        }
        let mark = dst.len();
        dst.put_slice(b"event: message\n");
        if let Some(id) = id {
            dst.put_slice(b"id: ");
            dst.put_slice(id.as_bytes());
            dst.put_u8(b'\n');
        }
        dst.put_slice(b"data: ");
        if let Err(e) = self.write_value(dst) {
            dst.truncate(mark);
            return Err(e);
        }
        dst.put_slice(b"\n\n");
        Ok(())
    }
}
