//! The client's half of settling an era, as pure functions over answers: which era a server
//! speaks and at which version ([`decide`], [`retry_version`]), and the `_meta` every modern
//! request carries ([`RequestMeta`], [`merge_meta`]). No I/O: they can be tested, and used by a
//! client on any transport, without a connection. `mcpwire::client::negotiate` (feature
//! `peer`) runs them over a peer.
//!
//! ```
//! use mcpwire::RawJson;
//! use mcpwire::mcp::negotiation::{Decision, ProbeAnswer, decide};
//!
//! let discovered = RawJson::new(r#"{"supportedVersions":["2026-07-28"],"capabilities":{}}"#);
//! let d = decide(ProbeAnswer::Result(discovered), &["2026-07-28"], &["2025-11-25"], "2026-07-28");
//! assert_eq!(d, Decision::Modern { version: "2026-07-28".into() });
//!
//! let legacy = ProbeAnswer::Error { code: mcpwire::ErrorCode::METHOD_NOT_FOUND, data: None };
//! assert!(matches!(decide(legacy, &["2026-07-28"], &["2025-11-25"], "2026-07-28"),
//!     Decision::Legacy { .. }));
//! ```

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use bytes::BytesMut;

use super::meta::{Rejection, member};
use super::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, Era, LEGACY_VERSIONS, MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
};
use crate::{error::ErrorCode, message::RawJson, message::encode::Payload};

/// The method of the era probe.
pub const DISCOVER: &str = "server/discover";

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
/// use mcpwire::mcp::negotiation::RequestMeta;
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
    fn write_json(&self, dst: &mut BytesMut) -> Result<(), crate::error::Error> {
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
            let merged = merge_meta(Some(RawJson::new(written)), self.meta).map_err(|e| {
                crate::error::Error::Serialize(serde::ser::Error::custom(e.message))
            })?;
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

fn not_object() -> crate::error::Error {
    crate::error::Error::Serialize(serde::ser::Error::custom(
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
pub enum ProbeAnswer<'a> {
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
pub fn decide(answer: ProbeAnswer<'_>, modern: &[&str], legacy: &[&str], tried: &str) -> Decision {
    let fallback = |reason: String| match legacy.first() {
        Some(v) => Decision::Legacy { version: (*v).to_owned(), reason },
        None => Decision::NotModern { reason },
    };
    match answer {
        ProbeAnswer::Result(r) => match versions_in(r, "supportedVersions") {
            Some(supported) => choose(supported, modern, legacy, "the server is modern"),
            None => fallback(format!("the answer to {DISCOVER} is not a DiscoverResult")),
        },
        ProbeAnswer::Error { code: ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, data } => {
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
        ProbeAnswer::Error { code, .. } if is_modern_error(code) => {
            Decision::Modern { version: tried.to_owned() }
        }
        ProbeAnswer::Error { code, .. } => {
            fallback(format!("{DISCOVER} was answered with error {}", code.get()))
        }
        ProbeAnswer::NoAnswer => fallback(format!("{DISCOVER} got no answer")),
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

#[cfg(test)]
mod tests;
