//! Requests we sent, awaiting their responses: ids, deadlines, late and unknown answers.
//!
//! A request's waiter lives in its slot from [`Outbound::register`] until
//! [`Outbound::collect`]. A response ([`Outbound::answer`]), its deadline ([`Outbound::expire`])
//! or the connection's end ([`Outbound::drain_in_place`]) answers it in place: the caller writes
//! the outcome into the waiter, and the slot stays taken, no longer in flight, until the outcome
//! is collected. [`Outbound::cancel`] frees the slot of a request still in flight.
//!
//! Invariants, kept by every method:
//! - A slot's `generation` is that of the last id issued from it, in `1..=max_generation`. A
//!   pushed slot starts at `floor + 1`, so it never repeats an id of an earlier slot at its index.
//! - Every index in `free` below `slots.len()` names a slot that is neither live nor retired
//!   (`generation == max_generation`); indices at or past `slots.len()` belong to trimmed slots
//!   and are skipped when popped. `free` holds no index twice: a slot is pushed only when `free`
//!   is empty.
//! - A live slot is in flight or answered; an answered slot is neither counted in `len` nor
//!   matched by any id until `collect` frees it.
//! - The earliest entry of `timers`, if any, is current: its slot is in flight with exactly that
//!   id and deadline. Other entries may be stale, and `timers.len() <= 2 * len + 64` after every
//!   call.

use std::fmt;
use std::mem;
use std::time::Instant;

use super::timers::Timers;
use crate::limits::MAX_IN_FLIGHT_CEILING;
use crate::message::Id;

/// The largest id an [`Outbound`] table issues: 2^53 - 1.
///
/// JavaScript peers read every JSON number as a double, which holds integers exactly only up to
/// 2^53; an id above it would come back as a different number.
pub const MAX_ID: u64 = (1 << 53) - 1;

/// Below this many slots the table neither trims nor shrinks its vectors: small tables keep their
/// memory and steady traffic never reallocates.
const MIN_SLOTS: usize = 64;

struct Live<W> {
    waiter: W,
    flight: Flight,
}

/// Where a live request stands. Answered requests keep their slot (and waiter) until
/// [`Outbound::collect`], so a waiter can be a cell the outcome is written into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flight {
    /// Awaiting its response, until the deadline if there is one.
    Waiting(Option<Instant>),
    /// Answered, timed out or drained; its id no longer matches a response.
    Answered,
}

impl<W> Live<W> {
    fn deadline(&self) -> Option<Instant> {
        match self.flight {
            Flight::Waiting(at) => at,
            Flight::Answered => None,
        }
    }
}

struct Slot<W> {
    generation: u64,
    live: Option<Live<W>>,
}

