//! Isolated mode: a child of its own for each legacy session, for servers that keep state per
//! connection. Each session's `initialize` takes a place in a bounded pool and starts a child
//! (a one-client [`Bridge`] that is never restarted); the session's requests go to it alone.
//!
//! - Past [`IsolatedBuilder::max_children`] a new session's `initialize` is refused with -32000
//!   (`data.maxChildren`); a place frees when a session ends.
//! - A child that exits ends its session (its client gets 404 and initializes again, with a
//!   new child); a session that ends (DELETE, the HTTP server's own expiry) ends its child.
//! - A child with no request for [`IsolatedBuilder::idle_timeout`] is ended, and its session
//!   with it.
//! - A modern (2026-07-28) request has no session: it would have to share a child with every
//!   other, which is what isolation rules out, so it is refused with -32000 saying so.

use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::{OnceCell, OwnedSemaphorePermit, Semaphore};

use super::shared::is_modern;
use super::{Bridge, BridgeBuilder, BridgeHandler};
use crate::error::ErrorCode;
use crate::http::HttpServer;
use crate::limits::{DEFAULT_BRIDGE_IDLE_TIMEOUT, DEFAULT_BRIDGE_MAX_CHILDREN};
use crate::peer::{Context, Handler, Incoming, PeerHandle, Reply, RpcError};
use crate::sync::Locked;

impl BridgeBuilder {
    /// Isolated mode: a child per legacy session, from a pool of at most
    /// [`DEFAULT_BRIDGE_MAX_CHILDREN`], each ended after [`DEFAULT_BRIDGE_IDLE_TIMEOUT`] without
    /// a request. This builder's bounds, peer and stderr apply to each child; it is never
    /// restarted (its session ends with it).
    #[must_use]
    pub fn isolated(self) -> IsolatedBuilder {
        IsolatedBuilder {
            base: self.max_restarts(Some(0)),
            max_children: DEFAULT_BRIDGE_MAX_CHILDREN,
            idle_timeout: Some(DEFAULT_BRIDGE_IDLE_TIMEOUT),
        }
    }
}

/// Builds an [`IsolatedBridge`] ([`BridgeBuilder::isolated`]).
#[derive(Clone, Debug)]
pub struct IsolatedBuilder {
    base: BridgeBuilder,
    max_children: usize,
    idle_timeout: Option<Duration>,
}

impl IsolatedBuilder {
    /// The most children at once (at least 1); one more session is refused with -32000.
    #[must_use]
    pub fn max_children(mut self, n: usize) -> Self {
        self.max_children = n.max(1);
        self
    }

    /// How long a child may go without a request before it and its session end (`None`:
    /// never).
    #[must_use]
    pub fn idle_timeout(mut self, t: Option<Duration>) -> Self {
        self.idle_timeout = t;
        self
    }

    /// What starts each session's child: `program` with `args`. Nothing starts until a
    /// session's `initialize`.
    #[must_use]
    pub fn start<S, I, A>(self, program: S, args: I) -> IsolatedBridge
    where
        S: Into<OsString>,
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        IsolatedBridge {
            pool: Arc::new(Pool {
                base: self.base,
                program: program.into(),
                args: args.into_iter().map(Into::into).collect(),
                places: Arc::new(Semaphore::new(self.max_children)),
                max_children: self.max_children,
                idle_timeout: self.idle_timeout,
                live: Mutex::new(Vec::new()),
                counters: Counters::default(),
            }),
        }
    }
}

/// The pool every session's handler takes its child from.
struct Pool {
    base: BridgeBuilder,
    program: OsString,
    args: Vec<OsString>,
    places: Arc<Semaphore>,
    max_children: usize,
    idle_timeout: Option<Duration>,
    /// The children running (swept of ended ones as new ones start), for `close`.
    live: Mutex<Vec<Weak<Slot>>>,
    counters: Counters,
}

#[derive(Default)]
struct Counters {
    started: AtomicU64,
    refused: AtomicU64,
    reaped: AtomicU64,
    running: AtomicUsize,
}

/// An isolated bridge: clone it freely; [`IsolatedBridge::close`] ends every child.
#[derive(Clone)]
pub struct IsolatedBridge {
    pool: Arc<Pool>,
}

impl std::fmt::Debug for IsolatedBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IsolatedBridge").field("stats", &self.stats()).finish()
    }
}

/// An isolated bridge's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IsolatedStats {
    /// Children running now.
    pub children: usize,
    /// Children started, one per session.
    pub started: u64,
    /// Sessions refused: every place in the pool was taken.
    pub refused: u64,
    /// Children ended for being idle.
    pub reaped: u64,
}

impl IsolatedBridge {
    /// A handler for one more client (the factory of [`HttpServer::serve`]).
    #[must_use]
    pub fn handler(&self) -> IsolatedHandler {
        IsolatedHandler { pool: self.pool.clone(), slot: OnceCell::new() }
    }

    /// Serves on `server` until `stop` completes, then ends every child.
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

    /// The counters.
    #[must_use]
    pub fn stats(&self) -> IsolatedStats {
        let c = &self.pool.counters;
        IsolatedStats {
            children: c.running.load(Ordering::Relaxed),
            started: c.started.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            reaped: c.reaped.load(Ordering::Relaxed),
        }
    }

