//! The `load` subcommand's flags and its runs: `load`, `load init` and the exit status a run
//! gives (its budgets).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::{EXIT_INVALID, EXIT_IO, connect_args, load, runtime};

#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    #[command(subcommand)]
    pub(crate) init: Option<LoadCommand>,
    /// embedded | stdio:CMD | tcp:ADDR | unix:PATH | http://HOST:PORT/PATH |
    /// https://HOST:PORT/PATH. `stdio:` runs CMD with `sh -c`; `http://` and `https://` speak
    /// MCP's Streamable HTTP (see "HTTP and TLS" for headers and certificates).
    #[arg(long, default_value = "embedded", value_parser = load::parse_target)]
    target: mcpwire::transport::Target,
    /// Closed loop: requests in flight at once (one worker each). Measures throughput, not
    /// latency under a given load.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=MAX_CONCURRENCY))]
    concurrency: u64,
    /// Open loop: send this many requests per second from one schedule, each timed from its
    /// intended start (no coordinated omission).
    #[arg(long, value_name = "PER_SECOND", value_parser = parse_rate)]
    rate: Option<f64>,
    /// Open loop: the most requests in flight at once; the rest wait, still timed from their
    /// intended start, and are counted `late`.
    #[arg(long, default_value_t = load::DEFAULT_MAX_IN_FLIGHT as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_in_flight: u64,
    /// Ramp the rate (with --rate) or the concurrency (closed loop) through stages, from 0:
    /// DURATION:TARGET,… such as 10s:100,30s:1000,10s:0. The run lasts as long as the stages,
    /// with no warm-up.
    #[arg(long, value_name = "STAGES", value_parser = parse_stages,
          conflicts_with_all = ["duration", "requests", "find_capacity"])]
    stages: Option<Stages>,
    /// Open-loop steps of --duration each, from --rate (default 100) up by --step-factor,
    /// until p99 passes --max-p99 (default 100 ms) or the error rate passes --max-error-rate
    /// (default 0.01); reports the last rate that held.
    #[arg(long, conflicts_with = "requests")]
    find_capacity: bool,
    /// --find-capacity: each step's rate over the last.
    #[arg(long, default_value_t = 1.5, value_parser = parse_factor)]
    step_factor: f64,
    /// Stop after this many measured requests.
    #[arg(long, conflicts_with = "duration")]
    requests: Option<u64>,
    /// Stop after this many seconds of measurement (default 5, unless --requests is given).
    #[arg(long)]
    duration: Option<f64>,
    /// Seconds of load before measuring starts.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// A weighted mix of operations from a TOML file (see `load init`), instead of --method.
    #[arg(long, value_name = "FILE.toml", conflicts_with_all = ["method", "tool", "arguments"])]
    scenario: Option<PathBuf>,
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
    /// Size of each echo message in bytes (non-ASCII text and characters JSON must escape), up
    /// to the frame limit (16 MiB).
    #[arg(long, default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(0..=mcpwire::limits::DEFAULT_MAX_FRAME_BYTES as u64))]
    payload_bytes: u64,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// The MCP protocol version to speak: `auto` detects the server's era (a `server/discover`
    /// probe, falling back to `initialize` for a legacy server), or one version such as
    /// 2026-07-28 (modern: no handshake, `_meta` on every request) or 2025-11-25 (legacy).
    /// The modern era has no `ping`: under `auto`, `--method ping` speaks the newest legacy
    /// version.
    #[arg(long, value_name = "VERSION", default_value = "auto")]
    protocol_version: mcpwire::mcp::negotiation::VersionChoice,
    /// Budget: exit 1 when the p99 latency of successes passes this many milliseconds.
    #[arg(long, value_name = "MS", value_parser = parse_non_negative)]
    max_p99: Option<f64>,
    /// Budget: exit 1 when the share of failed requests (dropped ones included) passes R
    /// (0 to 1). Without it, any failed request exits 1.
    #[arg(long, value_name = "R", value_parser = parse_share)]
    max_error_rate: Option<f64>,
    /// Write the run's HdrHistogram interval log (one histogram per operation per second) to
    /// FILE, for `mcpwire report merge`.
    #[arg(long, value_name = "FILE")]
    hdr_log: Option<PathBuf>,
    /// Write the report as one self-contained HTML page (plots inline, nothing loaded).
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    json: bool,
    /// Speak HTTP/2 only: over cleartext with prior knowledge to an http:// target, by ALPN to
    /// an https:// one. One connection carries every request in flight (as many at once as
    /// the server's SETTINGS_MAX_CONCURRENT_STREAMS lets).
    #[arg(long)]
    http2: bool,
    /// Declare the tasks extension (io.modelcontextprotocol/tasks): the server may run a tool
    /// call as a task, which is polled to its end (pollIntervalMs honoured, within 10 ms and
    /// 5 s). Its latency is then the time to completion; the time to the first answer (the
    /// task's creation) is reported beside it. A task that asks for input fails
    /// (task_input_required): the generator answers none.
    #[arg(long)]
    tasks: bool,
    #[command(flatten)]
    connect_args: connect_args::ConnectArgs,
    #[command(flatten)]
    replay: load::replay::ReplayArgs,
    #[command(flatten)]
    live: load::live::LiveArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum LoadCommand {
    /// Print a starting scenario (TOML) from the target's tools/list, arguments generated from
    /// each tool's inputSchema.
    Init {
        /// The target, as --target takes it.
        #[arg(value_parser = load::parse_target)]
        target: mcpwire::transport::Target,
        /// The MCP protocol version to speak (as for `load`).
        #[arg(long, value_name = "VERSION", default_value = "auto")]
        protocol_version: mcpwire::mcp::negotiation::VersionChoice,
        #[command(flatten)]
        connect_args: connect_args::ConnectArgs,
    },
    /// Compare two runs (`--json` reports or `--hdr-log` logs) per operation: exit 1 when one
    /// regressed past a threshold and significantly over the per-second windows.
    Compare(load::compare::CompareArgs),
}

