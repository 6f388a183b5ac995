//! `mcpwire serve`: the server of `tools.rs` on stdio, TCP, a Unix socket or Streamable HTTP,
//! with every limit a flag.

mod auth;
mod tools;

use mcpwire::limits::DEFAULT_UNADDRESSED_REPLIES_PER_SECOND;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::builder::RangedU64ValueParser;
use mcpwire::http::HttpServer;
use mcpwire::limits::{
    DEFAULT_MAX_BATCH_LEN, DEFAULT_MAX_DEPTH, DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_HANDLERS,
    DEFAULT_MAX_HELD_REQUEST_BYTES, DEFAULT_MAX_QUEUED_REQUESTS, DEFAULT_MAX_WRITE_QUEUE_BYTES,
    MAX_FRAME_BYTES_CEILING,
};
use mcpwire::peer::PeerBuilder;
use mcpwire::server::Server;
use mcpwire::tls::ServerTls;
use mcpwire::transport;
use mcpwire::{Limits, ReplyDetail};

pub use auth::AuthArgs;
pub use tools::server;

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
    /// Streamable HTTP on an address, over TLS when a certificate is given (reloaded on
    /// SIGHUP), guarded as a resource server when the authorization flags say so.
    Http(String, HttpServer, Option<ServerTls>, Box<AuthArgs>, Option<Duration>),
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
    /// The most sessions open at once; past it the least recently used idle one ends for the
    /// new one, which gets 503 only when every session is busy.
    #[arg(long, value_name = "N", default_value_t = mcpwire::limits::DEFAULT_MAX_SESSIONS,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_sessions: usize,
    /// Seconds a session may stay idle before it ends (0: never).
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_SESSION_IDLE_TIMEOUT.as_secs_f64())]
    session_idle_timeout: f64,
    /// The most TCP connections served at once; past it the oldest idle one is shed for a new one.
    #[arg(long, value_name = "N", default_value_t = mcpwire::limits::DEFAULT_MAX_CONNECTIONS,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_connections: usize,
    /// Bytes of POST bodies held at once across all sessions (from before a body is read until
    /// its POST is answered); past it a POST waits, then gets 503.
    #[arg(long, value_name = "BYTES", default_value_t = mcpwire::limits::DEFAULT_MAX_BODY_BYTES,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_body_bytes: usize,
    /// Seconds a client may take to send a POST's body (past it: 408).
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_READ_TIMEOUT.as_secs_f64())]
    read_timeout: f64,
    /// Seconds a client may take to send a request's headers, however slowly it sends them.
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_HEADER_TIMEOUT.as_secs_f64())]
    header_timeout: f64,
    /// Answer GET with 405 instead of opening a stream of the server's other messages.
    #[arg(long)]
    no_get_stream: bool,
    /// Streams (requests) one HTTP/2 connection may have open at once; one more is refused
    /// (REFUSED_STREAM). 0 is taken as 1.
    #[arg(long, value_name = "N", default_value_t = mcpwire::limits::DEFAULT_HTTP2_MAX_STREAMS)]
    http2_max_streams: u32,
    /// Take HTTP/1.1 only (by default the port also takes HTTP/2 with prior knowledge).
    #[arg(long)]
    no_http2: bool,
    /// Serve https:// with the certificate chain in this PEM file (the leaf first); ALPN
    /// offers h2 and http/1.1 on the one port. SIGHUP reads it and the key again.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Require a client certificate signed by a CA in this PEM file (mutual TLS).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// TLS handshakes in progress at once; a connection past it is closed at once.
    #[arg(long, value_name = "N", default_value_t = mcpwire::limits::DEFAULT_MAX_TLS_HANDSHAKES,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_tls_handshakes: usize,
    /// Seconds between two looks at --tls-cert and --tls-key: when either changed, both are
    /// read again (0: only on SIGHUP).
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub tls_watch: f64,
    /// Seconds a TLS handshake may take from the accept.
    #[arg(long, value_name = "SECONDS", default_value_t = mcpwire::limits::DEFAULT_TLS_HANDSHAKE_TIMEOUT.as_secs_f64())]
    tls_handshake_timeout: f64,
    #[command(flatten)]
    pub auth: AuthArgs,
}

