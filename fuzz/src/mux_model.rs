//! The in-flight tables of `mcpwire::mux` against a simple model, step by step.
//!
//! [`Outbound`] is checked against a `BTreeMap` of the requests in flight and the set of every id
//! ever issued: register (with or without a deadline, alone or in bursts up to the table's
//! maximum), complete with a live id, a late one, a crafted, random, string or `null` id, cancel,
//! move a deadline, advance the clock and poll the expired requests, drain. [`Inbound`] is checked
//! against a `BTreeMap` from id to token: begin with fresh, duplicate, `null` and string ids until
//! the table is full, finish with the right token, a stale one (the request finished, was
//! cancelled, or its id was reused) or a wrong one, cancel, drain. After every step the lengths,
//! the earliest deadline, the timer heap's bound and every counter are compared.
//!
//! Shared by the `mux` fuzz target, which decodes operations from its input with [`ops`], and by
//! `tests/mux_model.rs` and `tests/fuzz_regressions.rs` in the main crate, which include this file
//! with `#[path]`: it may use only `mcpwire`, `arbitrary` and std.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use arbitrary::{Result, Unstructured};
use mcpwire::Id;
use mcpwire::mux::{Inbound, MAX_ID, Outbound, Refused, Unmatched};

/// `max_in_flight` of the [`Outbound`] table under test: 8 slot bits, and bursts can pass 64
/// slots so the table trims.
pub const OUT_MAX: usize = 256;
/// The slot bits an [`Outbound`] table of [`OUT_MAX`] uses.
pub const SLOT_BITS: u32 = 8;
/// `max` of the [`Inbound`] table under test: small, so sequences fill it.
pub const IN_MAX: usize = 16;
/// The most operations [`ops`] decodes from one input.
pub const MAX_OPS: usize = 1000;

/// An id for [`Inbound::begin`], [`Inbound::finish`] and [`Inbound::cancel`]. Small numbers and
/// their strings collide often, so duplicates, reuse, and the difference between `7` and `"7"`
/// all come up.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PeerId {
    /// `Id::Num`
    Num(i64),
    /// `Id::Str`
    Str(String),
    /// `Id::Null`
    Null,
}

impl PeerId {
    fn as_id(&self) -> Id<'_> {
        match self {
            Self::Num(n) => Id::Num(*n),
            Self::Str(s) => Id::Str(s),
            Self::Null => Id::Null,
        }
    }

    /// One tag byte `t`: `t % 8` in 0..=3 a number -2..=13 (next byte), 4..=5 that number as a
    /// string, 6 `null`, 7 any `i64` (next 8 bytes).
    pub fn decode(u: &mut Unstructured<'_>) -> Result<Self> {
        let small = |u: &mut Unstructured<'_>| u.int_in_range(-2..=13i64);
        Ok(match u.arbitrary::<u8>()? % 8 {
            0..=3 => Self::Num(small(u)?),
            4..=5 => Self::Str(small(u)?.to_string()),
            6 => Self::Null,
            _ => Self::Num(u.arbitrary()?),
        })
    }
}

/// One step. The `usize` arguments pick among the live requests or the history, modulo its
/// length.
#[derive(Clone, Debug)]
pub enum Op {
    /// `Outbound::register`, deadline in milliseconds from now.
    Register(Option<u16>),
    /// That many registrations with the same deadline.
    Burst(u8, Option<u16>),
    /// `Outbound::complete` with the id of a request in flight (1 when none is).
    CompleteLive(usize),
    /// `Outbound::complete` with any id ever issued: live, or late.
    CompleteIssued(usize),
    /// `Outbound::complete` with `generation << SLOT_BITS | slot`, issued or not.
    CompleteCrafted {
        /// The high bits.
        generation: u8,
        /// The low bits.
        slot: u8,
    },
    /// `Outbound::complete` with any number.
    CompleteNumber(i64),
    /// `Outbound::complete` with a live id written as a string: never ours.
    CompleteString(usize),
    /// `Outbound::complete(Id::Null)`.
    CompleteNull,
    /// Completes every request in flight but this many, in a scattered order.
    CompleteMost(usize),
    /// `Outbound::cancel` with a live id (even argument) or any id ever issued (odd).
    Cancel(usize),
    /// `Outbound::set_deadline` on a live id.
    SetDeadline(usize, Option<u16>),
    /// Moves the clock on this many milliseconds and takes every expired request.
    Advance(u16),
    /// `Outbound::drain`.
    Drain,
    /// `Inbound::begin`.
    Begin(PeerId),
    /// `Inbound::begin` with fresh numeric ids until the table refuses one as full.
    BeginFill,
    /// `Inbound::finish` with a request ever begun, its own token: live, or stale.
    FinishIssued(usize),
    /// `Inbound::finish` with a live request's id and another token.
    FinishWrongToken(usize, u64),
    /// `Inbound::finish` with an arbitrary id and token.
    FinishAny(PeerId, u64),
    /// `Inbound::cancel`.
    InboundCancel(PeerId),
    /// `Inbound::drain`.
    InboundDrain,
}

fn deadline(u: &mut Unstructured<'_>) -> Result<Option<u16>> {
    Ok(if u.arbitrary::<bool>()? { Some(u.int_in_range(0..=1999)?) } else { None })
}

fn index(u: &mut Unstructured<'_>) -> Result<usize> {
    Ok(usize::from(u.arbitrary::<u16>()?))
}

