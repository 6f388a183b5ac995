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
//! Costs: one entry per connection (an id, a counter and two `Notify` behind an `Arc`, with a
//! weak link to the table); finding the oldest idle one is O(connections) under the table's
//! lock, and happens only when the table is full. Every response body carries a guard that
//! marks its connection busy until the body ends (one boxed body per response).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tokio::sync::Notify;

use super::Body;

/// One connection's entry.
#[derive(Debug)]
pub(super) struct Conn {
    /// Requests in progress on it (a request from its head until its response body ends).
    busy: AtomicUsize,
    /// Told to close.
    shed: Notify,
    /// `busy` went from 0 to 1 or from 1 to 0.
    changed: Notify,
    /// The table it is in (none for a connection served by itself), told when it turns idle so
    /// a connection waiting for a place may take this one's.
    table: std::sync::Weak<Connections>,
}

impl Conn {
    /// An entry of no table: a connection served by itself, tracked for its idle bound.
    pub(super) fn new() -> Arc<Self> {
        Self::in_table(std::sync::Weak::new())
    }

    fn in_table(table: std::sync::Weak<Connections>) -> Arc<Self> {
        Arc::new(Self {
            busy: AtomicUsize::new(0),
            shed: Notify::new(),
            changed: Notify::new(),
            table,
        })
    }

    /// Completes once no request has been in progress on the connection for `d` (an HTTP/2
    /// connection counts each of its streams, so it is idle only when all have ended).
    pub(super) async fn idle_for(&self, d: std::time::Duration) {
        loop {
            // Registered before the check, so a change between the check and the wait is
            // not missed.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.busy.load(Ordering::Acquire) == 0 {
                if tokio::time::timeout(d, changed).await.is_err() {
                    return;
                }
            } else {
                changed.await;
            }
        }
    }

    /// Completes when the connection is to be closed to make room.
    pub(super) async fn shed(&self) {
        self.shed.notified().await;
    }

    /// Marks a request in progress until the guard (kept in its response body) drops.
    pub(super) fn busy(self: &Arc<Self>) -> Busy {
        if self.busy.fetch_add(1, Ordering::AcqRel) == 0 {
            self.changed.notify_waiters();
        }
        Busy(self.clone())
    }
}

/// A request in progress on a connection.
#[derive(Debug)]
pub(super) struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        if self.0.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.changed.notify_waiters();
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
        self.table.table.lock().unwrap_or_else(PoisonError::into_inner).open.remove(&self.id);
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
                let mut t = self.table.lock().unwrap_or_else(PoisonError::into_inner);
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
        self.table.lock().unwrap_or_else(PoisonError::into_inner).open.len()
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
