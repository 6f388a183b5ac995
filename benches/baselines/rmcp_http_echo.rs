//! A baseline for `mcpwire serve --http`: the same MCP echo server written with rmcp, served over
//! rmcp's Streamable HTTP server (`StreamableHttpService` with a `LocalSessionManager`) on
//! hyper 1 at `/mcp`, so `mcpwire load` (and `benches/http_load.sh`) can measure both in the
//! same run.
//!
//! The handler is the one `benches/e2e.rs` measures (`RmcpEcho`): `tools/list` lists `echo`, and
//! `tools/call` of `echo` answers one text block holding its `message` exactly. rmcp's default
//! configuration is kept: stateful sessions (`legacy_session_mode`, an `Mcp-Session-Id` from
//! `initialize`), each POST answered as a `text/event-stream`, SSE keep-alive every 15 s, and
//! `Host` checked against loopback names. With `--stateless-json` it runs rmcp's stateless JSON
//! path instead: no sessions (`legacy_session_mode` off) and a request answered by its response
//! alone as `application/json` (`json_response`); a 2026-07-28 request is served statelessly
//! in either mode, and this one answers it with JSON rather than an event stream. Like the
//! `mcpwire` binary it runs on a multi-thread tokio runtime with mimalloc as its allocator.
//!
//! Usage: `rmcp_http_echo [ADDR] [--stateless-json]` (default `127.0.0.1:0`). Once listening it
//! prints one line on stderr: `rmcp_http_echo: serving MCP on http://ADDR/mcp`.

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

/// The `mcpwire` binary's allocator (the dev-dependency is always there), so the two servers
/// differ in their HTTP and MCP layers only.
#[global_allocator]
static GLOBAL: mcpwire_alloc::MiMalloc = mcpwire_alloc::MiMalloc;

#[path = "../common/rmcp_echo.rs"]
mod rmcp_echo;

use rmcp_echo::RmcpEcho;

/// The endpoint, as `mcpwire serve --http` uses.
const ENDPOINT: &str = "/mcp";

type Service = StreamableHttpService<RmcpEcho, LocalSessionManager>;

/// Routes `ENDPOINT` to rmcp and answers anything else 404.
async fn route(
    service: Arc<Service>,
    req: Request<Incoming>,
) -> Result<Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>, Infallible> {
    if req.uri().path() == ENDPOINT {
        Ok(service.handle(req).await)
    } else {
        let mut resp = Response::new(Empty::<Bytes>::new().boxed());
        *resp.status_mut() = StatusCode::NOT_FOUND;
        Ok(resp)
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stateless_json = args.iter().any(|a| a == "--stateless-json");
    let addr = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let config = if stateless_json {
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
    } else {
        StreamableHttpServerConfig::default()
    };
    let service: Arc<Service> = Arc::new(StreamableHttpService::new(
        || Ok(RmcpEcho),
        Arc::new(LocalSessionManager::default()),
        config,
    ));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("rmcp_http_echo: serving MCP on http://{}{ENDPOINT}", listener.local_addr()?);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            // Out of descriptors and the like: keep serving the connections we have.
            Err(err) => {
                eprintln!("rmcp_http_echo: accept: {err}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        // As `mcpwire serve --http` does.
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| route(service.clone(), req));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}
