//! [`Introspection`]: opaque access tokens checked by asking the authorization server (RFC
//! 7662), the answers kept for a while, the requests in flight bounded.

use crate::limits::DEFAULT_FETCH_TIMEOUT;
use crate::limits::DEFAULT_INTROSPECTION_CACHE;
use crate::limits::DEFAULT_MAX_DOCUMENT_BYTES;
use crate::limits::DEFAULT_MAX_INTROSPECTIONS;
use crate::limits::DEFAULT_TOKEN_CACHE_ENTRIES;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use tokio::sync::Semaphore;
use url::Url;

use super::cache::{TokenCache, key};
use super::{BoxFuture, TokenError, TokenValidator};
use crate::auth::AuthError;
use crate::auth::fetch::Fetcher;
use crate::peer::principal::Principal;
use crate::tls::ClientTls;

/// How long a token the server called inactive is remembered as such: a client retrying with
/// it does not reach the authorization server again at once.
const INACTIVE_KEPT: Duration = Duration::from_secs(10);

/// Checks tokens at the authorization server's introspection endpoint (RFC 7662): `active`,
/// then `iss` when the server names one, `aud` against the canonical resource URI (unless
/// [`accept_any_audience`](IntrospectionBuilder::accept_any_audience)), `exp` and `nbf`.
/// Answers are kept ([`DEFAULT_INTROSPECTION_CACHE`], and never past the token's `exp`), and at
/// most [`DEFAULT_MAX_INTROSPECTIONS`] requests are in flight. Cheap to clone.
#[derive(Clone)]
pub struct Introspection(Arc<Inner>);

struct Inner {
    endpoint: Url,
    client: Option<(String, String)>,
    issuer: Option<String>,
    audience: Option<String>,
    keep: Duration,
    fetch: Fetcher,
    in_flight: Semaphore,
    cache: TokenCache,
}

/// Builds an [`Introspection`] validator.
pub struct IntrospectionBuilder {
    endpoint: String,
    audience: Option<String>,
    client: Option<(String, String)>,
    issuer: Option<String>,
    keep: Duration,
    max_in_flight: usize,
    cache_entries: usize,
    tls: Option<ClientTls>,
    timeout: Duration,
    max_bytes: usize,
}

impl Introspection {
    /// A validator that asks `endpoint` about each token, for tokens whose audience must be
    /// `audience` (the resource server's canonical URI).
    #[must_use]
    pub fn builder(
        endpoint: impl Into<String>,
        audience: impl Into<String>,
    ) -> IntrospectionBuilder {
        IntrospectionBuilder {
            endpoint: endpoint.into(),
            audience: Some(audience.into()),
            client: None,
            issuer: None,
            keep: DEFAULT_INTROSPECTION_CACHE,
            max_in_flight: DEFAULT_MAX_INTROSPECTIONS,
            cache_entries: DEFAULT_TOKEN_CACHE_ENTRIES,
            tls: None,
            timeout: DEFAULT_FETCH_TIMEOUT,
            max_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
        }
    }
}

impl IntrospectionBuilder {
    /// The resource server's own credentials at the endpoint (HTTP Basic).
    #[must_use]
    pub fn client(mut self, id: impl Into<String>, secret: impl Into<String>) -> Self {
        self.client = Some((id.into(), secret.into()));
        self
    }

    /// The issuer the answers must name, when they name one.
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// **Turns the audience check off**: an active token is accepted whatever its `aud` names,
    /// or when the answer names none. Only for an authorization server that does not say
    /// whom its tokens are for.
    #[must_use]
    pub fn accept_any_audience(mut self) -> Self {
        self.audience = None;
        self
    }

    /// How long an answer is kept ([`DEFAULT_INTROSPECTION_CACHE`]; never past `exp`).
    #[must_use]
    pub fn cache_for(mut self, t: Duration) -> Self {
        self.keep = t;
        self
    }

