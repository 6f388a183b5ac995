//! The shared mode: one stdio MCP server, started as a child, shared by many Streamable HTTP
//! clients over one peer.
//!
//! ```text
//!  client A ─┐  POST/GET, both eras                 ┌─ one child process (stdio)
//!  client B ─┼─► HttpServer ─► BridgeHandler (each) ─┼─► one peer to it: its ids, its mux
//!  client C ─┘  ◄── answers under the client's ids ◄─┘◄── ChildHandler: what the child sends,
//!                                                         to the client it concerns
//! ```
//!
//! The bridge starts the child and opens it with `server/discover` first (`open.rs`, with the
//! era probe the client role runs too, `crate::probe`): a child that answers it and refuses
//! the `initialize` sent next is modern-only, spoken to in 2026-07-28 alone; one that also
//! takes `initialize` has a legacy session besides; one that refuses `server/discover` is
//! opened with `initialize`. The bridge holds what it answered (`handshake.rs`).
//! For a modern-only child, a legacy client's `initialize` is answered from its
//! `DiscoverResult`, and each of its requests goes as a 2026-07-28 one (its envelope from the
//! session); its subscriptions and list changes go through one listen stream of the bridge's
//! (`listen_to_child.rs`). Each client is a [`BridgeHandler`] ([`Bridge::handler`],
//! `forward.rs`): a legacy client's `initialize` is answered from the held result; every other
//! request goes through the bridge's peer to the child, which gives it an id of its own (the
//! mux's), and its answer goes back under the client's id. Progress tokens are replaced with
//! the bridge's and put back; a client's cancellation drops the forwarded request, which sends
//! the child `notifications/cancelled` under the child-side id.
//!
//! What the child sends (`route.rs`): progress goes to the request whose token it carries; a
//! request (sampling, elicitation, roots) or log message goes to the one client with requests
//! in flight, and is refused with -32000 (and counted) when several have, since the wire does
//! not say which it concerns. For a modern client of a legacy-only child, such a request during
//! its `tools/call` or `prompts/get` holds the call (`hold/`): the client is answered
//! `input_required` with the request and a sealed `requestState`, and its retry answers the
//! child. A modern client's `subscriptions/listen` to such a child is served by the bridge
//! itself, from the child's session (`listen_for_clients.rs`). With a child that also speaks
//! 2026-07-28, a legacy client's `tools/call` and `prompts/get` go to it as modern requests:
//! the child then asks for input in its answer, and the bridge asks the calling client, so
//! each client gets its own questions however many call at once. List changes go to every
//! session, resource updates to the sessions that subscribed.
//!
//! Bounds: [`BridgeBuilder::max_client_in_flight`] requests of one client in flight (-32000
//! past it), [`BridgeBuilder::max_child_in_flight`] of all clients, admitted round-robin
//! between clients past it (`admission.rs`). A child that exits is started again after a
//! backoff; its requests in flight fail with -32603 saying so, and the legacy sessions end
//! (their clients get 404 and initialize again). A child that hangs (a request waited
//! [`BridgeBuilder::hang_timeout`] and the child did not answer the bridge's `ping` within as
//! long again) is killed and treated the same (`liveness.rs`). What the two sides share, the
//! requests in flight among it, is `state.rs`.

mod admission;
mod forward;
mod handshake;
mod hold;
mod listen_for_clients;
mod listen_to_child;
mod liveness;
mod open;
mod route;
mod state;

use crate::sync::RwLocked;
use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;

use crate::http::HttpServer;
use crate::limits::{
    DEFAULT_BRIDGE_CHILD_IN_FLIGHT, DEFAULT_BRIDGE_CLIENT_IN_FLIGHT,
    DEFAULT_BRIDGE_DISCOVER_TIMEOUT, DEFAULT_BRIDGE_HANG_TIMEOUT, DEFAULT_BRIDGE_HELD_CALLS,
    DEFAULT_BRIDGE_HELD_TIMEOUT, DEFAULT_BRIDGE_LISTEN_STREAMS, DEFAULT_BRIDGE_RESTART_MAX,
    DEFAULT_BRIDGE_RESTART_MIN,
};
use crate::mcp;
use crate::peer::{ConnectionTask, PeerBuilder};
use crate::sync::Locked;
use crate::transport::{self, ChildStderr};
pub use forward::BridgeHandler;
pub(super) use forward::is_modern;
use route::ChildHandler;
use state::{ChildLink, Config, Inner};

