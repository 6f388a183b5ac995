//! One Streamable HTTP session on the server: a peer of its own, fed the frames POSTed to the
//! session, and a router that sends each message the peer writes to the HTTP response that
//! waits for it.
//!
//! Routing: a response goes to the POST that carried its request (found by id); a
//! `notifications/progress` sent by a request's handler goes to that request's POST; every other
//! message (notifications, the server's own requests) goes to the session's GET stream, or is
//! dropped and counted when none is open. The peer says what each message is as it queues it
//! ([`Sent`]), so nothing it wrote is parsed again (but an `initialize` result, once, for the
//! version it names).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::sync::{mpsc, oneshot};

use super::{negotiated_version, sse_event};
use crate::limits::ANSWERED_KEPT;
use crate::limits::CLOSE_GRACE;
use crate::limits::EARLY_CANCELS;
use crate::limits::IDLE_STATELESS_PEERS;
use crate::limits::POST_NOTES;
use crate::limits::SESSION_INBOX as INBOX;
use crate::limits::STREAM_BACKLOG;
use crate::peer::{Async, AsyncOutlet, Connection, Handler, PeerBuilder, PeerHandle, Sent, What};
use crate::{Frame, FrameParser, Limits, OwnedId};

/// What one POST waits for: the response (or batch of responses) to its request(s), and the
/// progress notifications sent before it.
pub(crate) struct Post {
    pub(crate) notes: mpsc::Sender<Bytes>,
    done: Mutex<Option<oneshot::Sender<Bytes>>>,
    /// Set when the client cancelled the request: no response will come, and none is owed.
    cancelled: std::sync::atomic::AtomicBool,
    /// Set once the response was handed to the POST: its handler is done.
    answered: std::sync::atomic::AtomicBool,
}

/// Peers of stateless requests that answered and wait for the next one, so a request does not
/// pay for starting a peer; at most [`IDLE_STATELESS_PEERS`] are kept. Also every stateless
/// peer started, so the server's stop can end those still answering.
#[derive(Default)]
pub(crate) struct Idle {
    state: Mutex<IdleState>,
}

#[derive(Default)]
struct IdleState {
    waiting: Vec<Arc<Session>>,
    /// Every stateless session started and not yet dropped (pruned as it grows).
    all: Vec<std::sync::Weak<Session>>,
    /// Set while the server is stopped: nothing is kept.
    closed: bool,
}

impl Idle {
    fn lock(&self) -> MutexGuard<'_, IdleState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A waiting peer that is still running.
    pub(crate) fn take(&self) -> Option<Arc<Session>> {
        let mut st = self.lock();
        while let Some(s) = st.waiting.pop() {
            if s.is_open() {
                return Some(s);
            }
            s.close();
        }
        None
    }

    fn started(&self, s: &Arc<Session>) {
        let mut st = self.lock();
        if st.all.len() >= 2 * IDLE_STATELESS_PEERS && st.all.len().is_power_of_two() {
            st.all.retain(|w| w.strong_count() > 0);
        }
        st.all.push(Arc::downgrade(s));
    }

    /// Opens the pool for a server that starts serving.
    pub(crate) fn open(&self) {
        self.lock().closed = false;
    }

    /// For a server that stops: ends every stateless peer, waiting or answering (its POST gets
    /// -32603), and keeps none from now on.
    pub(crate) fn close_all(&self) {
        let all: Vec<Arc<Session>> = {
            let mut st = self.lock();
            st.closed = true;
            st.waiting.clear();
            std::mem::take(&mut st.all).iter().filter_map(std::sync::Weak::upgrade).collect()
        };
        for s in all {
            s.close();
        }
    }
}

/// The receiving end of a [`Post`]; dropping it (the client went away, or the reply was sent)
/// removes its routes.
pub(crate) struct PostReceiver {
    pub(crate) notes: mpsc::Receiver<Bytes>,
    pub(crate) done: oneshot::Receiver<Bytes>,
    post: Arc<Post>,
    ids: Vec<OwnedId>,
    session: Arc<Session>,
}

impl PostReceiver {
    /// Whether the client cancelled the request (so the POST ends with no response).
    pub(crate) fn cancelled(&self) -> bool {
        self.post.cancelled.load(Ordering::Acquire)
    }

