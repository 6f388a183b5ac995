//! `mcpwire bridge`: one stdio MCP server, started as a child, served to many clients over
//! Streamable HTTP (`mcpwire::bridge`), with every guard and limit `serve --http` has; or,
//! with `--stdio URL`, the reverse: a remote Streamable HTTP server served on stdio
//! (`reverse.rs`).

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::builder::RangedU64ValueParser;
use mcpwire::bridge::BridgeBuilder;
use mcpwire::http::HttpServer;
use mcpwire::limits::{
    DEFAULT_BRIDGE_CHILD_IN_FLIGHT, DEFAULT_BRIDGE_CLIENT_IN_FLIGHT, DEFAULT_REVERSE_SUBSCRIPTIONS,
};
use mcpwire::transport::ChildStderr;

use crate::{connect_args, serve};

mod reverse;

/// `mcpwire bridge`'s arguments.
#[derive(Debug, clap::Args)]
pub struct BridgeArgs {
    /// Serve Streamable HTTP on this address: HOST:PORT, or a PORT on 127.0.0.1 (a port of 0
    /// picks one; the URL is printed on standard error).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:3000")]
    http: String,
    /// The reverse: serve the Streamable HTTP MCP server at this URL (http:// or https://) on
    /// standard input and output, for a host that only starts processes (no CMD then).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    stdio: Option<String>,
    /// With --stdio: seconds a request waits for the remote's answer (progress restarts it;
    /// 0: as long as the host waits).
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_REQUEST_TIMEOUT.as_secs_f64())]
    remote_timeout: f64,
    /// With --stdio: resource subscriptions kept to be made again when the remote's session is
    /// lost and opened anew (its `logging/setLevel` is set again too); past it a subscription
    /// still reaches the remote, but is not made again.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_REVERSE_SUBSCRIPTIONS)]
    max_remembered_subscriptions: usize,
    #[command(flatten)]
    connect_args: connect_args::ConnectArgs,
    #[command(flatten)]
    bridge: BridgeLimits,
    #[command(flatten)]
    limits: serve::LimitArgs,
    #[command(flatten)]
    http_args: serve::HttpArgs,
    /// The stdio MCP server to run, and its arguments (after `--`).
    #[arg(required_unless_present = "stdio", last = true, value_name = "CMD")]
    command: Vec<String>,
}

/// The bridge's own bounds (`mcpwire bridge --help`, under "Bridge").
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Bridge")]
struct BridgeLimits {
    /// Requests one client may have in flight to the child; one more is answered -32000 at
    /// once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BRIDGE_CLIENT_IN_FLIGHT,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_client_in_flight: usize,
    /// Requests of all clients in flight to the child at once; past it they wait, each
    /// waiting client served in turn.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BRIDGE_CHILD_IN_FLIGHT,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_child_in_flight: usize,
    /// Seconds a forwarded request waits for the child's answer (progress restarts it; 0:
    /// as long as its client waits).
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_REQUEST_TIMEOUT.as_secs_f64())]
    child_timeout: f64,
    /// Seconds a request may wait for the child before the bridge pings it; a child that does
    /// not answer the ping within as long again hangs, and is killed and started again (0:
    /// never pinged).
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_BRIDGE_HANG_TIMEOUT.as_secs_f64())]
    hang_timeout: f64,
    /// Calls of modern clients to a legacy-only child held at once for their input; past it
    /// the child's request is refused and the call answered -32000.
    #[arg(long, value_name = "N", default_value_t = mcpwire::limits::DEFAULT_BRIDGE_HELD_CALLS,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_held_calls: usize,
    /// `subscriptions/listen` streams of modern clients held open at once when the child is
    /// legacy-only (the bridge serves them from the child's session); one more is refused
    /// -32000.
    #[arg(long, value_name = "N", default_value_t = mcpwire::limits::DEFAULT_BRIDGE_LISTEN_STREAMS,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_listen_streams: usize,
    /// Seconds the child has to answer the bridge's opening `server/discover` (and then its
    /// `initialize`, which tells a child that keeps a legacy session too from a modern-only
    /// one); past it the child is opened as a legacy one.
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_BRIDGE_DISCOVER_TIMEOUT.as_secs_f64())]
    discover_timeout: f64,
    /// Seconds a held call waits for its client to come back with the input.
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_BRIDGE_HELD_TIMEOUT.as_secs_f64())]
    held_timeout: f64,
    /// Seconds before a child that exited is started again, doubling for each restart in a
    /// row.
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_BRIDGE_RESTART_MIN.as_secs_f64())]
    restart_min: f64,
    /// The longest wait between two restarts, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_BRIDGE_RESTART_MAX.as_secs_f64())]
    restart_max: f64,
    /// Give up after this many restarts in a row (default: never).
    #[arg(long, value_name = "N")]
    max_restarts: Option<u32>,
    /// Isolated mode: a child of its own for each legacy session (for servers that keep state
    /// per connection), never restarted; 2026-07-28 requests, which have no session, are
    /// refused with -32000.
    #[arg(long)]
    isolated: bool,
    /// With --isolated: children at once; one more session's initialize is refused with
    /// -32000.
    #[arg(long, value_name = "N", default_value_t = mcpwire::limits::DEFAULT_BRIDGE_MAX_CHILDREN,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_children: usize,
    /// With --isolated: seconds a child may go without a request before it and its session
    /// end (0: never).
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_BRIDGE_IDLE_TIMEOUT.as_secs_f64())]
    idle_timeout: f64,
}