/// The table of requests in flight: issues each request's id and matches each response to the
/// waiter registered for it.
///
/// An id is `(generation << slot_bits) | slot`: the low bits index a slab slot, the high bits
/// count that slot's uses. Answering a response decodes its id, with no hashing and no search,
/// and tells a response that is late (its request was answered, cancelled, timed out or drained)
/// from one whose id was never issued. Ids never exceed [`MAX_ID`] and are never issued twice.
///
/// A request's waiter stays in its slot until [`collect`]: [`answer`], [`expire`] and
/// [`drain_in_place`] hand it to the caller in place, to write the outcome into (the peer's
/// waiter is a cell holding the caller's waker, then its outcome), and the request is no longer
/// in flight. [`cancel`] gives up on a request still in flight and frees its slot.
///
/// Time is passed in: deadlines are `Instant`s the caller chooses, and [`expire`] takes `now`.
/// The table does no I/O and reads no clock.
///
/// # Costs
///
/// [`register`], [`answer`], [`collect`] and [`cancel`] are O(1), no hashing. Deadlines that
/// arrive in order (the same timeout for every request) cost O(1) more; one earlier than the last
/// registered (a shorter timeout, a progress reset) goes to a heap, O(log n). Stale deadlines are
/// dropped lazily, amortised over the entries pushed. One slot costs [`entry_bytes`]: 32 bytes
/// for a pointer-sized `W` on 64-bit targets, plus 4 bytes of free list and 24 bytes of timer
/// per entry with a deadline. After a burst the table trims trailing free slots and shrinks its
/// vectors (never below 64 slots), amortised over the slots freed; a single long-lived request in
/// a high slot keeps the slots below it allocated until it is collected or cancelled.
///
/// # Id exhaustion
///
/// A slot whose generation reaches the top of its field (2^(53 - slot_bits) - 1, at least
/// 2^33 - 1) is retired, never reused. A slot pushed after a trim starts above the highest
/// generation any trimmed slot reached, so slots past the first 64, which are the only ones
/// trimmed, share that budget across bursts. Either way exhaustion takes billions of requests;
/// when the table can issue no new id, [`register`] returns [`Full`] as at `max_in_flight`.
///
/// [`register`]: Outbound::register
/// [`answer`]: Outbound::answer
/// [`expire`]: Outbound::expire
/// [`drain_in_place`]: Outbound::drain_in_place
/// [`collect`]: Outbound::collect
/// [`cancel`]: Outbound::cancel
/// [`entry_bytes`]: Outbound::entry_bytes
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use mcpwire::Id;
/// use mcpwire::mux::{Outbound, Unmatched};
///
/// // Each waiter is a cell for its request's outcome.
/// let mut out: Outbound<Option<&str>> = Outbound::new(64);
/// let now = Instant::now();
/// let list = out.register(None, None).unwrap();
/// let call = out.register(None, Some(now + Duration::from_secs(30))).unwrap();
/// assert_ne!(list, call);
///
/// // The response's id is the number we sent: its outcome goes into the waiter, in place.
/// *out.answer(Id::Num(list as i64)).unwrap() = Some("the tools");
/// assert_eq!(out.answer(Id::Num(list as i64)).err(), Some(Unmatched::Late));
/// assert_eq!(out.answer(Id::Str("1")).err(), Some(Unmatched::Unknown));
/// // Answered, the request is no longer in flight; collecting its outcome frees the slot.
/// assert_eq!(out.len(), 1);
/// assert_eq!(out.collect(list), Some(Some("the tools")));
///
/// // Nothing answers the call: once its deadline passes, expire hands over its waiter.
/// assert_eq!(out.next_deadline(), Some(now + Duration::from_secs(30)));
/// assert!(out.expire(now).is_none());
/// let (id, waiter) = out.expire(now + Duration::from_secs(30)).unwrap();
/// *waiter = Some("timed out");
/// assert_eq!(id, call);
/// assert!(out.is_empty());
/// assert_eq!(out.collect(call), Some(Some("timed out")));
/// assert_eq!(out.stats().timed_out, 1);
/// ```
pub struct Outbound<W> {
    slots: Vec<Slot<W>>,
    free: Vec<u32>,
    timers: Timers,
    len: usize,
    max_in_flight: usize,
    slot_bits: u32,
    max_generation: u64,
    /// How many slots may exist: 2^slot_bits, capped so an index fits the `u32` free list.
    slot_limit: u64,
    /// The highest generation any trimmed slot reached.
    floor: u64,
    /// The most slots ever allocated: an index below it but past the end was trimmed.
    high_water: usize,
    /// Removals and trimmed slots since the last rebuild, which waits for `slots.len() / 2`.
    credit: usize,
    stats: OutboundStats,
}

/// Why [`Outbound::answer`] found no request for a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unmatched {
    /// The id was never issued by this table: a string, `null`, zero, negative or above
    /// [`MAX_ID`], a slot never allocated, or a generation the slot has not reached. The peer
    /// answered a request we did not send.
    Unknown,
    /// The id was issued but its request is no longer in flight: answered already (collected or
    /// not), cancelled, timed out or drained. Once the table has trimmed slots, an id on a
    /// trimmed or regrown slot that may have been issued before the trim also counts as late.
    Late,
}

impl fmt::Display for Unmatched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unknown => "response to a request id that was never sent",
            Self::Late => "response to a request no longer in flight",
        })
    }
}

impl std::error::Error for Unmatched {}

/// [`Outbound::register`] refused a request: `max_in_flight` requests are in flight, every slot is
/// taken (in flight, or answered and not yet collected), or the table has no id left to issue.
/// The waiter is handed back.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Full<W>(pub W);

impl<W> Full<W> {
    /// The waiter that was not registered.
    #[must_use]
    pub fn into_inner(self) -> W {
        self.0
    }
}