    /// Whether the POST is a stateless (2026-07-28) request's.
    pub(crate) fn stateless(&self) -> bool {
        self.session.single
    }

    /// The answer when the session ends before the response comes: an error response to the
    /// (first) request, -32603.
    pub(crate) fn abandoned(&self) -> Bytes {
        let id = self.ids.first().map_or(crate::Id::Null, OwnedId::as_id);
        let msg = "Internal error: the session ended before the request was answered";
        super::error_json(id, crate::ErrorCode::INTERNAL_ERROR, msg)
    }
}

impl Drop for PostReceiver {
    fn drop(&mut self) {
        let mut r = self.session.routes();
        for id in &self.ids {
            if r.posts.get(id).is_some_and(|p| Arc::ptr_eq(p, &self.post)) {
                r.posts.remove(id);
            }
        }
        drop(r);
        self.session.busy.fetch_sub(1, Ordering::AcqRel);
        self.session.touch();
        // A stateless request's session lives as long as its POST waits: the client closing
        // the response ends it, and so cancels the handler. Once answered, its handler is done
        // and the peer waits, idle, for another stateless request.
        if self.session.single {
            // Reused only when nothing of the request can speak any more: answered, and no
            // handle to the peer left beyond those it had when it started (a task the handler
            // spawned with a clone of its context's handle could send into the next client's
            // stream).
            let answered = self.post.answered.load(Ordering::Acquire);
            let quiet = self.session.peer.handles() <= self.session.handles;
            if !(answered && quiet && self.session.is_open() && self.session.recycle()) {
                self.session.close();
            }
        }
    }
}

#[derive(Default)]
pub(crate) struct Routes {
    posts: HashMap<OwnedId, Arc<Post>>,
    stream: Option<mpsc::Sender<Bytes>>,
    pub(crate) version: Option<Box<str>>,
    /// Ids cancelled before their request came, oldest first.
    early: std::collections::VecDeque<OwnedId>,
    /// Ids of the latest requests answered, oldest first: a cancellation of one of them came
    /// too late, not too early.
    answered: std::collections::VecDeque<OwnedId>,
    /// Set once the session's peer stopped writing: nothing will be routed any more.
    closed: bool,
    /// A stateless (2026-07-28) request's session: every notification its handler sends goes
    /// to the one POST (there is no GET stream), and its requests fail at once.
    single: bool,
}

impl Routes {
    /// Remembers that request `id` was answered.
    fn answered(&mut self, id: &OwnedId) {
        if self.answered.len() == ANSWERED_KEPT {
            self.answered.pop_front();
        }
        self.answered.push_back(id.clone());
    }
}

/// Counters of a session's router.
#[derive(Default)]
pub(crate) struct RouteStats {
    /// Messages that had nowhere to go (no POST waits for them, no GET stream is open, or the
    /// stream was full).
    pub(crate) dropped: AtomicU64,
}

/// What the session's peer reads: the frames POSTed, then `None`, its end.
type Input = Option<Frame>;

pub(crate) struct Session {
    pub(crate) id: Box<str>,
    inbox: mpsc::Sender<Input>,
    /// Set once the session is ended: nothing more is fed.
    ended: std::sync::atomic::AtomicBool,
    /// Held while a request is registered and fed, and while a cancellation is: so a
    /// cancellation is either seen by the request's POST or reaches the peer after the request.
    pub(crate) order: tokio::sync::Mutex<()>,
    routes: Arc<Mutex<Routes>>,
    pub(crate) stats: Arc<RouteStats>,
    peer: PeerHandle,
    conn: Mutex<Option<Connection>>,
    last_active: Mutex<Instant>,
    /// POSTs waiting and GET streams open; a busy session is never expired.
    pub(crate) busy: AtomicUsize,
    /// Serves stateless requests one at a time; ends with a POST that is not answered.
    pub(crate) single: bool,
    /// Where a stateless session goes once its request is answered.
    idle: Option<std::sync::Weak<Idle>>,
    /// POSTs registered so far.
    pub(crate) uses: AtomicU64,
    /// Handles to the peer when it started and no request ran.
    handles: usize,
}

/// Why a request cannot be registered.
pub(crate) enum Refused {
    /// Its id is already waiting for a response in this session.
    Duplicate(OwnedId),
    /// The client cancelled it before it came.
    Cancelled,
    /// The session has ended.
    Closed,
}

