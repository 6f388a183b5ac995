//! The session table's upkeep: idle sessions expire, and when the table is full the least
//! recently used idle one makes room for a new client.
//!
//! Without eviction, `max_sessions` `initialize` requests that are never followed up would lock
//! every new legacy client out (503) until the idle timeout ended them. A session with no request
//! in flight and no open stream (`busy` is 0) holds nothing its client is waiting for: ending it
//! costs its client one 404 and a new `initialize`, as the specification intends for a session the
//! server ended. Only when every session is busy is a new one refused.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use super::State;

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
pub(super) fn expire(state: &State, idle: Duration) {
    let now = Instant::now();
    let gone: Vec<_> = {
        let mut map = state.sessions.lock().unwrap_or_else(PoisonError::into_inner);
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
    let full = || state.sessions.lock().unwrap_or_else(PoisonError::into_inner).len() >= max;
    if !full() {
        return true;
    }
    expire(state, idle.unwrap_or(Duration::MAX));
    let mut map = state.sessions.lock().unwrap_or_else(PoisonError::into_inner);
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
