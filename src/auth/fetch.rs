//! The OAuth client's own HTTP: bounded GETs of metadata documents and POSTs to the
//! authorization server, each with a time bound, a size bound on what it reads, and no
//! redirect followed (a metadata URL that redirects elsewhere is refused, not chased).

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use url::Url;

use super::AuthError;
use crate::http::dial::{Connector, Dialer};
use crate::tls::ClientTls;

/// What one exchange came back with.
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) body: Bytes,
    /// The `Location` of a redirect.
    pub(super) location: Option<String>,
    /// The `name=value` of each `Set-Cookie` (attributes dropped).
    pub(super) cookies: Vec<String>,
}

impl Answer {
    /// The body read as a `T` (one pass over it), when the status is a success.
    pub(super) fn decode<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
    ) -> Result<T, AuthError> {
        if !self.status.is_success() {
            return Err(AuthError::Status { what: what.to_owned(), status: self.status.as_u16() });
        }
        serde_json::from_slice(&self.body).map_err(|e| AuthError::Invalid(format!("{what}: {e}")))
    }
}

/// The HTTP client of the OAuth flow.
#[derive(Clone)]
pub(super) struct Fetcher {
    client: Client<Connector, Full<Bytes>>,
    timeout: Duration,
    max_bytes: usize,
}

impl Fetcher {
    pub(super) fn new(
        tls: Option<&ClientTls>,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<Self, AuthError> {
        let dialer = Dialer::new().https(true).connect_timeout(timeout);
        let dialer = match tls {
            Some(tls) => dialer.tls(tls.clone()),
            None => dialer,
        };
        // No pool: the flow's exchanges are few and far apart, and a kept connection the server
        // has closed meanwhile would fail a POST that cannot be sent again.
        let client =
            dialer.max_idle_per_host(0).client().map_err(|e| AuthError::Invalid(e.to_string()))?;
        Ok(Self { client, timeout, max_bytes })
    }

    /// GETs `url` (`what` names it in errors).
    pub(super) async fn get(&self, url: &Url, what: &str) -> Result<Answer, AuthError> {
        self.get_with_cookies(url, what, None).await
    }

    /// GETs `url` with a `Cookie` header.
    pub(super) async fn get_with_cookies(
        &self,
        url: &Url,
        what: &str,
        cookie: Option<&str>,
    ) -> Result<Answer, AuthError> {
        let mut b = Request::builder()
            .method(Method::GET)
            .uri(url.as_str())
            .header(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(c) = cookie {
            b = b.header(COOKIE, c);
        }
        let req = b
            .body(Full::new(Bytes::new()))
            .map_err(|e| AuthError::Invalid(format!("{what}: {url}: {e}")))?;
        self.send(req, what).await
    }

    /// POSTs `form` (`application/x-www-form-urlencoded`) to `url`, with HTTP Basic
    /// authentication when `basic` names a client and its secret.
    pub(super) async fn post_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
        what: &str,
    ) -> Result<Answer, AuthError> {
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let mut b = Request::builder()
            .method(Method::POST)
            .uri(url.as_str())
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header(CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded"));
        if let Some((id, secret)) = basic {
            b = b.header(AUTHORIZATION, basic_credentials(id, secret)?);
        }
        let req = b
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| AuthError::Invalid(format!("{what}: {url}: {e}")))?;
        self.send(req, what).await
    }

    /// POSTs `json` to `url`.
    pub(super) async fn post_json(
        &self,
        url: &Url,
        json: &serde_json::Value,
        what: &str,
    ) -> Result<Answer, AuthError> {
        let req = Request::builder()
            .method(Method::POST)
            .uri(url.as_str())
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(Full::new(Bytes::from(json.to_string())))
            .map_err(|e| AuthError::Invalid(format!("{what}: {url}: {e}")))?;
        self.send(req, what).await
    }

    async fn send(&self, req: Request<Full<Bytes>>, what: &str) -> Result<Answer, AuthError> {
        let url = req.uri().to_string();
        let exchange = async {
            let resp = self.client.request(req).await.map_err(|e| AuthError::Fetch {
                what: what.to_owned(),
                url: url.clone(),
                why: crate::error::error_chain(&e),
            })?;
            let status = resp.status();
            let location =
                resp.headers().get(LOCATION).and_then(|l| l.to_str().ok()).map(str::to_owned);
            let cookies = resp
                .headers()
                .get_all(SET_COOKIE)
                .iter()
                .filter_map(|c| c.to_str().ok()?.split(';').next().map(|nv| nv.trim().to_owned()))
                .filter(|nv| nv.contains('='))
                .collect();
            let body = Limited::new(resp.into_body(), self.max_bytes)
                .collect()
                .await
                .map_err(|e| AuthError::Fetch {
                    what: what.to_owned(),
                    url: url.clone(),
                    why: if e.is::<http_body_util::LengthLimitError>() {
                        format!("the answer is larger than {} bytes", self.max_bytes)
                    } else {
                        e.to_string()
                    },
                })?
                .to_bytes();
            Ok(Answer { status, body, location, cookies })
        };
        tokio::time::timeout(self.timeout, exchange).await.map_err(|_| AuthError::Fetch {
            what: what.to_owned(),
            url: url.clone(),
            why: format!("no answer within {:?}", self.timeout),
        })?
    }
}

/// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
fn basic_credentials(id: &str, secret: &str) -> Result<HeaderValue, AuthError> {
    use base64::Engine as _;
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", enc(id), enc(secret));
    let value = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair));
    HeaderValue::from_str(&value).map_err(|_| AuthError::Invalid("client credentials".into()))
}
