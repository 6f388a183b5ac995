//! The session table: the session a request names, a session opened for `initialize` and kept
//! once it succeeded, and the table's upkeep: idle sessions expire, and when the table is full
//! the least recently used idle one makes room for a new client.
//!
//! Without eviction, `max_sessions` `initialize` requests that are never followed up would lock
//! every new legacy client out (503) until the idle timeout ended them. A session with no request
//! in flight and no open stream (`busy` is 0) holds nothing its client is waiting for: ending it
//! costs its client one 404 and a new `initialize`, as the specification intends for a session the
//! server ended. Only when every session is busy is a new one refused.

use crate::sync::Locked;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use http::header::{ALLOW, HeaderValue};
use http::{Request, Response, StatusCode};

use super::config::Config;
use super::response::{error, status};
use super::session::{Resumption, Session};
use super::{Body, SESSION_NAME, State, VERSION_NAME};
use crate::http::new_session_id;
use crate::mcp::Era;
use crate::peer::{Handler, Principal};
use crate::{error::ErrorCode, message::Id};

/// The session a request names: `Ok(None)` when it names none, `Err` with the answer when it
/// names one that is unknown, was opened by another caller than `principal`, or gives a version
/// that is not accepted.
pub(super) fn named<B>(
    cfg: &Config,
    state: &State,
    req: &Request<B>,
    principal: Option<&Principal>,
) -> Result<Option<Arc<Session>>, Box<Response<Body>>> {
    let Some(id) = req.headers().get(&SESSION_NAME) else { return Ok(None) };
    let version = req.headers().get(&VERSION_NAME).and_then(|v| v.to_str().ok());
    // A modern request names no session: a session id beside a modern version is ignored, as
    // 2026-07-28 asks.
    if version.is_some_and(|v| Era::of(v.trim()) == Era::Modern) {
        return Ok(None);
    }
    if let Some(v) = req.headers().get(&VERSION_NAME)
        && !v.to_str().is_ok_and(|v| cfg.versions.iter().any(|s| s == v.trim()))
    {
        let msg = format!(
            "Bad Request: unsupported protocol version (supported: {})",
            cfg.versions.join(", ")
        );
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            Id::Null,
            ErrorCode::SERVER_ERROR,
            &msg,
        )));
    }
    let found = id.to_str().ok().and_then(|id| state.sessions.locked().get(id).cloned());
    match found {
        Some(s) if s.is_open() && s.opened_by(principal) => Ok(Some(s)),
        _ => Err(Box::new(error(
            StatusCode::NOT_FOUND,
            Id::Null,
            ErrorCode::SESSION_NOT_FOUND,
            "Session not found",
        ))),
    }
}

/// The session a GET or DELETE must name: without one it is a stateless client's, which may
/// only POST (405).
pub(super) fn required<B>(
    cfg: &Config,
    state: &State,
    req: &Request<B>,
    principal: Option<&Principal>,
) -> Result<Arc<Session>, Box<Response<Body>>> {
    named(cfg, state, req, principal)?.ok_or_else(|| {
        let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("POST"));
        Box::new(r)
    })
}

/// Starts a session for an `initialize` request, not yet in the table ([`admit`] puts it
/// there once its `initialize` succeeded).
pub(super) fn open<H: Handler>(
    cfg: &Config,
    state: &State,
    make: &(dyn Fn() -> Arc<H> + Send + Sync),
    principal: Option<Arc<Principal>>,
) -> Result<Arc<Session>, Box<Response<Body>>> {
    let full = || {
        let msg = "Service Unavailable: too many sessions";
        error(StatusCode::SERVICE_UNAVAILABLE, Id::Null, ErrorCode::SERVER_ERROR, msg)
    };
    if !make_room(state, cfg.max_sessions, cfg.idle_timeout) {
        return Err(Box::new(full()));
    }
    let id = new_session_id().map_err(|e| {
        tracing::error!(error = %e, "no randomness for a session id");
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            Id::Null,
            ErrorCode::INTERNAL_ERROR,
            "Internal error",
        )
    })?;
    let resume = Resumption { config: cfg.resume, counter: state.streams.clone() };
    let session = Session::start(id, &cfg.peer, make(), resume);
    session.set_principal(principal);
    Ok(session)
}

