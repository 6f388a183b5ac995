use super::*;

#[test]
fn duplicate_is_refused_while_the_first_continues() {
    let mut inbound = Inbound::new(8);
    let token = inbound.begin(Id::Num(1), 'a').unwrap();
    assert_eq!(inbound.begin(Id::Num(1), 'b'), Err(Refused::Duplicate('b')));
    assert_eq!(inbound.get(Id::Num(1)), Some(&'a'));
    assert_eq!(inbound.finish(Id::Num(1), token), Some('a'));
    // Once finished, the id may come again.
    assert!(inbound.begin(Id::Num(1), 'c').is_ok());
    assert_eq!(inbound.stats().duplicates, 1);
}

#[test]
fn finish_with_a_stale_token_keeps_the_newer_request() {
    for id in [Id::Num(5), Id::Str("five")] {
        let mut inbound = Inbound::new(8);
        let old = inbound.begin(id, "old").unwrap();
        assert_eq!(inbound.cancel(id), Some("old"));
        let new = inbound.begin(id, "new").unwrap();
        assert_ne!(old, new);
        assert_eq!(inbound.finish(id, old), None);
        assert_eq!(inbound.get(id), Some(&"new"));
        assert_eq!(inbound.finish(id, new), Some("new"));
        assert_eq!(inbound.finish(id, new), None);
        let stats = inbound.stats();
        assert_eq!((stats.begun, stats.finished, stats.cancelled), (2, 1, 1));
    }
}

#[test]
fn cancel_of_an_unknown_id_is_counted() {
    let mut inbound = Inbound::<()>::new(8);
    assert_eq!(inbound.cancel(Id::Num(9)), None);
    assert_eq!(inbound.cancel(Id::Str("9")), None);
    assert_eq!(inbound.cancel(Id::Null), None);
    assert_eq!(inbound.stats().cancel_unknown, 3);
}

#[test]
fn string_and_number_ids_are_distinct() {
    let mut inbound = Inbound::new(8);
    let n = inbound.begin(Id::Num(7), "num").unwrap();
    let s = inbound.begin(Id::Str("7"), "str").unwrap();
    assert_eq!(inbound.len(), 2);
    assert_eq!(inbound.finish(Id::Str("7"), n), None);
    assert_eq!(inbound.finish(Id::Num(7), s), None);
    assert_eq!(inbound.finish(Id::Str("7"), s), Some("str"));
    assert_eq!(inbound.get(Id::Num(7)), Some(&"num"));
}

#[test]
fn null_id_is_refused() {
    let mut inbound = Inbound::new(8);
    assert_eq!(inbound.begin(Id::Null, 1), Err(Refused::NullId(1)));
    assert_eq!(inbound.get(Id::Null), None);
    assert_eq!((inbound.len(), inbound.stats().null_ids), (0, 1));
}

#[test]
fn full_at_max_and_free_after_one_finishes() {
    let mut inbound = Inbound::new(3);
    let t = inbound.begin(Id::Num(0), 0).unwrap();
    inbound.begin(Id::Str("1"), 1).unwrap();
    inbound.begin(Id::Num(2), 2).unwrap();
    assert_eq!(inbound.begin(Id::Num(3), 3), Err(Refused::Full(3)));
    assert_eq!(inbound.begin(Id::Num(3), 3).unwrap_err().into_inner(), 3);
    assert_eq!(inbound.finish(Id::Num(0), t), Some(0));
    assert!(inbound.begin(Id::Num(3), 3).is_ok());
    assert_eq!(inbound.stats().full, 2);
}

#[test]
fn memory_shrinks_after_a_burst() {
    let mut inbound = Inbound::new(100_000);
    inbound.begin(Id::Num(-1), 0).unwrap();
    inbound.begin(Id::Str("first"), 0).unwrap();
    let mut tokens = Vec::new();
    for i in 0..10_000 {
        tokens.push(inbound.begin(Id::Num(i), i).unwrap());
        tokens.push(inbound.begin(Id::Str(&i.to_string()), i).unwrap());
    }
    let peak = inbound.memory_bytes();
    for i in 0..10_000 {
        let t = &tokens[2 * i as usize..];
        assert_eq!(inbound.finish(Id::Num(i), t[0]), Some(i));
        assert_eq!(inbound.finish(Id::Str(&i.to_string()), t[1]), Some(i));
    }
    assert_eq!(inbound.len(), 2);
    assert!(inbound.memory_bytes() * 100 < peak, "{} of {peak}", inbound.memory_bytes());
    assert!(inbound.nums.capacity() <= MIN_CAPACITY && inbound.strs.capacity() <= MIN_CAPACITY);
}

#[test]
fn drain_removes_everything() {
    let mut inbound = Inbound::new(8);
    inbound.begin(Id::Num(1), 1).unwrap();
    inbound.begin(Id::Str("2"), 2).unwrap();
    let mut all: Vec<i32> = inbound.drain().collect();
    all.sort_unstable();
    assert_eq!(all, [1, 2]);
    assert_eq!((inbound.len(), inbound.memory_bytes(), inbound.stats().drained), (0, 0, 2));
    assert!(inbound.begin(Id::Num(1), 3).is_ok());
}
