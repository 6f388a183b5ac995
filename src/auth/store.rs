//! Where credentials live between runs: a trait the host implements, and a store in memory.

use crate::sync::Locked;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
        self.0.locked().get(resource).cloned()
    }

    fn save(&self, credentials: &Credentials) {
        self.0.locked().insert(credentials.resource.clone(), credentials.clone());
    }

    fn forget(&self, resource: &str) {
        self.0.locked().remove(resource);
    }
}

/// Credentials in a JSON file (one object, by resource), readable and writable by its owner
/// only: each save writes the whole file aside and renames it into place. A file that cannot
/// be read is taken as empty (and said so in the log); one that cannot be written is logged.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    kept: Mutex<HashMap<String, Credentials>>,
}

impl FileStore {
    /// The store in `path` (created on the first save, with its folder).
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let kept = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "the token file is not readable; starting empty");
                HashMap::new()
            }),
            Err(_) => HashMap::new(),
        };
        Self { path, kept: Mutex::new(kept) }
    }

    /// Where it is kept.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&self, all: &HashMap<String, Credentials>) -> std::io::Result<()> {
        use std::io::Write as _;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let aside = self.path.with_extension("tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut f = options.open(&aside)?;
        f.write_all(&serde_json::to_vec_pretty(all).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        std::fs::rename(&aside, &self.path)
    }
}

impl TokenStore for FileStore {
    fn load(&self, resource: &str) -> Option<Credentials> {
        self.kept.locked().get(resource).cloned()
    }

    fn save(&self, credentials: &Credentials) {
        let mut all = self.kept.locked();
        all.insert(credentials.resource.clone(), credentials.clone());
        if let Err(e) = self.write(&all) {
            tracing::warn!(path = %self.path.display(), error = %e, "the token file could not be written");
        }
    }

    fn forget(&self, resource: &str) {
        let mut all = self.kept.locked();
        if all.remove(resource).is_some()
            && let Err(e) = self.write(&all)
        {
            tracing::warn!(path = %self.path.display(), error = %e, "the token file could not be written");
        }
    }
}

#[cfg(test)]
mod tests;
