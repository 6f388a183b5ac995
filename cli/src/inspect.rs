//! `mcpwire inspect`: classify each line of an NDJSON capture, or summarise it.
//!
//! This is also a whole-process benchmark of the decoder: input is read in large chunks into one
//! `BytesMut` and fed to [`JsonRpcCodec`] directly (no per-line `String`, no runtime), and output
//! goes through a `BufWriter` on the locked standard output.
//!
//! The codec does not report line numbers, so they are counted here: every `\n` read is queued by
//! its absolute stream offset, and after each decode call the ones now in front of the read
//! buffer (consumed by the codec: blank lines, discarded bytes of an over-long line, the frame's
//! own line) are counted off. A frame lies on the last line of what its decode call consumed:
//! when that ends with a `\n`, the frame's line number is the count of newlines consumed so far;
//! otherwise (a final line with no newline, or an over-long line reported before its newline
//! arrived) it is one more.

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use mcpwire::{Frame, Id, JsonRpcCodec, Kind, Limits, Message, Payload, Reason};
use tokio_util::codec::Decoder;

/// Bytes asked of the input per read.
const CHUNK: usize = 256 * 1024;
/// Output buffer size.
const OUT_BUF: usize = 256 * 1024;

/// What `inspect` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One JSON line per frame.
    Lines,
    /// Counts, bytes, elapsed time and throughput.
    Summary,
}

/// Why `inspect` stopped early.
#[derive(Debug)]
pub enum Failure {
    /// The input could not be read.
    Read(io::Error),
    /// The output could not be written.
    Write(io::Error),
}

/// What was read and decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Input lines, blank ones included (a final line without a newline counts).
    pub lines: u64,
    /// Input bytes.
    pub bytes: u64,
    /// Frames by kind, in the order of [`Kind::ALL`].
    pub frames: [u64; 6],
    /// Elements of all batches.
    pub batch_items: u64,
    /// Invalid elements of batches.
    pub invalid_items: u64,
    /// Time from the first read to the last frame handled (output included in `Lines` mode).
    pub elapsed: Duration,
}

impl Totals {
    fn count(&mut self, frame: &Frame) {
        self.frames[frame.kind() as usize] += 1;
        if let Some(items) = frame.batch() {
            for item in items {
                self.batch_items += 1;
                self.invalid_items += u64::from(item.kind() == Kind::Invalid);
            }
        }
    }

    /// All frames decoded.
    pub fn frame_count(&self) -> u64 {
        self.frames.iter().sum()
    }

    /// Invalid frames plus invalid batch elements.
    pub fn invalid_messages(&self) -> u64 {
        self.frames[Kind::Invalid as usize] + self.invalid_items
    }
}

/// Runs `inspect` over `input`, writing to standard output.
pub fn run(input: impl Read, label: &str, mode: Mode) -> Result<Totals, Failure> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(OUT_BUF, stdout.lock());
    let limits = Limits::default().batches(true);
    let totals = match mode {
        Mode::Lines => drive(input, limits, CHUNK, &mut JsonLines::new(&mut out))?,
        Mode::Summary => {
            let totals = drive(input, limits, CHUNK, &mut Discard)?;
            write!(out, "{}", Summary { label, totals: &totals }).map_err(Failure::Write)?;
            totals
        }
    };
    out.flush().map_err(Failure::Write)?;
    Ok(totals)
}

/// Receives each decoded frame with its line number.
pub trait Sink {
    /// Whether the sink needs line numbers (tracking them costs a little per line).
    const LINES: bool;

    /// Handles one frame; `line` is 0 when `LINES` is false.
    fn frame(&mut self, line: u64, frame: &Frame) -> io::Result<()>;
}

/// Only counts (the `--summary` mode).
struct Discard;

impl Sink for Discard {
    const LINES: bool = false;

    fn frame(&mut self, _: u64, _: &Frame) -> io::Result<()> {
        Ok(())
    }
}

/// Absolute offsets of the newlines read but not yet consumed by the codec.
#[derive(Debug, Default)]
struct LineTracker {
    pending: VecDeque<u64>,
    /// Newlines consumed by the codec so far.
    passed: u64,
    /// Offset of the last newline consumed.
    last: Option<u64>,
}

impl LineTracker {
    /// Queues the newlines of `chunk`, which starts at stream offset `at`; returns their count.
    fn feed(&mut self, at: u64, chunk: &[u8]) -> u64 {
        let before = self.pending.len();
        self.pending.extend(memchr::memchr_iter(b'\n', chunk).map(|i| at + i as u64));
        (self.pending.len() - before) as u64
    }

