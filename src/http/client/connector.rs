//! What a client connects with: TCP with no delay, wrapped in TLS (rustls, ALPN h2 and
//! http/1.1, or h2 alone) for `https://` URLs when the `tls` feature is on.

use hyper_util::client::legacy::connect::HttpConnector;

use super::HttpClient;
#[cfg(feature = "tls")]
use super::invalid;

/// What connects.
#[cfg(feature = "tls")]
pub(super) type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
/// What connects.
#[cfg(not(feature = "tls"))]
pub(super) type Connector = HttpConnector;

impl HttpClient {
    /// TCP with no delay, wrapped in TLS for `https://` URLs when the feature is on.
    #[cfg_attr(not(feature = "tls"), allow(clippy::unnecessary_wraps))]
    pub(super) fn connector(&self, secure: bool) -> std::io::Result<Connector> {
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(true);
        #[cfg(feature = "tls")]
        {
            crate::tls::connector(tcp, self.tls.as_ref(), secure, self.http2)
                .map_err(|e| invalid(e.to_string()))
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = secure;
            Ok(tcp)
        }
    }
}