    /// How many answers are kept ([`DEFAULT_TOKEN_CACHE_ENTRIES`]; 0: none).
    #[must_use]
    pub fn cache_entries(mut self, n: usize) -> Self {
        self.cache_entries = n;
        self
    }

    /// How many introspection requests may be in flight at once
    /// ([`DEFAULT_MAX_INTROSPECTIONS`]); the others wait.
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// TLS settings for reaching the endpoint (extra CAs).
    #[must_use]
    pub fn tls(mut self, tls: ClientTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Bounds on one exchange: its time ([`DEFAULT_FETCH_TIMEOUT`]) and the answer's size
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
    /// An endpoint that is not a URL, or TLS settings that do not load.
    pub fn build(self) -> Result<Introspection, AuthError> {
        let endpoint = Url::parse(&self.endpoint)
            .map_err(|e| AuthError::Invalid(format!("introspection endpoint: {e}")))?;
        Ok(Introspection(Arc::new(Inner {
            endpoint,
            client: self.client,
            issuer: self.issuer,
            audience: self.audience,
            keep: self.keep,
            fetch: Fetcher::new(self.tls.as_ref(), self.timeout, self.max_bytes)?,
            in_flight: Semaphore::new(self.max_in_flight),
            cache: TokenCache::new(self.cache_entries),
        })))
    }
}

impl TokenValidator for Introspection {
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>> {
        Box::pin(self.0.validate(token))
    }
}

/// An introspection answer (RFC 7662 §2.2), what is read of it.
#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    nbf: Option<u64>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    aud: Option<Audience>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn names(&self, aud: &str) -> bool {
        match self {
            Self::One(a) => a == aud,
            Self::Many(all) => all.iter().any(|a| a == aud),
        }
    }
}

impl Inner {
    async fn validate(&self, token: &str) -> Result<Principal, TokenError> {
        let cache_key = key(token);
        if let Some(known) = self.cache.get(&cache_key) {
            return known.map_err(TokenError::Invalid);
        }
        let _permit = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| TokenError::Unavailable("introspection is closed".into()))?;
        // Another request with the same token may have been answered while this one waited.
        if let Some(known) = self.cache.get(&cache_key) {
            return known.map_err(TokenError::Invalid);
        }
        let basic = self.client.as_ref().map(|(id, secret)| (id.as_str(), secret.as_str()));
        let answer = self
            .fetch
            .post_form(
                &self.endpoint,
                &[("token", token), ("token_type_hint", "access_token")],
                basic,
                "token introspection",
            )
            .await
            .and_then(|a| a.decode::<Answer>("token introspection"))
            .map_err(|e| TokenError::Unavailable(e.to_string()))?;
        let outcome = self.judge(answer);
        let keep = if outcome.is_ok() { self.keep } else { INACTIVE_KEPT.min(self.keep) };
        self.cache.put(cache_key, outcome.clone(), keep);
        outcome.map_err(TokenError::Invalid)
    }

    fn judge(&self, a: Answer) -> Result<Principal, String> {
        if !a.active {
            return Err("the token is not active".into());
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        if a.exp.is_some_and(|exp| exp <= now) {
            return Err("the token has expired".into());
        }
        if a.nbf.is_some_and(|nbf| nbf > now) {
            return Err("the token is not valid yet (nbf)".into());
        }
        if let (Some(want), Some(got)) = (&self.issuer, &a.iss)
            && want != got
        {
            return Err("the token was issued by another server (iss)".into());
        }
        if let Some(resource) = &self.audience
            && !a.aud.as_ref().is_some_and(|aud| aud.names(resource))
        {
            return Err("the token was not issued for this resource (aud)".into());
        }
        Ok(Principal::new(a.sub)
            .with_client_id(a.client_id)
            .with_issuer(a.iss)
            .with_scope(a.scope.as_deref().unwrap_or(""))
            .with_expiry(a.exp.map(|s| UNIX_EPOCH + Duration::from_secs(s))))
    }
}