    /// Ends every child, and their sessions.
    pub fn close(&self) {
        let live: Vec<_> = self.pool.live.locked().drain(..).collect();
        for slot in live.iter().filter_map(Weak::upgrade) {
            slot.end();
        }
    }
}

/// One session's child.
struct Slot {
    bridge: Bridge,
    handler: BridgeHandler,
    /// The session's handle, not tied to a request: closing it ends the session (404).
    session: PeerHandle,
    last: Mutex<Instant>,
    busy: AtomicUsize,
    pool: Weak<Pool>,
    /// The pool's place, given back once the child or the session ended.
    place: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Slot {
    /// Ends the child and the session, and gives the place back (once).
    fn end(&self) {
        self.bridge.close();
        self.session.close();
        if self.place.locked().take().is_some()
            && let Some(pool) = self.pool.upgrade()
        {
            pool.counters.running.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.end();
    }
}

/// Counts a request in flight on a slot, and when the last ended.
struct Busy<'a>(&'a Slot);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        *self.0.last.locked() = Instant::now();
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One client's handler in isolated mode: its session's child, once it sent `initialize`.
pub struct IsolatedHandler {
    pool: Arc<Pool>,
    slot: OnceCell<Arc<Slot>>,
}

impl std::fmt::Debug for IsolatedHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IsolatedHandler").field("child", &self.slot.initialized()).finish()
    }
}

impl Handler for IsolatedHandler {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        if is_modern(req) {
            return Err(RpcError::new(
                ErrorCode::SERVER_ERROR,
                "mcpwire bridge: isolated mode gives each legacy session a child of its own; a \
                 2026-07-28 request has no session, and would have to share one: send \
                 initialize (a legacy session), or use the bridge in shared mode",
            ));
        }
        let slot = match self.slot.get() {
            Some(slot) => slot,
            None if req.method() == "initialize" => {
                self.slot.get_or_try_init(|| self.pool.open(cx)).await?
            }
            None => {
                return Err(RpcError::new(
                    ErrorCode::SERVER_ERROR,
                    "mcpwire bridge: this session has no child: send initialize first",
                ));
            }
        };
        slot.busy.fetch_add(1, Ordering::AcqRel);
        let _busy = Busy(slot);
        slot.handler.request(req, cx).await
    }

    async fn notification(&self, note: &Incoming, cx: &Context) {
        if let Some(slot) = self.slot.get() {
            *slot.last.locked() = Instant::now();
            slot.handler.notification(note, cx).await;
        }
    }
}

impl Pool {
    /// Takes a place and starts a child for the session `cx` belongs to.
    async fn open(self: &Arc<Self>, cx: &Context) -> Result<Arc<Slot>, RpcError> {
        let Ok(place) = self.places.clone().try_acquire_owned() else {
            self.counters.refused.fetch_add(1, Ordering::Relaxed);
            let n = self.max_children;
            return Err(RpcError::new(
                ErrorCode::SERVER_ERROR,
                format!(
                    "mcpwire bridge: all {n} children of isolated mode are in use \
                     (--max-children): try again once a session has ended"
                ),
            )
            .with_data(&serde_json::json!({ "maxChildren": n })));
        };
        let bridge = self.base.clone().start(&self.program, &self.args).await.map_err(|e| {
            RpcError::internal(format!("mcpwire bridge: the session's child did not start: {e}"))
        })?;
        self.counters.started.fetch_add(1, Ordering::Relaxed);
        self.counters.running.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot {
            handler: bridge.handler(),
            bridge,
            session: cx.peer().unrelated(),
            last: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
            pool: Arc::downgrade(self),
            place: Mutex::new(Some(place)),
        });
        {
            let mut live = self.live.locked();
            live.retain(|w| w.strong_count() > 0);
            live.push(Arc::downgrade(&slot));
        }
        let session = slot.session.clone();
        tokio::spawn(watch(
            Arc::downgrade(&slot),
            Arc::downgrade(self),
            session,
            self.idle_timeout,
        ));
        Ok(slot)
    }
}

/// Watches a session's child: when the session ends (its client's DELETE, the HTTP server's
/// expiry, or the child's exit, after which the child's bridge ends it), the child ends and the
/// place is given back; after `idle` without a request, both end.
async fn watch(slot: Weak<Slot>, pool: Weak<Pool>, session: PeerHandle, idle: Option<Duration>) {
    loop {
        let wait = {
            let Some(s) = slot.upgrade() else { return };
            let last = *s.last.locked();
            let busy = s.busy.load(Ordering::Acquire) > 0;
            match idle {
                Some(idle) if !busy && last.elapsed() >= idle => {
                    tracing::info!("mcpwire bridge: an isolated session's child was idle: ended");
                    if let Some(pool) = pool.upgrade() {
                        pool.counters.reaped.fetch_add(1, Ordering::Relaxed);
                    }
                    s.end();
                    return;
                }
                // Busy: looked at again a whole period later at the latest.
                Some(idle) => Some(idle.saturating_sub(last.elapsed()))
                    .filter(|d| !d.is_zero())
                    .unwrap_or(idle),
                None => Duration::from_secs(3600),
            }
        };
        tokio::select! {
            () = session.closing() => {
                if let Some(s) = slot.upgrade() {
                    s.end();
                }
                return;
            }
            () = tokio::time::sleep(wait) => {}
        }
    }
}
