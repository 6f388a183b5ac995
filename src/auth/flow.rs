//! The authorization itself: what a 401 or a 403 leads to (a refresh, the whole flow, a
//! step-up), registration, the authorization code flow with PKCE, the token exchange.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http::HeaderValue;
use serde::Deserialize;
use url::Url;

use super::discovery::{self, Challenge, ServerMetadata};
use super::fetch::Fetcher;
use super::{AuthError, ClientIdentity, Credentials, TokenStore, UserAgent};

/// Seconds before its expiry that a token is refreshed instead of sent (at most half its life,
/// so a short-lived token is still used before it is refreshed).
const EXPIRY_MARGIN_S: u64 = 30;

pub(crate) struct Flow {
    pub(super) identity: ClientIdentity,
    user_agent: Arc<dyn UserAgent>,
    store: Arc<dyn TokenStore>,
    fetch: Fetcher,
    max_step_ups: u32,
    /// One authorization (or refresh) at a time: requests that meet a 401 together wait for
    /// the one that runs, then use its token.
    busy: tokio::sync::Mutex<()>,
}

/// What the HTTP client should do after a 401 or 403.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Then {
    /// Send the request again, with the token held now.
    Retry,
    /// The answer stands.
    GiveUp,
}

impl Flow {
    pub(super) fn new(
        identity: ClientIdentity,
        user_agent: Arc<dyn UserAgent>,
        store: Arc<dyn TokenStore>,
        fetch: Fetcher,
        max_step_ups: u32,
    ) -> Self {
        Self { identity, user_agent, store, fetch, max_step_ups, busy: tokio::sync::Mutex::new(()) }
    }

    /// The `Authorization` header for requests to the server whose canonical URI is
    /// `resource`, when a token is held for it; an expired one is refreshed first (when it
    /// can be).
    pub(crate) async fn authorization(&self, resource: &str) -> Option<HeaderValue> {
        let creds = self.store.load(resource)?;
        // The common case, on every request: the token held is good (one read of the store).
        if !expired(&creds) || creds.refresh_token.is_none() {
            return bearer(&creds);
        }
        let _one = self.busy.lock().await;
        // Another request may have refreshed it while this one waited.
        let now = self.store.load(resource)?;
        if expired(&now) {
            let _ = self.refresh(now).await;
        }
        bearer(&self.store.load(resource)?)
    }

    /// The server answered `status` (401 or 403) with `www_authenticate`, to a request that
    /// carried `sent` and has been through `step_ups` step-ups so far.
    pub(crate) async fn challenged(
        &self,
        server: &Url,
        status: u16,
        www_authenticate: Option<&str>,
        sent: Option<&HeaderValue>,
        step_ups: u32,
    ) -> Result<Then, AuthError> {
        let challenge = www_authenticate.and_then(Challenge::parse);
        let _one = self.busy.lock().await;
        let resource = discovery::canonical_resource(server);
        let held = self.store.load(&resource);
        // Another request authorized meanwhile: try its token.
        let now = held.as_ref().and_then(bearer);
        if now.is_some() && now.as_ref() != sent {
            return Ok(Then::Retry);
        }
        match status {
            403 => {
                let insufficient = challenge
                    .as_ref()
                    .is_some_and(|c| c.error.as_deref() == Some("insufficient_scope"));
                if !insufficient || step_ups >= self.max_step_ups {
                    return Ok(Then::GiveUp);
                }
                // Step up: the scopes held and the ones asked for.
                let scope = union(
                    held.as_ref().and_then(|c| c.scope.as_deref()),
                    challenge.as_ref().and_then(|c| c.scope.as_deref()),
                );
                self.authorize(server, challenge.as_ref(), scope).await?;
                Ok(Then::Retry)
            }
            401 => {
                if let Some(creds) = held.filter(|c| c.refresh_token.is_some() && sent.is_some())
                    && self.refresh(creds).await.is_ok()
                {
                    return Ok(Then::Retry);
                }
                let scope = challenge.as_ref().and_then(|c| c.scope.clone());
                self.authorize(server, challenge.as_ref(), scope).await?;
                Ok(Then::Retry)
            }
            _ => Ok(Then::GiveUp),
        }
    }

