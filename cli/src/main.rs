//! `mcpwire`: the load-testing harness and debugging tools.
//!
//! Subcommands:
//! - `load`: drive MCP requests at a server (in process by default) under a closed or open
//!   loop and report throughput, latency percentiles, errors and bytes, per operation; `load
//!   init TARGET` writes a starting scenario from the server's tools; `load compare BASE NEW`
//!   gates on a regression against a baseline.
//! - `report merge`: add the `--hdr-log` files of several `load` runs into one report.
//! - `serve`: a well-behaved, dual-era MCP server (legacy sessions and stateless 2026-07-28
//!   requests at once; tools echo, sleep, route and confirm) on stdio, TCP, a Unix socket or
//!   Streamable HTTP.
//! - `record`: write a capture of a host's traffic with a server (a stdio tee, an HTTP proxy)
//!   for `load --replay`.
//! - `inspect [FILE]`: classify every line of an NDJSON capture (one JSON line per frame, or a
//!   `--summary` with counts and decoder throughput).
//!
//! Without a subcommand it runs `load` with its defaults: the embedded target.

mod bridge;
mod capture;
mod connect_args;
mod inspect;
mod load;
mod login;
mod merge;
mod record;
mod serve;

/// mimalloc serves the harness's many small, short-lived allocations (frames, tasks, replies)
/// faster than the system allocator; PERF.md has the measurement.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mcpwire_alloc::MiMalloc = mcpwire_alloc::MiMalloc;

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::{Parser, Subcommand};

/// Exit status for `--strict` when a frame is invalid, and for `load` when a request failed.
pub(crate) const EXIT_INVALID: u8 = 1;
/// Exit status when the input cannot be opened or read, the output cannot be written, or
/// `load` cannot connect to its target or complete the MCP handshake.
pub(crate) const EXIT_IO: u8 = 2;

#[derive(Debug, Parser)]
#[command(name = "mcpwire", version, about = "JSON-RPC 2.0 / MCP wire tools and load harness")]
#[command(after_help = "Without a subcommand, runs `load` with its defaults: the embedded \
                        target (the `serve` server in process, over a tokio duplex).")]
struct Cli {
    /// Log at debug level (logs go to standard error).
    #[arg(long, global = true)]
    verbose: bool,
    /// Threads that run the command's tasks (tokio workers; default: one per core, and one for
    /// `bridge`). `1` runs every task on the main thread (a current-thread runtime), so that no
    /// wake-up crosses threads: `load` against the embedded target then measures the peers
    /// without them.
    #[arg(long, global = true, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_THREADS)))]
    threads: Option<u16>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Drive MCP requests at a server (closed or open loop) and report throughput and latency.
    #[command(args_conflicts_with_subcommands = true)]
    Load(load::command::LoadArgs),
    /// Work with the HdrHistogram logs of `load --hdr-log`.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Authorize with an OAuth-protected HTTP server once, keeping the tokens (in the per-user
    /// cache) for `load --oauth` and the other commands to use and refresh.
    Login(login::LoginArgs),
    /// Serve MCP, both eras at once (tools: echo, sleep, route, confirm), on stdio, TCP, a Unix
    /// socket or Streamable HTTP.
    Serve(serve::ServeArgs),
    /// Serve one stdio MCP server (started as a child) to many clients over Streamable HTTP.
    Bridge(bridge::BridgeArgs),
    /// Classify each line of an NDJSON capture, or summarise it with decoder throughput.
    #[command(long_about = inspect::ABOUT)]
    Inspect(inspect::InspectArgs),
    /// Record the traffic between a host and an MCP server (a tee in front of a stdio server,
    /// or a reverse proxy in front of an HTTP one) into a capture for `load --replay`.
    Record(record::RecordArgs),
}

#[derive(Debug, Subcommand)]
enum ReportCommand {
    /// Add the interval logs of several `load --hdr-log` runs into one report.
    Merge {
        /// The logs.
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// Print one JSON object instead of the text report.
        #[arg(long)]
        json: bool,
        /// Write the merged report as one self-contained HTML page.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    use load::command::{LoadArgs, LoadCommand};
    let cli = Cli::parse();
    // `bridge` relays between HTTP and one child's pipes (or a pool's): on one thread, no
    // wake-up crosses threads on the way through (docs/perf-log/bridge.md, "What the bridge
    // costs").
    let threads = cli.threads.or(matches!(cli.command, Some(Command::Bridge(_))).then_some(1));
    if let Some(n) = threads {
        THREADS.set(usize::from(n)).expect("set once, before any runtime");
    }
    let level = if cli.verbose { tracing::Level::DEBUG } else { tracing::Level::WARN };
    tracing_subscriber::fmt().with_writer(io::stderr).with_max_level(level).init();
    match cli.command {
        Some(Command::Inspect(args)) => inspect::run_args(&args),
        Some(Command::Serve(args)) => serve::run_args(&args),
        Some(Command::Record(args)) => record::run_args(&args),
        Some(Command::Bridge(args)) => bridge::run(&args),
        Some(Command::Load(LoadArgs {
            init: Some(LoadCommand::Init { target, protocol_version, connect_args }),
            ..
        })) => load::command::run_init(target, protocol_version, &connect_args),
        Some(Command::Load(LoadArgs { init: Some(LoadCommand::Compare(args)), .. })) => {
            load::compare::run(&args)
        }
        Some(Command::Load(args)) => load::command::run_load(&args),
        Some(Command::Login(args)) => login::run(args),
        Some(Command::Report(ReportCommand::Merge { logs, json, report })) => {
            merge::run(&logs, json, report.as_deref())
        }
        None => load::command::run_load(&LoadArgs::parse_defaults()),
    }
}

/// The most threads `--threads` takes.
const MAX_THREADS: u16 = 1024;

/// `--threads`, when given.
static THREADS: OnceLock<usize> = OnceLock::new();

/// The runtime a command runs on: `--threads` workers (one per core without it), or the
/// current thread alone for `--threads 1`.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    try_runtime().expect("a tokio runtime")
}

/// [`runtime`], or why it could not be started.
pub(crate) fn try_runtime() -> io::Result<tokio::runtime::Runtime> {
    let mut builder = match THREADS.get() {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        Some(&n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    builder.enable_all().build()
}
