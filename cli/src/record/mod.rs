//! `mcpwire record`: writes a capture (see `capture.rs` for its format) of the traffic between
//! a host and an MCP server, for `mcpwire load --replay`.
//!
//! - `record --output CAPTURE -- CMD ARGS…`: a transparent tee in front of a stdio server (see
//!   `record/stdio.rs`); a host launches it in place of the server.
//! - `record --output CAPTURE --http ADDR --upstream URL`: a reverse proxy in front of a
//!   Streamable HTTP server (see `record/http.rs`); the host talks to ADDR instead.

mod http;
mod recorder;
mod stdio;

use std::path::PathBuf;
use std::process::ExitCode;

use recorder::{Recorder, write_stderr};

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
