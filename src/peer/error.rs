//! Why a request failed and why a connection ended.

use std::fmt;

use super::incoming::RpcError;

/// Why a request failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The other side answered with an error.
    #[error("the peer answered with an error: {0}")]
    Rpc(RpcError),
    /// No response came within the timeout; `notifications/cancelled` was sent.
    #[error("no response within the timeout")]
    Timeout,
    /// The connection ended before the response came.
    #[error("connection closed: {0}")]
    Closed(CloseReason),
    /// The params could not be serialised; nothing was sent.
    #[error("params could not be serialised: {0}")]
    Encode(String),
    /// The transport failed to carry the request or its answer (a transport that exchanges
    /// each message on its own, as Streamable HTTP does): the peer did not answer, and the
    /// connection goes on.
    #[error("{0}")]
    Transport(TransportError),
}

/// Why a transport could not carry one request or its answer: what failed, and its cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// No connection could be made to the server (refused, unreachable, a name not found).
    #[error("cannot connect to the server: {0}")]
    Connect(String),
    /// The TLS handshake failed, or the server's certificate was not accepted.
    #[error("TLS failed: {0}")]
    Tls(String),
    /// The server answered with an HTTP status and no JSON-RPC answer to the request.
    #[error("the server answered {}", status_text(*.status, .www_authenticate.as_deref(), .body))]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The `WWW-Authenticate` header's value, when the answer had one.
        www_authenticate: Option<String>,
        /// The first bytes of the answer's body (at most 512, invalid UTF-8 replaced), or
        /// what the client makes of it.
        body: String,
    },
    /// The server no longer knows the session the request named (a 404 to it, or a 400 to a
    /// request sent after that): the request was not run.
    #[error("the server ended the session: {0}")]
    SessionLost(String),
    /// The exchange broke or made no sense (the connection dropped mid-answer, an event stream
    /// that ended before the response, an answer that is not JSON-RPC).
    #[error("{0}")]
    Broken(String),
}

impl TransportError {
    /// Whether the server refused for want of authorization (HTTP 401 or 403).
    #[must_use]
    pub fn is_authorization(&self) -> bool {
        matches!(self, Self::Status { status: 401 | 403, .. })
    }
}

/// An HTTP error as told: the status, the server's challenge, the body, and for a 401 or 403
/// what would answer it.
pub(crate) fn status_text(status: u16, www_authenticate: Option<&str>, body: &str) -> String {
    let challenge =
        www_authenticate.map(|c| format!(" (WWW-Authenticate: {c})")).unwrap_or_default();
    let body = if body.is_empty() { String::new() } else { format!(": {body}") };
    let hint = match status {
        401 => {
            "; the server asks for authorization: give the client OAuth (ClientBuilder::oauth, \
             mcpwire load --oauth) or a token (an Authorization header)"
        }
        403 => "; the authorization sent is not enough for this request",
        _ => "",
    };
    format!("HTTP {status}{challenge}{body}{hint}")
}
/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The other side closed its end (end of stream).
    Eof,
    /// This side closed it ([`PeerHandle::close`](super::PeerHandle::close), or the
    /// [`ConnectionTask`](super::ConnectionTask) was dropped).
    Local,
    /// Reading or writing failed.
    Io(String),
    /// The child process at the other end exited (its stdout ended, or writing to it failed,
    /// and it was gone).
    Exited(ChildExit),
}

/// How a child process ended: its status, and the last of what it wrote to stderr.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the server process exited ({status}){}",
    if stderr.is_empty() { String::new() } else { format!("; its stderr ended with: {stderr}") }
)]
#[non_exhaustive]
pub struct ChildExit {
    /// The status as the system tells it (`exit status: 3`, `signal: 9 (SIGKILL)`).
    pub status: String,
    /// The exit code, when it exited on its own.
    pub code: Option<i32>,
    /// The signal that ended it, on unix.
    pub signal: Option<i32>,
    /// The end of its stderr (at most `ConnectOptions::stderr_tail` bytes, invalid UTF-8
    /// replaced); empty when it wrote none or its stderr was not piped (inherited, discarded).
    pub stderr: String,
}

impl ChildExit {
    /// From a child's exit status and the end of its stderr.
    #[must_use]
    pub fn new(status: std::process::ExitStatus, stderr: String) -> Self {
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal = None;
        Self { status: status.to_string(), code: status.code(), signal, stderr }
    }
}

impl CloseReason {
    /// Why an I/O error ended a connection: the child's exit when the transport told it.
    pub(crate) fn of_io(e: &std::io::Error) -> Self {
        match e.get_ref().and_then(|inner| inner.downcast_ref::<ChildExit>()) {
            Some(exit) => Self::Exited(exit.clone()),
            None => Self::Io(e.to_string()),
        }
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Eof => f.write_str("the other side closed the stream"),
            Self::Local => f.write_str("closed by this side"),
            Self::Io(e) => write!(f, "transport failed: {e}"),
            Self::Exited(exit) => exit.fmt(f),
        }
    }
}
