//! The connection table: how many TCP connections are served at once, and which one makes room
//! when the table is full.
//!
//! A table that stopped the accept loop until a connection closed would let an attacker holding
//! `max_connections` idle connections (or dribbling a header line every few seconds, slowloris)
//! keep every new client waiting for the read timeout. So a new connection past the cap sheds
//! the **oldest connection with no request in progress**: one sitting idle between requests, or
//! one still sending a request's headers. A connection whose request is being answered (a
//! handler running, a response or event stream being written) is never shed; only when every
//! connection is busy does accepting wait, until one finishes or has no request in progress any
//! more (an HTTP/2 connection: none of its streams).
//!
//! Costs: one entry per connection (an id, two counters, a clock's start and a `Notify` behind
//! an `Arc`, with a weak link to the table); finding the oldest idle one is O(connections) under the table's
//! lock, and happens only when the table is full. Every response body carries a guard that
//! marks its connection busy until the body ends (one boxed body per response).

use crate::sync::Locked;
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::Body;

/// One connection's entry.
///
/// Its idle bound costs a request nothing but two atomic counts and a clock read: the bound's
/// timer is armed once per bound, not once per request, and nothing wakes the connection's
/// task when a request starts or ends (its task would be polled once more per request).
#[derive(Debug)]
pub(super) struct Conn {
    /// Requests in progress on it (a request from its head until its response body ends).
    busy: AtomicUsize,
    /// When `busy` last fell to 0, in nanoseconds after `epoch`; [`BUSY`] while a request is in
    /// progress.
    quiet_since: AtomicU64,
    /// The clock `quiet_since` counts from (tokio's, so a test's paused clock drives it).
    epoch: Instant,
    /// Told to close.
    shed: Notify,
    /// The table it is in (none for a connection served by itself), told when it turns idle so
    /// a connection waiting for a place may take this one's.
    table: std::sync::Weak<Connections>,
}

/// `quiet_since` of a connection with a request in progress.
const BUSY: u64 = u64::MAX;

impl Conn {
    /// An entry of no table: a connection served by itself, tracked for its idle bound.
    pub(super) fn new() -> Arc<Self> {
        Self::in_table(std::sync::Weak::new())
    }

    fn in_table(table: std::sync::Weak<Connections>) -> Arc<Self> {
        Arc::new(Self {
            busy: AtomicUsize::new(0),
            quiet_since: AtomicU64::new(0),
            epoch: Instant::now(),
            shed: Notify::new(),
            table,
        })
    }

    /// Completes once no request has been in progress on the connection for `d` (an HTTP/2
    /// connection counts each of its streams, so it is idle only when all have ended).
    ///
    /// It looks at the connection when the bound can first have passed: `d` after the last
    /// request ended, or (while one is in progress) `d` later, and again from there; so a
    /// connection with requests going on is looked at once per `d`, and one that turned quiet
    /// is found idle exactly `d` after its last request ended.
    pub(super) async fn idle_for(&self, d: Duration) {
        loop {
            // `quiet_since` before `busy`: a request that starts in between is seen in progress.
            let since = self.quiet_since.load(Ordering::SeqCst);
            let quiet = since != BUSY && self.busy.load(Ordering::SeqCst) == 0;
            let now = Instant::now();
            let at = if quiet { self.epoch + Duration::from_nanos(since) + d } else { now + d };
            if quiet && at <= now {
                return;
            }
            tokio::time::sleep_until(at).await;
        }
    }

    /// Completes when the connection is to be closed to make room.
    pub(super) async fn shed(&self) {
        self.shed.notified().await;
    }

    /// Marks a request in progress until the guard (kept in its response body) drops.
    pub(super) fn busy(self: &Arc<Self>) -> Busy {
        if self.busy.fetch_add(1, Ordering::SeqCst) == 0 {
            self.quiet_since.store(BUSY, Ordering::SeqCst);
        }
        Busy(self.clone())
    }
}

/// A request in progress on a connection.
#[derive(Debug)]
pub(super) struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        if self.0.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            // A request that started since (another stream) stored `BUSY` and is counted in
            // `busy`, which `idle_for` also reads: it sees the connection in progress.
            let since = self.0.epoch.elapsed().as_nanos();
            let since = u64::try_from(since).unwrap_or(BUSY - 1);
            self.0.quiet_since.store(since, Ordering::SeqCst);
            if let Some(table) = self.0.table.upgrade() {
                table.freed.notify_one();
            }
        }
    }
}

/// The connections served now, oldest first.
#[derive(Debug, Default)]
pub(super) struct Connections {
    table: Mutex<Table>,
    /// A connection ended, or has no request in progress any more: room for one waiting in
    /// `admit` (at most one wake-up in vain, which only checks the table again).
    freed: Notify,
    /// Connections shed to make room.
    pub(super) shed: AtomicU64,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    open: BTreeMap<u64, Arc<Conn>>,
}

/// A connection's place in the table; gives it back when dropped.
#[derive(Debug)]
pub(super) struct Admitted {
    table: Arc<Connections>,
    id: u64,
    pub(super) conn: Arc<Conn>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.table.table.locked().open.remove(&self.id);
        self.table.freed.notify_one();
    }
}

impl Connections {
    /// A place for one more connection among at most `max`: at once while there is room;
    /// otherwise the oldest connection with no request in progress is told to close and its
    /// place taken; when every connection is busy, waits for one to end.
    pub(super) async fn admit(self: &Arc<Self>, max: usize) -> Admitted {
        loop {
            // Registered before the check, so an end between the check and the wait is not
            // missed.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut t = self.table.locked();
                if t.open.len() >= max {
                    let oldest_idle = t
                        .open
                        .iter()
                        .find(|(_, c)| c.busy.load(Ordering::Acquire) == 0)
                        .map(|(id, _)| *id);
                    if let Some(id) = oldest_idle
                        && let Some(c) = t.open.remove(&id)
                    {
                        // `notify_one` keeps the signal for a task that is not waiting yet.
                        c.shed.notify_one();
                        self.shed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if t.open.len() < max {
                    let id = t.next;
                    t.next += 1;
                    let conn = Conn::in_table(Arc::downgrade(self));
                    t.open.insert(id, conn.clone());
                    return Admitted { table: self.clone(), id, conn };
                }
            }
            freed.await;
        }
    }

    /// Connections served now.
    pub(super) fn len(&self) -> usize {
        self.table.locked().open.len()
    }
}

/// A response body that keeps its connection marked busy until it ends.
pub(super) struct Guarded {
    inner: Body,
    _busy: Busy,
}

impl Guarded {
    pub(super) fn wrap(inner: Body, busy: Busy) -> Body {
        Body::new(Self { inner, _busy: busy })
    }
}

impl hyper::body::Body for Guarded {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests;
