//! The in-flight tables of `mcpwire::mux` against a simple model, step by step.
//!
//! [`Outbound`] is checked against a `BTreeMap` of the requests in flight, one of the requests
//! answered and not yet collected, and the set of every id ever issued: register (with or without
//! a deadline, alone or in bursts up to the table's maximum), answer with a live id, an answered
//! or late one, a crafted, random, string or `null` id, write the outcome into the waiter in
//! place, collect it at once or later, cancel, move a deadline, advance the clock and expire the
//! requests due, drain in place. A second response to an answered request is late, `len` does
//! not count it, and its slot stays taken (a table whose slots are all taken refuses a request)
//! until it is collected. [`Inbound`] is checked
//! against a `BTreeMap` from id to token: begin with fresh, duplicate, `null` and string ids until
//! the table is full, finish with the right token, a stale one (the request finished, was
//! cancelled, or its id was reused) or a wrong one, cancel, drain. After every step the lengths,
//! every waiter (in flight or answered), the earliest deadline, the timer heap's bound and every
//! counter are compared.
//!
//! Shared by the `mux` fuzz target, which decodes operations from its input with [`ops`], and by
//! `tests/mux_model.rs` and `tests/fuzz_regressions.rs` in the main crate, which include this file
//! with `#[path]`: it may use only `mcpwire`, `arbitrary` and std. The operations and their
//! decoding sit in `mux_ops.rs`, which this file includes by path in turn.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use arbitrary::Unstructured;
use mcpwire::Id;
use mcpwire::mux::{Inbound, MAX_ID, Outbound, Refused, Unmatched};

/// `max_in_flight` of the [`Outbound`] table under test: 8 slot bits, and bursts can pass 64
/// slots so the table trims.
pub const OUT_MAX: usize = 256;
/// The slot bits an [`Outbound`] table of [`OUT_MAX`] uses.
pub const SLOT_BITS: u32 = 8;
/// The slots an [`Outbound`] table of [`OUT_MAX`] may hold, in flight or answered: 2^SLOT_BITS.
const OUT_SLOTS: usize = 1 << SLOT_BITS;

/// What the model writes into a waiter (its tag) when its request is answered, times out or is
/// drained, so collecting it shows which one it got.
const ANSWERED: u64 = 1 << 62;
const TIMED_OUT: u64 = 1 << 61;
const DRAINED: u64 = 1 << 60;
/// `max` of the [`Inbound`] table under test: small, so sequences fill it.
pub const IN_MAX: usize = 16;

#[path = "mux_ops.rs"]
mod mux_ops;
pub use mux_ops::{Op, PeerId, ops};

/// Runs `data`, decoded with [`ops`], against a fresh [`Model`]: the `mux` fuzz target.
pub fn check_mux(data: &[u8]) {
    let Ok(ops) = ops(&mut Unstructured::new(data)) else { return };
    let mut model = Model::new();
    for op in ops {
        model.apply(op);
    }
}

fn num(id: u64) -> Id<'static> {
    Id::Num(i64::try_from(id).expect("issued ids fit an i64"))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// What the model expects the [`Outbound`] counters to be.
#[derive(Default, Debug, PartialEq, Eq)]
struct OutCounts {
    registered: u64,
    refused: u64,
    completed: u64,
    unknown: u64,
    late: u64,
    cancelled: u64,
    timed_out: u64,
    drained: u64,
}

/// What the model expects the [`Inbound`] counters to be.
#[derive(Default, Debug, PartialEq, Eq)]
struct InCounts {
    begun: u64,
    finished: u64,
    duplicates: u64,
    null_ids: u64,
    full: u64,
    cancelled: u64,
    cancel_unknown: u64,
    drained: u64,
}

/// Both tables and what they should hold.
pub struct Model {
    out: Outbound<u64>,
    /// Id to (waiter tag, deadline): the requests in flight.
    live: BTreeMap<u64, (u64, Option<Instant>)>,
    /// Id to the waiter's value: requests answered, timed out or drained, not yet collected.
    answered: BTreeMap<u64, u64>,
    issued: HashSet<u64>,
    issued_order: Vec<u64>,
    out_counts: OutCounts,
    start: Instant,
    now: Instant,
    next_tag: u64,
    /// The table has trimmed slots since it began: from then on an id never issued may also be
    /// reported late (the documented, conservative side).
    trimmed: bool,
    slots_seen: usize,

    inbound: Inbound<u64>,
    /// Id to (token, handle tag).
    handling: BTreeMap<PeerId, (u64, u64)>,
    /// Every request begun, with its token, in order.
    begun: Vec<(PeerId, u64)>,
    tokens: HashSet<u64>,
    in_counts: InCounts,
    next_fill: i64,
}

