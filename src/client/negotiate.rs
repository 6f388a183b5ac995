//! [`negotiate`]: the era decision run over a connection (its probe is `crate::probe`, which the
//! bridge runs too).

use crate::limits::DEFAULT_PROBE_TIMEOUT;
use crate::sync::{Locked, RwLocked};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use crate::limits::DEFAULT_INITIALIZE_TIMEOUT;
use crate::mcp::negotiation::{DISCOVER, Decision, RequestMeta, VersionChoice, retry_version};
use crate::mcp::{Era, LEGACY_VERSIONS};
use crate::peer::{Incoming, NO_PARAMS, PeerHandle, RequestError, RequestOptions, TransportError};
use crate::probe;
use crate::{message::RawJson, message::encode::Json, message::encode::Payload};

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
            initialize_timeout: DEFAULT_INITIALIZE_TIMEOUT,
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
    cache().locked().remove(target);
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
    /// Legacy sessions opened again after the server ended one.
    renewals: AtomicU64,
    /// Held while a lost session is renewed, so concurrent losers renew it once.
    renewing: tokio::sync::Mutex<()>,
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
        self.meta.read_locked().clone()
    }

    /// Sends a request in the agreed era: a modern one carries the `_meta` members, and is
    /// sent once more at a mutually supported version if the server answers -32022 (the
    /// version found is then used by every later request). A legacy one whose session the
    /// server ended ([`TransportError::SessionLost`]: the request was not run) opens a new
    /// session, as MCP asks of a client (`initialize` again, no session id), and is sent once
    /// more in it; a second loss, or a renewal that fails, is the request's error.
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
            let renewed = self.session_renewals();
            let first = peer.request_with(method, params.as_ref(), options.clone()).await;
            let Err(RequestError::Transport(TransportError::SessionLost(lost))) = &first else {
                return first;
            };
            if method == "initialize" {
                return first;
            }
            if let Err(e) = self.renew(peer, renewed).await {
                let why = format!("{lost}; a new session could not be opened: {e}");
                return Err(RequestError::Transport(TransportError::SessionLost(why)));
            }
            // Once: a request that loses the new session too fails with `SessionLost`.
            return peer.request_with(method, params, options).await;
        }
        let meta = self.meta();
        let first =
            peer.request_with(method, Some(meta.params(params.as_ref())), options.clone()).await;
        let Err(RequestError::Rpc(e)) = &first else { return first };
        let offered = self.options.version.modern();
        let Some(version) = retry_version(e.code, e.data(), &offered, meta.version()) else {
            return first;
        };
        let meta = self.set_version(&meta, &version);
        tracing::debug!(method, version, "retrying at a version the server supports");
        peer.request_with(method, Some(meta.params(params)), options).await
    }

    /// How many times a legacy session the server ended was opened again (see
    /// [`Negotiated::request`]).
    #[must_use]
    pub fn session_renewals(&self) -> u64 {
        self.renewals.load(Ordering::Acquire)
    }

    /// Opens a new legacy session (`initialize` with the same client info and capabilities,
    /// at the version agreed, then `notifications/initialized`), unless another request did
    /// since `seen` renewals.
    async fn renew(&self, peer: &PeerHandle, seen: u64) -> Result<(), NegotiateError> {
        let _one = self.renewing.lock().await;
        if self.session_renewals() != seen {
            return Ok(());
        }
        let version = self.version();
        initialize(peer, &self.options, &version, &[version.as_str()]).await?;
        self.renewals.fetch_add(1, Ordering::AcqRel);
        tracing::info!(version, "the server ended the session; a new one was opened");
        Ok(())
    }

    /// Moves to `version` unless another request already moved on from `seen`.
    fn set_version(&self, seen: &Arc<RequestMeta>, version: &str) -> Arc<RequestMeta> {
        let mut cur = self.meta.write_locked();
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
    negotiate_with(peer, options, target, &Progress::default()).await
}

/// The request a connection is waiting on (none: the transport is starting), for a caller that
/// bounds the whole and says which step was too slow.
#[derive(Debug, Default)]
pub(crate) struct Progress(Mutex<Option<&'static str>>);

impl Progress {
    /// Waiting on `method` now.
    pub(crate) fn at(&self, method: &'static str) {
        *self.0.locked() = Some(method);
    }

    /// The method waited on, if any.
    #[cfg(feature = "mcp")]
    pub(crate) fn method(&self) -> Option<&'static str> {
        *self.0.locked()
    }
}

/// [`negotiate`], telling `progress` each request it waits on.
pub(crate) async fn negotiate_with(
    peer: &PeerHandle,
    options: &ClientOptions,
    target: Option<&str>,
    progress: &Progress,
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
        renewals: AtomicU64::new(0),
        renewing: tokio::sync::Mutex::new(()),
    };
    let auto = options.version == VersionChoice::Auto;
    let remembered = target.filter(|_| auto).and_then(|t| cache().locked().get(t).cloned());
    let decision = match (&remembered, modern.first()) {
        (Some(r), _) if r.era == Era::Modern => {
            return Ok(done(Era::Modern, &r.version, None, true));
        }
        (Some(r), _) => Decision::Legacy { version: r.version.clone(), reason: "cached".into() },
        // A fixed modern version probes too (RECOMMENDED): a legacy server then fails
        // at once instead of serving requests under the legacy era's rules.
        (None, Some(preferred)) => {
            progress.at(DISCOVER);
            let answer = probe::send(peer, &meta_at(preferred), options.probe_timeout).await;
            let decision = answer
                .decide(&modern, &legacy, preferred)
                .map_err(|source| NegotiateError::Request { method: DISCOVER, source })?;
            if let Decision::Modern { version } = &decision {
                if auto {
                    remember(target, Era::Modern, version);
                }
                return Ok(done(Era::Modern, version, answer.result(), false));
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
    progress.at("initialize");
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
        cache().locked().insert(t.to_owned(), Remembered { era, version: version.to_owned() });
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

#[cfg(test)]
mod tests;
