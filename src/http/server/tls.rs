//! TLS on the server's port: each accepted connection's handshake, bounded in number and in
//! time, before it is served like any other.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::tls::ServerTls;

/// The handshakes of one `serve`: the acceptor (its certificate reloadable in place), and the
/// bounds.
pub(super) struct Handshakes {
    acceptor: TlsAcceptor,
    slots: Arc<Semaphore>,
    timeout: Duration,
}

/// Why a connection was closed before it was served.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refused {
    #[error("too many handshakes in progress")]
    Busy,
    #[error("the handshake took longer than {0:?}")]
    TimedOut(Duration),
    #[error("{0}")]
    Failed(std::io::Error),
    #[error("shed for a newer connection")]
    Shed,
}

impl Handshakes {
    pub(super) fn new(tls: &ServerTls, max: usize, timeout: Duration) -> Self {
        Self {
            acceptor: TlsAcceptor::from(tls.rustls_config().clone()),
            slots: Arc::new(Semaphore::new(max.max(1))),
            timeout,
        }
    }

    /// `tcp`'s handshake, when a slot is free now and it ends in time.
    pub(super) async fn accept(&self, tcp: TcpStream) -> Result<TlsStream<TcpStream>, Refused> {
        // Not waited for: a flood is refused at once rather than queued.
        let _slot = self.slots.clone().try_acquire_owned().map_err(|_| Refused::Busy)?;
        match tokio::time::timeout(self.timeout, self.acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => Ok(tls),
            Ok(Err(e)) => Err(Refused::Failed(e)),
            Err(_) => Err(Refused::TimedOut(self.timeout)),
        }
    }
}