impl LoadArgs {
    /// `load` with every option at its default.
    pub(crate) fn parse_defaults() -> Self {
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

/// `--stages`, parsed.
#[derive(Debug, Clone)]
struct Stages(Vec<load::model::Stage>);

fn parse_stages(s: &str) -> Result<Stages, String> {
    load::model::parse_stages(s).map(Stages)
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= MAX_RATE => Ok(r),
        _ => Err(format!("a rate is a number of requests per second in (0, {MAX_RATE}]")),
    }
}

/// The highest `--concurrency` (a task each, whatever the stages ask).
const MAX_CONCURRENCY: u64 = 1_000_000;

/// The highest `--rate`: far past what one generator sends, low enough that a schedule's
/// request count stays exact in an `f64`.
const MAX_RATE: f64 = 1e9;

fn parse_factor(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 1.0 && r <= 100.0 => Ok(r),
        _ => Err("a step factor is a number in (1, 100]".into()),
    }
}

fn parse_non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
        _ => Err("expected a number, 0 or more".into()),
    }
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err("expected a share from 0 to 1".into()),
    }
}

fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

pub(crate) fn run_load(args: &LoadArgs) -> ExitCode {
    let mix = match &args.scenario {
        Some(path) => match load::scenario::load_file(path) {
            Ok(mix) => mix,
            Err(e) => {
                eprintln!("mcpwire: scenario {e}");
                return ExitCode::from(EXIT_IO);
            }
        },
        None => load::Mix::new(vec![load::Operation::single(
            args.method,
            &args.tool,
            args.arguments.clone(),
        )]),
    };
    // A session's users are closed-loop workers; an open loop schedules requests, not users.
    if mix.session.is_some() && (args.rate.is_some() || args.find_capacity) {
        eprintln!(
            "mcpwire: a scenario of [[step]]s runs users in the closed loop (--concurrency users, \
             --stages to ramp them), not with --rate or --find-capacity"
        );
        return ExitCode::from(EXIT_IO);
    }
    // A stage's target is a concurrency (one task each) or a rate: bounded as the flags are.
    if let Some(stages) = &args.stages {
        let (limit, what) = match args.rate {
            Some(_) => (MAX_RATE, "a rate"),
            None => (MAX_CONCURRENCY as f64, "a concurrency"),
        };
        if let Some(s) = stages.0.iter().find(|s| s.target > limit) {
            eprintln!("mcpwire: --stages: {} is past {limit}, the most {what} can be", s.target);
            return ExitCode::from(EXIT_IO);
        }
    }
    let concurrency = match &args.stages {
        Some(stages) if args.rate.is_none() => load::Shape::Stages(stages.0.clone()),
        _ => load::Shape::Constant(args.concurrency as f64),
    };
    let max_in_flight = usize::try_from(args.max_in_flight).unwrap_or(usize::MAX);
    let model = match (args.rate, &args.stages) {
        (Some(_), Some(stages)) => {
            load::Model::Open { rate: load::Shape::Stages(stages.0.clone()), max_in_flight }
        }
        (Some(rate), None) => {
            load::Model::Open { rate: load::Shape::Constant(rate), max_in_flight }
        }
        (None, _) if args.find_capacity => {
            load::Model::Open { rate: load::Shape::Constant(100.0), max_in_flight }
        }
        (None, _) => load::Model::Closed(concurrency),
    };
    let capacity = args.find_capacity.then(|| load::Capacity {
        start: args.rate.unwrap_or(100.0),
        factor: args.step_factor,
        max_p99_ms: args.max_p99.unwrap_or(100.0),
        max_error_rate: args.max_error_rate.unwrap_or(0.01),
        max_steps: load::DEFAULT_MAX_CAPACITY_STEPS,
    });
    if args.http2 && !args.target.is_http() {
        eprintln!("mcpwire: --http2 needs an http:// or https:// target, not {}", args.target);
        return ExitCode::from(EXIT_IO);
    }
    let connect = match args.connect_args.apply(mcpwire::transport::ConnectOptions::default()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mcpwire: {e}");
            return ExitCode::from(EXIT_IO);
        }
    };
    let payload_bytes = usize::try_from(args.payload_bytes).unwrap_or(usize::MAX);
    let plan = load::Plan {
        target: args.target.clone(),
        model,
        capacity,
        requests: args.requests,
        duration: seconds(args.duration.unwrap_or(5.0)),
        warmup: seconds(args.warmup),
        mix,
        payload_bytes,
        filler: load::filler(payload_bytes),
        timeout: seconds(args.timeout),
        protocol_version: args.protocol_version.clone(),
        hdr_log: args.hdr_log.clone(),
        http2: args.http2,
        connect,
        tasks: args.tasks,
        replay: None,
        live: args.live.clone(),
    };
    let plan = match args.replay.apply(plan, max_in_flight) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mcpwire: {e}");
            return ExitCode::from(EXIT_IO);
        }
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
            let broken = report.broken(args.max_p99, args.max_error_rate);
            if let Some(path) = &args.report
                && let Err(e) = write_html(path, &report, &broken)
            {
                return e;
            }
            if let Some(e) = &report.log_error {
                eprintln!("mcpwire: cannot write the HdrHistogram log: {e}");
                return ExitCode::from(EXIT_IO);
            }
            verdict(&report, &broken, args.max_error_rate, args.find_capacity)
        }
        Err(e) => {
            eprintln!("mcpwire: {e}");
            ExitCode::from(EXIT_IO)
        }
    }
}

