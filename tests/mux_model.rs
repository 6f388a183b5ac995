//! The in-flight tables against a model: random sequences of register, complete (live, late,
//! crafted, random, string and null ids), cancel, set_deadline, expire and drain, checked step by
//! step against a `BTreeMap` of what is in flight and the set of every id ever issued. Then the
//! workloads whose point is a bound: memory and timer-heap size over many requests.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use mcpwire::Id;
use mcpwire::mux::{MAX_ID, Outbound, Unmatched};
use proptest::prelude::*;

/// `max_in_flight` of the table under test: 8 slot bits, and bursts can pass 64 slots so the
/// table trims.
const MAX: usize = 256;
const SLOT_BITS: u32 = 8;

fn num(id: u64) -> Id<'static> {
    Id::Num(i64::try_from(id).unwrap())
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[derive(Clone, Debug)]
enum Op {
    Register(Option<u16>),
    Burst(u8, Option<u16>),
    CompleteLive(usize),
    CompleteIssued(usize),
    CompleteCrafted { generation: u8, slot: u8 },
    CompleteNumber(i64),
    CompleteString(usize),
    CompleteNull,
    CompleteMost(usize),
    Cancel(usize),
    SetDeadline(usize, Option<u16>),
    Advance(u16),
    Drain,
}

fn op() -> impl Strategy<Value = Op> {
    let deadline = proptest::option::of(0..2000u16);
    let number = prop_oneof![any::<i64>(), -5..5000i64, (MAX_ID as i64 - 3)..(MAX_ID as i64 + 3),];
    prop_oneof![
        6 => deadline.clone().prop_map(Op::Register),
        1 => (100..=250u8, deadline.clone()).prop_map(|(n, d)| Op::Burst(n, d)),
        5 => any::<usize>().prop_map(Op::CompleteLive),
        2 => any::<usize>().prop_map(Op::CompleteIssued),
        2 => (0..6u8, any::<u8>()).prop_map(|(generation, slot)| Op::CompleteCrafted { generation, slot }),
        1 => number.prop_map(Op::CompleteNumber),
        1 => any::<usize>().prop_map(Op::CompleteString),
        1 => Just(Op::CompleteNull),
        1 => (0..8usize).prop_map(Op::CompleteMost),
        2 => any::<usize>().prop_map(Op::Cancel),
        2 => (any::<usize>(), deadline).prop_map(|(i, d)| Op::SetDeadline(i, d)),
        2 => (0..1500u16).prop_map(Op::Advance),
        1 => Just(Op::Drain),
    ]
}

#[derive(Default, Debug, PartialEq)]
struct Counts {
    registered: u64,
    completed: u64,
    unknown: u64,
    late: u64,
    cancelled: u64,
    timed_out: u64,
    drained: u64,
}

struct Model {
    table: Outbound<u64>,
    /// Id to (waiter tag, deadline).
    live: BTreeMap<u64, (u64, Option<Instant>)>,
    issued: HashSet<u64>,
    issued_order: Vec<u64>,
    counts: Counts,
    start: Instant,
    now: Instant,
    next_tag: u64,
    /// The table has trimmed slots since it began: from then on an id never issued may also be
    /// reported late (the documented, conservative side).
    trimmed: bool,
    slots_seen: usize,
}

impl Model {
    fn new() -> Self {
        let now = Instant::now();
        Self {
            table: Outbound::new(MAX),
            live: BTreeMap::new(),
            issued: HashSet::new(),
            issued_order: Vec::new(),
            counts: Counts::default(),
            start: now,
            now,
            next_tag: 0,
            trimmed: false,
            slots_seen: 0,
        }
    }

    fn deadline(&self, offset: Option<u16>) -> Option<Instant> {
        offset.map(|o| self.now + ms(o.into()))
    }

    fn nth_live(&self, i: usize) -> Option<u64> {
        self.live.keys().nth(i % self.live.len().max(1)).copied()
    }