/// How long after the child ended its clients' sessions are ended: the requests that failed
/// with it are answered first.
const SESSION_END_GRACE: Duration = Duration::from_millis(100);

/// Builds a [`Bridge`]: its bounds, then the child to run.
#[derive(Clone, Debug)]
pub struct BridgeBuilder {
    config: Config,
    peer: PeerBuilder,
    stderr: ChildStderr,
    stderr_tail: usize,
}

impl Default for BridgeBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl BridgeBuilder {
    /// The defaults: [`DEFAULT_BRIDGE_CLIENT_IN_FLIGHT`], [`DEFAULT_BRIDGE_CHILD_IN_FLIGHT`],
    /// the peer's request timeout, restarts without end from
    /// [`DEFAULT_BRIDGE_RESTART_MIN`] to [`DEFAULT_BRIDGE_RESTART_MAX`] apart.
    #[must_use]
    pub fn new() -> Self {
        Self {
            config: Config {
                max_client_in_flight: DEFAULT_BRIDGE_CLIENT_IN_FLIGHT,
                max_child_in_flight: DEFAULT_BRIDGE_CHILD_IN_FLIGHT,
                request_timeout: Some(crate::limits::DEFAULT_REQUEST_TIMEOUT),
                restart_backoff: (DEFAULT_BRIDGE_RESTART_MIN, DEFAULT_BRIDGE_RESTART_MAX),
                max_restarts: None,
                hang_timeout: Some(DEFAULT_BRIDGE_HANG_TIMEOUT),
                max_held_calls: DEFAULT_BRIDGE_HELD_CALLS,
                held_timeout: DEFAULT_BRIDGE_HELD_TIMEOUT,
                max_listen_streams: DEFAULT_BRIDGE_LISTEN_STREAMS,
                discover_timeout: DEFAULT_BRIDGE_DISCOVER_TIMEOUT,
            },
            peer: PeerBuilder::new(),
            stderr: ChildStderr::Tracing,
            stderr_tail: crate::limits::DEFAULT_CHILD_STDERR_TAIL,
        }
    }

    /// The most requests one client may have in flight to the child (at least 1); one more is
    /// answered -32000 at once, with `data.maxInFlight`.
    #[must_use]
    pub fn max_client_in_flight(mut self, n: usize) -> Self {
        self.config.max_client_in_flight = n.max(1);
        self
    }

    /// The most requests of all clients in flight to the child at once (at least 1); past it
    /// requests wait, each waiting client served in turn.
    #[must_use]
    pub fn max_child_in_flight(mut self, n: usize) -> Self {
        self.config.max_child_in_flight = n.max(1);
        self
    }

    /// How long a forwarded request waits for the child (`None`: as long as its client
    /// waits); progress restarts it.
    #[must_use]
    pub fn request_timeout(mut self, t: Option<Duration>) -> Self {
        self.config.request_timeout = t;
        self
    }

