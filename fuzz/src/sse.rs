//! The `sse` target: a byte stream through `SseDecoder`.
//!
//! Shared with `tests/fuzz_regressions.rs`, which includes this file with `#[path]` (next to
//! `checks.rs`): it may use only crates the main crate also has.
//!
//! The reference, [`reference_events`], reads the whole input at once by the WHATWG rules for
//! parsing an event stream, as `src/framing/sse.rs` documents them, written out naively: lines
//! end at LF, CRLF or a lone CR; one byte order mark is dropped at the start of the stream;
//! `name: value` fields (one space after the colon dropped), a line without a colon a field with
//! an empty value, a line starting with `:` a comment; `data` lines joined with `\n`; `event` sets
//! the type (`message` when absent or empty); `id` sets the last event id unless its value holds
//! a NUL; `retry` sets the reconnection time when its value is all ASCII digits and fits a `u64`;
//! an empty line dispatches the event. The documented differences from the standard are modelled
//! too: an event whose data is empty (no `data` line, or one empty one) is not dispatched (the
//! standard dispatches one whose data is a single empty line), and the bounds: an event whose
//! data passes the frame limit, or with a line longer than the limit plus `LINE_SLACK` (a comment
//! excepted), is reported once as too large and the rest of it dropped, up to its empty line.

use bytes::BytesMut;
use mcpwire::framing::sse::LINE_SLACK;
use mcpwire::{DecodeError, FrameParser, Kind, Limits, SseDecoder, SseEvent};

use crate::checks::{self, MsgView};
use crate::feed;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One event the reference dispatches.
#[derive(Debug, PartialEq, Eq)]
pub struct RefEvent {
    /// The event's type.
    pub event: String,
    /// The last event id as of the event.
    pub last_event_id: String,
    /// The reconnection time as of the event.
    pub retry: Option<u64>,
    /// The event's data, its lines joined with `\n`; `None` when the event was too large.
    pub data: Option<Vec<u8>>,
}

/// What the reference reads from a whole stream: its events, and the last event id and
/// reconnection time once every complete line is read.
#[derive(Debug)]
pub struct RefStream {
    /// The events dispatched.
    pub events: Vec<RefEvent>,
    /// The last event id at the end.
    pub last_event_id: String,
    /// The reconnection time at the end.
    pub retry: Option<u64>,
}

#[derive(Default)]
struct Parser<'a> {
    events: Vec<RefEvent>,
    data: Vec<&'a [u8]>,
    event_type: Option<String>,
    last_event_id: String,
    retry: Option<u64>,
    discarding: bool,
}

impl Parser<'_> {
    fn push(&mut self, data: Option<Vec<u8>>) {
        let event = self.event_type.take().unwrap_or_else(|| "message".to_owned());
        let (last_event_id, retry) = (self.last_event_id.clone(), self.retry);
        self.events.push(RefEvent { event, last_event_id, retry, data });
    }

    fn refuse(&mut self) {
        self.push(None);
        self.data.clear();
        self.discarding = true;
    }

    fn data_len(&self) -> usize {
        self.data.iter().map(|d| d.len()).sum::<usize>() + self.data.len().saturating_sub(1)
    }
}

/// A naive event stream parser over the whole input (`max`: the frame limit).
pub fn reference_events(input: &[u8], max: usize) -> RefStream {
    let bound = max + LINE_SLACK;
    let mut p = Parser::default();
    let mut rest = input.strip_prefix(BOM).unwrap_or(input);
    loop {
        let Some(at) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
            // An unfinished line at the end of input; its event is dropped, but a line already
            // past the bound was reported before the end came.
            if rest.len() > bound && !rest.starts_with(b":") && !p.discarding {
                p.refuse();
            }
            break;
        };
        let line = &rest[..at];
        let crlf = rest[at] == b'\r' && rest.get(at + 1) == Some(&b'\n');
        rest = &rest[at + 1 + usize::from(crlf)..];
        if line.is_empty() {
            if std::mem::take(&mut p.discarding) {
                continue;
            }
            let data = std::mem::take(&mut p.data);
            if data.is_empty() || (data.len() == 1 && data[0].is_empty()) {
                p.event_type = None;
            } else {
                p.push(Some(data.join(&b'\n')));
            }
            continue;
        }
        if p.discarding || line[0] == b':' {
            continue;
        }
        if line.len() > bound {
            p.refuse();
            continue;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &line[line.len()..]),
        };
        match name {
            b"data" => {
                let joiner = usize::from(!p.data.is_empty());
                if p.data_len() + joiner + value.len() > max {
                    p.refuse();
                } else {
                    p.data.push(value);
                }
            }
            b"event" if value.is_empty() => p.event_type = None,
            b"event" => p.event_type = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" if !value.contains(&0) => {
                p.last_event_id = String::from_utf8_lossy(value).into_owned();
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let n = value
                    .iter()
                    .try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')));
                if n.is_some() {
                    p.retry = n;
                }
            }
            _ => {}
        }
    }
    RefStream { events: p.events, last_event_id: p.last_event_id, retry: p.retry }
}