impl Session {
    /// Starts the session's peer.
    pub(crate) fn start<H: Handler>(
        id: String,
        builder: &PeerBuilder,
        handler: Arc<H>,
    ) -> Arc<Self> {
        Self::start_as(id, builder, handler, None)
    }

    /// Starts a peer for stateless requests (2026-07-28): no id, no GET stream, one request at
    /// a time; it ends with a POST that is not answered (the client closed it), and goes to
    /// `idle` after one that is.
    pub(crate) fn start_single<H: Handler>(
        builder: &PeerBuilder,
        handler: Arc<H>,
        idle: &Arc<Idle>,
    ) -> Arc<Self> {
        let s = Self::start_as(String::new(), builder, handler, Some(Arc::downgrade(idle)));
        idle.started(&s);
        s
    }

    fn start_as<H: Handler>(
        id: String,
        builder: &PeerBuilder,
        handler: Arc<H>,
        idle: Option<std::sync::Weak<Idle>>,
    ) -> Arc<Self> {
        let single = idle.is_some();
        let (inbox, rx) = mpsc::channel::<Input>(INBOX);
        // The session's end comes in line after the frames fed before it, so they are all
        // taken in (a notification POSTed just before a DELETE is still handled); then the
        // peer closes.
        let frames = futures_util::stream::unfold(Some(rx), |rx| async move {
            let mut rx = rx?;
            match rx.recv().await? {
                Some(f) => Some((Ok(f), Some(rx))),
                None => {
                    let ended = std::io::Error::other("the session was ended");
                    Some((Err(crate::Error::Io(ended)), None))
                }
            }
        });
        let routes = Arc::new(Mutex::new(Routes { single, ..Routes::default() }));
        let stats = Arc::new(RouteStats::default());
        let router = Router {
            routes: routes.clone(),
            stats: stats.clone(),
            inbox: inbox.downgrade(),
            parser: None,
        };
        let (peer, conn) = builder.spawn_parts(frames, Async::new(router), handler);
        let handles = peer.handles();
        Arc::new(Self {
            id: id.into(),
            inbox,
            ended: std::sync::atomic::AtomicBool::new(false),
            order: tokio::sync::Mutex::new(()),
            routes,
            stats,
            peer,
            conn: Mutex::new(Some(conn)),
            last_active: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
            single,
            handles,
            idle,
            uses: AtomicU64::new(0),
        })
    }

    /// Puts an answered stateless session back among the idle ones; `false` when there is no
    /// room (or the server is gone).
    fn recycle(self: &Arc<Self>) -> bool {
        let Some(idle) = self.idle.as_ref().and_then(std::sync::Weak::upgrade) else {
            return false;
        };
        let mut st = idle.lock();
        if st.closed || st.waiting.len() >= IDLE_STATELESS_PEERS {
            return false;
        }
        st.waiting.push(self.clone());
        true
    }

    pub(crate) fn routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// For a new session's `initialize`: whether a result named the protocol version, and
    /// whether the response is still to come.
    pub(crate) fn initialize_outcome(&self) -> (bool, bool) {
        let r = self.routes();
        (r.version.is_some(), !r.posts.is_empty())
    }

