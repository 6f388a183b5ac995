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
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The other side closed its end (end of stream).
    Eof,
    /// This side closed it ([`PeerHandle::close`](super::PeerHandle::close), or the
    /// [`Connection`](super::Connection) was dropped).
    Local,
    /// Reading or writing failed.
    Io(String),
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Eof => f.write_str("the other side closed the stream"),
            Self::Local => f.write_str("closed by this side"),
            Self::Io(e) => write!(f, "transport failed: {e}"),
        }
    }
}
