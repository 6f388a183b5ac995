//! The floor under `mcpwire inspect --summary` for any decoder built on simd-json's tape: the same
//! whole-process job as `benches/baselines/rmcp_inspect.rs` (same reads, same line split, same
//! allocator), with each line only run through `simd_json::fill_tape_padded` (buffers and tape
//! reused, the line copied to a padded scratch buffer first, as a lone frame is) and counted as
//! parsed or not. No classification, no frame kept: what is left of the time is reading,
//! splitting and simd-json's own work (docs/perf-log/load-and-inspect.md).
//!
//! Usage: `simd_json_inspect FILE` (standard input when absent or `-`).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::time::Instant;

use simd_json::{Buffers, INPUT_PADDING, Tape, fill_tape_padded};

#[global_allocator]
static GLOBAL: mcpwire_alloc::MiMalloc = mcpwire_alloc::MiMalloc;

/// Bytes asked of the input per read, as `mcpwire inspect` asks.
const CHUNK: usize = 256 * 1024;

fn main() -> io::Result<()> {
    let path = std::env::args().nth(1);
    let input: Box<dyn Read> = match path.as_deref() {
        None | Some("-") => Box::new(io::stdin().lock()),
        Some(path) => Box::new(std::fs::File::open(path)?),
    };
    let start = Instant::now();
    let mut reader = BufReader::with_capacity(CHUNK, input);
    let mut line = Vec::with_capacity(4096);
    let mut scratch = Vec::new();
    let mut buffers = Buffers::default();
    let mut tape = Some(Tape::null());
    let (mut lines, mut bytes, mut parsed, mut unparsed) = (0u64, 0u64, 0u64, 0u64);
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        lines += 1;
        bytes += n as u64;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if body.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            continue;
        }
        scratch.clear();
        scratch.extend_from_slice(body);
        scratch.resize(body.len() + INPUT_PADDING, 0);
        let mut t = tape.take().unwrap_or_else(Tape::null).reset();
        match fill_tape_padded(&mut scratch, body.len(), &mut buffers, &mut t) {
            Ok(()) => parsed += 1,
            Err(_) => unparsed += 1,
        }
        tape = Some(t.reset());
    }
    let secs = start.elapsed().as_secs_f64();
    let mut out = io::stdout().lock();
    writeln!(out, "input:          {}", path.as_deref().unwrap_or("<stdin>"))?;
    writeln!(out, "lines:          {lines}")?;
    writeln!(out, "bytes:          {bytes}")?;
    writeln!(out, "parsed:         {parsed}")?;
    writeln!(out, "unparsed:       {unparsed}")?;
    writeln!(out, "elapsed:        {secs:.6} s")?;
    writeln!(out, "throughput:     {:.1} MB/s", bytes as f64 / 1e6 / secs)
}