    /// The delay before the first restart of a child that exited, doubling up to `max` for
    /// each restart in a row (a child that ran longer than `max` starts again from `min`).
    #[must_use]
    pub fn restart_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.config.restart_backoff = (min, max.max(min));
        self
    }

    /// Gives up after `n` restarts in a row (`None`: never); requests then fail with -32603.
    #[must_use]
    pub fn max_restarts(mut self, n: Option<u32>) -> Self {
        self.config.max_restarts = n;
        self
    }

    /// How long a request may wait for the child before the bridge pings it, and how long the
    /// child then has to answer the ping; one that does not is taken to hang, killed and
    /// started again (`None`: never pinged). [`DEFAULT_BRIDGE_HANG_TIMEOUT`] by default.
    #[must_use]
    pub fn hang_timeout(mut self, t: Option<Duration>) -> Self {
        self.config.hang_timeout = t.filter(|t| !t.is_zero());
        self
    }

    /// The most calls of modern clients to a legacy-only child held at once for their input
    /// (at least 1): past it the child's request is refused and the call answered -32000.
    /// [`DEFAULT_BRIDGE_HELD_CALLS`] by default.
    #[must_use]
    pub fn max_held_calls(mut self, n: usize) -> Self {
        self.config.max_held_calls = n.max(1);
        self
    }

    /// How long a held call waits for its client to come back with the input (the
    /// `requestState` expires then): [`DEFAULT_BRIDGE_HELD_TIMEOUT`] by default.
    #[must_use]
    pub fn held_timeout(mut self, t: Duration) -> Self {
        self.config.held_timeout = t;
        self
    }

    /// The most `subscriptions/listen` streams of modern clients held open at once when the
    /// child is legacy-only (the bridge serves them itself, from the child's session); one more
    /// is answered -32000 at once. [`DEFAULT_BRIDGE_LISTEN_STREAMS`] by default; 0 is taken as
    /// 1. A child that speaks 2026-07-28 holds its listen streams itself, under its own bound.
    #[must_use]
    pub fn max_listen_streams(mut self, n: usize) -> Self {
        self.config.max_listen_streams = n.max(1);
        self
    }

    /// How long the child may take to answer the bridge's opening `server/discover` (and, once
    /// it did, the `initialize` that asks whether it also keeps a legacy session): past it the
    /// child is taken to be a legacy one and opened with `initialize` (a modern-only one).
    /// [`DEFAULT_BRIDGE_DISCOVER_TIMEOUT`] by default; at least 1 ms.
    #[must_use]
    pub fn discover_timeout(mut self, t: Duration) -> Self {
        self.config.discover_timeout = t.max(Duration::from_millis(1));
        self
    }

    /// The peer to the child: its limits and timeouts.
    #[must_use]
    pub fn child_peer(mut self, peer: PeerBuilder) -> Self {
        self.peer = peer;
        self
    }

    /// Where the child's stderr goes, line by line (a longer line in 8 KiB pieces): `tracing`
    /// (target `mcpwire::child`) by default.
    #[must_use]
    pub fn stderr(mut self, to: ChildStderr) -> Self {
        self.stderr = to;
        self
    }

    /// How much of the child's stderr is kept for the reason it exited.
    #[must_use]
    pub fn stderr_tail(mut self, bytes: usize) -> Self {
        self.stderr_tail = bytes;
        self
    }

    /// Starts `program` with `args` and opens its session.
    ///
    /// # Errors
    ///
    /// When it cannot be started, or ends while it is opened, or is a legacy one (it did not
    /// answer `server/discover` as a 2026-07-28 server) that does not answer `initialize`
    /// (within 30 s) with a result.
    pub async fn start<S, I, A>(self, program: S, args: I) -> io::Result<Bridge>
    where
        S: Into<OsString>,
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        let spec = Arc::new(Spec {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            peer: self.peer,
            stderr: self.stderr,
            stderr_tail: self.stderr_tail,
        });
        let inner = Arc::new(Inner::new(self.config));
        let (link, conn) = launch(&inner, &spec).await?;
        *inner.child.write_locked() = Some(link);
        tokio::spawn(supervise(Arc::downgrade(&inner), spec, conn));
        Ok(Bridge { inner })
    }
}

/// What starts the child, again after it exits.
struct Spec {
    program: OsString,
    args: Vec<OsString>,
    peer: PeerBuilder,
    stderr: ChildStderr,
    stderr_tail: usize,
}

/// A running bridge: clone it freely; [`Bridge::close`] ends the child.
#[derive(Clone)]
pub struct Bridge {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge").field("stats", &self.stats()).finish()
    }
}

