//! TCP and Unix sockets as a peer's transport: connect, or accept and run a peer per
//! connection.

use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::io::AsyncRead;
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};

use crate::peer::{ConnectionTask, Handler, PeerBuilder, PeerHandle};

/// Connects to a TCP server and runs a peer over the connection.
///
/// # Errors
///
/// When the connection cannot be made.
pub async fn connect_tcp<H: Handler>(
    builder: &PeerBuilder,
    addr: impl ToSocketAddrs,
    handler: H,
) -> io::Result<(PeerHandle, ConnectionTask)> {
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
) -> io::Result<(PeerHandle, ConnectionTask)> {
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
