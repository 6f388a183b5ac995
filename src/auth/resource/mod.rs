//! The resource server's half of MCP's authorization: which tokens a guarded
//! [`HttpServer`](crate::http::HttpServer) accepts, what it says to a client that brings none or
//! a bad one, and the Protected Resource Metadata (RFC 9728) that tells the client where to get
//! one.
//!
//! A [`ResourceServer`] names the server's canonical resource URI, its authorization servers and
//! the scopes every request needs, and checks each request's bearer token with a
//! [`TokenValidator`]: [`JwtValidator`] (signed JWTs checked against the authorization server's
//! JWKS) and [`Introspection`] (RFC 7662) are provided; a host may bring its own. A token is
//! taken from the `Authorization` header only (one in the query string is refused), checked, and
//! never sent anywhere.

use crate::limits::DEFAULT_MAX_TOKEN_BYTES;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use url::Url;

use super::discovery::{Challenge, ResourceMetadata};
use crate::peer::principal::Principal;

mod cache;
mod introspect;
mod jwt;

pub use introspect::{Introspection, IntrospectionBuilder};
pub use jwt::{JwtValidator, JwtValidatorBuilder};

/// A boxed future, as [`TokenValidator`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Checks a bearer token and says whose it is. Implement it to check tokens a way of your own;
/// [`JwtValidator`] and [`Introspection`] are provided.
pub trait TokenValidator: Send + Sync + 'static {
    /// The principal `token` names, or why it is refused. It must check that the token was
    /// issued for this resource (its audience), unless the host chose otherwise.
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>>;
}

/// Why a token was not accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The token is malformed, expired, not yet valid, wrongly signed, for another audience or
    /// issuer, or revoked: the client gets 401 `invalid_token`.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// The token could not be checked now (the JWKS or the introspection endpoint cannot be
    /// reached, and nothing kept answers for it): the client gets 503.
    #[error("the token cannot be checked now: {0}")]
    Unavailable(String),
}

/// Why a request was refused, and what the client is told.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// No `Authorization: Bearer` header: 401, with the metadata URL and the scopes needed.
    Missing,
    /// A token in the query string (`access_token`): 400. It is not read.
    TokenInQuery,
    /// A bad token: 401 `invalid_token`.
    Invalid(String),
    /// A good token without every scope asked for: 403 `insufficient_scope`, naming them.
    InsufficientScope(Vec<String>),
    /// The token cannot be checked now: 503.
    Unavailable(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => f.write_str("Unauthorized: a bearer token is required"),
            Self::TokenInQuery => f.write_str(
                "Bad Request: an access token is taken in the Authorization header only",
            ),
            Self::Invalid(why) => write!(f, "Unauthorized: {why}"),
            Self::InsufficientScope(s) => {
                write!(f, "Forbidden: the token lacks the scope {}", s.join(" "))
            }
            Self::Unavailable(why) => write!(f, "Service Unavailable: {why}"),
        }
    }
}

/// A resource server's settings: its canonical URI, who issues its tokens, what scopes it
/// needs, and the validator that checks them. Given to
/// [`HttpServer::auth`](crate::http::HttpServer::auth).
#[derive(Clone)]
pub struct ResourceServer {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required: Vec<String>,
    metadata_url: Option<String>,
    max_token_bytes: usize,
    validator: Arc<dyn TokenValidator>,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// A resource server whose canonical URI is `resource` (the URL clients reach the MCP
    /// endpoint at, as they write it: `https://mcp.example.com/mcp`; behind a proxy, the
    /// public URL, not the one the server listens on) and whose tokens `validator` checks.
    #[must_use]
    pub fn new(resource: impl Into<String>, validator: impl TokenValidator) -> Self {
        Self::with_validator(resource, Arc::new(validator))
    }

