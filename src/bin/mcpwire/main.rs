//! `mcpwire`: the load-testing harness and debugging tools.
//!
//! Subcommands:
//! - `load`: drive concurrent MCP requests at a server (in process by default) and report
//!   throughput, latency percentiles, errors and bytes.
//! - `serve`: a well-behaved, dual-era MCP server (legacy sessions and stateless 2026-07-28
//!   requests at once; tools echo, sleep, route and confirm) on stdio, TCP, a Unix socket or
//!   Streamable HTTP.
//! - `inspect [FILE]`: classify every line of an NDJSON capture (one JSON line per frame, or a
//!   `--summary` with counts and decoder throughput).
//!
//! Without a subcommand it runs `load` with its defaults: the embedded target.

mod handler;
mod inspect;
mod load;
mod serve;

/// mimalloc serves the harness's many small, short-lived allocations (frames, tasks, replies)
/// faster than the system allocator; PERF.md has the measurement.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// Exit status for `--strict` when a frame is invalid, and for `load` when a request failed.
const EXIT_INVALID: u8 = 1;
/// Exit status when the input cannot be opened or read, the output cannot be written, or
/// `load` cannot connect to its target or complete the MCP handshake.
const EXIT_IO: u8 = 2;

#[derive(Debug, Parser)]
#[command(name = "mcpwire", version, about = "JSON-RPC 2.0 / MCP wire tools and load harness")]
#[command(after_help = "Without a subcommand, runs `load` with its defaults: the embedded \
                        target (the `serve` handler in process, over a tokio duplex).")]
struct Cli {
    /// Log at debug level (logs go to standard error).
    #[arg(long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Drive concurrent MCP requests at a server and report throughput and latency.
    Load(LoadArgs),
    /// Serve MCP, both eras at once (tools: echo, sleep, route, confirm), on stdio, TCP, a Unix
    /// socket or Streamable HTTP.
    Serve(ServeArgs),
    /// Classify each line of an NDJSON capture, or summarise it with decoder throughput.
    #[command(long_about = INSPECT_ABOUT)]
    Inspect(InspectArgs),
}

#[derive(Debug, Args)]
struct LoadArgs {
    /// embedded | stdio:CMD | tcp:ADDR | unix:PATH | http://HOST:PORT/PATH. `stdio:` runs CMD
    /// with `sh -c`; `http://` speaks MCP's Streamable HTTP.
    #[arg(long, default_value = "embedded")]
    target: load::Target,
    /// Requests in flight at once (one worker each).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    concurrency: u64,
    /// Stop after this many measured requests.
    #[arg(long, conflicts_with = "duration")]
    requests: Option<u64>,
    /// Stop after this many seconds of measurement (default 5, unless --requests is given).
    #[arg(long)]
    duration: Option<f64>,
    /// Seconds of load before measuring starts.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// The request to send.
    #[arg(long, value_enum, default_value = "tools/call")]
    method: load::Method,
    /// The tool `tools/call` calls (its `message` argument carries the payload).
    #[arg(long, default_value = "echo")]
    tool: String,
    /// The tool's arguments as JSON (such as '{"ms":10}' for sleep), instead of a generated
    /// `message`; the result is then only checked for `isError`.
    #[arg(long, value_name = "JSON", value_parser = parse_json)]
    arguments: Option<serde_json::Value>,
    /// Size of each echo message in bytes (non-ASCII text and characters JSON must escape).
    #[arg(long, default_value_t = 64)]
    payload_bytes: usize,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// The MCP protocol version to speak: `auto` detects the server's era (a `server/discover`
    /// probe, falling back to `initialize` for a legacy server), or one version such as
    /// 2026-07-28 (modern: no handshake, `_meta` on every request) or 2025-11-25 (legacy).
    /// The modern era has no `ping`: under `auto`, `--method ping` speaks the newest legacy
    /// version.
    #[arg(long, value_name = "VERSION", default_value = "auto")]
    protocol_version: mcpwire::mcp::client::VersionChoice,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    listen: ListenArgs,
    #[command(flatten)]
    limits: serve::LimitArgs,
    #[command(flatten)]
    http: serve::HttpArgs,
}

#[derive(Debug, Args)]
#[group(multiple = false)]
struct ListenArgs {
    /// Serve on standard input and output (the default).
    #[arg(long)]
    stdio: bool,
    /// Listen on a TCP address, such as 127.0.0.1:7000.
    #[arg(long, value_name = "ADDR")]
    tcp: Option<String>,
    /// Listen on a Unix socket path.
    #[arg(long, value_name = "PATH")]
    unix: Option<PathBuf>,
    /// Serve MCP's Streamable HTTP on an address: HOST:PORT, or a PORT on 127.0.0.1 (a port of
    /// 0 picks one; the address is printed on standard error).
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
}

const INSPECT_ABOUT: &str = "\
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

