//! `mcpwire serve`: a small, well-behaved MCP server on the peer, for clients to be pointed at
//! and for `mcpwire load` to drive in process.
//!
//! Methods: `initialize`, `notifications/initialized`, `ping`, `tools/list`, `tools/call` with two
//! tools, `echo` and `sleep`. Tool arguments are untrusted: a wrong type or size is a tool result
//! with `isError: true` (MCP 2025-11-25 treats input validation as a tool error), an unknown tool
//! is -32602 and an unknown method -32601.

use std::borrow::Cow;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::RangedU64ValueParser;
use mcpwire::http::HttpServer;
use mcpwire::limits::{
    DEFAULT_MAX_BATCH_LEN, DEFAULT_MAX_DEPTH, DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_HANDLERS,
    DEFAULT_MAX_HELD_REQUEST_BYTES, DEFAULT_MAX_QUEUED_REQUESTS, DEFAULT_MAX_WRITE_QUEUE_BYTES,
    MAX_FRAME_BYTES_CEILING,
};
use mcpwire::peer::{
    Context, DEFAULT_UNADDRESSED_REPLIES_PER_SECOND, Handler, Incoming, PeerBuilder, Reply,
    RpcError,
};
use mcpwire::transport;
use mcpwire::{ErrorCode, Json, Limits, ReplyDetail};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Protocol versions `initialize` agrees to, oldest first; a client offering another one is
/// answered with the latest.
pub const PROTOCOL_VERSIONS: [&str; 4] = mcpwire::http::PROTOCOL_VERSIONS;

/// The longest `echo` message accepted, in bytes.
pub const MAX_ECHO_BYTES: usize = 1 << 20;

/// The longest `sleep`, in milliseconds.
pub const MAX_SLEEP_MS: u64 = 60_000;

/// The `tools/list` result: fixed, so it is written once.
const TOOLS: &str = r#"{"tools":[{"name":"echo","description":"Returns its message exactly.","inputSchema":{"type":"object","properties":{"message":{"type":"string","description":"The text to return (at most 1 MiB)."}},"required":["message"]}},{"name":"sleep","description":"Waits the given number of milliseconds, then answers; cancellable.","inputSchema":{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":60000,"description":"How long to wait, in milliseconds."}},"required":["ms"]}}]}"#;

/// The MCP server's request handler.
#[derive(Clone, Copy, Debug, Default)]
pub struct McpServer;

impl Handler for McpServer {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "initialize" => initialize(req),
            "ping" => Ok(Reply::empty()),
            "tools/list" => Ok(Reply::raw(TOOLS)),
            "tools/call" => call(req, cx).await,
            other => Err(RpcError::method_not_found(other)),
        }
    }

    async fn notification(&self, n: &Incoming, _cx: &Context) {
        match n.method() {
            "notifications/initialized" => tracing::debug!("client initialized"),
            other => tracing::debug!(method = other, "notification ignored"),
        }
    }
}

fn initialize(req: &Incoming) -> Result<Reply, RpcError> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "protocolVersion", borrow)]
        protocol_version: Cow<'a, str>,
    }
    #[derive(Serialize)]
    struct Info {
        name: &'static str,
        version: &'static str,
    }
    #[derive(Serialize)]
    struct Capabilities {
        tools: serde_json::Map<String, serde_json::Value>,
    }
    #[derive(Serialize)]
    struct Initialized {
        #[serde(rename = "protocolVersion")]
        protocol_version: &'static str,
        capabilities: Capabilities,
        #[serde(rename = "serverInfo")]
        server_info: Info,
    }
    let p: Params<'_> = req.params_as().map_err(RpcError::invalid_params)?;
    let offered = p.protocol_version.as_ref();
    let agreed = PROTOCOL_VERSIONS
        .iter()
        .find(|v| **v == offered)
        .unwrap_or(&PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1]);
    tracing::debug!(offered, agreed, "initialize");
    Reply::json(&Initialized {
        protocol_version: agreed,
        capabilities: Capabilities { tools: serde_json::Map::new() },
        server_info: Info { name: "mcpwire", version: env!("CARGO_PKG_VERSION") },
    })
}

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(rename = "progressToken", borrow, default)]
    progress_token: Option<&'a RawValue>,
}

