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
//!
//! In a legacy session every event stream is resumable ([`super::stream`]): a POST's answer
//! becomes one when it starts streaming (the POST's route then leads into the stream, which
//! outlives the connection until the response is in it), and so is each GET stream. A handler's
//! [`close_sse_stream`](crate::http::close_sse_stream) reaches the router in line with what the
//! handler sent before it, as [`Route::CloseStream`].

use crate::sync::Locked;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use super::stream::{ResumeConfig, SseStream, StreamReader, Unresumable, priming};
use crate::http::outlet::Async;
use crate::limits::ANSWERED_KEPT;
use crate::limits::CLOSE_GRACE;
use crate::limits::EARLY_CANCELS;
use crate::limits::IDLE_STATELESS_PEERS;
use crate::limits::POST_NOTES;
use crate::limits::SESSION_INBOX as INBOX;
use crate::peer::{ConnectionTask, Handler, PeerBuilder, PeerHandle, Principal};
use crate::{message::Frame, message::owned::OwnedId};

mod post;
mod router;

pub(crate) use post::{Note, PostIds, PostReceiver};
use post::{Post, PostRoute};
use router::Router;

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
        self.state.locked()
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

    /// Counts a new stateless peer in, so the stop can end it; `false` when the server has
    /// stopped already (a request that got past the stop's check as it came): the caller
    /// ends it.
    fn started(&self, s: &Arc<Session>) -> bool {
        let mut st = self.lock();
        if st.closed {
            return false;
        }
        if st.all.len() >= 2 * IDLE_STATELESS_PEERS && st.all.len().is_power_of_two() {
            st.all.retain(|w| w.strong_count() > 0);
        }
        st.all.push(Arc::downgrade(s));
        true
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

#[derive(Default)]
pub(crate) struct Routes {
    posts: HashMap<OwnedId, Arc<Post>>,
    /// The GET stream: where messages that answer no request go.
    stream: Option<Arc<SseStream>>,
    /// The session's event streams that can be resumed, by number.
    streams: HashMap<u64, Arc<SseStream>>,
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
    /// Whether the session's version has the priming event and polling (2025-11-25 on): its
    /// event streams start with a priming event, and a handler may close a POST's stream.
    fn polling(&self) -> bool {
        !self.single && self.version.as_deref().is_some_and(|v| v >= POLLING_VERSION)
    }

    /// Forgets the streams no connection delivers that are past `cfg`'s retention, then the
    /// oldest of them past its count; a GET stream forgotten no longer takes messages.
    fn prune(&mut self, cfg: &ResumeConfig) {
        let now = Instant::now();
        self.streams.retain(|_, s| !s.expired(now, cfg.retention));
        let mut idle: Vec<(Instant, u64)> =
            self.streams.values().filter_map(|s| s.idle_since().map(|t| (t, s.number))).collect();
        if idle.len() > cfg.streams {
            idle.sort_unstable();
            for (_, n) in &idle[..idle.len() - cfg.streams] {
                self.streams.remove(n);
            }
        }
        if let Some(s) = &self.stream
            && !self.streams.contains_key(&s.number)
        {
            s.finish();
            self.stream = None;
        }
    }

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

/// The first version whose event streams start with a priming event (an id and empty data)
/// and may be closed by the server for the client to poll (SEP-1699). Older clients may fail on
/// an event with empty data.
const POLLING_VERSION: &str = "2025-11-25";

/// What a legacy session needs to make its event streams resumable.
#[derive(Clone)]
pub(crate) struct Resumption {
    pub(crate) config: ResumeConfig,
    /// The server's stream counter: a stream's number names one stream of one session.
    pub(crate) counter: Arc<AtomicU64>,
}

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
    conn: Mutex<Option<ConnectionTask>>,
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
    /// How a legacy session keeps its event streams resumable; `None` for a stateless one.
    resume: Option<Resumption>,
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
        resume: Resumption,
    ) -> Arc<Self> {
        Self::start_as(id, builder, handler, None, Some(resume))
    }

    /// Starts a peer for stateless requests (2026-07-28): no id, no GET stream, one request at
    /// a time; it ends with a POST that is not answered (the client closed it), and goes to
    /// `idle` after one that is.
    pub(crate) fn start_single<H: Handler>(
        builder: &PeerBuilder,
        handler: Arc<H>,
        idle: &Arc<Idle>,
    ) -> Arc<Self> {
        let s = Self::start_as(String::new(), builder, handler, Some(Arc::downgrade(idle)), None);
        if !idle.started(&s) {
            s.close();
        }
        s
    }

    fn start_as<H: Handler>(
        id: String,
        builder: &PeerBuilder,
        handler: Arc<H>,
        idle: Option<std::sync::Weak<Idle>>,
        resume: Option<Resumption>,
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
                    Some((Err(crate::error::Error::Io(ended)), None))
                }
            }
        });
        let routes = Arc::new(Mutex::new(Routes { single, ..Routes::default() }));
        let stats = Arc::new(RouteStats::default());
        let retention = resume.as_ref().map_or(std::time::Duration::MAX, |r| r.config.retention);
        let router = Router::new(routes.clone(), stats.clone(), inbox.downgrade(), retention);
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
            resume,
        })
    }

    /// Sets the caller its handler sees (the legacy session's opener, or the stateless
    /// request's).
    pub(crate) fn set_principal(&self, p: Option<Arc<Principal>>) {
        self.peer.shared.set_principal(p);
    }

    /// Whether `p` is the caller that opened the session (with no guard, neither has one).
    pub(crate) fn opened_by(&self, p: Option<&Principal>) -> bool {
        match (self.peer.shared.principal(), p) {
            (None, None) => true,
            (Some(a), Some(b)) => a.same_caller(b),
            _ => false,
        }
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
        self.routes.locked()
    }

    /// For a new session's `initialize`: whether a result named the protocol version, and
    /// whether the response is still to come.
    pub(crate) fn initialize_outcome(&self) -> (bool, bool) {
        let r = self.routes();
        (r.version.is_some(), !r.posts.is_empty())
    }

    pub(crate) fn touch(&self) {
        *self.last_active.locked() = Instant::now();
    }

    pub(crate) fn idle_since(&self) -> Instant {
        *self.last_active.locked()
    }

    /// Registers a POST that waits for the responses to its requests, each given by its id.
    /// Requests the client cancelled before they
    /// came are left out and returned in `cancelled` (the caller feeds their cancellation after
    /// the frame); when that is all of them, the POST waits for nothing: `Refused::Cancelled`.
    pub(crate) fn expect(
        self: &Arc<Self>,
        requests: PostIds,
        cancelled: &mut Vec<OwnedId>,
    ) -> Result<PostReceiver, Refused> {
        let mut r = self.routes();
        if r.closed {
            return Err(Refused::Closed);
        }
        let mut ids = requests;
        ids.retain(|id| match r.early.iter().position(|e| e == id) {
            Some(at) => {
                r.early.remove(at);
                cancelled.push(id.clone());
                false
            }
            None => true,
        });
        if ids.is_empty() {
            return Err(Refused::Cancelled);
        }
        let (notes, notes_rx) = mpsc::channel(POST_NOTES);
        let (done, done_rx) = oneshot::channel();
        let post = Arc::new(Post {
            route: Mutex::new(PostRoute { notes, done: Some(done), stream: None }),
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
        post.end(None);
    }

    /// Hands a frame to the session's peer; `false` when the session has ended.
    pub(crate) async fn feed(&self, frame: Frame) -> bool {
        self.touch();
        !self.ended.load(Ordering::Acquire) && self.inbox.send(Some(frame)).await.is_ok()
    }

    /// Opens a new GET stream, which takes the session's messages that answer no request;
    /// `None` when a connection delivers the GET stream now. One that no connection delivers
    /// is finished (it can still be resumed, up to its end).
    pub(crate) fn open_stream(self: &Arc<Self>) -> Option<StreamGuard> {
        let mut r = self.routes();
        if r.stream.as_ref().is_some_and(|s| s.is_live()) {
            return None;
        }
        if let Some(old) = r.stream.take() {
            old.finish();
        }
        let (stream, prefix) = self.stream_of(&r);
        self.keep_in(&mut r, &stream);
        r.stream = Some(stream.clone());
        let reader = stream.attach(0, prefix, None);
        drop(r);
        Some(StreamGuard::new(reader, self.clone()))
    }

    /// A connection resuming the session's stream `number` after its event `after` (a
    /// `Last-Event-ID`): it replays the events after that one, then delivers the stream's later
    /// events, taking the stream over from a connection that delivers it now.
    pub(crate) fn resume(
        self: &Arc<Self>,
        number: u64,
        after: u64,
    ) -> Result<StreamGuard, Unresumable> {
        let Some(res) = &self.resume else { return Err(Unresumable::Unknown) };
        let stream = {
            let mut r = self.routes();
            r.prune(&res.config);
            r.streams.get(&number).cloned()
        };
        let reader = stream.ok_or(Unresumable::Unknown)?.resume(after)?;
        Ok(StreamGuard::new(reader, self.clone()))
    }

    /// A new resumable event stream, and its priming event when the session's version has
    /// them.
    fn new_stream(&self) -> (Arc<SseStream>, Option<Bytes>) {
        let r = self.routes();
        self.stream_of(&r)
    }

    fn stream_of(&self, r: &Routes) -> (Arc<SseStream>, Option<Bytes>) {
        let res = self.resume.as_ref().expect("only a legacy session's streams are resumable");
        let number = res.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let stream = SseStream::new(number, &res.config);
        let prefix = r.polling().then(|| priming(number, res.config.retry));
        (stream, prefix)
    }

    /// Keeps `stream` for a resumption.
    fn keep(&self, stream: &Arc<SseStream>) {
        let mut r = self.routes();
        self.keep_in(&mut r, stream);
    }

    fn keep_in(&self, r: &mut Routes, stream: &Arc<SseStream>) {
        let res = self.resume.as_ref().expect("only a legacy session's streams are resumable");
        r.prune(&res.config);
        r.streams.insert(stream.number, stream.clone());
    }

    /// Ends the session: its peer takes in what was fed before, then closes (running handlers
    /// are dropped); its GET stream ends. A peer that cannot take it in within `CLOSE_GRACE`
    /// (its bounds are full) is closed at once.
    pub(crate) fn close(&self) {
        self.ended.store(true, Ordering::Release);
        if let Some(s) = self.routes().stream.take() {
            s.finish();
        }
        let conn = self.conn.locked().take();
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

/// The connection delivering one of the session's event streams (a GET, or a POST that
/// streams): it keeps the session busy (so it does not expire) while it is open.
pub(crate) struct StreamGuard {
    reader: StreamReader,
    session: Arc<Session>,
}

impl StreamGuard {
    fn new(reader: StreamReader, session: Arc<Session>) -> Self {
        session.busy.fetch_add(1, Ordering::AcqRel);
        Self { reader, session }
    }

    /// The next bytes to send; `None` once the stream has ended for this connection.
    /// Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<Bytes> {
        let skipped = self.reader.skipped;
        let out = self.reader.next().await;
        if self.reader.skipped > skipped {
            // A connection too slow for the stream's bounds: those events are lost to it.
            let lost = self.reader.skipped - skipped;
            self.session.stats.dropped.fetch_add(lost, Ordering::Relaxed);
        }
        out
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.session.busy.fetch_sub(1, Ordering::AcqRel);
        self.session.touch();
    }
}
