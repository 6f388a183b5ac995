//! [`Principal`]: who is on the other side, as the transport vouched for it (an OAuth access
//! token the HTTP server checked), handed to handlers through their
//! [`Context`](super::Context).

use std::time::SystemTime;

/// The caller an access token names: its subject, the client it was issued to, and its scopes.
///
/// Made by a token validator (the HTTP server's resource-server guard); a handler reads it with
/// [`Context::principal`](super::Context::principal). Nothing here is a secret: the token
/// itself is never kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// `sub`: who the token was issued for (`None` for a client acting on its own behalf,
    /// with no subject named).
    pub subject: Option<String>,
    /// `client_id` (or `azp`): the client the token was issued to.
    pub client_id: Option<String>,
    /// `iss`: the authorization server that issued the token.
    pub issuer: Option<String>,
    /// The token's scopes.
    pub scopes: Vec<String>,
    /// `exp`: when the token expires.
    pub expires_at: Option<SystemTime>,
}

impl Principal {
    /// A principal naming `subject`, with no scopes.
    #[must_use]
    pub fn new(subject: Option<String>) -> Self {
        Self { subject, ..Self::default() }
    }

    /// Sets the client the token was issued to.
    #[must_use]
    pub fn with_client_id(mut self, client_id: Option<String>) -> Self {
        self.client_id = client_id;
        self
    }

    /// Sets the issuer.
    #[must_use]
    pub fn with_issuer(mut self, issuer: Option<String>) -> Self {
        self.issuer = issuer;
        self
    }

    /// Sets the scopes, from a space-separated `scope` value (RFC 6749 §3.3).
    #[must_use]
    pub fn with_scope(mut self, scope: &str) -> Self {
        self.scopes = scope.split_ascii_whitespace().map(str::to_owned).collect();
        self
    }

    /// Sets when the token expires.
    #[must_use]
    pub fn with_expiry(mut self, at: Option<SystemTime>) -> Self {
        self.expires_at = at;
        self
    }

    /// Whether the token carries `scope`.
    #[must_use]
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// The scopes of `wanted` the token does not carry.
    pub fn missing<'a>(&self, wanted: &'a [String]) -> impl Iterator<Item = &'a str> {
        wanted.iter().filter(|w| !self.has_scope(w)).map(String::as_str)
    }

    /// Whether `other` names the same caller: the same issuer, subject and client. A legacy
    /// session is bound to the caller that opened it by this test.
    #[must_use]
    pub fn same_caller(&self, other: &Self) -> bool {
        self.issuer == other.issuer
            && self.subject == other.subject
            && self.client_id == other.client_id
    }
}
