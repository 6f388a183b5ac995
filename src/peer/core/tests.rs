//! Two cores driven against each other in memory, deterministically, with time passed in: the
//! test plays both drivers, deciding when each handler ends and when the clock moves.

use std::task::Waker;

use bytes::BytesMut;

use super::*;
use crate::{FrameParser, Kind, RawJson};

const NO: Option<RawJson<'static>> = None;

fn config(limits: Limits) -> Config {
    Config {
        limits,
        request_timeout: Some(Duration::from_secs(60)),
        detail: ReplyDetail::Reason,
        unaddressed_per_second: 4,
        track: false,
    }
}

/// One side: its core and the frames on their way to it that it has not read yet.
struct Side {
    core: Core,
    inbox: VecDeque<Frame>,
}

/// Two cores joined by an in-memory pipe each way.
struct Pair {
    a: Side,
    b: Side,
    now: Instant,
    parser: FrameParser,
}

impl Pair {
    fn new(a: Limits, b: Limits) -> Self {
        Self {
            a: Side { core: Core::new(&config(a)), inbox: VecDeque::new() },
            b: Side { core: Core::new(&config(b)), inbox: VecDeque::new() },
            now: Instant::now(),
            parser: FrameParser::new(Limits::default()),
        }
    }

    fn default() -> Self {
        Self::new(Limits::default(), Limits::default())
    }

    /// What `side` has written, cut into lines (without reading it anywhere).
    fn written(parser: &mut FrameParser, side: &mut Side) -> Vec<Frame> {
        let (mut out, mut sent) = (BytesMut::new(), Vec::new());
        if !side.core.poll_transmit(&mut out, &mut sent) {
            return Vec::new();
        }
        let mut frames = Vec::new();
        while !out.is_empty() {
            let end = memchr::memchr(b'\n', &out).map_or(out.len(), |i| i + 1);
            let mut line = out.split_to(end);
            line.truncate(line.len() - 1);
            frames.push(parser.parse(line));
        }
        frames
    }

    /// Moves what each side wrote into the other's inbox, and lets each read what it wants.
    fn flow(&mut self) {
        for _ in 0..8 {
            let to_b = Self::written(&mut self.parser, &mut self.a);
            let to_a = Self::written(&mut self.parser, &mut self.b);
            self.b.inbox.extend(to_b);
            self.a.inbox.extend(to_a);
            for side in [&mut self.a, &mut self.b] {
                while side.core.wants_read()
                    && let Some(f) = side.inbox.pop_front()
                {
                    side.core.handle_frame(self.now, f);
                }
            }
        }
    }

    /// `b` reads one raw line as if `a` had sent it.
    fn b_reads(&mut self, line: &str) {
        let frame = self.parser.parse(BytesMut::from(line));
        self.b.inbox.push_back(frame);
        while self.b.core.wants_read()
            && let Some(f) = self.b.inbox.pop_front()
        {
            self.b.core.handle_frame(self.now, f);
        }
    }

    /// `a` starts a request to `b`.
    fn request(&mut self, method: &str) -> u64 {
        let (id, sent) = self
            .a
            .core
            .start_request(self.now, method, &NO, Timeout::PeerDefault, None, None)
            .unwrap();
        assert!(sent);
        id
    }
}

/// The events a side handed out, as (kind, method) pairs, with their tickets.
fn events(core: &mut Core) -> Vec<(Option<Ticket>, Incoming)> {
    let mut out = Vec::new();
    while let Some(e) = core.poll_event() {
        out.push(match e {
            Event::Request { ticket, request } => (Some(ticket), request),
            Event::Notification(n) => (None, n),
        });
    }
    out
}

fn methods(evs: &[(Option<Ticket>, Incoming)]) -> Vec<&str> {
    evs.iter().map(|(_, m)| m.method()).collect()
}

fn outcome(core: &mut Core, id: u64) -> Poll<Result<Incoming, RequestError>> {
    core.poll_request(id, true, Waker::noop())
}

fn answer(core: &mut Core, ev: &(Option<Ticket>, Incoming), result: &str) {
    core.handler_done(ev.0.expect("a request"), ev.1.id(), Some(Ok(Reply::raw(result))));
}

fn note(method: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#)
}

fn req(id: u64, method: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#)
}

fn cancel(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
    )
}

