//! Deadlines of the requests in flight, earliest first, with lazy removal.
//!
//! Most deadlines are "now plus the same timeout", so they arrive in order: those go to the back
//! of a queue, O(1). A deadline earlier than the queue's last (a shorter per-request timeout, a
//! progress reset) goes to a heap instead, O(log n). The earliest deadline is the earlier of the
//! two fronts. Entries are never searched for: a request that completes leaves its entry behind,
//! and the owner drops stale entries when they reach a front ([`Timers::settle`]) or when they
//! outnumber the live ones ([`Timers::retain`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::mem;
use std::time::Instant;

/// A deadline and the id of the request it belongs to.
pub(crate) type Timer = (Instant, u64);

#[derive(Debug, Default)]
pub(crate) struct Timers {
    /// Deadlines that arrived in non-decreasing order.
    fifo: VecDeque<Timer>,
    /// The others.
    heap: BinaryHeap<Reverse<Timer>>,
}

impl Timers {
    pub(crate) fn push(&mut self, at: Instant, id: u64) {
        if self.fifo.back().is_none_or(|&(last, _)| at >= last) {
            self.fifo.push_back((at, id));
        } else {
            self.heap.push(Reverse((at, id)));
        }
    }

    /// The earliest entry, current or not.
    pub(crate) fn peek(&self) -> Option<Timer> {
        match (self.fifo.front(), self.heap.peek()) {
            (Some(&f), Some(&Reverse(h))) => Some(f.min(h)),
            (Some(&f), None) => Some(f),
            (None, Some(&Reverse(h))) => Some(h),
            (None, None) => None,
        }
    }

    /// Removes the earliest entry.
    pub(crate) fn pop(&mut self) -> Option<Timer> {
        let first = self.peek()?;
        if self.fifo.front() == Some(&first) {
            self.fifo.pop_front()
        } else {
            self.heap.pop().map(|Reverse(t)| t)
        }
    }

    /// Drops entries that are not `current` from both fronts, so [`Timers::peek`] is current.
    pub(crate) fn settle(&mut self, current: impl Fn(Timer) -> bool) {
        while self.fifo.front().is_some_and(|&t| !current(t)) {
            self.fifo.pop_front();
        }
        while self.heap.peek().is_some_and(|&Reverse(t)| !current(t)) {
            self.heap.pop();
        }
    }

    /// Keeps only the `current` entries.
    pub(crate) fn retain(&mut self, current: impl Fn(Timer) -> bool) {
        self.fifo.retain(|&t| current(t));
        self.heap.retain(|&Reverse(t)| current(t));
    }

    pub(crate) fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    pub(crate) fn clear(&mut self) {
        self.fifo.clear();
        self.heap.clear();
    }

    pub(crate) fn capacity(&self) -> usize {
        self.fifo.capacity() + self.heap.capacity()
    }

    pub(crate) fn shrink_to(&mut self, keep: usize) {
        self.fifo.shrink_to(keep);
        self.heap.shrink_to(keep);
    }

    /// Bytes per entry.
    pub(crate) const fn entry_bytes() -> usize {
        mem::size_of::<Timer>()
    }
}

#[cfg(test)]
mod tests;
