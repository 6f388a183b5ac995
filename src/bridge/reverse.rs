//! The reverse bridge: one remote Streamable HTTP server served as a local stdio server, for
//! hosts that can only start processes.
//!
//! ```text
//!  host ──stdio──► HostSide ──► HTTP client peer ──POST/GET──► remote server
//!       ◄──────── RemoteSide ◄── its requests, notifications ◄─┘
//! ```
//!
//! Two peers: one on the host's stdio, one the HTTP client of [`crate::http::HttpClient`]
//! (TLS, headers, OAuth as [`ConnectOptions`] give them). Each request the host sends is sent
//! on to the remote and answered under the host's own id; each request the remote sends
//! (sampling, elicitation, roots, on a POST's event stream or the GET stream) is sent on to the
//! host and its answer goes back. Notifications pass both ways; a cancellation by the host
//! drops the forwarded request, which ends its POST. Both eras: the host's `initialize` opens
//! the remote session (the HTTP client keeps its id), modern requests pass stateless.
//!
//! A remote that ends the legacy session (404) is initialized again with the host's own
//! `initialize`, once per loss, what the host set on the lost session is set again (its last
//! `logging/setLevel`, its resource subscriptions, up to
//! [`ReverseBuilder::max_remembered_subscriptions`]), and the request sent again (a 404 means
//! the remote did not run it); a remote that cannot be reached fails the request with -32603 saying why, and the next
//! one tries again. The host closing its stdin ends the bridge (the session is deleted).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use super::text;
use crate::limits::DEFAULT_REVERSE_SUBSCRIPTIONS;
use crate::peer::{
    Context, Handler, Incoming, PeerBuilder, PeerHandle, Reply, RequestError, RequestOptions,
    RpcError, TransportError,
};
use crate::sync::Locked;
use crate::transport::{ConnectOptions, Target};
use crate::{message::RawJson, message::owned::OwnedId};

/// How long the end waits for the remote to take the session's DELETE.
const CLOSE_WAIT: Duration = Duration::from_secs(3);

/// Builds a reverse bridge: the peers on both sides and how the remote is reached.
#[derive(Clone, Debug)]
pub struct ReverseBuilder {
    host: PeerBuilder,
    remote: PeerBuilder,
    options: ConnectOptions,
    request_timeout: Option<Duration>,
    max_subscriptions: usize,
}

impl Default for ReverseBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ReverseBuilder {
    /// The defaults: both peers [`PeerBuilder::new`]'s, the remote reached with
    /// [`ConnectOptions::default`], the peer's request timeout for the remote's answers.
    #[must_use]
    pub fn new() -> Self {
        Self {
            host: PeerBuilder::new(),
            remote: PeerBuilder::new(),
            options: ConnectOptions::default(),
            request_timeout: Some(crate::limits::DEFAULT_REQUEST_TIMEOUT),
            max_subscriptions: DEFAULT_REVERSE_SUBSCRIPTIONS,
        }
    }

    /// The peer on the host's stdio: its limits (frame size, handlers in flight, …).
    #[must_use]
    pub fn host_peer(mut self, peer: PeerBuilder) -> Self {
        self.host = peer;
        self
    }

    /// The HTTP client's peer to the remote.
    #[must_use]
    pub fn remote_peer(mut self, peer: PeerBuilder) -> Self {
        self.remote = peer;
        self
    }

    /// How the remote is reached: headers, TLS, OAuth.
    #[must_use]
    pub fn connect_options(mut self, options: ConnectOptions) -> Self {
        self.options = options;
        self
    }

    /// How long a forwarded request waits for the remote (`None`: as long as the host
    /// waits); progress under the host's token restarts it.
    #[must_use]
    pub fn request_timeout(mut self, t: Option<Duration>) -> Self {
        self.request_timeout = t;
        self
    }

    /// Resource subscriptions kept to be made again on a new remote session
    /// ([`DEFAULT_REVERSE_SUBSCRIPTIONS`] by default). Past the bound a subscription still
    /// reaches the remote, but is not made again after a loss of the session (a warning says
    /// so, and [`ReverseStats::forgotten_subscriptions`] counts it).
    #[must_use]
    pub fn max_remembered_subscriptions(mut self, n: usize) -> Self {
        self.max_subscriptions = n;
        self
    }

