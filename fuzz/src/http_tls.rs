//! The Streamable HTTP server behind TLS (`HttpServer::tls`, on a loopback port, its
//! certificate made once per process with rcgen) under arbitrary bytes, as a resource server
//! or not. The input's first byte says how the rest is sent:
//!
//! - bit 0 clear: as they are, to the TLS port (a broken or hostile handshake: garbage, a
//!   ClientHello cut short, records of any type);
//! - bit 0 set: inside a TLS session a real client opened (rustls), offering ALPN `h2` when
//!   bit 1 is set, else `http/1.1`;
//! - bit 2 set: the server is guarded ([`HttpServer::auth`]) by a JWT validator with a fixed
//!   key: the bearer header, the query string and the token itself are untrusted input too.
//!
//! Properties: nothing panics; once the client has sent its bytes (and, on the raw port, closed
//! its side), the server finishes within a bound (short header, body and handshake timeouts
//! here); what it
//! writes is bounded per input byte; on the raw port it is TLS records (RFC 8446 §5.1: a known
//! content type, version 3.x, a length within the bound), and inside a session it is HTTP (as
//! `http.rs` checks: an HTTP/1 status line, or HTTP/2 frames from `SETTINGS` on when `h2` was
//! negotiated or the client opened with the preface).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcpwire::Limits;
use mcpwire::auth::resource::{JwtValidator, ResourceServer};
use mcpwire::http::HttpServer;
use mcpwire::peer::PeerBuilder;
use mcpwire::tls::{ClientTls, ServerTls};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::http::{Small, assert_h2_frames, assert_http};

/// How long the server may take to finish once the client closed its side.
const FINISH: Duration = Duration::from_secs(5);
/// The server's header and body timeouts here (the idle bound that ends a session once it has
/// answered).
const TIMEOUT: Duration = Duration::from_millis(10);
/// The server's handshake timeout here.
const HANDSHAKE: Duration = Duration::from_millis(200);
/// A JWKS with one P-256 key (the public example key of RFC 7517, appendix A.1): tokens are
/// parsed, their headers and claims read, their signatures checked against it.
const JWKS: &str = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","alg":"ES256","use":"sig","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#;

/// The certificate and key files, written once per process.
fn certificate() -> &'static (PathBuf, PathBuf) {
    static FILES: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    FILES.get_or_init(|| {
        let key = rcgen::KeyPair::generate().expect("a key pair");
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .expect("certificate parameters")
            .self_signed(&key)
            .expect("a self-signed certificate");
        let dir = std::env::temp_dir().join(format!("mcpwire-fuzz-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for the certificate");
        let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&c, cert.pem()).expect("the certificate written");
        std::fs::write(&k, key.serialize_pem()).expect("the key written");
        (c, k)
    })
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
}

/// Runs every property on one input.
pub fn check_http_tls(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    RUNTIME.with(|rt| rt.block_on(run(mode, rest)));
}

async fn run(mode: u8, data: &[u8]) {
    let (cert, key) = certificate();
    let tls = ServerTls::from_pem_files(cert, key).expect("the certificate loads");
    let limits = Limits::default().max_frame_bytes(4096).max_depth(16).max_batch_len(8);
    let mut server = HttpServer::new(PeerBuilder::new().limits(limits))
        .tls(tls)
        .header_timeout(TIMEOUT)
        .read_timeout(TIMEOUT)
        .tls_handshake_timeout(HANDSHAKE)
        .max_body_bytes(64 * 1024)
        .session_idle_timeout(Some(TIMEOUT));
    if mode & 4 != 0 {
        let resource = "https://localhost/mcp";
        let v = JwtValidator::builder("https://issuer.example", resource)
            .jwks_json(JWKS)
            .build()
            .expect("the fixed JWKS loads");
        server = server.auth(ResourceServer::new(resource, v).require_scope("mcp"));
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        let _ = server
            .serve(listener, || Small, async {
                let _ = stopped.await;
            })
            .await;
    });
    let tcp = TcpStream::connect(addr).await.expect("a connection");
    let exchange = async {
        if mode & 1 == 0 {
            let out = exchange(tcp, data, true).await;
            assert_tls_records(&out);
            return out.len();
        }
        let h2 = mode & 2 != 0;
        let Some(tls) = client(tcp, h2).await else { return 0 };
        let negotiated_h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        // The sending side stays open: a `close_notify` right behind the request is taken as
        // the end of the connection (the request is not answered), so the server's idle bound
        // ends it instead, once it has answered.
        let out = exchange(tls, data, false).await;
        if negotiated_h2 {
            assert_h2_frames(&out);
        } else {
            assert_http(data, &out);
        }
        out.len()
    };
    let written = tokio::time::timeout(FINISH, exchange)
        .await
        .unwrap_or_else(|_| panic!("the server did not finish within {FINISH:?}"));
    let bound = 64 * 1024 + 256 * data.len();
    assert!(written <= bound, "{written} bytes written for {} sent", data.len());
    let _ = stop.send(());
    let _ = tokio::time::timeout(FINISH, served).await.expect("the server stops");
}

/// Sends `data`, closes the sending side when `close` says so, and reads everything the
/// server writes until it closes.
async fn exchange<S>(io: S, data: &[u8], close: bool) -> Vec<u8>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite,
{
    let (mut reader, mut writer) = tokio::io::split(io);
    let write = async {
        // The server may close before taking everything: fine.
        let _ = writer.write_all(data).await;
        let _ = writer.flush().await;
        if close {
            let _ = writer.shutdown().await;
        }
    };
    let mut out = Vec::new();
    let ((), _) = tokio::join!(write, reader.read_to_end(&mut out));
    out
}

/// A TLS session with the server (its certificate is the fuzzer's own, not checked), offering
/// `h2` or `http/1.1`; `None` if the handshake fails (it must not, but the server's bounds may
/// close a slow one).
async fn client(tcp: TcpStream, h2: bool) -> Option<tokio_rustls::client::TlsStream<TcpStream>> {
    let any = ClientTls::builder()
        .danger_skip_verification(true)
        .build()
        .expect("a client configuration");
    let mut config = (**any.rustls_config()).clone();
    config.alpn_protocols = vec![if h2 { b"h2".to_vec() } else { b"http/1.1".to_vec() }];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("a server name");
    connector.connect(name, tcp).await.ok()
}

/// `out` is whole TLS records: content type change_cipher_spec, alert, handshake or
/// application_data; version 3.x; at most 2^14 + 2048 bytes each.
fn assert_tls_records(out: &[u8]) {
    let mut at = 0;
    while at < out.len() {
        let head = out
            .get(at..at + 5)
            .unwrap_or_else(|| panic!("a cut TLS record header at byte {at}: {:02x?}", &out[at..]));
        assert!((20..=23).contains(&head[0]), "a TLS record of type {}", head[0]);
        assert_eq!(head[1], 3, "a TLS record of version {}.{}", head[1], head[2]);
        let len = usize::from(head[3]) << 8 | usize::from(head[4]);
        assert!(len <= (1 << 14) + 2048, "a TLS record of {len} bytes");
        at += 5 + len;
        assert!(at <= out.len(), "a TLS record cut short: {head:02x?}");
    }
}