/// Keeps a new session when its `initialize` succeeded, and names it in the answer.
pub(super) fn admit(
    cfg: &Config,
    state: &State,
    session: Arc<Session>,
    mut answer: Response<Body>,
) -> Response<Body> {
    // A failed `initialize` is answered 200 too, with an error: only a result, which names the
    // protocol version, opens the session (an event stream may carry it later). An event stream
    // whose response has not come yet (progress came first) may still carry a result: the
    // session is kept, as the client will learn its id.
    let (negotiated, pending) = session.initialize_outcome();
    if answer.status() != StatusCode::OK || !(negotiated || pending) {
        session.close();
        return answer;
    }
    // Another `initialize` may have taken the room made for this one meanwhile.
    let room = make_room(state, cfg.max_sessions, cfg.idle_timeout);
    {
        let mut map = state.sessions.locked();
        let stopping = state.stopped.load(Ordering::SeqCst);
        if !room || map.len() >= cfg.max_sessions || stopping {
            drop(map);
            session.close();
            let msg = if stopping {
                "Service Unavailable: the server is stopping"
            } else {
                "Service Unavailable: too many sessions"
            };
            return error(StatusCode::SERVICE_UNAVAILABLE, Id::Null, ErrorCode::SERVER_ERROR, msg);
        }
        map.insert(session.id.clone(), session.clone());
    }
    state.started.fetch_add(1, Ordering::Relaxed);
    if let Ok(v) = HeaderValue::from_str(&session.id) {
        answer.headers_mut().insert(SESSION_NAME, v);
    }
    answer
}

/// Ends idle sessions now and then.
pub(super) async fn sweep(state: Arc<State>, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        expire(&state, idle);
    }
}

/// [`sweep`] for a server used through `serve_connection` (no `serve` loop to own the task):
/// started once per server, it ends when the server is gone, ending the sessions left.
pub(super) async fn sweep_while_alive(state: std::sync::Weak<State>, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        let Some(state) = state.upgrade() else { return };
        expire(&state, idle);
        if Arc::strong_count(&state) == 1 {
            // Only this task holds the server: its sessions can never be reached again.
            expire(&state, Duration::ZERO);
            return;
        }
    }
}

/// Ends the sessions whose peer has ended, and those with nothing in flight for `idle`.
fn expire(state: &State, idle: Duration) {
    let now = Instant::now();
    let gone: Vec<_> = {
        let mut map = state.sessions.locked();
        let ids: Vec<_> = map
            .iter()
            .filter(|(_, s)| {
                !s.is_open()
                    || (s.busy.load(Ordering::Acquire) == 0
                        && now.duration_since(s.idle_since()) >= idle)
            })
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter().filter_map(|id| map.remove(id)).collect()
    };
    state.expired.fetch_add(gone.len() as u64, Ordering::Relaxed);
    for s in gone {
        tracing::debug!(session = %s.id, "session expired");
        s.close();
    }
}

/// Makes room for one more session when the table holds `max` or more: ended and idle-too-long
/// sessions go first, then the least recently used session that is not busy. `false` when every
/// session is busy (the new one is refused). O(sessions) under the table's lock, and only when
/// the table is full.
pub(super) fn make_room(state: &State, max: usize, idle: Option<Duration>) -> bool {
    let full = || state.sessions.locked().len() >= max;
    if !full() {
        return true;
    }
    expire(state, idle.unwrap_or(Duration::MAX));
    let mut map = state.sessions.locked();
    let mut gone = Vec::new();
    while map.len() >= max {
        let lru = map
            .iter()
            .filter(|(_, s)| s.busy.load(Ordering::Acquire) == 0)
            .min_by_key(|(_, s)| s.idle_since())
            .map(|(id, _)| id.clone());
        match lru.and_then(|id| map.remove(&id)) {
            Some(s) => gone.push(s),
            None => break,
        }
    }
    let room = map.len() < max;
    drop(map);
    state.evicted.fetch_add(gone.len() as u64, Ordering::Relaxed);
    for s in gone {
        tracing::debug!(session = %s.id, "session evicted to make room");
        s.close();
    }
    room
}