    /// Serves the remote at `url` (`http://` or `https://`) to the host on `reader` and
    /// `writer` (a process's stdin and stdout) until the reader ends.
    ///
    /// # Errors
    ///
    /// When `url` is not one the HTTP client can reach (the scheme, TLS settings).
    pub async fn serve<R, W>(self, url: &str, reader: R, writer: W) -> io::Result<ReverseStats>
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{url}: expected an http:// or https:// URL"),
            ));
        }
        let host_cell = Arc::new(OnceLock::new());
        let counters = Arc::new(Counters::default());
        let remote_side = RemoteSide { host: host_cell.clone(), counters: counters.clone() };
        let target = Target::Http(url.to_owned());
        let (remote, mut remote_conn) =
            target.connect(&self.remote, remote_side, &self.options).await?;
        let shared = Arc::new(Shared {
            remote: remote.clone(),
            url: url.to_owned(),
            kept: Mutex::new(Kept::default()),
            max_subscriptions: self.max_subscriptions,
            epoch: AtomicU64::new(0),
            reinit: tokio::sync::Mutex::new(()),
            timeout: self.request_timeout,
            counters: counters.clone(),
        });
        let (host, mut host_conn) = self.host.spawn(reader, writer, HostSide { shared });
        let _ = host_cell.set(host);
        let reason = host_conn.closed().await;
        tracing::debug!(%reason, "mcpwire bridge --stdio: the host's side ended");
        remote.close();
        let _ = tokio::time::timeout(CLOSE_WAIT, remote_conn.closed()).await;
        Ok(counters.snapshot())
    }
}

/// What a reverse bridge did, counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReverseStats {
    /// The host's requests sent on to the remote.
    pub forwarded: u64,
    /// The remote's requests sent on to the host.
    pub remote_requests: u64,
    /// Times the remote's session was opened again after it ended it.
    pub reinitialized: u64,
    /// Requests sent again to a new session to set what the host had set on the lost one
    /// (`logging/setLevel`, `resources/subscribe`).
    pub restored: u64,
    /// Subscriptions past [`ReverseBuilder::max_remembered_subscriptions`]: not made again on
    /// a new session.
    pub forgotten_subscriptions: u64,
}

#[derive(Debug, Default)]
struct Counters {
    forwarded: AtomicU64,
    remote_requests: AtomicU64,
    reinitialized: AtomicU64,
    restored: AtomicU64,
    forgotten_subscriptions: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> ReverseStats {
        ReverseStats {
            forwarded: self.forwarded.load(Ordering::Relaxed),
            remote_requests: self.remote_requests.load(Ordering::Relaxed),
            reinitialized: self.reinitialized.load(Ordering::Relaxed),
            restored: self.restored.load(Ordering::Relaxed),
            forgotten_subscriptions: self.forgotten_subscriptions.load(Ordering::Relaxed),
        }
    }
}

/// What the host set on the remote session, kept to set it again on a new one.
#[derive(Debug, Default)]
struct Kept {
    /// The params of the host's `initialize`, to open the session again with.
    init: Option<String>,
    /// The params of the last `logging/setLevel` the remote took.
    level: Option<String>,
    /// The URIs of the resources subscribed to (and not unsubscribed from), in order.
    subscribed: Vec<String>,
}

/// The `uri` of `resources/subscribe` or `resources/unsubscribe`.
#[derive(serde::Deserialize)]
struct UriParams {
    uri: String,
}

/// What the host's side shares with its requests.
struct Shared {
    remote: PeerHandle,
    url: String,
    kept: Mutex<Kept>,
    max_subscriptions: usize,
    /// Counts the sessions opened again: a request that saw the session lost under epoch `n`
    /// opens it again only when no other request did since.
    epoch: AtomicU64,
    reinit: tokio::sync::Mutex<()>,
    timeout: Option<Duration>,
    counters: Arc<Counters>,
}

impl Shared {
    /// Sends one request of the host's to the remote.
    async fn send(
        &self,
        method: &str,
        params: Option<RawJson<'_>>,
    ) -> Result<Incoming, RequestError> {
        let mut options = RequestOptions::new().timeout(self.timeout);
        if let Some(token) = params.and_then(progress_token) {
            options = options.reset_on_progress(token, None);
        }
        self.counters.forwarded.fetch_add(1, Ordering::Relaxed);
        self.remote.request_with(method, params, options).await
    }

    /// Opens the remote session again with the host's `initialize`, unless another request
    /// did since `seen`.
    async fn reinitialize(&self, seen: u64) -> Result<(), RpcError> {
        let _one = self.reinit.lock().await;
        if self.epoch.load(Ordering::Acquire) != seen {
            return Ok(());
        }
        let Some(init) = self.kept.locked().init.clone() else {
            return Err(RpcError::internal(format!(
                "mcpwire bridge: {} ended the session, and the host never sent initialize",
                self.url
            )));
        };
        self.send("initialize", Some(RawJson::new(&init)))
            .await
            .map_err(|e| self.error("initialize (again, the session having ended)", e))?;
        let _ = self.remote.notify("notifications/initialized", crate::peer::NO_PARAMS).await;
        self.restore().await;
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.counters.reinitialized.fetch_add(1, Ordering::Relaxed);
        tracing::info!(url = %self.url, "mcpwire bridge --stdio: the remote session was opened again");
        Ok(())
    }