    fn register(&mut self, deadline: Option<Instant>) {
        let tag = self.next_tag;
        self.next_tag += 1;
        match self.table.register(tag, deadline) {
            Ok(id) => {
                assert!(self.live.len() < MAX, "registered past max_in_flight");
                assert!((1..=MAX_ID).contains(&id), "id {id} out of range");
                assert!(self.issued.insert(id), "id {id} issued twice");
                self.issued_order.push(id);
                self.live.insert(id, (tag, deadline));
                self.counts.registered += 1;
            }
            Err(full) => {
                assert_eq!(self.live.len(), MAX, "refused below max_in_flight");
                assert_eq!(full.into_inner(), tag);
            }
        }
    }

    fn complete(&mut self, id: Id<'_>) {
        let got = self.table.complete(id);
        let number = match id {
            Id::Num(n) => u64::try_from(n).ok().filter(|&n| n != 0),
            _ => None,
        };
        match number {
            Some(n) if self.live.contains_key(&n) => {
                assert_eq!(got, Ok(self.live.remove(&n).unwrap().0), "{id}");
                self.counts.completed += 1;
            }
            Some(n) if self.issued.contains(&n) => {
                assert_eq!(got, Err(Unmatched::Late), "{id}");
                self.counts.late += 1;
            }
            Some(_) if self.trimmed && got == Err(Unmatched::Late) => self.counts.late += 1,
            _ => {
                assert_eq!(got, Err(Unmatched::Unknown), "{id}");
                self.counts.unknown += 1;
            }
        }
    }

    fn cancel(&mut self, id: u64) {
        let expected = self.live.remove(&id).map(|(tag, _)| tag);
        assert_eq!(self.table.cancel(id), expected);
        self.counts.cancelled += u64::from(expected.is_some());
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        let mut last = self.start;
        while let Some((id, tag)) = self.table.poll_expired(self.now) {
            let (want, deadline) = self.live.remove(&id).expect("expired an id not in flight");
            let deadline = deadline.expect("expired a request without a deadline");
            assert_eq!(tag, want);
            assert!(deadline <= self.now && deadline >= last, "expired out of order");
            last = deadline;
            self.counts.timed_out += 1;
        }
        assert!(self.live.values().all(|&(_, d)| d.is_none_or(|d| d > self.now)));
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Register(d) => self.register(self.deadline(d)),
            Op::Burst(n, d) => (0..n).for_each(|_| self.register(self.deadline(d))),
            Op::CompleteLive(i) => {
                let id = self.nth_live(i).unwrap_or(1);
                self.complete(num(id));
            }
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
                assert_eq!(self.table.set_deadline(id, deadline), live.is_some());
                if let Some(entry) = live {
                    entry.1 = deadline;
                }
            }
            Op::Advance(by) => self.advance(ms(by.into())),
            Op::Drain => {
                let drained: BTreeMap<u64, u64> = self.table.drain().collect();
                let want: BTreeMap<u64, u64> =
                    self.live.iter().map(|(&i, &(t, _))| (i, t)).collect();
                assert_eq!(drained, want);
                self.counts.drained += want.len() as u64;
                self.live.clear();
            }
        }
        self.check();
    }

    fn check(&mut self) {
        let t = &self.table;
        assert_eq!(t.len(), self.live.len());
        let earliest = self.live.values().filter_map(|&(_, d)| d).min();
        assert_eq!(t.next_deadline(), earliest);
        assert!(t.timers_len() <= 2 * t.len() + 64, "{} timers for {}", t.timers_len(), t.len());
        let s = t.stats();
        let got = Counts {
            registered: s.registered,
            completed: s.completed,
            unknown: s.unknown,
            late: s.late,
            cancelled: s.cancelled,
            timed_out: s.timed_out,
            drained: s.drained,
        };
        assert_eq!(got, self.counts);
        self.trimmed |= t.slots_allocated() < self.slots_seen;
        self.slots_seen = t.slots_allocated();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn outbound_matches_the_model(ops in proptest::collection::vec(op(), 1..300)) {
        let mut model = Model::new();
        for op in ops {
            model.apply(op);
        }
    }
}

