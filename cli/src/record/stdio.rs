//! `record -- CMD ARGS…`: a transparent tee in front of a stdio server.
//!
//! The child runs with its standard input and output piped through this process and its
//! standard error inherited. Every chunk read from either side is split into lines for the
//! capture, then written on at once, byte for byte (so a request's line always precedes its
//! answer's) (each complete line one frame, in order; a line
//! with no newline at the end of its stream one more). A line longer than the frame limit is
//! recorded as a bad frame with its first bytes. The tee ends when the child exits: what the
//! child wrote before it exited is passed on (for at most [`DRAIN`] more, should a process it
//! started keep its output open), and the tee exits with the child's status (128 + the signal
//! when a signal ended it). SIGINT, SIGTERM and SIGHUP sent to the tee are passed to the child.

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

use super::recorder::{Recorder, write_stderr};
use crate::capture::{BAD_PREFIX, Dir};

/// How long the child's output is drained once it exited.
const DRAIN: Duration = Duration::from_secs(2);

/// Bytes asked of each side per read.
const CHUNK: usize = 64 * 1024;

/// The longest line recorded as a frame; a longer one is recorded as bad.
const MAX_LINE: usize = mcpwire::limits::DEFAULT_MAX_FRAME_BYTES;

pub(super) async fn run(command: &[String], rec: Recorder) -> ExitCode {
    let Some((cmd, args)) = command.split_first() else {
        write_stderr("mcpwire record: no command to run (record --output CAPTURE -- CMD ARGS…)");
        return ExitCode::from(crate::EXIT_IO);
    };
    let spawned = tokio::process::Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            write_stderr(&format!("mcpwire record: cannot run {cmd}: {e}"));
            return ExitCode::from(crate::EXIT_IO);
        }
    };
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        write_stderr("mcpwire record: the child's standard input or output is missing");
        return ExitCode::from(crate::EXIT_IO);
    };
    let flusher = rec.flush_every(Duration::from_millis(200));
    let (stdin, stdout) = mcpwire::transport::stdio();
    let up = tokio::spawn(pump(stdin, child_in, rec.clone(), Dir::ClientToServer));
    let down = tokio::spawn(pump(child_out, stdout, rec.clone(), Dir::ServerToClient));
    let pid = child.id().and_then(|p| i32::try_from(p).ok());
    let status = {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            write_stderr("mcpwire record: cannot install signal handlers");
            return ExitCode::from(crate::EXIT_IO);
        };
        let forward = |sig: i32| {
            if let Some(pid) = pid {
                // SAFETY: kill(2) with the child's pid (not yet reaped: `wait` below has not
                // returned) and a valid signal number; it touches no memory of ours.
                unsafe { libc::kill(pid, sig) };
            }
        };
        loop {
            tokio::select! {
                s = child.wait() => break s,
                _ = int.recv() => forward(libc::SIGINT),
                _ = term.recv() => forward(libc::SIGTERM),
                _ = hup.recv() => forward(libc::SIGHUP),
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN, down).await;
    up.abort();
    flusher.abort();
    match status {
        Ok(s) => exit_code(s),
        Err(e) => {
            write_stderr(&format!("mcpwire record: cannot wait for {cmd}: {e}"));
            ExitCode::from(crate::EXIT_IO)
        }
    }
}

/// The child's status as ours: its exit code, or 128 + the signal that ended it.
fn exit_code(s: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt as _;
    match (s.code(), s.signal()) {
        (Some(c), _) => ExitCode::from(u8::try_from(c).unwrap_or(u8::MAX)),
        (None, Some(sig)) => ExitCode::from(u8::try_from(128 + sig).unwrap_or(u8::MAX)),
        (None, None) => ExitCode::FAILURE,
    }
}

/// Copies `from` to `to`, each chunk recorded, then written on (and flushed). Ends at
/// the end of `from` (then `to` is shut, so the child sees its input end) or when `to` fails.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    rec: Recorder,
    dir: Dir,
) {
    let mut buf = vec![0u8; CHUNK];
    let mut lines = Lines::default();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // Recorded before it is passed on: an answer to it cannot be recorded first.
        let t = rec.now();
        lines.feed(&buf[..n], |line| record(&rec, dir, line, t));
        let sent = to.write_all(&buf[..n]).await;
        let sent = match sent {
            Ok(()) => to.flush().await,
            Err(e) => Err(e),
        };
        if sent.is_err() {
            break;
        }
    }
    let t = rec.now();
    lines.finish(|line| record(&rec, dir, line, t));
    let _ = to.shutdown().await;
}

fn record(rec: &Recorder, dir: Dir, line: Line<'_>, t: Duration) {
    match line {
        Line::Frame(f) => rec.frames(t, dir, 0, None, [f]),
        Line::TooLong(prefix, len) => rec.bad(
            t,
            dir,
            0,
            prefix,
            &format!("a line of {len} bytes, past the {MAX_LINE}-byte frame limit"),
        ),
    }
}

/// A line handed to the capture.
#[derive(Debug, PartialEq)]
enum Line<'a> {
    /// A frame: a line without its ending (`\n`, or `\r\n`).
    Frame(&'a [u8]),
    /// A line past [`MAX_LINE`]: its first bytes, and its length.
    TooLong(&'a [u8], usize),
}

/// Splits a stream into lines for the capture, keeping at most [`MAX_LINE`] bytes of an
/// unfinished one.
#[derive(Debug, Default)]
struct Lines {
    partial: Vec<u8>,
    /// The length of an over-long line being skipped (its first bytes are in `partial`).
    over: Option<usize>,
}

impl Lines {
    fn feed(&mut self, mut chunk: &[u8], mut each: impl FnMut(Line<'_>)) {
        while let Some(nl) = memchr::memchr(b'\n', chunk) {
            let (head, rest) = (&chunk[..nl], &chunk[nl + 1..]);
            if let Some(len) = self.over.take() {
                each(Line::TooLong(&self.partial, len + head.len()));
            } else if self.partial.is_empty() {
                emit(head, &mut each);
            } else if self.partial.len() + head.len() > MAX_LINE {
                each(Line::TooLong(&self.partial, self.partial.len() + head.len()));
            } else {
                self.partial.extend_from_slice(head);
                emit(&self.partial, &mut each);
            }
            self.partial.clear();
            chunk = rest;
        }
        match &mut self.over {
            Some(len) => *len += chunk.len(),
            None if self.partial.len() + chunk.len() > MAX_LINE => {
                let len = self.partial.len() + chunk.len();
                let keep = BAD_PREFIX.saturating_sub(self.partial.len()).min(chunk.len());
                self.partial.extend_from_slice(&chunk[..keep]);
                self.partial.truncate(BAD_PREFIX);
                self.over = Some(len);
            }
            None => self.partial.extend_from_slice(chunk),
        }
    }

    /// The end of the stream: a last line without its newline.
    fn finish(&mut self, mut each: impl FnMut(Line<'_>)) {
        if let Some(len) = self.over.take() {
            each(Line::TooLong(&self.partial, len));
        } else {
            emit(&self.partial, &mut each);
        }
        self.partial.clear();
    }
}

/// A line as a frame, without a `\r` before its `\n`; blank lines are none.
fn emit(line: &[u8], each: &mut impl FnMut(Line<'_>)) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !line.iter().all(u8::is_ascii_whitespace) {
        each(Line::Frame(line));
    }
}

#[cfg(test)]
mod tests;