/// Feeds `input` to a fresh decoder (see `feed::feed_decoder`). Between reads the buffer holds
/// at most one line: an unfinished one (up to the limit plus `LINE_SLACK`), or the event's one
/// data line, kept in place, with its CRLF.
fn feed(
    input: &[u8],
    limits: Limits,
    next_chunk: impl FnMut() -> usize,
) -> (Vec<SseEvent>, SseDecoder) {
    let held = limits.frame_bytes() + LINE_SLACK + 2;
    let mut decoder = SseDecoder::new(limits);
    let events = feed::feed_decoder(&mut decoder, input, held, SseEvent::frame, next_chunk);
    (events, decoder)
}

/// A valid message written back with `Outgoing::write_sse`, with the event's last id, is one
/// `message` event that decodes to the same message with that id.
fn check_write_sse(v: &MsgView, id: &str) {
    let mut out = BytesMut::new();
    let id = (!id.is_empty()).then_some(id);
    checks::outgoing(v).write_sse(id, &mut out).expect("an id from a stream always writes");
    let (back, decoder) = feed(&out, Limits::default(), || usize::MAX);
    assert_eq!(back.len(), 1, "one message is one event: {back:?}");
    assert_eq!(back[0].event(), "message");
    assert_eq!(back[0].last_event_id(), id.unwrap_or_default());
    assert_eq!(decoder.last_event_id(), id.unwrap_or_default());
    let got = back[0].frame().message().map(|m| MsgView::of(&m));
    assert_eq!(got.as_ref(), Some(&v.one_line()), "written as {out:?}");
}

/// Decodes `input` whole and in the chunks `plan` gives; checks the events (type, last id, retry,
/// and the frame `FrameParser` gives for the data) against [`reference_events`], every frame's
/// invariants, `write_sse` on every valid message, and that both feeds decode alike.
pub fn check_sse_with(input: &[u8], limits: Limits, plan: impl FnMut() -> usize) {
    let max = limits.frame_bytes();
    let (whole, decoder) = feed(input, limits, || usize::MAX);
    let expected = reference_events(input, max);
    assert_eq!(
        whole.len(),
        expected.events.len(),
        "events differ from the reference: {whole:?} vs {expected:?}"
    );
    for (event, want) in whole.iter().zip(&expected.events) {
        let frame = event.frame();
        assert_eq!(event.event(), want.event, "event type of {event:?}");
        assert_eq!(event.last_event_id(), want.last_event_id, "last event id of {event:?}");
        assert_eq!(event.retry(), want.retry, "retry of {event:?}");
        match &want.data {
            None => {
                assert_eq!(frame.decode_error(), Some(DecodeError::FrameTooLarge { limit: max }));
                assert!(frame.as_bytes().is_empty(), "an event too large keeps no bytes");
            }
            Some(data) => {
                let parsed = FrameParser::new(limits).parse(BytesMut::from(&data[..]));
                assert!(
                    parsed == *frame,
                    "the data parses differently: {parsed:?} vs the decoder's {frame:?}"
                );
            }
        }
        if checks::known_bug(frame.as_bytes()).is_some() {
            continue;
        }
        let view = checks::check_frame(frame, limits, false);
        let messages = view.message.iter().chain(view.items.iter().flatten());
        for v in messages.filter(|v| v.kind != Kind::Invalid) {
            check_write_sse(v, event.last_event_id());
        }
    }
    assert_eq!(decoder.last_event_id(), expected.last_event_id, "last event id at the end");
    assert_eq!(decoder.retry(), expected.retry, "retry at the end");

    let (chunked, decoder) = feed(input, limits, plan);
    assert_eq!(whole.len(), chunked.len(), "chunked feed gives a different number of events");
    for (a, b) in whole.iter().zip(&chunked) {
        assert_eq!(a, b, "whole and chunked feeds decode differently");
    }
    assert_eq!(
        decoder.last_event_id(),
        expected.last_event_id,
        "last event id at the end, chunked"
    );
    assert_eq!(decoder.retry(), expected.retry, "retry at the end, chunked");
}

/// The `sse` target: the first byte picks the chunk sizes (`feed::chunk_plan`), the rest is the
/// event stream, decoded with the small fuzzing limits.
pub fn check_sse(data: &[u8]) {
    let Some((&control, input)) = data.split_first() else { return };
    check_sse_with(input, checks::limits(), feed::chunk_plan(control, input.len()));
}
