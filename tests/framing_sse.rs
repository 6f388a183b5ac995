//! Server-Sent Events through `SseDecoder`: every parsing rule of the WHATWG event stream format,
//! the data bound at and one past its limit, streams cut at every byte and in random chunks, the
//! zero-copy path, `Outgoing::write_sse`, and a real `FramedRead`.

use bytes::BytesMut;
use mcpwire::{DecodeError, Error, Id, Kind, Limits, Outgoing, RawJson, SseDecoder, SseEvent};
use proptest::prelude::*;
use tokio_util::codec::Decoder;

mod common;

use common::{cut_by, drawn_from, run_of, through_duplex};

const MAX: usize = 128;

fn limits() -> Limits {
    Limits::default().max_frame_bytes(MAX)
}

/// What an event shows: type, last id, retry, frame kind, decode error, frame bytes.
#[derive(Clone, Debug, PartialEq)]
struct View {
    event: String,
    id: String,
    retry: Option<u64>,
    kind: Kind,
    error: Option<DecodeError>,
    bytes: Vec<u8>,
}

fn view(e: &SseEvent) -> View {
    View {
        event: e.event().to_owned(),
        id: e.last_event_id().to_owned(),
        retry: e.retry(),
        kind: e.frame().kind(),
        error: e.frame().decode_error(),
        bytes: e.frame().as_bytes().to_vec(),
    }
}

fn decode_chunks<'a>(limits: Limits, chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<View> {
    common::decode_chunks(SseDecoder::new(limits), chunks).iter().map(view).collect()
}

fn decode(input: &[u8]) -> Vec<View> {
    decode_chunks(limits(), [input])
}

const NOTE: &str = r#"{"jsonrpc":"2.0","method":"n"}"#;
const RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

fn ev(event: &str, id: &str, retry: Option<u64>, kind: Kind, bytes: &str) -> View {
    View {
        event: event.into(),
        id: id.into(),
        retry,
        kind,
        error: None,
        bytes: bytes.as_bytes().to_vec(),
    }
}

fn too_large(event: &str, id: &str, retry: Option<u64>) -> View {
    View {
        event: event.into(),
        id: id.into(),
        retry,
        kind: Kind::Invalid,
        error: Some(DecodeError::FrameTooLarge { limit: MAX }),
        bytes: Vec::new(),
    }
}