impl Default for Model {
    fn default() -> Self {
        Self::new()
    }
}

impl Model {
    /// Empty tables at the model's limits.
    pub fn new() -> Self {
        let now = Instant::now();
        Self {
            out: Outbound::new(OUT_MAX),
            live: BTreeMap::new(),
            answered: BTreeMap::new(),
            issued: HashSet::new(),
            issued_order: Vec::new(),
            out_counts: OutCounts::default(),
            start: now,
            now,
            next_tag: 0,
            trimmed: false,
            slots_seen: 0,
            inbound: Inbound::new(IN_MAX),
            handling: BTreeMap::new(),
            begun: Vec::new(),
            tokens: HashSet::new(),
            in_counts: InCounts::default(),
            next_fill: 1000,
        }
    }

    fn tag(&mut self) -> u64 {
        self.next_tag += 1;
        self.next_tag
    }

    fn deadline(&self, offset: Option<u16>) -> Option<Instant> {
        offset.map(|o| self.now + ms(o.into()))
    }

    fn nth_live(&self, i: usize) -> Option<u64> {
        self.live.keys().nth(i % self.live.len().max(1)).copied()
    }

    fn register(&mut self, deadline: Option<Instant>) {
        let tag = self.tag();
        match self.out.register(tag, deadline) {
            Ok(id) => {
                assert!(self.live.len() < OUT_MAX, "registered past max_in_flight");
                assert!(self.live.len() + self.answered.len() < OUT_SLOTS, "registered past slots");
                assert!((1..=MAX_ID).contains(&id), "id {id} out of range");
                assert!(self.issued.insert(id), "id {id} issued twice");
                self.issued_order.push(id);
                self.live.insert(id, (tag, deadline));
                self.out_counts.registered += 1;
            }
            Err(full) => {
                assert!(
                    self.live.len() == OUT_MAX
                        || self.live.len() + self.answered.len() == OUT_SLOTS,
                    "refused with {} in flight and {} answered",
                    self.live.len(),
                    self.answered.len()
                );
                assert_eq!(full.into_inner(), tag);
                self.out_counts.refused += 1;
            }
        }
    }

    /// `Outbound::answer`; a matched waiter gets its outcome written in. Returns the id matched.
    fn answer(&mut self, id: Id<'_>) -> Option<u64> {
        let got = self.out.answer(id).map(|w| {
            let tag = *w;
            *w = tag | ANSWERED;
            tag
        });
        let number = match id {
            Id::Num(n) => u64::try_from(n).ok().filter(|&n| n != 0),
            _ => None,
        };
        match number {
            Some(n) if self.live.contains_key(&n) => {
                let (tag, _) = self.live.remove(&n).expect("live");
                assert_eq!(got, Ok(tag), "{id}");
                self.answered.insert(n, tag | ANSWERED);
                self.out_counts.completed += 1;
                return Some(n);
            }
            Some(n) if self.issued.contains(&n) => {
                assert_eq!(got, Err(Unmatched::Late), "{id}");
                self.out_counts.late += 1;
            }
            Some(_) if self.trimmed && got == Err(Unmatched::Late) => self.out_counts.late += 1,
            _ => {
                assert_eq!(got, Err(Unmatched::Unknown), "{id}");
                self.out_counts.unknown += 1;
            }
        }
        None
    }

    /// `Outbound::collect`: the waiter of an answered request, with what was written into it.
    fn collect(&mut self, id: u64) {
        let live = self.live.get(&id).map(|&(tag, _)| tag);
        let want = live.or_else(|| self.answered.get(&id).copied());
        assert_eq!(self.out.waiter_mut(id).copied(), want, "waiter of {id}");
        let expected = self.answered.remove(&id);
        assert_eq!(self.out.collect(id), expected, "collect {id}");
        assert_eq!(self.out.collect(id), None, "collect {id} twice");
    }

    /// A response whose caller is waiting: answered, then collected at once.
    fn respond(&mut self, id: Id<'_>) {
        if let Some(n) = self.answer(id) {
            self.collect(n);
        }
    }

    fn cancel(&mut self, id: u64) {
        let expected = self.live.remove(&id).map(|(tag, _)| tag);
        assert_eq!(self.out.cancel(id), expected, "cancel {id}");
        self.out_counts.cancelled += u64::from(expected.is_some());
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        let mut last = self.start;
        while let Some((id, w)) = self.out.expire(self.now) {
            let tag = *w;
            *w = tag | TIMED_OUT;
            let (want, deadline) = self.live.remove(&id).expect("expired an id not in flight");
            let deadline = deadline.expect("expired a request without a deadline");
            assert_eq!(tag, want);
            assert!(deadline <= self.now && deadline >= last, "expired out of order");
            last = deadline;
            self.answered.insert(id, tag | TIMED_OUT);
            self.out_counts.timed_out += 1;
        }
        assert!(
            self.live.values().all(|&(_, d)| d.is_none_or(|d| d > self.now)),
            "a request past its deadline was not expired"
        );
    }