#[test]
fn a_request_is_answered_through_the_waiter_cell() {
    let mut p = Pair::default();
    let id = p.request("ping");
    assert!(outcome(&mut p.a.core, id).is_pending());
    p.flow();
    let evs = events(&mut p.b.core);
    assert_eq!(methods(&evs), ["ping"]);
    answer(&mut p.b.core, &evs[0], "{}");
    p.flow();
    let Poll::Ready(Ok(r)) = outcome(&mut p.a.core, id) else { panic!("no answer") };
    assert_eq!(r.result().unwrap().get(), "{}");
    let s = p.a.core.stats();
    assert_eq!((s.outbound.completed, s.in_flight), (1, 0));
    // The slot was collected: the table is empty.
    assert!(p.a.core.sent.table().is_empty());
}

#[test]
fn a_request_waits_for_the_notifications_read_before_it_to_begin() {
    let mut p = Pair::default();
    p.b_reads(&note("first"));
    p.b_reads(&note("second"));
    p.b_reads(&req(1, "after"));
    // The first notification is handed out; the second waits for it, and the request for both.
    let evs = events(&mut p.b.core);
    assert_eq!(methods(&evs), ["first"]);
    p.b.core.notification_done();
    let evs = events(&mut p.b.core);
    assert_eq!(methods(&evs), ["second", "after"], "the request comes after the notification");
}

#[test]
fn a_waiting_notification_handler_does_not_hold_requests_back() {
    let mut p = Pair::default();
    p.b_reads(&note("first"));
    p.b_reads(&note("second"));
    p.b_reads(&req(1, "after"));
    assert_eq!(methods(&events(&mut p.b.core)), ["first"]);
    // The first handler waits (it may be waiting for that very request): the request goes in.
    p.b.core.notification_waiting();
    assert_eq!(methods(&events(&mut p.b.core)), ["after"]);
    // Notifications stay one at a time, in order.
    p.b.core.notification_done();
    assert_eq!(methods(&events(&mut p.b.core)), ["second"]);
}

#[test]
fn a_request_read_before_a_notification_is_not_held_back_by_it() {
    let mut p = Pair::new(Limits::default(), Limits::default().max_handlers(1));
    p.b_reads(&req(1, "one"));
    p.b_reads(&req(2, "two"));
    let evs = events(&mut p.b.core);
    assert_eq!(methods(&evs), ["one"]);
    p.b_reads(&note("later"));
    p.b_reads(&note("later still"));
    assert_eq!(methods(&events(&mut p.b.core)), ["later"]);
    // Request 2 was read before both notifications: a free slot lets it in at once.
    answer(&mut p.b.core, &evs[0], "1");
    assert_eq!(methods(&events(&mut p.b.core)), ["two"]);
}

#[test]
fn a_cancelled_request_still_waiting_for_a_slot_never_runs_and_lets_go() {
    let mut p = Pair::new(Limits::default(), Limits::default().max_handlers(1));
    p.b_reads(&req(1, "one"));
    p.b_reads(&req(2, "two"));
    let evs = events(&mut p.b.core);
    assert_eq!(methods(&evs), ["one"]);
    p.b_reads(&cancel(2));
    assert_eq!(p.b.core.received.held(), 1, "the cancelled request let go at once");
    answer(&mut p.b.core, &evs[0], "1");
    assert!(events(&mut p.b.core).is_empty(), "the cancelled request never runs");
    let out = Pair::written(&mut p.parser, &mut p.b);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].id(), Some(Id::Num(1)));
}

#[test]
fn a_cancelled_running_handler_is_told_and_answers_nothing() {
    let mut p = Pair::default();
    p.b_reads(&req(7, "slow"));
    let evs = events(&mut p.b.core);
    let ticket = evs[0].0.unwrap();
    assert!(!p.b.core.handler_cancelled(ticket, Some(Waker::noop())));
    p.b_reads(&cancel(7));
    assert!(p.b.core.handler_cancelled(ticket, None));
    // Even if the handler finishes anyway, its reply is not sent.
    answer(&mut p.b.core, &evs[0], "late");
    assert!(Pair::written(&mut p.parser, &mut p.b).is_empty());
    assert_eq!(p.b.core.received.held(), 0);
    assert_eq!(p.b.core.stats().inbound.cancelled, 1);
}

#[test]
fn a_duplicate_id_in_flight_is_refused_with_invalid_request() {
    let mut p = Pair::default();
    p.b_reads(&req(5, "first"));
    p.b_reads(&req(5, "again"));
    let out = Pair::written(&mut p.parser, &mut p.b);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].error().unwrap().code, -32600);
    assert_eq!(methods(&events(&mut p.b.core)), ["first"]);
}