impl Op {
    /// One tag byte, `t % 32`, picks the operation; its arguments follow. Register and the
    /// completions take most tags. A deadline is a flag byte (odd: present) then a `u16` in
    /// 0..=1999 ms; an index is a `u16`; numbers and tokens are 8 little-endian bytes.
    pub fn decode(u: &mut Unstructured<'_>) -> Result<Self> {
        Ok(match u.arbitrary::<u8>()? % 32 {
            0..=4 => Self::Register(deadline(u)?),
            5 => Self::Burst(u.int_in_range(100..=250)?, deadline(u)?),
            6..=8 => Self::CompleteLive(index(u)?),
            9..=10 => Self::CompleteIssued(index(u)?),
            11 => {
                Self::CompleteCrafted { generation: u.int_in_range(0..=5)?, slot: u.arbitrary()? }
            }
            12 => Self::CompleteNumber(match u.arbitrary::<u8>()? % 3 {
                0 => u.arbitrary()?,
                1 => u.int_in_range(-5..=5000)?,
                _ => MAX_ID as i64 + u.int_in_range(-3..=3)?,
            }),
            13 => Self::CompleteString(index(u)?),
            14 => Self::CompleteNull,
            15 => Self::CompleteMost(u.int_in_range(0..=7)?),
            16..=17 => Self::Cancel(index(u)?),
            18 => Self::SetDeadline(index(u)?, deadline(u)?),
            19..=20 => Self::Advance(u.int_in_range(0..=1499)?),
            21 => Self::Drain,
            22..=24 => Self::Begin(PeerId::decode(u)?),
            25 => Self::BeginFill,
            26..=27 => Self::FinishIssued(index(u)?),
            28 => Self::FinishWrongToken(index(u)?, u.arbitrary()?),
            29 => Self::FinishAny(PeerId::decode(u)?, u.arbitrary()?),
            30 => Self::InboundCancel(PeerId::decode(u)?),
            _ => Self::InboundDrain,
        })
    }
}

/// Decodes operations until the input runs out (at most [`MAX_OPS`]).
pub fn ops(u: &mut Unstructured<'_>) -> Result<Vec<Op>> {
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < MAX_OPS {
        ops.push(Op::decode(u)?);
    }
    Ok(ops)
}

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
    /// Id to (waiter tag, deadline).
    live: BTreeMap<u64, (u64, Option<Instant>)>,
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
                assert!((1..=MAX_ID).contains(&id), "id {id} out of range");
                assert!(self.issued.insert(id), "id {id} issued twice");
                self.issued_order.push(id);
                self.live.insert(id, (tag, deadline));
                self.out_counts.registered += 1;
            }
            Err(full) => {
                assert_eq!(self.live.len(), OUT_MAX, "refused below max_in_flight");
                assert_eq!(full.into_inner(), tag);
                self.out_counts.refused += 1;
            }
        }
    }

    fn complete(&mut self, id: Id<'_>) {
        let got = self.out.complete(id);
        let number = match id {
            Id::Num(n) => u64::try_from(n).ok().filter(|&n| n != 0),
            _ => None,
        };
        match number {
            Some(n) if self.live.contains_key(&n) => {
                let (tag, _) = self.live.remove(&n).expect("live");
                assert_eq!(got, Ok(tag), "{id}");
                self.out_counts.completed += 1;
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
    }

    fn cancel(&mut self, id: u64) {
        let expected = self.live.remove(&id).map(|(tag, _)| tag);
        assert_eq!(self.out.cancel(id), expected, "cancel {id}");
        self.out_counts.cancelled += u64::from(expected.is_some());
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        let mut last = self.start;
        while let Some((id, tag)) = self.out.poll_expired(self.now) {
            let (want, deadline) = self.live.remove(&id).expect("expired an id not in flight");
            let deadline = deadline.expect("expired a request without a deadline");
            assert_eq!(tag, want);
            assert!(deadline <= self.now && deadline >= last, "expired out of order");
            last = deadline;
            self.out_counts.timed_out += 1;
        }
        assert!(
            self.live.values().all(|&(_, d)| d.is_none_or(|d| d > self.now)),
            "a request past its deadline was not expired"
        );
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
            Op::CompleteLive(i) => self.complete(num(self.nth_live(i).unwrap_or(1))),
            Op::CompleteIssued(i) if !self.issued_order.is_empty() => {
                self.complete(num(self.issued_order[i % self.issued_order.len()]));
            }
            Op::CompleteIssued(_) | Op::CompleteNull => self.complete(Id::Null),
            Op::CompleteCrafted { generation, slot } => {
                self.complete(num(u64::from(generation) << SLOT_BITS | u64::from(slot)));
            }
            Op::CompleteNumber(n) => self.complete(Id::Num(n)),
            Op::CompleteString(i) => {
                let id = self.nth_live(i).unwrap_or(1).to_string();
                self.complete(Id::Str(&id));
            }
            Op::CompleteMost(keep) => {
                let ids: Vec<u64> = self.live.keys().copied().collect();
                let n = ids.len().saturating_sub(keep);
                (0..n).for_each(|k| self.complete(num(ids[k * 7919 % ids.len()])));
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
            Op::Drain => {
                let drained: BTreeMap<u64, u64> = self.out.drain().collect();
                let want: BTreeMap<u64, u64> =
                    self.live.iter().map(|(&i, &(t, _))| (i, t)).collect();
                assert_eq!(drained, want, "drained");
                self.out_counts.drained += want.len() as u64;
                self.live.clear();
            }
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
        let t = &self.out;
        assert_eq!(t.len(), self.live.len());
        assert_eq!(t.is_empty(), self.live.is_empty());
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
