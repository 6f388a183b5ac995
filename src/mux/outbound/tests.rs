use std::collections::HashSet;
use std::time::Duration;

use super::*;

fn num(id: u64) -> Id<'static> {
    Id::Num(i64::try_from(id).unwrap())
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A fixed scattering of `0..n`: `k * 7919 % n` for `n` not divisible by 7919.
fn scattered(n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |k| k * 7919 % n)
}

/// A response whose caller collects it at once: [`Outbound::answer`], then
/// [`Outbound::collect`].
fn respond<W>(out: &mut Outbound<W>, id: u64) -> Result<W, Unmatched> {
    out.answer(num(id))?;
    Ok(out.collect(id).expect("an answered request is collected"))
}

#[test]
fn string_id_never_matches_the_same_number() {
    let mut out = Outbound::new(8);
    let id = out.register((), None).unwrap();
    assert_eq!(out.answer(Id::Str(&id.to_string())).copied(), Err(Unmatched::Unknown));
    assert_eq!(out.answer(Id::Null).copied(), Err(Unmatched::Unknown));
    assert_eq!(out.answer(num(id)).copied(), Ok(()));
    assert_eq!(out.stats().unknown, 2);
}

#[test]
fn second_response_is_late_before_and_after_collect() {
    let mut out = Outbound::new(8);
    let id = out.register((), None).unwrap();
    assert_eq!(out.answer(num(id)).copied(), Ok(()));
    assert_eq!(out.answer(num(id)).copied(), Err(Unmatched::Late));
    assert_eq!(out.collect(id), Some(()));
    let reused = out.register((), None).unwrap();
    assert_ne!(reused, id);
    assert_eq!(out.answer(num(id)).copied(), Err(Unmatched::Late));
    assert_eq!(out.stats().late, 2);
}

#[test]
fn response_after_cancel_is_late() {
    let mut out = Outbound::new(8);
    let id = out.register(1, None).unwrap();
    assert_eq!(out.cancel(id), Some(1));
    assert_eq!((out.cancel(id), out.collect(id), out.waiter_mut(id)), (None, None, None));
    assert_eq!(out.answer(num(id)).copied(), Err(Unmatched::Late));
    assert_eq!((out.stats().cancelled, out.stats().late), (1, 1));
}

#[test]
fn response_after_timeout_is_late() {
    let t = Instant::now();
    let mut out = Outbound::new(8);
    let id = out.register(1, Some(t)).unwrap();
    assert_eq!(out.expire(t).map(|(id, w)| (id, *w)), Some((id, 1)));
    assert_eq!(out.answer(num(id)).copied(), Err(Unmatched::Late));
    assert_eq!(out.collect(id), Some(1));
    assert_eq!(out.answer(num(id)).copied(), Err(Unmatched::Late));
    assert_eq!((out.stats().timed_out, out.stats().late), (1, 2));
}

#[test]
fn generation_not_yet_issued_is_unknown() {
    let mut out = Outbound::new(8); // 3 slot bits
    let id = out.register((), None).unwrap();
    assert_eq!(id, 1 << 3);
    assert_eq!(out.answer(num(2 << 3)).copied(), Err(Unmatched::Unknown));
    assert_eq!(out.answer(num(0)).copied(), Err(Unmatched::Unknown));
    assert_eq!(respond(&mut out, id), Ok(()));
    assert_eq!(out.register((), None), Ok(2 << 3));
    assert_eq!(out.answer(num(3 << 3)).copied(), Err(Unmatched::Unknown));
    assert_eq!(out.answer(num(2 << 3)).copied(), Ok(()));
}

#[test]
fn slot_never_allocated_is_unknown() {
    let mut out = Outbound::new(8);
    out.register((), None).unwrap();
    assert_eq!(out.answer(num((1 << 3) | 5)).copied(), Err(Unmatched::Unknown));
}

#[test]
fn ids_above_max_id_or_negative_are_unknown() {
    let mut out = Outbound::new(8);
    out.register((), None).unwrap();
    for n in [-1, -(1 << 3), i64::MIN, 1 << 53, i64::MAX] {
        assert_eq!(out.answer(Id::Num(n)).copied(), Err(Unmatched::Unknown), "{n}");
    }
    assert_eq!(out.stats().unknown, 5);
    assert_eq!(out.len(), 1);
}

