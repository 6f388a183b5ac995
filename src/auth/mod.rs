//! The OAuth 2.1 client MCP's authorization asks of a client (feature `oauth`): on a 401, find
//! the server's authorization server, register, run the authorization code flow with PKCE, and
//! send the token it gets; refresh it; step up on 403 `insufficient_scope`.
//!
//! [`OAuth`] is handed to the HTTP client ([`HttpClient::oauth`](crate::http::HttpClient::oauth),
//! `ClientBuilder::oauth`); it is shared by every connection made with it and keeps one set of
//! credentials per authorization server and resource.
//!
//! **What it fetches on its own**, and nothing else: the Protected Resource Metadata (the
//! `resource_metadata` URL of the server's challenge, else the server's well-known URLs, on the
//! server's own origin), the metadata of the authorization server that document names (its
//! well-known URLs), and that server's registration and token endpoints. Each fetch is bounded
//! in time and size, follows no redirect, and a document that names another resource or
//! another issuer than asked for is refused. The authorization URL itself is never fetched by
//! the library: it goes to the host's [`UserAgent`] (a browser, or [`FollowRedirect`] for test
//! rigs). The token is only ever sent in the `Authorization` header, and only to the resource
//! it was issued for.

use crate::limits::DEFAULT_FETCH_TIMEOUT;
use crate::limits::DEFAULT_MAX_DOCUMENT_BYTES;
use crate::limits::DEFAULT_MAX_STEP_UPS;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

mod approval;
mod discovery;
mod fetch;
pub(crate) mod flow;
pub mod resource;
mod store;

pub use approval::{FollowRedirect, Loopback};
pub use discovery::{Challenge, ResourceMetadata, ServerMetadata, canonical_resource};
pub use store::{Credentials, FileStore, MemoryStore, TokenStore};

use crate::tls::ClientTls;

/// Why authorizing failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A fetch failed (no connection, no answer in time, too large).
    #[error("{what}: {url}: {why}")]
    Fetch {
        /// What was fetched.
        what: String,
        /// Where.
        url: String,
        /// Why it failed.
        why: String,
    },
    /// An answer with an unexpected status.
    #[error("{what}: HTTP {status}")]
    Status {
        /// What was asked for.
        what: String,
        /// The status.
        status: u16,
    },
    /// A document or answer that is not what the protocol says.
    #[error("{0}")]
    Invalid(String),
    /// The Protected Resource Metadata names another resource than the server's.
    #[error("the protected resource metadata is for {resource}, not {server}: refused")]
    ResourceMismatch {
        /// What the document names.
        resource: String,
        /// The server's canonical URI.
        server: String,
    },
    /// The authorization server's metadata, or its authorization response, names another
    /// issuer than the one asked for.
    #[error("issuer mismatch: expected {expected}, got {got}: refused")]
    IssuerMismatch {
        /// The issuer asked for.
        expected: String,
        /// The one found.
        got: String,
    },
    /// The authorization server does not offer PKCE with S256.
    #[error("the authorization server does not support PKCE with S256: refused")]
    NoPkce,
    /// No way to register: no client id given, no metadata document support, no registration
    /// endpoint.
    #[error("no way to register with {0}: give a client id")]
    NoRegistration(String),
    /// The authorization server answered the authorization request with an error.
    #[error("authorization refused: {0}")]
    Denied(String),
    /// The user agent could not complete the authorization step.
    #[error("the user agent: {0}")]
    UserAgent(String),
}

/// The user-agent step: shows the authorization URL to the user and returns the URL the
/// authorization server redirected back to (the `redirect_uri` with `code`, `state` and maybe
/// `iss`).
pub trait UserAgent: Send + Sync + 'static {
    /// Authorizes at `url`; returns the redirect it ended with.
    fn authorize<'a>(
        &'a self,
        url: &'a Url,
    ) -> Pin<Box<dyn Future<Output = Result<Url, AuthError>> + Send + 'a>>;
}

