//! Where credentials live between runs: a trait the host implements, and a store in memory.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

/// What a client holds for one resource at one authorization server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The authorization server that issued them: a client id is only good there.
    pub issuer: String,
    /// The resource (the MCP server's canonical URI) the token is for.
    pub resource: String,
    /// The resource indicator sent with the token requests (RFC 8707): the resource metadata's
    /// `resource`, as written there.
    pub audience: String,
    /// The authorization server's token endpoint (for refreshing).
    pub token_endpoint: String,
    /// The client id the server knows this client by.
    pub client_id: String,
    /// Its secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint.
    pub token_endpoint_auth_method: String,
    /// The access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    /// The refresh token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token is to be refreshed (seconds since the Unix epoch): its expiry less
    /// a margin of 30 s, or half its life when that is shorter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// Keeps [`Credentials`], by resource. Implementations must be cheap to read: the HTTP client
/// reads the current token once per connection setup and after each authorization.
pub trait TokenStore: Send + Sync + 'static {
    /// The credentials kept for `resource`.
    fn load(&self, resource: &str) -> Option<Credentials>;
    /// Keeps `credentials` for their resource.
    fn save(&self, credentials: &Credentials);
    /// Forgets what is kept for `resource`.
    fn forget(&self, resource: &str);
}

/// Credentials in memory, for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryStore(Mutex<HashMap<String, Credentials>>);

impl TokenStore for MemoryStore {
    fn load(&self, resource: &str) -> Option<Credentials> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(resource).cloned()
    }

    fn save(&self, credentials: &Credentials) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(credentials.resource.clone(), credentials.clone());
    }

    fn forget(&self, resource: &str) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(resource);
    }
}
