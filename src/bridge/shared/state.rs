//! What the bridge's two sides share: the child's handle and what its `initialize` answered,
//! the clients, the requests in flight to the child (each with the client it came from, so
//! that what the child sends about it reaches that client alone), and the counters.

use crate::sync::RwLocked;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

use super::admission::Admission;
use super::handshake::Handshake;
use super::hold::table::{AskSender, Holds};
use crate::bridge::json;
use crate::peer::{Context, PeerHandle, RpcError};
use crate::sync::Locked;
use crate::{error::ErrorCode, message::RawJson};

/// The bounds and behaviour the bridge was built with.
#[derive(Clone, Debug)]
pub(super) struct Config {
    pub(super) max_client_in_flight: usize,
    pub(super) max_child_in_flight: usize,
    pub(super) request_timeout: Option<Duration>,
    pub(super) restart_backoff: (Duration, Duration),
    pub(super) max_restarts: Option<u32>,
    pub(super) hang_timeout: Option<Duration>,
    pub(super) max_held_calls: usize,
    pub(super) held_timeout: Duration,
    pub(super) max_listen_streams: usize,
    pub(super) discover_timeout: Duration,
}

/// The child as the bridge holds it now.
#[derive(Clone)]
pub(super) struct ChildLink {
    pub(super) peer: PeerHandle,
    pub(super) handshake: Arc<Handshake>,
    /// Set when the child was found to hang and killed: why.
    pub(super) hung: Arc<OnceLock<String>>,
}

/// One client: a legacy session, or the peer a modern request ran in.
#[derive(Debug, Default)]
pub(super) struct ClientState {
    pub(super) id: u64,
    /// Its requests in flight to the child.
    pub(super) in_flight: AtomicUsize,
    pub(super) session: Mutex<Session>,
}

/// What a legacy client's `initialize` and later requests told the bridge.
#[derive(Debug, Default)]
pub(super) struct Session {
    /// The session's handle, not tied to any of its requests: list changes and resource
    /// updates go to its GET stream through it.
    pub(super) peer: Option<PeerHandle>,
    /// The client's capabilities (JSON text), for its requests sent on as modern ones.
    pub(super) capabilities: Option<String>,
    /// The client's `clientInfo` (JSON text).
    pub(super) client_info: Option<String>,
    /// The level of `logging/setLevel` (JSON text of the name).
    pub(super) log_level: Option<String>,
    /// The resources it subscribed to.
    pub(super) subscriptions: HashSet<String>,
    /// The `_meta` members (JSON text) its requests carry when sent on as 2026-07-28 ones,
    /// made from the above when first needed; `None` again when any of them changes.
    pub(super) envelope: Option<Arc<str>>,
}

/// A request in flight to the child: whose it is and where what concerns it goes.
pub(super) struct Flight {
    pub(super) client: u64,
    /// The client's request: what concerns it goes there (over HTTP: its POST's stream, or
    /// its answer when it is handled without a peer). Its [`Context::peer`] asks a legacy
    /// client the child's requests.
    pub(super) cx: Context,
    /// The client's own progress token (JSON text), when the bridge put its own in its place.
    pub(super) token: Option<String>,
    /// Whether the client is a modern one (it takes no requests from a server).
    pub(super) modern: bool,
    /// A `subscriptions/listen`: the child-side id (once sent), which the child's
    /// notifications for it name as their subscription, and the client's own id (JSON text).
    pub(super) listen: Option<(Arc<AtomicU64>, String)>,
    /// Its end came: the bridge no longer waits on it (it is kept for [`Inner::relate`] until
    /// [`Flights::prune`] finds no message of the child's can still concern it).
    pub(super) answered: bool,
    /// The child's connection it was sent on.
    pub(super) child: PeerHandle,
    /// Where in the stream read from the child it stopped being in flight (its answer's
    /// position, or the last frame's read before it timed out, failed or was given up);
    /// [`UNSETTLED`] until then. The child's peer writes it as it reads the answer, before it
    /// reads the next frame.
    pub(super) settled: Arc<AtomicU64>,
    /// When it was sent to the child.
    pub(super) sent: Instant,
    /// A modern client's call to a legacy child: where the child's requests for it go (to be
    /// asked in an `input_required` result).
    pub(super) asks: Option<AskSender>,
    /// The child asked something for it and waits for the answer: the child's next message
    /// concerns another request (its call waits on the answer).
    pub(super) parked: bool,
}