#[test]
fn past_the_held_bound_the_core_stops_reading_until_one_lets_go() {
    let limits = Limits::default().max_handlers(1).max_queued_requests(1);
    let mut p = Pair::new(Limits::default(), limits);
    p.b_reads(&req(1, "a"));
    p.b_reads(&req(2, "b"));
    assert!(p.b.core.wants_read(), "two fit: one running, one queued");
    p.b_reads(&req(3, "c"));
    assert!(!p.b.core.wants_read(), "the third is stalled");
    p.b_reads(&req(4, "d"));
    assert_eq!(p.b.inbox.len(), 1, "nothing after the stalled frame is read");
    let evs = events(&mut p.b.core);
    assert_eq!(methods(&evs), ["a"]);
    answer(&mut p.b.core, &evs[0], "1");
    assert!(p.b.core.wants_read(), "the stalled request was admitted");
    assert_eq!(methods(&events(&mut p.b.core)), ["b"]);
}

#[test]
fn a_request_times_out_at_its_deadline_and_not_before() {
    let mut p = Pair::default();
    let t0 = p.now;
    let (id, _) =
        p.a.core
            .start_request(t0, "slow", &NO, Timeout::After(Duration::from_secs(2)), None, None)
            .unwrap();
    assert_eq!(p.a.core.poll_timeout(), Some(t0 + Duration::from_secs(2)));
    p.a.core.handle_timeout(t0 + Duration::from_millis(1999));
    assert!(outcome(&mut p.a.core, id).is_pending());
    p.a.core.handle_timeout(t0 + Duration::from_secs(2));
    assert!(matches!(outcome(&mut p.a.core, id), Poll::Ready(Err(RequestError::Timeout))));
    // A response after the timeout is late, counted and dropped.
    p.flow();
    let evs = events(&mut p.b.core);
    answer(&mut p.b.core, &evs[0], "{}");
    p.flow();
    assert_eq!(p.a.core.stats().outbound.late, 1);
}

#[test]
fn progress_restarts_the_deadline_up_to_its_cap() {
    let mut p = Pair::default();
    let t0 = p.now;
    let token = OwnedId::from("t");
    let progress = Some((token, Some(Duration::from_secs(5))));
    let timeout = Timeout::After(Duration::from_secs(2));
    let (id, _) = p.a.core.start_request(t0, "long", &NO, timeout, progress, None).unwrap();
    let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#;
    let at = |s| t0 + Duration::from_secs(s);
    p.now = at(1);
    let f = p.parser.parse(BytesMut::from(progress));
    p.a.core.handle_frame(p.now, f);
    assert_eq!(p.a.core.poll_timeout(), Some(at(3)), "restarted from the progress");
    p.now = at(4);
    let f = p.parser.parse(BytesMut::from(progress));
    p.a.core.handle_frame(p.now, f);
    assert_eq!(p.a.core.poll_timeout(), Some(at(5)), "capped at the total");
    p.a.core.handle_timeout(at(5));
    assert!(matches!(outcome(&mut p.a.core, id), Poll::Ready(Err(RequestError::Timeout))));
}

#[test]
fn giving_up_on_a_sent_request_cancels_it_and_frees_its_slot() {
    let mut p = Pair::default();
    let id = p.request("slow");
    p.flow();
    p.a.core.forget_request(id, true, None);
    assert!(p.a.core.sent.table().is_empty());
    p.flow();
    // b's handler is told.
    let evs = events(&mut p.b.core);
    assert!(p.b.core.handler_cancelled(evs[0].0.unwrap(), None));
    assert_eq!(p.b.core.stats().inbound.cancelled, 1);
}

#[test]
fn end_of_stream_fails_our_requests_and_still_answers_theirs() {
    let mut p = Pair::default();
    let ours = p.request("mine");
    p.b_reads(&req(1, "theirs"));
    let evs = events(&mut p.b.core);
    p.b.core.handle_eof(p.now);
    assert!(!p.b.core.wants_read());
    assert!(!p.b.core.is_closed(), "draining while a request is held");
    assert!(matches!(
        p.b.core.start_request(p.now, "x", &NO, Timeout::PeerDefault, None, None),
        Err(RequestError::Closed(CloseReason::Eof))
    ));
    answer(&mut p.b.core, &evs[0], "1");
    assert!(p.b.core.is_closed(), "nothing held: the drain is over");
    assert_eq!(Pair::written(&mut p.parser, &mut p.b).len(), 1, "the reply is still written");
    p.a.core.handle_eof(p.now);
    assert!(matches!(
        outcome(&mut p.a.core, ours),
        Poll::Ready(Err(RequestError::Closed(CloseReason::Eof)))
    ));
}

