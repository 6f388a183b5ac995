//! Finding who protects a server: the `WWW-Authenticate` challenge, the Protected Resource
//! Metadata (RFC 9728) and the authorization server's metadata (RFC 8414, OpenID Connect
//! Discovery), each looked for in the order MCP's authorization specification gives, and each
//! checked before it is used.

use serde::Deserialize;
use url::Url;

use super::AuthError;
use super::fetch::Fetcher;

/// A `Bearer` challenge of a `WWW-Authenticate` header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the Protected Resource Metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the resource asks for.
    pub scope: Option<String>,
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
}

impl Challenge {
    /// The `Bearer` challenge among those of a `WWW-Authenticate` value, if any.
    #[must_use]
    pub fn parse(header: &str) -> Option<Self> {
        let at = find_scheme(header, "bearer")?;
        let mut rest = &header[at + "bearer".len()..];
        let mut out = Self::default();
        loop {
            rest = rest.trim_start_matches([' ', '\t', ',']);
            let Some(eq) = rest.find('=') else { break };
            let name = rest[..eq].trim();
            // Another scheme begins (`Basic realm=…`): this challenge has ended.
            if name.contains(' ') {
                break;
            }
            rest = rest[eq + 1..].trim_start();
            let (value, after) = if let Some(quoted) = rest.strip_prefix('"') {
                unquote(quoted)?
            } else {
                let end = rest.find([',', ' ']).unwrap_or(rest.len());
                (rest[..end].to_owned(), &rest[end..])
            };
            rest = after;
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => out.resource_metadata = Some(value),
                "scope" => out.scope = Some(value),
                "error" => out.error = Some(value),
                _ => {}
            }
        }
        Some(out)
    }
}

impl std::fmt::Display for Challenge {
    /// The challenge as a `WWW-Authenticate` value: `Bearer` and its parameters, quoted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer")?;
        let params = [
            ("error", &self.error),
            ("scope", &self.scope),
            ("resource_metadata", &self.resource_metadata),
        ];
        let mut first = true;
        for (name, value) in params {
            let Some(value) = value else { continue };
            let sep = if first { " " } else { ", " };
            first = false;
            write!(f, "{sep}{name}=\"")?;
            for c in value.chars() {
                if matches!(c, '"' | '\\') {
                    f.write_str("\\")?;
                }
                write!(f, "{c}")?;
            }
            f.write_str("\"")?;
        }
        Ok(())
    }
}

/// Where the scheme `name` (lowercase) begins as a word of `header`.
fn find_scheme(header: &str, name: &str) -> Option<usize> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(name).map(|i| i + from) {
        let before = lower[..i].chars().next_back();
        let after = lower[i + name.len()..].chars().next();
        if matches!(before, None | Some(' ' | ',')) && matches!(after, None | Some(' ')) {
            return Some(i);
        }
        from = i + name.len();
    }
    None
}

/// A quoted string's value (its opening quote already taken) and what follows it.
fn unquote(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &s[i + 1..])),
            '\\' => out.push(chars.next()?.1),
            c => out.push(c),
        }
    }
    None
}

/// The canonical URI of the MCP server at `url` (RFC 8707, as MCP's specification gives it):
/// scheme and host in lowercase, no fragment and no query, no trailing slash for the root.
#[must_use]
pub fn canonical_resource(url: &Url) -> String {
    let mut u = url.clone();
    u.set_fragment(None);
    u.set_query(None);
    let s = u.to_string();
    match s.strip_suffix('/') {
        Some(bare) if u.path() == "/" => bare.to_owned(),
        _ => s,
    }
}

/// The Protected Resource Metadata URLs for `server`, in the order they are tried: the
/// challenge's `resource_metadata`, else the well-known URI at the endpoint's path, then at the
/// root.
pub(super) fn resource_metadata_urls(server: &Url, challenge: Option<&Challenge>) -> Vec<Url> {
    if let Some(u) = challenge.and_then(|c| c.resource_metadata.as_deref())
        && let Ok(u) = server.join(u)
    {
        return vec![u];
    }
    let mut out = Vec::new();
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        out.extend(origin_join(server, &format!("/.well-known/oauth-protected-resource{path}")));
    }
    out.extend(origin_join(server, "/.well-known/oauth-protected-resource"));
    out
}

