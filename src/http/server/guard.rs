//! The resource-server guard (feature `oauth`): with [`HttpServer::auth`](super::HttpServer::auth), every request to the
//! endpoint needs a bearer token the [`ResourceServer`] accepts, and the Protected Resource
//! Metadata (RFC 9728) is served at its well-known paths.
//!
//! | request | answer |
//! |---|---|
//! | GET the metadata's well-known path (for the resource's path, the endpoint's, or the root) | 200, the metadata as JSON (any origin may read it) |
//! | an `access_token` in the query string | 400, -32000; the token is not read |
//! | no `Authorization: Bearer` header | 401, `WWW-Authenticate: Bearer resource_metadata="…"` (and `scope` when scopes are required) |
//! | a token the validator refuses (malformed, expired, not yet valid, badly signed, for another audience or issuer, too long) | 401, `error="invalid_token"` |
//! | a token without a required scope | 403, `error="insufficient_scope"`, `scope` naming what to ask for |
//! | a token that cannot be checked now (JWKS or introspection unreachable, no key kept) | 503, -32000 |
//! | a legacy session's id with a token of another caller (issuer, subject, client) than the one that opened it | 404, -32001, as an unknown session |
//!
//! Each is checked before the body is read and before any session is opened or named; over
//! HTTP/1.1 a refused body of up to 64 KiB is then drained so that the connection carries the
//! client's next request (its metadata fetch), and a larger one is left unread, the answer saying
//! `Connection: close`. The principal of an accepted token reaches the handler
//! ([`Context::principal`](crate::peer::Context::principal)).

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use http::{Method, Request, Response, StatusCode};

use super::Body;
use super::config::Config;
use super::response::{error, json_response};
use crate::auth::resource::{Refusal, ResourceServer};
use crate::peer::Principal;
use crate::{error::ErrorCode, message::Id};

/// The metadata, when `req` asks for it.
pub(super) fn metadata<B>(cfg: &Config, req: &Request<B>) -> Option<Response<Body>> {
    let rs = cfg.auth.as_ref()?;
    if req.method() != Method::GET || !rs.serves_metadata_at(req.uri().path(), &cfg.path) {
        return None;
    }
    let body = serde_json::to_vec(&rs.metadata()).unwrap_or_default();
    let mut r = json_response(StatusCode::OK, Bytes::from(body));
    r.headers_mut().insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    Some(r)
}

/// The caller's principal, or the answer that refuses the request.
pub(super) async fn guard<B>(
    cfg: &Config,
    req: &Request<B>,
) -> Result<Option<Arc<Principal>>, Box<Response<Body>>> {
    let Some(rs) = &cfg.auth else { return Ok(None) };
    let authorization = req.headers().get(AUTHORIZATION).map(HeaderValue::as_bytes);
    match rs.check(authorization, req.uri().query()).await {
        Ok(p) => Ok(Some(Arc::new(p))),
        Err(refusal) => Err(Box::new(refused(rs, &refusal))),
    }
}

fn refused(rs: &ResourceServer, refusal: &Refusal) -> Response<Body> {
    let code = match refusal {
        Refusal::Missing | Refusal::Invalid(_) => StatusCode::UNAUTHORIZED,
        Refusal::InsufficientScope(_) => StatusCode::FORBIDDEN,
        Refusal::TokenInQuery => StatusCode::BAD_REQUEST,
        Refusal::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    let mut r = error(code, Id::Null, ErrorCode::SERVER_ERROR, &refusal.to_string());
    if let Some(c) = rs.challenge(refusal).and_then(|c| HeaderValue::from_str(&c).ok()) {
        r.headers_mut().insert(WWW_AUTHENTICATE, c);
    }
    r
}
