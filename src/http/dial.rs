//! How this crate's HTTP clients reach a server, built in one place: the Streamable HTTP
//! transport ([`HttpClient`](crate::http::HttpClient)), the OAuth client's own requests
//! ([`crate::auth`]) and the `mcpwire` tool's (its recording proxy, its OTLP push) all take a
//! hyper client from a [`Dialer`]. Each says what it needs (the TLS settings, the time bounds,
//! the pool); what they share (TCP, then TLS for `https://` URLs with the `tls` feature, ALPN,
//! the executor) is written once.
//!
//! No proxy is used: `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` are not read, and every
//! connection goes straight to the URL's host.

use std::time::Duration;

use hyper::body::Body;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

#[cfg(feature = "tls")]
use crate::tls::ClientTls;

/// What a [`Dialer`]'s clients connect with: TCP, wrapped in TLS (rustls) for `https://` URLs
/// when the `tls` feature is on.
#[cfg(feature = "tls")]
pub type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
/// What a [`Dialer`]'s clients connect with: TCP (build with the `tls` feature for `https://`).
#[cfg(not(feature = "tls"))]
pub type Connector = HttpConnector;

/// The settings of a hyper client (`hyper_util`'s legacy pooled [`Client`]): TCP, TLS, HTTP
/// version, time bounds and the pool. What is not set is hyper's default (no connect timeout,
/// 90 s idle connections kept, any number per host).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use http_body_util::Full;
/// use hyper_util::client::legacy::Client;
/// use mcpwire::http::{Connector, Dialer};
///
/// // A client for a metrics push: plain http://, a bounded connect, one idle connection kept.
/// let client: Client<Connector, Full<Bytes>> = Dialer::new()
///     .connect_timeout(Duration::from_secs(5))
///     .max_idle_per_host(1)
///     .client()?;
/// # let _ = client;
/// # std::io::Result::Ok(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Dialer {
    #[cfg(feature = "tls")]
    tls: Option<ClientTls>,
    https: bool,
    http2: bool,
    nodelay: bool,
    connect_timeout: Option<Duration>,
    tcp_keepalive: Option<Duration>,
    max_idle_per_host: Option<usize>,
    idle_timeout: Option<Duration>,
}

impl Dialer {
    /// Plain `http://`, HTTP/1.1 (or h2 when TLS's ALPN picks it), hyper's defaults otherwise.
    pub fn new() -> Self {
        Self::default()
    }

    /// What an `https://` server is checked against, and the certificate shown to it (the
    /// roots, extra CAs and client identity of [`ClientTls`]). Implies [`Dialer::https`].
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: ClientTls) -> Self {
        self.tls = Some(tls);
        self.https = true;
        self
    }

    /// Whether `https://` URLs are to be reached: without [`Dialer::tls`], with
    /// [`ClientTls::builder`]'s defaults (the webpki roots), built when the client is. `false`
    /// by default, which spares an `http://` client building a root store: an `https://` URL is
    /// then refused at the handshake (no root is trusted). Needs the `tls` feature to matter.
    pub fn https(mut self, on: bool) -> Self {
        self.https = on;
        self
    }

    /// HTTP/2 only (`false` by default): with prior knowledge over cleartext, and ALPN offering
    /// `h2` alone over TLS. Otherwise HTTP/1.1 over cleartext, and ALPN offering `h2` and
    /// `http/1.1` (the server's choice decides).
    pub fn http2(mut self, on: bool) -> Self {
        self.http2 = on;
        self
    }

    /// `TCP_NODELAY` on every connection (`false` by default): small writes go out at once.
    pub fn nodelay(mut self, on: bool) -> Self {
        self.nodelay = on;
        self
    }

    /// The longest a TCP connect may take (none by default).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// TCP keepalive probes after `idle` without traffic (none by default).
    pub fn tcp_keepalive(mut self, idle: Duration) -> Self {
        self.tcp_keepalive = Some(idle);
        self
    }

    /// The idle connections kept per host (hyper's default: no limit). 0 keeps none: each
    /// request opens a connection of its own.
    pub fn max_idle_per_host(mut self, n: usize) -> Self {
        self.max_idle_per_host = Some(n);
        self
    }

    /// How long an idle connection is kept (hyper's default: 90 s).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// A client with these settings, sending bodies of type `B`. It needs a tokio runtime when
    /// it sends, not to be built.
    ///
    /// # Errors
    ///
    /// When the TLS configuration cannot be built (the platform's roots cannot be read, say),
    /// as [`std::io::ErrorKind::InvalidInput`].
    pub fn client<B>(&self) -> std::io::Result<Client<Connector, B>>
    where
        B: Body + Send,
        B::Data: Send,
    {
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(self.nodelay);
        tcp.set_connect_timeout(self.connect_timeout);
        tcp.set_keepalive(self.tcp_keepalive);
        let mut builder = Client::builder(TokioExecutor::new());
        // Over TLS, ALPN decides as well (h2 alone is offered when HTTP/2 is asked for).
        builder.http2_only(self.http2);
        if let Some(n) = self.max_idle_per_host {
            builder.pool_max_idle_per_host(n);
        }
        if let Some(t) = self.idle_timeout {
            builder.pool_idle_timeout(t);
        }
        Ok(builder.build(self.connector(tcp)?))
    }

    #[cfg(feature = "tls")]
    fn connector(&self, tcp: HttpConnector) -> std::io::Result<Connector> {
        crate::tls::connector(tcp, self.tls.as_ref(), self.https, self.http2)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))
    }

    #[cfg(not(feature = "tls"))]
    #[allow(clippy::unnecessary_wraps, reason = "the same signature as with TLS")]
    fn connector(&self, tcp: HttpConnector) -> std::io::Result<Connector> {
        Ok(tcp)
    }
}
