//! `mcpwire`: the load-testing harness and debugging tools.
//!
//! Subcommands:
//! - `inspect [FILE]`: classify every line of an NDJSON capture (one JSON line per frame, or a
//!   `--summary` with counts and decoder throughput).
//!
//! Without a subcommand it runs `inspect --summary` on the sample capture bundled in the binary.

mod inspect;

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// The sample MCP session capture, embedded so the binary runs with no input at hand.
const SAMPLE: &[u8] = include_bytes!("../../../tests/data/capture.ndjson");

/// Exit status for `--strict` when a frame is invalid.
const EXIT_INVALID: u8 = 1;
/// Exit status when the input cannot be opened or read, or the output cannot be written.
const EXIT_IO: u8 = 2;

#[derive(Debug, Parser)]
#[command(name = "mcpwire", version, about = "JSON-RPC 2.0 / MCP wire tools")]
#[command(after_help = "Without a subcommand, runs `inspect --summary` on the bundled sample \
                        capture (tests/data/capture.ndjson).")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Classify each line of an NDJSON capture, or summarise it with decoder throughput.
    #[command(long_about = INSPECT_ABOUT)]
    Inspect(InspectArgs),
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
    match cli.command {
        Some(Command::Inspect(args)) => run_inspect(&args),
        None => {
            eprintln!("mcpwire: no subcommand; running `inspect --summary` on the bundled sample");
            finish(
                inspect::run(
                    SAMPLE,
                    "bundled sample (tests/data/capture.ndjson)",
                    inspect::Mode::Summary,
                ),
                false,
            )
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
