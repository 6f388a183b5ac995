//! Error codes, per-message decode errors and the fatal stream error.
//!
//! Two layers, kept apart on purpose: a [`DecodeError`] describes one bad message and never ends
//! the stream (the peer is answered with its [`ErrorCode`] and reading goes on); an [`enum@Error`]
//! means the stream itself is unusable.

use std::fmt;

/// A JSON-RPC 2.0 error code, as carried in an error response's `error.code`.
///
/// The constants are the codes the JSON-RPC 2.0 specification reserves and the one MCP adds.
///
/// # Examples
///
/// ```
/// use mcpwire::ErrorCode;
///
/// assert_eq!(ErrorCode::PARSE_ERROR.get(), -32700);
/// assert_eq!(ErrorCode::METHOD_NOT_FOUND.message(), "Method not found");
/// assert!(ErrorCode(-32050).is_server_error());
/// assert_eq!(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.get(), -32022);
/// assert_eq!(ErrorCode::HEADER_MISMATCH.message(), "Header mismatch");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// -32700: the bytes received are not valid JSON in UTF-8.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// -32600: valid JSON, but not a valid JSON-RPC message.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// -32601: the method does not exist or is not available.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// -32602: invalid method parameters.
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// -32603: internal JSON-RPC error.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// -32002: MCP's "resource not found" in the legacy era (2024-11-05 to 2025-11-25); the
    /// modern era (2026-07-28) answers an unknown resource with [`ErrorCode::INVALID_PARAMS`].
    pub const RESOURCE_NOT_FOUND: Self = Self(-32002);
    /// -32003 (mcpwire's, in the server range): the caller's access token lacks a scope the
    /// tool, prompt or resource asked for needs; `data.scope` names the scopes to ask for. A
    /// guarded `HttpServer` answers it 403 with an `insufficient_scope` challenge.
    pub const INSUFFICIENT_SCOPE: Self = Self(-32003);
    /// -32020 (MCP 2026-07-28): an HTTP header that mirrors the body (`MCP-Protocol-Version`,
    /// `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) does not match it.
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// -32021 (MCP 2026-07-28): the request needs a client capability the client did not
    /// declare; `data.requiredCapabilities` names it.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: Self = Self(-32021);
    /// -32022 (MCP 2026-07-28): the request's protocol version is not served; `data.supported`
    /// lists the versions that are, `data.requested` echoes the one asked for.
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);
    /// -32000: a server error with no more specific code. The Streamable HTTP server answers
    /// with it, in a body beside the HTTP status, what it refuses before any handler runs (a
    /// wrong `Accept`, a missing session id, a second GET stream, a full server).
    pub const SERVER_ERROR: Self = Self(-32000);
    /// -32001: the Streamable HTTP session named is unknown or ended (HTTP 404), as the MCP
    /// SDKs answer it; the client starts a new session with `initialize`.
    pub const SESSION_NOT_FOUND: Self = Self(-32001);

    /// The numeric code.
    #[must_use]
    pub const fn get(self) -> i64 {
        self.0
    }

    /// Whether the code lies in -32099..=-32000, the range JSON-RPC reserves for
    /// implementation-defined server errors.
    #[must_use]
    pub const fn is_server_error(self) -> bool {
        self.0 >= -32099 && self.0 <= -32000
    }

    /// The short message the specification gives for the code, or "Server error" for the server
    /// range and "Unknown error" otherwise.
    #[must_use]
    pub const fn message(self) -> &'static str {
        match self.0 {
            -32700 => "Parse error",
            -32600 => "Invalid Request",
            -32601 => "Method not found",
            -32602 => "Invalid params",
            -32603 => "Internal error",
            -32002 => "Resource not found",
            -32001 => "Session not found",
            -32003 => "Insufficient scope",
            -32020 => "Header mismatch",
            -32021 => "Missing required client capability",
            -32022 => "Unsupported protocol version",
            -32099..=-32000 => "Server error",
            _ => "Unknown error",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.0, self.message())
    }
}

/// A top-level member of a JSON-RPC message, named in [`DecodeError::DuplicateMember`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Member {
    /// `jsonrpc`
    Jsonrpc,
    /// `id`
    Id,
    /// `method`
    Method,
    /// `params`
    Params,
    /// `result`
    Result,
    /// `error`
    Error,
    /// `error.code`
    ErrorCode,
    /// `error.message`
    ErrorMessage,
    /// `error.data`
    ErrorData,
}

impl Member {
    /// The member's name as it appears on the wire.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Jsonrpc => "jsonrpc",
            Self::Id => "id",
            Self::Method => "method",
            Self::Params => "params",
            Self::Result => "result",
            Self::Error => "error",
            Self::ErrorCode => "error.code",
            Self::ErrorMessage => "error.message",
            Self::ErrorData => "error.data",
        }
    }
}