#[test]
fn every_id_is_at_most_max_id() {
    for max in [1, 2, 3, 1000, 1 << 19, MAX_IN_FLIGHT_CEILING, usize::MAX] {
        let mut out = Outbound::<()>::new(max);
        let top_slot = (1 << out.slot_bits) - 1;
        assert_eq!((out.max_generation << out.slot_bits) | top_slot, MAX_ID, "{max}");
        assert!(out.max_in_flight() as u64 <= top_slot + 1);
        for _ in 0..out.max_in_flight().min(100) {
            assert!(out.register((), None).unwrap() <= MAX_ID);
        }
    }
}

#[test]
#[cfg(target_pointer_width = "64")]
fn one_slot_is_32_bytes_for_a_pointer_sized_waiter() {
    assert_eq!(Outbound::<Box<u8>>::entry_bytes(), 32);
    assert_eq!(Outbound::<usize>::entry_bytes(), 32);
}

#[test]
fn retired_slots_are_never_reissued() {
    // 51 slot bits leave 2 bits of generation: each slot issues generations 1, 2 and 3.
    let mut out = Outbound::with_layout(4, 51, 3);
    let mut seen = HashSet::new();
    for w in 0..300 {
        let id = out.register(w, None).unwrap();
        assert!(id <= MAX_ID && seen.insert(id), "{id:#x} reissued");
        assert_eq!(respond(&mut out, id), Ok(w));
    }
    assert_eq!(out.answer(num(1 << 51)).copied(), Err(Unmatched::Late));
    assert_eq!(out.answer(num(4 << 51)).copied(), Err(Unmatched::Unknown));
}

#[test]
fn no_id_left_is_full() {
    // 2 slots of 3 generations: six ids, then none.
    let mut out = Outbound::with_layout(2, 1, 3);
    let mut seen = HashSet::new();
    for _ in 0..6 {
        let id = out.register((), None).unwrap();
        assert!(seen.insert(id));
        respond(&mut out, id).unwrap();
    }
    assert!(out.register((), None).is_err());
    assert_eq!(out.stats().refused, 1);
}

#[test]
fn full_at_max_in_flight_and_free_after_one_is_answered() {
    let mut out = Outbound::new(3); // 4 slots
    let ids: Vec<u64> = (0..3).map(|w| out.register(w, None).unwrap()).collect();
    let refused = out.register(3, None).unwrap_err();
    assert_eq!(refused.into_inner(), 3);
    assert_eq!(out.answer(num(ids[1])).copied(), Ok(1));
    assert!(out.register(4, None).is_ok());
    assert_eq!(out.len(), 3);
    assert_eq!(out.stats().refused, 1);
}

#[test]
fn answered_slots_stay_taken_until_collected() {
    let mut out = Outbound::new(4); // 4 slots
    let ids: Vec<u64> = (0..4).map(|w| out.register(w, None).unwrap()).collect();
    assert_eq!(out.answer(num(ids[2])).copied(), Ok(2));
    assert_eq!(out.len(), 3);
    // Below max_in_flight, but the answered request still holds the fourth slot.
    assert_eq!(out.register(4, None).unwrap_err().into_inner(), 4);
    assert_eq!(out.collect(ids[2]), Some(2));
    let id = out.register(5, None).unwrap();
    assert_eq!(out.slot_of(id), out.slot_of(ids[2]));
    assert_eq!(out.stats().refused, 1);
}

#[test]
fn deadlines_expire_earliest_first() {
    let t = Instant::now();
    let mut out = Outbound::new(8);
    let c = out.register('c', Some(t + secs(3))).unwrap();
    let a = out.register('a', Some(t + secs(1))).unwrap();
    let n = out.register('n', None).unwrap();
    let b = out.register('b', Some(t + secs(2))).unwrap();
    assert_eq!(out.next_deadline(), Some(t + secs(1)));
    let mut expire = |now| out.expire(now).map(|(id, w)| (id, *w));
    assert_eq!(expire(t), None);
    assert_eq!(expire(t + secs(5)), Some((a, 'a')));
    assert_eq!(expire(t + secs(5)), Some((b, 'b')));
    assert_eq!(expire(t + secs(5)), Some((c, 'c')));
    assert_eq!(expire(t + secs(5)), None);
    assert_eq!((out.len(), out.next_deadline()), (1, None));
    assert!(out.contains(n) && !out.contains(a));
}

