//! `HttpServer` on a loopback port, serving a handler of the test's own until stopped.

use std::net::SocketAddr;

use mcpwire::http::HttpServer;
use mcpwire::peer::Handler;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server serving on a loopback port.
pub struct ServedHttp {
    pub addr: SocketAddr,
    /// Stops `serve` when it is sent, or dropped.
    pub stop: oneshot::Sender<()>,
    /// The task running `serve`: it ends with what `serve` returned.
    pub task: JoinHandle<std::io::Result<()>>,
}

impl ServedHttp {
    /// The MCP endpoint's URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

/// `server` serving on `127.0.0.1:0` with each session's (and stateless peer's) handler made by
/// `make`, until stopped.
pub async fn serve_http<H, F>(server: HttpServer, make: F) -> ServedHttp
where
    H: Handler,
    F: Fn() -> H + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let stop = async {
            let _ = stopped.await;
        };
        server.serve(listener, make, stop).await
    });
    ServedHttp { addr, stop, task }
}
