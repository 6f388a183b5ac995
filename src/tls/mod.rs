//! TLS for Streamable HTTP, both sides, on rustls with the ring provider (no OpenSSL).
//!
//! - [`ClientTls`]: what an `https://` client trusts and shows. The webpki roots (Mozilla's,
//!   compiled in) or the platform's, plus CAs from PEM files; a client certificate for mutual
//!   TLS; and, for test rigs only, [`ClientTlsBuilder::danger_skip_verification`]. The server
//!   name sent (SNI) and checked against the certificate is the URL's host. ALPN offers h2 and
//!   http/1.1; the server's choice decides the HTTP version.
//! - [`ServerTls`]: the certificate chain and key an [`HttpServer`](crate::http::HttpServer)
//!   shows, from PEM files, reloaded in place by [`ServerTls::reload`] (connections already
//!   open keep the certificate they began with); optionally a CA whose client certificates are
//!   required. ALPN offers h2 and http/1.1 on the one port.
//!
//! Bad files are refused when the configuration is built, with the file and the reason: a
//! host learns of a missing key at start-up, not at the first connection.

use crate::sync::{Locked, RwLocked};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// The protocols ALPN offers, in the order of preference.
pub(crate) const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file could not be read, or held nothing of what was asked for.
    #[error("{}: {why}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        why: String,
    },
    /// PEM text given in memory was not what was asked for.
    #[error("{0}")]
    Pem(String),
    /// rustls refused the configuration (a key that does not match, no roots at all, …).
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The roots a client trusts, besides the CAs added to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Roots {
    /// Mozilla's root program, compiled in (`webpki-roots`): the same on every machine.
    #[default]
    Webpki,
    /// The platform's store (`rustls-native-certs`: the system's CA bundle, or `SSL_CERT_FILE`
    /// / `SSL_CERT_DIR`).
    Platform,
    /// Only the CAs added ([`ClientTlsBuilder::add_ca_pem_file`]).
    None,
}

impl FromStr for Roots {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "webpki" => Ok(Self::Webpki),
            "platform" => Ok(Self::Platform),
            "none" => Ok(Self::None),
            other => Err(format!("`{other}`: expected webpki, platform or none")),
        }
    }
}

/// What an `https://` client trusts and shows, built once and shared by every connection.
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<rustls::ClientConfig>,
    skips_verification: bool,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls").field("skips_verification", &self.skips_verification).finish()
    }
}

impl ClientTls {
    /// A builder: the webpki roots, no client certificate, certificates verified.
    #[must_use]
    pub fn builder() -> ClientTlsBuilder {
        ClientTlsBuilder::default()
    }

    /// A configuration of the host's own. Its ALPN protocols are replaced by the transport's
    /// (h2 and http/1.1, or h2 alone for [`HttpClient::http2`](crate::http::HttpClient::http2)).
    #[must_use]
    pub fn from_rustls(config: rustls::ClientConfig) -> Self {
        Self { config: Arc::new(config), skips_verification: false }
    }

    /// The rustls configuration.
    #[must_use]
    pub fn rustls_config(&self) -> &Arc<rustls::ClientConfig> {
        &self.config
    }

    /// Whether this configuration accepts any server certificate.
    #[must_use]
    pub fn skips_verification(&self) -> bool {
        self.skips_verification
    }
}

/// Builds a [`ClientTls`].
#[derive(Default)]
pub struct ClientTlsBuilder {
    roots: Roots,
    cas: Vec<CertificateDer<'static>>,
    identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    skip_verification: bool,
}

impl fmt::Debug for ClientTlsBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTlsBuilder")
            .field("roots", &self.roots)
            .field("cas", &self.cas.len())
            .field("identity", &self.identity.is_some())
            .field("skip_verification", &self.skip_verification)
            .finish()
    }
}

impl ClientTlsBuilder {
    /// The roots trusted besides the CAs added ([`Roots::Webpki`] by default).
    #[must_use]
    pub fn roots(mut self, roots: Roots) -> Self {
        self.roots = roots;
        self
    }

    /// Trusts the CA certificates in `pem` too.
    ///
    /// # Errors
    ///
    /// When `pem` holds no certificate, or one that cannot be read.
    pub fn add_ca_pem(mut self, pem: &[u8]) -> Result<Self, TlsError> {
        self.cas.extend(certs_in(pem).map_err(TlsError::Pem)?);
        Ok(self)
    }

    /// Trusts the CA certificates in the PEM file at `path` too (curl's `--cacert`).
    ///
    /// # Errors
    ///
    /// When the file cannot be read or holds no certificate.
    pub fn add_ca_pem_file(mut self, path: impl AsRef<Path>) -> Result<Self, TlsError> {
        self.cas.extend(certs_in_file(path.as_ref())?);
        Ok(self)
    }