// ---- Workloads ----

/// A fixed scattering of `0..n`: `k * 7919 % n` for `n` not divisible by 7919.
fn scattered(n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |k| k * 7919 % n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn register_and_complete_in_scattered_order() {
    let mut out = Outbound::new(1000);
    let ids: Vec<u64> = (0..1000).map(|w| out.register(w, None).unwrap()).collect();
    for w in scattered(1000) {
        assert_eq!(out.complete(num(ids[w])), Ok(w));
    }
    assert!(out.is_empty());
    assert_eq!(out.stats().completed, 1000);
}

#[test]
fn timer_heap_stays_bounded_under_churn() {
    let t = Instant::now();
    let mut out = Outbound::new(64);
    // The earliest deadline stays on top, so stale entries pile up below it.
    out.register(u64::MAX, Some(t)).unwrap();
    let mut window = VecDeque::new();
    for i in 0..100_000 {
        window.push_back(out.register(i, Some(t + secs(i + 1))).unwrap());
        if i % 3 == 0 {
            let moved = window[window.len() / 2];
            assert!(out.set_deadline(moved, Some(t + secs(200_000 - i))));
        }
        if window.len() > 10 {
            out.complete(num(window.pop_front().unwrap())).unwrap();
        }
        assert!(out.timers_len() <= 2 * out.len() + 64, "{} timers", out.timers_len());
    }
    assert_eq!(out.next_deadline(), Some(t));
}

#[test]
fn sequential_requests_reuse_one_slot_and_memory() {
    let t = Instant::now();
    let mut out = Outbound::new(1024);
    let id = out.register(0, Some(t)).unwrap();
    out.complete(num(id)).unwrap();
    let memory = out.memory_bytes();
    for i in 0..1_000_000 {
        let deadline = (i % 2 == 0).then(|| t + secs(i));
        let id = out.register(i, deadline).unwrap();
        assert_eq!(out.complete(num(id)), Ok(i));
    }
    assert_eq!((out.slots_allocated(), out.memory_bytes()), (1, memory));
    assert_eq!(out.timers_len(), 0);
}

#[test]
fn burst_then_completion_gives_memory_back() {
    let t = Instant::now();
    let small = 64 * 2 * (Outbound::<u64>::entry_bytes() + 4 + size_of::<(Instant, u64)>());
    for order in ["ascending", "descending", "scattered"] {
        let mut out = Outbound::new(20_000);
        let ids: Vec<u64> =
            (0..10_000).map(|i| out.register(i, Some(t + secs(i))).unwrap()).collect();
        assert!(out.memory_bytes() > 10_000 * Outbound::<u64>::entry_bytes());
        let indices: Box<dyn Iterator<Item = usize>> = match order {
            "ascending" => Box::new(0..10_000),
            "descending" => Box::new((0..10_000).rev()),
            _ => Box::new(scattered(10_000)),
        };
        for i in indices {
            out.complete(num(ids[i])).unwrap();
        }
        assert!(out.slots_allocated() <= 64, "{} slots", out.slots_allocated());
        assert!(out.memory_bytes() <= small, "{order}: {} bytes > {small}", out.memory_bytes());
    }
}

#[test]
fn drain_takes_every_request_and_answers_are_late() {
    let t = Instant::now();
    let mut out = Outbound::new(1000);
    let ids: Vec<u64> = (0..500).map(|i| out.register(i, Some(t)).unwrap()).collect();
    let drained: Vec<(u64, u64)> = out.drain().collect();
    assert_eq!(drained, ids.iter().copied().zip(0..).collect::<Vec<_>>());
    assert_eq!((out.len(), out.timers_len(), out.next_deadline()), (0, 0, None));
    assert_eq!(out.complete(num(ids[7])), Err(Unmatched::Late));
    assert_eq!(out.stats().drained, 500);
    assert!(!ids.contains(&out.register(0, None).unwrap()));
}