    /// The whole flow for `server`: discovery, registration, the user's authorization, the
    /// token. `scope`: what the challenge (or a step-up) asks for, if anything.
    async fn authorize(
        &self,
        server: &Url,
        challenge: Option<&Challenge>,
        scope: Option<String>,
    ) -> Result<(), AuthError> {
        let resource = discovery::canonical_resource(server);
        let prm = discovery::resource_metadata(&self.fetch, server, challenge).await?;
        let (issuer, meta) = match &prm {
            Some(prm) => {
                let issuer = prm.authorization_servers.first().ok_or_else(|| {
                    AuthError::Invalid(
                        "the protected resource metadata names no authorization server".into(),
                    )
                })?;
                let meta =
                    discovery::server_metadata(&self.fetch, issuer).await?.ok_or_else(|| {
                        AuthError::Invalid(format!("no authorization server metadata for {issuer}"))
                    })?;
                (issuer.clone(), meta)
            }
            // No resource metadata (a 2025-03-26 server): the server's origin is the
            // authorization server, its metadata at the well-known URL or, failing that, the
            // default endpoints.
            None => {
                let issuer = discovery::canonical_resource(
                    &discovery::origin_join(server, "/").expect("an http(s) URL has an origin"),
                );
                let meta = match discovery::server_metadata(&self.fetch, &issuer).await? {
                    Some(m) => m,
                    None => default_endpoints(&issuer),
                };
                (issuer, meta)
            }
        };
        if !meta
            .code_challenge_methods_supported
            .as_ref()
            .is_none_or(|m| m.iter().any(|m| m == "S256"))
        {
            return Err(AuthError::NoPkce);
        }
        let scope = scope
            .or_else(|| prm.as_ref().and_then(|p| p.scopes_supported.as_ref()).map(|s| s.join(" ")))
            .or_else(|| self.identity.scope.clone())
            .filter(|s| !s.is_empty());
        let scope = with_offline_access(scope, &meta);
        // The resource indicator is the resource metadata's own string (it may be a parent of
        // the server's URI), else the server's canonical URI.
        let audience = prm.as_ref().map_or_else(|| resource.clone(), |p| p.resource.clone());
        let held = self.store.load(&resource).filter(|c| c.issuer == issuer);
        let client = self.register(&meta, held.as_ref()).await?;

        let verifier = random_token(32);
        let state = random_token(16);
        let mut url = Url::parse(&meta.authorization_endpoint).map_err(|e| {
            AuthError::Invalid(format!(
                "authorization_endpoint `{}`: {e}",
                meta.authorization_endpoint
            ))
        })?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code");
            q.append_pair("client_id", &client.client_id);
            q.append_pair("redirect_uri", &self.identity.redirect_uri);
            q.append_pair("code_challenge", &s256(&verifier));
            q.append_pair("code_challenge_method", "S256");
            q.append_pair("state", &state);
            q.append_pair("resource", &audience);
            if let Some(s) = &scope {
                q.append_pair("scope", s);
            }
        }
        let back = self.user_agent.authorize(&url).await?;
        let code = code_of(&back, &state, &meta)?;