    pub(crate) fn touch(&self) {
        *self.last_active.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    pub(crate) fn idle_since(&self) -> Instant {
        *self.last_active.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a POST that waits for the responses to its requests, each given by its id.
    /// Requests the client cancelled before they
    /// came are left out and returned in `cancelled` (the caller feeds their cancellation after
    /// the frame); when that is all of them, the POST waits for nothing: `Refused::Cancelled`.
    pub(crate) fn expect(
        self: &Arc<Self>,
        requests: Vec<OwnedId>,
        cancelled: &mut Vec<OwnedId>,
    ) -> Result<PostReceiver, Refused> {
        let mut r = self.routes();
        if r.closed {
            return Err(Refused::Closed);
        }
        let mut ids = Vec::with_capacity(requests.len());
        for id in requests {
            if let Some(at) = r.early.iter().position(|e| *e == id) {
                r.early.remove(at);
                cancelled.push(id);
                continue;
            }
            ids.push(id);
        }
        if ids.is_empty() {
            return Err(Refused::Cancelled);
        }
        let (notes, notes_rx) = mpsc::channel(POST_NOTES);
        let (done, done_rx) = oneshot::channel();
        let post = Arc::new(Post {
            notes,
            done: Mutex::new(Some(done)),
            cancelled: std::sync::atomic::AtomicBool::new(false),
            answered: std::sync::atomic::AtomicBool::new(false),
        });
        if let Some(dup) = ids.iter().find(|id| r.posts.contains_key(*id)) {
            return Err(Refused::Duplicate(dup.clone()));
        }
        for id in &ids {
            r.posts.insert(id.clone(), post.clone());
        }
        drop(r);
        self.busy.fetch_add(1, Ordering::AcqRel);
        self.uses.fetch_add(1, Ordering::AcqRel);
        self.touch();
        Ok(PostReceiver { notes: notes_rx, done: done_rx, post, ids, session: self.clone() })
    }

    /// The client cancelled request `id` (`notifications/cancelled`): its POST stops waiting
    /// and ends with no response, as the peer sends none. A lone request of its POST only:
    /// a batch's POST still waits for the others.
    pub(crate) fn cancel(&self, id: &OwnedId) {
        let mut r = self.routes();
        let Some(post) = r.posts.remove(id) else {
            // Too late (the response went out: the usual race with a timeout) or too early
            // (the request is still on its way on another connection).
            if !r.answered.contains(id) {
                if r.early.len() == EARLY_CANCELS {
                    r.early.pop_front();
                }
                r.early.push_back(id.clone());
            }
            return;
        };
        // A batch's POST still waits for its other requests; it ends when the last is cancelled.
        if r.posts.values().any(|p| Arc::ptr_eq(p, &post)) {
            return;
        }
        drop(r);
        post.cancelled.store(true, Ordering::Release);
        drop(post.done.lock().unwrap_or_else(PoisonError::into_inner).take());
    }

    /// Hands a frame to the session's peer; `false` when the session has ended.
    pub(crate) async fn feed(&self, frame: Frame) -> bool {
        self.touch();
        !self.ended.load(Ordering::Acquire) && self.inbox.send(Some(frame)).await.is_ok()
    }

    /// Opens the GET stream; `None` when one is already open.
    pub(crate) fn open_stream(self: &Arc<Self>) -> Option<StreamGuard> {
        let mut r = self.routes();
        if r.stream.as_ref().is_some_and(|s| !s.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(STREAM_BACKLOG);
        r.stream = Some(tx);
        drop(r);
        self.busy.fetch_add(1, Ordering::AcqRel);
        Some(StreamGuard { rx, session: self.clone() })
    }

    /// Ends the session: its peer takes in what was fed before, then closes (running handlers
    /// are dropped); its GET stream ends. A peer that cannot take it in within `CLOSE_GRACE`
    /// (its bounds are full) is closed at once.
    pub(crate) fn close(&self) {
        self.ended.store(true, Ordering::Release);
        self.routes().stream = None;
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(mut conn) = conn else { return };
        if self.inbox.try_send(None).is_err() {
            conn.close();
        }
        tokio::spawn(async move {
            if tokio::time::timeout(CLOSE_GRACE, conn.closed()).await.is_err() {
                conn.close();
                conn.closed().await;
            }
        });
    }

    /// Whether the session's peer is still running.
    pub(crate) fn is_open(&self) -> bool {
        !self.ended.load(Ordering::Acquire) && !self.inbox.is_closed() && !self.peer.is_closed()
    }
}

/// The GET stream's receiving end.
pub(crate) struct StreamGuard {
    pub(crate) rx: mpsc::Receiver<Bytes>,
    session: Arc<Session>,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.session.busy.fetch_sub(1, Ordering::AcqRel);
        self.session.touch();
    }
}

/// The session peer's outlet: routes each message the peer writes by what the peer says it is.
struct Router {
    routes: Arc<Mutex<Routes>>,
    stats: Arc<RouteStats>,
    /// The session's own input, to fail a request of the server's that cannot be delivered.
    inbox: mpsc::WeakSender<Input>,
    /// Reads the version an `initialize` result names, and makes the error frames that fail
    /// undeliverable requests; made on first use.
    parser: Option<FrameParser>,
}

impl AsyncOutlet for Router {
    async fn send(&mut self, mut out: BytesMut, sent: Vec<Sent>) -> std::io::Result<()> {
        for s in sent {
            let mut msg = out.split_to(s.len.min(out.len()));
            if msg.ends_with(b"\n") {
                msg.truncate(msg.len() - 1);
            }
            self.route(msg.freeze(), s.what);
        }
        Ok(())
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        let mut r = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        r.closed = true;
        r.stream = None;
        // Each waiting POST's receiver holds its `Post`, so clearing the table alone would keep
        // the `done` sender alive and the POST waiting forever: drop the senders.
        for (_, post) in r.posts.drain() {
            drop(post.done.lock().unwrap_or_else(PoisonError::into_inner).take());
        }
        Ok(())
    }
}

impl Router {
    fn parser(&mut self) -> &mut FrameParser {
        // The messages are the peer's own, already bounded by what it was given.
        self.parser.get_or_insert_with(|| {
            FrameParser::new(
                Limits::default()
                    .max_frame_bytes(crate::limits::MAX_FRAME_BYTES_CEILING)
                    .max_depth(usize::MAX / 2),
            )
        })
    }

    fn route(&mut self, msg: Bytes, what: What) {
        // An `initialize` result names the version the session speaks.
        let version = match &what {
            What::Response { initialize: true, .. } => {
                let frame = self.parser().parse(BytesMut::from(&msg[..]));
                frame
                    .message()
                    .filter(|m| m.result().is_some())
                    .and_then(|m| negotiated_version(&m))
            }
            _ => None,
        };
        let request = match what {
            What::Request { id, .. } => Some(id),
            _ => None,
        };
        let mut r = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        let target = match what {
            What::Response { id, .. } => {
                if let Some(v) = version {
                    r.version.get_or_insert(v);
                }
                // MCP: the server MUST NOT send a response on the GET stream. One whose POST is
                // gone (the client left, or cancelled it) has nowhere to go.
                if let Some(k) = &id {
                    r.answered(k);
                }
                let Some(post) = id.and_then(|k| r.posts.remove(&k)) else {
                    drop(r);
                    self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                Some(post)
            }
            What::Batch { ids } => {
                let mut found = None;
                for k in &ids {
                    r.answered(k);
                    if let Some(p) = r.posts.remove(k) {
                        found.get_or_insert(p);
                    }
                }
                if found.is_none() {
                    drop(r);
                    self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                found
            }
            // MCP: requests and notifications related to a client's request may travel on that
            // request's stream; there they reach the client even when it opened no GET stream.
            What::Notification { related: Some(id), .. }
            | What::Request { related: Some(id), .. } => {
                if let Some(post) = r.posts.get(&id).cloned() {
                    drop(r);
                    if post.notes.try_send(msg).is_err() {
                        self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    return;
                }
                None
            }
            What::Notification { .. } if r.single => {
                // The one request's POST carries everything its handler says.
                let post = r.posts.values().next().cloned();
                drop(r);
                if post.is_none_or(|p| p.notes.try_send(msg).is_err()) {
                    self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            What::Notification { .. } | What::Request { .. } => None,
        };
        if let Some(post) = target {
            drop(r);
            let done = post.done.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(d) = done {
                // Before the send: the POST's receiver may drop as soon as it has the answer.
                post.answered.store(true, Ordering::Release);
                if d.send(msg).is_err() {
                    self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                }
            } else {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        // Everything else goes to the GET stream.
        let sent = match &r.stream {
            Some(s) => s.try_send(sse_event(&msg)).is_ok(),
            None => false,
        };
        drop(r);
        if !sent {
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            if let Some(id) = request {
                self.undeliverable(id);
            }
        }
    }

    /// A request of the server's that no stream can carry fails at once (-32603), instead of
    /// waiting out its timeout.
    fn undeliverable(&mut self, id: u64) {
        let Ok(id) = i64::try_from(id) else { return };
        let single = self.routes.lock().unwrap_or_else(PoisonError::into_inner).single;
        let msg = if single {
            "Internal error: a stateless (2026-07-28) request's handler cannot send requests"
        } else {
            "Internal error: no stream to the client is open (GET the endpoint to open one)"
        };
        let answer = super::error_json(crate::Id::Num(id), crate::ErrorCode::INTERNAL_ERROR, msg);
        let frame = self.parser().parse(BytesMut::from(&answer[..]));
        if let Some(inbox) = self.inbox.upgrade() {
            let _ = inbox.try_send(Some(frame));
        }
    }
}