    /// Keeps what a request the remote took set on its session.
    fn keep(&self, method: &str, params: Option<RawJson<'_>>) {
        let params = params.map(|p| p.get());
        let uri = || serde_json::from_str::<UriParams>(params?).ok().map(|p| p.uri);
        let mut kept = self.kept.locked();
        match method {
            "initialize" => kept.init = params.map(str::to_owned),
            "logging/setLevel" => kept.level = params.map(str::to_owned),
            "resources/subscribe" => {
                let Some(uri) = uri() else { return };
                if kept.subscribed.contains(&uri) {
                    return;
                }
                if kept.subscribed.len() >= self.max_subscriptions {
                    drop(kept);
                    self.counters.forgotten_subscriptions.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        %uri,
                        max = self.max_subscriptions,
                        "mcpwire bridge --stdio: past the subscriptions kept; this one is not \
                         made again if the remote session is lost"
                    );
                    return;
                }
                kept.subscribed.push(uri);
            }
            "resources/unsubscribe" => {
                if let Some(uri) = uri() {
                    kept.subscribed.retain(|u| *u != uri);
                }
            }
            _ => {}
        }
    }

    /// Sets again on a new session what the host had set on the lost one: its last
    /// `logging/setLevel`, then its subscriptions in the order they were made. A refusal is
    /// logged; the rest goes on.
    async fn restore(&self) {
        let (level, subscribed) = {
            let kept = self.kept.locked();
            (kept.level.clone(), kept.subscribed.clone())
        };
        let level = level.map(|p| ("logging/setLevel", p));
        let subscriptions = subscribed.into_iter().map(|uri| {
            let params = serde_json::json!({ "uri": uri }).to_string();
            ("resources/subscribe", params)
        });
        for (method, params) in level.into_iter().chain(subscriptions) {
            self.counters.restored.fetch_add(1, Ordering::Relaxed);
            let options = RequestOptions::new().timeout(self.timeout);
            let sent = self.remote.request_with(method, Some(RawJson::new(&params)), options);
            if let Err(e) = sent.await {
                let e = self.error(method, e);
                tracing::warn!(%method, %params, error = %e.message, "mcpwire bridge --stdio: \
                    not set again on the new remote session");
            }
        }
    }

    /// The host's error for a request the remote did not answer.
    fn error(&self, method: &str, e: RequestError) -> RpcError {
        let url = &self.url;
        match e {
            RequestError::Rpc(e) => e,
            RequestError::Timeout => RpcError::internal(format!(
                "mcpwire bridge: {url} did not answer {method} within {:?}",
                self.timeout.unwrap_or_default()
            )),
            RequestError::Transport(t) => {
                RpcError::internal(format!("mcpwire bridge: {url}: {method}: {t}"))
            }
            e => RpcError::internal(format!("mcpwire bridge: {url}: {method}: {e}")),
        }
    }
}

/// The `_meta.progressToken` of a request's params, as an id.
fn progress_token(params: RawJson<'_>) -> Option<OwnedId> {
    let token = super::json::meta_member(params.get(), "progressToken")?;
    match serde_json::from_str::<serde_json::Value>(token).ok()? {
        serde_json::Value::String(s) => Some(OwnedId::Str(s.into())),
        serde_json::Value::Number(n) => n.as_i64().map(OwnedId::Num),
        _ => None,
    }
}

/// The handler of the host's stdio: its requests and notifications, to the remote.
struct HostSide {
    shared: Arc<Shared>,
}

impl Handler for HostSide {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        let s = &self.shared;
        let (method, params) = (req.method(), req.params());
        let epoch = s.epoch.load(Ordering::Acquire);
        let answer = match s.send(method, params).await {
            Err(RequestError::Transport(TransportError::SessionLost(why)))
                if method != "initialize" =>
            {
                tracing::info!(%why, "mcpwire bridge --stdio: the remote ended the session");
                s.reinitialize(epoch).await?;
                s.send(method, params).await
            }
            other => other,
        };
        match answer {
            Ok(a) => {
                if a.result().is_some() {
                    s.keep(method, params);
                }
                Ok(Reply::raw(text(a.result())))
            }
            Err(e) => Err(s.error(method, e)),
        }
    }

    async fn notification(&self, note: &Incoming, _cx: &Context) {
        // A cancellation was the peer's: it dropped the forwarded request, which cancels it.
        if note.method() == "notifications/cancelled" {
            return;
        }
        let _ = self.shared.remote.notify(note.method(), note.params()).await;
    }
}

/// The HTTP client's handler: what the remote sends, to the host.
struct RemoteSide {
    host: Arc<OnceLock<PeerHandle>>,
    counters: Arc<Counters>,
}

impl Handler for RemoteSide {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        let Some(host) = self.host.get() else {
            return Err(RpcError::internal("mcpwire bridge: the host is not connected yet"));
        };
        self.counters.remote_requests.fetch_add(1, Ordering::Relaxed);
        match host.request_with(req.method(), req.params(), RequestOptions::new()).await {
            Ok(a) => Ok(Reply::raw(text(a.result()))),
            Err(RequestError::Rpc(e)) => Err(e),
            Err(e) => Err(RpcError::internal(format!(
                "mcpwire bridge: the host did not answer {}: {e}",
                req.method()
            ))),
        }
    }

    async fn notification(&self, note: &Incoming, _cx: &Context) {
        if note.method() == "notifications/cancelled" {
            return;
        }
        if let Some(host) = self.host.get() {
            let _ = host.notify(note.method(), note.params()).await;
        }
    }
}