impl HttpArgs {
    /// An HTTP server with these settings for `mcp`'s tools, its sessions made by `builder`,
    /// and its TLS when a certificate was given.
    ///
    /// # Errors
    ///
    /// When the certificate, its key or the client CA cannot be read or do not fit.
    pub fn server(
        &self,
        builder: PeerBuilder,
        mcp: &Server,
    ) -> Result<(HttpServer, Option<ServerTls>), mcpwire::tls::TlsError> {
        let (tools, _) =
            mcpwire::mcp::annotations::ToolHeaders::from_tools_list(mcp.tools_list_json())
                .expect("the tool list is fixed and valid");
        self.server_with(HttpServer::new(builder).tool_headers(tools))
    }

    /// `server` with these settings, and its TLS when a certificate was given.
    ///
    /// # Errors
    ///
    /// As [`HttpArgs::server`].
    pub fn server_with(
        &self,
        server: HttpServer,
    ) -> Result<(HttpServer, Option<ServerTls>), mcpwire::tls::TlsError> {
        let idle = (self.session_idle_timeout > 0.0)
            .then(|| Duration::try_from_secs_f64(self.session_idle_timeout).ok())
            .flatten();
        let mut server = server
            .path(self.http_path.clone())
            .max_sessions(self.max_sessions)
            .session_idle_timeout(idle)
            .max_connections(self.max_connections)
            .max_body_bytes(self.max_body_bytes)
            .get_stream(!self.no_get_stream)
            .http2(!self.no_http2)
            .http2_max_concurrent_streams(self.http2_max_streams);
        if let Ok(t) = Duration::try_from_secs_f64(self.read_timeout)
            && !t.is_zero()
        {
            server = server.read_timeout(t);
        }
        if let Ok(t) = Duration::try_from_secs_f64(self.header_timeout)
            && !t.is_zero()
        {
            server = server.header_timeout(t);
        }
        for o in &self.allow_origin {
            server = server.allow_origin(o.clone());
        }
        server = server.max_tls_handshakes(self.max_tls_handshakes);
        if let Ok(t) = Duration::try_from_secs_f64(self.tls_handshake_timeout)
            && !t.is_zero()
        {
            server = server.tls_handshake_timeout(t);
        }
        let tls = match (&self.tls_cert, &self.tls_key, &self.tls_client_ca) {
            (Some(cert), Some(key), None) => Some(ServerTls::from_pem_files(cert, key)?),
            (Some(cert), Some(key), Some(ca)) => Some(ServerTls::with_client_auth(cert, key, ca)?),
            _ => None,
        };
        if let Some(tls) = &tls {
            server = server.tls(tls.clone());
        }
        Ok((server, tls))
    }
}

