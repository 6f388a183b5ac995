//! The client side of the two eras: which one a server speaks, at which version, and the
//! `_meta` every modern request carries.
//!
//! The decisions are pure functions over answers ([`decide`], [`retry_version`]), so they can be
//! tested, and used by a client on any I/O, without a connection. [`negotiate`] (feature
//! `peer`) runs them over a [`PeerHandle`](crate::peer::PeerHandle):
//!
//! - a fixed modern version is probed with `server/discover` too (so a legacy server fails at
//!   once rather than serving modern requests by its own rules), with no fallback; a fixed
//!   legacy version opens the session with `initialize` and `notifications/initialized`;
//! - `auto` probes with `server/discover` carrying the newest modern version in `_meta`
//!   (on every transport: over Streamable HTTP the probe is the "modern request first" the
//!   specification asks for, and the transport hands a 4xx's JSON-RPC error body to the peer
//!   as the probe's error). A `DiscoverResult` or a recognized modern error (-32022 naming the
//!   supported versions, -32020, -32021) means modern; any other error, or no answer within
//!   [`ClientOptions::probe_timeout`], means legacy, and the session opens with `initialize`.
//!
//! The era found is cached per target for the life of the process (see [`negotiate`]): later
//! connections to the same target skip the probe.
//!
//! ```no_run
//! # #[cfg(feature = "http")]
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use mcpwire::mcp::client::{ClientOptions, negotiate};
//! use mcpwire::peer::{NoHandler, PeerBuilder, RequestOptions};
//! use mcpwire::Json;
//!
//! let url = "http://127.0.0.1:3001/mcp";
//! let (peer, _conn) = mcpwire::http::connect(&PeerBuilder::new(), url, NoHandler)?;
//! let agreed = negotiate(&peer, &ClientOptions::new("my-client", "1.0"), Some(url)).await?;
//! println!("{:?} at {}", agreed.era(), agreed.version());
//! // Carries `_meta` (and over HTTP the mirrored headers) when the server is modern.
//! let call = serde_json::json!({"name": "echo", "arguments": {"message": "hi"}});
//! let options = RequestOptions::new();
//! let _result = agreed.request(&peer, "tools/call", Some(Json(&call)), options).await?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! ```
//! use mcpwire::RawJson;
//! use mcpwire::mcp::client::{Answer, Decision, decide};
//!
//! let discovered = RawJson::new(r#"{"supportedVersions":["2026-07-28"],"capabilities":{}}"#);
//! let d = decide(Answer::Result(discovered), &["2026-07-28"], &["2025-11-25"], "2026-07-28");
//! assert_eq!(d, Decision::Modern { version: "2026-07-28".into() });
//!
//! let legacy = Answer::Error { code: mcpwire::ErrorCode::METHOD_NOT_FOUND, data: None };
//! assert!(matches!(decide(legacy, &["2026-07-28"], &["2025-11-25"], "2026-07-28"),
//!     Decision::Legacy { .. }));
//! ```

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use bytes::BytesMut;

use super::meta::{Rejection, member};
use super::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, Era, LEGACY_VERSIONS, MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
};
use crate::{ErrorCode, Payload, RawJson};

/// The method of the era probe.
pub const DISCOVER: &str = "server/discover";

/// How long [`negotiate`] waits for the answer to its probe before it takes the server for a
/// legacy one, by default.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Which protocol version a client speaks: `auto` (detect the server's era, prefer the newest
/// version both sides speak) or one version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum VersionChoice {
    /// Detect the era; prefer the newest mutual version.
    #[default]
    Auto,
    /// Speak this version only (one of [`MODERN_VERSIONS`] or [`LEGACY_VERSIONS`]).
    Fixed(String),
}

impl VersionChoice {
    /// The modern versions offered, newest first.
    #[must_use]
    pub fn modern(&self) -> Vec<&str> {
        match self {
            Self::Auto => MODERN_VERSIONS.to_vec(),
            Self::Fixed(v) if Era::of(v) == Era::Modern => vec![v.as_str()],
            Self::Fixed(_) => Vec::new(),
        }
    }

    /// The legacy versions offered, newest first.
    #[must_use]
    pub fn legacy(&self) -> Vec<&str> {
        match self {
            Self::Auto => LEGACY_VERSIONS.iter().rev().copied().collect(),
            Self::Fixed(v) if Era::of(v) == Era::Legacy => vec![v.as_str()],
            Self::Fixed(_) => Vec::new(),
        }
    }
}

impl FromStr for VersionChoice {
    type Err = String;

    /// `auto`, or a protocol version this crate speaks.
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(Self::Auto);
        }
        if MODERN_VERSIONS.contains(&s) || LEGACY_VERSIONS.contains(&s) {
            return Ok(Self::Fixed(s.to_owned()));
        }
        let known: Vec<&str> =
            MODERN_VERSIONS.iter().chain(LEGACY_VERSIONS.iter().rev()).copied().collect();
        Err(format!("`{s}`: expected auto or one of {}", known.join(", ")))
    }
}

impl fmt::Display for VersionChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Fixed(v) => f.write_str(v),
        }
    }
}

/// The `_meta` members a modern request carries: the protocol version, the client's
/// capabilities and its name and version, kept as JSON text once so each request only copies
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestMeta {
    version: Box<str>,
    /// `"…/protocolVersion":"…","…/clientCapabilities":{…}[,"…/clientInfo":{…}]`
    members: Box<str>,
}

impl RequestMeta {
    /// The members for `version`, `capabilities` (a JSON object) and `client_info` (a JSON
    /// object with `name` and `version`, which every request SHOULD carry).
    #[must_use]
    pub fn new(version: &str, capabilities: RawJson<'_>, client_info: Option<RawJson<'_>>) -> Self {
        let quoted = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        let mut members = format!(
            "{}:{},{}:{}",
            quoted(PROTOCOL_VERSION_KEY),
            quoted(version),
            quoted(CLIENT_CAPABILITIES_KEY),
            capabilities.get().trim()
        );
        if let Some(info) = client_info {
            members.push(',');
            members.push_str(&quoted(CLIENT_INFO_KEY));
            members.push(':');
            members.push_str(info.get().trim());
        }
        Self { version: version.into(), members: members.into() }
    }