#[test]
fn a_drain_that_never_ends_is_closed_at_its_deadline() {
    let mut p = Pair::default();
    p.b_reads(&req(1, "stuck"));
    let _evs = events(&mut p.b.core);
    p.b.core.handle_eof(p.now);
    assert_eq!(p.b.core.poll_timeout(), Some(p.now + CLOSE_GRACE));
    p.b.core.handle_timeout(p.now + CLOSE_GRACE);
    assert_eq!(p.b.core.close_reason(), Some(CloseReason::Eof));
}

#[test]
fn replies_with_a_null_id_are_rate_limited_by_the_clock() {
    let mut p = Pair::default();
    for _ in 0..10 {
        p.b_reads("not json");
    }
    assert_eq!(Pair::written(&mut p.parser, &mut p.b).len(), 4, "a burst of 4");
    assert_eq!(p.b.core.stats().replies_suppressed, 6);
    p.now += Duration::from_millis(500);
    for _ in 0..10 {
        p.b_reads("not json");
    }
    assert_eq!(Pair::written(&mut p.parser, &mut p.b).len(), 2, "4 per second refill");
}

#[test]
fn a_reply_without_room_holds_its_handler_slot_until_the_writer_takes_the_buffer() {
    let limits = Limits::default().max_handlers(1).max_write_queue_bytes(64);
    let mut p = Pair::new(Limits::default(), limits);
    p.b_reads(&req(1, "a"));
    p.b_reads(&req(2, "b"));
    let evs = events(&mut p.b.core);
    let big = format!("\"{}\"", "x".repeat(100));
    answer(&mut p.b.core, &evs[0], &big);
    // The first reply goes alone into the empty buffer, past the bound, and frees the slot.
    let evs = events(&mut p.b.core);
    assert_eq!(methods(&evs), ["b"]);
    answer(&mut p.b.core, &evs[0], &big);
    // The second finds no room: it waits, holding the slot.
    assert_eq!(p.b.core.received.blocked.len(), 1);
    assert_eq!(p.b.core.received.held(), 1);
    let out = Pair::written(&mut p.parser, &mut p.b);
    assert_eq!(out.len(), 1);
    // Taking the buffer made room: the blocked reply is queued and lets go.
    assert_eq!(p.b.core.received.held(), 0);
    let out = Pair::written(&mut p.parser, &mut p.b);
    assert_eq!(out[0].id(), Some(Id::Num(2)));
}

#[test]
fn a_batch_is_answered_with_one_array_once_every_element_is_done() {
    let mut p = Pair::default();
    p.b_reads(&format!("[{},{},{},\"bad\"]", req(1, "a"), note("n"), req(2, "b")));
    let evs = events(&mut p.b.core);
    assert_eq!(methods(&evs), ["n", "a", "b"]);
    p.b.core.notification_done();
    answer(&mut p.b.core, &evs[1], "1");
    assert!(Pair::written(&mut p.parser, &mut p.b).is_empty(), "not before the last element");
    answer(&mut p.b.core, &evs[2], "2");
    let out = Pair::written(&mut p.parser, &mut p.b);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].kind(), Kind::Batch);
    assert_eq!(out[0].len(), 3, "two results and the invalid element's error");
    assert_eq!(p.b.core.received.held(), 0);
}

#[test]
fn closing_fails_every_waiter_and_stops_every_handler() {
    let mut p = Pair::default();
    let ids: Vec<u64> = (0..3).map(|_| p.request("x")).collect();
    p.flow();
    let evs = events(&mut p.b.core);
    p.a.core.close(CloseReason::Local);
    for id in ids {
        let Poll::Ready(Err(RequestError::Closed(CloseReason::Local))) = outcome(&mut p.a.core, id)
        else {
            panic!("request {id} did not fail");
        };
    }
    p.b.core.close(CloseReason::Io("gone".into()));
    for (t, _) in &evs {
        assert!(p.b.core.handler_cancelled(t.unwrap(), None));
    }
    assert!(matches!(p.b.core.notify("n", &NO, None), Err(RequestError::Closed(_))));
}

#[test]
fn end_of_stream_still_handles_the_notifications_read_before_it() {
    let mut p = Pair::default();
    p.b_reads(&note("initialized"));
    p.b.core.handle_eof(p.now);
    assert!(!p.b.core.is_closed(), "a notification is still to be handled");
    assert_eq!(methods(&events(&mut p.b.core)), ["initialized"]);
    p.b.core.notification_done();
    assert!(p.b.core.is_closed());
}
