//! Where a peer's bytes travel: a child process's stdio, TCP and Unix sockets (client and
//! accept loop), and an in-process pair over `tokio::io::duplex`.

use std::io;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::process::Command;

use super::{Connection, Handler, PeerBuilder, PeerHandle};

/// How long a child gets to exit by itself once its stdin is closed, before it is killed.
pub const CHILD_EXIT_GRACE: Duration = Duration::from_secs(2);

/// Longest stderr line forwarded as one piece; longer lines are forwarded in pieces.
const STDERR_LINE_MAX: usize = 8 * 1024;

/// Where a child's stderr goes.
#[derive(Clone, Default)]
pub enum ChildStderr {
    /// To this process's stderr.
    Inherit,
    /// Nowhere.
    Discard,
    /// Each line as a `tracing` event at level INFO, target `mcpwire::child`.
    #[default]
    Tracing,
    /// Each line (without its line ending, invalid UTF-8 replaced) to a function.
    Lines(Arc<dyn Fn(&str) + Send + Sync>),
}

impl std::fmt::Debug for ChildStderr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Inherit => "Inherit",
            Self::Discard => "Discard",
            Self::Tracing => "Tracing",
            Self::Lines(_) => "Lines(..)",
        })
    }
}

/// Spawns `command` and runs a peer over its stdin (our writes) and stdout (our reads).
///
/// When the connection ends (either side closes, or the [`Connection`] is dropped) the child's
/// stdin is closed once the queued messages are written; the child then gets
/// [`CHILD_EXIT_GRACE`] to exit before it is killed, and it is always reaped.
///
/// # Errors
///
/// When the command cannot be spawned.
pub fn spawn_child<H: Handler>(
    builder: &PeerBuilder,
    mut command: Command,
    stderr: ChildStderr,
    handler: H,
) -> io::Result<(PeerHandle, Connection)> {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true);
    command.stderr(match stderr {
        ChildStderr::Inherit => Stdio::inherit(),
        ChildStderr::Discard => Stdio::null(),
        ChildStderr::Tracing | ChildStderr::Lines(_) => Stdio::piped(),
    });
    let mut child = command.spawn()?;
    let pid = child.id();
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("the child's stdio was not piped"));
    };
    if let Some(err) = child.stderr.take() {
        tokio::spawn(forward_lines(err, stderr, pid));
    }
    let (handle, mut conn) = builder.spawn(stdout, stdin, handler);
    let shared = conn.shared.clone();
    conn.pid = pid;
    conn.extra = Some(tokio::spawn(async move {
        // The write loop closes the child's stdin once it has flushed (or given up); give the
        // child the chance to exit on that, as the MCP stdio transport asks, then kill it.
        shared.writer_done.cancelled().await;
        let status = match tokio::time::timeout(CHILD_EXIT_GRACE, child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                let _ = child.start_kill();
                child.wait().await
            }
        };
        tracing::debug!(?pid, ?status, "child process reaped");
    }));
    Ok((handle, conn))
}

async fn forward_lines<R: AsyncRead + Unpin>(mut from: R, sink: ChildStderr, pid: Option<u32>) {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let emit = |line: &[u8]| {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches(['\n', '\r']);
        match &sink {
            ChildStderr::Lines(f) => f(text),
            _ => tracing::info!(target: "mcpwire::child", pid, "{text}"),
        }
    };
    loop {
        let n = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        while let Some(i) = memchr::memchr(b'\n', &buf) {
            emit(&buf[..i]);
            buf.drain(..=i);
        }
        while buf.len() >= STDERR_LINE_MAX {
            emit(&buf[..STDERR_LINE_MAX]);
            buf.drain(..STDERR_LINE_MAX);
        }
    }
    if !buf.is_empty() {
        emit(&buf);
    }
}

/// Connects to a TCP server and runs a peer over the connection.
///
/// # Errors
///
/// When the connection cannot be made.
pub async fn connect_tcp<H: Handler>(
    builder: &PeerBuilder,
    addr: impl ToSocketAddrs,
    handler: H,
) -> io::Result<(PeerHandle, Connection)> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (r, w) = stream.into_split();
    Ok(builder.spawn(r, w, handler))
}

/// Accepts TCP connections and runs a peer on each, with a handler from `make_handler`, until
/// the returned future is dropped, which closes every connection it accepted. A failed accept
/// (too many open files, say) is logged and retried after a short pause.
///
/// # Errors
///
/// Never returns `Ok`; the type leaves room for fatal listener errors.
pub async fn serve_tcp<H, F>(
    listener: TcpListener,
    builder: PeerBuilder,
    make_handler: F,
) -> io::Result<()>
where
    H: Handler,
    F: FnMut() -> H,
{
    serve_tcp_until(listener, builder, make_handler, std::future::pending()).await
}