    /// As [`new`](Self::new), with a validator already shared.
    #[must_use]
    pub fn with_validator(resource: impl Into<String>, validator: Arc<dyn TokenValidator>) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required: Vec::new(),
            metadata_url: None,
            max_token_bytes: DEFAULT_MAX_TOKEN_BYTES,
            validator,
        }
    }

    /// Names an authorization server (its issuer identifier) in the metadata; repeatable.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// A scope every request needs: a token without it gets 403 `insufficient_scope`.
    /// Repeatable; each is also listed in the metadata's `scopes_supported`.
    #[must_use]
    pub fn require_scope(mut self, scope: impl Into<String>) -> Self {
        let scope = scope.into();
        if !self.scopes_supported.contains(&scope) {
            self.scopes_supported.push(scope.clone());
        }
        self.required.push(scope);
        self
    }

    /// A scope the server uses (a tool's, say) that not every request needs: listed in the
    /// metadata's `scopes_supported`. Repeatable.
    #[must_use]
    pub fn scope_supported(mut self, scope: impl Into<String>) -> Self {
        let scope = scope.into();
        if !self.scopes_supported.contains(&scope) {
            self.scopes_supported.push(scope);
        }
        self
    }

    /// Where clients are told the metadata is (`resource_metadata` of the challenge), when it
    /// is not the well-known URL derived from the resource URI (a proxy that serves it
    /// elsewhere).
    #[must_use]
    pub fn metadata_url(mut self, url: impl Into<String>) -> Self {
        self.metadata_url = Some(url.into());
        self
    }

    /// The bound on a token's length ([`DEFAULT_MAX_TOKEN_BYTES`]).
    #[must_use]
    pub fn max_token_bytes(mut self, n: usize) -> Self {
        self.max_token_bytes = n.max(1);
        self
    }

    /// The canonical resource URI.
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The scopes every request needs.
    #[must_use]
    pub fn required_scopes(&self) -> &[String] {
        &self.required
    }

    /// The Protected Resource Metadata document.
    #[must_use]
    pub fn metadata(&self) -> ResourceMetadata {
        ResourceMetadata {
            resource: self.resource.clone(),
            authorization_servers: self.authorization_servers.clone(),
            scopes_supported: (!self.scopes_supported.is_empty())
                .then(|| self.scopes_supported.clone()),
            bearer_methods_supported: vec!["header".into()],
        }
    }

    /// The metadata's well-known path for the resource URI's path (RFC 9728 §3.1:
    /// `/.well-known/oauth-protected-resource` then the path), or the root one.
    #[must_use]
    pub fn metadata_path(&self) -> String {
        let path = Url::parse(&self.resource).map(|u| u.path().to_owned()).unwrap_or_default();
        format!("{WELL_KNOWN}{}", path.trim_end_matches('/'))
    }

    /// The metadata URL clients are sent to.
    #[must_use]
    pub fn metadata_location(&self) -> String {
        if let Some(u) = &self.metadata_url {
            return u.clone();
        }
        match Url::parse(&self.resource) {
            Ok(mut u) => {
                u.set_query(None);
                u.set_fragment(None);
                u.set_path(&self.metadata_path());
                u.to_string()
            }
            Err(_) => self.metadata_path(),
        }
    }

    /// Whether `path` is one the metadata is served at: the resource's own well-known path,
    /// the one for the endpoint's path (`endpoint`, when a proxy maps another path to it), and
    /// the root one.
    #[must_use]
    pub fn serves_metadata_at(&self, path: &str, endpoint: &str) -> bool {
        path == WELL_KNOWN
            || path == self.metadata_path()
            || path.strip_prefix(WELL_KNOWN) == Some(endpoint.trim_end_matches('/'))
    }

    /// The `WWW-Authenticate` value for a refusal (401 and 403 carry one).
    #[must_use]
    pub fn challenge(&self, refusal: &Refusal) -> Option<String> {
        let scope = |s: &[String]| (!s.is_empty()).then(|| s.join(" "));
        let mut c = Challenge {
            resource_metadata: Some(self.metadata_location()),
            scope: scope(&self.required),
            error: None,
        };
        match refusal {
            Refusal::Missing => {}
            Refusal::Invalid(_) => c.error = Some("invalid_token".into()),
            Refusal::InsufficientScope(wanted) => {
                c.error = Some("insufficient_scope".into());
                c.scope = scope(wanted);
            }
            Refusal::TokenInQuery | Refusal::Unavailable(_) => return None,
        }
        Some(c.to_string())
    }

    /// Checks a request: its `Authorization` header value and its query string.
    ///
    /// # Errors
    ///
    /// The [`Refusal`] the client gets.
    pub async fn check(
        &self,
        authorization: Option<&[u8]>,
        query: Option<&str>,
    ) -> Result<Principal, Refusal> {
        if query.is_some_and(has_token_parameter) {
            return Err(Refusal::TokenInQuery);
        }
        let Some(value) = authorization else { return Err(Refusal::Missing) };
        let token = bearer(value).ok_or(Refusal::Missing)?;
        if token.len() > self.max_token_bytes {
            return Err(Refusal::Invalid(format!(
                "the token is longer than {} bytes",
                self.max_token_bytes
            )));
        }
        let principal = self.validator.validate(token).await.map_err(|e| match e {
            TokenError::Invalid(why) => Refusal::Invalid(why),
            TokenError::Unavailable(why) => Refusal::Unavailable(why),
        })?;
        Self::allows(&principal, &self.required)?;
        Ok(principal)
    }

    /// Whether `principal` may use something that needs `scopes`: `Err` with the scopes to
    /// ask for (403 `insufficient_scope`) when it lacks one.
    ///
    /// # Errors
    ///
    /// [`Refusal::InsufficientScope`], naming the scopes the token has and those it lacks.
    pub fn allows(principal: &Principal, scopes: &[String]) -> Result<(), Refusal> {
        let missing: Vec<String> = principal.missing(scopes).map(str::to_owned).collect();
        if missing.is_empty() {
            return Ok(());
        }
        // Step-up asks for what it has and what it lacks (the union), so a client that
        // authorizes again with it keeps the scopes it had.
        let mut wanted = principal.scopes.clone();
        wanted.extend(missing);
        Err(Refusal::InsufficientScope(wanted))
    }
}

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The token of an `Authorization: Bearer TOKEN` value (the scheme in any case, RFC 7235);
/// `None` for another scheme, an empty token or bytes a token cannot hold (RFC 6750's
/// `b64token`).
fn bearer(value: &[u8]) -> Option<&str> {
    let value = std::str::from_utf8(value).ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim_start_matches(' ');
    let b64token =
        |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/');
    let body = token.trim_end_matches('=');
    (!body.is_empty() && body.bytes().all(b64token)).then_some(token)
}

/// Whether a query string carries `access_token` (RFC 6750 §2.3, which MCP forbids).
fn has_token_parameter(query: &str) -> bool {
    url::form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "access_token")
}

#[cfg(test)]
mod tests;
