use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{Config, Flight, Inner, Relation, UNSETTLED};
use crate::peer::{Context, PeerHandle};
use crate::sync::Locked;

fn inner() -> Inner {
    Inner::new(Config {
        max_client_in_flight: 8,
        max_child_in_flight: 8,
        request_timeout: None,
        restart_backoff: (Duration::from_millis(100), Duration::from_secs(1)),
        max_restarts: None,
        hang_timeout: None,
        max_held_calls: 8,
        held_timeout: Duration::from_secs(1),
        max_listen_streams: 8,
        discover_timeout: Duration::from_secs(1),
    })
}

fn child() -> &'static PeerHandle {
    PeerHandle::detached()
}

/// Request `seq` of `client`, ended (`answered`) at `settled` in the child's stream.
fn fly(inner: &Inner, seq: u64, client: u64, settled: u64, answered: bool) {
    let flight = Flight {
        client,
        cx: Context::of_peer(child().clone(), None, None),
        token: None,
        modern: false,
        listen: None,
        answered,
        child: child().clone(),
        settled: Arc::new(AtomicU64::new(settled)),
        sent: Instant::now(),
        asks: None,
        parked: false,
    };
    inner.flights.locked().map.insert(seq, flight);
}

fn to(r: &Relation) -> Option<u64> {
    match r {
        Relation::To { seq, .. } => Some(*seq),
        _ => None,
    }
}

/// A message read before an answer relates to that request, even when the answer reached its
/// client (the flight ended) before the message was related; one read after it does not.
#[test]
fn a_message_read_before_an_answer_relates_to_its_request() {
    let inner = inner();
    fly(&inner, 1, 10, 5, true);
    assert_eq!(to(&inner.relate(4, child())), Some(1));
    // The same frame (a batch with the answer) counts as before it.
    assert_eq!(to(&inner.relate(5, child())), Some(1));
    assert!(matches!(inner.relate(6, child()), Relation::None));
}

/// A message read while requests of two clients are both unanswered is ambiguous; once one of
/// them was answered before it in the stream, it concerns the other alone.
#[test]
fn only_requests_unanswered_at_the_messages_position_count() {
    let inner = inner();
    fly(&inner, 1, 10, 7, true);
    fly(&inner, 2, 20, UNSETTLED, false);
    assert!(matches!(inner.relate(6, child()), Relation::Ambiguous(2)));
    assert!(matches!(inner.relate(7, child()), Relation::Ambiguous(2)));
    assert_eq!(to(&inner.relate(8, child())), Some(2));
    // Answered later still: before that answer both count.
    inner.flights.locked().map.get(&2).unwrap().settled.store(9, Ordering::Release);
    assert!(matches!(inner.relate(7, child()), Relation::Ambiguous(2)));
    assert_eq!(to(&inner.relate(9, child())), Some(2));
    assert!(matches!(inner.relate(10, child()), Relation::None));
}

/// An ended flight is kept until every message read at or before its end was related (the
/// connection's `begun_below` past it), and no longer; one still awaited is kept.
#[test]
fn ended_flights_are_forgotten_once_no_message_before_their_end_waits() {
    let inner = inner();
    fly(&inner, 1, 10, 5, true);
    fly(&inner, 2, 20, UNSETTLED, false);
    fly(&inner, 3, 30, 9, false);
    let mut flights = inner.flights.locked();
    flights.prune(Some((child(), 5)));
    assert_eq!(flights.map.len(), 3);
    flights.prune(Some((child(), 6)));
    let mut left: Vec<u64> = flights.map.keys().copied().collect();
    left.sort_unstable();
    assert_eq!(left, [2, 3]);
    // No child now: nothing is forgotten until there is one to compare with.
    flights.map.get_mut(&3).unwrap().answered = true;
    flights.prune(None);
    assert_eq!(flights.map.len(), 2);
    flights.prune(Some((child(), 10)));
    assert_eq!(flights.map.keys().copied().collect::<Vec<_>>(), [2]);
}
