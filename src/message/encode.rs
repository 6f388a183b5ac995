//! Writers: requests, notifications, results, error responses and pre-serialised messages,
//! straight into a [`BytesMut`], one line each.
//!
//! A frame never holds a raw line break: strings are escaped, serde_json's compact output has
//! none, and raw JSON has its `\n` and `\r` turned into spaces (in valid JSON they can only be
//! whitespace between tokens, so the value is unchanged).

use std::fmt::{self, Write as _};

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use super::escape::escape;
use super::{Id, Message, RawJson};
use crate::error::{Error, ErrorCode};

/// A JSON value that can be written into a frame.
pub trait Payload {
    /// Appends the value's JSON text to `dst`, with no raw line break.
    ///
    /// # Errors
    ///
    /// When the value cannot be serialised; what was appended is then garbage the caller drops.
    fn write_json(&self, dst: &mut BytesMut) -> Result<(), Error>;
}

impl<T: Payload + ?Sized> Payload for &T {
    fn write_json(&self, dst: &mut BytesMut) -> Result<(), Error> {
        (**self).write_json(dst)
    }
}

impl Payload for RawJson<'_> {
    fn write_json(&self, dst: &mut BytesMut) -> Result<(), Error> {
        write_one_line(dst, self.get().as_bytes());
        Ok(())
    }
}

/// A payload serialised with serde as it is written, with no intermediate string.
///
/// # Examples
///
/// ```
/// use bytes::BytesMut;
/// use mcpwire::{Id, Json, Outgoing};
///
/// let mut out = BytesMut::new();
/// let params = serde_json::json!({"name": "echo"});
/// Outgoing::Request { id: Id::Num(1), method: "tools/call", params: Some(Json(&params)) }
///     .write(&mut out)
///     .unwrap();
/// assert_eq!(&out[..], &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}\n"[..]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Json<'a, T: ?Sized>(pub &'a T);

impl<T: Serialize + ?Sized> Payload for Json<'_, T> {
    fn write_json(&self, dst: &mut BytesMut) -> Result<(), Error> {
        // serde_json writes many short pieces; a `Vec`'s `io::Write` takes them far more cheaply
        // than `BytesMut` does (measured: about 1.7x on a 4 KiB escaped result), so serialise
        // into a per-thread scratch vector and append it once.
        SCRATCH.with(|cell| {
            // A `Serialize` impl that itself encodes a payload finds the scratch taken: it
            // writes straight into `dst` instead.
            let Ok(mut scratch) = cell.try_borrow_mut() else {
                return serde_json::to_writer(Appender(dst), self.0).map_err(Error::Serialize);
            };
            scratch.clear();
            let written = serde_json::to_writer(&mut *scratch, self.0).map_err(Error::Serialize);
            if written.is_ok() {
                dst.extend_from_slice(&scratch);
            }
            if scratch.capacity() > SCRATCH_KEEP {
                *scratch = Vec::new();
            }
            written
        })
    }
}

/// `io::Write` by plain appends, for the rare nested case.
struct Appender<'a>(&'a mut BytesMut);

impl std::io::Write for Appender<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Scratch vectors larger than this are freed after use rather than kept per thread.
const SCRATCH_KEEP: usize = 1 << 20;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A message to write.
#[derive(Clone, Copy, Debug)]
pub enum Outgoing<'a, P = RawJson<'a>> {
    /// A request: must be answered.
    Request {
        /// Its id, unique among the sender's requests in flight. Not `Id::Null`.
        id: Id<'a>,
        /// The method.
        method: &'a str,
        /// Params: an object or an array.
        params: Option<P>,
    },
    /// A notification: never answered.
    Notification {
        /// The method.
        method: &'a str,
        /// Params: an object or an array.
        params: Option<P>,
    },
    /// A success response.
    Result {
        /// The id of the request answered.
        id: Id<'a>,
        /// The result.
        result: P,
    },
    /// An error response.
    Error {
        /// The id of the request answered, or `Id::Null` when it could not be read.
        id: Id<'a>,
        /// The error code.
        code: ErrorCode,
        /// A short description.
        message: &'a str,
        /// Optional detail.
        data: Option<P>,
    },
    /// A whole message serialised elsewhere, written as is (raw line breaks become spaces).
    Raw(RawJson<'a>),
}

// The framings' writers (`write`, an NDJSON line; `write_sse`, an event) sit beside their
// decoders in `crate::framing`; this file writes the message itself.
impl<P: Payload> Outgoing<'_, P> {
    /// Appends the message without a line ending, as an element of a batch reply.
    ///
    /// # Errors
    ///
    /// When a payload cannot be serialised; `dst` is then left as it was.
    pub fn write_value(&self, dst: &mut BytesMut) -> Result<(), Error> {
        let mark = dst.len();
        let written = self.write_inner(dst);
        if written.is_err() {
            dst.truncate(mark);
        }
        written
    }

    fn write_inner(&self, dst: &mut BytesMut) -> Result<(), Error> {
        match self {
            // JSON-RPC discourages a null request id and MCP forbids it; the peer would refuse it.
            Self::Request { id: Id::Null, .. } => return Err(Error::NullRequestId),
            Self::Request { id, method, params } => {
                dst.put_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                write_id(dst, *id);
                dst.put_slice(b",\"method\":");
                write_str(dst, method);
                write_member(dst, b",\"params\":", params.as_ref())?;
            }
            Self::Notification { method, params } => {
                dst.put_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
                write_str(dst, method);
                write_member(dst, b",\"params\":", params.as_ref())?;
            }
            Self::Result { id, result } => {
                dst.put_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                write_id(dst, *id);
                write_member(dst, b",\"result\":", Some(result))?;
            }
            Self::Error { id, code, message, data } => {
                dst.put_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                write_id(dst, *id);
                dst.put_slice(b",\"error\":{\"code\":");
                write_int(dst, code.get());
                dst.put_slice(b",\"message\":");
                write_str(dst, message);
                write_member(dst, b",\"data\":", data.as_ref())?;
                dst.put_u8(b'}');
            }
            Self::Raw(raw) => {
                write_one_line(dst, raw.get().as_bytes());
                return Ok(());
            }
        }
        dst.put_u8(b'}');
        Ok(())
    }
}