async fn call(req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
    let p: CallParams<'_> = req.params_as().map_err(RpcError::invalid_params)?;
    let args = p.arguments.map_or("{}", RawValue::get);
    match p.name.as_ref() {
        "echo" => Ok(echo(args)),
        "sleep" => Ok(sleep(args, p.meta.and_then(|m| m.progress_token), cx).await),
        other => Err(RpcError::new(ErrorCode::INVALID_PARAMS, format!("Unknown tool: {other}"))),
    }
}

fn echo(args: &str) -> Reply {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow)]
        message: Cow<'a, str>,
    }
    match serde_json::from_str::<Args<'_>>(args) {
        Err(e) => tool_error(&format!("echo: invalid arguments: {e}")),
        Ok(a) if a.message.len() > MAX_ECHO_BYTES => tool_error(&format!(
            "echo: message is {} bytes; at most {MAX_ECHO_BYTES} are accepted",
            a.message.len()
        )),
        Ok(a) => text(&a.message, false),
    }
}

/// Sleeps; with a progress token, sends `notifications/progress` as it starts and as it ends.
async fn sleep(args: &str, token: Option<&RawValue>, cx: &Context) -> Reply {
    #[derive(Deserialize)]
    struct Args {
        ms: serde_json::Number,
    }
    let ms = match serde_json::from_str::<Args>(args) {
        Err(e) => return tool_error(&format!("sleep: invalid arguments: {e}")),
        Ok(a) => a.ms.as_u64().filter(|ms| *ms <= MAX_SLEEP_MS),
    };
    let Some(ms) = ms else {
        return tool_error(&format!("sleep: ms must be an integer from 0 to {MAX_SLEEP_MS}"));
    };
    #[derive(Serialize)]
    struct Progress<'a> {
        #[serde(rename = "progressToken")]
        token: &'a RawValue,
        progress: u64,
        total: u64,
    }
    let progress = |done: u64| async move {
        if let Some(token) = token {
            let p = Progress { token, progress: done, total: ms };
            let sent = cx.peer().notify("notifications/progress", Some(Json(&p))).await;
            if let Err(e) = sent {
                tracing::debug!(error = %e, "progress not sent");
            }
        }
    };
    progress(0).await;
    // Dropped, and nothing answered, when the client cancels.
    tokio::time::sleep(Duration::from_millis(ms)).await;
    progress(ms).await;
    text(&format!("slept {ms}"), false)
}

/// A tool result of one text block.
fn text(text: &str, is_error: bool) -> Reply {
    #[derive(Serialize)]
    struct Block<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        text: &'a str,
    }
    #[derive(Serialize)]
    struct ToolResult<'a> {
        content: [Block<'a>; 1],
        #[serde(rename = "isError", skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    }
    let result = ToolResult { content: [Block { kind: "text", text }], is_error };
    // A struct of strings and a bool always serialises.
    Reply::json(&result).unwrap_or_else(|_| Reply::empty())
}

fn tool_error(message: &str) -> Reply {
    text(message, true)
}