/// A bridge's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BridgeStats {
    /// Requests sent to the child for clients.
    pub forwarded: u64,
    /// Requests refused for a client past [`BridgeBuilder::max_client_in_flight`].
    pub refused_client_bound: u64,
    /// Requests waiting for their turn to the child now.
    pub waiting: usize,
    /// The child's requests sent to the client they concern.
    pub child_requests_routed: u64,
    /// The child's requests refused: no client could be told to be the one they concern.
    pub child_requests_refused: u64,
    /// The child's progress and other notifications sent to the client they concern.
    pub notifications_routed: u64,
    /// The child's notifications that concerned no client that could be told.
    pub notifications_dropped: u64,
    /// List changes and resource updates sent, one per session.
    pub notifications_fanned_out: u64,
    /// Times the child was started again after it exited.
    pub child_restarts: u64,
    /// Times the child was found to hang (it did not answer a ping in time) and killed.
    pub child_hangs: u64,
    /// Modern clients' calls held for their input (one per `input_required` round).
    pub calls_held: u64,
    /// Calls held now.
    pub held_now: usize,
    /// Child requests refused past [`BridgeBuilder::max_held_calls`].
    pub held_calls_refused: u64,
    /// Held calls given up: their client did not come back in time.
    pub held_calls_expired: u64,
    /// Legacy sessions ended because their child exited.
    pub sessions_ended_by_restart: u64,
}

impl Bridge {
    /// A handler for one more client (the factory of [`HttpServer::serve`]).
    #[must_use]
    pub fn handler(&self) -> BridgeHandler {
        BridgeHandler { inner: self.inner.clone(), client: self.inner.new_client() }
    }

    /// Serves the child on `server` until `stop` completes, then ends the child.
    ///
    /// # Errors
    ///
    /// As [`HttpServer::serve`].
    pub async fn serve(
        &self,
        server: HttpServer,
        listener: TcpListener,
        stop: impl Future<Output = ()>,
    ) -> io::Result<()> {
        let me = self.clone();
        let served = server.serve(listener, move || me.handler(), stop).await;
        self.close();
        served
    }

    /// The child's `initialize` result, as it answered it (the one held now); for a modern-only
    /// child, the one the bridge built from its `server/discover` result.
    #[must_use]
    pub fn initialize_result(&self) -> Option<String> {
        self.inner.child().ok().map(|l| l.handshake.result.clone())
    }

    /// Whether the child also answers 2026-07-28 requests.
    #[must_use]
    pub fn child_speaks_modern(&self) -> bool {
        self.inner.child().is_ok_and(|l| l.handshake.modern)
    }

    /// Whether the child answers 2026-07-28 requests only (it answered `server/discover` and
    /// then refused `initialize`, as a server that picks one era per connection does): legacy
    /// clients are then served by translating each of their requests.
    #[must_use]
    pub fn child_modern_only(&self) -> bool {
        self.inner.child().is_ok_and(|l| l.handshake.modern_only)
    }

    /// The `x-mcp-header` annotations of the child's tools (its `tools/list`, first page), for
    /// [`HttpServer::tool_headers`]: a modern client's `Mcp-Param-*` headers are then checked
    /// as the child's own HTTP server would. `None` when the child lists no tools.
    pub async fn tool_headers(&self) -> Option<mcp::annotations::ToolHeaders> {
        let link = self.inner.child().ok()?;
        // A modern-only child takes requests in the 2026-07-28 envelope only.
        let envelope = link.handshake.modern_only.then(handshake::envelope_params);
        let params = envelope.as_deref().map(crate::message::RawJson::new);
        let list = link.peer.request("tools/list", params).await.ok()?;
        let (tools, _) =
            mcp::annotations::ToolHeaders::from_tools_list(list.result()?.get()).ok()?;
        Some(tools)
    }

