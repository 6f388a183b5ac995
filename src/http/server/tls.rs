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
    /// `h2`: whether the server takes HTTP/2; when it does not, ALPN offers http/1.1 alone.
    pub(super) fn new(tls: &ServerTls, h2: bool, max: usize, timeout: Duration) -> Self {
        let config = if h2 {
            tls.rustls_config().clone()
        } else {
            // The certificate resolver is shared: a reload reaches this copy too.
            let mut config = tls.rustls_config().as_ref().clone();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Arc::new(config)
        };
        Self {
            acceptor: TlsAcceptor::from(config),
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