fn write_member<P: Payload>(
    dst: &mut BytesMut,
    name: &[u8],
    value: Option<&P>,
) -> Result<(), Error> {
    if let Some(v) = value {
        dst.put_slice(name);
        v.write_json(dst)?;
    }
    Ok(())
}

fn write_int(dst: &mut BytesMut, n: i64) {
    dst.put_slice(itoa::Buffer::new().format(n).as_bytes());
}

fn write_id(dst: &mut BytesMut, id: Id<'_>) {
    match id {
        Id::Num(n) => write_int(dst, n),
        Id::Str(s) => write_str(dst, s),
        Id::Null => dst.put_slice(b"null"),
    }
}

/// What a raw line break inside a string becomes in [`write_one_line`]: a control character,
/// which JSON forbids in a string just as it forbids the line break.
pub(crate) const BREAK_IN_STRING: u8 = 0x1F;

/// Appends `bytes` on one line. A raw `\n` or `\r` between JSON tokens is whitespace and becomes
/// a space, which means the same. One inside a string (where JSON forbids it, so the text is not
/// valid JSON) becomes [`BREAK_IN_STRING`], forbidden there too: a space would quietly turn the
/// invalid text into a valid message.
pub(crate) fn write_one_line(dst: &mut BytesMut, bytes: &[u8]) {
    if memchr::memchr2(b'\n', b'\r', bytes).is_none() {
        dst.put_slice(bytes);
        return;
    }
    let (mut in_string, mut escaped, mut from) = (false, false, 0);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' || b == b'\r' {
            dst.put_slice(&bytes[from..i]);
            dst.put_u8(if in_string { BREAK_IN_STRING } else { b' ' });
            from = i + 1;
            escaped = false;
        } else if escaped {
            escaped = false;
        } else if b == b'"' {
            in_string = !in_string;
        } else if b == b'\\' && in_string {
            escaped = true;
        }
    }
    dst.put_slice(&bytes[from..]);
}

/// Appends `s` as a quoted JSON string.
pub(crate) fn write_str(dst: &mut BytesMut, s: &str) {
    dst.reserve(s.len() + 2);
    dst.put_u8(b'"');
    write_escaped(dst, s);
    dst.put_u8(b'"');
}

fn write_escaped(dst: &mut BytesMut, s: &str) {
    escape(s, |chunk| dst.put_slice(chunk.as_bytes()));
}

/// Formats straight into a JSON string's body, escaping as it goes.
struct Escaping<'a>(&'a mut BytesMut);

impl fmt::Write for Escaping<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_escaped(self.0, s);
        Ok(())
    }
}

/// A displayable value written as a JSON string with no intermediate allocation.
#[derive(Clone, Copy, Debug)]
pub struct Reason<'a, T: ?Sized>(pub &'a T);

impl<T: fmt::Display + ?Sized> Payload for Reason<'_, T> {
    fn write_json(&self, dst: &mut BytesMut) -> Result<(), Error> {
        dst.put_u8(b'"');
        write!(Escaping(dst), "{}", self.0).expect("writing to a BytesMut cannot fail");
        dst.put_u8(b'"');
        Ok(())
    }
}

/// How much an error reply to an invalid message says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReplyDetail {
    /// Only the code and the specification's message for it ("Parse error", "Invalid Request"),
    /// exactly as the JSON-RPC 2.0 specification's examples answer.
    Spec,
    /// Also the precise reason, as a string in `error.data`.
    #[default]
    Reason,
}

impl<'a> Message<'a> {
    /// The error response that answers this message when it is invalid: -32700 with `"id": null`
    /// for bytes that are not JSON, -32600 with the message's id when it could be read (and
    /// `null` otherwise) for JSON that is not a valid message. `None` for a valid message.
    ///
    /// # Examples
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use mcpwire::{JsonRpcCodec, ReplyDetail};
    /// use tokio_util::codec::Decoder;
    ///
    /// let mut codec = JsonRpcCodec::new();
    /// let mut buf = BytesMut::from(&b"{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}\n"[..]);
    /// let frame = codec.decode(&mut buf).unwrap().unwrap();
    /// let mut out = BytesMut::new();
    /// frame.message().unwrap().error_reply(ReplyDetail::Spec).unwrap().write(&mut out).unwrap();
    /// assert_eq!(&out[..], &b"{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32600,\"message\":\"Invalid Request\"}}\n"[..]);
    /// ```
    #[must_use]
    pub fn error_reply(
        &self,
        detail: ReplyDetail,
    ) -> Option<Outgoing<'a, Reason<'a, crate::error::DecodeError>>> {
        let problem = self.decode_error_ref()?;
        let code = problem.code();
        let id = match code {
            ErrorCode::PARSE_ERROR => Id::Null,
            _ => self.id().unwrap_or(Id::Null),
        };
        let data = (detail == ReplyDetail::Reason).then_some(Reason(problem));
        Some(Outgoing::Error { id, code, message: code.message(), data })
    }
}

#[cfg(test)]
mod tests;
