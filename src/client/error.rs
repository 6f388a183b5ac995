//! [`ClientError`]: why a [`Client`](super::Client) call failed, in kinds a host can match on.

use std::fmt;

use super::Decoded;
use super::input::InputError;
use super::negotiate::NegotiateError;
use crate::error::ErrorCode;
use crate::mcp::negotiation::DISCOVER;
use crate::mcp::types::CallToolResult;
use crate::peer::{CloseReason, RequestError, RpcError, TransportError, status_text};

/// Which step of the client's work failed: connecting (each of its steps) or a call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// Starting the transport: spawning the child, opening the socket.
    Start,
    /// The era probe (`server/discover`), or asking a server of a cached era what it is.
    Probe,
    /// The legacy handshake: `initialize` and `notifications/initialized`, on connecting or
    /// when a lost session is renewed.
    Initialize,
    /// A call made once connected (the handshake's `logging/setLevel` included): its method.
    Call(String),
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Start => f.write_str("starting the transport"),
            Self::Probe => write!(f, "{DISCOVER} (the era probe)"),
            Self::Initialize => f.write_str("initialize"),
            Self::Call(method) => f.write_str(method),
        }
    }
}

impl Stage {
    /// The stage of a request for `method` made while connecting.
    pub(crate) fn of(method: &str) -> Self {
        match method {
            DISCOVER => Self::Probe,
            "initialize" => Self::Initialize,
            m => Self::Call(m.to_owned()),
        }
    }
}

/// Why a [`Client`](super::Client) call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The connection ended (the socket closed, this side closed it); a child server that
    /// exited says how in [`CloseReason::Exited`] (its status, the end of its stderr).
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
    /// shape, an `input_required` past the bounds, an input request no callback fulfils), or
    /// the caller's is not (tool or prompt arguments that are not a JSON object: nothing was
    /// sent).
    #[error("{method}: {reason}")]
    Invalid {
        /// The method called.
        method: String,
        /// What was wrong.
        reason: String,
    },
    /// A skill's content or entry failed verification (skills extension): the content was
    /// not used.
    #[error("skill refused: {0}")]
    Skill(crate::mcp::skills::VerifyError),
    /// The connection could not be set up (a command that does not start, a bad address).
    #[error("cannot connect: {0}")]
    Connect(#[from] std::io::Error),
    /// Connecting took longer than [`ClientBuilder::connect_timeout`](super::ClientBuilder::connect_timeout);
    /// `stage` is the step that was waiting.
    #[error("{stage}: no answer within the connect timeout")]
    ConnectTimeout {
        /// The step that was waiting.
        stage: Stage,
    },
    /// The server could not be reached (refused, unreachable, a name not found): nothing was
    /// answered.
    #[error("{stage}: cannot reach the server: {cause}")]
    Unreachable {
        /// The step that failed.
        stage: Stage,
        /// Why, with the chain of causes.
        cause: String,
    },
    /// The TLS handshake failed or the server's certificate was refused.
    #[error("{stage}: TLS failed: {cause}")]
    Tls {
        /// The step that failed.
        stage: Stage,
        /// Why, with the chain of causes.
        cause: String,
    },
    /// The server answered with an HTTP error status and no JSON-RPC answer.
    #[error("{stage}: the server answered {}", status_text(*.status, .www_authenticate.as_deref(), .body))]
    Http {
        /// The step that failed.
        stage: Stage,
        /// The HTTP status code.
        status: u16,
        /// The `WWW-Authenticate` header's value, when the answer had one (a 401 without
        /// OAuth on the client, or one authorizing did not meet).
        www_authenticate: Option<String>,
        /// The first bytes of the body (at most 512), or the JSON-RPC error message it held.
        body: String,
    },
    /// The server ended the legacy session (a 404 to the session id) and a new one could not
    /// be opened, or the request sent again in the new session failed the same way. A
    /// renewal that worked is not an error: see [`Client::session_renewals`](super::Client::session_renewals).
    #[error("{stage}: the session was lost: {cause}")]
    SessionLost {
        /// The step that failed.
        stage: Stage,
        /// What the server answered.
        cause: String,
    },
    /// The transport broke during the exchange (a connection dropped mid-answer, an event
    /// stream that ended before the response, an answer that is not JSON-RPC).
    #[error("{stage}: {cause}")]
    Transport {
        /// The step that failed.
        stage: Stage,
        /// What happened.
        cause: String,
    },
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
            RequestError::Transport(t) => Self::transport(Stage::Call(method.to_owned()), t),
            RequestError::Encode(reason) => Self::invalid(method, format!("params: {reason}")),
        }
    }

    /// A request made while connecting (`stage`) failed.
    pub(crate) fn connecting(method: &str, e: RequestError) -> Self {
        match e {
            RequestError::Closed(reason) => Self::Closed(reason),
            RequestError::Transport(t) => Self::transport(Stage::of(method), t),
            e => Self::request(method, e),
        }
    }

    /// The transport's failure, at `stage`.
    pub(crate) fn transport(stage: Stage, e: TransportError) -> Self {
        match e {
            TransportError::Connect(cause) => Self::Unreachable { stage, cause },
            TransportError::Tls(cause) => Self::Tls { stage, cause },
            TransportError::Status { status, www_authenticate, body } => {
                Self::Http { stage, status, www_authenticate, body }
            }
            TransportError::SessionLost(cause) => Self::SessionLost { stage, cause },
            e => Self::Transport { stage, cause: e.to_string() },
        }
    }

    /// The step that failed, for the kinds that name one.
    #[must_use]
    pub fn stage(&self) -> Option<&Stage> {
        match self {
            Self::ConnectTimeout { stage }
            | Self::Unreachable { stage, .. }
            | Self::Tls { stage, .. }
            | Self::Http { stage, .. }
            | Self::SessionLost { stage, .. }
            | Self::Transport { stage, .. } => Some(stage),
            _ => None,
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
            NegotiateError::Request { method, source } => Self::connecting(method, source),
            e @ (NegotiateError::NoMutualVersion { .. }
            | NegotiateError::NotModern(_)
            | NegotiateError::Handshake(_)) => Self::Era(e.to_string()),
        }
    }

    pub(crate) fn invalid(method: &str, reason: impl fmt::Display) -> Self {
        Self::Invalid { method: method.to_owned(), reason: reason.to_string() }
    }
}