#[derive(Debug, Args)]
struct InspectArgs {
    /// NDJSON input; standard input when absent or `-`.
    file: Option<PathBuf>,
    /// Print counts by kind, bytes, elapsed time and MB/s instead of one line per frame.
    #[arg(long)]
    summary: bool,
    /// Exit with status 1 if any frame (or batch element) is invalid.
    #[arg(long)]
    strict: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = if cli.verbose { tracing::Level::DEBUG } else { tracing::Level::WARN };
    tracing_subscriber::fmt().with_writer(io::stderr).with_max_level(level).init();
    match cli.command {
        Some(Command::Inspect(args)) => run_inspect(&args),
        Some(Command::Serve(args)) => run_serve(&args),
        Some(Command::Load(args)) => run_load(&args),
        None => run_load(&LoadArgs::parse_defaults()),
    }
}

impl LoadArgs {
    /// `load` with every option at its default.
    fn parse_defaults() -> Self {
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            load: LoadArgs,
        }
        Only::parse_from(["mcpwire"]).load
    }
}

fn parse_json(s: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(s).map_err(|e| format!("not JSON: {e}"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime")
}

fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

fn run_load(args: &LoadArgs) -> ExitCode {
    let plan = load::Plan {
        target: args.target.clone(),
        concurrency: usize::try_from(args.concurrency).unwrap_or(usize::MAX),
        requests: args.requests,
        duration: seconds(args.duration.unwrap_or(5.0)),
        warmup: seconds(args.warmup),
        method: args.method,
        tool: args.tool.clone(),
        arguments: args.arguments.clone(),
        payload_bytes: args.payload_bytes,
        filler: load::filler(args.payload_bytes),
        timeout: seconds(args.timeout),
        protocol_version: args.protocol_version.clone(),
    };
    let rt = runtime();
    let outcome = rt.block_on(async {
        // Registered before connecting, so a Ctrl-C at any point yields the partial report
        // rather than the default action (killing the process).
        let interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt());
        let interrupt = async move {
            match interrupt {
                Ok(mut sig) => drop(sig.recv().await),
                Err(_) => std::future::pending().await,
            }
        };
        load::run(plan, interrupt).await
    });
    // A child's stdio may hold blocking reads; do not wait for them.
    rt.shutdown_background();
    match outcome {
        Ok(report) => {
            if args.json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.to_text());
            }
            if report.error_count() > 0 { ExitCode::from(EXIT_INVALID) } else { ExitCode::SUCCESS }
        }
        Err(e) => {
            eprintln!("mcpwire: {e}");
            ExitCode::from(EXIT_IO)
        }
    }
}

fn run_serve(args: &ServeArgs) -> ExitCode {
    let listen = match (&args.listen.tcp, &args.listen.unix, &args.listen.http) {
        (Some(addr), _, _) => serve::Listen::Tcp(addr.clone()),
        (_, Some(path), _) => serve::Listen::Unix(path.clone()),
        (_, _, Some(addr)) => {
            serve::Listen::Http(addr.clone(), args.http.server(args.limits.builder()))
        }
        _ => serve::Listen::Stdio,
    };
    let rt = runtime();
    let outcome = rt.block_on(serve::run(listen, args.limits.builder()));
    // Standard input is read on a blocking thread that only EOF would end; do not wait for it.
    rt.shutdown_background();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpwire: serve: {e}");
            ExitCode::from(EXIT_IO)
        }
    }
}

fn run_inspect(args: &InspectArgs) -> ExitCode {
    let mode = if args.summary { inspect::Mode::Summary } else { inspect::Mode::Lines };
    let outcome = match args.file.as_deref() {
        None => inspect::run(io::stdin().lock(), "<stdin>", mode),
        Some(path) if path.as_os_str() == "-" => inspect::run(io::stdin().lock(), "<stdin>", mode),
        Some(path) => match File::open(path) {
            Ok(file) => inspect::run(file, &path.display().to_string(), mode),
            Err(err) => {
                eprintln!("mcpwire: cannot open {}: {err}", path.display());
                return ExitCode::from(EXIT_IO);
            }
        },
    };
    finish(outcome, args.strict)
}

fn finish(outcome: Result<inspect::Totals, inspect::Failure>, strict: bool) -> ExitCode {
    match outcome {
        Ok(totals) if strict && totals.invalid_messages() > 0 => ExitCode::from(EXIT_INVALID),
        Ok(_) => ExitCode::SUCCESS,
        // The reader of our output went away (`mcpwire inspect big.ndjson | head`): stop quietly.
        Err(inspect::Failure::Write(err)) if err.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(inspect::Failure::Write(err)) => {
            eprintln!("mcpwire: cannot write output: {err}");
            ExitCode::from(EXIT_IO)
        }
        Err(inspect::Failure::Read(err)) => {
            eprintln!("mcpwire: cannot read input: {err}");
            ExitCode::from(EXIT_IO)
        }
    }
}