/// A varied event stream and the events it must give.
fn varied() -> (Vec<u8>, Vec<View>) {
    let at_limit =
        format!(r#"{{"jsonrpc":"2.0","method":"p","params":["{}"]}}"#, "x".repeat(MAX - 44));
    assert_eq!(at_limit.len(), MAX);
    let note = |id: &str, retry| ev("message", id, retry, Kind::Notification, NOTE);
    let stream = [
        "\u{FEFF}: comment first\n\n".to_owned(),
        format!("event: message\nid: 1\ndata: {NOTE}\n\n"),
        // CRLF, no space after the colon, the id carried over.
        format!("data:{RESULT}\r\n\r\n"),
        // Lone CRs, a custom event type, and data over three lines.
        "event: custom\rdata: {\"jsonrpc\":\"2.0\",\rdata:  \"method\":\"n\"\rdata: }\r\r"
            .to_owned(),
        // The priming event: an id and an empty data field; not dispatched.
        "id: prime-7\ndata:\n\n".to_owned(),
        // retry: only digits count; the id with a NUL is ignored.
        format!("retry: 1500\nretry: 2x\nid: bad\0id\ndata: {NOTE}\n\n"),
        // Unknown fields and a field without a colon are ignored; data after another field.
        format!("foo: bar\nevent\ndata: {NOTE}\nid: 9\n\n"),
        // An empty id resets the last event id.
        format!("id\ndata: {NOTE}\n\n"),
        format!("data: {at_limit}\n\n"),
        format!("event: big\ndata: {at_limit}x\nid: dropped\n\n"),
        "data: not json\n\n".to_owned(),
        format!("data: {NOTE}\n\ndata: unfinished"),
    ]
    .concat();
    let want = vec![
        note("1", None),
        ev("message", "1", None, Kind::Response, RESULT),
        ev("custom", "1", None, Kind::Notification, "{\"jsonrpc\":\"2.0\",\n \"method\":\"n\"\n}"),
        note("prime-7", Some(1500)),
        note("9", Some(1500)),
        note("", Some(1500)),
        ev("message", "", Some(1500), Kind::Notification, &at_limit),
        too_large("big", "", Some(1500)),
        View {
            kind: Kind::Invalid,
            error: Some(syntax("not json")),
            ..ev("message", "", Some(1500), Kind::Invalid, "not json")
        },
        note("", Some(1500)),
    ];
    (stream.into_bytes(), want)
}

fn syntax(body: &str) -> DecodeError {
    mcpwire::FrameParser::new(limits()).parse(BytesMut::from(body)).decode_error().unwrap()
}

#[test]
fn varied_stream_decodes_to_the_expected_events() {
    let (stream, want) = varied();
    assert_eq!(decode(&stream), want);
}

#[test]
fn varied_stream_cut_at_every_byte_and_fed_a_byte_at_a_time_decodes_the_same() {
    let (stream, want) = varied();
    for cut in 0..=stream.len() {
        let (a, b) = stream.split_at(cut);
        assert_eq!(decode_chunks(limits(), [a, b]), want, "cut {cut}");
    }
    assert_eq!(decode_chunks(limits(), stream.chunks(1)), want);
}

#[test]
fn varied_stream_cut_twice_near_every_line_ending_decodes_the_same() {
    let (stream, want) = varied();
    for h in (0..stream.len()).filter(|&i| matches!(stream[i], b'\n' | b'\r' | 0xEF)) {
        for c1 in h.saturating_sub(2)..=(h + 2).min(stream.len()) {
            for c2 in c1..=(h + 3).min(stream.len()) {
                let got = decode_chunks(limits(), [&stream[..c1], &stream[c1..c2], &stream[c2..]]);
                assert_eq!(got, want, "cuts {c1} {c2}");
            }
        }
    }
}

#[test]
fn cr_ending_a_read_then_lf_is_one_line_ending_not_an_empty_line() {
    let mut dec = SseDecoder::new(limits());
    let mut buf = BytesMut::from(format!("data: {NOTE}\r").as_bytes());
    assert!(dec.decode(&mut buf).unwrap().is_none());
    buf.extend_from_slice(b"\n");
    assert!(dec.decode(&mut buf).unwrap().is_none(), "the LF completes the CR, no dispatch");
    buf.extend_from_slice(b"\r");
    assert_eq!(dec.decode(&mut buf).unwrap().unwrap().frame().method(), Some("n"));
}

#[test]
fn byte_order_mark_is_dropped_only_at_the_start_of_the_stream() {
    let input = format!("\u{FEFF}data: {NOTE}\n\n\u{FEFF}data: {NOTE}\n\n");
    // The second line's field name is "\u{FEFF}data": unknown, so that event has no data.
    assert_eq!(decode(input.as_bytes()).len(), 1);
}

#[test]
fn only_one_space_after_the_colon_is_dropped() {
    let got = decode(format!("data:  {NOTE} \n\n").as_bytes());
    assert_eq!(got[0].bytes, NOTE.as_bytes(), "whitespace around the JSON is not part of it");
    let got = decode(b"event:  spaced\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n");
    assert_eq!(got[0].event, " spaced");
}

#[test]
fn retry_past_u64_is_ignored_and_the_decoder_remembers_the_last_id() {
    let mut dec = SseDecoder::new(limits());
    let mut buf = BytesMut::from(&b"retry: 7\nretry: 99999999999999999999\nid: a\n\n"[..]);
    assert!(dec.decode(&mut buf).unwrap().is_none());
    assert_eq!((dec.retry(), dec.last_event_id()), (Some(7), "a"));
}

#[test]
fn end_of_input_drops_an_unfinished_event() {
    for tail in ["data: {}", "data: {}\n", "data: {}\r", "event: x\ndata: 1\ndata: 2\n"] {
        assert_eq!(decode(tail.as_bytes()), vec![], "{tail:?}");
    }
}

#[test]
fn one_line_data_is_not_copied_and_several_lines_are() {
    let mut dec = SseDecoder::new(limits());
    let input = format!("event: message\nid: 3\ndata: {NOTE}\n\ndata: {NOTE}\ndata: \n\n");
    let mut buf = BytesMut::with_capacity(4096);
    buf.extend_from_slice(input.as_bytes());
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.capacity();
    let a = dec.decode(&mut buf).unwrap().unwrap();
    let b = dec.decode(&mut buf).unwrap().unwrap();
    assert!(range.contains(&(a.frame().as_bytes().as_ptr() as usize)), "one line: in place");
    assert!(!range.contains(&(b.frame().as_bytes().as_ptr() as usize)), "joined: its own buffer");
    assert_eq!(b.frame().as_bytes(), NOTE.as_bytes());
    assert_eq!(b.last_event_id(), "3");
}

// ---- Bounds ----

#[test]
fn data_at_the_limit_passes_and_one_byte_more_is_refused_once() {
    // Joined: 63 + 1 + 64 = 128 bytes of data, with the `\n` between the lines.
    let line = |n: usize| "x".repeat(n);
    let at = format!("data: {}\ndata: {}\n\n", line(63), line(64));
    let got = decode(at.as_bytes());
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].error.unwrap().code().get(), -32700, "not JSON, but not too large");
    let past = format!(
        "data: {}\ndata: {}\ndata: more\n\n{}",
        line(63),
        line(65),
        format_args!("data: {NOTE}\n\n")
    );
    let got = decode(past.as_bytes());
    assert_eq!(
        got,
        vec![too_large("message", "", None), ev("message", "", None, Kind::Notification, NOTE)]
    );
}

