//! MCP's vocabulary: its two eras, as the wire carries them, with no I/O. The roles that speak
//! it are [`crate::client`] and [`crate::server`], above the transports.
//!
//! The **legacy** era (2024-11-05 … 2025-11-25) opens a session with `initialize`; the
//! **modern** era (2026-07-28 on) is stateless: every request carries its protocol version and
//! the client's capabilities in `params._meta`, `server/discover` replaces the handshake, and
//! over HTTP the headers mirror the body and must match it. A dual-era server tells them apart
//! per request: one whose `_meta` names a protocol version is modern, `initialize` is legacy.
//!
//! - [`meta`]: borrowed, allocation-free views of what the modern era reads on every request
//!   (the `_meta` envelope, `params.name` / `params.uri`, a result's `resultType`), and the
//!   envelope's validation ([`meta::check_envelope`]), with the precise JSON-RPC error for each
//!   way it can be wrong.
//! - [`negotiation`]: the client's decisions: which era a server speaks and at which version
//!   (the answer to a `server/discover` probe, the fallback to `initialize`, the -32022
//!   retry), and the `_meta` a modern request carries, spliced into its params as they are
//!   written.
//! - [`input_rounds`]: multi round-trip requests on the client's side: an `InputRequiredResult`
//!   read, and the retry's params built with `inputResponses` and the `requestState` echoed.
//! - [`types`] (feature `mcp`): every MCP message as a borrowed serde type.
//! - [`skills`] (feature `mcp`): the skills extension's types, digests, front matter and the
//!   checks a host makes of what it reads.
//! - [`elicitation`]: a form's defaults applied to the content a client accepts with.
//! - [`headers`] (feature `http`): the Streamable HTTP header rules: validation of
//!   `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` against the body (for a
//!   server, or a gateway that routes on them), and the headers a client mirrors.

pub mod annotations;
pub mod elicitation;
pub(crate) mod envelope_spans;
#[cfg(feature = "http")]
pub mod headers;
pub mod input_rounds;
pub mod meta;
pub mod negotiation;
#[cfg(feature = "mcp")]
pub(crate) mod seal;
#[cfg(feature = "mcp")]
pub mod skills;
#[cfg(feature = "mcp")]
pub mod types;

/// The modern protocol versions this crate speaks, newest first.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// The legacy (handshake) protocol versions this crate speaks, oldest first.
pub const LEGACY_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The newest protocol version.
pub const LATEST_VERSION: &str = MODERN_VERSIONS[0];

/// The first modern protocol version: versions are dates, and any from this one on (including
/// ones not yet known) carry their version per request.
pub const FIRST_MODERN_VERSION: &str = "2026-07-28";

/// The `_meta` key of a request's protocol version.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of the client's capabilities.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of the client's name and version.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// The `_meta` key of the least severe log level the client wants for a request.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// The `_meta` key of the server's name and version, in a result.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// The `_meta` key that tags a notification with the subscription it belongs to.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// Which era a protocol version belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// `initialize` opens a session (2024-11-05 … 2025-11-25).
    Legacy,
    /// Every request carries its version (2026-07-28 on).
    Modern,
}

impl Era {
    /// The era of protocol version `v`: modern for a `YYYY-MM-DD` date from
    /// [`FIRST_MODERN_VERSION`] on (such dates order as text), legacy for anything else.
    ///
    /// ```
    /// use mcpwire::mcp::Era;
    ///
    /// assert_eq!(Era::of("2025-11-25"), Era::Legacy);
    /// assert_eq!(Era::of("2026-07-28"), Era::Modern);
    /// assert_eq!(Era::of("2027-01-01"), Era::Modern);
    /// assert_eq!(Era::of("latest"), Era::Legacy);
    /// ```
    #[must_use]
    pub fn of(v: &str) -> Self {
        let b = v.as_bytes();
        let date = b.len() == 10
            && b.iter()
                .enumerate()
                .all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() });
        if date && v >= FIRST_MODERN_VERSION { Self::Modern } else { Self::Legacy }
    }
}

/// The `params` member that `Mcp-Name` mirrors for `method`: `name` for `tools/call` and
/// `prompts/get`, `uri` for `resources/read`, `taskId` for the tasks extension's `tasks/get`,
/// `tasks/update` and `tasks/cancel`.
#[must_use]
pub fn name_member(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The tasks extension (SEP-2663): the task a request names.
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// Whether results of `method` must carry the caching hints `ttlMs` and `cacheScope`
/// (2026-07-28).
#[must_use]
pub fn is_cacheable(method: &str) -> bool {
    matches!(
        method,
        "server/discover"
            | "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    )
}

/// Methods of the legacy era that the modern one removed: under a modern envelope they are
/// answered -32601 (HTTP 404).
#[must_use]
pub fn is_legacy_only(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "logging/setLevel"
            | "resources/subscribe"
            | "resources/unsubscribe"
    )
}

/// The HTTP status a modern Streamable HTTP server answers a JSON-RPC error code with: 400 for
/// the codes that say the request was wrong (-32700, -32600, -32602, -32020, -32021, -32022),
/// 404 for -32601, and 200 for any other (a handler's own error is still an answer).
#[must_use]
pub fn http_status(code: crate::error::ErrorCode) -> u16 {
    use crate::error::ErrorCode as C;
    match code {
        C::PARSE_ERROR
        | C::INVALID_REQUEST
        | C::INVALID_PARAMS
        | C::HEADER_MISMATCH
        | C::MISSING_REQUIRED_CLIENT_CAPABILITY
        | C::UNSUPPORTED_PROTOCOL_VERSION => 400,
        C::METHOD_NOT_FOUND => 404,
        _ => 200,
    }
}