    fn drain(&mut self) {
        let mut drained = Vec::new();
        self.out.drain_in_place(|id, w| {
            drained.push((id, *w));
            *w |= DRAINED;
        });
        let want: Vec<(u64, u64)> = self.live.iter().map(|(&i, &(t, _))| (i, t)).collect();
        let mut sorted = drained.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, want, "drained");
        let slot = |id: u64| id & ((1 << SLOT_BITS) - 1);
        assert!(drained.windows(2).all(|p| slot(p[0].0) < slot(p[1].0)), "drained in slot order");
        self.answered.extend(want.iter().map(|&(id, tag)| (id, tag | DRAINED)));
        self.out_counts.drained += want.len() as u64;
        self.live.clear();
    }

    fn begin(&mut self, id: PeerId) {
        let tag = self.tag();
        let got = self.inbound.begin(id.as_id(), tag);
        match got {
            Err(Refused::NullId(h)) => {
                assert_eq!((&id, h), (&PeerId::Null, tag));
                self.in_counts.null_ids += 1;
            }
            Err(Refused::Duplicate(h)) => {
                assert!(self.handling.contains_key(&id), "{id:?} refused as a duplicate");
                assert_eq!(h, tag);
                self.in_counts.duplicates += 1;
            }
            Err(Refused::Full(h)) => {
                assert!(id != PeerId::Null && !self.handling.contains_key(&id));
                assert_eq!(self.handling.len(), IN_MAX, "refused as full below max");
                assert_eq!(h, tag);
                self.in_counts.full += 1;
            }
            Ok(token) => {
                assert!(id != PeerId::Null, "null id accepted");
                assert!(!self.handling.contains_key(&id), "{id:?} accepted twice");
                assert!(self.handling.len() < IN_MAX, "accepted past max");
                assert!(self.tokens.insert(token), "token {token} issued twice");
                self.begun.push((id.clone(), token));
                self.handling.insert(id, (token, tag));
                self.in_counts.begun += 1;
            }
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }

    fn finish(&mut self, id: PeerId, token: u64) {
        let got = self.inbound.finish(id.as_id(), token);
        let want = match self.handling.get(&id) {
            Some(&(t, tag)) if t == token => {
                self.handling.remove(&id);
                self.in_counts.finished += 1;
                Some(tag)
            }
            _ => None,
        };
        assert_eq!(got, want, "finish {id:?} with token {token}");
    }

    fn inbound_cancel(&mut self, id: PeerId) {
        let got = self.inbound.cancel(id.as_id());
        let want = self.handling.remove(&id).map(|(_, tag)| tag);
        match want {
            Some(_) => self.in_counts.cancelled += 1,
            None => self.in_counts.cancel_unknown += 1,
        }
        assert_eq!(got, want, "cancel {id:?}");
    }

    /// Applies one operation to the tables and the model, then compares them.
    pub fn apply(&mut self, op: Op) {
        match op {
            Op::Register(d) => self.register(self.deadline(d)),
            Op::Burst(n, d) => (0..n).for_each(|_| self.register(self.deadline(d))),
            Op::Respond(i) => self.respond(num(self.nth_live(i).unwrap_or(1))),
            Op::AnswerLive(i) => {
                self.answer(num(self.nth_live(i).unwrap_or(1)));
            }
            Op::AnswerIssued(i) if !self.issued_order.is_empty() => {
                self.answer(num(self.issued_order[i % self.issued_order.len()]));
            }
            Op::AnswerIssued(_) | Op::AnswerNull => {
                self.answer(Id::Null);
            }
            Op::Collect(i) => match i % 4 {
                0 | 2 => {
                    let ids: Vec<u64> = self.answered.keys().copied().collect();
                    (0..ids.len()).for_each(|k| self.collect(ids[k * 7919 % ids.len()]));
                }
                1 => {
                    let id = self.answered.keys().nth(i / 4 % self.answered.len().max(1));
                    self.collect(id.copied().unwrap_or(1));
                }
                _ if self.issued_order.is_empty() => self.collect(1),
                _ => self.collect(self.issued_order[i / 4 % self.issued_order.len()]),
            },
            Op::AnswerCrafted { generation, slot } => {
                self.answer(num(u64::from(generation) << SLOT_BITS | u64::from(slot)));
            }
            Op::AnswerNumber(n) => {
                self.answer(Id::Num(n));
            }
            Op::AnswerString(i) => {
                let id = self.nth_live(i).unwrap_or(1).to_string();
                self.answer(Id::Str(&id));
            }
            Op::RespondMost(keep) => {
                let ids: Vec<u64> = self.live.keys().copied().collect();
                let n = ids.len().saturating_sub(keep);
                (0..n).for_each(|k| self.respond(num(ids[k * 7919 % ids.len()])));
            }
            Op::Cancel(i) if i % 2 == 0 || self.issued_order.is_empty() => {
                self.cancel(self.nth_live(i).unwrap_or(1));
            }
            Op::Cancel(i) => self.cancel(self.issued_order[i % self.issued_order.len()]),
            Op::SetDeadline(i, d) => {
                let id = self.nth_live(i).unwrap_or(1);
                let deadline = self.deadline(d);
                let live = self.live.get_mut(&id);
                assert_eq!(self.out.set_deadline(id, deadline), live.is_some());
                if let Some(entry) = live {
                    entry.1 = deadline;
                }
            }
            Op::Advance(by) => self.advance(ms(by.into())),
            Op::Drain => self.drain(),
            Op::Begin(id) => self.begin(id),
            Op::BeginFill => loop {
                self.next_fill += 1;
                let full_before = self.in_counts.full;
                self.begin(PeerId::Num(self.next_fill));
                if self.in_counts.full > full_before {
                    break;
                }
            },
            Op::FinishIssued(i) if !self.begun.is_empty() => {
                let (id, token) = self.begun[i % self.begun.len()].clone();
                self.finish(id, token);
            }
            Op::FinishIssued(_) => self.finish(PeerId::Num(0), 0),
            Op::FinishWrongToken(i, token) => {
                let live: Vec<(PeerId, u64)> =
                    self.handling.iter().map(|(id, &(t, _))| (id.clone(), t)).collect();
                match live.get(i % live.len().max(1)) {
                    Some((id, t)) => {
                        self.finish(id.clone(), if token == *t { t ^ 1 } else { token })
                    }
                    None => self.finish(PeerId::Null, token),
                }
            }
            Op::FinishAny(id, token) => self.finish(id, token),
            Op::InboundCancel(id) => self.inbound_cancel(id),
            Op::InboundDrain => {
                let mut drained: Vec<u64> = self.inbound.drain().collect();
                let mut want: Vec<u64> = self.handling.values().map(|&(_, tag)| tag).collect();
                drained.sort_unstable();
                want.sort_unstable();
                assert_eq!(drained, want, "inbound drained");
                self.in_counts.drained += want.len() as u64;
                self.handling.clear();
            }
        }
        self.check();
    }

    fn check(&mut self) {
        for (&id, &(tag, _)) in &self.live {
            assert!(self.out.contains(id), "{id} in flight");
            assert_eq!(self.out.waiter_mut(id).copied(), Some(tag), "waiter of {id}");
        }
        for (&id, &value) in &self.answered {
            assert!(!self.out.contains(id), "{id} answered");
            assert_eq!(self.out.waiter_mut(id).copied(), Some(value), "waiter of {id}");
        }
        let t = &self.out;
        assert_eq!(t.len(), self.live.len());
        assert_eq!(t.is_empty(), self.live.is_empty());
        assert!(t.slots_allocated() >= self.live.len() + self.answered.len(), "slots");
        let earliest = self.live.values().filter_map(|&(_, d)| d).min();
        assert_eq!(t.next_deadline(), earliest, "next deadline");
        assert!(t.timers_len() <= 2 * t.len() + 64, "{} timers for {}", t.timers_len(), t.len());
        let s = t.stats();
        let got = OutCounts {
            registered: s.registered,
            refused: s.refused,
            completed: s.completed,
            unknown: s.unknown,
            late: s.late,
            cancelled: s.cancelled,
            timed_out: s.timed_out,
            drained: s.drained,
        };
        assert_eq!(got, self.out_counts, "outbound counters");
        self.trimmed |= t.slots_allocated() < self.slots_seen;
        self.slots_seen = t.slots_allocated();

        let t = &self.inbound;
        assert_eq!(t.len(), self.handling.len());
        assert_eq!(t.is_empty(), self.handling.is_empty());
        for (id, &(_, tag)) in &self.handling {
            assert_eq!(t.get(id.as_id()), Some(&tag), "get {id:?}");
        }
        let s = t.stats();
        let got = InCounts {
            begun: s.begun,
            finished: s.finished,
            duplicates: s.duplicates,
            null_ids: s.null_ids,
            full: s.full,
            cancelled: s.cancelled,
            cancel_unknown: s.cancel_unknown,
            drained: s.drained,
        };
        assert_eq!(got, self.in_counts, "inbound counters");
    }
}
