//! The table's upkeep: memory given back after a burst (trailing free slots trimmed, the free
//! list rebuilt, vectors shrunk) and the timer heap kept free of stale entries. Each step is
//! paid for by the calls that made it due, so every method of [`Outbound`] stays amortised O(1).

use std::time::Instant;

use super::{Flight, MIN_SLOTS, Outbound, Slot};

impl<W> Outbound<W> {
    /// Drops trailing free slots, down to `MIN_SLOTS`. Each slot is dropped at most once per
    /// push, so this is amortised O(1). Retired slots stay, so they are never reissued.
    pub(super) fn trim(&mut self) {
        while self.slots.len() > MIN_SLOTS {
            match self.slots.last() {
                Some(s) if s.live.is_none() && s.generation < self.max_generation => {
                    self.floor = self.floor.max(s.generation);
                    self.slots.pop();
                    self.credit += 1;
                }
                _ => break,
            }
        }
    }

    /// Rebuilds the free list in descending order, so the lowest slots are reused first and the
    /// live set drifts to the front where trimming can free the rest; drops stale timers; shrinks.
    pub(super) fn rebuild(&mut self) {
        let max_generation = self.max_generation;
        self.free.clear();
        let free = self.slots.iter().enumerate().rev();
        let free = free.filter(|(_, s)| s.live.is_none() && s.generation < max_generation);
        self.free.extend(free.map(|(i, _)| i as u32));
        self.compact_heap();
        let keep = self.keep();
        self.slots.shrink_to(keep);
        self.free.shrink_to(keep);
        self.timers.shrink_to(keep);
        self.credit = 0;
    }

    /// The capacity a vector may shrink to: room for twice the live set, never below `MIN_SLOTS`.
    pub(super) fn keep(&self) -> usize {
        (2 * self.len).max(MIN_SLOTS)
    }

    /// Whether some vector has more than twice the capacity it needs, or the free list holds
    /// indices of trimmed slots.
    pub(super) fn oversized(&self) -> bool {
        let keep = self.keep();
        self.free.len() > self.slots.len() - self.len
            || self.slots.capacity() > 2 * keep.max(self.slots.len())
            || self.free.capacity() > 2 * keep.max(self.free.len())
            || self.timers.capacity() > 2 * keep.max(self.timers.len())
    }

    /// Drops stale timers from the fronts, so the earliest is current.
    pub(super) fn settle_heap(&mut self) {
        let (slots, bits) = (&self.slots, self.slot_bits);
        self.timers.settle(|(at, id)| is_current(slots, bits, at, id));
    }

    /// Keeps stale timers from piling up below the top: a rebuild waits for more than `len + 64`
    /// stale entries, each left by one call, so it is amortised O(1).
    pub(super) fn bound_heap(&mut self) {
        if self.timers.len() > 2 * self.len + 64 {
            self.compact_heap();
        }
    }

    pub(super) fn compact_heap(&mut self) {
        let (slots, bits) = (&self.slots, self.slot_bits);
        self.timers.retain(|(at, id)| is_current(slots, bits, at, id));
    }
}

/// Whether timer `(at, id)` belongs to a live request with exactly that deadline.
fn is_current<W>(slots: &[Slot<W>], slot_bits: u32, at: Instant, id: u64) -> bool {
    let i = (id & ((1 << slot_bits) - 1)) as usize;
    slots.get(i).is_some_and(|s| {
        s.generation == id >> slot_bits
            && s.live.as_ref().is_some_and(|l| l.flight == Flight::Waiting(Some(at)))
    })
}