        let token_endpoint = endpoint(&meta.token_endpoint, "token_endpoint")?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", self.identity.redirect_uri.as_str()),
            ("code_verifier", verifier.as_str()),
            ("resource", audience.as_str()),
        ];
        let tokens = self.exchange(&token_endpoint, &mut form, &client).await?;
        self.store.save(&Credentials {
            issuer,
            resource,
            audience,
            token_endpoint: meta.token_endpoint.clone(),
            scope: tokens.scope.clone().or(scope),
            ..client.with(tokens)
        });
        Ok(())
    }

    /// The client id to use at the authorization server `meta` describes: the one given, the
    /// one registered there before, the metadata document's URL, or a new registration.
    async fn register(
        &self,
        meta: &ServerMetadata,
        held: Option<&Credentials>,
    ) -> Result<Registered, AuthError> {
        let id = &self.identity;
        if let Some(client_id) = &id.client_id {
            let method = id.token_endpoint_auth_method.clone().unwrap_or_else(|| {
                auth_method(
                    id.client_secret.is_some(),
                    meta.token_endpoint_auth_methods_supported.as_deref(),
                )
            });
            return Ok(Registered {
                client_id: client_id.clone(),
                client_secret: id.client_secret.clone(),
                method,
            });
        }
        if let Some(c) = held {
            return Ok(Registered {
                client_id: c.client_id.clone(),
                client_secret: c.client_secret.clone(),
                method: c.token_endpoint_auth_method.clone(),
            });
        }
        if meta.client_id_metadata_document_supported
            && let Some(url) = &id.metadata_url
        {
            return Ok(Registered {
                client_id: url.clone(),
                client_secret: None,
                method: "none".into(),
            });
        }
        let Some(endpoint_url) = &meta.registration_endpoint else {
            return Err(AuthError::NoRegistration(meta.issuer.clone()));
        };
        let endpoint_url = endpoint(endpoint_url, "registration_endpoint")?;
        let mut body = serde_json::json!({
            "client_name": id.name,
            "redirect_uris": [id.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        });
        if let Some(scope) = &id.scope {
            body["scope"] = serde_json::Value::String(scope.clone());
        }
        let answer = self.fetch.post_json(&endpoint_url, &body, "client registration").await?;
        #[derive(Deserialize)]
        struct Answer {
            client_id: String,
            #[serde(default)]
            client_secret: Option<String>,
            #[serde(default)]
            token_endpoint_auth_method: Option<String>,
        }
        let a: Answer = answer.decode("client registration")?;
        let method = a.token_endpoint_auth_method.unwrap_or_else(|| {
            auth_method(
                a.client_secret.is_some(),
                meta.token_endpoint_auth_methods_supported.as_deref(),
            )
        });
        Ok(Registered { client_id: a.client_id, client_secret: a.client_secret, method })
    }

    /// A refresh of `creds`'s token, kept when it succeeds.
    async fn refresh(&self, creds: Credentials) -> Result<(), AuthError> {
        let Some(refresh) = creds.refresh_token.clone() else {
            return Err(AuthError::Invalid("no refresh token".into()));
        };
        let token_endpoint = endpoint(&creds.token_endpoint, "token_endpoint")?;
        let client = Registered {
            client_id: creds.client_id.clone(),
            client_secret: creds.client_secret.clone(),
            method: creds.token_endpoint_auth_method.clone(),
        };
        let mut form = vec![("grant_type", "refresh_token"), ("refresh_token", refresh.as_str())];
        if !creds.audience.is_empty() {
            form.push(("resource", creds.audience.as_str()));
        }
        let tokens = match self.exchange(&token_endpoint, &mut form, &client).await {
            Ok(t) => t,
            Err(e) => {
                // A refresh token the server no longer takes is dropped: the next 401 runs the
                // whole flow.
                self.store.save(&Credentials { access_token: None, refresh_token: None, ..creds });
                return Err(e);
            }
        };
        let refresh_token = tokens.refresh_token.clone().or(Some(refresh));
        self.store.save(&Credentials {
            scope: tokens.scope.clone().or(creds.scope.clone()),
            refresh_token,
            ..client.with(tokens).keep(creds)
        });
        Ok(())
    }

    /// POSTs `form` to the token endpoint with the client's authentication; the tokens.
    async fn exchange<'a>(
        &self,
        url: &Url,
        form: &mut Vec<(&'a str, &'a str)>,
        client: &'a Registered,
    ) -> Result<Tokens, AuthError> {
        let secret = client.client_secret.as_deref();
        let basic = match (client.method.as_str(), secret) {
            ("client_secret_basic", Some(s)) => Some((client.client_id.as_str(), s)),
            ("client_secret_post", Some(s)) => {
                form.push(("client_id", client.client_id.as_str()));
                form.push(("client_secret", s));
                None
            }
            _ => {
                form.push(("client_id", client.client_id.as_str()));
                None
            }
        };
        let answer = self.fetch.post_form(url, form, basic, "the token endpoint").await?;
        if !answer.status.is_success() {
            let why = serde_json::from_slice::<serde_json::Value>(&answer.body)
                .ok()
                .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
                .unwrap_or_else(|| format!("HTTP {}", answer.status));
            return Err(AuthError::Denied(format!("the token endpoint: {why}")));
        }
        let t: Tokens = answer.decode("the token endpoint's answer")?;
        if !t.token_type.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::Invalid(format!("token_type `{}`, not Bearer", t.token_type)));
        }
        Ok(t)
    }
}

/// A client id and how it authenticates.
struct Registered {
    client_id: String,
    client_secret: Option<String>,
    method: String,
}