/// What a client tells the authorization server about itself, and what it was given.
#[derive(Clone, Debug)]
pub struct ClientIdentity {
    /// `client_name` in a registration.
    pub name: String,
    /// Where the authorization server sends the user back.
    pub redirect_uri: String,
    /// A client id registered beforehand (with its secret for a confidential client).
    pub client_id: Option<String>,
    /// The secret of `client_id`.
    pub client_secret: Option<String>,
    /// How `client_id` authenticates at the token endpoint (`none`, `client_secret_basic`,
    /// `client_secret_post`); chosen from the server's metadata when not given.
    pub token_endpoint_auth_method: Option<String>,
    /// The URL of this client's metadata document, used as its client id where the server
    /// supports Client ID Metadata Documents.
    pub metadata_url: Option<String>,
    /// Scopes to ask for when neither the challenge nor the resource names any.
    pub scope: Option<String>,
}

/// The OAuth client: how to authorize, and the credentials it holds. `Clone`: the clones
/// share the credentials.
#[derive(Clone)]
pub struct OAuth(pub(crate) Arc<flow::Flow>);

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth").field("client", &self.0.identity.name).finish_non_exhaustive()
    }
}

/// Builds an [`OAuth`].
pub struct OAuthBuilder {
    identity: ClientIdentity,
    user_agent: Arc<dyn UserAgent>,
    store: Arc<dyn TokenStore>,
    tls: Option<ClientTls>,
    max_document_bytes: usize,
    timeout: Duration,
    max_step_ups: u32,
}

impl OAuth {
    /// A client named `name` whose authorization step is `user_agent`, redirected back to
    /// `redirect_uri`.
    #[must_use]
    pub fn builder(
        name: impl Into<String>,
        redirect_uri: impl Into<String>,
        user_agent: impl UserAgent,
    ) -> OAuthBuilder {
        OAuthBuilder {
            identity: ClientIdentity {
                name: name.into(),
                redirect_uri: redirect_uri.into(),
                client_id: None,
                client_secret: None,
                token_endpoint_auth_method: None,
                metadata_url: None,
                scope: None,
            },
            user_agent: Arc::new(user_agent),
            store: Arc::new(MemoryStore::default()),
            tls: None,
            max_document_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
            timeout: DEFAULT_FETCH_TIMEOUT,
            max_step_ups: DEFAULT_MAX_STEP_UPS,
        }
    }
}

impl OAuthBuilder {
    /// A client registered beforehand: its id, and its secret for a confidential client.
    #[must_use]
    pub fn client(mut self, id: impl Into<String>, secret: Option<String>) -> Self {
        self.identity.client_id = Some(id.into());
        self.identity.client_secret = secret;
        self
    }

    /// How the pre-registered client authenticates at the token endpoint.
    #[must_use]
    pub fn token_endpoint_auth_method(mut self, method: impl Into<String>) -> Self {
        self.identity.token_endpoint_auth_method = Some(method.into());
        self
    }

    /// This client's metadata document URL (a Client ID Metadata Document).
    #[must_use]
    pub fn metadata_url(mut self, url: impl Into<String>) -> Self {
        self.identity.metadata_url = Some(url.into());
        self
    }

    /// Scopes to ask for when the server names none.
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.identity.scope = Some(scope.into());
        self
    }

    /// Where credentials are kept ([`MemoryStore`] by default).
    #[must_use]
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// TLS for the metadata and authorization server fetches (the webpki roots by default).
    #[must_use]
    pub fn tls(mut self, tls: ClientTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The bound on each document or answer read ([`DEFAULT_MAX_DOCUMENT_BYTES`]).
    #[must_use]
    pub fn max_document_bytes(mut self, n: usize) -> Self {
        self.max_document_bytes = n.max(1);
        self
    }

    /// The bound on each exchange ([`DEFAULT_FETCH_TIMEOUT`]).
    #[must_use]
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Step-ups one request may go through ([`DEFAULT_MAX_STEP_UPS`]).
    #[must_use]
    pub fn max_step_ups(mut self, n: u32) -> Self {
        self.max_step_ups = n;
        self
    }

    /// The client.
    ///
    /// # Errors
    ///
    /// When the TLS configuration cannot be built.
    pub fn build(self) -> Result<OAuth, AuthError> {
        let fetch = fetch::Fetcher::new(self.tls.as_ref(), self.timeout, self.max_document_bytes)?;
        Ok(OAuth(Arc::new(flow::Flow::new(
            self.identity,
            self.user_agent,
            self.store,
            fetch,
            self.max_step_ups,
        ))))
    }
}
