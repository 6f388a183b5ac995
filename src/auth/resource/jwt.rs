//! [`JwtValidator`]: access tokens that are JWTs (RFC 9068), checked against the authorization
//! server's keys (its JWKS, fetched and kept, fetched again for a key it does not know, at most
//! once per [`DEFAULT_JWKS_MIN_REFRESH`]).

use crate::limits::DEFAULT_FETCH_TIMEOUT;
use crate::limits::DEFAULT_JWKS_MAX_AGE;
use crate::limits::DEFAULT_JWKS_MIN_REFRESH;
use crate::limits::DEFAULT_LEEWAY;
use crate::limits::DEFAULT_MAX_DOCUMENT_BYTES;
use crate::limits::DEFAULT_TOKEN_CACHE_ENTRIES;
use crate::sync::Locked;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use url::Url;

use super::cache::{TokenCache, key};
use super::{BoxFuture, TokenError, TokenValidator};
use crate::auth::AuthError;
use crate::auth::fetch::Fetcher;
use crate::peer::principal::Principal;
use crate::tls::ClientTls;

/// The signature algorithms accepted unless the host names others: the asymmetric ones.
/// `none` is never accepted, nor an HMAC one (a public key must not be usable as a secret).
const DEFAULT_ALGORITHMS: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::EdDSA,
];

/// Where the keys come from.
enum Source {
    Url(Url),
    Fixed,
}

/// Checks JWT access tokens: the signature with a key of the issuer's JWKS (the token's `kid`,
/// its `alg` among those allowed and the key's own), then `iss`, `aud` (the canonical resource
/// URI, unless [`accept_any_audience`](JwtValidatorBuilder::accept_any_audience)), `exp` and
/// `nbf`. A token checked once is remembered (by its hash) until it expires. Cheap to clone.
#[derive(Clone)]
pub struct JwtValidator(pub(super) Arc<Inner>);

pub(super) struct Inner {
    issuer: String,
    audience: Option<String>,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    source: Source,
    fetch: Option<Fetcher>,
    min_refresh: Duration,
    max_age: Duration,
    keys: Mutex<Keys>,
    /// One fetch of the JWKS at a time: the others wait for it and use what it brought.
    refreshing: tokio::sync::Mutex<()>,
    pub(super) cache: TokenCache,
}

#[derive(Default)]
struct Keys {
    set: Vec<Jwk>,
    /// When the set was last fetched (or tried).
    fetched: Option<Instant>,
    /// Why the last fetch failed, if it did.
    failed: Option<String>,
}

/// Builds a [`JwtValidator`].
pub struct JwtValidatorBuilder {
    issuer: String,
    audience: Option<String>,
    jwks: Result<Source, String>,
    keys: Vec<Jwk>,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    min_refresh: Duration,
    max_age: Duration,
    cache_entries: usize,
    tls: Option<ClientTls>,
    timeout: Duration,
    max_bytes: usize,
}

impl JwtValidator {
    /// A validator of tokens issued by `issuer` (the `iss` they must carry) for `audience`
    /// (the resource server's canonical URI, which their `aud` must name). Name where the keys
    /// are with [`jwks_url`](JwtValidatorBuilder::jwks_url) or
    /// [`jwks_json`](JwtValidatorBuilder::jwks_json).
    #[must_use]
    pub fn builder(issuer: impl Into<String>, audience: impl Into<String>) -> JwtValidatorBuilder {
        JwtValidatorBuilder {
            issuer: issuer.into(),
            audience: Some(audience.into()),
            jwks: Err("no JWKS named".into()),
            keys: Vec::new(),
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            leeway: DEFAULT_LEEWAY,
            min_refresh: DEFAULT_JWKS_MIN_REFRESH,
            max_age: DEFAULT_JWKS_MAX_AGE,
            cache_entries: DEFAULT_TOKEN_CACHE_ENTRIES,
            tls: None,
            timeout: DEFAULT_FETCH_TIMEOUT,
            max_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
        }
    }
}

impl JwtValidatorBuilder {
    /// Fetches the keys from `url` (the authorization server's `jwks_uri`), when first needed,
    /// again after [`max_age`](Self::max_age), and again for a token whose key is not among
    /// them (at most once per [`min_refresh`](Self::min_refresh)).
    #[must_use]
    pub fn jwks_url(mut self, url: &str) -> Self {
        self.jwks = Url::parse(url).map(Source::Url).map_err(|e| format!("JWKS URL {url}: {e}"));
        self
    }

    /// Uses the keys of a JWKS document, fixed (a file the host read).
    #[must_use]
    pub fn jwks_json(mut self, json: &str) -> Self {
        match serde_json::from_str::<JwkSet>(json) {
            Ok(set) => {
                self.keys = set.keys;
                self.jwks = Ok(Source::Fixed);
            }
            Err(e) => self.jwks = Err(format!("JWKS: {e}")),
        }
        self
    }

    /// Accepts only these signature algorithms (an HMAC one or `none` is never accepted).
    #[must_use]
    pub fn algorithms(mut self, algs: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algs.into_iter().filter(|a| !is_hmac(*a)).collect();
        self
    }

