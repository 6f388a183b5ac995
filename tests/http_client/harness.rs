//! What the client transport's tests share: the handshake, error checks, and servers made by
//! hand; the bounded waits and `HttpServer` on a socket come from the library tests' common
//! harness (`tests/common/`).

pub(crate) use std::future::Future;
pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};
pub(crate) use std::sync::{Arc, Mutex};
pub(crate) use std::time::Duration;

pub(crate) use mcpwire::http::{HttpClient, HttpServer, connect};
pub(crate) use mcpwire::peer::{
    CloseReason, ConnectionTask, Context, Handler, Incoming, NO_PARAMS, NoHandler, PeerBuilder,
    PeerHandle, Reply, RequestError, RequestOptions, RpcError, TransportError,
};
pub(crate) use mcpwire::{ErrorCode, Json, RawJson};
pub(crate) use serde_json::{Value, json};
pub(crate) use tokio::io::{AsyncReadExt, AsyncWriteExt};
pub(crate) use tokio::net::{TcpListener, TcpStream};
pub(crate) use tokio::task::JoinHandle;

pub(crate) use crate::common::{SETTLE_TIMEOUT, ServedHttp, eventually, serve_http, within};

pub(crate) const INIT_PARAMS: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"http-client-test","version":"1"}}"#;
pub(crate) const INIT_RESULT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"http-client-test","version":"1"}}"#;

/// An application-defined error code, so the test sees the handler's code and not one the
/// transport made up.
pub(crate) const TOLD_TO_FAIL: ErrorCode = ErrorCode(-32042);

/// The JSON text of params, or `null`.
pub(crate) fn params_of(m: &Incoming) -> Value {
    m.params().map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap())
}

/// `initialize`, checked, then `notifications/initialized`.
pub(crate) async fn handshake(peer: &PeerHandle) {
    let init = within(peer.request("initialize", Some(RawJson::new(INIT_PARAMS)))).await.unwrap();
    let v: Value = init.result_as().unwrap();
    assert_eq!(v["protocolVersion"], "2025-11-25", "{v}");
    within(peer.notify("notifications/initialized", NO_PARAMS)).await.unwrap();
}

/// The error a request failed with, which must be an error response.
pub(crate) fn rpc_error(r: Result<Incoming, RequestError>) -> RpcError {
    match r {
        Err(RequestError::Rpc(e)) => e,
        other => panic!("an error response expected, got {other:?}"),
    }
}

/// The error a request failed with, which must be the transport's own for a failed exchange
/// (never worded as the server's answer); it must say `says`.
pub(crate) fn transport_error(r: Result<Incoming, RequestError>, says: &str) -> TransportError {
    match r {
        Err(RequestError::Transport(e)) => {
            assert!(e.to_string().contains(says), "{e:?} does not say {says:?}");
            e
        }
        other => panic!("a transport error expected, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Servers made by hand.

/// An HTTP/1.1 server made by hand on `127.0.0.1:0`: each connection it accepts goes to
/// `exchange`, in a task of its own. It stops when dropped.
pub(crate) struct ByHand {
    pub(crate) url: String,
    task: JoinHandle<()>,
}

impl ByHand {
    pub(crate) async fn start<F, Fut>(exchange: F) -> Self
    where
        F: Fn(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(exchange(sock));
            }
        });
        Self { url, task }
    }
}

impl Drop for ByHand {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request: its head (request line and headers) and its body (by `Content-Length`).
pub(crate) async fn read_request(sock: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[head_end..head_end + len].to_vec()))
}

/// A whole answer that closes its connection: status line, `Content-Type`, `Content-Length`,
/// the `extra` header lines (each ending in CRLF), and the body.
pub(crate) fn closing_answer(status: &str, kind: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
        body.len()
    )
}

/// The head of a 200 event stream that the server ends by closing the connection; the events
/// follow it.
pub(crate) const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// Keeps the connection open, sending nothing more, until the client closes it.
pub(crate) async fn hold_open(mut sock: TcpStream) {
    let mut sink = [0u8; 1024];
    while matches!(sock.read(&mut sink).await, Ok(n) if n > 0) {}
}
