//! When a request may be sent from the caller's task, and a response handed straight to its
//! waiter.

use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use super::Started;
use crate::peer::core::{Config, Core, Timeout};
use crate::peer::error::RequestError;
use crate::{Frame, FrameParser, Limits, RawJson, ReplyDetail};

const NO: Option<RawJson<'static>> = None;

fn core() -> Core {
    Core::new(&Config {
        limits: Limits::default(),
        request_timeout: Some(Duration::from_secs(60)),
        detail: ReplyDetail::Reason,
        unaddressed_per_second: 4,
        track: true,
    })
}

fn start(c: &mut Core) -> (u64, Started) {
    c.start_direct(Instant::now(), "ping", &NO, (Timeout::PeerDefault, None), None, true).unwrap()
}

fn frame(json: &str) -> Frame {
    FrameParser::parse_bytes_with(Limits::default(), Bytes::copy_from_slice(json.as_bytes()))
}

/// With nothing queued, the request comes back encoded (nothing queued for the driver); its
/// response handed in completes its waiter at once.
#[test]
fn with_nothing_queued_a_request_is_handed_back_and_its_response_completes_it() {
    let mut c = core();
    let (id, started) = start(&mut c);
    let Started::Direct(body) = started else { panic!("expected a direct request") };
    let want = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
    assert_eq!(&body[..], want.as_bytes());
    assert!(c.transmit_is_empty());
    assert!(c.poll_request(id, true, Waker::noop()).is_pending());
    let answer = frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#));
    assert!(c.deliver_response(answer).is_ok());
    let Poll::Ready(Ok(r)) = c.poll_request(id, true, Waker::noop()) else {
        panic!("the response was not delivered")
    };
    assert_eq!(r.result().map(|p| p.get()), Some("{}"));
    assert_eq!(c.stats().outbound.completed, 1);
}

/// A notification queued before it, or taken by the writer and not yet reported written,
/// keeps the request in the queue behind it; once written, requests go direct again.
#[test]
fn a_message_queued_or_being_written_before_it_keeps_the_request_queued() {
    let mut c = core();
    assert!(c.notify("notifications/initialized", &NO, None).unwrap());
    let (_, started) = start(&mut c);
    assert!(matches!(started, Started::Queued(true)));
    let (mut out, mut sent) = (BytesMut::new(), Vec::new());
    assert!(c.poll_transmit(&mut out, &mut sent));
    // Taken, not yet written: still behind it.
    let (_, started) = start(&mut c);
    assert!(matches!(started, Started::Queued(true)));
    out.clear();
    sent.clear();
    assert!(c.poll_transmit(&mut out, &mut sent));
    c.wrote(out.len());
    let (_, started) = start(&mut c);
    assert!(matches!(started, Started::Direct(_)));
}

/// What is not a response is given back (the transport hands it to the driver); a response
/// after the connection closed is dropped, its waiter already failed.
#[test]
fn only_responses_are_delivered_and_none_after_the_close() {
    let mut c = core();
    let (id, _) = start(&mut c);
    let note = frame(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#);
    assert!(c.deliver_response(note).is_err());
    let request = frame(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#);
    assert!(c.deliver_response(request).is_err());
    c.close(crate::peer::CloseReason::Local);
    let late = frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#));
    assert!(c.deliver_response(late).is_ok());
    assert!(matches!(
        c.poll_request(id, true, Waker::noop()),
        Poll::Ready(Err(RequestError::Closed(_)))
    ));
    // Closed: nothing is handed back to send.
    assert!(
        c.start_direct(Instant::now(), "ping", &NO, (Timeout::PeerDefault, None), None, true)
            .is_err()
    );
}

/// Params that cannot be encoded fail the request and free its slot.
#[test]
fn params_that_cannot_be_encoded_free_the_slot() {
    let mut c = core();
    // A map whose keys are no strings cannot be JSON.
    let keys = std::collections::BTreeMap::from([(vec![1u8], 1u8)]);
    let bad = Some(crate::Json(&keys));
    let r = c.start_direct(Instant::now(), "x", &bad, (Timeout::PeerDefault, None), None, true);
    assert!(matches!(r, Err(RequestError::Encode(_))));
    assert_eq!(c.stats().in_flight, 0);
}