/// The metadata URLs of the authorization server `issuer`, in the specification's order.
pub(super) fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let urls = if path.is_empty() {
        vec![
            "/.well-known/oauth-authorization-server".to_owned(),
            "/.well-known/openid-configuration".to_owned(),
        ]
    } else {
        vec![
            format!("/.well-known/oauth-authorization-server{path}"),
            format!("/.well-known/openid-configuration{path}"),
            format!("{path}/.well-known/openid-configuration"),
        ]
    };
    urls.iter().filter_map(|p| origin_join(issuer, p)).collect()
}

/// `path` at `base`'s origin.
pub(super) fn origin_join(base: &Url, path: &str) -> Option<Url> {
    let mut u = base.clone();
    u.set_query(None);
    u.set_fragment(None);
    u.set_path(path);
    Some(u)
}

/// A Protected Resource Metadata document (RFC 9728): what the client reads of it, and what a
/// guarded [`HttpServer`](crate::http::HttpServer) serves.
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
pub struct ResourceMetadata {
    /// The protected resource's identifier.
    pub resource: String,
    /// Its authorization servers (issuer identifiers).
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes it uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How it takes a bearer token: MCP's servers take it in the `Authorization` header only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bearer_methods_supported: Vec<String>,
}

/// An authorization server's metadata (RFC 8414), what the client reads of it.
#[derive(Clone, Debug, Deserialize)]
pub struct ServerMetadata {
    /// Its issuer identifier.
    pub issuer: String,
    /// Where the user authorizes.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are exchanged.
    pub token_endpoint: String,
    /// Dynamic client registration (RFC 7591).
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; MCP requires `S256`.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Whether a URL may serve as a client id (Client ID Metadata Documents).
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// Whether its authorization responses carry `iss` (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

/// Fetches the Protected Resource Metadata of `server`: the first URL that answers a
/// document, checked against the server (its `resource` must be the server or a parent of it,
/// on the same origin). `None` when none answers.
pub(super) async fn resource_metadata(
    fetch: &Fetcher,
    server: &Url,
    challenge: Option<&Challenge>,
) -> Result<Option<ResourceMetadata>, AuthError> {
    let urls = resource_metadata_urls(server, challenge);
    let Some(doc) =
        first_document::<ResourceMetadata>(fetch, urls, "protected resource metadata").await?
    else {
        return Ok(None);
    };
    if !covers(&doc.resource, server) {
        return Err(AuthError::ResourceMismatch {
            resource: doc.resource,
            server: canonical_resource(server),
        });
    }
    Ok(Some(doc))
}

/// The document at the first of `urls` that answers with a success (`what` names it in
/// errors); `None` when none does. A success that is not a `T` is an error.
async fn first_document<T: serde::de::DeserializeOwned>(
    fetch: &Fetcher,
    urls: Vec<Url>,
    what: &str,
) -> Result<Option<T>, AuthError> {
    for url in urls {
        let answer = fetch.get(&url, what).await?;
        if answer.status.is_success() {
            return answer.decode(&format!("{what} at {url}")).map(Some);
        }
    }
    Ok(None)
}

/// Whether the resource identifier `resource` covers the server at `server`: the same origin,
/// and a path that is the server's or a parent of it (segment by segment).
fn covers(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else { return false };
    if r.origin() != server.origin() {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server.path().trim_end_matches('/');
    sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// Fetches the metadata of the authorization server `issuer`: the first of its well-known URLs
/// that answers, whose `issuer` must be `issuer` exactly.
pub(super) async fn server_metadata(
    fetch: &Fetcher,
    issuer: &str,
) -> Result<Option<ServerMetadata>, AuthError> {
    let parsed = Url::parse(issuer)
        .map_err(|e| AuthError::Invalid(format!("authorization server `{issuer}`: {e}")))?;
    let urls = server_metadata_urls(&parsed);
    let Some(doc) =
        first_document::<ServerMetadata>(fetch, urls, "authorization server metadata").await?
    else {
        return Ok(None);
    };
    if doc.issuer != issuer {
        return Err(AuthError::IssuerMismatch { expected: issuer.to_owned(), got: doc.issuer });
    }
    Ok(Some(doc))
}

#[cfg(test)]
mod tests;
