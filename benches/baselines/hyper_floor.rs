//! The floor under `mcpwire serve --http` in `benches/http_wrk.sh`: a bare hyper 1 HTTP/1.1
//! server that reads each request's body whole and answers one fixed JSON-RPC result, with no
//! parse, no routing and no MCP. What it costs per request is what hyper, tokio and the kernel
//! cost; what `serve --http` spends above it is the MCP server's own.
//!
//! It runs as the `mcpwire` binary does: a multi-thread tokio runtime, mimalloc as allocator,
//! `TCP_NODELAY` on each connection, one task per connection. The answer is the one
//! `serve --http` gives the bench's `tools/call echo` (with a fixed id), so both write the same
//! bytes.
//!
//! Usage: `hyper_floor [ADDR]` (default `127.0.0.1:0`). Once listening it prints one line on
//! stderr: `hyper_floor: serving on http://ADDR/mcp`.

use std::convert::Infallible;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

/// The `mcpwire` binary's allocator.
#[global_allocator]
static GLOBAL: mcpwire_alloc::MiMalloc = mcpwire_alloc::MiMalloc;

/// The fixed answer: an echo tool's result for the bench's 64-byte message.
const ANSWER: &[u8] = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}],"resultType":"complete"}}"#;

/// Reads the body whole, then answers `ANSWER`.
async fn answer(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    // A body that fails to arrive is answered all the same: the bench counts only 2xx answers
    // to bodies that did arrive.
    let _body = req.into_body().collect().await.map(http_body_util::Collected::to_bytes);
    let mut resp = Response::new(Full::new(Bytes::from_static(ANSWER)));
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(resp)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("hyper_floor: serving on http://{}/mcp", listener.local_addr()?);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            // Out of descriptors and the like: keep serving the connections there are.
            Err(err) => {
                eprintln!("hyper_floor: accept: {err}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(answer))
                .await;
        });
    }
}