    /// **Turns the audience check off**: a token is accepted whatever its `aud` names. Only
    /// for an authorization server that cannot put the resource in its tokens' audience; any
    /// token that server issues for another resource is then accepted here too.
    #[must_use]
    pub fn accept_any_audience(mut self) -> Self {
        self.audience = None;
        self
    }

    /// The clock skew allowed on `exp` and `nbf` ([`DEFAULT_LEEWAY`]).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The shortest time between two fetches for an unknown key ([`DEFAULT_JWKS_MIN_REFRESH`]).
    #[must_use]
    pub fn min_refresh(mut self, t: Duration) -> Self {
        self.min_refresh = t;
        self
    }

    /// How long fetched keys are used before they are fetched again ([`DEFAULT_JWKS_MAX_AGE`]).
    #[must_use]
    pub fn max_age(mut self, t: Duration) -> Self {
        self.max_age = t;
        self
    }

    /// How many checked tokens are remembered ([`DEFAULT_TOKEN_CACHE_ENTRIES`]; 0: none).
    #[must_use]
    pub fn cache_entries(mut self, n: usize) -> Self {
        self.cache_entries = n;
        self
    }

    /// TLS settings for fetching the JWKS (extra CAs).
    #[must_use]
    pub fn tls(mut self, tls: ClientTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Bounds on one fetch of the JWKS: its time ([`DEFAULT_FETCH_TIMEOUT`]) and size
    /// ([`DEFAULT_MAX_DOCUMENT_BYTES`]).
    #[must_use]
    pub fn fetch_bounds(mut self, timeout: Duration, max_bytes: usize) -> Self {
        self.timeout = timeout;
        self.max_bytes = max_bytes;
        self
    }

    /// The validator.
    ///
    /// # Errors
    ///
    /// No JWKS named, a JWKS that does not parse, or TLS settings that do not load.
    pub fn build(self) -> Result<JwtValidator, AuthError> {
        let source = self.jwks.map_err(AuthError::Invalid)?;
        let fetch = match source {
            Source::Url(_) => Some(Fetcher::new(self.tls.as_ref(), self.timeout, self.max_bytes)?),
            Source::Fixed => None,
        };
        let fixed = matches!(source, Source::Fixed);
        Ok(JwtValidator(Arc::new(Inner {
            issuer: self.issuer,
            audience: self.audience,
            algorithms: self.algorithms,
            leeway: self.leeway,
            source,
            fetch,
            min_refresh: self.min_refresh,
            max_age: self.max_age,
            keys: Mutex::new(Keys {
                set: self.keys,
                fetched: fixed.then(Instant::now),
                failed: None,
            }),
            refreshing: tokio::sync::Mutex::new(()),
            cache: TokenCache::new(self.cache_entries),
        })))
    }
}

impl TokenValidator for JwtValidator {
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>> {
        Box::pin(self.0.validate(token))
    }
}

/// The claims read from a token.
#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    azp: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    /// Some servers write the scopes as `scp`, a list or a string.
    #[serde(default)]
    scp: Option<serde_json::Value>,
    #[serde(default)]
    exp: Option<u64>,
}