/// What is wrong with one received message.
///
/// Each variant names the peer's misbehaviour; [`DecodeError::code`] maps it to the JSON-RPC code
/// to answer with, in this one place. The `Display` text is the human reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The frame (an NDJSON line, a Content-Length body, an SSE event's data) was longer than
    /// [`Limits::max_frame_bytes`](crate::Limits::max_frame_bytes); its
    /// bytes were discarded up to the next newline.
    FrameTooLarge {
        /// The bound in effect.
        limit: usize,
    },
    /// The frame is not valid UTF-8.
    InvalidUtf8,
    /// The frame is not valid JSON.
    Syntax {
        /// Byte offset in the frame near which the parser gave up.
        offset: usize,
        /// What the parser expected or found.
        detail: &'static str,
    },
    /// A complete JSON value is followed by more non-whitespace bytes on the same line.
    TrailingBytes,
    /// Arrays and objects nest deeper than [`Limits::max_depth`](crate::Limits::max_depth).
    TooDeep {
        /// The bound in effect.
        limit: usize,
    },
    /// The message (or a batch element) is not a JSON object.
    NotAnObject,
    /// `[]`: a batch must hold at least one message.
    EmptyBatch,
    /// The batch has more elements than [`Limits::max_batch_len`](crate::Limits::max_batch_len).
    BatchTooLong {
        /// Elements in the batch.
        len: usize,
        /// The bound in effect.
        limit: usize,
    },
    /// A batch arrived while batches are turned off.
    BatchesRefused,
    /// A member the message shape does not have (only `jsonrpc`, `id`, `method`, `params`,
    /// `result` and `error` are allowed).
    UnknownMember,
    /// The same member appears twice: parsers disagree on which copy wins, so it is refused.
    DuplicateMember(Member),
    /// `jsonrpc` is absent.
    MissingVersion,
    /// `jsonrpc` is not exactly the string `"2.0"`.
    WrongVersion,
    /// `method` is not a string.
    MethodNotString,
    /// `params` is neither an object nor an array.
    ParamsNotStructured,
    /// `id` is not a string or an integer that fits in i64.
    InvalidId,
    /// `id` is `null` in a message other than an error response.
    NullId,
    /// A request or notification also carries `result` or `error`.
    MethodWithOutcome,
    /// A response carries both `result` and `error`.
    ResultAndError,
    /// A response (`result` or `error`, no `method`) carries `params`.
    ParamsOnResponse,
    /// A message with `id` but neither `method`, `result` nor `error`; or no members that make
    /// it a message at all.
    NoMethodOrOutcome,
    /// A response carries `result` or `error` but no `id`.
    ResponseWithoutId,
    /// `error` is not an object.
    ErrorNotObject,
    /// `error.code` is absent or not an integer.
    ErrorCodeNotInteger,
    /// `error.message` is absent or not a string.
    ErrorMessageNotString,
    /// A Content-Length header block longer than
    /// [`MAX_HEADER_BYTES`](crate::limits::MAX_HEADER_BYTES); its bytes were
    /// discarded and the stream resynchronised at the next `Content-Length` header.
    HeaderTooLarge {
        /// The bound in effect.
        limit: usize,
    },
    /// A header line that is not `name: value` (no colon, a name with a space or another
    /// character HTTP does not allow in a token, or a bare carriage return).
    MalformedHeader,
    /// A header block ended (at its empty line) without a `Content-Length` header.
    MissingContentLength,
    /// A `Content-Length` value that is not 1 to 10 decimal digits.
    InvalidContentLength,
    /// A second `Content-Length` header in one block: which one delimits the body is ambiguous.
    DuplicateContentLength,
    /// The input ended inside a header block or a body.
    Truncated,
}

impl DecodeError {
    /// The JSON-RPC code to answer this message with.
    ///
    /// -32700 for bytes from which no JSON text could be read: not UTF-8, not JSON, and a
    /// Content-Length header block that does not delimit a body (the body was never read as
    /// JSON, and a -32700 reply always carries `"id": null`). -32600 for JSON that is not a valid
    /// message, and for anything refused by a limit before it was read (a frame or a header block
    /// too large), which may well have been valid.
    #[must_use]
    pub const fn code(&self) -> ErrorCode {
        match self {
            Self::InvalidUtf8
            | Self::Syntax { .. }
            | Self::TrailingBytes
            | Self::TooDeep { .. }
            | Self::MalformedHeader
            | Self::MissingContentLength
            | Self::InvalidContentLength
            | Self::DuplicateContentLength
            | Self::Truncated => ErrorCode::PARSE_ERROR,
            Self::FrameTooLarge { .. }
            | Self::HeaderTooLarge { .. }
            | Self::NotAnObject
            | Self::EmptyBatch
            | Self::BatchTooLong { .. }
            | Self::BatchesRefused
            | Self::UnknownMember
            | Self::DuplicateMember(_)
            | Self::MissingVersion
            | Self::WrongVersion
            | Self::MethodNotString
            | Self::ParamsNotStructured
            | Self::InvalidId
            | Self::NullId
            | Self::MethodWithOutcome
            | Self::ResultAndError
            | Self::ParamsOnResponse
            | Self::NoMethodOrOutcome
            | Self::ResponseWithoutId
            | Self::ErrorNotObject
            | Self::ErrorCodeNotInteger
            | Self::ErrorMessageNotString => ErrorCode::INVALID_REQUEST,
        }
    }