    /// The codec has consumed everything before stream offset `front`.
    fn consumed_to(&mut self, front: u64) {
        while let Some(&nl) = self.pending.front() {
            if nl >= front {
                break;
            }
            self.pending.pop_front();
            self.passed += 1;
            self.last = Some(nl);
        }
    }

    /// The line of a frame just returned by a decode call that left the buffer at `front`: the
    /// last line of the bytes that call consumed.
    fn frame_line(&self, front: u64) -> u64 {
        if front > 0 && self.last == Some(front - 1) { self.passed } else { self.passed + 1 }
    }
}

/// Reads `input` in chunks of `chunk` bytes, decodes it with `limits` and hands every frame to
/// `sink`.
pub fn drive<R: Read, S: Sink>(
    mut input: R,
    limits: Limits,
    chunk: usize,
    sink: &mut S,
) -> Result<Totals, Failure> {
    let start = Instant::now();
    let chunk = chunk.max(1);
    let mut codec = JsonRpcCodec::with_limits(limits);
    let mut buf = BytesMut::with_capacity(chunk);
    let mut lines = LineTracker::default();
    let mut totals = Totals::default();
    let mut newlines = 0u64;
    let mut last_byte = b'\n';
    let mut eof = false;
    while !eof {
        let len = buf.len();
        buf.resize(len + chunk, 0);
        let n = loop {
            match input.read(&mut buf[len..]) {
                Ok(n) => break n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(Failure::Read(err)),
            }
        };
        buf.truncate(len + n);
        if n == 0 {
            eof = true;
        } else {
            let fresh = &buf[len..];
            newlines += if S::LINES {
                lines.feed(totals.bytes, fresh)
            } else {
                memchr::memchr_iter(b'\n', fresh).count() as u64
            };
            last_byte = fresh[n - 1];
            totals.bytes += n as u64;
        }
        loop {
            let decoded = if eof { codec.decode_eof(&mut buf) } else { codec.decode(&mut buf) };
            // `Err` is only ever an I/O failure, which decoding a buffer cannot have.
            let decoded = decoded.map_err(|e| Failure::Read(io::Error::other(e)))?;
            let front = totals.bytes - buf.len() as u64;
            let line = if S::LINES {
                lines.consumed_to(front);
                lines.frame_line(front)
            } else {
                0
            };
            let Some(frame) = decoded else { break };
            totals.count(&frame);
            sink.frame(line, &frame).map_err(Failure::Write)?;
        }
    }
    totals.lines = newlines + u64::from(last_byte != b'\n');
    totals.elapsed = start.elapsed();
    Ok(totals)
}

/// Writes one JSON object per frame.
pub struct JsonLines<W> {
    out: W,
    scratch: BytesMut,
}

impl<W: Write> JsonLines<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        Self { out, scratch: BytesMut::with_capacity(512) }
    }
}

impl<W: Write> Sink for JsonLines<W> {
    const LINES: bool = true;

    fn frame(&mut self, line: u64, frame: &Frame) -> io::Result<()> {
        let s = &mut self.scratch;
        s.clear();
        s.put_slice(b"{\"line\":");
        s.put_slice(itoa::Buffer::new().format(line).as_bytes());
        match (frame.message(), frame.batch()) {
            (Some(message), _) => {
                s.put_u8(b',');
                write_fields(s, message);
            }
            (None, Some(items)) => {
                s.put_slice(
                    b",\"kind\":\"batch\",\"id\":null,\"method\":null,\"code\":null,\"reason\":null,\"items\":[",
                );
                for (i, item) in items.enumerate() {
                    if i > 0 {
                        s.put_u8(b',');
                    }
                    s.put_u8(b'{');
                    write_fields(s, item);
                    s.put_u8(b'}');
                }
                s.put_u8(b']');
            }
            (None, None) => unreachable!("a frame is either one message or a batch"),
        }
        s.put_slice(b"}\n");
        self.out.write_all(s)
    }
}

/// `"kind":…,"id":…,"method":…,"code":…,"reason":…` of one message.
fn write_fields(s: &mut BytesMut, m: Message<'_>) {
    s.put_slice(b"\"kind\":\"");
    s.put_slice(m.kind().as_str().as_bytes());
    s.put_slice(b"\",\"id\":");
    match m.id() {
        Some(Id::Num(n)) => s.put_slice(itoa::Buffer::new().format(n).as_bytes()),
        Some(Id::Str(text)) => write_string(s, text),
        Some(Id::Null) | None => s.put_slice(b"null"),
    }
    s.put_slice(b",\"method\":");
    match m.method() {
        Some(method) => write_string(s, method),
        None => s.put_slice(b"null"),
    }
    s.put_slice(b",\"code\":");
    if let Some(err) = m.decode_error() {
        s.put_slice(itoa::Buffer::new().format(err.code().get()).as_bytes());
        s.put_slice(b",\"reason\":");
        write_string(s, &err);
    } else if let Some(err) = m.error() {
        s.put_slice(itoa::Buffer::new().format(err.code).as_bytes());
        s.put_slice(b",\"reason\":");
        write_string(s, err.message);
    } else {
        s.put_slice(b"null,\"reason\":null");
    }
}

