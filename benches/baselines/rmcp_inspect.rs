//! A baseline for `mcpwire inspect --summary`: the same whole-process job (read an NDJSON
//! capture, classify every line, print counts) done with rmcp's generic message type, so the two
//! processes can be timed against each other on the same file
//! (docs/perf-log/load-and-inspect.md).
//!
//! Each line is parsed as rmcp's transport reads one (`try_parse_with_compatibility` in its
//! `transport-async-rw` codec: a byte order mark stripped, a UTF-8 check, `serde_json::from_slice`)
//! into `JsonRpcMessage<CustomRequest, CustomResult, CustomNotification>`: rmcp's most generic
//! message, any method with any params and any result. rmcp's transports read the role's typed
//! message (`ClientJsonRpcMessage` on a server), which cannot read the other direction's half of a
//! capture; the default `JsonRpcMessage` parameters refuse a message without `params` (a `ping`).
//! rmcp has no batch type: a batch, like any line it cannot read, counts as unparsed.
//!
//! Input is read as `mcpwire inspect` reads it: 256 KiB reads (a `BufReader` of that capacity),
//! lines split off into one reused buffer. Like the `mcpwire` binary it runs on mimalloc.
//!
//! Usage: `rmcp_inspect FILE` (standard input when absent or `-`).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::time::Instant;

use rmcp::model::{CustomNotification, CustomRequest, CustomResult, JsonRpcMessage};

/// The `mcpwire` binary's allocator (the dev-dependency is always there), so the two processes
/// differ in their decoders only.
#[global_allocator]
static GLOBAL: mcpwire_alloc::MiMalloc = mcpwire_alloc::MiMalloc;

/// Bytes asked of the input per read, as `mcpwire inspect` asks.
const CHUNK: usize = 256 * 1024;

type Generic = JsonRpcMessage<CustomRequest, CustomResult, CustomNotification>;

/// Lines by what rmcp made of them.
#[derive(Debug, Default)]
struct Counts {
    lines: u64,
    bytes: u64,
    request: u64,
    notification: u64,
    response: u64,
    error: u64,
    unparsed: u64,
}

impl Counts {
    fn line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            return;
        }
        let parsed = std::str::from_utf8(line)
            .ok()
            .and_then(|_| serde_json::from_slice::<Generic>(line).ok());
        match parsed {
            Some(JsonRpcMessage::Request(_)) => self.request += 1,
            Some(JsonRpcMessage::Notification(_)) => self.notification += 1,
            Some(JsonRpcMessage::Response(_)) => self.response += 1,
            Some(JsonRpcMessage::Error(_)) => self.error += 1,
            None => self.unparsed += 1,
        }
    }
}

fn main() -> io::Result<()> {
    let path = std::env::args().nth(1);
    let input: Box<dyn Read> = match path.as_deref() {
        None | Some("-") => Box::new(io::stdin().lock()),
        Some(path) => Box::new(std::fs::File::open(path)?),
    };
    let start = Instant::now();
    let mut reader = BufReader::with_capacity(CHUNK, input);
    let mut line = Vec::with_capacity(4096);
    let mut counts = Counts::default();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        counts.lines += 1;
        counts.bytes += n as u64;
        counts.line(&line);
    }
    let secs = start.elapsed().as_secs_f64();
    let mut out = io::stdout().lock();
    writeln!(out, "input:          {}", path.as_deref().unwrap_or("<stdin>"))?;
    writeln!(out, "lines:          {}", counts.lines)?;
    writeln!(out, "bytes:          {}", counts.bytes)?;
    writeln!(out, "request:        {}", counts.request)?;
    writeln!(out, "notification:   {}", counts.notification)?;
    writeln!(out, "response:       {}", counts.response)?;
    writeln!(out, "error:          {}", counts.error)?;
    writeln!(out, "unparsed:       {}", counts.unparsed)?;
    writeln!(out, "elapsed:        {secs:.6} s")?;
    writeln!(out, "throughput:     {:.1} MB/s", counts.bytes as f64 / 1e6 / secs)
}
