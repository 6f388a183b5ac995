//! The capture `mcpwire record` writes and `mcpwire load --replay` reads: NDJSON, one JSON
//! object a line.
//!
//! The first line is the header, `{"mcpwire_capture":1,"source":…,"started_unix_ms":…,
//! "max_bytes":…}` (`source` is `stdio` with the `command`, or `http` with the `upstream`).
//! Every other line is one frame as it crossed:
//!
//! ```text
//! {"t_us":1234,"dir":"c2s","conn":0,"session":"…","frame":{"jsonrpc":"2.0",…}}
//! {"t_us":1301,"dir":"s2c","conn":0,"bad":"<the line as text>","reason":"not JSON: …"}
//! ```
//!
//! - `t_us`: microseconds since the recording started, taken when the frame was read.
//! - `dir`: `c2s` (from the client, the host) or `s2c` (from the server).
//! - `conn`: the connection (0 for stdio; each TCP connection to the proxy its own number).
//! - `session`: the legacy `Mcp-Session-Id`, when the HTTP exchange had one (absent otherwise).
//! - `frame`: the frame itself, unchanged (one message or a batch), when it is JSON; otherwise
//!   `bad` holds it as text (bytes that are not UTF-8 replaced by U+FFFD, at most
//!   [`BAD_PREFIX`] bytes of it) and `reason` says why.
//!
//! Lines of one direction are in the order their frames crossed; across the two directions a
//! later line may have an earlier `t_us` by the few microseconds the two readers race.
//!
//! The file never passes `max_bytes`: a line that would take it past the bound is not written,
//! nor is any line after it (the capture stays a prefix of the traffic, with no holes); the
//! traffic itself still passes, and `record` says on standard error how many frames it left
//! out. A frame line is only ever written whole.

use std::io::{self, BufRead, Write};
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;

/// The capture format's version, in the header's `mcpwire_capture`.
pub const VERSION: u64 = 1;

/// How much of a frame that is not JSON is kept in its `bad` text.
pub const BAD_PREFIX: usize = 64 * 1024;

/// The longest line `load --replay` reads: a frame at the library's frame limit, escaped, with
/// room for the fields around it.
pub const MAX_LINE_BYTES: usize = 2 * mcpwire::limits::DEFAULT_MAX_FRAME_BYTES + 4096;

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// From the client (the host) to the server.
    ClientToServer,
    /// From the server to the client.
    ServerToClient,
}

impl Dir {
    fn as_str(self) -> &'static str {
        match self {
            Self::ClientToServer => "c2s",
            Self::ServerToClient => "s2c",
        }
    }
}

