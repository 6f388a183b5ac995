//! Getting the user's approval: the [`UserAgent`] steps the library ships, each returning the
//! authorization server's redirect back (the code). [`Loopback`] shows the authorization URL
//! to a person at a browser and waits for the browser's redirect on the loopback port the
//! redirect URI names; [`FollowRedirect`] follows the redirects itself, for authorization
//! servers that approve without a user (test rigs).

use crate::limits::DEFAULT_FETCH_TIMEOUT;
use crate::limits::DEFAULT_LOOPBACK_WAIT;
use crate::limits::DEFAULT_MAX_DOCUMENT_BYTES;
use crate::limits::FOLLOW_REDIRECT_HOPS;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

use super::{AuthError, UserAgent};

/// The most bytes of a request head the loopback listener reads.
const MAX_HEAD: usize = 16 * 1024;

/// A user agent for a person at a browser: shows the authorization URL (through `announce`:
/// print it, or open a browser), then listens on the loopback address and port of the
/// authorization URL's `redirect_uri` (an `http://127.0.0.1:PORT/PATH` or `localhost` URI, as
/// registered) for the browser's redirect, and answers it with a page saying the window may be
/// closed. Requests to other paths are answered 404 and the wait goes on, up to `wait`.
pub struct Loopback {
    announce: Box<dyn Fn(&Url) + Send + Sync>,
    wait: Duration,
}

impl Loopback {
    /// `announce` shows the authorization URL to the user.
    pub fn new(announce: impl Fn(&Url) + Send + Sync + 'static) -> Self {
        Self { announce: Box::new(announce), wait: DEFAULT_LOOPBACK_WAIT }
    }

    /// How long to wait for the redirect ([`DEFAULT_LOOPBACK_WAIT`]).
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    async fn run(&self, url: &Url) -> Result<Url, AuthError> {
        let redirect = url
            .query_pairs()
            .find(|(k, _)| k == "redirect_uri")
            .and_then(|(_, v)| Url::parse(&v).ok())
            .ok_or_else(|| {
                AuthError::UserAgent("the authorization URL has no redirect_uri".into())
            })?;
        let loopback = matches!(redirect.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
        let port = redirect.port_or_known_default();
        let (true, Some(port)) = (loopback && redirect.scheme() == "http", port) else {
            return Err(AuthError::UserAgent(format!(
                "the redirect URI {redirect} is not an http:// loopback address to listen on"
            )));
        };
        let ip = if redirect.host_str() == Some("[::1]") { "[::1]" } else { "127.0.0.1" };
        let listener =
            tokio::net::TcpListener::bind(format!("{ip}:{port}")).await.map_err(|e| {
                AuthError::UserAgent(format!("listening on {ip}:{port} for the redirect: {e}"))
            })?;
        (self.announce)(url);
        let accept = async {
            loop {
                let (mut sock, _) = listener
                    .accept()
                    .await
                    .map_err(|e| AuthError::UserAgent(format!("accepting the redirect: {e}")))?;
                let Some(target) = request_target(&mut sock).await else { continue };
                let Ok(got) = redirect.join(&target) else { continue };
                if got.path() != redirect.path() {
                    let _ = sock.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
                    continue;
                }
                let page = "Authorized: this window may be closed.";
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = sock.write_all(answer.as_bytes()).await;
                return Ok(got);
            }
        };
        tokio::time::timeout(self.wait, accept).await.map_err(|_| {
            AuthError::UserAgent(format!("no redirect came back within {:?}", self.wait))
        })?
    }
}

/// The target of the request line a connection sends (its head read up to [`MAX_HEAD`]).
async fn request_target(sock: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        let n =
            tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf)).await.ok()?.ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = std::str::from_utf8(&head).ok()?.lines().next()?;
    let mut parts = line.split(' ');
    (parts.next()? == "GET").then(|| parts.next().map(str::to_owned)).flatten()
}

impl UserAgent for Loopback {
    fn authorize<'a>(
        &'a self,
        url: &'a Url,
    ) -> Pin<Box<dyn Future<Output = Result<Url, AuthError>> + Send + 'a>> {
        Box::pin(self.run(url))
    }
}

/// A user agent for test rigs and headless runs against an authorization server that approves
/// without a user: GETs the authorization URL and follows its redirects, as a browser would
/// (cookies kept), while they stay on the authorization server's origin, up to
/// [`FOLLOW_REDIRECT_HOPS`]; the first redirect elsewhere (to the `redirect_uri`) is the
/// answer. A redirect to another host that is not the `redirect_uri` is refused, not followed.
#[derive(Debug, Clone, Copy, Default)]
pub struct FollowRedirect;

impl UserAgent for FollowRedirect {
    fn authorize<'a>(
        &'a self,
        url: &'a Url,
    ) -> Pin<Box<dyn Future<Output = Result<Url, AuthError>> + Send + 'a>> {
        Box::pin(async move {
            let fetch = super::fetch::Fetcher::new(
                None,
                DEFAULT_FETCH_TIMEOUT,
                DEFAULT_MAX_DOCUMENT_BYTES,
            )?;
            let redirect_uri = url
                .query_pairs()
                .find(|(k, _)| k == "redirect_uri")
                .and_then(|(_, v)| Url::parse(&v).ok());
            let mut jar: Vec<String> = Vec::new();
            let mut at = url.clone();
            for _ in 0..=FOLLOW_REDIRECT_HOPS {
                let cookie = (!jar.is_empty()).then(|| jar.join("; "));
                let answer = fetch
                    .get_with_cookies(&at, "the authorization endpoint", cookie.as_deref())
                    .await?;
                for c in answer.cookies {
                    let name = c.split('=').next().unwrap_or_default().to_owned();
                    jar.retain(|kept| kept.split('=').next() != Some(name.as_str()));
                    jar.push(c);
                }
                let location = answer.location.ok_or_else(|| {
                    AuthError::UserAgent(format!(
                        "{at} answered HTTP {} without a redirect",
                        answer.status
                    ))
                })?;
                let next = at.join(&location).map_err(|e| {
                    AuthError::UserAgent(format!("a redirect to `{location}`: {e}"))
                })?;
                let is_redirect_uri = redirect_uri
                    .as_ref()
                    .is_some_and(|r| r.origin() == next.origin() && r.path() == next.path());
                if is_redirect_uri || redirect_uri.is_none() {
                    return Ok(next);
                }
                if next.origin() != url.origin() {
                    return Err(AuthError::UserAgent(format!(
                        "a redirect to another host than the redirect URI: {}",
                        next.origin().ascii_serialization()
                    )));
                }
                at = next;
            }
            Err(AuthError::UserAgent(format!(
                "more than {FOLLOW_REDIRECT_HOPS} redirects on the authorization server"
            )))
        })
    }
}