#[test]
fn endless_line_is_reported_once_and_never_buffered() {
    let mut dec = SseDecoder::new(limits());
    let mut buf = BytesMut::from(&b"event: flood\ndata: "[..]);
    let mut reports = 0;
    for _ in 0..500 {
        buf.extend_from_slice(&[b'a'; 100]);
        while let Some(e) = dec.decode(&mut buf).unwrap() {
            assert_eq!(view(&e), too_large("flood", "", None));
            reports += 1;
        }
        assert!(buf.len() <= MAX + 6 + 100, "{} bytes held", buf.len());
    }
    assert_eq!(reports, 1);
    buf.extend_from_slice(format!("\ndata: more of it\n\nid: 4\ndata: {NOTE}\n\n").as_bytes());
    let e = dec.decode(&mut buf).unwrap().unwrap();
    assert_eq!(view(&e), ev("message", "4", None, Kind::Notification, NOTE));
}

#[test]
fn endless_comment_is_dropped_silently() {
    let mut dec = SseDecoder::new(limits());
    let mut buf = BytesMut::from(&b":"[..]);
    for _ in 0..100 {
        buf.extend_from_slice(&[b'c'; 100]);
        assert!(dec.decode(&mut buf).unwrap().is_none());
        assert!(buf.len() <= MAX + 6 + 100);
    }
    buf.extend_from_slice(format!("\ndata: {NOTE}\n\n").as_bytes());
    assert_eq!(dec.decode(&mut buf).unwrap().unwrap().frame().method(), Some("n"));
}

#[test]
fn line_at_the_bound_is_read_and_one_byte_more_is_refused() {
    // An event type line of exactly max + 6 bytes, then one of max + 7.
    let at = format!("event: {}\ndata: {NOTE}\n\n", "t".repeat(MAX - 1));
    assert_eq!(decode(at.as_bytes())[0].event.len(), MAX - 1);
    let past = format!("event: {}\ndata: {NOTE}\n\n", "t".repeat(MAX));
    assert_eq!(decode(past.as_bytes()), vec![too_large("message", "", None)]);
}

// ---- Encoding ----