/// A flight's `settled` before its end: every position comes before it.
pub(super) const UNSETTLED: u64 = u64::MAX;

/// The requests in flight to the child, and those ended that a message of the child's may
/// still concern.
#[derive(Default)]
pub(super) struct Flights {
    pub(super) map: HashMap<u64, Flight>,
}

impl Flights {
    /// Forgets the flights that ended and that no message of the child's can still concern.
    ///
    /// A message concerns a flight when it was read before the flight's end ([`Inner::relate`]):
    /// at a position at or below `settled`. The bridge relates each message while its handler
    /// is first polled (`relate` comes before any await in [`super::route::ChildHandler`]),
    /// and the child's peer publishes the position below which every message read has had its
    /// handler polled (`begun_below`, which only grows). A flight that ended at `settled` below
    /// that can thus concern no message still to be related: every message read at or before
    /// its end has been related already, and every one read later is past it. A flight that
    /// ended on a child connection that is no longer the current one concerns none of the
    /// current one's messages (positions count per connection, and `relate` compares a
    /// message only with the flights of the connection that read it). Flights still awaited
    /// are kept whatever their position, and all of them while there is no child (`current`
    /// is `None`): the next one's first prune takes those that ended.
    pub(super) fn prune(&mut self, current: Option<(&PeerHandle, u64)>) {
        let Some((child, begun_below)) = current else { return };
        self.map.retain(|_, f| {
            !f.answered
                || (f.child.same_connection(child)
                    && f.settled.load(Ordering::Acquire) >= begun_below)
        });
    }
}

/// Where the child's request or notification goes.
pub(super) enum Relation {
    /// To this client's request (`seq`), or for a modern client's held call, to `asks`.
    To { cx: Context, modern: bool, seq: u64, asks: Option<AskSender> },
    /// Requests of this many clients are in flight: which one it concerns cannot be told.
    Ambiguous(usize),
    /// No request is in flight.
    None,
}

/// The bridge's counters.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) forwarded: AtomicU64,
    pub(super) refused_client_bound: AtomicU64,
    pub(super) child_requests_routed: AtomicU64,
    pub(super) child_requests_refused: AtomicU64,
    pub(super) notifications_routed: AtomicU64,
    pub(super) notifications_dropped: AtomicU64,
    pub(super) notifications_fanned_out: AtomicU64,
    pub(super) child_restarts: AtomicU64,
    pub(super) child_hangs: AtomicU64,
    pub(super) calls_held: AtomicU64,
    pub(super) held_calls_refused: AtomicU64,
    pub(super) held_calls_expired: AtomicU64,
    pub(super) sessions_ended_by_restart: AtomicU64,
}

/// Everything the bridge shares.
pub(super) struct Inner {
    pub(super) config: Config,
    pub(super) child: RwLock<Option<ChildLink>>,
    /// Why the child is not there, when it is not (exited, restarting, gave up).
    pub(super) child_gone: Mutex<String>,
    pub(super) admission: Arc<Admission>,
    pub(super) flights: Mutex<Flights>,
    pub(super) clients: Mutex<HashMap<u64, Weak<ClientState>>>,
    pub(super) next_seq: AtomicU64,
    pub(super) next_client: AtomicU64,
    pub(super) counters: Counters,
    /// Set by `Bridge::close`: the child is not started again.
    pub(super) stopping: AtomicBool,
    /// Modern clients' calls held for their input.
    pub(super) holds: Holds,
    /// The listen streams the bridge serves itself (a legacy-only child).
    pub(super) listens: Listens,
    /// The bridge's own listen stream to a modern-only child, for its legacy sessions.
    pub(super) upstream: Upstream,
}

