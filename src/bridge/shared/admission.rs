//! Round-robin admission to the child: at most `slots` requests of all clients in flight to it
//! at once; past that, each waiting client is served in turn, one request each, so a client with
//! a thousand requests queued cannot hold back one with a single request.

use crate::sync::Locked;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// The slots and the clients waiting for one.
pub(super) struct Admission {
    state: Mutex<State>,
}

struct State {
    free: usize,
    /// Clients with a request waiting, in turn order; each appears once.
    turn: VecDeque<u64>,
    /// Each waiting client's requests, oldest first.
    waiting: HashMap<u64, VecDeque<oneshot::Sender<Slot>>>,
}

/// One request's place in flight to the child; dropping it hands the place to the next client
/// in turn.
pub(super) struct Slot {
    admission: Option<Arc<Admission>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(a) = self.admission.take() {
            Admission::release(&a);
        }
    }
}

impl Admission {
    pub(super) fn new(slots: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                free: slots.max(1),
                turn: VecDeque::new(),
                waiting: HashMap::new(),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.locked()
    }

    /// A slot for a request of `client`: at once when one is free and nobody waits, else when
    /// the client's turn comes.
    pub(super) async fn acquire(self: &Arc<Self>, client: u64) -> Slot {
        let rx = {
            let mut s = self.lock();
            if s.free > 0 && s.turn.is_empty() {
                s.free -= 1;
                return Slot { admission: Some(self.clone()) };
            }
            let (tx, rx) = oneshot::channel();
            let s = &mut *s;
            let queue = s.waiting.entry(client).or_default();
            if queue.is_empty() {
                s.turn.push_back(client);
            }
            queue.push_back(tx);
            rx
        };
        match rx.await {
            Ok(slot) => slot,
            // The admission is never dropped while a slot of it lives; should the sender go
            // anyway, the request still goes (unbounded rather than stuck).
            Err(_) => Slot { admission: None },
        }
    }

    /// Hands a freed slot to the next client in turn whose request still waits, or frees it.
    fn release(this: &Arc<Self>) {
        let mut s = this.lock();
        while let Some(client) = s.turn.pop_front() {
            let Some(queue) = s.waiting.get_mut(&client) else { continue };
            let Some(tx) = queue.pop_front() else {
                s.waiting.remove(&client);
                continue;
            };
            if queue.is_empty() {
                s.waiting.remove(&client);
            } else {
                s.turn.push_back(client);
            }
            match tx.send(Slot { admission: Some(this.clone()) }) {
                Ok(()) => return,
                // That request was given up: the slot comes back here, unreleased.
                Err(mut slot) => slot.admission = None,
            }
        }
        s.free += 1;
    }

    /// Requests waiting for a slot now.
    pub(super) fn waiting(&self) -> usize {
        self.lock().waiting.values().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests;
