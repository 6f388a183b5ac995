//! The other side's notifications: handled one at a time, in order, and before the requests
//! read after them.
//!
//! The rule: a request's handler begins only once the handler of every notification read
//! before it has begun (been polled once), so `notifications/initialized` is seen before the
//! requests that follow it; unless the notification handler that runs is waiting (it returned
//! `Pending` on its first poll): then requests are not held back, since one of them may be what
//! it waits for. Notifications waiting for their turn are bounded by count and bytes; past
//! either, reading stops.

use std::collections::VecDeque;

use crate::limits::NOTIFICATION_BYTES_HELD;
use crate::limits::NOTIFICATIONS_HELD;
use crate::peer::incoming::Incoming;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// No notification handler is running.
    Idle,
    /// One has been handed out and not yet reported waiting or done.
    Begun,
    /// The one running returned `Pending` on its first poll.
    Waiting,
}

pub(crate) struct ReceivedNotifications {
    queue: VecDeque<(Incoming, usize)>,
    turn: Turn,
    /// Bytes of the one running.
    running_bytes: usize,
    held: usize,
    held_bytes: usize,
    /// Notifications read, and notifications whose handler was handed out, so far.
    read: u64,
    begun: u64,
}

impl ReceivedNotifications {
    pub(crate) fn new() -> Self {
        Self {
            queue: VecDeque::new(),
            turn: Turn::Idle,
            running_bytes: 0,
            held: 0,
            held_bytes: 0,
            read: 0,
            begun: 0,
        }
    }

    /// Whether one more notification of `bytes` fits; the first always does.
    pub(crate) fn fits(&self, bytes: usize) -> bool {
        self.held == 0
            || (self.held < NOTIFICATIONS_HELD
                && self.held_bytes.saturating_add(bytes) <= NOTIFICATION_BYTES_HELD)
    }

    /// Queues a notification (the caller checked [`ReceivedNotifications::fits`]).
    pub(crate) fn push(&mut self, n: Incoming, bytes: usize) {
        self.held += 1;
        self.held_bytes += bytes;
        self.read += 1;
        self.queue.push_back((n, bytes));
    }

    /// The next notification whose handler is to begin, if none is running.
    pub(crate) fn next(&mut self) -> Option<Incoming> {
        if self.turn != Turn::Idle {
            return None;
        }
        let (n, bytes) = self.queue.pop_front()?;
        self.turn = Turn::Begun;
        self.begun += 1;
        self.running_bytes = bytes;
        Some(n)
    }

    /// The running handler returned `Pending` on its first poll.
    pub(crate) fn waiting(&mut self) {
        if self.turn == Turn::Begun {
            self.turn = Turn::Waiting;
        }
    }

    /// The running handler finished: the next may begin.
    pub(crate) fn done(&mut self) {
        if self.turn == Turn::Idle {
            return;
        }
        self.turn = Turn::Idle;
        self.held -= 1;
        self.held_bytes -= self.running_bytes;
        self.running_bytes = 0;
    }

    /// The position of the first notification held whose handler has not begun.
    pub(crate) fn first_waiting(&self) -> Option<u64> {
        self.queue.front().map(|(n, _)| n.position())
    }

    /// Notifications read so far: a request read now may begin once that many have.
    pub(crate) fn read(&self) -> u64 {
        self.read
    }

    /// Whether a request read after `after` notifications may begin: they have all been handed
    /// out (the driver begins them in the order handed out, before anything handed out later),
    /// or the one running is waiting.
    pub(crate) fn lets_begin(&self, after: u64) -> bool {
        self.begun >= after || self.turn == Turn::Waiting
    }

    /// Whether every notification read has been handled.
    pub(crate) fn is_idle(&self) -> bool {
        self.held == 0
    }

    /// The connection closed: nothing more is handled.
    pub(crate) fn close(&mut self) {
        self.queue.clear();
        self.turn = Turn::Idle;
        self.begun = self.read;
        self.held = 0;
        self.held_bytes = 0;
        self.running_bytes = 0;
    }
}