#[test]
fn write_sse_round_trips_through_the_decoder() {
    let mut out = BytesMut::new();
    Outgoing::Result { id: Id::Num(4), result: RawJson::new("{\"t\":\n\"a\"}") }
        .write_sse(Some("stream-1:4"), &mut out)
        .unwrap();
    let note: Outgoing<'_> = Outgoing::Notification { method: "n", params: None };
    note.write_sse(None, &mut out).unwrap();
    let got = decode(&out);
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].kind, got[0].id.as_str()), (Kind::Response, "stream-1:4"));
    assert_eq!(got[1], ev("message", "stream-1:4", None, Kind::Notification, NOTE));
    for bad in ["a\nb", "a\rb", "a\0b"] {
        let mut out = BytesMut::from(&b"kept"[..]);
        let r = note.write_sse(Some(bad), &mut out);
        assert!(matches!(r, Err(Error::InvalidSseId)));
        assert_eq!(&out[..], b"kept");
    }
}

#[tokio::test]
async fn event_stream_through_a_duplex_and_framed_read() {
    let (stream, want) = varied();
    let events = through_duplex(stream, 5, 9, SseDecoder::new(limits())).await;
    let got: Vec<View> = events.iter().map(view).collect();
    assert_eq!(got, want);
}

// ---- Random chunkings ----

fn piece() -> impl Strategy<Value = Vec<u8>> {
    let (stream, _) = varied();
    let hard = b"data: {}\r\n:event id retry 12\0\xEF\xBB\xBF x".to_vec();
    prop_oneof![
        3 => run_of(stream, 120),
        3 => drawn_from(hard),
        1 => proptest::collection::vec(any::<u8>(), 0..40),
        1 => Just(vec![b'd'; 150]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any stream, cut anywhere, decodes to the events of one read.
    #[test]
    fn any_stream_cut_anywhere_decodes_to_the_events_of_one_read(
        pieces in proptest::collection::vec(piece(), 0..10),
        cuts in proptest::collection::vec(0..100usize, 1..24),
    ) {
        let input = pieces.concat();
        let whole = decode_chunks(limits(), [&input[..]]);
        // Zero cuts are empty reads; the rest goes in one last read should they all be zero.
        prop_assert_eq!(decode_chunks(limits(), cut_by(&input, &cuts)), whole);
    }
}

#[test]
fn a_line_without_a_colon_is_a_field_with_an_empty_value() {
    // `data` alone is an empty data line: on its own, empty data, not dispatched.
    assert_eq!(decode(b"data\n\n"), vec![]);
    // Before a data line it adds a leading `\n`, which is whitespace to JSON.
    let got = decode(format!("data\ndata: {NOTE}\n\n").as_bytes());
    assert_eq!(got, vec![ev("message", "", None, Kind::Notification, NOTE)]);
    // An empty data line followed by other fields (the priming event with its fields in any
    // order) is still empty data: not dispatched, and its id is still recorded.
    for input in [&b"data:\nid: 7\n\n"[..], b"data: \n: ping\n\n", b"data:\nretry: 10\n\n"] {
        assert_eq!(decode(input), vec![], "{}", String::from_utf8_lossy(input));
    }
    let got = decode(format!("data:\nid: 7\n\ndata: {NOTE}\n\n").as_bytes());
    assert_eq!(got, vec![ev("message", "7", None, Kind::Notification, NOTE)]);
    // Two empty data lines join to "\n": an event, whose data is not JSON.
    let got = decode(b"data:\ndata:\n\n");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].error.map(|e| e.code().get()), Some(-32700));
}

#[test]
fn event_type_resets_after_each_event_and_the_id_does_not() {
    let input =
        format!("event: a\nid: x\ndata: {NOTE}\n\ndata: {NOTE}\n\nevent: b\n\ndata: {NOTE}\n\n");
    let got = decode(input.as_bytes());
    let names: Vec<_> = got.iter().map(|v| (v.event.as_str(), v.id.as_str())).collect();
    // The type set by an event without data is dropped with it, as the standard says.
    assert_eq!(names, [("a", "x"), ("message", "x"), ("message", "x")]);
}