impl Registered {
    /// Credentials with these and `tokens` (the caller fills in where they are good).
    fn with(&self, tokens: Tokens) -> Credentials {
        Credentials {
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
            token_endpoint_auth_method: self.method.clone(),
            access_token: Some(tokens.access_token),
            refresh_token: tokens.refresh_token,
            expires_at: tokens
                .expires_in
                .map(|s| now().saturating_add(s.saturating_sub(EXPIRY_MARGIN_S.min(s / 2)))),
            scope: tokens.scope,
            ..Credentials::default()
        }
    }
}

impl Credentials {
    /// These, for the issuer, resource, audience and endpoint of `old`.
    fn keep(self, old: Credentials) -> Self {
        Self {
            issuer: old.issuer,
            resource: old.resource,
            audience: old.audience,
            token_endpoint: old.token_endpoint,
            ..self
        }
    }
}

/// A token endpoint's answer.
#[derive(Deserialize)]
struct Tokens {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// The code of the redirect `back`, its `state` checked, and its `iss` as the server's
/// metadata says (RFC 9207).
fn code_of(back: &Url, state: &str, meta: &ServerMetadata) -> Result<String, AuthError> {
    let param =
        |name: &str| back.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    if param("state").as_deref() != Some(state) {
        return Err(AuthError::Denied("the redirect's state is not the one sent".into()));
    }
    match (param("iss"), meta.authorization_response_iss_parameter_supported) {
        (Some(iss), _) if iss != meta.issuer => {
            return Err(AuthError::IssuerMismatch { expected: meta.issuer.clone(), got: iss });
        }
        (None, true) => {
            return Err(AuthError::Denied(
                "the redirect has no `iss`, which the authorization server promises".into(),
            ));
        }
        _ => {}
    }
    if let Some(e) = param("error") {
        let d = param("error_description").map(|d| format!(": {d}")).unwrap_or_default();
        return Err(AuthError::Denied(format!("{e}{d}")));
    }
    param("code").ok_or_else(|| AuthError::Denied("the redirect carries no code".into()))
}

/// The endpoints a 2025-03-26 server without metadata is assumed to have.
fn default_endpoints(issuer: &str) -> ServerMetadata {
    ServerMetadata {
        issuer: issuer.to_owned(),
        authorization_endpoint: format!("{issuer}/authorize"),
        token_endpoint: format!("{issuer}/token"),
        registration_endpoint: Some(format!("{issuer}/register")),
        scopes_supported: None,
        code_challenge_methods_supported: None,
        token_endpoint_auth_methods_supported: None,
        client_id_metadata_document_supported: false,
        authorization_response_iss_parameter_supported: false,
    }
}

/// `offline_access` is asked for where the server offers it and a scope is asked for at all.
fn with_offline_access(scope: Option<String>, meta: &ServerMetadata) -> Option<String> {
    let offered =
        meta.scopes_supported.as_ref().is_some_and(|s| s.iter().any(|s| s == "offline_access"));
    match scope {
        Some(s) if offered && !s.split(' ').any(|x| x == "offline_access") => {
            Some(format!("{s} offline_access"))
        }
        s => s,
    }
}

/// How a client authenticates at the token endpoint, from what the server supports.
fn auth_method(has_secret: bool, supported: Option<&[String]>) -> String {
    if !has_secret {
        return "none".into();
    }
    let offers = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
    if offers("client_secret_basic") { "client_secret_basic" } else { "client_secret_post" }.into()
}

/// The union of two space-separated scope lists, in a stable order.
fn union(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let all: BTreeSet<&str> =
        a.into_iter().chain(b).flat_map(|s| s.split(' ')).filter(|s| !s.is_empty()).collect();
    (!all.is_empty()).then(|| all.into_iter().collect::<Vec<_>>().join(" "))
}

fn endpoint(url: &str, what: &str) -> Result<Url, AuthError> {
    Url::parse(url).map_err(|e| AuthError::Invalid(format!("{what} `{url}`: {e}")))
}

fn bearer(c: &Credentials) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("Bearer {}", c.access_token.as_deref()?)).ok()
}

/// Whether `c`'s token is due for a refresh (its `expires_at` holds the margin already).
fn expired(c: &Credentials) -> bool {
    c.expires_at.is_some_and(|at| now() >= at)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `n` random bytes, base64url without padding (a PKCE verifier of 43 characters for 32).
fn random_token(n: usize) -> String {
    use base64::Engine as _;
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).expect("the system's random source");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The S256 challenge of `verifier`.
fn s256(verifier: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier))
}

#[cfg(test)]
mod tests;
