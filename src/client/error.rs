//! [`ClientError`]: why a [`Client`](super::Client) call failed, in kinds a host can match on.

use std::fmt;

use super::Decoded;
use super::input::InputError;
use super::negotiate::NegotiateError;
use crate::ErrorCode;
use crate::mcp::types::CallToolResult;
use crate::peer::{CloseReason, RequestError, RpcError};

/// Why a [`Client`](super::Client) call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The connection could not be made, or ended (the server exited, the socket closed).
    #[error("the connection is closed: {0}")]
    Closed(CloseReason),
    /// No answer came within the call's timeout; `notifications/cancelled` was sent.
    #[error("no answer within the timeout")]
    Timeout,
    /// The call's cancellation token fired; `notifications/cancelled` was sent.
    #[error("the call was cancelled")]
    Cancelled,
    /// The server answered with a JSON-RPC error.
    #[error("{method}: the server answered {code}: {message}")]
    Protocol {
        /// The method called.
        method: String,
        /// The error's code.
        code: ErrorCode,
        /// Its message.
        message: String,
        /// Its `data`, as JSON text.
        data: Option<String>,
    },
    /// The tool ran and failed: its result says `isError: true`. The result is kept whole
    /// (its content is what a model is meant to read).
    #[error("the tool failed: {}", tool_text(.0))]
    Tool(Box<Decoded<CallToolResult<'static>>>),
    /// The server and this client speak no era or version in common, or the server is not of
    /// the era asked for.
    #[error("{0}")]
    Era(String),
    /// The server's answer is not what the protocol says it should be (a result of the wrong
    /// shape, an `input_required` past the bounds, an input request no callback fulfils).
    #[error("{method}: {reason}")]
    Invalid {
        /// The method called.
        method: String,
        /// What was wrong.
        reason: String,
    },
    /// The connection could not be set up (a command that does not start, a bad address).
    #[error("cannot connect: {0}")]
    Connect(#[from] std::io::Error),
}

fn tool_text(r: &Decoded<CallToolResult<'static>>) -> String {
    let texts: Vec<&str> = r.get().content.iter().filter_map(|c| c.as_text()).collect();
    if texts.is_empty() { "(no text)".into() } else { texts.join(" ") }
}

impl ClientError {
    /// The JSON-RPC error code, for a protocol error.
    #[must_use]
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Protocol { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub(crate) fn request(method: &str, e: RequestError) -> Self {
        match e {
            RequestError::Rpc(e) => Self::rpc(method, &e),
            RequestError::Timeout => Self::Timeout,
            RequestError::Closed(reason) => Self::Closed(reason),
            RequestError::Encode(reason) => Self::invalid(method, format!("params: {reason}")),
        }
    }

    pub(crate) fn rpc(method: &str, e: &RpcError) -> Self {
        Self::Protocol {
            method: method.to_owned(),
            code: e.code,
            message: e.message.to_string(),
            data: e.data().map(|d| d.get().to_owned()),
        }
    }

    pub(crate) fn input(method: &str, e: InputError) -> Self {
        match e {
            InputError::Request(e) => Self::request(method, e),
            e => Self::invalid(method, e.to_string()),
        }
    }

    pub(crate) fn negotiate(e: NegotiateError) -> Self {
        match e {
            NegotiateError::Request { method, source } => match source {
                RequestError::Closed(reason) => Self::Closed(reason),
                source => Self::request(method, source),
            },
            e @ (NegotiateError::NoMutualVersion { .. }
            | NegotiateError::NotModern(_)
            | NegotiateError::Handshake(_)) => Self::Era(e.to_string()),
        }
    }

    pub(crate) fn invalid(method: &str, reason: impl fmt::Display) -> Self {
        Self::Invalid { method: method.to_owned(), reason: reason.to_string() }
    }
}
