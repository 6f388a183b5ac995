use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::super::{Config, Core, Event, Timeout};
use crate::{Frame, FrameParser, Limits, RawJson, ReplyDetail};

const NO: Option<RawJson<'static>> = None;

fn core() -> Core {
    Core::new(&Config {
        limits: Limits::default(),
        request_timeout: Some(Duration::from_secs(60)),
        detail: ReplyDetail::Reason,
        unaddressed_per_second: 4,
        track: false,
    })
}

fn frame(json: &str) -> Frame {
    FrameParser::parse_bytes_with(Limits::default(), json.as_bytes().to_vec().into())
}

/// Request `method` of ours, watched: its cell, `u64::MAX` until it ends.
fn watched(c: &mut Core, now: Instant) -> (u64, Arc<AtomicU64>) {
    let (id, _) = c.start_request(now, "m", &NO, Timeout::PeerDefault, None, None).unwrap();
    let sink = Arc::new(AtomicU64::new(u64::MAX));
    c.watch_request(id, sink.clone());
    (id, sink)
}

fn position(e: &Event) -> u64 {
    match e {
        Event::Request { request, .. } => request.position(),
        Event::Notification(n) => n.position(),
    }
}

/// Each frame read is numbered; a notification read before a response keeps the lower number,
/// and the response's number is written into its request's cell as it is delivered, before
/// the notification's handler is even handed out.
#[test]
fn an_answer_is_placed_after_what_was_read_before_it() {
    let now = Instant::now();
    let mut c = core();
    let (id, sink) = watched(&mut c, now);
    c.handle_frame(now, frame(r#"{"jsonrpc":"2.0","method":"n","params":{}}"#));
    assert_eq!(c.first_unbegun(), 1);
    c.handle_frame(now, frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)));
    assert_eq!(sink.load(Ordering::Acquire), 2);
    assert_eq!(c.read_position(), 2);
    // The notification is not handed to its handler yet: everything from 1 on waits.
    assert_eq!(c.first_unbegun(), 1);
    let e = c.poll_event().expect("the notification");
    assert_eq!(position(&e), 1);
    assert_eq!(c.first_unbegun(), 3);
    c.handle_frame(now, frame(r#"{"jsonrpc":"2.0","id":"r","method":"q"}"#));
    let e = c.poll_event().expect("the request");
    assert_eq!(position(&e), 3);
}

/// A request that times out, or that its caller gives up, ends where the stream read stands:
/// the position of the last frame read before.
#[test]
fn a_request_without_an_answer_ends_at_the_last_frame_read() {
    let now = Instant::now();
    let mut c = core();
    let (_, timed_out) = watched(&mut c, now);
    let (given_up, forgotten) = watched(&mut c, now);
    c.handle_frame(now, frame(r#"{"jsonrpc":"2.0","method":"n","params":{}}"#));
    c.forget_request(given_up, true, None);
    assert_eq!(forgotten.load(Ordering::Acquire), 1);
    c.handle_frame(now, frame(r#"{"jsonrpc":"2.0","method":"n","params":{}}"#));
    assert_eq!(timed_out.load(Ordering::Acquire), u64::MAX);
    c.handle_timeout(now + Duration::from_secs(61));
    assert_eq!(timed_out.load(Ordering::Acquire), 2);
}