impl Inner {
    pub(super) fn new(config: Config) -> Self {
        Self {
            admission: Admission::new(config.max_child_in_flight),
            config,
            child: RwLock::new(None),
            child_gone: Mutex::new("the child server has not started".into()),
            flights: Mutex::new(Flights::default()),
            clients: Mutex::new(HashMap::new()),
            next_seq: AtomicU64::new(1),
            next_client: AtomicU64::new(1),
            counters: Counters::default(),
            stopping: AtomicBool::new(false),
            holds: Holds::new(),
            listens: Listens::default(),
            upstream: Upstream::default(),
        }
    }

    /// The child now, or the error a request gets while there is none.
    pub(super) fn child(&self) -> Result<ChildLink, RpcError> {
        let link = self.child.read_locked().clone();
        match link {
            Some(l) if !l.peer.is_closed() => Ok(l),
            _ => Err(RpcError::new(
                ErrorCode::INTERNAL_ERROR,
                format!("mcpwire bridge: {}", self.child_gone.locked()),
            )),
        }
    }

    /// The state of a client that is one 2026-07-28 request: never a session, so not
    /// registered for list changes or resource updates.
    pub(super) fn request_client(&self) -> Arc<ClientState> {
        let id = self.next_client.fetch_add(1, Ordering::Relaxed);
        Arc::new(ClientState { id, ..ClientState::default() })
    }

    /// A new client's state, registered for list changes and resource updates.
    pub(super) fn new_client(&self) -> Arc<ClientState> {
        let id = self.next_client.fetch_add(1, Ordering::Relaxed);
        let c = Arc::new(ClientState { id, ..ClientState::default() });
        let mut clients = self.clients.locked();
        // Clients that ended leave a dead entry: swept once they are as many as the live ones.
        if clients.len() >= 64 && clients.len().is_power_of_two() {
            clients.retain(|_, w| w.strong_count() > 0);
        }
        clients.insert(id, Arc::downgrade(&c));
        c
    }

    /// The live clients that opened a session.
    pub(super) fn sessions(&self) -> Vec<Arc<ClientState>> {
        self.clients.locked().values().filter_map(Weak::upgrade).collect()
    }

    /// The current child's connection and the position below which every message it read has
    /// been related, for [`Flights::prune`].
    fn current(&self) -> Option<(PeerHandle, u64)> {
        let link = self.child.read_locked();
        link.as_ref().map(|l| (l.peer.clone(), l.peer.begun_below()))
    }

    /// Which client a message of the child's concerns, when the wire does not say: the one
    /// client with requests in flight (its latest request), or none at all. `child` is the
    /// connection that read the message, at `position` ([`Incoming::position`]); a request
    /// counts as in flight for it when, in the order the child's stdout was read, the message
    /// came before the request's answer (or its timeout, failure or cancellation), however the
    /// threads that handle the two happened to run: the answer may have reached its client
    /// already while the message was read before it.
    ///
    /// [`Incoming::position`]: crate::peer::Incoming
    pub(super) fn relate(&self, position: u64, child: &PeerHandle) -> Relation {
        let current = self.current();
        let mut flights = self.flights.locked();
        flights.prune(current.as_ref().map(|(p, b)| (p, *b)));
        let mut latest: Option<(u64, &Flight)> = None;
        let mut clients = HashSet::new();
        let concerned = |f: &Flight| {
            !f.parked
                && f.child.same_connection(child)
                && position <= f.settled.load(Ordering::Acquire)
        };
        for (seq, f) in flights.map.iter().filter(|(_, f)| concerned(f)) {
            clients.insert(f.client);
            if latest.is_none_or(|(s, _)| *seq > s) {
                latest = Some((*seq, f));
            }
        }
        match (clients.len(), latest) {
            (1, Some((seq, f))) => Relation::To {
                cx: f.cx.clone(),
                modern: f.modern,
                seq,
                asks: f.asks.clone().filter(|_| !f.answered),
            },
            (0, _) | (_, None) => Relation::None,
            (n, _) => Relation::Ambiguous(n),
        }
    }

    /// Marks the request `seq` parked (the child waits on an answer for it), or no longer.
    pub(super) fn park(&self, seq: u64, parked: bool) {
        if let Some(f) = self.flights.locked().map.get_mut(&seq) {
            f.parked = parked;
        }
    }