/// Writes a capture within its bound.
pub struct Writer<W: Write> {
    out: W,
    written: u64,
    max_bytes: u64,
    /// Frames not written since the bound was reached.
    left_out: u64,
    line: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Writes the header (`source` and its fields) and returns the writer.
    ///
    /// # Errors
    ///
    /// When the header alone passes `max_bytes`, or cannot be written.
    pub fn new(
        mut out: W,
        max_bytes: u64,
        source: serde_json::Map<String, Value>,
        started_unix_ms: u64,
    ) -> io::Result<Self> {
        let mut header = serde_json::Map::new();
        header.insert("mcpwire_capture".into(), VERSION.into());
        header.extend(source);
        header.insert("started_unix_ms".into(), started_unix_ms.into());
        header.insert("max_bytes".into(), max_bytes.into());
        let mut line = serde_json::to_vec(&Value::Object(header))?;
        line.push(b'\n');
        if line.len() as u64 > max_bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "--max-bytes {max_bytes} is less than the capture's header ({} bytes)",
                    line.len()
                ),
            ));
        }
        out.write_all(&line)?;
        Ok(Self { out, written: line.len() as u64, max_bytes, left_out: 0, line: Vec::new() })
    }

    /// Records one frame (its bytes without the line ending). Returns whether it was written:
    /// `false` once the capture is full.
    ///
    /// # Errors
    ///
    /// When the output cannot be written.
    pub fn frame(
        &mut self,
        t: Duration,
        dir: Dir,
        conn: u64,
        session: Option<&str>,
        frame: &[u8],
    ) -> io::Result<bool> {
        match json_frame(frame) {
            Ok(raw) => self.line(t, dir, conn, session, Body::Frame(raw)),
            Err(reason) => self.line(t, dir, conn, session, Body::Bad(frame, &reason)),
        }
    }

    /// Records a frame that is not one, with why (such as a line past the frame limit, of
    /// which only the first [`BAD_PREFIX`] bytes were kept).
    ///
    /// # Errors
    ///
    /// When the output cannot be written.
    pub fn bad(
        &mut self,
        t: Duration,
        dir: Dir,
        conn: u64,
        text: &[u8],
        reason: &str,
    ) -> io::Result<bool> {
        self.line(t, dir, conn, None, Body::Bad(text, reason))
    }

    fn line(
        &mut self,
        t: Duration,
        dir: Dir,
        conn: u64,
        session: Option<&str>,
        body: Body<'_>,
    ) -> io::Result<bool> {
        if self.left_out > 0 {
            self.left_out += 1;
            return Ok(false);
        }
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(b"{\"t_us\":");
        let us = u64::try_from(t.as_micros()).unwrap_or(u64::MAX);
        l.extend_from_slice(itoa::Buffer::new().format(us).as_bytes());
        l.extend_from_slice(b",\"dir\":\"");
        l.extend_from_slice(dir.as_str().as_bytes());
        l.extend_from_slice(b"\",\"conn\":");
        l.extend_from_slice(itoa::Buffer::new().format(conn).as_bytes());
        if let Some(s) = session {
            l.extend_from_slice(b",\"session\":");
            serde_json::to_writer(&mut *l, s)?;
        }
        match body {
            Body::Frame(raw) => {
                l.extend_from_slice(b",\"frame\":");
                l.extend_from_slice(raw);
            }
            Body::Bad(text, reason) => {
                let text = String::from_utf8_lossy(&text[..text.len().min(BAD_PREFIX)]);
                l.extend_from_slice(b",\"bad\":");
                serde_json::to_writer(&mut *l, &text)?;
                l.extend_from_slice(b",\"reason\":");
                serde_json::to_writer(&mut *l, reason)?;
            }
        }
        l.extend_from_slice(b"}\n");
        if self.written + l.len() as u64 > self.max_bytes {
            self.left_out = 1;
            return Ok(false);
        }
        self.out.write_all(l)?;
        self.written += l.len() as u64;
        Ok(true)
    }

    /// Records nothing more (the output failed): this frame and every later one are left out.
    pub fn stop(&mut self) {
        self.left_out = self.left_out.max(1);
    }

    /// Bytes written so far, the header included.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Frames left out since the capture reached its bound.
    pub fn left_out(&self) -> u64 {
        self.left_out
    }

    /// Flushes what is buffered.
    ///
    /// # Errors
    ///
    /// When the output cannot be written.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// What a line carries.
enum Body<'a> {
    Frame(&'a [u8]),
    Bad(&'a [u8], &'a str),
}

/// The frame as it may be embedded in a line: JSON text on one line, trimmed of whitespace
/// around it; or why it is not.
fn json_frame(frame: &[u8]) -> Result<&[u8], String> {
    let text = std::str::from_utf8(frame).map_err(|e| format!("not UTF-8: {e}"))?;
    let raw: &RawValue = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let raw = raw.get().as_bytes();
    // A JSON text may hold raw line breaks only between tokens; a frame read from one line has
    // none, but an HTTP body may: such a frame is written compacted.
    if memchr::memchr2(b'\n', b'\r', raw).is_some() {
        return Err("spans lines".into());
    }
    Ok(raw)
}