/// The bounds `serve` holds each connection to (`mcpwire serve --help` lists them under
/// "Limits"); every one defaults to the library's default.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// The longest frame (one line, its line ending excluded). A longer line is discarded up to
    /// its newline, never buffered whole, and answered -32600 with "id": null.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_FRAME_BYTES,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_FRAME_BYTES_CEILING as u64))]
    max_frame_bytes: usize,
    /// The deepest nesting of arrays and objects, the message object being level 1. Deeper is
    /// answered -32700 with "id": null.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_DEPTH,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_depth: usize,
    /// The most elements in a batch. A longer batch is answered with one -32600, "id": null,
    /// and none of its elements is run.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_BATCH_LEN,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_batch_len: usize,
    /// Refuse every batch (as MCP 2025-06-18 removed them) with one -32600, "id": null.
    #[arg(long)]
    no_batches: bool,
    /// The most requests handled at once; further ones queue.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_HANDLERS,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_handlers: usize,
    /// The most requests held beyond those running; past it the server stops reading until one
    /// is answered.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_QUEUED_REQUESTS,
          value_parser = RangedU64ValueParser::<usize>::new())]
    max_queued_requests: usize,
    /// The most frame bytes held by requests admitted and not yet answered; past it the server
    /// stops reading until one is answered (a lone request is always admitted).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_HELD_REQUEST_BYTES,
          value_parser = RangedU64ValueParser::<usize>::new())]
    max_held_request_bytes: usize,
    /// The most encoded bytes waiting to be written; past it replies wait for the client to
    /// read.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_WRITE_QUEUE_BYTES,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_write_queue_bytes: usize,
    /// The most error replies with "id": null (to bytes that are not JSON, or messages whose id
    /// cannot be read) sent per second, with a burst of as many; the rest are dropped. 0 sends
    /// none.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_UNADDRESSED_REPLIES_PER_SECOND)]
    unaddressed_replies_per_second: u32,
    /// Error replies to invalid messages carry only the code and its message, not the reason in
    /// `data`.
    #[arg(long)]
    no_error_reasons: bool,
}

impl LimitArgs {
    /// A peer builder with these limits.
    pub fn builder(&self) -> PeerBuilder {
        let limits = Limits::default()
            .max_frame_bytes(self.max_frame_bytes)
            .max_depth(self.max_depth)
            .max_batch_len(self.max_batch_len)
            .batches(!self.no_batches)
            .max_handlers(self.max_handlers)
            .max_queued_requests(self.max_queued_requests)
            .max_held_request_bytes(self.max_held_request_bytes)
            .max_write_queue_bytes(self.max_write_queue_bytes);
        let detail = if self.no_error_reasons { ReplyDetail::Spec } else { ReplyDetail::Reason };
        PeerBuilder::new()
            .limits(limits)
            .reply_detail(detail)
            .unaddressed_replies_per_second(self.unaddressed_replies_per_second)
    }
}

/// Where `serve` listens.
#[derive(Debug, Clone)]
pub enum Listen {
    /// Standard input and output.
    Stdio,
    /// A TCP address.
    Tcp(String),
    /// A Unix socket path.
    Unix(PathBuf),
    /// Streamable HTTP on an address.
    Http(String, HttpServer),
}

/// How `serve --http` serves (`mcpwire serve --help` lists them under "HTTP").
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "HTTP")]
pub struct HttpArgs {
    /// The endpoint's path.
    #[arg(long, value_name = "PATH", default_value = "/mcp")]
    http_path: String,
    /// Also allow requests with this exact Origin (loopback origins and requests without one
    /// are always allowed; any other gets 403). Repeatable.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// The most sessions open at once; a new one past it gets 503.
    #[arg(long, value_name = "N", default_value_t = mcpwire::http::server::DEFAULT_MAX_SESSIONS,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_sessions: usize,
    /// Seconds a session may stay idle before it ends (0: never).
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::http::server::DEFAULT_SESSION_IDLE_TIMEOUT.as_secs_f64())]
    session_idle_timeout: f64,
    /// The most TCP connections served at once; past it the server stops accepting.
    #[arg(long, value_name = "N", default_value_t = mcpwire::http::server::DEFAULT_MAX_CONNECTIONS,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_connections: usize,
    /// Bytes of POST bodies held at once across all sessions (from before a body is read until
    /// its POST is answered); past it a POST waits, then gets 503.
    #[arg(long, value_name = "BYTES", default_value_t = mcpwire::http::server::DEFAULT_MAX_BODY_BYTES,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_body_bytes: usize,
    /// Seconds a client may take to send a request's headers, and then a POST's body (past it:
    /// the connection closed, or 408).
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::http::server::DEFAULT_READ_TIMEOUT.as_secs_f64())]
    read_timeout: f64,
    /// Answer GET with 405 instead of opening a stream of the server's other messages.
    #[arg(long)]
    no_get_stream: bool,
}

