//! Serving: the accept loop of [`HttpServer::serve`] (a place in the connection table, the TLS
//! handshake when configured, then the connection served until it ends) and
//! [`HttpServer::serve_connection`] for a byte stream of the caller's own.

use crate::sync::Locked;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming as HyperBody;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::connections::{Conn, Guarded};
use super::sessions::{sweep, sweep_while_alive};
#[cfg(feature = "tls")]
use super::tls;
use super::{Body, Handlers, HttpServer, connection, connections};
use crate::limits::SHUTDOWN_GRACE;
use crate::peer::Handler;

impl HttpServer {
    /// Serves `listener` until `stop` completes; each new session runs a handler from `make`,
    /// and so does each peer of stateless (2026-07-28) requests. Such a peer serves stateless
    /// requests one after another (it is kept, idle, once one is answered, unless the handler
    /// kept a handle to it), so a handler must keep no state from one stateless request for
    /// the next: the modern era has none to keep.
    /// Once stopped it ends the sessions (those of every clone serving the same table: the
    /// requests they were answering get -32603), lets each connection finish the exchange
    /// under way and closes it, waiting up to 5 s, then returns. A request that arrives
    /// meanwhile is answered 503, and so is a stateless one that came before the stop but
    /// reaches its peer after it (its body was still on the way).
    ///
    /// # Errors
    ///
    /// Never for a failed connection (logged, and the server goes on); only when accepting
    /// fails in a way that does not pass.
    pub async fn serve<H, F, S>(
        &self,
        listener: TcpListener,
        make: F,
        stop: S,
    ) -> std::io::Result<()>
    where
        H: Handler,
        F: Fn() -> H + Send + Sync + 'static,
        S: Future<Output = ()>,
    {
        self.state.stopped.store(false, Ordering::SeqCst);
        self.state.idle.open();
        {
            let mut halt = self.state.halt.locked();
            if halt.is_cancelled() {
                *halt = tokio_util::sync::CancellationToken::new();
            }
        }
        let make: Arc<dyn Fn() -> Arc<H> + Send + Sync> = Arc::new(move || Arc::new(make()));
        let connections = self.state.connections.clone();
        let max_connections = effective_max_connections(self.config.max_connections);
        let budget = Arc::new(Semaphore::new(self.config.max_body_bytes));
        let sweeper =
            self.config.idle_timeout.map(|idle| tokio::spawn(sweep(self.state.clone(), idle)));
        let builder: connection::Shared =
            Arc::new(connection::builder(&self.config.h2, self.config.header_timeout));
        // Over TLS the protocol is the one ALPN chose, not the one the first bytes look like:
        // a connection that agreed on h2 is served HTTP/2 only, one that agreed on http/1.1
        // HTTP/1.1 only (a broken preface after `h2` gets HTTP/2's answer, not an HTTP/1.1 400).
        #[cfg(feature = "tls")]
        // (Without HTTP/2 the one builder is HTTP/1.1 only already, and ALPN offers nothing else.)
        let by_alpn: Option<(connection::Shared, connection::Shared)> =
            (self.config.tls.is_some() && self.config.h2.enabled).then(|| {
                let b = || connection::builder(&self.config.h2, self.config.header_timeout);
                (Arc::new(b().http2_only()), Arc::new(b().http1_only()))
            });
        #[cfg(feature = "tls")]
        let handshakes = self.config.tls.as_ref().map(|t| {
            Arc::new(tls::Handshakes::new(
                t,
                self.config.h2.enabled,
                self.config.max_tls_handshakes,
                self.config.tls_handshake_timeout,
            ))
        });
        // Each connection's task watches this to close gracefully once the server stops.
        let (stopping, stop_seen) = tokio::sync::watch::channel(false);
        let tasks = tokio_util::task::TaskTracker::new();
        tokio::pin!(stop);
        let outcome = loop {
            let (stream, remote) = tokio::select! {
                () = &mut stop => break Ok(()),
                a = listener.accept() => match a {
                    Ok(a) => a,
                    Err(e) if transient(&e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                    Err(e) => break Err(e),
                },
            };
            // Then a place in the table: past the cap the oldest connection with no request in
            // progress is shed for this one (see `connections.rs`); when every connection is
            // busy this one waits, and accepting with it.
            let place = tokio::select! {
                () = &mut stop => break Ok(()),
                p = connections.admit(max_connections) => p,
            };
            let _ = stream.set_nodelay(true);
            let server = self.clone();
            let make = make.clone();
            let budget = budget.clone();
            let builder = builder.clone();
            let stop_seen = stop_seen.clone();
            #[cfg(feature = "tls")]
            let handshakes = handshakes.clone();
            #[cfg(feature = "tls")]
            let by_alpn = by_alpn.clone();
            tasks.spawn(async move {
                #[cfg(feature = "tls")]
                if let Some(handshakes) = handshakes {
                    let shed = place.conn.clone();
                    let accepted = tokio::select! {
                        a = handshakes.accept(stream) => a,
                        () = shed.shed() => Err(tls::Refused::Shed),
                    };
                    match accepted {
                        Ok(io) => {
                            let builder = match (io.get_ref().1.alpn_protocol(), by_alpn) {
                                (Some(b"h2"), Some((h2, _))) => h2,
                                (Some(b"http/1.1"), Some((_, h1))) => h1,
                                _ => builder,
                            };
                            serve_accepted(
                                server, io, remote, place, make, budget, builder, stop_seen,
                            )
                            .await
                        }
                        Err(why) => {
                            server.state.tls_failed.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!(%remote, %why, "TLS handshake refused");
                        }
                    }
                    return;
                }
                serve_accepted(server, stream, remote, place, make, budget, builder, stop_seen)
                    .await;
            });
        };
        if let Some(s) = sweeper {
            s.abort();
        }
        self.state.stopped.store(true, Ordering::SeqCst);
        let sessions: Vec<_> = {
            let mut map = self.state.sessions.locked();
            map.drain().map(|(_, s)| s).collect()
        };
        for s in sessions {
            s.close();
        }
        // Stateless requests too: those answering get -32603, the idle peers end.
        self.state.idle.close_all();
        self.state.halt.locked().cancel();
        // The connections finish the exchange under way (the POSTs of the sessions just ended
        // get their answer, GET streams end) and close, kept-alive ones at once; past the
        // grace, each drops whatever is left (`connection::drive`), which this waits for.
        let _ = stopping.send(true);
        tasks.close();
        let wait = SHUTDOWN_GRACE + Duration::from_secs(1);
        if tokio::time::timeout(wait, tasks.wait()).await.is_err() {
            tracing::warn!("connections still open {wait:?} after the stop");
        }
        outcome
    }

    /// Serves one connected byte stream (a Unix socket, a TLS stream, an in-memory pipe) until
    /// the client closes it or the header timeout ends it: the same HTTP/1.1 and HTTP/2
    /// handling as [`HttpServer::serve`], outside its connection table and its stop (the
    /// caller bounds how many it serves); its POST bodies have a `max_body_bytes` budget of
    /// their own.
    ///
    /// # Errors
    ///
    /// hyper's, when the connection fails (a malformed request is answered 400 first), or
    /// [`std::io::ErrorKind::TimedOut`] when it stayed open past the idle bound's grace.
    pub async fn serve_connection<I, H, F>(
        &self,
        io: I,
        make: F,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        H: Handler,
        F: Fn() -> H + Send + Sync + 'static,
    {
        self.state.idle.open();
        // Idle sessions expire here too: one task per server, ending with it.
        if let Some(idle) = self.config.idle_timeout
            && !self.state.sweeping.swap(true, Ordering::AcqRel)
        {
            tokio::spawn(sweep_while_alive(Arc::downgrade(&self.state), idle));
        }
        let make: Arc<dyn Fn() -> Arc<H> + Send + Sync> = Arc::new(move || Arc::new(make()));
        let budget = Arc::new(Semaphore::new(self.config.max_body_bytes));
        let tracker = Conn::new();
        let service = service(self.clone(), make, budget, tracker.clone());
        let builder = connection::builder(&self.config.h2, self.config.header_timeout);
        let served = builder.serve_connection(TokioIo::new(io), service);
        let idle = self.config.header_timeout;
        let never = std::future::pending();
        match connection::drive(served, |c| c.graceful_shutdown(), &tracker, idle, None, never)
            .await
        {
            connection::Ended::Closed(r) => r,
            connection::Ended::Idle | connection::Ended::Shed | connection::Ended::Stopped => {
                Err(Box::new(std::io::Error::from(std::io::ErrorKind::TimedOut)))
            }
        }
    }
}

/// The service of one connection: each request answered by `server`, the connection marked
/// busy (`conn`) from the request's head until its response body ends.
fn service<H: Handler>(
    server: HttpServer,
    make: Arc<dyn Fn() -> Arc<H> + Send + Sync>,
    budget: Arc<Semaphore>,
    conn: Arc<Conn>,
) -> impl hyper::service::Service<
    Request<HyperBody>,
    Response = Response<Body>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Body>, Infallible>> + Send + 'static,
> + Clone
+ Send
+ 'static {
    // The handler of the connection's stateless requests handled without a peer, built once.
    let shared: Arc<std::sync::OnceLock<Arc<H>>> = Arc::default();
    hyper::service::service_fn(move |req| {
        let server = server.clone();
        let make = make.clone();
        let budget = budget.clone();
        let shared = shared.clone();
        let busy = conn.busy();
        async move {
            let handlers = Handlers { make: &*make, shared: &shared };
            let answer = server.handle(req, handlers, &budget).await;
            Ok::<_, Infallible>(answer.map(|body| Guarded::wrap(body, busy)))
        }
    })
}

/// Serves one accepted connection (TCP, or TLS over it) from its place in the table until it
/// ends: closed by the client, idle past the header timeout, shed for a newer one, or past the
/// stop's grace.
#[allow(clippy::too_many_arguments)]
async fn serve_accepted<I, H>(
    server: HttpServer,
    io: I,
    remote: std::net::SocketAddr,
    place: connections::Admitted,
    make: Arc<dyn Fn() -> Arc<H> + Send + Sync>,
    budget: Arc<Semaphore>,
    builder: connection::Shared,
    stop_seen: tokio::sync::watch::Receiver<bool>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    H: Handler,
{
    let idle = server.config.header_timeout;
    let service = service(server, make, budget, place.conn.clone());
    let served = builder.serve_connection(TokioIo::new(io), service);
    // Dropping the connection closes it.
    let ended = connection::drive(
        served,
        |c| c.graceful_shutdown(),
        &place.conn,
        idle,
        Some(stop_seen),
        place.conn.shed(),
    )
    .await;
    match ended {
        connection::Ended::Closed(Err(e)) => {
            tracing::debug!(%remote, error = %e, "connection ended");
        }
        connection::Ended::Closed(Ok(())) => {}
        connection::Ended::Idle => tracing::debug!(%remote, "idle connection dropped"),
        connection::Ended::Stopped => {
            tracing::debug!(%remote, "connection dropped after the stop's grace");
        }
        connection::Ended::Shed => {
            tracing::debug!(%remote, "connection shed to make room");
        }
    }
    drop(place);
}

/// `max` within the process's open-file limit (less 64 for everything else it opens), so the
/// cap is reached before `accept` fails for want of a descriptor. Linux: read from
/// `/proc/self/limits`; elsewhere `max` as given.
fn effective_max_connections(max: usize) -> usize {
    let limit = std::fs::read_to_string("/proc/self/limits").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse::<usize>().ok()
    });
    match limit {
        Some(files) => max.min(files.saturating_sub(64).max(1)),
        None => max,
    }
}

fn transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionAborted | ConnectionReset | Interrupted | WouldBlock)
        || e.raw_os_error().is_some_and(|c| c == 24 || c == 23) // EMFILE, ENFILE
}
