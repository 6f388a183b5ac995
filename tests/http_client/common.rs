//! What both kinds of server's tests share: bounds, the handshake, and error checks.

pub(crate) use std::future::Future;
pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};
pub(crate) use std::sync::{Arc, Mutex};
pub(crate) use std::time::Duration;

pub(crate) use mcpwire::http::{HttpClient, HttpServer, connect};
pub(crate) use mcpwire::peer::{
    CloseReason, Connection, Context, Handler, Incoming, NO_PARAMS, NoHandler, PeerBuilder,
    PeerHandle, Reply, RequestError, RequestOptions, RpcError,
};
pub(crate) use mcpwire::{ErrorCode, Json, RawJson};
pub(crate) use serde_json::{Value, json};
pub(crate) use tokio::io::{AsyncReadExt, AsyncWriteExt};
pub(crate) use tokio::net::{TcpListener, TcpStream};
pub(crate) use tokio::task::JoinHandle;

/// Bound for one exchange on the loopback (a loaded 2-core machine included).
pub(crate) const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);

/// Bound for a state that follows an exchange (a DELETE, a notification handler) to show.
pub(crate) const SETTLE_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) const INIT_PARAMS: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"http-client-test","version":"1"}}"#;
pub(crate) const INIT_RESULT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"http-client-test","version":"1"}}"#;

/// An application-defined error code, so the test sees the handler's code and not one the
/// transport made up.
pub(crate) const TOLD_TO_FAIL: ErrorCode = ErrorCode(-32042);

/// Awaits `f`, failing the test past [`EXCHANGE_TIMEOUT`].
pub(crate) async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(EXCHANGE_TIMEOUT, f).await.expect("no answer within the bound")
}

/// Polls `done` every 10 ms until it holds, failing the test past [`SETTLE_TIMEOUT`].
pub(crate) async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "not within {SETTLE_TIMEOUT:?}: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

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

/// The error a request failed with, which must be the client's own -32603 for a failed
/// exchange; its message must contain `says`.
pub(crate) fn transport_error(r: Result<Incoming, RequestError>, says: &str) -> RpcError {
    let e = rpc_error(r);
    assert_eq!(e.code, ErrorCode::INTERNAL_ERROR, "{e}");
    assert!(e.message.contains(says), "{e:?} does not say {says:?}");
    e
}