impl<W> fmt::Debug for Full<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Full(..)")
    }
}

impl<W> fmt::Display for Full<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("too many requests in flight")
    }
}

impl<W> std::error::Error for Full<W> {}

/// Counters of an [`Outbound`] table since it was made.
///
/// `registered == completed + cancelled + timed_out + drained + len()`: a request leaves the
/// count of those in flight once, when it is answered, timed out, drained or cancelled;
/// [`Outbound::collect`] counts nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct OutboundStats {
    /// Requests registered.
    pub registered: u64,
    /// Registrations refused with [`Full`].
    pub refused: u64,
    /// Responses matched to their request by [`Outbound::answer`].
    pub completed: u64,
    /// Responses whose id was never issued ([`Unmatched::Unknown`]).
    pub unknown: u64,
    /// Responses to requests no longer in flight ([`Unmatched::Late`]).
    pub late: u64,
    /// Requests removed by [`Outbound::cancel`].
    pub cancelled: u64,
    /// Requests whose deadline passed, answered by [`Outbound::expire`].
    pub timed_out: u64,
    /// Requests answered by [`Outbound::drain_in_place`].
    pub drained: u64,
}

impl<W> Outbound<W> {
    /// An empty table holding at most `max_in_flight` requests (clamped to
    /// `1..=`[`MAX_IN_FLIGHT_CEILING`]). Allocates nothing until the first request.
    #[must_use]
    pub fn new(max_in_flight: usize) -> Self {
        let max = max_in_flight.clamp(1, MAX_IN_FLIGHT_CEILING);
        let slot_bits = (usize::BITS - (max - 1).leading_zeros()).max(1);
        Self::with_layout(max, slot_bits, (1 << (53 - slot_bits)) - 1)
    }