    /// The client's peer and own request id (JSON text) for the listen stream the child names
    /// `child_id`.
    pub(super) fn listen_target(&self, child_id: u64) -> Option<(PeerHandle, String)> {
        let flights = self.flights.locked();
        flights.map.values().find_map(|f| match &f.listen {
            Some((id, own)) if !f.answered && id.load(Ordering::Acquire) == child_id => {
                Some((f.cx.peer().clone(), own.clone()))
            }
            _ => None,
        })
    }

    /// How long the oldest request still waiting for the child has waited (a listen stream
    /// waits by design and does not count).
    pub(super) fn longest_wait(&self, now: Instant) -> Option<Duration> {
        let flights = self.flights.locked();
        flights
            .map
            .values()
            .filter(|f| !f.answered && f.listen.is_none())
            .map(|f| now.saturating_duration_since(f.sent))
            .max()
    }

    /// The client's peer and own token for the bridge's progress token `seq`.
    pub(super) fn progress_target(&self, seq: u64) -> Option<(Context, String)> {
        let flights = self.flights.locked();
        let f = flights.map.get(&seq).filter(|f| !f.answered)?;
        Some((f.cx.clone(), f.token.clone()?))
    }
}

/// A request of `client`'s counted in flight: refused past the client's bound, and forgotten
/// (its flight too) when dropped.
pub(super) struct InFlight<'a> {
    inner: &'a Inner,
    client: &'a ClientState,
    seq: Option<u64>,
}

impl<'a> InFlight<'a> {
    /// Counts one more request of `client`'s.
    ///
    /// # Errors
    ///
    /// -32000 when the client already has `max_client_in_flight` requests in flight.
    pub(super) fn start(inner: &'a Inner, client: &'a ClientState) -> Result<Self, RpcError> {
        let bound = inner.config.max_client_in_flight;
        let before = client.in_flight.fetch_add(1, Ordering::AcqRel);
        if before >= bound {
            client.in_flight.fetch_sub(1, Ordering::AcqRel);
            inner.counters.refused_client_bound.fetch_add(1, Ordering::Relaxed);
            return Err(RpcError::new(
                ErrorCode::SERVER_ERROR,
                format!(
                    "mcpwire bridge: too many requests in flight: at most {bound} per client; \
                     send this one again once an answer has come"
                ),
            )
            .with_data(&serde_json::json!({ "maxInFlight": bound })));
        }
        Ok(Self { inner, client, seq: None })
    }

