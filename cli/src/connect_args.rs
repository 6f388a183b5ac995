//! The options that say how the tool connects to an HTTP server beyond its URL (the caller's
//! headers, TLS, OAuth: `--header … --cacert … --oauth`), turned into the library's
//! `ConnectOptions`; shared by `load`, `load init`, `login` and `bridge --reverse`.

use std::path::{Path, PathBuf};

use mcpwire::tls::{ClientTls, Roots};
use mcpwire::transport::ConnectOptions;

/// `--header`, `--cacert`, `--cert`, `--key`, `--tls-roots`, `--insecure-skip-tls-verify`.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "HTTP and TLS")]
pub struct ConnectArgs {
    /// A header sent with every HTTP request, `Name: value` (repeatable). `${VAR}` in the value
    /// is read from the environment, so a token need not sit in the shell's history
    /// (`--header 'Authorization: Bearer ${TOKEN}'`, single-quoted); `@FILE` reads one header
    /// per line from FILE.
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE | @FILE")]
    pub headers: Vec<String>,
    /// Also trust the CA certificates in this PEM file for https:// (repeatable).
    #[arg(long, value_name = "PEM")]
    pub cacert: Vec<PathBuf>,
    /// The client certificate (PEM chain) shown to a server that asks for one (mutual TLS).
    #[arg(long, value_name = "PEM", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(long, value_name = "PEM", requires = "cert")]
    pub key: Option<PathBuf>,
    /// The roots trusted for https:// besides --cacert: webpki (compiled in, the default),
    /// platform (the system's store) or none.
    #[arg(long, value_name = "ROOTS", default_value = "webpki")]
    pub tls_roots: Roots,
    /// For test rigs only: accept any server certificate (any issuer, any name). The traffic is
    /// still encrypted, but to whoever answers.
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
    /// Authorize with OAuth 2.1 when an HTTP server answers 401: the tokens of `mcpwire login`
    /// (kept in the per-user cache) are used and refreshed, and when there are none the flow
    /// runs (the authorization URL is printed; the browser's redirect is awaited on the
    /// --oauth-redirect port).
    #[arg(long)]
    pub oauth: bool,
    /// A client id registered beforehand (else the authorization server's dynamic
    /// registration). Each --oauth-* option implies --oauth.
    #[arg(long, value_name = "ID")]
    pub oauth_client_id: Option<String>,
    /// The secret of --oauth-client-id (`${VAR}` read from the environment).
    #[arg(long, value_name = "SECRET", requires = "oauth_client_id")]
    pub oauth_client_secret: Option<String>,
    /// Scopes to ask for when the server names none.
    #[arg(long, value_name = "SCOPES")]
    pub oauth_scope: Option<String>,
    /// The redirect URI registered for this client: a loopback http:// URI to listen on.
    #[arg(long, value_name = "URI", default_value = DEFAULT_REDIRECT)]
    pub oauth_redirect: String,
    /// For test rigs: the authorization step follows the authorization endpoint's redirect
    /// itself (an authorization server that approves without a user) instead of a browser.
    #[arg(long)]
    pub oauth_headless: bool,
    /// Where tokens are kept (default: $XDG_CACHE_HOME/mcpwire/tokens.json, else
    /// ~/.cache/mcpwire/tokens.json; owner-only).
    #[arg(long, value_name = "FILE")]
    pub oauth_token_file: Option<PathBuf>,
}

/// The redirect URI `--oauth` registers by default.
pub const DEFAULT_REDIRECT: &str = "http://127.0.0.1:8976/callback";

impl ConnectArgs {
    /// What these flags add to `options`.
    ///
    /// # Errors
    ///
    /// A header that is not `Name: value`, names a variable that is not set or a file that
    /// cannot be read, or TLS files that cannot be used.
    pub fn apply(&self, mut options: ConnectOptions) -> Result<ConnectOptions, String> {
        for spec in &self.headers {
            for (name, value) in headers_of(spec)? {
                options = options.header(name, value);
            }
        }
        let default = Self::default();
        let tls_asked = !self.cacert.is_empty()
            || self.cert.is_some()
            || self.tls_roots != default.tls_roots
            || self.insecure_skip_tls_verify;
        let tls = if tls_asked { Some(self.tls().map_err(|e| e.to_string())?) } else { None };
        if let Some(tls) = &tls {
            options = options.tls(tls.clone());
        }
        let oauth = self.oauth
            || self.oauth_client_id.is_some()
            || self.oauth_scope.is_some()
            || self.oauth_headless
            || self.oauth_token_file.is_some();
        if oauth {
            options = options.oauth(self.oauth_client(tls)?);
        }
        Ok(options)
    }