/// [`serve_tcp`] until `shutdown` completes; then it stops accepting, closes every connection
/// gracefully (what each had queued is written) and returns once they have ended.
///
/// # Errors
///
/// Only fatal listener errors; none are known today.
pub async fn serve_tcp_until<H, F>(
    listener: TcpListener,
    builder: PeerBuilder,
    make_handler: F,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()>
where
    H: Handler,
    F: FnMut() -> H,
{
    accept_loop(listener, builder, make_handler, shutdown).await
}

/// A listener whose connections split into a reader and a writer.
trait Listener {
    type Reader: AsyncRead + Send + 'static;
    type Writer: tokio::io::AsyncWrite + Send + 'static;
    fn accept(&self) -> impl Future<Output = io::Result<(Self::Reader, Self::Writer)>>;
}

impl Listener for TcpListener {
    type Reader = tokio::net::tcp::OwnedReadHalf;
    type Writer = tokio::net::tcp::OwnedWriteHalf;
    async fn accept(&self) -> io::Result<(Self::Reader, Self::Writer)> {
        let (stream, from) = TcpListener::accept(self).await?;
        let _ = stream.set_nodelay(true);
        tracing::debug!(%from, "accepted a connection");
        Ok(stream.into_split())
    }
}

#[cfg(unix)]
impl Listener for tokio::net::UnixListener {
    type Reader = tokio::net::unix::OwnedReadHalf;
    type Writer = tokio::net::unix::OwnedWriteHalf;
    async fn accept(&self) -> io::Result<(Self::Reader, Self::Writer)> {
        let (stream, _) = tokio::net::UnixListener::accept(self).await?;
        Ok(stream.into_split())
    }
}

async fn accept_loop<L, H, F>(
    listener: L,
    builder: PeerBuilder,
    mut make_handler: F,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()>
where
    L: Listener,
    H: Handler,
    F: FnMut() -> H,
{
    // Dropping the accept loop, or shutting it down, closes every connection it accepted.
    let stop = tokio_util::sync::CancellationToken::new();
    let _stop_on_drop = stop.clone().drop_guard();
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            // Reap the tasks of connections that ended, so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((r, w)) => {
                let (peer, mut conn) = builder.spawn(r, w, make_handler());
                let stop = stop.clone();
                connections.spawn(async move {
                    tokio::select! {
                        () = stop.cancelled() => peer.close(),
                        _ = conn.closed() => {}
                    }
                    conn.closed().await;
                });
            }
            Err(e) => accept_failed(e).await,
        }
    }
    stop.cancel();
    while connections.join_next().await.is_some() {}
    Ok(())
}

async fn accept_failed(e: io::Error) {
    tracing::warn!(error = %e, "accept failed; retrying");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Connects to a Unix socket server and runs a peer over the connection.
///
/// # Errors
///
/// When the connection cannot be made.
#[cfg(unix)]
pub async fn connect_unix<H: Handler>(
    builder: &PeerBuilder,
    path: impl AsRef<std::path::Path>,
    handler: H,
) -> io::Result<(PeerHandle, Connection)> {
    let stream = tokio::net::UnixStream::connect(path).await?;
    let (r, w) = stream.into_split();
    Ok(builder.spawn(r, w, handler))
}

/// Accepts Unix socket connections and runs a peer on each, as [`serve_tcp`] does.
///
/// # Errors
///
/// Never returns `Ok`; the type leaves room for fatal listener errors.
#[cfg(unix)]
pub async fn serve_unix<H, F>(
    listener: tokio::net::UnixListener,
    builder: PeerBuilder,
    make_handler: F,
) -> io::Result<()>
where
    H: Handler,
    F: FnMut() -> H,
{
    serve_unix_until(listener, builder, make_handler, std::future::pending()).await
}

/// [`serve_unix`] until `shutdown` completes, as [`serve_tcp_until`].
///
/// # Errors
///
/// Only fatal listener errors; none are known today.
#[cfg(unix)]
pub async fn serve_unix_until<H, F>(
    listener: tokio::net::UnixListener,
    builder: PeerBuilder,
    make_handler: F,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()>
where
    H: Handler,
    F: FnMut() -> H,
{
    accept_loop(listener, builder, make_handler, shutdown).await
}

/// Two peers joined in process by a `tokio::io::duplex` of `buffer` bytes each way: the first
/// runs `a`, the second `b`. What the harness's embedded target and the tests use.
pub fn in_process<A: Handler, B: Handler>(
    builder: &PeerBuilder,
    buffer: usize,
    a: A,
    b: B,
) -> ((PeerHandle, Connection), (PeerHandle, Connection)) {
    let (x, y) = tokio::io::duplex(buffer);
    (builder.connect(x, a), builder.connect(y, b))
}