/// Exit 1 naming each broken budget; without `--max-error-rate`, any failed or dropped request
/// exits 1. `--find-capacity` fails only when no step held (its thresholds end the search).
fn verdict(
    report: &load::Report,
    broken: &[load::report::Broken],
    max_error_rate: Option<f64>,
    find_capacity: bool,
) -> ExitCode {
    if find_capacity {
        let held = report.capacity.as_ref().is_some_and(|c| !c["last_held_rps"].is_null());
        if !held {
            eprintln!("mcpwire: no rate held");
        }
        return if held { ExitCode::SUCCESS } else { ExitCode::from(EXIT_INVALID) };
    }
    for b in broken {
        eprintln!("mcpwire: {b}");
    }
    let failed = max_error_rate.is_none() && (report.error_count() > 0 || report.dropped > 0);
    if broken.is_empty() && !failed { ExitCode::SUCCESS } else { ExitCode::from(EXIT_INVALID) }
}

/// Writes `--report FILE.html`; on failure, says so and gives the exit status.
pub(crate) fn write_html(
    path: &std::path::Path,
    report: &load::Report,
    broken: &[load::report::Broken],
) -> Result<(), ExitCode> {
    let broken: Vec<String> = broken.iter().map(ToString::to_string).collect();
    std::fs::write(path, load::html::render(report, &broken)).map_err(|e| {
        eprintln!("mcpwire: cannot write {}: {e}", path.display());
        ExitCode::from(EXIT_IO)
    })
}

pub(crate) fn run_init(
    target: mcpwire::transport::Target,
    version: mcpwire::mcp::negotiation::VersionChoice,
    connect_args: &connect_args::ConnectArgs,
) -> ExitCode {
    let connect = match connect_args.apply(mcpwire::transport::ConnectOptions::default()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mcpwire: {e}");
            return ExitCode::from(EXIT_IO);
        }
    };
    let rt = runtime();
    let outcome = rt.block_on(load::init(target, version, connect));
    rt.shutdown_background();
    match outcome {
        Ok(toml) => {
            print!("{toml}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcpwire: {e}");
            ExitCode::from(EXIT_IO)
        }
    }
}
