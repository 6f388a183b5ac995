//! TLS on the server's port: each accepted connection's handshake, bounded in number and in
//! time, before it is served like any other. Past the bound the oldest handshake still in
//! progress is shed for the new one, as the oldest idle connection is: a flood of half-open
//! handshakes keeps pushing itself out, while an honest client's handshake (a round trip or
//! two) completes before its turn to be shed comes.

use crate::sync::Locked;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::tls::ServerTls;

/// The handshakes of one `serve`: the acceptor (its certificate reloadable in place), and the
/// bounds.
pub(super) struct Handshakes {
    acceptor: TlsAcceptor,
    /// The handshakes in progress, oldest first: each one's number and what sheds it.
    running: Mutex<Running>,
    max: usize,
    timeout: Duration,
}

#[derive(Default)]
struct Running {
    next: u64,
    queue: VecDeque<(u64, Arc<Notify>)>,
}

/// A handshake's place among those in progress, given up when it ends (or its task is dropped).
struct Place<'a> {
    of: &'a Handshakes,
    id: u64,
    shed: Arc<Notify>,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut r = self.of.running.locked();
        r.queue.retain(|(id, _)| *id != self.id);
    }
}

/// Why a connection was closed before it was served.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refused {
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
            running: Mutex::new(Running::default()),
            max: max.max(1),
            timeout,
        }
    }

    /// A place among the handshakes in progress; the oldest is shed when they are `max`.
    fn enter(&self) -> Place<'_> {
        let shed = Arc::new(Notify::new());
        let mut r = self.running.locked();
        if r.queue.len() >= self.max
            && let Some((_, oldest)) = r.queue.pop_front()
        {
            // Stored if it is not waiting yet: it sees it on its first poll.
            oldest.notify_one();
        }
        let id = r.next;
        r.next += 1;
        r.queue.push_back((id, shed.clone()));
        Place { of: self, id, shed }
    }

    /// `tcp`'s handshake, when it ends in time and is not shed for a newer one meanwhile.
    pub(super) async fn accept(&self, tcp: TcpStream) -> Result<TlsStream<TcpStream>, Refused> {
        let place = self.enter();
        tokio::select! {
            r = tokio::time::timeout(self.timeout, self.acceptor.accept(tcp)) => match r {
                Ok(Ok(tls)) => Ok(tls),
                Ok(Err(e)) => Err(Refused::Failed(e)),
                Err(_) => Err(Refused::TimedOut(self.timeout)),
            },
            () = place.shed.notified() => Err(Refused::Shed),
        }
    }
}