#[test]
fn set_deadline_later_earlier_and_none() {
    let t = Instant::now();
    let mut out = Outbound::new(8);
    let id = out.register((), Some(t + secs(1))).unwrap();
    assert!(out.set_deadline(id, Some(t + secs(5))));
    assert_eq!(out.next_deadline(), Some(t + secs(5)));
    assert!(out.expire(t + secs(2)).is_none());
    assert!(out.set_deadline(id, Some(t)));
    assert_eq!(out.next_deadline(), Some(t));
    assert!(out.set_deadline(id, None));
    assert_eq!((out.next_deadline(), out.expire(t + secs(9)).is_none()), (None, true));
    assert!(out.set_deadline(id, Some(t)));
    assert_eq!(out.expire(t).map(|(id, w)| (id, *w)), Some((id, ())));
    assert!(!out.set_deadline(id, Some(t)), "a timed-out request has no deadline to move");
    assert_eq!(out.timers_len(), 0);
}

#[test]
fn ids_stay_unique_across_trim_and_regrow() {
    let mut out = Outbound::new(4096);
    let mut seen = HashSet::new();
    let mut old = Vec::new();
    for round in 0..5 {
        let ids: Vec<u64> = (0..1000).map(|i| out.register(i, None).unwrap()).collect();
        assert!(ids.iter().all(|&id| seen.insert(id)), "round {round} reissued an id");
        for i in scattered(1000) {
            assert_eq!(respond(&mut out, ids[i]), Ok(i));
        }
        assert!(out.slots_allocated() <= MIN_SLOTS);
        old.extend(ids);
    }
    assert!(out.floor > 0, "the bursts were trimmed");
    for &id in &old {
        assert_eq!(out.answer(num(id)).copied(), Err(Unmatched::Late));
    }
    // A trimmed slot above the floor was never issued there.
    let above = ((out.floor + 1) << out.slot_bits) | 999;
    assert_eq!(out.answer(num(above)).copied(), Err(Unmatched::Unknown));
}

#[test]
fn an_answered_request_keeps_its_slot_until_collected_and_its_id_is_late() {
    let mut out = Outbound::new(4);
    let t = Instant::now();
    let id = out.register(0u32, Some(t + secs(1))).unwrap();
    *out.answer(num(id)).unwrap() = 7;
    assert_eq!((out.len(), out.next_deadline()), (0, None), "no longer in flight");
    assert_eq!(out.answer(num(id)).err(), Some(Unmatched::Late));
    assert_eq!(out.cancel(id), None, "an answered request is collected, not cancelled");
    assert!(!out.contains(id) && !out.set_deadline(id, Some(t)));
    assert_eq!(out.waiter_mut(id).copied(), Some(7));
    // Its slot is not reused while the answer waits.
    let other = out.register(0, None).unwrap();
    assert_ne!(out.slot_of(other), out.slot_of(id));
    assert_eq!(out.collect(other), None, "a request in flight is cancelled, not collected");
    assert_eq!(out.collect(id), Some(7));
    assert_eq!((out.collect(id), out.waiter_mut(id)), (None, None));
    let s = out.stats();
    assert_eq!((s.completed, s.late, s.cancelled), (1, 1, 0));
}

#[test]
fn expiring_and_draining_in_place_leave_waiters_to_collect() {
    let mut out = Outbound::new(8);
    let t = Instant::now();
    let a = out.register("a", Some(t + secs(1))).unwrap();
    let b = out.register("b", Some(t + secs(2))).unwrap();
    let c = out.register("c", None).unwrap();
    assert_eq!(out.expire(t + secs(1)).map(|(id, w)| (id, *w)), Some((a, "a")));
    assert!(out.expire(t + secs(1)).is_none());
    let mut drained = Vec::new();
    out.drain_in_place(|id, w| drained.push((id, *w)));
    assert_eq!(drained, [(b, "b"), (c, "c")]);
    assert!(out.is_empty() && out.next_deadline().is_none());
    out.drain_in_place(|_, _| panic!("nothing is in flight"));
    for id in [a, b, c] {
        assert_eq!(out.answer(num(id)).err(), Some(Unmatched::Late));
        assert!(out.collect(id).is_some());
    }
    let s = out.stats();
    assert_eq!((s.timed_out, s.drained, s.late), (1, 2, 3));
    assert_eq!(s.registered, s.completed + s.cancelled + s.timed_out + s.drained);
}

#[test]
fn a_drained_burst_gives_its_memory_back_once_collected() {
    let t = Instant::now();
    let mut out = Outbound::new(4096);
    let ids: Vec<u64> = (0..1000).map(|i| out.register(i, Some(t + secs(i))).unwrap()).collect();
    out.drain_in_place(|_, w| *w += 1);
    assert_eq!((out.len(), out.timers_len()), (0, 0));
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(out.collect(id), Some(i as u64 + 1));
    }
    assert!(out.slots_allocated() <= MIN_SLOTS, "{} slots", out.slots_allocated());
    assert!(!ids.contains(&out.register(0, None).unwrap()));
}