    fn with_layout(max: usize, slot_bits: u32, max_generation: u64) -> Self {
        debug_assert!((1..53).contains(&slot_bits) && max_generation >= 1);
        debug_assert!(max_generation < 1 << (53 - slot_bits) && (max as u64) <= 1 << slot_bits);
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            timers: Timers::default(),
            len: 0,
            max_in_flight: max,
            slot_bits,
            max_generation,
            slot_limit: (1u64 << slot_bits).min(1 << 32),
            floor: 0,
            high_water: 0,
            credit: 0,
            stats: OutboundStats::default(),
        }
    }

    /// The most requests the table holds at once.
    #[must_use]
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// Requests in flight: registered and not yet answered, timed out, drained or cancelled.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no request is in flight.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `id` is in flight.
    #[must_use]
    pub fn contains(&self, id: u64) -> bool {
        self.find(id).is_ok()
    }

    /// Adds a request and returns the id to send it with: in `1..=`[`MAX_ID`], never issued
    /// before by this table. With a deadline, [`expire`](Self::expire) answers it once
    /// `now >= deadline`.
    ///
    /// # Errors
    ///
    /// [`Full`], with the waiter, when `max_in_flight` requests are in flight, every slot is
    /// taken (answered slots count until collected), or no id is left.
    pub fn register(&mut self, waiter: W, deadline: Option<Instant>) -> Result<u64, Full<W>> {
        if self.len >= self.max_in_flight {
            self.stats.refused += 1;
            return Err(Full(waiter));
        }
        let i = loop {
            match self.free.pop() {
                Some(i) if (i as usize) < self.slots.len() => break i as usize,
                Some(_) => continue, // a trimmed slot
                None => {}
            }
            let i = self.slots.len();
            if i as u64 >= self.slot_limit || self.floor >= self.max_generation {
                self.stats.refused += 1;
                return Err(Full(waiter));
            }
            self.slots.push(Slot { generation: self.floor, live: None });
            self.high_water = self.high_water.max(i + 1);
            break i;
        };
        let slot = &mut self.slots[i];
        slot.generation += 1;
        slot.live = Some(Live { waiter, flight: Flight::Waiting(deadline) });
        let id = (slot.generation << self.slot_bits) | i as u64;
        self.len += 1;
        self.stats.registered += 1;
        if let Some(at) = deadline {
            self.timers.push(at, id);
            self.bound_heap();
        }
        Ok(id)
    }

    /// Removes a request in flight (we gave up on it), freeing its slot, and returns its waiter;
    /// `None` if `id` is not in flight (an answered request is collected instead). A response to
    /// it later is [`Unmatched::Late`].
    pub fn cancel(&mut self, id: u64) -> Option<W> {
        let waiter = self.find(id).ok().and_then(|i| self.take(i))?;
        self.stats.cancelled += 1;
        Some(waiter)
    }

    /// Replaces the deadline of a request in flight; `false` if `id` is not in flight.
    pub fn set_deadline(&mut self, id: u64, deadline: Option<Instant>) -> bool {
        let Some(live) = self.find(id).ok().and_then(|i| self.slots[i].live.as_mut()) else {
            return false;
        };
        let old = live.deadline();
        live.flight = Flight::Waiting(deadline);
        if old != deadline {
            if let Some(at) = deadline {
                self.timers.push(at, id);
            }
            if old.is_some() {
                self.settle_heap();
            }
            self.bound_heap();
        }
        true
    }

    /// The earliest deadline of any request in flight: when to call [`expire`](Self::expire)
    /// next.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.peek().map(|(at, _)| at)
    }

    /// Matches a response's id to its request and returns its waiter, left in its slot for the
    /// caller to write the outcome into; [`collect`](Self::collect) frees the slot later. From
    /// here on the request is no longer in flight: it is not counted in [`len`](Self::len), its
    /// deadline is gone, and a second response to it is [`Unmatched::Late`].
    ///
    /// Ids compare by type and value: `Id::Str("7")` never matches request 7.
    ///
    /// # Errors
    ///
    /// [`Unmatched::Unknown`] for an id this table never issued, [`Unmatched::Late`] for a request
    /// no longer in flight. Both are counted in [`stats`](Self::stats).
    pub fn answer(&mut self, id: Id<'_>) -> Result<&mut W, Unmatched> {
        let found = match id {
            Id::Num(n) => {
                u64::try_from(n).map_err(|_| Unmatched::Unknown).and_then(|n| self.find(n))
            }
            Id::Str(_) | Id::Null => Err(Unmatched::Unknown),
        };
        match found {
            Ok(i) => {
                self.stats.completed += 1;
                Ok(self.park(i))
            }
            Err(e) => {
                match e {
                    Unmatched::Unknown => self.stats.unknown += 1,
                    Unmatched::Late => self.stats.late += 1,
                }
                Err(e)
            }
        }
    }

    /// One request whose deadline is `<= now`, earliest first, answered as timed out (and
    /// counted so); call it until `None`. Its waiter stays in its slot, for the caller to write
    /// the outcome into, until [`collect`](Self::collect).
    pub fn expire(&mut self, now: Instant) -> Option<(u64, &mut W)> {
        loop {
            let (at, id) = self.timers.peek()?;
            if at > now {
                return None;
            }
            self.timers.pop();
            let i = self.slot_of(id);
            if self.slots.get(i).and_then(|s| s.live.as_ref()).is_some_and(|l| {
                l.flight == Flight::Waiting(Some(at))
                    && self.slots[i].generation == id >> self.slot_bits
            }) {
                self.stats.timed_out += 1;
                return Some((id, self.park(i)));
            }
        }
    }

    /// Answers every request in flight, in slot order (for a closed connection: every waiter
    /// learns at once), counting each as drained: `f` gets each one's id and waiter to write the
    /// outcome into. The waiters stay in their slots until [`collect`](Self::collect); once they
    /// are collected the table is back to its small size.
    pub fn drain_in_place(&mut self, mut f: impl FnMut(u64, &mut W)) {
        let bits = self.slot_bits;
        let mut drained = 0;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if let Some(live) = slot.live.as_mut()
                && live.flight != Flight::Answered
            {
                live.flight = Flight::Answered;
                drained += 1;
                f((slot.generation << bits) | i as u64, &mut live.waiter);
            }
        }
        self.len = 0;
        self.stats.drained += drained;
        self.timers.clear();
    }

    /// The waiter of request `id`, in flight or answered and not yet collected.
    pub fn waiter_mut(&mut self, id: u64) -> Option<&mut W> {
        let i = self.slot_of(id);
        let slot = self.slots.get_mut(i)?;
        if id == 0 || id > MAX_ID || slot.generation != id >> self.slot_bits {
            return None;
        }
        slot.live.as_mut().map(|l| &mut l.waiter)
    }

    /// Frees the slot of an answered, timed-out or drained request and returns its waiter;
    /// `None` if `id` is not such a request waiting to be collected (use
    /// [`cancel`](Self::cancel) for one in flight).
    pub fn collect(&mut self, id: u64) -> Option<W> {
        let i = self.slot_of(id);
        let slot = self.slots.get(i)?;
        let answered = id != 0
            && id <= MAX_ID
            && slot.generation == id >> self.slot_bits
            && slot.live.as_ref().is_some_and(|l| l.flight == Flight::Answered);
        if answered { self.take(i) } else { None }
    }

    /// Marks slot `i`'s request answered; it stays in its slot until collected.
    fn park(&mut self, i: usize) -> &mut W {
        let live = self.slots[i].live.as_mut().expect("park is called on a live slot");
        let had_deadline = live.deadline().is_some();
        live.flight = Flight::Answered;
        self.len -= 1;
        if had_deadline {
            self.settle_heap();
        }
        self.bound_heap();
        &mut self.slots[i].live.as_mut().expect("still live").waiter
    }

    /// The table's counters.
    #[must_use]
    pub fn stats(&self) -> OutboundStats {
        self.stats
    }

    /// Slots allocated, live or free.
    #[must_use]
    pub fn slots_allocated(&self) -> usize {
        self.slots.len()
    }

    /// Timer entries held, current and stale.
    #[must_use]
    pub fn timers_len(&self) -> usize {
        self.timers.len()
    }

    /// Bytes the table holds on the heap: slot, free list and timer capacity. What each waiter
    /// owns is not counted.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.slots.capacity() * Self::entry_bytes()
            + self.free.capacity() * mem::size_of::<u32>()
            + self.timers.capacity() * Timers::entry_bytes()
    }

    /// Bytes one slot takes: 32 for a pointer-sized `W` on 64-bit targets (generation, waiter,
    /// optional deadline).
    #[must_use]
    pub const fn entry_bytes() -> usize {
        mem::size_of::<Slot<W>>()
    }

    fn slot_of(&self, id: u64) -> usize {
        (id & ((1 << self.slot_bits) - 1)) as usize
    }

    /// The slot of a live request with this id, or why there is none.
    fn find(&self, id: u64) -> Result<usize, Unmatched> {
        if id == 0 || id > MAX_ID {
            return Err(Unmatched::Unknown);
        }
        let (i, generation) = (self.slot_of(id), id >> self.slot_bits);
        match self.slots.get(i) {
            _ if generation == 0 => Err(Unmatched::Unknown),
            Some(s)
                if generation == s.generation
                    && s.live.as_ref().is_some_and(|l| l.flight != Flight::Answered) =>
            {
                Ok(i)
            }
            Some(s) if generation <= s.generation => Err(Unmatched::Late),
            None if i < self.high_water && generation <= self.floor => Err(Unmatched::Late),
            Some(_) | None => Err(Unmatched::Unknown),
        }
    }

    /// Empties slot `i`, returning its waiter; then trims, rebuilds and bounds as due.
    fn take(&mut self, i: usize) -> Option<W> {
        let slot = &mut self.slots[i];
        let live = slot.live.take()?;
        if slot.generation < self.max_generation {
            self.free.push(i as u32);
        }
        if live.flight != Flight::Answered {
            self.len -= 1;
        }
        self.credit += 1;
        if live.deadline().is_some() {
            self.settle_heap();
        }
        self.bound_heap();
        let sparse = self.slots.len() > MIN_SLOTS && self.len * 4 <= self.slots.len();
        if sparse {
            self.trim();
        }
        // A rebuild walks every slot and timer, at most about 2 * slots.len() + 64 steps, and is
        // paid for by the slots.len() / 2 removals or trimmed slots it waits for. Counting trimmed
        // slots lets a burst that just drained give its memory back at once.
        if self.credit >= self.slots.len() / 2 && (sparse || self.oversized()) {
            self.rebuild();
        }
        Some(live.waiter)
    }
}

impl<W> fmt::Debug for Outbound<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outbound")
            .field("len", &self.len)
            .field("max_in_flight", &self.max_in_flight)
            .field("slots", &self.slots.len())
            .field("timers", &self.timers.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

mod upkeep;

#[cfg(test)]
mod tests;