    /// The same members at another version.
    #[must_use]
    pub fn at_version(&self, version: &str) -> Self {
        let quoted = serde_json::to_string(version).unwrap_or_else(|_| "\"\"".into());
        let key = serde_json::to_string(PROTOCOL_VERSION_KEY).unwrap_or_default();
        let old = format!("{key}:{}", serde_json::to_string(&*self.version).unwrap_or_default());
        let members = self.members.replacen(&old, &format!("{key}:{quoted}"), 1);
        Self { version: version.into(), members: members.into() }
    }

    /// The protocol version.
    #[must_use]
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The members as JSON text, without braces.
    #[must_use]
    pub fn members(&self) -> &str {
        &self.members
    }

    /// `params` with these members merged into their `_meta`, as a payload for
    /// [`PeerHandle::request`](crate::peer::PeerHandle::request) or [`crate::Outgoing`].
    #[must_use]
    pub fn params<P: Payload>(&self, params: Option<P>) -> WithMeta<'_, P> {
        WithMeta { meta: self, params }
    }
}

/// Params with a [`RequestMeta`] merged into `_meta` as they are written.
///
/// The caller's params are written as they are; when they name no `_meta` (the common case)
/// `"_meta":{…}` is spliced in after their opening brace, and nothing of theirs is parsed into
/// values or written again. When they do carry a `_meta` object, the three members are set in
/// it (replacing any of them already there) and its other members kept as written.
///
/// ```
/// use bytes::BytesMut;
/// use mcpwire::mcp::client::RequestMeta;
/// use mcpwire::{Payload, RawJson};
///
/// let meta = RequestMeta::new("2026-07-28", RawJson::new("{}"), None);
/// let mut out = BytesMut::new();
/// meta.params(Some(RawJson::new(r#"{"name":"echo"}"#))).write_json(&mut out).unwrap();
/// assert_eq!(
///     &out[..],
///     br#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo"}"#
/// );
/// ```
#[derive(Clone, Copy, Debug)]
pub struct WithMeta<'m, P> {
    meta: &'m RequestMeta,
    params: Option<P>,
}

impl<P: Payload> Payload for WithMeta<'_, P> {
    fn write_json(&self, dst: &mut BytesMut) -> Result<(), crate::Error> {
        let Some(params) = &self.params else {
            dst.extend_from_slice(b"{\"_meta\":{");
            dst.extend_from_slice(self.meta.members.as_bytes());
            dst.extend_from_slice(b"}}");
            return Ok(());
        };
        // `{"_meta":{…},` then the params, whose opening brace is then taken out.
        let start = dst.len();
        dst.extend_from_slice(b"{\"_meta\":{");
        dst.extend_from_slice(self.meta.members.as_bytes());
        dst.extend_from_slice(b"},");
        let at = dst.len();
        params.write_json(dst)?;
        let written = std::str::from_utf8(&dst[at..]).map_err(|_| not_object())?;
        let body = written.trim_start();
        if !body.starts_with('{') {
            dst.truncate(start);
            return Err(not_object());
        }
        // Their own `_meta` (possibly `null`), or a key written with escapes that might spell
        // it: merged the slow way, which reads every key.
        if written.contains("\"_meta\"") || written.contains("\\u") {
            let merged = merge_meta(Some(RawJson::new(written)), self.meta)
                .map_err(|e| crate::Error::Serialize(serde::ser::Error::custom(e.message)))?;
            dst.truncate(start);
            dst.extend_from_slice(merged.as_bytes());
            return Ok(());
        }
        let brace = at + (written.len() - body.len());
        let empty = body[1..].trim_start().starts_with('}');
        // Drops the brace, and for `{}` the comma before it too.
        let cut = if empty { at - 1..brace + 1 } else { brace..brace + 1 };
        let len = dst.len();
        dst.copy_within(cut.end.., cut.start);
        dst.truncate(len - cut.len());
        Ok(())
    }
}

fn not_object() -> crate::Error {
    crate::Error::Serialize(serde::ser::Error::custom(
        "params must be a JSON object to carry _meta",
    ))
}

/// `params` with `meta`'s members set in their `_meta`: each of the caller's members, and each
/// of their `_meta`'s other members, kept as written (only keys are written again).
///
/// # Errors
///
/// -32602 when `params` or its `_meta` is not an object or names a member twice.
pub fn merge_meta(params: Option<RawJson<'_>>, meta: &RequestMeta) -> Result<String, Rejection> {
    let Some(params) = params else { return Ok(format!("{{\"_meta\":{{{}}}}}", meta.members)) };
    let members = object_members(params, "params")?;
    let mut out = String::with_capacity(params.get().len() + meta.members.len() + 16);
    out.push_str("{\"_meta\":{");
    out.push_str(&meta.members);
    let mut own_meta = None;
    for (k, v) in &members {
        if k == "_meta" {
            own_meta = Some(*v);
        }
    }
    if let Some(own) = own_meta.filter(|v| v.get().trim() != "null") {
        for (k, v) in object_members(own, "params._meta")? {
            if [PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY].contains(&&*k) {
                continue;
            }
            out.push(',');
            out.push_str(&serde_json::to_string(&*k).unwrap_or_default());
            out.push(':');
            out.push_str(v.get());
        }
    }
    out.push('}');
    for (k, v) in &members {
        if k == "_meta" {
            continue;
        }
        out.push(',');
        out.push_str(&serde_json::to_string(&**k).unwrap_or_default());
        out.push(':');
        out.push_str(v.get());
    }
    out.push('}');
    Ok(out)
}