    /// The counters.
    #[must_use]
    pub fn stats(&self) -> BridgeStats {
        let c = &self.inner.counters;
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        BridgeStats {
            forwarded: get(&c.forwarded),
            refused_client_bound: get(&c.refused_client_bound),
            waiting: self.inner.admission.waiting(),
            child_requests_routed: get(&c.child_requests_routed),
            child_requests_refused: get(&c.child_requests_refused),
            notifications_routed: get(&c.notifications_routed),
            notifications_dropped: get(&c.notifications_dropped),
            notifications_fanned_out: get(&c.notifications_fanned_out),
            child_restarts: get(&c.child_restarts),
            child_hangs: get(&c.child_hangs),
            calls_held: get(&c.calls_held),
            held_now: self.inner.holds.len(),
            held_calls_refused: get(&c.held_calls_refused),
            held_calls_expired: get(&c.held_calls_expired),
            sessions_ended_by_restart: get(&c.sessions_ended_by_restart),
        }
    }

    /// Ends the child (it is not started again); requests fail from now on.
    pub fn close(&self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        *self.inner.child_gone.locked() = "the bridge is stopping".into();
        if let Some(l) = self.inner.child.write_locked().take() {
            l.peer.close();
        }
    }
}

/// Starts the child and opens it (`open.rs`: its era, and what it answered).
async fn launch(inner: &Arc<Inner>, spec: &Spec) -> io::Result<(ChildLink, ConnectionTask)> {
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.args(&spec.args);
    let handler = ChildHandler { inner: Arc::downgrade(inner) };
    let (peer, mut conn) = transport::spawn_child_with(
        &spec.peer,
        cmd,
        spec.stderr.clone(),
        spec.stderr_tail,
        handler,
    )?;
    let handshake = open::open(&peer, &mut conn, inner.config.discover_timeout).await?;
    let hung = Arc::default();
    if let Some(t) = inner.config.hang_timeout {
        let watch = liveness::watch(Arc::downgrade(inner), peer.clone(), Arc::clone(&hung), t);
        tokio::spawn(watch);
    }
    Ok((ChildLink { peer, handshake: Arc::new(handshake), hung }, conn))
}

/// Watches the child: when it exits, ends the legacy sessions and starts it again after the
/// backoff, for as long as the bridge runs.
async fn supervise(weak: Weak<Inner>, spec: Arc<Spec>, mut conn: ConnectionTask) {
    let mut started = Instant::now();
    let mut in_a_row = 0u32;
    loop {
        let reason = conn.closed().await;
        let Some(inner) = weak.upgrade() else { return };
        if inner.stopping.load(Ordering::SeqCst) {
            return;
        }
        let hung = inner.child.read_locked().as_ref().and_then(|l| l.hung.get().cloned());
        if let Some(why) = hung {
            tracing::warn!(%why, "mcpwire bridge: the child server hung; starting it again");
        } else {
            tracing::warn!(%reason, "mcpwire bridge: the child server ended; starting it again");
            *inner.child_gone.locked() =
                format!("the child server ended ({reason}); it is starting again");
        }
        // The requests that failed with it answer their clients first; then their sessions end.
        tokio::time::sleep(SESSION_END_GRACE).await;
        for c in inner.sessions() {
            if let Some(p) = c.session.locked().peer.take() {
                p.close();
                inner.counters.sessions_ended_by_restart.fetch_add(1, Ordering::Relaxed);
            }
        }
        let (min, max) = inner.config.restart_backoff;
        if started.elapsed() > max {
            in_a_row = 0;
        }
        loop {
            if inner.config.max_restarts.is_some_and(|n| in_a_row >= n) {
                *inner.child_gone.locked() = format!(
                    "the child server ended ({reason}) and was restarted {in_a_row} times in a row: given up"
                );
                return;
            }
            let delay = min.saturating_mul(1 << in_a_row.min(16)).min(max);
            in_a_row += 1;
            tokio::time::sleep(delay).await;
            if inner.stopping.load(Ordering::SeqCst) {
                return;
            }
            match launch(&inner, &spec).await {
                Ok((link, c)) => {
                    *inner.child.write_locked() = Some(link);
                    inner.counters.child_restarts.fetch_add(1, Ordering::Relaxed);
                    conn = c;
                    started = Instant::now();
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "mcpwire bridge: the child server did not start again");
                    *inner.child_gone.locked() = format!("the child server cannot start: {e}");
                }
            }
        }
    }
}