/// A frame that spans lines (an HTTP body pretty-printed) made one line, keeping its content.
#[must_use]
pub fn one_line(frame: &[u8]) -> Option<Vec<u8>> {
    memchr::memchr2(b'\n', b'\r', frame)?;
    let v: Value = serde_json::from_slice(frame).ok()?;
    serde_json::to_vec(&v).ok()
}

/// One line of a capture, read back.
#[derive(Debug)]
pub struct Line {
    pub t: Duration,
    pub dir: Dir,
    pub conn: u64,
    pub session: Option<String>,
    /// The frame, when it was JSON.
    pub frame: Option<Value>,
}

/// Why a capture cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("line {line}: {why}")]
    Line { line: u64, why: String },
}

/// Reads a capture: checks the header, then hands each frame line to `each`. A last line
/// without its newline that is not JSON (a recording cut off mid-write) is left out with a
/// warning; anywhere else such a line is an error.
///
/// # Errors
///
/// The input cannot be read, its first line is not a capture header of [`VERSION`], or a line
/// is not a capture line (or longer than [`MAX_LINE_BYTES`]).
pub fn read(
    mut input: impl BufRead,
    mut each: impl FnMut(Line) -> Result<(), String>,
) -> Result<Value, ReadError> {
    let mut buf = Vec::new();
    let mut n = 0u64;
    let mut header = None;
    loop {
        buf.clear();
        let got = std::io::Read::take(&mut input, MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if got == 0 {
            break;
        }
        n += 1;
        let complete = buf.last() == Some(&b'\n');
        if !complete && buf.len() > MAX_LINE_BYTES {
            return Err(ReadError::Line {
                line: n,
                why: format!("longer than {MAX_LINE_BYTES} bytes"),
            });
        }
        let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: Value = match serde_json::from_slice(text) {
            Ok(v) => v,
            Err(_) if !complete && header.is_some() => {
                tracing::warn!(line = n, "the capture's last line is cut off; it is left out");
                break;
            }
            Err(e) => {
                let why = if complete { format!("not JSON: {e}") } else { format!("cut off: {e}") };
                return Err(ReadError::Line { line: n, why });
            }
        };
        if header.is_none() {
            match value.get("mcpwire_capture").and_then(Value::as_u64) {
                Some(VERSION) => header = Some(value),
                Some(v) => {
                    return Err(ReadError::Line {
                        line: n,
                        why: format!("capture version {v}; this mcpwire reads version {VERSION}"),
                    });
                }
                None => {
                    return Err(ReadError::Line {
                        line: n,
                        why: "not an mcpwire capture (its first line is no \
                              {\"mcpwire_capture\":…} header)"
                            .into(),
                    });
                }
            }
            continue;
        }
        let line = parse_line(value).map_err(|why| ReadError::Line { line: n, why })?;
        each(line).map_err(|why| ReadError::Line { line: n, why })?;
    }
    header.ok_or(ReadError::Line { line: n, why: "empty: no capture header".into() })
}

fn parse_line(mut v: Value) -> Result<Line, String> {
    let t = v["t_us"].as_u64().ok_or("no t_us (microseconds, a whole number)")?;
    let dir = match v["dir"].as_str() {
        Some("c2s") => Dir::ClientToServer,
        Some("s2c") => Dir::ServerToClient,
        _ => return Err("no dir (c2s or s2c)".into()),
    };
    let conn = v["conn"].as_u64().ok_or("no conn (a whole number)")?;
    let session = match &v["session"] {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        _ => return Err("session is not a string".into()),
    };
    let frame = match v.get_mut("frame").map(Value::take) {
        Some(f) => Some(f),
        None if v.get("bad").is_some() => None,
        None => return Err("neither frame nor bad".into()),
    };
    Ok(Line { t: Duration::from_micros(t), dir, conn, session, frame })
}

#[cfg(test)]
mod tests;
