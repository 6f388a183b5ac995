//! The in-flight tables against a model: random sequences of `Outbound` register, answer (live,
//! answered, late, crafted, random, string and null ids) with the outcome written in place,
//! collect (at once, later, or with an id not answered), cancel, set_deadline, expire and
//! drain_in_place, and
//! `Inbound` begin (fresh, duplicate, null, string ids, up to a full table), finish (right, stale
//! and wrong tokens), cancel and drain, checked step by step. The model is the `mux` fuzz target's
//! own, `fuzz/src/mux_model.rs`, included by path: this proptest and the fuzzer check the same
//! rules. Then the workloads whose point is a bound: memory and timer-heap size over many requests.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use mcpwire::Id;
use mcpwire::mux::{MAX_ID, Outbound, Unmatched};
use proptest::prelude::*;

#[path = "../fuzz/src/mux_model.rs"]
mod mux_model;

use mux_model::{Model, Op, PeerId};

fn num(id: u64) -> Id<'static> {
    Id::Num(i64::try_from(id).unwrap())
}

fn peer_id() -> impl Strategy<Value = PeerId> {
    prop_oneof![
        4 => (-2..14i64).prop_map(PeerId::Num),
        2 => (-2..14i64).prop_map(|n| PeerId::Str(n.to_string())),
        1 => Just(PeerId::Null),
        1 => any::<i64>().prop_map(PeerId::Num),
    ]
}

/// The operations with about the weights `Op::decode` gives them.
fn op() -> impl Strategy<Value = Op> {
    let deadline = proptest::option::of(0..2000u16);
    let number = prop_oneof![any::<i64>(), -5..5000i64, (MAX_ID as i64 - 3)..(MAX_ID as i64 + 3),];
    prop_oneof![
        5 => deadline.clone().prop_map(Op::Register),
        1 => (100..=250u8, deadline.clone()).prop_map(|(n, d)| Op::Burst(n, d)),
        2 => any::<usize>().prop_map(Op::Respond),
        1 => any::<usize>().prop_map(Op::AnswerLive),
        1 => any::<usize>().prop_map(Op::AnswerIssued),
        1 => any::<usize>().prop_map(Op::Collect),
        1 => (0..6u8, any::<u8>()).prop_map(|(generation, slot)| Op::AnswerCrafted { generation, slot }),
        1 => number.prop_map(Op::AnswerNumber),
        1 => any::<usize>().prop_map(Op::AnswerString),
        1 => Just(Op::AnswerNull),
        1 => (0..8usize).prop_map(Op::RespondMost),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => (any::<usize>(), deadline).prop_map(|(i, d)| Op::SetDeadline(i, d)),
        2 => (0..1500u16).prop_map(Op::Advance),
        1 => Just(Op::Drain),
        3 => peer_id().prop_map(Op::Begin),
        1 => Just(Op::BeginFill),
        2 => any::<usize>().prop_map(Op::FinishIssued),
        1 => (any::<usize>(), any::<u64>()).prop_map(|(i, t)| Op::FinishWrongToken(i, t)),
        1 => (peer_id(), 0..64u64).prop_map(|(id, t)| Op::FinishAny(id, t)),
        1 => peer_id().prop_map(Op::InboundCancel),
        1 => Just(Op::InboundDrain),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mux_tables_match_the_model(ops in proptest::collection::vec(op(), 1..300)) {
        let mut model = Model::new();
        for op in ops {
            model.apply(op);
        }
    }

    /// The fuzz target's path: operations decoded from arbitrary bytes.
    #[test]
    fn mux_tables_match_the_model_on_decoded_bytes(
        data in proptest::collection::vec(any::<u8>(), 0..2048)
    ) {
        mux_model::check_mux(&data);
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

/// A response whose caller collects it at once: `answer`, then `collect`.
fn respond(out: &mut Outbound<u64>, id: u64) -> Result<u64, Unmatched> {
    out.answer(num(id))?;
    Ok(out.collect(id).expect("an answered request is collected"))
}

#[test]
fn register_and_respond_in_scattered_order() {
    let mut out = Outbound::new(1000);
    let ids: Vec<u64> = (0..1000).map(|w| out.register(w, None).unwrap()).collect();
    for i in scattered(1000) {
        assert_eq!(respond(&mut out, ids[i]), Ok(i as u64));
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
            respond(&mut out, window.pop_front().unwrap()).unwrap();
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
    respond(&mut out, id).unwrap();
    let memory = out.memory_bytes();
    for i in 0..1_000_000 {
        let deadline = (i % 2 == 0).then(|| t + secs(i));
        let id = out.register(i, deadline).unwrap();
        assert_eq!(respond(&mut out, id), Ok(i));
    }
    assert_eq!((out.slots_allocated(), out.memory_bytes()), (1, memory));
    assert_eq!(out.timers_len(), 0);
}

#[test]
fn burst_then_responses_give_memory_back() {
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
            respond(&mut out, ids[i]).unwrap();
        }
        assert!(out.slots_allocated() <= 64, "{} slots", out.slots_allocated());
        assert!(out.memory_bytes() <= small, "{order}: {} bytes > {small}", out.memory_bytes());
    }
}

#[test]
fn drain_answers_every_request_and_collecting_gives_memory_back() {
    let t = Instant::now();
    let small = 64 * 2 * (Outbound::<u64>::entry_bytes() + 4 + size_of::<(Instant, u64)>());
    let mut out = Outbound::new(1000);
    let ids: Vec<u64> = (0..500).map(|i| out.register(i, Some(t)).unwrap()).collect();
    let mut drained = Vec::new();
    out.drain_in_place(|id, w| {
        drained.push((id, *w));
        *w += 1000;
    });
    assert_eq!(drained, ids.iter().copied().zip(0..).collect::<Vec<_>>());
    assert_eq!((out.len(), out.timers_len(), out.next_deadline()), (0, 0, None));
    assert_eq!(out.answer(num(ids[7])).err(), Some(Unmatched::Late));
    assert_eq!(out.stats().drained, 500);
    for (w, &id) in (0..).zip(&ids) {
        assert_eq!(out.collect(id), Some(w + 1000));
    }
    assert_eq!(out.answer(num(ids[7])).err(), Some(Unmatched::Late));
    assert!(out.slots_allocated() <= 64, "{} slots", out.slots_allocated());
    assert!(out.memory_bytes() <= small, "{} bytes > {small}", out.memory_bytes());
    assert!(!ids.contains(&out.register(0, None).unwrap()));
}
