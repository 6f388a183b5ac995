//! The Streamable HTTP server under arbitrary request bytes (request lines, headers, chunked
//! bodies, pipelined requests), over an in-memory connection (`HttpServer::serve_connection` on
//! a tokio duplex pipe), with these properties:
//!
//! - nothing panics, whatever the bytes;
//! - no hang: once the client has sent its bytes and closed its side, the server finishes
//!   within a bound (its header and body timeouts are short here) and closes the connection;
//! - bounded output: the server writes at most a fixed amount per input byte (no response is
//!   amplified without bound), and what it writes is HTTP: an HTTP/1 status line first (1.0
//!   for a 1.0 request), or, for input that opens with the HTTP/2 preface's first bytes (h2c
//!   with prior knowledge shares the port), whole HTTP/2 frames from a `SETTINGS` frame on;
//! - bounded memory: the fuzzer's `-rss_limit_mb` catches growth; each input runs on a fresh
//!   server (no state carries over).
//!
//! Input: the bytes the client sends, as they are.

use std::cell::RefCell;
use std::time::Duration;

use mcpwire::Limits;
use mcpwire::http::HttpServer;
use mcpwire::peer::{Context, Handler, Incoming, PeerBuilder, Reply, RpcError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long the server may take to finish once the client closed its side.
const FINISH: Duration = Duration::from_secs(5);
/// The server's header and body timeouts here.
const TIMEOUT: Duration = Duration::from_millis(20);

/// A small MCP server: `initialize`, `ping`, and an echo of any other request's params.
pub struct Small;

impl Handler for Small {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "initialize" => Ok(Reply::raw(
                r#"{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"fuzz","version":"0"}}"#,
            )),
            "ping" => Ok(Reply::empty()),
            _ => Ok(Reply::raw(req.params().map_or("null", |p| p.get()))),
        }
    }
}

thread_local! {
    static RUNTIME: RefCell<tokio::runtime::Runtime> = RefCell::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime"),
    );
}

/// Runs every property on one input.
pub fn check_http(data: &[u8]) {
    RUNTIME.with(|rt| rt.borrow().block_on(run(data)));
}

async fn run(data: &[u8]) {
    let limits = Limits::default().max_frame_bytes(4096).max_depth(16).max_batch_len(8);
    let server = HttpServer::new(PeerBuilder::new().limits(limits))
        .header_timeout(TIMEOUT)
        .read_timeout(TIMEOUT)
        .max_body_bytes(64 * 1024)
        // Sessions an input opened end soon after it (and with the server): none piles up.
        .session_idle_timeout(Some(TIMEOUT));
    let (mut client, conn) = tokio::io::duplex(64 * 1024);
    let served = tokio::spawn(async move { server.serve_connection(conn, || Small).await });
    let (mut reader, mut writer) = tokio::io::split(&mut client);
    let exchange = async {
        let write = async {
            // The server may close before taking everything (a malformed request): fine.
            let _ = writer.write_all(data).await;
            let _ = writer.shutdown().await;
        };
        let mut out = Vec::new();
        let read = reader.read_to_end(&mut out);
        let ((), read) = tokio::join!(write, read);
        let _ = read;
        out
    };
    let out = tokio::time::timeout(FINISH, exchange)
        .await
        .unwrap_or_else(|_| panic!("the server did not finish within {FINISH:?}"));
    let bound = 64 * 1024 + 256 * data.len();
    assert!(out.len() <= bound, "{} bytes written for {} sent", out.len(), data.len());
    assert_http(data, &out);
    // The connection task ends too (it has nothing left to do).
    let _ = tokio::time::timeout(FINISH, served).await.expect("the connection task ends");
}

/// What the server wrote for `sent` is HTTP: an HTTP/1 response (an HTTP/1.0 request is
/// answered in HTTP/1.0), or HTTP/2 frames when the client opened with the preface's start.
pub fn assert_http(sent: &[u8], out: &[u8]) {
    if out.is_empty() || out.starts_with(b"HTTP/1.1 ") || out.starts_with(b"HTTP/1.0 ") {
        return;
    }
    assert!(
        sent.starts_with(b"PRI "),
        "not an HTTP/1 response: {:?}",
        String::from_utf8_lossy(&out[..out.len().min(64)])
    );
    assert_h2_frames(out);
}

/// `out` is whole HTTP/2 frames (RFC 9113 §4.1: a 9-byte header, then its length of payload),
/// the first a `SETTINGS` frame on stream 0, none longer than the default maximum frame size.
pub fn assert_h2_frames(out: &[u8]) {
    const SETTINGS: u8 = 0x4;
    const MAX_FRAME: usize = 16_384;
    let mut at = 0;
    let mut first = true;
    while at < out.len() {
        let head = out.get(at..at + 9).unwrap_or_else(|| {
            panic!("a cut HTTP/2 frame header at byte {at} of {}: {:02x?}", out.len(), &out[at..])
        });
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        assert!(len <= MAX_FRAME, "an HTTP/2 frame of {len} bytes");
        if first {
            assert_eq!((head[3], stream), (SETTINGS, 0), "the first HTTP/2 frame: {head:02x?}");
            first = false;
        }
        at += 9 + len;
        assert!(at <= out.len(), "an HTTP/2 frame cut short: {head:02x?}");
    }
}