impl HttpArgs {
    /// A server with these settings, its sessions made by `builder`.
    pub fn server(&self, builder: PeerBuilder) -> HttpServer {
        let idle = (self.session_idle_timeout > 0.0)
            .then(|| Duration::try_from_secs_f64(self.session_idle_timeout).ok())
            .flatten();
        let mut server = HttpServer::new(builder)
            .path(self.http_path.clone())
            .max_sessions(self.max_sessions)
            .session_idle_timeout(idle)
            .max_connections(self.max_connections)
            .max_body_bytes(self.max_body_bytes)
            .get_stream(!self.no_get_stream);
        if let Ok(t) = Duration::try_from_secs_f64(self.read_timeout)
            && !t.is_zero()
        {
            server = server.read_timeout(t);
        }
        for o in &self.allow_origin {
            server = server.allow_origin(o.clone());
        }
        server
    }
}

/// Runs the server, each connection a peer made by `builder`, until its input ends, or SIGINT /
/// SIGTERM; either way what was queued is written before it returns.
pub async fn run(listen: Listen, builder: PeerBuilder) -> std::io::Result<()> {
    // The handlers are installed now, before anything is served or announced: a signal that
    // arrives at any later point ends the server cleanly instead of killing it.
    let signals = shutdown_signals()?;
    let signal = async {
        let name = signals.await;
        tracing::info!(signal = name, "shutting down");
    };
    match listen {
        Listen::Stdio => {
            let (peer, mut conn) =
                builder.spawn(tokio::io::stdin(), tokio::io::stdout(), McpServer);
            tokio::select! {
                reason = conn.closed() => tracing::info!(%reason, "stdio connection ended"),
                () = signal => {
                    peer.close();
                    conn.closed().await;
                }
            }
            Ok(())
        }
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            // The bound address (a port of 0 picks one), for whoever started us.
            eprintln!("mcpwire: serving MCP on tcp:{}", listener.local_addr()?);
            transport::serve_tcp_until(listener, builder, || McpServer, signal).await
        }
        Listen::Unix(path) => {
            let listener = bind_unix(&path)?;
            let _unlink = Unlink(path.clone());
            eprintln!("mcpwire: serving MCP on unix:{}", path.display());
            transport::serve_unix_until(listener, builder, || McpServer, signal).await
        }
        Listen::Http(addr, server) => {
            let listener = mcpwire::http::server::bind(&addr).await?;
            eprintln!(
                "mcpwire: serving MCP on http://{}{}",
                listener.local_addr()?,
                server.endpoint()
            );
            server.serve(listener, || McpServer, signal).await
        }
    }
}

/// Binds a Unix socket at `path`, replacing only a stale socket that nobody answers on: never
/// a regular file, and never a live server's socket.
fn bind_unix(path: &std::path::Path) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        let in_use = std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("{} exists and is not a stale socket", path.display()),
        );
        if !meta.file_type().is_socket() || std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(in_use);
        }
        std::fs::remove_file(path)?;
    }
    tokio::net::UnixListener::bind(path)
}

/// Removes the socket file when the server stops.
struct Unlink(PathBuf);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Installs SIGINT and SIGTERM handlers now; the future completes on either, naming which.
///
/// # Errors
///
/// When the signal handlers cannot be installed.
pub fn shutdown_signals() -> std::io::Result<impl std::future::Future<Output = &'static str>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        }
    })
}
