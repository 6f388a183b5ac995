//! What a client connects with: TCP with no delay, wrapped in TLS (rustls, ALPN h2 and
//! http/1.1, or h2 alone) for `https://` URLs when the `tls` feature is on.

use hyper_util::client::legacy::connect::HttpConnector;

use super::HttpClient;
#[cfg(feature = "tls")]
use super::invalid;
#[cfg(feature = "tls")]
use crate::tls::ClientTls;

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
            // The TLS connector checks the scheme; TCP is told to take either.
            tcp.enforce_http(false);
            let mut tls = match (&self.tls, secure) {
                (Some(tls), _) => tls.rustls_config().as_ref().clone(),
                (None, true) => ClientTls::builder()
                    .build()
                    .map_err(|e| invalid(e.to_string()))?
                    .rustls_config()
                    .as_ref()
                    .clone(),
                // Never used for `http://`: any valid configuration does.
                (None, false) => rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .map_err(|e| invalid(e.to_string()))?
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth(),
            };
            // The connector writes its own ALPN list, and refuses a configuration that has one.
            tls.alpn_protocols.clear();
            let builder =
                hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http();
            Ok(if self.http2 {
                builder.enable_http2().wrap_connector(tcp)
            } else {
                builder.enable_all_versions().wrap_connector(tcp)
            })
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = secure;
            Ok(tcp)
        }
    }
}

/// `e` and its sources, `: `-separated (hyper's errors say little without their sources:
/// "client error (Connect)").
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out
}
