//! The child's handshake, and what the clients get from it: what the bridge says of itself
//! (its capabilities, its `initialize` params, the 2026-07-28 envelope of its own requests),
//! what the child answered, read into [`Handshake`] (with the `server/discover` answer for a modern
//! client of a legacy child, or the `initialize` answer for a legacy client of a modern-only
//! one), what a legacy client's `initialize` is answered with, and the `_meta` members that
//! tell the eras apart.

use serde_json::Value;

use crate::mcp::negotiation::RequestMeta;
use crate::mcp::{
    self, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY,
};
use crate::message::RawJson;

/// The `_meta` members of a modern request that a legacy child does not take.
pub(super) const ENVELOPE: [&str; 4] =
    [PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY];

/// What the bridge tells the child it can do: every client feature, each asked of the client a
/// request concerns.
pub(super) const BRIDGE_CAPABILITIES: &str =
    r#"{"sampling":{},"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true}}"#;

/// The bridge's `initialize` params to the child.
pub(super) fn initialize_params() -> String {
    format!(
        r#"{{"protocolVersion":"{}","capabilities":{BRIDGE_CAPABILITIES},"clientInfo":{{"name":"mcpwire-bridge","version":"{}"}}}}"#,
        mcp::LEGACY_VERSIONS[mcp::LEGACY_VERSIONS.len() - 1],
        env!("CARGO_PKG_VERSION"),
    )
}

/// The `_meta` members of the bridge's own 2026-07-28 requests to the child, the era probe
/// among them: the version, [`BRIDGE_CAPABILITIES`] and the bridge's name.
pub(super) fn request_meta() -> RequestMeta {
    let info = format!(r#"{{"name":"mcpwire-bridge","version":"{}"}}"#, env!("CARGO_PKG_VERSION"));
    let caps = RawJson::new(BRIDGE_CAPABILITIES);
    RequestMeta::new(mcp::MODERN_VERSIONS[0], caps, Some(RawJson::new(&info)))
}

/// The params of the bridge's own 2026-07-28 request that has none of its own: the
/// [`request_meta`] envelope, and nothing else.
pub(super) fn envelope_params() -> String {
    format!(r#"{{"_meta":{{{}}}}}"#, request_meta().members())
}

/// What the child answered when it was opened, held for every client, and what the bridge
/// built from it.
#[derive(Debug)]
pub(super) struct Handshake {
    /// The result's text.
    pub(super) result: String,
    /// Its `protocolVersion`.
    pub(super) version: String,
    /// Its `serverInfo` (JSON text), `{}` when it named none.
    pub(super) server_info: String,
    /// `server/discover` answered for modern clients of a legacy child.
    pub(super) discover: String,
    /// Whether the child also answers modern (2026-07-28) requests.
    pub(super) modern: bool,
    /// Whether the child answers modern requests only (it refused the bridge's `initialize`
    /// once it answered `server/discover`): it has no session, and every legacy client's
    /// request is translated. `result` is then built from its `DiscoverResult`.
    pub(super) modern_only: bool,
}

/// What the child's `initialize` answered, read; `modern` is whether it answered the probe.
///
/// # Errors
///
/// When the result is not an object with a string `protocolVersion`.
pub(super) fn from_initialize(result: &str, modern: bool) -> Result<Handshake, String> {
    let v: Value = serde_json::from_str(result).map_err(|e| format!("not JSON: {e}"))?;
    let version = v
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or("the initialize result names no protocolVersion")?
        .to_owned();
    let server_info = v.get("serverInfo").map_or_else(|| "{}".to_owned(), Value::to_string);
    let mut discover = serde_json::json!({
        "supportedVersions": mcp::MODERN_VERSIONS,
        "capabilities": v.get("capabilities").cloned().unwrap_or_else(|| serde_json::json!({})),
        "ttlMs": 0,
        "cacheScope": "private",
        "resultType": "complete",
        "_meta": { mcp::SERVER_INFO_KEY: v.get("serverInfo").cloned().unwrap_or_default() },
    });
    if let Some(i) = v.get("instructions") {
        discover["instructions"] = i.clone();
    }
    Ok(Handshake {
        result: result.to_owned(),
        version,
        server_info,
        discover: discover.to_string(),
        modern,
        modern_only: false,
    })
}

/// What a modern-only child's `DiscoverResult` gives legacy clients: the `initialize` answer
/// they get (the latest legacy version, the child's capabilities, its `serverInfo` from the
/// result's `_meta`, its instructions), built once.
///
/// # Errors
///
/// When the result is not an object.
pub(super) fn from_discover(discover: &str) -> Result<Handshake, String> {
    let v: Value = serde_json::from_str(discover).map_err(|e| format!("not JSON: {e}"))?;
    if !v.is_object() {
        return Err("the server/discover result is not an object".into());
    }
    let info = v
        .get("_meta")
        .and_then(|m| m.get(mcp::SERVER_INFO_KEY))
        .cloned()
        .unwrap_or_else(|| serde_json::json!({}));
    let version = mcp::LEGACY_VERSIONS[mcp::LEGACY_VERSIONS.len() - 1];
    let mut init = serde_json::json!({
        "protocolVersion": version,
        "capabilities": v.get("capabilities").cloned().unwrap_or_else(|| serde_json::json!({})),
        "serverInfo": info,
    });
    if let Some(i) = v.get("instructions") {
        init["instructions"] = i.clone();
    }
    Ok(Handshake {
        result: init.to_string(),
        version: version.to_owned(),
        server_info: info.to_string(),
        discover: discover.to_owned(),
        modern: true,
        modern_only: true,
    })
}

/// The answer to a legacy client's `initialize`: the child's own, at the version the client
/// asked for when the child's is later and the client's a legacy one (what the child would
/// have answered it), else at the child's.
pub(super) fn initialize_answer(handshake: &Handshake, requested: Option<&str>) -> String {
    let Some(asked) = requested else { return handshake.result.clone() };
    if asked == handshake.version
        || !mcp::LEGACY_VERSIONS.contains(&asked)
        || asked > handshake.version.as_str()
    {
        return handshake.result.clone();
    }
    let Ok(mut v) = serde_json::from_str::<Value>(&handshake.result) else {
        return handshake.result.clone();
    };
    v["protocolVersion"] = Value::String(asked.to_owned());
    v.to_string()
}

#[cfg(test)]
mod tests;