    /// Shows the certificate chain and key in `cert` and `key` (PEM) to a server that asks for
    /// one (mutual TLS).
    ///
    /// # Errors
    ///
    /// When either holds nothing usable.
    pub fn identity_pem(mut self, cert: &[u8], key: &[u8]) -> Result<Self, TlsError> {
        let key = PrivateKeyDer::from_pem_slice(key)
            .map_err(|e| TlsError::Pem(format!("no private key: {e}")))?;
        self.identity = Some((certs_in(cert).map_err(TlsError::Pem)?, key));
        Ok(self)
    }

    /// [`Self::identity_pem`] from files.
    ///
    /// # Errors
    ///
    /// When either file cannot be read or holds nothing usable.
    pub fn identity_pem_files(
        mut self,
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<Self, TlsError> {
        self.identity = Some((certs_in_file(cert.as_ref())?, key_in_file(key.as_ref())?));
        Ok(self)
    }

    /// **For test rigs only**: accepts any server certificate, whoever signed it and whatever
    /// name it is for. The connection is still encrypted, to whoever answered: anyone on the
    /// path can read and change it. Never for a real server.
    #[must_use]
    pub fn danger_skip_verification(mut self, skip: bool) -> Self {
        self.skip_verification = skip;
        self
    }

    /// The configuration.
    ///
    /// # Errors
    ///
    /// When no root is left to trust (`Roots::None` and no CA, or a platform store that holds
    /// none), or rustls refuses the client certificate.
    pub fn build(self) -> Result<ClientTls, TlsError> {
        let provider = provider();
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?;
        let builder = if self.skip_verification {
            builder.dangerous().with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        } else {
            builder.with_root_certificates(self.root_store()?)
        };
        let config = match self.identity {
            Some((chain, key)) => builder.with_client_auth_cert(chain, key)?,
            None => builder.with_no_client_auth(),
        };
        Ok(ClientTls { config: Arc::new(config), skips_verification: self.skip_verification })
    }

    fn root_store(&self) -> Result<RootCertStore, TlsError> {
        let mut store = RootCertStore::empty();
        match self.roots {
            Roots::Webpki => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            Roots::Platform => {
                let found = rustls_native_certs::load_native_certs();
                for e in &found.errors {
                    tracing::warn!(error = %e, "a platform certificate could not be loaded");
                }
                // Certificates the platform holds but webpki cannot parse are skipped.
                store.add_parsable_certificates(found.certs);
            }
            Roots::None => {}
        }
        for ca in &self.cas {
            store.add(ca.clone())?;
        }
        if store.is_empty() {
            return Err(TlsError::Config(rustls::Error::General(
                "no root certificate to trust: add a CA, or choose other roots".into(),
            )));
        }
        Ok(store)
    }
}

/// A verifier that takes any certificate ([`ClientTlsBuilder::danger_skip_verification`]). The
/// handshake's signatures are still checked against the certificate shown, so the connection
/// is at least with whoever holds its key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// What an HTTP server shows: a certificate chain and key from PEM files, reloadable.
#[derive(Clone)]
pub struct ServerTls {
    config: Arc<rustls::ServerConfig>,
    current: Arc<Current>,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert", &self.current.cert)
            .field("key", &self.current.key)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// The chain in `cert` and the key in `key` (PEM files: the leaf first, then its
    /// intermediates; a PKCS#8, PKCS#1 or SEC1 key).
    ///
    /// # Errors
    ///
    /// When a file cannot be read, holds nothing usable, or the key does not fit the
    /// provider.
    pub fn from_pem_files(
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Result<Self, TlsError> {
        Self::build(cert.into(), key.into(), None)
    }

    /// The same, and a client certificate signed by a CA in `client_ca` (a PEM file) is
    /// required of every connection (mutual TLS).
    ///
    /// # Errors
    ///
    /// As [`Self::from_pem_files`], and when the CA file holds no usable certificate.
    pub fn with_client_auth(
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
        client_ca: impl AsRef<Path>,
    ) -> Result<Self, TlsError> {
        Self::build(cert.into(), key.into(), Some(client_ca.as_ref()))
    }

    fn build(cert: PathBuf, key: PathBuf, client_ca: Option<&Path>) -> Result<Self, TlsError> {
        let provider = provider();
        // Stamped before the files are read: a change while they are read is seen as one.
        let stamp = stamp_of(&cert, &key);
        let current = Arc::new(Current {
            key_now: RwLock::new(certified_key(&cert, &key, &provider)?),
            loaded: std::sync::Mutex::new(stamp),
            cert,
            key,
            provider: provider.clone(),
        });
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?;
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(path) => {
                let mut roots = RootCertStore::empty();
                for ca in certs_in_file(path)? {
                    roots.add(ca)?;
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .map_err(|e| TlsError::Config(rustls::Error::General(e.to_string())))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder.with_cert_resolver(current.clone());
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(Self { config: Arc::new(config), current })
    }

    /// Reads the certificate and key files again and shows them to every connection from now
    /// on. On an error the certificate shown so far stays.
    ///
    /// # Errors
    ///
    /// When the files cannot be read, hold nothing usable, or do not fit each other.
    pub fn reload(&self) -> Result<(), TlsError> {
        let c = &self.current;
        let stamp = stamp_of(&c.cert, &c.key);
        let fresh = certified_key(&c.cert, &c.key, &c.provider)?;
        *c.key_now.write_locked() = fresh;
        *c.loaded.locked() = stamp;
        Ok(())
    }

    /// Reloads the certificate whenever its files change, checked every `every` (their size
    /// and modification time, through symbolic links: a file replaced in place, renamed over,
    /// or a link swapped to a new one all count). `on_reload` hears each attempt: a pair that
    /// cannot be read or does not fit (a renewal caught half written) leaves the old one in
    /// place, and the next change is tried again. Runs until the handle is aborted or dropped
    /// with the runtime.
    pub fn watch(
        &self,
        every: Duration,
        on_reload: impl Fn(Result<(), TlsError>) + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let tls = self.clone();
        tokio::spawn(async move {
            // Compared with the files as they were when last loaded (not when this task first
            // ran: a renewal written between the load and the first look is still seen); a
            // pair that failed to load is tried again only once it changes again.
            let mut tried: Option<Stamp> = None;
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let now = stamp_of(&tls.current.cert, &tls.current.key);
                let loaded = *tls.current.loaded.locked();
                if now != loaded && tried != Some(now) {
                    tried = Some(now);
                    on_reload(tls.reload());
                }
            }
        })
    }

    /// The rustls configuration (ALPN h2 and http/1.1).
    #[must_use]
    pub fn rustls_config(&self) -> &Arc<rustls::ServerConfig> {
        &self.config
    }
}

/// The size and modification time of a certificate and key file (`None` for one that cannot be
/// read).
type Stamp = [Option<(u64, std::time::SystemTime)>; 2];

fn stamp_of(cert: &Path, key: &Path) -> Stamp {
    let of = |p: &Path| std::fs::metadata(p).ok().and_then(|m| Some((m.len(), m.modified().ok()?)));
    [of(cert), of(key)]
}

/// The certificate shown now, and where it is read from.
struct Current {
    cert: PathBuf,
    key: PathBuf,
    /// The files' stamp when they were last loaded.
    loaded: std::sync::Mutex<Stamp>,
    provider: Arc<CryptoProvider>,
    key_now: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for Current {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Current").field("cert", &self.cert).field("key", &self.key).finish()
    }
}

impl rustls::server::ResolvesServerCert for Current {
    fn resolve(&self, _: rustls::server::ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.key_now.read_locked().clone())
    }
}

/// `tcp` wrapped in TLS for `https://` URLs (plain for `http://`): `tls`, or the webpki roots
/// when `None`; ALPN h2 and http/1.1, or h2 alone when `http2`.
///
/// # Errors
///
/// When the default configuration cannot be built.
pub(crate) fn connector(
    mut tcp: hyper_util::client::legacy::connect::HttpConnector,
    tls: Option<&ClientTls>,
    secure: bool,
    http2: bool,
) -> Result<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    TlsError,
> {
    // The TLS connector checks the scheme; TCP is told to take either.
    tcp.enforce_http(false);
    let mut config = match (tls, secure) {
        (Some(tls), _) => tls.rustls_config().as_ref().clone(),
        (None, true) => ClientTls::builder().build()?.rustls_config().as_ref().clone(),
        // Never used for `http://`: any valid configuration does.
        (None, false) => rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(RootCertStore::empty())
            .with_no_client_auth(),
    };
    // The connector writes its own ALPN list, and refuses a configuration that has one.
    config.alpn_protocols.clear();
    let builder =
        hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config).https_or_http();
    Ok(if http2 {
        builder.enable_http2().wrap_connector(tcp)
    } else {
        builder.enable_all_versions().wrap_connector(tcp)
    })
}

/// The one provider both sides use.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certified_key(
    cert: &Path,
    key: &Path,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, TlsError> {
    let chain = certs_in_file(cert)?;
    let key_der = key_in_file(key)?;
    let signing = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| TlsError::File { path: key.to_owned(), why: e.to_string() })?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().map_err(|e| TlsError::File {
        path: key.to_owned(),
        why: format!("does not match the certificate in {}: {e}", cert.display()),
    })?;
    Ok(Arc::new(certified))
}

fn certs_in(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("unreadable PEM: {e}"))?;
    if certs.is_empty() {
        return Err("no CERTIFICATE in the PEM".into());
    }
    Ok(certs)
}

fn certs_in_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |why: String| TlsError::File { path: path.to_owned(), why };
    certs_in(&std::fs::read(path).map_err(|e| bad(e.to_string()))?).map_err(bad)
}

fn key_in_file(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bad = |why: String| TlsError::File { path: path.to_owned(), why };
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| bad(format!("no private key: {e}")))
}

#[cfg(test)]
mod tests;