    #[cold]
    pub(crate) fn from_simd(err: &simd_json::Error, limit_depth: usize) -> Self {
        use simd_json::ErrorType as E;
        let offset = err.index();
        let detail = match err.error() {
            E::InvalidUtf8 => return Self::InvalidUtf8,
            E::DepthLimitExceeded => return Self::TooDeep { limit: limit_depth },
            E::TrailingData => return Self::TrailingBytes,
            E::InvalidEscape => "invalid escape sequence",
            E::InvalidUnicodeEscape => "invalid \\u escape",
            E::InvalidUnicodeCodepoint => "invalid or unpaired UTF-16 surrogate escape",
            E::InvalidNumber | E::InvalidExponent => "invalid or out-of-range number",
            E::UnterminatedString => "unterminated string",
            E::Eof => "unexpected end of input",
            E::ExpectedObjectColon => "expected ':' after an object key",
            E::ExpectedMapComma | E::ExpectedMapEnd => "expected ',' or '}' in an object",
            E::ExpectedArrayComma => "expected ',' or ']' in an array",
            E::ExpectedObjectKey | E::KeyMustBeAString | E::BadKeyType => {
                "expected a string key in an object"
            }
            E::ExpectedObjectContent | E::ExpectedArrayContent => "expected a value",
            E::ExpectedTrue | E::ExpectedFalse | E::ExpectedNull => "invalid literal",
            E::InternalError | E::Syntax => "unexpected character",
            _ => "not valid JSON",
        };
        Self::Syntax { offset, detail }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FrameTooLarge { limit } => {
                write!(f, "frame too large: longer than the {limit}-byte limit")
            }
            Self::InvalidUtf8 => f.write_str("frame is not valid UTF-8"),
            Self::Syntax { offset, detail } => {
                write!(f, "invalid JSON near byte {offset}: {detail}")
            }
            Self::TrailingBytes => f.write_str("trailing bytes after the JSON value"),
            Self::TooDeep { limit } => write!(f, "nesting deeper than the limit of {limit}"),
            Self::NotAnObject => f.write_str("message is not a JSON object"),
            Self::EmptyBatch => f.write_str("empty batch"),
            Self::BatchTooLong { len, limit } => {
                write!(f, "batch of {len} elements exceeds the limit of {limit}")
            }
            Self::BatchesRefused => f.write_str("batches are not accepted"),
            Self::UnknownMember => f.write_str("unknown top-level member"),
            Self::DuplicateMember(m) => write!(f, "member `{}` given twice", m.name()),
            Self::MissingVersion => f.write_str("`jsonrpc` member missing"),
            Self::WrongVersion => f.write_str("`jsonrpc` is not \"2.0\""),
            Self::MethodNotString => f.write_str("`method` is not a string"),
            Self::ParamsNotStructured => f.write_str("`params` is not an object or array"),
            Self::InvalidId => f.write_str("`id` is not a string or an integer within i64"),
            Self::NullId => f.write_str("`id` is null outside an error response"),
            Self::MethodWithOutcome => {
                f.write_str("request or notification carries `result` or `error`")
            }
            Self::ResultAndError => f.write_str("response carries both `result` and `error`"),
            Self::ParamsOnResponse => f.write_str("response carries `params`"),
            Self::NoMethodOrOutcome => f.write_str("message has no `method`, `result` or `error`"),
            Self::ResponseWithoutId => f.write_str("response has no `id`"),
            Self::ErrorNotObject => f.write_str("`error` is not an object"),
            Self::ErrorCodeNotInteger => f.write_str("`error.code` missing or not an integer"),
            Self::ErrorMessageNotString => f.write_str("`error.message` missing or not a string"),
            Self::HeaderTooLarge { limit } => {
                write!(f, "header block longer than the {limit}-byte limit")
            }
            Self::MalformedHeader => f.write_str("header line is not `name: value`"),
            Self::MissingContentLength => f.write_str("header block has no Content-Length"),
            Self::InvalidContentLength => {
                f.write_str("Content-Length is not 1 to 10 decimal digits")
            }
            Self::DuplicateContentLength => f.write_str("Content-Length given twice"),
            Self::Truncated => f.write_str("input ended inside a message"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A failure that makes the stream unusable, or a message that cannot be encoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing the transport failed.
    #[error("transport I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// A typed payload could not be serialised; nothing was written.
    #[error("payload could not be serialised: {0}")]
    Serialize(#[source] serde_json::Error),
    /// A request was given `Id::Null`, which a peer refuses; nothing was written.
    #[error("a request's id may not be null")]
    NullRequestId,
    /// A Server-Sent Event id holding a CR, an LF or a NUL; nothing was written.
    #[error("an SSE event id may not hold CR, LF or NUL")]
    InvalidSseId,
}

/// A typed view of `params` or `result` failed to deserialise.
#[derive(Debug, thiserror::Error)]
#[error("payload does not match the expected type: {0}")]
pub struct PayloadError(#[from] serde_json::Error);

/// `e` and its sources, `: `-separated (hyper's errors say little without their sources:
/// "client error (Connect)").
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out
}