/// Appends `value`'s `Display` text as an escaped JSON string, with the crate's encoder.
fn write_string<T: fmt::Display + ?Sized>(s: &mut BytesMut, value: &T) {
    Reason(value).write_json(s).expect("writing a Display value into a BytesMut cannot fail");
}

/// The `--summary` report: one `key: value` line each, in a fixed order.
struct Summary<'a> {
    label: &'a str,
    totals: &'a Totals,
}

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.totals;
        writeln!(f, "{:<16}{}", "input:", self.label)?;
        writeln!(f, "{:<16}{}", "lines:", t.lines)?;
        writeln!(f, "{:<16}{}", "bytes:", t.bytes)?;
        writeln!(f, "{:<16}{}", "frames:", t.frame_count())?;
        for kind in Kind::ALL {
            let key = format!("{kind}:");
            writeln!(f, "{key:<16}{}", t.frames[kind as usize])?;
        }
        writeln!(f, "{:<16}{}", "batch_items:", t.batch_items)?;
        writeln!(f, "{:<16}{}", "invalid_items:", t.invalid_items)?;
        let secs = t.elapsed.as_secs_f64();
        writeln!(f, "{:<16}{secs:.6} s", "elapsed:")?;
        if secs > 0.0 {
            writeln!(f, "{:<16}{:.1} MB/s", "throughput:", t.bytes as f64 / 1e6 / secs)
        } else {
            writeln!(f, "{:<16}n/a", "throughput:")
        }
    }
}

#[cfg(test)]
mod tests;

/// `mcpwire inspect --help`: what each output line holds.
pub const ABOUT: &str = "\
Classify each line of an NDJSON capture, or summarise it with decoder throughput.

For every non-blank input line, prints one JSON object:
  {\"line\":N,\"kind\":K,\"id\":…,\"method\":…,\"code\":…,\"reason\":…}
line:   1-based input line number (blank lines are counted)
kind:   request | notification | response | error | batch | invalid
id:     the message id (number or string), when present and readable; null otherwise
method: the method of a request or notification; null otherwise
code:   an invalid frame's JSON-RPC error code, or an error response's error.code
reason: why an invalid frame is invalid, or an error response's error.message
A batch adds \"items\":[…] with the same fields (no \"line\") for each element.";

#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// NDJSON input; standard input when absent or `-`.
    file: Option<PathBuf>,
    /// Print counts by kind, bytes, elapsed time and MB/s instead of one line per frame.
    #[arg(long)]
    summary: bool,
    /// Exit with status 1 if any frame (or batch element) is invalid.
    #[arg(long)]
    strict: bool,
}

pub fn run_args(args: &InspectArgs) -> ExitCode {
    let mode = if args.summary { Mode::Summary } else { Mode::Lines };
    let outcome = match args.file.as_deref() {
        None => run(io::stdin().lock(), "<stdin>", mode),
        Some(path) if path.as_os_str() == "-" => run(io::stdin().lock(), "<stdin>", mode),
        Some(path) => match File::open(path) {
            Ok(file) => run(file, &path.display().to_string(), mode),
            Err(err) => {
                eprintln!("mcpwire: cannot open {}: {err}", path.display());
                return ExitCode::from(crate::EXIT_IO);
            }
        },
    };
    finish(outcome, args.strict)
}

fn finish(outcome: Result<Totals, Failure>, strict: bool) -> ExitCode {
    match outcome {
        Ok(totals) if strict && totals.invalid_messages() > 0 => {
            ExitCode::from(crate::EXIT_INVALID)
        }
        Ok(_) => ExitCode::SUCCESS,
        // The reader of our output went away (`mcpwire inspect big.ndjson | head`): stop quietly.
        Err(Failure::Write(err)) if err.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Failure::Write(err)) => {
            eprintln!("mcpwire: cannot write output: {err}");
            ExitCode::from(crate::EXIT_IO)
        }
        Err(Failure::Read(err)) => {
            eprintln!("mcpwire: cannot read input: {err}");
            ExitCode::from(crate::EXIT_IO)
        }
    }
}