    /// Registers the request as in flight to the child under `seq`.
    pub(super) fn fly(&mut self, seq: u64, flight: Flight) {
        let current = self.inner.current();
        let mut flights = self.inner.flights.locked();
        flights.prune(current.as_ref().map(|(p, b)| (p, *b)));
        flights.map.insert(seq, flight);
        self.seq = Some(seq);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(seq) = self.seq {
            let mut flights = self.inner.flights.locked();
            if let Some(f) = flights.map.get_mut(&seq) {
                f.answered = true;
                // Given up before the child's peer took it (it was never sent): it ends where
                // the stream read stands now.
                if f.settled.load(Ordering::Acquire) == UNSETTLED {
                    let now = f.child.read_position();
                    let _ = f.settled.compare_exchange(
                        UNSETTLED,
                        now,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    );
                }
            }
        }
        self.client.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

// ---- Listen streams the bridge serves itself (`listen_for_clients.rs`). ----

/// One stream: where its notifications go, and which it takes.
pub(super) struct Stream {
    pub(super) peer: PeerHandle,
    /// The client's id for the stream (JSON text), the notifications' subscription id.
    pub(super) id: String,
    pub(super) tools: bool,
    pub(super) prompts: bool,
    pub(super) resources: bool,
    /// The resources it watches (those the child took).
    pub(super) uris: Mutex<Vec<String>>,
    /// Acknowledged: its notifications may go out.
    pub(super) ready: AtomicBool,
}

/// The streams the bridge serves itself.
#[derive(Default)]
pub(super) struct Listens {
    pub(super) streams: Mutex<HashMap<u64, Arc<Stream>>>,
    pub(super) next: AtomicU64,
    /// Held from the check of who holds a resource to the child's answer, by a stream that
    /// subscribes and one that unsubscribes, so that neither undoes the other.
    pub(super) changing: tokio::sync::Mutex<()>,
}

impl Listens {
    /// Whether a stream (but `except`) watches `uri`.
    pub(super) fn watches(&self, uri: &str, except: Option<u64>) -> bool {
        self.streams
            .locked()
            .iter()
            .any(|(k, s)| Some(*k) != except && s.uris.locked().iter().any(|u| u == uri))
    }

    /// Sends a change of the child's to the acknowledged streams that take it; how many.
    pub(super) fn deliver(&self, method: &str, params: Option<RawJson<'_>>) -> u64 {
        let uri: Option<String> = (method == "notifications/resources/updated")
            .then(|| params.and_then(|p| json::member(p.get(), "uri")))
            .flatten()
            .and_then(|u| serde_json::from_str(u).ok());
        let takes = |s: &Stream| match method {
            "notifications/tools/list_changed" => s.tools,
            "notifications/prompts/list_changed" => s.prompts,
            "notifications/resources/list_changed" => s.resources,
            "notifications/resources/updated" => {
                uri.as_ref().is_some_and(|u| s.uris.locked().contains(u))
            }
            _ => false,
        };
        let to: Vec<Arc<Stream>> = self
            .streams
            .locked()
            .values()
            .filter(|s| s.ready.load(Ordering::Acquire) && takes(s))
            .cloned()
            .collect();
        let mut sent = 0;
        for s in to {
            let Some(tagged) = tag(params.map(|p| p.get()), &s.id) else { continue };
            let method: Arc<str> = Arc::from(method);
            sent += 1;
            tokio::spawn(async move {
                let _ = s.peer.notify(&method, Some(RawJson::new(&tagged))).await;
            });
        }
        sent
    }
}

/// `params` (an object, or none) with the subscription id `id` in its `_meta`.
fn tag(params: Option<&str>, id: &str) -> Option<String> {
    let text = params.unwrap_or("{}");
    if json::member(text, "_meta").is_some() {
        return json::set_meta_member(text, crate::mcp::SUBSCRIPTION_ID_KEY, id);
    }
    let key = serde_json::to_string(crate::mcp::SUBSCRIPTION_ID_KEY).ok()?;
    json::set_member(text, "_meta", &format!("{{{key}:{id}}}"))
}

// ---- The bridge's own listen stream to a modern-only child (`listen_to_child.rs`). ----

/// The stream now open, and the acknowledgement awaited.
#[derive(Default)]
pub(super) struct Upstream {
    pub(super) now: Mutex<Option<Open>>,
    pub(super) waiting: Mutex<Option<(Arc<AtomicU64>, tokio::sync::oneshot::Sender<String>)>>,
    /// Held while the stream is replaced: one change at a time.
    pub(super) changing: tokio::sync::Mutex<()>,
}

/// An open stream: its child-side id, the task holding its request, what it asked.
pub(super) struct Open {
    pub(super) id: Arc<AtomicU64>,
    pub(super) task: tokio::task::JoinHandle<()>,
    pub(super) asked: String,
}

impl Drop for Open {
    fn drop(&mut self) {
        // Dropping the request cancels it to the child.
        self.task.abort();
    }
}

impl Upstream {
    /// Whether the child's stream `id` is the bridge's own (open, or being acknowledged).
    pub(super) fn owns(&self, id: u64) -> bool {
        let is = |sink: &AtomicU64| id != 0 && sink.load(Ordering::Acquire) == id;
        self.now.locked().as_ref().is_some_and(|o| is(&o.id))
            || self.waiting.locked().as_ref().is_some_and(|(s, _)| is(s))
    }

    /// The child acknowledged stream `id` with `params`: to the change that waits for it.
    pub(super) fn acknowledged(&self, id: u64, params: &str) {
        let mut waiting = self.waiting.locked();
        if waiting.as_ref().is_some_and(|(s, _)| s.load(Ordering::Acquire) == id)
            && let Some((_, tx)) = waiting.take()
        {
            let _ = tx.send(params.to_owned());
        }
    }
}

#[cfg(test)]
mod tests;