    /// Where `--oauth` keeps tokens.
    pub fn token_file(&self) -> PathBuf {
        self.oauth_token_file.clone().unwrap_or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap_or_else(std::env::temp_dir);
            cache.join("mcpwire").join("tokens.json")
        })
    }

    fn oauth_client(&self, tls: Option<ClientTls>) -> Result<mcpwire::auth::OAuth, String> {
        use mcpwire::auth::{FileStore, FollowRedirect, Loopback, OAuth};
        let name = format!("mcpwire {}", env!("CARGO_PKG_VERSION"));
        let store = FileStore::new(self.token_file());
        let mut b = if self.oauth_headless {
            OAuth::builder(name, &self.oauth_redirect, FollowRedirect)
        } else {
            let agent = Loopback::new(|url| {
                eprintln!("mcpwire: authorize in a browser (waiting for its redirect):\n  {url}");
            });
            OAuth::builder(name, &self.oauth_redirect, agent)
        };
        b = b.store(store);
        if let Some(tls) = tls {
            b = b.tls(tls);
        }
        if let Some(id) = &self.oauth_client_id {
            let secret = self
                .oauth_client_secret
                .as_deref()
                .map(|s| expand(s, &|v| std::env::var(v).ok()))
                .transpose()
                .map_err(|why| format!("--oauth-client-secret: {why}"))?;
            b = b.client(id, secret);
        }
        if let Some(scope) = &self.oauth_scope {
            b = b.scope(scope);
        }
        b.build().map_err(|e| e.to_string())
    }

    fn tls(&self) -> Result<ClientTls, mcpwire::tls::TlsError> {
        let mut b = ClientTls::builder()
            .roots(self.tls_roots)
            .danger_skip_verification(self.insecure_skip_tls_verify);
        for ca in &self.cacert {
            b = b.add_ca_pem_file(ca)?;
        }
        if let (Some(cert), Some(key)) = (&self.cert, &self.key) {
            b = b.identity_pem_files(cert, key)?;
        }
        if self.insecure_skip_tls_verify {
            eprintln!("mcpwire: --insecure-skip-tls-verify: server certificates are NOT checked");
        }
        b.build()
    }
}

type Header = (http::HeaderName, http::HeaderValue);

/// The headers `spec` gives: one `Name: value`, or `@FILE`'s lines.
fn headers_of(spec: &str) -> Result<Vec<Header>, String> {
    match spec.strip_prefix('@') {
        Some(path) => {
            let text = std::fs::read_to_string(Path::new(path))
                .map_err(|e| format!("--header @{path}: {e}"))?;
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|l| header(l, &|v| std::env::var(v).ok()))
                .collect()
        }
        None => Ok(vec![header(spec, &|v| std::env::var(v).ok())?]),
    }
}

/// `Name: value`, `${VAR}` in the value read through `env`.
pub fn header(line: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Header, String> {
    let bad = |why: &str| format!("--header `{}`: {why}", redacted(line));
    let (name, value) = line.split_once(':').ok_or_else(|| bad("expected `Name: value`"))?;
    let name = http::HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| bad("not a header name"))?;
    let value = expand(value.trim(), env).map_err(|why| bad(&why))?;
    let value = http::HeaderValue::from_str(&value)
        .map_err(|_| bad("the value holds a byte a header cannot carry"))?;
    Ok((name, value))
}

/// `text` with each `${VAR}` replaced by the variable's value.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after.find('}').ok_or("an unclosed ${")?;
        let var = &after[..end];
        out.push_str(&env(var).ok_or_else(|| format!("${{{var}}} is not set"))?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A header line fit for an error message: the name, never the value (it may be a secret).
fn redacted(line: &str) -> String {
    match line.split_once(':') {
        Some((name, _)) => format!("{}: …", name.trim()),
        None => "…".to_owned(),
    }
}

#[cfg(test)]
mod tests;
