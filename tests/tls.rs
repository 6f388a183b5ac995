//! TLS on both sides of Streamable HTTP, with certificates the test makes (rcgen): the typed
//! client against the typed server behind `HttpServer::tls` over real loopback sockets, in both
//! eras, over HTTP/2 and HTTP/1.1; what a client refuses (an unknown CA, a certificate for
//! another name) and what skipping verification accepts; mutual TLS; the caller's headers and
//! ALPN as a TLS server sees them; the handshake's bounds at and past their limits; a
//! certificate reloaded in place.

#![cfg(all(feature = "tls", feature = "mcp"))]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::client::{Client, ClientError, Stage};
use mcpwire::http::HttpServer;
use mcpwire::mcp::negotiation::VersionChoice;
use mcpwire::mcp::types::{CallToolResult, Tool};
use mcpwire::peer::PeerBuilder;
use mcpwire::server::Server;
use mcpwire::tls::{ClientTls, Roots, ServerTls};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod common;

use common::tls::Pki;
use common::{LEGACY, MODERN, ServedHttp, greet, serve_http, within};

fn server() -> Server {
    Server::builder("tls-test-server", "1").tool(Tool::new("greet"), greet).build()
}

/// The typed server over HTTP, on TLS with `tls`.
async fn serve(http: HttpServer, tls: ServerTls) -> ServedHttp {
    let typed = server();
    serve_http(http.tls(tls), move || typed.handler()).await
}

fn https(served: &ServedHttp, host: &str) -> String {
    format!("https://{host}:{}/mcp", served.addr.port())
}

fn trusting(pki: &Pki) -> ClientTls {
    ClientTls::builder().roots(Roots::None).add_ca_pem_file(&pki.ca).unwrap().build().unwrap()
}

fn text(r: &CallToolResult<'_>) -> String {
    r.content.iter().filter_map(|c| c.as_text()).collect()
}

