//! The Streamable HTTP server under arbitrary request bytes (request lines, headers, chunked
//! bodies, pipelined requests), over an in-memory connection (`HttpServer::serve_connection` on
//! a tokio duplex pipe), with these properties:
//!
//! - nothing panics, whatever the bytes;
//! - no hang: once the client has sent its bytes and closed its side, the server finishes
//!   within a bound (its header and body timeouts are short here) and closes the connection;
//! - bounded output: the server writes at most a fixed amount per input byte (no response is
//!   amplified without bound), and what it writes starts with an HTTP/1 status line (1.0 for
//!   a 1.0 request);
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
struct Small;

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
    // An HTTP/1.0 request is answered in HTTP/1.0.
    if !out.is_empty() {
        assert!(
            out.starts_with(b"HTTP/1.1 ") || out.starts_with(b"HTTP/1.0 "),
            "not an HTTP/1 response: {:?}",
            String::from_utf8_lossy(&out[..out.len().min(64)])
        );
    }
    // The connection task ends too (it has nothing left to do).
    let _ = tokio::time::timeout(FINISH, served).await.expect("the connection task ends");
}