/// Runs `mcp`, each connection a peer made by `builder` with a handler of its own, until its
/// input ends, or SIGINT / SIGTERM; either way what was queued is written before it returns.
pub async fn run(listen: Listen, builder: PeerBuilder, mcp: Server) -> std::io::Result<()> {
    // The handlers are installed now, before anything is served or announced: a signal that
    // arrives at any later point ends the server cleanly instead of killing it.
    let signals = shutdown_signals()?;
    let signal = async {
        let name = signals.await;
        tracing::info!(signal = name, "shutting down");
    };
    match listen {
        Listen::Stdio => {
            let (stdin, stdout) = mcpwire::transport::stdio();
            let (peer, mut conn) = builder.spawn(stdin, stdout, mcp.handler());
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
            transport::serve_tcp_until(listener, builder, move || mcp.handler(), signal).await
        }
        Listen::Unix(path) => {
            let listener = bind_unix(&path)?;
            let _unlink = Unlink(path.clone());
            eprintln!("mcpwire: serving MCP on unix:{}", path.display());
            transport::serve_unix_until(listener, builder, move || mcp.handler(), signal).await
        }
        Listen::Http(addr, mut server, tls, auth, watch) => {
            let listener = mcpwire::http::server::bind(&addr).await?;
            let scheme = if tls.is_some() { "https" } else { "http" };
            let url = format!("{scheme}://{}{}", listener.local_addr()?, server.endpoint());
            match auth.resource_server(&url) {
                Ok(Some(rs)) => server = server.auth(rs),
                Ok(None) => {}
                Err(e) => return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)),
            }
            eprintln!("mcpwire: serving MCP on {url}");
            let mut reloads = Vec::new();
            if let Some(tls) = tls {
                if let Some(every) = watch {
                    reloads.push(tls.watch(every, |r| say_reloaded(r, "its files changed")));
                }
                reloads.push(tokio::spawn(reload_on_sighup(tls)));
            }
            let served = server.serve(listener, move || mcp.handler(), signal).await;
            for r in reloads {
                r.abort();
            }
            served
        }
    }
}

/// Reads the certificate and key again on each SIGHUP: new connections get the new one, and a
/// pair that cannot be read or does not fit leaves the old in place (and says why).
pub(crate) async fn reload_on_sighup(tls: ServerTls) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hup) = signal(SignalKind::hangup()) else { return };
    while hup.recv().await.is_some() {
        say_reloaded(tls.reload(), "SIGHUP");
    }
}

/// Written, not printed: a server whose stderr was closed (a parent that read the announce and
/// went) goes on serving and reloading; `eprintln!` would panic there and end the watcher.
pub(crate) fn say_reloaded(outcome: Result<(), mcpwire::tls::TlsError>, why: &str) {
    use std::io::Write as _;
    let mut err = std::io::stderr();
    let _ = match outcome {
        Ok(()) => writeln!(err, "mcpwire: TLS certificate reloaded ({why})"),
        Err(e) => {
            writeln!(err, "mcpwire: TLS certificate not reloaded ({why}), the old one stays: {e}")
        }
    };
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

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    listen: ListenArgs,
    /// Make this tool answer every call with isError: true (a changed server, for checking
    /// that `load --replay` counts the mismatches).
    #[arg(long, value_name = "TOOL", value_parser = ["echo", "sleep", "route", "confirm"])]
    fail_tool: Option<String>,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    http: HttpArgs,
}

#[derive(Debug, clap::Args)]
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

pub fn run_args(args: &ServeArgs) -> ExitCode {
    let mcp = match args.fail_tool.as_deref().and_then(tools::failing) {
        Some(changed) => changed,
        None => server(),
    };
    let listen = match (&args.listen.tcp, &args.listen.unix, &args.listen.http) {
        (Some(addr), _, _) => Listen::Tcp(addr.clone()),
        (_, Some(path), _) => Listen::Unix(path.clone()),
        (_, _, Some(addr)) => match args.http.server(args.limits.builder(), &mcp) {
            Ok((server, tls)) => {
                let watch =
                    Duration::try_from_secs_f64(args.http.tls_watch).ok().filter(|d| !d.is_zero());
                Listen::Http(addr.clone(), server, tls, Box::new(args.http.auth.clone()), watch)
            }
            Err(e) => {
                eprintln!("mcpwire: serve: {e}");
                return ExitCode::from(crate::EXIT_IO);
            }
        },
        _ => Listen::Stdio,
    };
    let rt = crate::runtime();
    let outcome = rt.block_on(run(listen, args.limits.builder(), mcp));
    // Standard input is read on a blocking thread that only EOF would end; do not wait for it.
    rt.shutdown_background();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpwire: serve: {e}");
            ExitCode::from(crate::EXIT_IO)
        }
    }
}