fn seconds(s: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(s).ok().filter(|d| !d.is_zero())
}

/// Runs `mcpwire bridge` until SIGINT or SIGTERM.
pub fn run(args: &BridgeArgs) -> ExitCode {
    let rt = match crate::try_runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the runtime: {e}")),
    };
    let outcome = match &args.stdio {
        Some(url) => {
            let timeout = seconds(args.remote_timeout);
            let kept = args.max_remembered_subscriptions;
            rt.block_on(reverse::serve(
                url,
                &args.connect_args,
                args.limits.builder(),
                timeout,
                kept,
            ))
        }
        None => rt.block_on(serve_bridge(args)),
    };
    rt.shutdown_timeout(Duration::from_secs(1));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(e: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "mcpwire: bridge: {e}");
    ExitCode::from(crate::EXIT_IO)
}

/// The bridge served: one child shared, or a child per session.
enum Served {
    Shared(mcpwire::bridge::Bridge),
    Isolated(mcpwire::bridge::IsolatedBridge),
}

async fn serve_bridge(args: &BridgeArgs) -> Result<(), String> {
    let signals = serve::shutdown_signals().map_err(|e| e.to_string())?;
    let b = &args.bridge;
    let mut builder = BridgeBuilder::new()
        .max_client_in_flight(b.max_client_in_flight)
        .max_child_in_flight(b.max_child_in_flight)
        .request_timeout(seconds(b.child_timeout))
        .hang_timeout(seconds(b.hang_timeout))
        .max_held_calls(b.max_held_calls)
        .max_listen_streams(b.max_listen_streams)
        .held_timeout(
            seconds(b.held_timeout).unwrap_or(mcpwire::limits::DEFAULT_BRIDGE_HELD_TIMEOUT),
        )
        .discover_timeout(
            seconds(b.discover_timeout).unwrap_or(mcpwire::limits::DEFAULT_BRIDGE_DISCOVER_TIMEOUT),
        )
        .max_restarts(b.max_restarts)
        .stderr(ChildStderr::Lines(Arc::new(|line: &str| {
            // Written, not printed: a closed stderr must not end the bridge.
            let _ = writeln!(std::io::stderr(), "mcpwire: bridge: child: {line}");
        })));
    if let (Some(min), Some(max)) = (seconds(b.restart_min), seconds(b.restart_max)) {
        builder = builder.restart_backoff(min, max);
    }
    let (program, rest) = args.command.split_first().ok_or("no command to run")?;
    let mut server = HttpServer::new(args.limits.builder());
    let bridge = if b.isolated {
        let idle = seconds(b.idle_timeout);
        let pool = builder.isolated().max_children(b.max_children).idle_timeout(idle);
        Served::Isolated(pool.start(program, rest))
    } else {
        let bridge = builder.start(program, rest).await.map_err(|e| format!("{program}: {e}"))?;
        if let Some(tools) = bridge.tool_headers().await {
            server = server.tool_headers(tools);
        }
        Served::Shared(bridge)
    };
    let (mut server, tls) = args.http_args.server_with(server).map_err(|e| e.to_string())?;
    let listener = mcpwire::http::server::bind(&args.http).await.map_err(|e| e.to_string())?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let url = format!("{scheme}://{addr}{}", server.endpoint());
    if let Some(rs) = args.http_args.auth.resource_server(&url)? {
        server = server.auth(rs);
    }
    let _ = writeln!(std::io::stderr(), "mcpwire: serving MCP on {url}");
    let mut reloads = Vec::new();
    if let Some(tls) = tls {
        if let Some(every) = seconds(args.http_args.tls_watch) {
            reloads.push(tls.watch(every, |r| serve::say_reloaded(r, "its files changed")));
        }
        reloads.push(tokio::spawn(serve::reload_on_sighup(tls)));
    }
    let stop = async {
        let name = signals.await;
        tracing::info!(signal = name, "shutting down");
    };
    let served = match bridge {
        Served::Shared(b) => b.serve(server, listener, stop).await,
        Served::Isolated(b) => b.serve(server, listener, stop).await,
    };
    for r in reloads {
        r.abort();
    }
    served.map_err(|e| e.to_string())
}
