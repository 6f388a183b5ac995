//! `mcpwire record`: writes a capture (see `capture.rs` for its format) of the traffic between
//! a host and an MCP server, for `mcpwire load --replay`.
//!
//! - `record --output CAPTURE -- CMD ARGS…`: a transparent tee in front of a stdio server (see
//!   `record/stdio.rs`); a host launches it in place of the server.
//! - `record --output CAPTURE --http ADDR --upstream URL`: a reverse proxy in front of a
//!   Streamable HTTP server (see `record/http.rs`); the host talks to ADDR instead.

mod http;
mod stdio;

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::capture::{self, Dir};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["command", "http"])))]
pub struct RecordArgs {
    /// Where the capture goes (replaced if it exists).
    #[arg(long, short, value_name = "CAPTURE")]
    output: PathBuf,
    /// The most bytes the capture may take: a frame whose line would pass it is not recorded,
    /// nor any after it (the traffic still passes). Suffixes k, M and G (powers of 1024).
    #[arg(long, value_name = "BYTES", default_value = "1G", value_parser = parse_bytes)]
    max_bytes: u64,
    /// Proxy Streamable HTTP on this address (HOST:PORT; a port of 0 picks one, printed on
    /// standard error) to --upstream.
    #[arg(long, value_name = "ADDR", requires = "upstream", conflicts_with = "command")]
    http: Option<String>,
    /// The server the proxy forwards to: http://HOST:PORT/PATH (the proxy serves the same
    /// paths as the upstream).
    #[arg(long, value_name = "URL", requires = "http")]
    upstream: Option<String>,
    /// The stdio server to run, and its arguments (after `--`).
    #[arg(last = true, value_name = "CMD ARGS")]
    command: Vec<String>,
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    let (n, scale) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1u64 << 10),
        Some(b'M') => (&s[..s.len() - 1], 1 << 20),
        Some(b'G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    n.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("`{s}`: a number of bytes, with k, M or G after it"))
}

/// The capture being written, shared by the readers of both directions.
#[derive(Clone)]
pub(crate) struct Recorder {
    inner: Arc<Mutex<capture::Writer<BufWriter<File>>>>,
    start: Instant,
}

impl Recorder {
    fn create(
        path: &std::path::Path,
        max_bytes: u64,
        source: serde_json::Map<String, serde_json::Value>,
    ) -> std::io::Result<Self> {
        let file = File::create(path)?;
        let ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        let writer = capture::Writer::new(
            BufWriter::with_capacity(64 * 1024, file),
            max_bytes,
            source,
            u64::try_from(ms).unwrap_or(u64::MAX),
        )?;
        Ok(Self { inner: Arc::new(Mutex::new(writer)), start: Instant::now() })
    }

    /// Now, as a capture's time.
    pub(crate) fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Records frames; a capture that cannot be written stops recording (said once), never
    /// the traffic.
    pub(crate) fn frames<'a>(
        &self,
        t: Duration,
        dir: Dir,
        conn: u64,
        session: Option<&str>,
        frames: impl IntoIterator<Item = &'a [u8]>,
    ) {
        let mut w = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        for f in frames {
            let compact = capture::one_line(f);
            if let Err(e) = w.frame(t, dir, conn, session, compact.as_deref().unwrap_or(f)) {
                write_stderr(&format!("mcpwire record: cannot write the capture: {e}"));
                // Recording stops; the traffic goes on.
                w.stop();
                return;
            }
        }
    }

    /// Records a frame that is not one, with why.
    pub(crate) fn bad(&self, t: Duration, dir: Dir, conn: u64, text: &[u8], reason: &str) {
        let mut w = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = w.bad(t, dir, conn, text, reason) {
            write_stderr(&format!("mcpwire record: cannot write the capture: {e}"));
            w.stop();
        }
    }

    /// Flushes the capture.
    pub(crate) fn flush(&self) {
        let mut w = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = w.flush() {
            write_stderr(&format!("mcpwire record: cannot write the capture: {e}"));
        }
    }

    /// Flushes every `every` until the task is dropped, so a recorder killed outright loses
    /// at most that much.
    pub(crate) fn flush_every(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                me.flush();
            }
        })
    }

    /// Flushes, and says on standard error what the bound left out.
    pub(crate) fn finish(&self) {
        self.flush();
        let w = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if w.left_out() > 0 {
            write_stderr(&format!(
                "mcpwire record: the capture reached --max-bytes ({} bytes written); {} frames \
                 after it passed but were not recorded",
                w.written(),
                w.left_out()
            ));
        }
    }
}

/// A line on standard error that never panics (a host may have closed it).
pub(crate) fn write_stderr(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

pub fn run_args(args: &RecordArgs) -> ExitCode {
    let mut source = serde_json::Map::new();
    match (&args.http, &args.upstream) {
        (Some(_), Some(up)) => {
            source.insert("source".into(), "http".into());
            source.insert("upstream".into(), up.clone().into());
        }
        _ => {
            source.insert("source".into(), "stdio".into());
            source.insert("command".into(), args.command.clone().into());
        }
    }
    let recorder = match Recorder::create(&args.output, args.max_bytes, source) {
        Ok(r) => r,
        Err(e) => {
            write_stderr(&format!("mcpwire record: {}: {e}", args.output.display()));
            return ExitCode::from(crate::EXIT_IO);
        }
    };
    let rt = crate::runtime();
    let code = match (&args.http, &args.upstream) {
        (Some(addr), Some(up)) => rt.block_on(http::run(addr, up, recorder.clone())),
        _ => rt.block_on(stdio::run(&args.command, recorder.clone())),
    };
    recorder.finish();
    // Standard input is read on a blocking thread that only EOF would end; do not wait for it.
    rt.shutdown_background();
    code
}