async fn greets(
    url: &str,
    version: &str,
    tls: ClientTls,
    http2: bool,
) -> Result<String, ClientError> {
    let c = Client::builder()
        .protocol_version(VersionChoice::Fixed(version.to_owned()))
        .tls(tls)
        .http2(http2)
        .timeout(Some(Duration::from_secs(10)))
        .connect(url)
        .await?;
    let r = c.call_tool("greet", json!({ "who": "TLS" })).await?;
    Ok(text(r.get()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typed_client_reaches_the_typed_server_over_https_in_both_eras() {
    let pki = Pki::new("roundtrip", &["localhost", "127.0.0.1"]);
    let tls = ServerTls::from_pem_files(&pki.cert, &pki.key).unwrap();
    let http = HttpServer::new(PeerBuilder::new());
    let served = serve(http.clone(), tls).await;
    for host in ["localhost", "127.0.0.1"] {
        for version in [LEGACY, MODERN] {
            // ALPN as offered (h2 first, which the server prefers), and HTTP/2 alone.
            for http2 in [false, true] {
                let said = within(greets(&https(&served, host), version, trusting(&pki), http2))
                    .await
                    .unwrap_or_else(|e| panic!("{host} {version} http2={http2}: {e}"));
                assert_eq!(said, "hello TLS", "{host} {version} http2={http2}");
            }
        }
    }
    assert_eq!(http.stats().tls_handshakes_failed, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_ca_and_another_name_are_refused_and_skipping_verification_takes_any() {
    let pki = Pki::new("refused", &["localhost"]);
    let tls = ServerTls::from_pem_files(&pki.cert, &pki.key).unwrap();
    let http = HttpServer::new(PeerBuilder::new());
    let served = serve(http.clone(), tls).await;

    // The webpki roots do not hold the test's CA.
    let webpki = ClientTls::builder().build().unwrap();
    let e = within(greets(&https(&served, "localhost"), LEGACY, webpki, false)).await.unwrap_err();
    // A TLS failure of its own kind, at the step that met it (a legacy version: no probe).
    assert!(matches!(&e, ClientError::Tls { stage: Stage::Initialize, .. }), "{e:?}");
    let said = e.to_string();
    assert!(said.contains("UnknownIssuer") || said.contains("unknown issuer"), "{said}");

    // The CA is trusted, but the certificate is for `localhost`, not `127.0.0.1`.
    let e = within(greets(&https(&served, "127.0.0.1"), MODERN, trusting(&pki), false))
        .await
        .unwrap_err();
    assert!(matches!(&e, ClientError::Tls { stage: Stage::Probe, .. }), "{e:?}");
    let said = e.to_string();
    assert!(said.contains("NotValidForName") || said.contains("not valid for name"), "{said}");

    // Skipping verification takes either.
    let skip = ClientTls::builder().roots(Roots::None).danger_skip_verification(true).build();
    let skip = skip.unwrap();
    assert!(skip.skips_verification());
    for host in ["localhost", "127.0.0.1"] {
        let said = within(greets(&https(&served, host), MODERN, skip.clone(), false)).await;
        assert_eq!(said.unwrap(), "hello TLS", "{host}");
    }
    // The two refusals are the client's: the server saw the handshakes fail.
    common::eventually("the failed handshakes counted", || http.stats().tls_handshakes_failed >= 2)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_needs_the_client_certificate() {
    let pki = Pki::new("mutual", &["localhost"]);
    let tls = ServerTls::with_client_auth(&pki.cert, &pki.key, &pki.ca).unwrap();
    let served = serve(HttpServer::new(PeerBuilder::new()), tls).await;
    let url = https(&served, "localhost");

    // In TLS 1.3 the server refuses the missing certificate after the handshake, with an alert
    // (the TLS stack hands it over as text, so it arrives as a broken exchange, `Transport`, not
    // as `Tls`): the first request reads the alert, or finds the connection closed or reset by
    // it, whichever the two sides' timing gives. Never an answer.
    let e = within(greets(&url, LEGACY, trusting(&pki), false)).await.unwrap_err();
    assert!(matches!(e, ClientError::Tls { .. } | ClientError::Transport { .. }), "{e:?}");

    let with_cert = ClientTls::builder()
        .roots(Roots::None)
        .add_ca_pem_file(&pki.ca)
        .unwrap()
        .identity_pem_files(&pki.client_cert, &pki.client_key)
        .unwrap()
        .build()
        .unwrap();
    for version in [LEGACY, MODERN] {
        let said = within(greets(&url, version, with_cert.clone(), false)).await;
        assert_eq!(said.unwrap(), "hello TLS", "{version}");
    }
}

/// A TLS server of the test's own: records what ALPN the client offered and each request's
/// head, and answers every request 401 (the client gives up).
async fn recording_server(pki: &Pki) -> (u16, Arc<Mutex<Vec<String>>>) {
    let tls = ServerTls::from_pem_files(&pki.cert, &pki.key).unwrap();
    let mut config = tls.rustls_config().as_ref().clone();
    // HTTP/1.1 only: what the client does when the server does not take h2.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let log = log.clone();
            tokio::spawn(async move {
                let Ok(mut io) = acceptor.accept(tcp).await else { return };
                let alpn =
                    io.get_ref().1.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned());
                log.lock().unwrap().push(format!("alpn {}", alpn.unwrap_or_default()));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && io.read(&mut byte).await.unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                log.lock().unwrap().push(String::from_utf8_lossy(&head).to_lowercase());
                let _ = io
                    .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
                let _ = io.shutdown().await;
            });
        }
    });
    (port, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_headers_ride_on_tls_and_alpn_offers_h2_then_http_1_1() {
    let pki = Pki::new("headers", &["localhost"]);
    let (port, seen) = recording_server(&pki).await;
    let url = format!("https://localhost:{port}/mcp");
    let connected = within(
        Client::builder()
            .protocol_version(VersionChoice::Fixed(LEGACY.to_owned()))
            .tls(trusting(&pki))
            .header(
                http::header::AUTHORIZATION,
                http::HeaderValue::from_static("Bearer not-a-real-token"),
            )
            .header(
                http::HeaderName::from_static("x-tenant"),
                http::HeaderValue::from_static("blue"),
            )
            .connect(url.as_str()),
    )
    .await;
    let Err(e) = connected else { panic!("a server that answers 401 is not connected to") };
    assert!(e.to_string().contains("401"), "{e}");
    let seen = seen.lock().unwrap().clone();
    // The server took http/1.1 from what was offered: HTTP/1.1 it is.
    assert_eq!(seen.first().map(String::as_str), Some("alpn http/1.1"), "{seen:?}");
    let head = seen.get(1).expect("a request head");
    assert!(head.starts_with("post /mcp http/1.1\r\n"), "{head}");
    assert!(head.contains("\r\nauthorization: bearer not-a-real-token\r\n"), "{head}");
    assert!(head.contains("\r\nx-tenant: blue\r\n"), "{head}");
    assert_eq!(head.matches("\r\nhost: ").count(), 1, "{head}");
    assert!(head.contains(&format!("\r\nhost: localhost:{port}\r\n")), "{head}");
}

/// Whether the server closed `tcp` within `wait` (a read ends, with nothing or an error).
async fn closed_within(tcp: &mut TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 64];
    matches!(tokio::time::timeout(wait, tcp.read(&mut buf)).await, Ok(Ok(0) | Err(_)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshakes_are_bounded_in_number_and_in_time() {
    let pki = Pki::new("bounds", &["localhost"]);
    let tls = ServerTls::from_pem_files(&pki.cert, &pki.key).unwrap();
    let http = HttpServer::new(PeerBuilder::new())
        .max_tls_handshakes(2)
        .tls_handshake_timeout(Duration::from_millis(600));
    let served = serve(http.clone(), tls).await;
    // Two connections that never begin their handshake: at the bound, both are held.
    let mut a = TcpStream::connect(served.addr).await.unwrap();
    let mut b = TcpStream::connect(served.addr).await.unwrap();
    assert!(!closed_within(&mut b, Duration::from_millis(150)).await, "at the bound: held");
    assert!(!closed_within(&mut a, Duration::from_millis(10)).await, "at the bound: held");
    // A third, past the bound: the oldest handshake is shed for it (the first of the two to
    // reach the handshake: their tasks may start in either order).
    let mut c = TcpStream::connect(served.addr).await.unwrap();
    let (mut shed, mut kept) = tokio::select! {
        true = closed_within(&mut a, Duration::from_millis(400)) => (a, b),
        true = closed_within(&mut b, Duration::from_millis(400)) => (b, a),
        () = tokio::time::sleep(Duration::from_millis(500)) => panic!("neither was shed"),
    };
    assert!(!closed_within(&mut kept, Duration::from_millis(50)).await, "only one is shed");
    assert!(!closed_within(&mut c, Duration::from_millis(100)).await, "the newest: held");
    drop(shed.shutdown().await);
    // The two held ones are closed once their handshake took too long.
    assert!(closed_within(&mut kept, Duration::from_secs(3)).await, "past the timeout: closed");
    assert!(closed_within(&mut c, Duration::from_secs(3)).await, "past the timeout: closed");
    common::eventually("three handshakes counted as failed", || {
        http.stats().tls_handshakes_failed == 3
    })
    .await;
    // And the port still serves.
    let said = within(greets(&https(&served, "localhost"), MODERN, trusting(&pki), false)).await;
    assert_eq!(said.unwrap(), "hello TLS");
}

/// Half-open handshakes (connections that never say anything) by the hundred and a slowloris
/// client dribbling a ClientHello, at once: a legitimate client is served within a second each
/// time meanwhile (with handshakes refused past the bound, as before, it was not served at all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_half_open_handshakes_leaves_room_for_a_real_client() {
    let pki = Pki::new("flood", &["localhost"]);
    let tls = ServerTls::from_pem_files(&pki.cert, &pki.key).unwrap();
    // 128 handshakes at once: at the flood's rate (about 1,250 connections a second) an honest
    // handshake has about 100 ms before it would be shed; without shedding, the 2,000 held
    // connections would hold every place for 30 s.
    let http = HttpServer::new(PeerBuilder::new())
        .max_tls_handshakes(128)
        .tls_handshake_timeout(Duration::from_secs(30));
    let served = serve(http.clone(), tls).await;
    let addr = served.addr;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut abusers = Vec::new();
    // Half-open: connect and say nothing, 25 connections a burst, kept open.
    let s = stop.clone();
    abusers.push(tokio::spawn(async move {
        let mut held = Vec::new();
        while !s.load(std::sync::atomic::Ordering::Relaxed) {
            for _ in 0..25 {
                if let Ok(t) = TcpStream::connect(addr).await {
                    held.push(t);
                }
            }
            held.truncate(2_000);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }));
    // Slowloris: a ClientHello's first bytes, one a second.
    let s = stop.clone();
    abusers.push(tokio::spawn(async move {
        let mut t = TcpStream::connect(addr).await.unwrap();
        for b in [0x16u8, 0x03, 0x01, 0x02, 0x00, 0x01] {
            if s.load(std::sync::atomic::Ordering::Relaxed) || t.write_all(&[b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let url = https(&served, "localhost");
    for _ in 0..5 {
        let said = tokio::time::timeout(
            Duration::from_secs(1),
            greets(&url, MODERN, trusting(&pki), false),
        )
        .await
        .expect("a legitimate client served within a second during the flood");
        assert_eq!(said.unwrap(), "hello TLS");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for a in abusers {
        let _ = a.await;
    }
    assert!(http.stats().tls_handshakes_failed > 100, "{:?}", http.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_is_reloaded_in_place_and_a_bad_one_leaves_the_old() {
    let pki = Pki::new("reload", &["localhost"]);
    let tls = ServerTls::from_pem_files(&pki.cert, &pki.key).unwrap();
    let served = serve(HttpServer::new(PeerBuilder::new()), tls.clone()).await;
    let url = https(&served, "localhost");
    let old_ca = std::fs::read(&pki.ca).unwrap();
    // A configuration of its own each time: a shared one would resume its TLS session, which
    // skips the certificate.
    let old =
        || ClientTls::builder().roots(Roots::None).add_ca_pem(&old_ca).unwrap().build().unwrap();
    assert_eq!(within(greets(&url, MODERN, old(), false)).await.unwrap(), "hello TLS");

    // A renewal from another CA: new connections see it once reloaded.
    pki.issue("reload-2", &["localhost"]);
    let new = trusting(&pki);
    assert!(within(greets(&url, MODERN, new.clone(), false)).await.is_err(), "not reloaded yet");
    tls.reload().unwrap();
    assert_eq!(within(greets(&url, MODERN, new.clone(), false)).await.unwrap(), "hello TLS");
    let e = within(greets(&url, MODERN, old(), false)).await.unwrap_err();
    assert!(e.to_string().contains("UnknownIssuer"), "the old CA's trust is gone: {e}");

    // A key file that holds no key: refused, and the certificate shown stays.
    std::fs::write(&pki.key, "not a key\n").unwrap();
    let e = tls.reload().unwrap_err();
    assert!(e.to_string().contains("server.key"), "{e}");
    assert_eq!(within(greets(&url, LEGACY, new, false)).await.unwrap(), "hello TLS");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_http2_offers_http_1_1_alone() {
    let pki = Pki::new("h1", &["localhost"]);
    let tls = ServerTls::from_pem_files(&pki.cert, &pki.key).unwrap();
    let served = serve(HttpServer::new(PeerBuilder::new()).http2(false), tls).await;
    let url = https(&served, "localhost");
    // ALPN as offered: the server takes http/1.1.
    let said = within(greets(&url, MODERN, trusting(&pki), false)).await;
    assert_eq!(said.unwrap(), "hello TLS");
    // h2 alone: no protocol in common, refused in the handshake.
    let e = within(greets(&url, MODERN, trusting(&pki), true)).await.unwrap_err();
    assert!(e.to_string().contains("NoApplicationProtocol"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_certificate_is_reloaded_when_its_files_change() {
    let pki = Pki::new("watch", &["localhost"]);
    let tls = ServerTls::from_pem_files(&pki.cert, &pki.key).unwrap();
    let served = serve(HttpServer::new(PeerBuilder::new()), tls.clone()).await;
    let url = https(&served, "localhost");
    let (heard, mut reloads) = tokio::sync::mpsc::unbounded_channel();
    let watching = tls.watch(Duration::from_millis(50), move |r| {
        let _ = heard.send(r.map_err(|e| e.to_string()));
    });
    assert_eq!(within(greets(&url, MODERN, trusting(&pki), false)).await.unwrap(), "hello TLS");

    // A renewal written over the files: reloaded without being asked, and served.
    pki.issue("watch-2", &["localhost"]);
    let mut served_new = false;
    while let Some(r) = within(reloads.recv()).await {
        // The certificate may be seen before its key is written: that attempt fails, the
        // key's change is tried again.
        if r.is_ok() && within(greets(&url, MODERN, trusting(&pki), false)).await.is_ok() {
            served_new = true;
            break;
        }
    }
    assert!(served_new, "the renewed certificate was not served");

    // A key file broken in place: heard as a failure, and the renewed certificate stays.
    std::fs::write(&pki.key, "not a key\n").unwrap();
    let e = within(reloads.recv()).await.unwrap().unwrap_err();
    assert!(e.contains("server.key"), "{e}");
    assert_eq!(within(greets(&url, LEGACY, trusting(&pki), false)).await.unwrap(), "hello TLS");
    watching.abort();
}