/// An object's members in order, values borrowed as written.
fn object_members<'a>(
    obj: RawJson<'a>,
    what: &str,
) -> Result<Vec<(Cow<'a, str>, RawJson<'a>)>, Rejection> {
    use serde::de::{MapAccess, Visitor};
    use serde_json::value::RawValue;
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<(Cow<'de, str>, RawJson<'de>)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out: Self::Value = Vec::new();
            while let Some(k) = map.next_key::<Cow<'de, str>>()? {
                if out.iter().any(|(seen, _)| *seen == k) {
                    return Err(serde::de::Error::custom(format_args!("duplicate field `{k}`")));
                }
                let v: &'de RawValue = map.next_value()?;
                out.push((k, RawJson::new(v.get())));
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(obj.get());
    serde::Deserializer::deserialize_map(&mut de, V).map_err(|e| {
        Rejection::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {what}: {e}"))
    })
}

/// An answer to a request, as the era decision reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer<'a> {
    /// A result.
    Result(RawJson<'a>),
    /// An error response (over HTTP: the JSON-RPC error a 4xx's body carried).
    Error {
        /// Its code.
        code: ErrorCode,
        /// Its `data`.
        data: Option<RawJson<'a>>,
    },
    /// No answer within the probe's time, or one that was not a JSON-RPC message.
    NoAnswer,
}

/// What the answer to the era probe says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A modern server: speak `version` on every request.
    Modern {
        /// The newest modern version both sides speak.
        version: String,
    },
    /// A legacy server (or a modern one whose only mutual version is a legacy one): open the
    /// session with `initialize` offering `version`.
    Legacy {
        /// The version `initialize` offers.
        version: String,
        /// What made the decision, for logs.
        reason: String,
    },
    /// Not a modern server, and no legacy version was offered (a fixed modern version).
    NotModern {
        /// What made the decision.
        reason: String,
    },
    /// A modern server that speaks none of the versions offered.
    NoMutualVersion {
        /// The versions it speaks.
        supported: Vec<String>,
    },
}

/// The versions a `DiscoverResult` (`supportedVersions`) or an
/// `UnsupportedProtocolVersionError`'s data (`supported`) names; `None` when `json` is not such
/// an object.
fn versions_in(json: RawJson<'_>, key: &str) -> Option<Vec<String>> {
    let list = member(json, key).ok()??;
    let list: Vec<Cow<'_, str>> = serde_json::from_str(list.get()).ok()?;
    Some(list.into_iter().map(Cow::into_owned).collect())
}

/// The first of `offered` (in its order of preference) that `supported` names.
fn mutual<'v>(offered: &[&'v str], supported: &[String]) -> Option<&'v str> {
    offered.iter().copied().find(|v| supported.iter().any(|s| s == v))
}

/// Chooses from the versions a modern server names.
fn choose(supported: Vec<String>, modern: &[&str], legacy: &[&str], why: &str) -> Decision {
    if let Some(v) = mutual(modern, &supported) {
        return Decision::Modern { version: v.to_owned() };
    }
    if let Some(v) = mutual(legacy, &supported) {
        return Decision::Legacy {
            version: v.to_owned(),
            reason: format!("{why}, and its only version in common is the legacy {v}"),
        };
    }
    Decision::NoMutualVersion { supported }
}

/// Whether an error code is one only a modern server answers with.
#[must_use]
pub fn is_modern_error(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            | ErrorCode::HEADER_MISMATCH
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
    )
}

/// The era decision over the answer to a `server/discover` probe that carried version
/// `tried`, offering `modern` and `legacy` versions (each newest first):
///
/// | answer | decision |
/// |---|---|
/// | a `DiscoverResult` | modern, at the newest offered version in `supportedVersions` |
/// | -32022 whose `data.supported` lists versions | modern, likewise from `supported` |
/// | -32020, -32021 | modern, at `tried` |
/// | any other result or error, or none | legacy, at the newest offered legacy version |
///
/// A modern server that lists no offered modern version but an offered legacy one is spoken
/// to in the legacy era; one that lists neither is [`Decision::NoMutualVersion`]. With no
/// legacy version offered (a fixed modern version), a legacy answer is
/// [`Decision::NotModern`].
#[must_use]
pub fn decide(answer: Answer<'_>, modern: &[&str], legacy: &[&str], tried: &str) -> Decision {
    let fallback = |reason: String| match legacy.first() {
        Some(v) => Decision::Legacy { version: (*v).to_owned(), reason },
        None => Decision::NotModern { reason },
    };
    match answer {
        Answer::Result(r) => match versions_in(r, "supportedVersions") {
            Some(supported) => choose(supported, modern, legacy, "the server is modern"),
            None => fallback(format!("the answer to {DISCOVER} is not a DiscoverResult")),
        },
        Answer::Error { code: ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, data } => {
            match data.and_then(|d| versions_in(d, "supported")) {
                Some(supported) => choose(
                    supported,
                    modern,
                    legacy,
                    "the server is modern but does not speak the version offered",
                ),
                None => fallback(format!(
                    "{DISCOVER} was answered -32022 without the supported versions"
                )),
            }
        }
        Answer::Error { code, .. } if is_modern_error(code) => {
            Decision::Modern { version: tried.to_owned() }
        }
        Answer::Error { code, .. } => {
            fallback(format!("{DISCOVER} was answered with error {}", code.get()))
        }
        Answer::NoAnswer => fallback(format!("{DISCOVER} got no answer")),
    }
}

