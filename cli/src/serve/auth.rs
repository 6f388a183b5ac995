//! `serve --http --auth-*`: the server as an OAuth 2.1 resource server. Every request needs a
//! bearer token from the named issuer for this server (its audience), checked as a JWT against
//! the issuer's keys or by introspection; the Protected Resource Metadata is served.

use mcpwire::auth::resource::{Introspection, JwtValidator, ResourceServer};

/// How `serve --http` checks tokens (`mcpwire serve --help` lists them under "Authorization").
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Authorization")]
pub struct AuthArgs {
    /// Require a bearer token issued by this authorization server (its issuer identifier,
    /// named in the served metadata; a JWT's `iss` must be it).
    #[arg(long, value_name = "URL")]
    pub auth_issuer: Option<String>,
    /// Check tokens as JWTs against the issuer's keys: a JWKS URL (fetched, kept, fetched again
    /// for an unknown key) or a file holding the JWKS.
    #[arg(
        long,
        value_name = "URL|FILE",
        requires = "auth_issuer",
        conflicts_with = "auth_introspect"
    )]
    pub auth_jwks: Option<String>,
    /// Check tokens at this RFC 7662 introspection endpoint instead.
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_introspect: Option<String>,
    /// The server's own client id at the introspection endpoint.
    #[arg(long, value_name = "ID", requires = "auth_introspect")]
    pub auth_client_id: Option<String>,
    /// Its secret (`${VAR}` read from the environment).
    #[arg(long, value_name = "SECRET", requires = "auth_client_id")]
    pub auth_client_secret: Option<String>,
    /// The server's canonical URI, which tokens must name as their audience (behind a proxy,
    /// the public URL). Default: the URL it serves on, as printed.
    #[arg(long, value_name = "URI", requires = "auth_issuer")]
    pub auth_audience: Option<String>,
    /// A scope every request needs (403 insufficient_scope without it). Repeatable.
    #[arg(long, value_name = "SCOPE", requires = "auth_issuer")]
    pub auth_scope: Vec<String>,
    /// Accept tokens whatever audience they name. Only for an authorization server that
    /// cannot put the resource in its tokens: any token it issues for another server is then
    /// accepted here too.
    #[arg(long, requires = "auth_issuer")]
    pub auth_any_audience: bool,
}

impl AuthArgs {
    /// The resource server these flags describe, for a server reached at `served` (its URL);
    /// `None` without `--auth-issuer`.
    ///
    /// # Errors
    ///
    /// Neither `--auth-jwks` nor `--auth-introspect`, a JWKS file that cannot be read or parsed,
    /// a secret naming an unset variable.
    pub fn resource_server(&self, served: &str) -> Result<Option<ResourceServer>, String> {
        let Some(issuer) = &self.auth_issuer else { return Ok(None) };
        let resource = self.auth_audience.clone().unwrap_or_else(|| served.to_owned());
        let mut rs = if let Some(jwks) = &self.auth_jwks {
            let mut b = JwtValidator::builder(issuer, &resource);
            b = if jwks.starts_with("http://") || jwks.starts_with("https://") {
                b.jwks_url(jwks)
            } else {
                let json = std::fs::read_to_string(jwks)
                    .map_err(|e| format!("--auth-jwks {jwks}: {e}"))?;
                b.jwks_json(&json)
            };
            if self.auth_any_audience {
                b = b.accept_any_audience();
            }
            let v = b.build().map_err(|e| format!("--auth-jwks: {e}"))?;
            ResourceServer::new(&resource, v)
        } else if let Some(endpoint) = &self.auth_introspect {
            let mut b = Introspection::builder(endpoint, &resource).issuer(issuer);
            if let Some(id) = &self.auth_client_id {
                let secret = self
                    .auth_client_secret
                    .as_deref()
                    .map(|s| crate::connect_args::expand(s, &|v| std::env::var(v).ok()))
                    .transpose()
                    .map_err(|e| format!("--auth-client-secret: {e}"))?
                    .unwrap_or_default();
                b = b.client(id, secret);
            }
            if self.auth_any_audience {
                b = b.accept_any_audience();
            }
            let v = b.build().map_err(|e| format!("--auth-introspect: {e}"))?;
            ResourceServer::new(&resource, v)
        } else {
            return Err("--auth-issuer needs --auth-jwks or --auth-introspect".into());
        };
        rs = rs.authorization_server(issuer);
        for s in &self.auth_scope {
            rs = rs.require_scope(s);
        }
        Ok(Some(rs))
    }
}