impl Inner {
    async fn validate(&self, token: &str) -> Result<Principal, TokenError> {
        let cache_key = key(token);
        if let Some(known) = self.cache.get(&cache_key) {
            return known.map_err(TokenError::Invalid);
        }
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| TokenError::Invalid(format!("not a signed JWT: {e}")))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(TokenError::Invalid(format!(
                "signature algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let jwk = self.key_for(header.kid.as_deref(), header.alg).await?;
        let decoding = DecodingKey::from_jwk(&jwk)
            .map_err(|e| TokenError::Invalid(format!("the issuer's key does not load: {e}")))?;
        let mut v = Validation::new(header.alg);
        v.leeway = self.leeway.as_secs();
        v.validate_nbf = true;
        v.set_issuer(&[&self.issuer]);
        let mut required: HashSet<String> = ["exp", "iss"].map(str::to_owned).into();
        match &self.audience {
            Some(aud) => {
                v.set_audience(&[aud]);
                required.insert("aud".into());
            }
            None => v.validate_aud = false,
        }
        v.required_spec_claims = required;
        let outcome = jsonwebtoken::decode::<Claims>(token, &decoding, &v)
            .map(|data| principal(data.claims))
            .map_err(|e| describe(&e));
        // A good token is remembered until it expires; a bad one is not (it is refused as
        // fast again, and a flood of distinct ones would only churn the table).
        if let Ok(p) = &outcome {
            self.cache.put(cache_key, Ok(p.clone()), Duration::from_secs(3600));
        }
        outcome.map_err(TokenError::Invalid)
    }

    /// The key for `kid` (or the one key of `alg`'s kind when the token names none), fetching
    /// the JWKS when it is stale or does not have it (rate-limited).
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<Jwk, TokenError> {
        let (found, stale, may_refresh) = {
            let keys = self.keys.locked();
            let since = keys.fetched.map(|t| t.elapsed());
            (
                pick(&keys.set, kid, alg),
                since.is_none_or(|s| s >= self.max_age),
                since.is_none_or(|s| s >= self.min_refresh),
            )
        };
        let fetchable = matches!(self.source, Source::Url(_));
        match found {
            Ok(k) if !(stale && fetchable) => return Ok(k),
            Ok(k) => {
                // Stale: fetch again, but a failure keeps the keys there are.
                self.refresh().await;
                let keys = self.keys.locked();
                return Ok(pick(&keys.set, kid, alg).unwrap_or(k));
            }
            Err(_) if fetchable && may_refresh => self.refresh().await,
            Err(_) => {}
        }
        let keys = self.keys.locked();
        pick(&keys.set, kid, alg).map_err(|why| match &keys.failed {
            Some(failed) if keys.set.is_empty() => TokenError::Unavailable(failed.clone()),
            _ => TokenError::Invalid(why),
        })
    }

    /// Fetches the JWKS, once for all who wait: a caller that waited for another's fetch uses
    /// what it brought.
    async fn refresh(&self) {
        let (Source::Url(url), Some(fetch)) = (&self.source, &self.fetch) else { return };
        let before = self.keys.locked().fetched;
        let _one = self.refreshing.lock().await;
        if self.keys.locked().fetched != before {
            return;
        }
        let got = match fetch.get(url, "JWKS").await {
            Ok(answer) => answer.decode::<JwkSet>("JWKS"),
            Err(e) => Err(e),
        };
        let mut keys = self.keys.locked();
        let now = Instant::now();
        match got {
            Ok(set) => {
                keys.set = set.keys;
                keys.failed = None;
                keys.fetched = Some(now);
            }
            Err(e) => {
                tracing::warn!(error = %e, "JWKS fetch failed; the keys kept are used");
                keys.failed = Some(e.to_string());
                // Tried again once `min_refresh` has passed, not a whole `max_age` later.
                let back = self.max_age.saturating_sub(self.min_refresh);
                keys.fetched = Some(now.checked_sub(back).unwrap_or(now));
            }
        }
    }
}

/// The key of `set` for a token of `alg` naming `kid`: a signing key whose algorithm (when it
/// names one) is `alg` and whose type fits it. Without a `kid`, the one such key.
fn pick(set: &[Jwk], kid: Option<&str>, alg: Algorithm) -> Result<Jwk, String> {
    let fits = |k: &&Jwk| {
        let usable =
            !matches!(k.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature);
        let alg_ok = k.common.key_algorithm.is_none_or(|ka| same_algorithm(ka, alg));
        usable && alg_ok && kind_fits(&k.algorithm, alg)
    };
    match kid {
        Some(kid) => set
            .iter()
            .filter(|k| k.common.key_id.as_deref() == Some(kid))
            .find(fits)
            .cloned()
            .ok_or_else(|| format!("no key {kid:?} for {alg:?} among the issuer's keys")),
        None => {
            let mut candidates = set.iter().filter(fits);
            match (candidates.next(), candidates.next()) {
                (Some(k), None) => Ok(k.clone()),
                (None, _) => Err(format!("no key for {alg:?} among the issuer's keys")),
                (Some(_), Some(_)) => {
                    Err("the token names no key (kid) and the issuer has several".into())
                }
            }
        }
    }
}

/// Whether a key of this type can verify `alg` (a symmetric key never does).
fn kind_fits(params: &AlgorithmParameters, alg: Algorithm) -> bool {
    match params {
        AlgorithmParameters::RSA(_) => matches!(
            alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
        ),
        AlgorithmParameters::EllipticCurve(_) => matches!(alg, Algorithm::ES256 | Algorithm::ES384),
        AlgorithmParameters::OctetKeyPair(_) => alg == Algorithm::EdDSA,
        AlgorithmParameters::OctetKey(_) => false,
    }
}

fn same_algorithm(k: KeyAlgorithm, a: Algorithm) -> bool {
    format!("{k:?}") == format!("{a:?}")
}

fn is_hmac(a: Algorithm) -> bool {
    matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

fn principal(c: Claims) -> Principal {
    let scope = match (c.scope, c.scp) {
        (Some(s), _) => s,
        (None, Some(serde_json::Value::String(s))) => s,
        (None, Some(serde_json::Value::Array(a))) => {
            a.iter().filter_map(serde_json::Value::as_str).collect::<Vec<_>>().join(" ")
        }
        _ => String::new(),
    };
    Principal::new(c.sub)
        .with_client_id(c.client_id.or(c.azp))
        .with_issuer(c.iss)
        .with_scope(&scope)
        .with_expiry(c.exp.map(|s| UNIX_EPOCH + Duration::from_secs(s)))
}

/// Why `decode` refused a token, in words a client log can use.
fn describe(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => "the token has expired".into(),
        K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        K::InvalidAudience => "the token was issued for another resource (aud)".into(),
        K::InvalidIssuer => "the token was issued by another server (iss)".into(),
        K::InvalidSignature => "the token's signature does not verify".into(),
        K::MissingRequiredClaim(c) => format!("the token has no {c} claim"),
        K::InvalidAlgorithm => "the token's algorithm does not fit the key".into(),
        other => format!("the token does not decode: {other:?}"),
    }
}