/// The version to retry a modern request with after it was answered `code` with `data`: for
/// -32022 naming its supported versions, the newest of `offered` among them other than `tried`;
/// `None` for anything else (the error stands).
#[must_use]
pub fn retry_version(
    code: ErrorCode,
    data: Option<RawJson<'_>>,
    offered: &[&str],
    tried: &str,
) -> Option<String> {
    if code != ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
        return None;
    }
    let supported = versions_in(data?, "supported")?;
    offered
        .iter()
        .find(|v| **v != tried && supported.iter().any(|s| s == *v))
        .map(|v| (*v).to_owned())
}

#[cfg(feature = "peer")]
pub use connected::*;

#[cfg(feature = "peer")]
mod connected {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
    use std::time::Duration;

    use super::{
        Answer, DEFAULT_PROBE_TIMEOUT, DISCOVER, Decision, RequestMeta, VersionChoice, decide,
        retry_version,
    };
    use crate::mcp::{Era, LEGACY_VERSIONS};
    use crate::peer::{Incoming, NO_PARAMS, PeerHandle, RequestError, RequestOptions};
    use crate::{Json, Payload, RawJson};

    /// How a client talks to a server: the version it speaks (or `auto`) and what it says
    /// about itself.
    #[derive(Clone, Debug)]
    pub struct ClientOptions {
        /// `auto` or one version.
        pub version: VersionChoice,
        /// The client's capabilities, a JSON object.
        pub capabilities: String,
        /// The client's name and version, a JSON object (`{"name":…,"version":…}`).
        pub client_info: String,
        /// How long the era probe waits for its answer.
        pub probe_timeout: Duration,
        /// How long `initialize` waits for its answer.
        pub initialize_timeout: Duration,
    }

    impl ClientOptions {
        /// `auto`, no capabilities, and the client named `name` at `version`.
        #[must_use]
        pub fn new(name: &str, version: &str) -> Self {
            let info = serde_json::json!({ "name": name, "version": version });
            Self {
                version: VersionChoice::Auto,
                capabilities: "{}".into(),
                client_info: info.to_string(),
                probe_timeout: DEFAULT_PROBE_TIMEOUT,
                initialize_timeout: Duration::from_secs(30),
            }
        }

        /// Speaks `version` (`auto` by default).
        #[must_use]
        pub fn version(mut self, version: VersionChoice) -> Self {
            self.version = version;
            self
        }

        /// Bounds the era probe.
        #[must_use]
        pub fn probe_timeout(mut self, timeout: Duration) -> Self {
            self.probe_timeout = timeout;
            self
        }
    }

    /// Why a client could not start talking to a server.
    #[derive(Debug, thiserror::Error)]
    pub enum NegotiateError {
        /// The server speaks none of the versions offered.
        #[error(
            "no protocol version in common: the server speaks {supported:?}, this client {offered:?}"
        )]
        NoMutualVersion {
            /// What the server speaks (empty when it said nothing).
            supported: Vec<String>,
            /// What was offered.
            offered: Vec<String>,
        },
        /// A request of the negotiation failed.
        #[error("{method} failed: {source}")]
        Request {
            /// `server/discover` or `initialize`.
            method: &'static str,
            /// Why.
            source: RequestError,
        },
        /// A modern version was asked for, and the server's answer to the probe is not a
        /// modern server's.
        #[error("the server is not a modern MCP server: {0}")]
        NotModern(String),
        /// `initialize` was answered, but not with a version this client speaks.
        #[error("initialize: {0}")]
        Handshake(String),
    }

    /// What the client remembers of a target.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Remembered {
        era: Era,
        version: String,
    }

    fn cache() -> &'static Mutex<HashMap<String, Remembered>> {
        static CACHE: OnceLock<Mutex<HashMap<String, Remembered>>> = OnceLock::new();
        CACHE.get_or_init(Default::default)
    }

    /// Forgets the era found for `target`: the next [`negotiate`] with it probes again.
    pub fn forget_era(target: &str) {
        cache().lock().unwrap_or_else(PoisonError::into_inner).remove(target);
    }

    /// A client's agreement with one server: the era, the version, and for a modern server the
    /// `_meta` each request carries.
    #[derive(Debug)]
    pub struct Negotiated {
        era: Era,
        options: ClientOptions,
        meta: RwLock<Arc<RequestMeta>>,
        /// The `DiscoverResult` or `initialize` result, when the negotiation got one.
        server: Option<String>,
        /// Whether the era came from the cache, without a probe.
        cached: bool,
    }

    impl Negotiated {
        /// The server's era.
        #[must_use]
        pub fn era(&self) -> Era {
            self.era
        }

        /// The protocol version spoken now (a -32022 retry may change it).
        #[must_use]
        pub fn version(&self) -> String {
            self.meta().version().to_owned()
        }

        /// The `DiscoverResult` (modern) or `initialize` result (legacy) as JSON text, when the
        /// negotiation had one (not when the era came from the cache or a fixed modern version).
        #[must_use]
        pub fn server(&self) -> Option<&str> {
            self.server.as_deref()
        }

        /// Whether the era came from the per-process cache, with no probe.
        #[must_use]
        pub fn from_cache(&self) -> bool {
            self.cached
        }

        /// The `_meta` members modern requests carry now.
        #[must_use]
        pub fn meta(&self) -> Arc<RequestMeta> {
            self.meta.read().unwrap_or_else(PoisonError::into_inner).clone()
        }

        /// Sends a request in the agreed era: a modern one carries the `_meta` members, and is
        /// sent once more at a mutually supported version if the server answers -32022 (the
        /// version found is then used by every later request).
        ///
        /// # Errors
        ///
        /// As [`PeerHandle::request_with`].
        pub async fn request<P: Payload>(
            &self,
            peer: &PeerHandle,
            method: &str,
            params: Option<P>,
            options: RequestOptions,
        ) -> Result<Incoming, RequestError> {
            if self.era == Era::Legacy {
                return peer.request_with(method, params, options).await;
            }
            let meta = self.meta();
            let first = peer
                .request_with(method, Some(meta.params(params.as_ref())), options.clone())
                .await;
            let Err(RequestError::Rpc(e)) = &first else { return first };
            let offered = self.options.version.modern();
            let Some(version) = retry_version(e.code, e.data(), &offered, meta.version()) else {
                return first;
            };
            let meta = self.set_version(&meta, &version);
            tracing::debug!(method, version, "retrying at a version the server supports");
            peer.request_with(method, Some(meta.params(params)), options).await
        }

        /// Moves to `version` unless another request already moved on from `seen`.
        fn set_version(&self, seen: &Arc<RequestMeta>, version: &str) -> Arc<RequestMeta> {
            let mut cur = self.meta.write().unwrap_or_else(PoisonError::into_inner);
            if Arc::ptr_eq(&cur, seen) {
                *cur = Arc::new(seen.at_version(version));
            }
            cur.clone()
        }
    }

    /// Settles the era and version with the server at the other end of `peer`, as
    /// `options.version` says (see the [module](super) documentation), and opens the legacy
    /// session when the server is legacy.
    ///
    /// `target` names the server for the era cache: a target whose era this process already
    /// found is not probed again (per process only; nothing is kept on disk). A cached legacy
    /// era whose `initialize` then fails is forgotten, so the next connection probes again. A
    /// fixed version neither reads nor fills the cache.
    ///
    /// # Errors
    ///
    /// When no version is mutual, a negotiation request fails (the connection closed, a
    /// legacy `initialize` refused or unanswered), or `initialize` names a version not offered.
    pub async fn negotiate(
        peer: &PeerHandle,
        options: &ClientOptions,
        target: Option<&str>,
    ) -> Result<Negotiated, NegotiateError> {
        let modern = options.version.modern();
        let legacy = options.version.legacy();
        let meta_at = |v: &str| {
            RequestMeta::new(
                v,
                RawJson::new(&options.capabilities),
                Some(RawJson::new(&options.client_info)),
            )
        };
        let done = |era, version: &str, server: Option<String>, cached| Negotiated {
            era,
            options: options.clone(),
            meta: RwLock::new(Arc::new(meta_at(version))),
            server,
            cached,
        };
        let auto = options.version == VersionChoice::Auto;
        let remembered = target
            .filter(|_| auto)
            .and_then(|t| cache().lock().unwrap_or_else(PoisonError::into_inner).get(t).cloned());
        let decision = match (&remembered, modern.first()) {
            (Some(r), _) if r.era == Era::Modern => {
                return Ok(done(Era::Modern, &r.version, None, true));
            }
            (Some(r), _) => {
                Decision::Legacy { version: r.version.clone(), reason: "cached".into() }
            }
            // A fixed modern version probes too (RECOMMENDED): a legacy server then fails
            // at once instead of serving requests under the legacy era's rules.
            (None, Some(preferred)) => {
                let probe = meta_at(preferred);
                let opts = RequestOptions::new().timeout(Some(options.probe_timeout));
                let answer = peer.request_with(DISCOVER, Some(probe.params(NO_PARAMS)), opts).await;
                let decision = match &answer {
                    Ok(r) => decide(
                        r.result().map_or(Answer::NoAnswer, Answer::Result),
                        &modern,
                        &legacy,
                        preferred,
                    ),
                    Err(RequestError::Rpc(e)) => decide(
                        Answer::Error { code: e.code, data: e.data() },
                        &modern,
                        &legacy,
                        preferred,
                    ),
                    Err(RequestError::Timeout) => {
                        decide(Answer::NoAnswer, &modern, &legacy, preferred)
                    }
                    Err(e) => {
                        return Err(NegotiateError::Request {
                            method: DISCOVER,
                            source: e.clone(),
                        });
                    }
                };
                if let Decision::Modern { version } = &decision {
                    if auto {
                        remember(target, Era::Modern, version);
                    }
                    let server = answer.ok().and_then(|r| r.result().map(|r| r.get().to_owned()));
                    return Ok(done(Era::Modern, version, server, false));
                }
                decision
            }
            (None, None) => Decision::Legacy {
                version: legacy
                    .first()
                    .copied()
                    .unwrap_or(LEGACY_VERSIONS[LEGACY_VERSIONS.len() - 1])
                    .to_owned(),
                reason: "a legacy version was asked for".into(),
            },
        };
        let version = match decision {
            Decision::Modern { version } => return Ok(done(Era::Modern, &version, None, false)),
            Decision::NotModern { reason } => return Err(NegotiateError::NotModern(reason)),
            Decision::NoMutualVersion { supported } => {
                let offered = modern.iter().chain(&legacy).map(|v| (*v).to_owned()).collect();
                return Err(NegotiateError::NoMutualVersion { supported, offered });
            }
            Decision::Legacy { version, reason } => {
                tracing::debug!(version, reason, "speaking the legacy era");
                version
            }
        };
        let (agreed, result) = match initialize(peer, options, &version, &legacy).await {
            Ok(done) => done,
            Err(e) => {
                // What was remembered no longer holds: the next connection probes again.
                if let (Some(t), Some(_)) = (target, &remembered) {
                    forget_era(t);
                }
                return Err(e);
            }
        };
        if auto {
            remember(target, Era::Legacy, &version);
        }
        Ok(done(Era::Legacy, &agreed, Some(result), remembered.is_some()))
    }

    fn remember(target: Option<&str>, era: Era, version: &str) {
        if let Some(t) = target {
            cache()
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(t.to_owned(), Remembered { era, version: version.to_owned() });
        }
    }

    /// `initialize` offering `version`, then `notifications/initialized`; the version agreed
    /// and the result.
    async fn initialize(
        peer: &PeerHandle,
        options: &ClientOptions,
        version: &str,
        offered: &[&str],
    ) -> Result<(String, String), NegotiateError> {
        #[derive(serde::Serialize)]
        struct Params<'a> {
            #[serde(rename = "protocolVersion")]
            version: &'a str,
            capabilities: &'a serde_json::value::RawValue,
            #[serde(rename = "clientInfo")]
            client_info: &'a serde_json::value::RawValue,
        }
        #[derive(serde::Deserialize)]
        struct Initialized {
            #[serde(rename = "protocolVersion")]
            version: String,
        }
        let raw = |s: &'static str, text: &str| {
            serde_json::value::RawValue::from_string(text.to_owned())
                .map_err(|e| NegotiateError::Handshake(format!("{s} is not JSON: {e}")))
        };
        let capabilities = raw("the capabilities", &options.capabilities)?;
        let client_info = raw("the client info", &options.client_info)?;
        let params = Params { version, capabilities: &capabilities, client_info: &client_info };
        let opts = RequestOptions::new().timeout(Some(options.initialize_timeout));
        let reply = peer
            .request_with("initialize", Some(Json(&params)), opts)
            .await
            .map_err(|source| NegotiateError::Request { method: "initialize", source })?;
        let agreed: Initialized = reply
            .result_as()
            .map_err(|e| NegotiateError::Handshake(format!("bad initialize result: {e}")))?;
        if !offered.contains(&agreed.version.as_str()) {
            return Err(NegotiateError::Handshake(format!(
                "the server chose protocol version {}, not one of {offered:?}",
                agreed.version
            )));
        }
        peer.notify("notifications/initialized", NO_PARAMS)
            .await
            .map_err(|source| NegotiateError::Request { method: "initialize", source })?;
        let result = reply.result().map(|r| r.get().to_owned()).unwrap_or_default();
        Ok((agreed.version, result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODERN: [&str; 1] = ["2026-07-28"];
    const LEGACY: [&str; 2] = ["2025-11-25", "2025-06-18"];
    const TRIED: &str = "2026-07-28";

    fn decide_(answer: Answer<'_>) -> Decision {
        decide(answer, &MODERN, &LEGACY, TRIED)
    }

    fn legacy_at(d: &Decision) -> &str {
        match d {
            Decision::Legacy { version, .. } => version,
            other => panic!("legacy expected, got {other:?}"),
        }
    }

    fn err(code: ErrorCode, data: Option<&str>) -> Answer<'_> {
        Answer::Error { code, data: data.map(RawJson::new) }
    }

    #[test]
    fn a_discover_result_is_modern_at_the_newest_mutual_version() {
        let r = RawJson::new(
            r#"{"resultType":"complete","supportedVersions":["2027-01-01","2026-07-28"],"capabilities":{}}"#,
        );
        assert_eq!(decide_(Answer::Result(r)), Decision::Modern { version: "2026-07-28".into() });
        // Two modern versions offered: the newer mutual one wins, whatever the server's order.
        let r = RawJson::new(r#"{"supportedVersions":["2026-07-28","2027-01-01"]}"#);
        assert_eq!(
            decide(Answer::Result(r), &["2027-01-01", "2026-07-28"], &LEGACY, TRIED),
            Decision::Modern { version: "2027-01-01".into() }
        );
    }

    #[test]
    fn a_discover_result_with_only_a_legacy_version_in_common_is_spoken_to_in_legacy() {
        let r = RawJson::new(r#"{"supportedVersions":["2027-01-01","2025-06-18"]}"#);
        assert_eq!(legacy_at(&decide_(Answer::Result(r))), "2025-06-18");
        let r = RawJson::new(r#"{"supportedVersions":["2027-01-01"]}"#);
        assert_eq!(
            decide_(Answer::Result(r)),
            Decision::NoMutualVersion { supported: vec!["2027-01-01".into()] }
        );
    }

    #[test]
    fn a_result_that_is_not_a_discover_result_is_legacy() {
        for r in [
            "{}",
            "[]",
            "null",
            r#"{"supportedVersions":"2026-07-28"}"#,
            r#"{"supportedVersions":[1]}"#,
        ] {
            assert_eq!(legacy_at(&decide_(Answer::Result(RawJson::new(r)))), "2025-11-25", "{r}");
        }
    }

    #[test]
    fn unsupported_version_with_a_mutual_version_is_modern_at_it() {
        let data = r#"{"supported":["2026-07-28","2025-11-25"],"requested":"2027-01-01"}"#;
        let d = decide(
            err(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, Some(data)),
            &["2027-01-01", "2026-07-28"],
            &LEGACY,
            "2027-01-01",
        );
        assert_eq!(d, Decision::Modern { version: "2026-07-28".into() });
    }

    #[test]
    fn unsupported_version_without_a_mutual_version() {
        // A legacy version in common: legacy, never a second modern try.
        let data = r#"{"supported":["2027-01-01","2025-11-25"],"requested":"2026-07-28"}"#;
        let d = decide_(err(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, Some(data)));
        assert_eq!(legacy_at(&d), "2025-11-25");
        // Nothing in common.
        let data = r#"{"supported":["2027-01-01"],"requested":"2026-07-28"}"#;
        assert_eq!(
            decide_(err(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, Some(data))),
            Decision::NoMutualVersion { supported: vec!["2027-01-01".into()] }
        );
        // -32022 that does not say what it supports is not recognized: legacy.
        for data in [None, Some("{}"), Some(r#"{"supported":"x"}"#), Some("7")] {
            let d = decide_(err(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, data));
            assert_eq!(legacy_at(&d), "2025-11-25", "{data:?}");
        }
    }

    #[test]
    fn header_mismatch_and_missing_capability_are_modern_at_the_version_tried() {
        for code in [ErrorCode::HEADER_MISMATCH, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY] {
            assert_eq!(decide_(err(code, None)), Decision::Modern { version: TRIED.into() });
        }
    }

    #[test]
    fn any_other_error_is_legacy() {
        for code in [
            ErrorCode::METHOD_NOT_FOUND,
            ErrorCode::INVALID_PARAMS,
            ErrorCode::INVALID_REQUEST,
            ErrorCode::INTERNAL_ERROR,
            ErrorCode(-32000),
            ErrorCode(-32001),
        ] {
            let d = decide_(err(code, Some(r#"{"supported":["2026-07-28"]}"#)));
            assert_eq!(legacy_at(&d), "2025-11-25", "{code:?}");
        }
    }

    /// Over HTTP a 4xx whose body is not a JSON-RPC error reaches the peer as the transport's
    /// own -32603: legacy.
    #[test]
    fn a_4xx_with_a_body_that_is_not_json_rpc_is_legacy() {
        let d = decide_(err(ErrorCode::INTERNAL_ERROR, None));
        assert_eq!(legacy_at(&d), "2025-11-25");
    }

    #[test]
    fn no_answer_is_legacy_and_without_a_legacy_offer_not_modern() {
        assert_eq!(legacy_at(&decide_(Answer::NoAnswer)), "2025-11-25");
        assert!(matches!(
            decide(Answer::NoAnswer, &MODERN, &[], TRIED),
            Decision::NotModern { reason } if reason.contains("no answer")
        ));
        let e = err(ErrorCode::METHOD_NOT_FOUND, None);
        assert!(matches!(decide(e, &MODERN, &[], TRIED), Decision::NotModern { .. }));
    }

    #[test]
    fn the_retry_rule_takes_another_offered_version_the_server_supports() {
        let c = ErrorCode::UNSUPPORTED_PROTOCOL_VERSION;
        let data = RawJson::new(r#"{"supported":["2026-07-28"],"requested":"2027-01-01"}"#);
        let offered = ["2027-01-01", "2026-07-28"];
        assert_eq!(
            retry_version(c, Some(data), &offered, "2027-01-01").as_deref(),
            Some("2026-07-28")
        );
        // The version tried is never tried again.
        assert_eq!(retry_version(c, Some(data), &offered, "2026-07-28"), None);
        assert_eq!(retry_version(c, Some(data), &["2027-01-01"], "2027-01-01"), None);
        assert_eq!(retry_version(c, None, &offered, "2027-01-01"), None);
        assert_eq!(
            retry_version(ErrorCode::INVALID_PARAMS, Some(data), &offered, "2027-01-01"),
            None
        );
    }

    fn written(meta: &RequestMeta, params: Option<&str>) -> Result<String, crate::Error> {
        let mut out = BytesMut::from(&b"prefix:"[..]);
        meta.params(params.map(RawJson::new)).write_json(&mut out)?;
        assert!(out.starts_with(b"prefix:"));
        Ok(String::from_utf8(out[7..].to_vec()).unwrap())
    }

    #[test]
    fn meta_is_spliced_into_params_without_touching_them() {
        let meta = RequestMeta::new(
            "2026-07-28",
            RawJson::new(r#"{"roots":{}}"#),
            Some(RawJson::new(r#"{"name":"c","version":"1"}"#)),
        );
        let m = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}"#;
        assert_eq!(written(&meta, None).unwrap(), format!("{{{m}}}"));
        assert_eq!(written(&meta, Some("{}")).unwrap(), format!("{{{m}}}"));
        assert_eq!(written(&meta, Some(" { } ")).unwrap(), format!("{{{m} }} "));
        // Members as written: spacing, escapes and number forms kept.
        assert_eq!(
            written(&meta, Some(r#"{"name":"echo", "arguments":{"n":1.50,"s":"a\"b"}}"#)).unwrap(),
            format!(r#"{{{m},"name":"echo", "arguments":{{"n":1.50,"s":"a\"b"}}}}"#)
        );
        // A key written with escapes may spell `_meta`: read, not guessed.
        let out =
            written(&meta, Some(r#"{"\u005fmeta":{"progressToken":1},"v":"\u00e9"}"#)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["_meta"]["progressToken"], 1, "{out}");
        assert_eq!(v["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28", "{out}");
        assert!(out.contains(r#""v":"\u00e9""#), "{out}");
        // A `_meta` key inside another member is not theirs.
        assert_eq!(
            written(&meta, Some(r#"{"arguments":{"_meta":1}}"#)).unwrap(),
            format!(r#"{{{m},"arguments":{{"_meta":1}}}}"#)
        );
        for bad in ["[1]", "7", "\"s\"", "null"] {
            assert!(written(&meta, Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_own_meta_keeps_its_other_members_and_loses_the_three() {
        let meta = RequestMeta::new("2026-07-28", RawJson::new("{}"), None);
        let out = written(
            &meta,
            Some(r#"{"name":"x","_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}"#),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["_meta"]["progressToken"], 7);
        assert_eq!(v["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
        assert_eq!(v["name"], "x");
        assert_eq!(out.matches(PROTOCOL_VERSION_KEY).count(), 1, "{out}");
        let out = written(&meta, Some(r#"{"_meta":null,"a":1}"#)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
        assert!(written(&meta, Some(r#"{"_meta":{},"_meta":{}}"#)).is_err());
        assert!(written(&meta, Some(r#"{"_meta":[1]}"#)).is_err());
    }

    #[test]
    fn at_version_changes_only_the_version() {
        let meta = RequestMeta::new("2027-01-01", RawJson::new("{}"), None);
        let next = meta.at_version("2026-07-28");
        assert_eq!(next.version(), "2026-07-28");
        assert_eq!(next, RequestMeta::new("2026-07-28", RawJson::new("{}"), None));
    }

    #[test]
    fn version_choices_parse() {
        assert_eq!("auto".parse::<VersionChoice>().unwrap(), VersionChoice::Auto);
        let m: VersionChoice = "2026-07-28".parse().unwrap();
        assert_eq!((m.modern(), m.legacy()), (vec!["2026-07-28"], vec![]));
        let l: VersionChoice = "2025-06-18".parse().unwrap();
        assert_eq!((l.modern(), l.legacy()), (vec![], vec!["2025-06-18"]));
        assert_eq!(VersionChoice::Auto.legacy()[0], "2025-11-25");
        for bad in ["", "latest", "2026-07-29", "1900-01-01"] {
            assert!(bad.parse::<VersionChoice>().is_err(), "{bad}");
        }
    }
}

#[cfg(all(test, feature = "peer"))]
mod negotiate_tests {
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::peer::{
        Context, Handler, Incoming, PeerBuilder, PeerHandle, Reply, RequestOptions, RpcError,
    };

    /// How the test server answers `server/discover`.
    #[derive(Clone, Copy)]
    enum Probe {
        Silent,
        Unknown,
        Discover,
        Unsupported,
    }

    /// A server that answers the probe as told, `initialize` at 2025-11-25, and `echo` with its
    /// params.
    struct Server(Probe);

    impl Handler for Server {
        async fn request(&self, request: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
            let params: Value =
                request.params().map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
            match (request.method(), self.0) {
                ("server/discover", Probe::Silent) => std::future::pending().await,
                ("server/discover", Probe::Unknown) => {
                    Err(RpcError::method_not_found("server/discover"))
                }
                ("server/discover", Probe::Discover) => Reply::json(&json!({
                    "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}})),
                ("server/discover", Probe::Unsupported) => Err(RpcError::new(
                    ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                    "Unsupported protocol version",
                )
                .with_data(&json!({"supported": ["2026-07-28", "2025-11-25"], "requested": "x"}))),
                ("initialize", _) => Reply::json(&json!({"protocolVersion": "2025-11-25",
                    "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})),
                ("echo", _) => Reply::json(&params),
                (m, _) => Err(RpcError::method_not_found(m)),
            }
        }
    }

    fn pair(probe: Probe) -> PeerHandle {
        let (a, b) = tokio::io::duplex(1 << 16);
        PeerBuilder::new().connect(a, Server(probe)).1.detach();
        let (peer, conn) = PeerBuilder::new().connect(b, crate::peer::NoHandler);
        conn.detach();
        peer
    }

    fn options() -> ClientOptions {
        ClientOptions::new("t", "1").probe_timeout(Duration::from_millis(300))
    }

    async fn echo(agreed: &Negotiated, peer: &PeerHandle) -> Value {
        let params = crate::RawJson::new(r#"{"a":1}"#);
        let r = agreed.request(peer, "echo", Some(params), RequestOptions::new()).await.unwrap();
        r.result_as().unwrap()
    }

    #[tokio::test]
    async fn each_probe_answer_leads_to_its_era() {
        for (probe, era, version) in [
            (Probe::Silent, Era::Legacy, "2025-11-25"),
            (Probe::Unknown, Era::Legacy, "2025-11-25"),
            (Probe::Discover, Era::Modern, "2026-07-28"),
            (Probe::Unsupported, Era::Modern, "2026-07-28"),
        ] {
            let peer = pair(probe);
            let agreed =
                tokio::time::timeout(Duration::from_secs(10), negotiate(&peer, &options(), None))
                    .await
                    .unwrap()
                    .unwrap();
            assert_eq!((agreed.era(), agreed.version().as_str()), (era, version));
            let got = echo(&agreed, &peer).await;
            assert_eq!(got["a"], 1);
            let meta = &got["_meta"];
            match era {
                Era::Modern => {
                    assert_eq!(meta[PROTOCOL_VERSION_KEY], "2026-07-28", "{got}");
                    assert_eq!(meta[CLIENT_CAPABILITIES_KEY], json!({}), "{got}");
                    assert_eq!(
                        meta[CLIENT_INFO_KEY],
                        json!({"name": "t", "version": "1"}),
                        "{got}"
                    );
                }
                Era::Legacy => assert!(meta.is_null(), "{got}"),
            }
        }
    }

    #[tokio::test]
    async fn a_fixed_modern_version_refuses_a_legacy_server_and_a_closed_peer_fails() {
        let peer = pair(Probe::Unknown);
        let fixed = options().version(VersionChoice::Fixed("2026-07-28".into()));
        let e = negotiate(&peer, &fixed, None).await.unwrap_err();
        assert!(matches!(e, NegotiateError::NotModern(_)), "{e}");
        let fixed = options().version(VersionChoice::Fixed("2025-06-18".into()));
        // A fixed legacy version the server does not choose is refused.
        let e = negotiate(&peer, &fixed, None).await.unwrap_err();
        assert!(matches!(e, NegotiateError::Handshake(_)), "{e}");
        peer.close();
        let e = negotiate(&peer, &options(), None).await.unwrap_err();
        assert!(matches!(e, NegotiateError::Request { method: DISCOVER, .. }), "{e}");
    }

    #[tokio::test]
    async fn a_cached_legacy_era_skips_the_probe_until_it_fails() {
        let target = Some("negotiate_tests/legacy-cache");
        let agreed = negotiate(&pair(Probe::Unknown), &options(), target).await.unwrap();
        assert_eq!((agreed.era(), agreed.from_cache()), (Era::Legacy, false));
        // A server that would answer the probe as modern is not probed: the era is cached.
        let agreed = negotiate(&pair(Probe::Discover), &options(), target).await.unwrap();
        assert_eq!((agreed.era(), agreed.from_cache()), (Era::Legacy, true));
        // The cached assumption fails (no initialize answered): forgotten.
        let closed = pair(Probe::Discover);
        closed.close();
        let e = negotiate(&closed, &options(), target).await.unwrap_err();
        assert!(matches!(e, NegotiateError::Request { method: "initialize", .. }), "{e}");
        let agreed = negotiate(&pair(Probe::Discover), &options(), target).await.unwrap();
        assert_eq!((agreed.era(), agreed.from_cache()), (Era::Modern, false));
    }
}
