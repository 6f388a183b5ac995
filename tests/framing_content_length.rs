//! Content-Length framing and `Framing::Detect` through the codec: every header rule, every
//! bound at and one past its limit, streams cut at every byte, random chunkings, the encoder,
//! and an LSP-style exchange through a real `FramedRead`.

use bytes::BytesMut;
use mcpwire::limits::MAX_HEADER_BYTES;
use mcpwire::{
    DecodeError, ErrorCode, Frame, Framing, Id, JsonRpcCodec, Kind, Limits, Outgoing, RawJson,
};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};

mod common;

use common::{cut_by, drawn_from, run_of, through_duplex};

const MAX: usize = 256;

fn limits() -> Limits {
    Limits::default().max_frame_bytes(MAX)
}

/// What a decoded frame shows: kind, decode error, exact bytes.
type View = (Kind, Option<DecodeError>, Vec<u8>);

fn view(f: &Frame) -> View {
    (f.kind(), f.decode_error(), f.as_bytes().to_vec())
}

fn decode_chunks<'a>(
    framing: Framing,
    limits: Limits,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<View> {
    let codec = JsonRpcCodec::with_framing(limits, framing);
    common::decode_chunks(codec, chunks).iter().map(view).collect()
}

fn decode(input: &[u8]) -> Vec<View> {
    decode_chunks(Framing::ContentLength, limits(), [input])
}

fn msg(body: &[u8]) -> Vec<u8> {
    [format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(), body].concat()
}

fn ok(kind: Kind, bytes: &[u8]) -> View {
    (kind, None, bytes.to_vec())
}

fn err(e: DecodeError) -> View {
    (Kind::Invalid, Some(e), Vec::new())
}

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
const NOTE: &[u8] = br#"{"jsonrpc":"2.0","method":"n"}"#;
const PRETTY: &[u8] =
    b"{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 2,\n  \"result\": {\n    \"ok\": true\n  }\n}";

/// A varied Content-Length stream and the frames it must give.
fn varied() -> (Vec<u8>, Vec<View>) {
    let at_limit = {
        let mut v = br#"{"jsonrpc":"2.0","method":"pad","params":[""#.to_vec();
        v.resize(MAX - 3, b'x');
        v.extend_from_slice(br#""]}"#);
        v
    };
    let pieces: Vec<(Vec<u8>, Vec<View>)> = vec![
        (msg(PING), vec![ok(Kind::Request, PING)]),
        (
            [
                format!("content-length:{}\n", NOTE.len()).as_bytes(),
                b"Content-Type: application/vscode-jsonrpc; charset=utf-8\n\n",
                NOTE,
            ]
            .concat(),
            vec![ok(Kind::Notification, NOTE)],
        ),
        // A writer that ends each body with a newline.
        ([msg(PING), b"\r\n".to_vec()].concat(), vec![ok(Kind::Request, PING)]),
        (msg(PRETTY), vec![ok(Kind::Response, PRETTY)]),
        (
            [
                format!("X-Trace: a:b:c\r\nCONTENT-LENGTH:   {}  \r\n\r\n", NOTE.len() + 5)
                    .as_bytes(),
                b"\xEF\xBB\xBF ",
                NOTE,
                b"\n",
            ]
            .concat(),
            vec![ok(Kind::Notification, NOTE)],
        ),
        (msg(b"not json"), vec![(Kind::Invalid, Some(syntax("not json")), b"not json".to_vec())]),
        (msg(&at_limit), vec![ok(Kind::Notification, &at_limit)]),
        (
            [&b"Content-Length: 257\r\n\r\n"[..], &[b'z'; 257]].concat(),
            vec![err(DecodeError::FrameTooLarge { limit: MAX })],
        ),
        (b"Content-Length: x1\r\n\r\n{}".to_vec(), vec![err(DecodeError::InvalidContentLength)]),
        (msg(NOTE), vec![ok(Kind::Notification, NOTE)]),
        (
            b"Bogus line\r\nContent-Type: x\r\n\r\n{}".to_vec(),
            vec![err(DecodeError::MalformedHeader)],
        ),
        (msg(b"[]"), vec![(Kind::Invalid, Some(DecodeError::EmptyBatch), b"[]".to_vec())]),
        (
            b"Content-Type: x\r\n\r\n{\"a\":1}".to_vec(),
            vec![err(DecodeError::MissingContentLength)],
        ),
        (msg(PING), vec![ok(Kind::Request, PING)]),
    ];
    let mut stream = Vec::new();
    let mut want = Vec::new();
    for (bytes, w) in pieces {
        stream.extend_from_slice(&bytes);
        want.extend(w);
    }
    (stream, want)
}

/// The syntax error the parser reports for `body`, read from `FrameParser` itself.
fn syntax(body: &str) -> DecodeError {
    let f = mcpwire::FrameParser::new(limits()).parse(BytesMut::from(body));
    f.decode_error().unwrap()
}

#[test]
fn varied_stream_decodes_to_the_expected_frames() {
    let (stream, want) = varied();
    assert_eq!(decode(&stream), want);
}

#[test]
fn varied_stream_cut_at_every_byte_and_fed_a_byte_at_a_time_decodes_the_same() {
    let (stream, want) = varied();
    for cut in 0..=stream.len() {
        let (a, b) = stream.split_at(cut);
        assert_eq!(decode_chunks(Framing::ContentLength, limits(), [a, b]), want, "cut {cut}");
    }
    assert_eq!(decode_chunks(Framing::ContentLength, limits(), stream.chunks(1)), want);
}

#[test]
fn body_with_newlines_is_one_frame_and_its_params_keep_them() {
    let body = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"text\":\"a\\nb\"}\n\n}\n";
    let mut codec = JsonRpcCodec::with_framing(limits(), Framing::ContentLength);
    let mut buf = BytesMut::from(&msg(body)[..]);
    let f = codec.decode(&mut buf).unwrap().unwrap();
    assert_eq!(f.kind(), Kind::Notification);
    assert_eq!(f.params().unwrap().get(), "{\"text\":\"a\\nb\"}");
    assert_eq!(f.as_bytes(), &body[..body.len() - 1], "trailing whitespace dropped");
    assert!(buf.is_empty());
}

#[test]
fn each_header_error_has_its_code_and_the_stream_goes_on() {
    let cases: [(&[u8], DecodeError, ErrorCode); 8] = [
        (b"Content-Length: -1\r\n\r\n", DecodeError::InvalidContentLength, ErrorCode::PARSE_ERROR),
        (b"Content-Length: +1\r\n\r\n", DecodeError::InvalidContentLength, ErrorCode::PARSE_ERROR),
        (
            b"Content-Length: 12345678901\r\n\r\n",
            DecodeError::InvalidContentLength,
            ErrorCode::PARSE_ERROR,
        ),
        (b"Content-Length:\r\n\r\n", DecodeError::InvalidContentLength, ErrorCode::PARSE_ERROR),
        (
            b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
            DecodeError::DuplicateContentLength,
            ErrorCode::PARSE_ERROR,
        ),
        (b"Content-Length : 2\r\n\r\n{}", DecodeError::MalformedHeader, ErrorCode::PARSE_ERROR),
        (
            b"Content-Length: 2\rX: 1\r\n\r\n{}",
            DecodeError::MalformedHeader,
            ErrorCode::PARSE_ERROR,
        ),
        (b"X-Only: 1\r\n\r\n{}", DecodeError::MissingContentLength, ErrorCode::PARSE_ERROR),
    ];
    for (bad, e, code) in cases {
        let input = [bad, &msg(PING)].concat();
        let got = decode(&input);
        assert_eq!(
            got,
            vec![err(e), ok(Kind::Request, PING)],
            "{:?}",
            String::from_utf8_lossy(bad)
        );
        assert_eq!(e.code(), code);
    }
    assert_eq!(DecodeError::HeaderTooLarge { limit: 1 }.code(), ErrorCode::INVALID_REQUEST);
    assert_eq!(DecodeError::Truncated.code(), ErrorCode::PARSE_ERROR);
}

#[test]
fn content_type_is_ignored_whatever_its_charset() {
    let input = [
        format!(
            "Content-Type: application/json; charset=utf-16\r\nContent-Length: {}\r\n\r\n",
            NOTE.len()
        )
        .as_bytes(),
        NOTE,
    ]
    .concat();
    assert_eq!(decode(&input), vec![ok(Kind::Notification, NOTE)]);
}

#[test]
fn ndjson_fed_to_content_length_framing_is_one_error_then_resyncs() {
    let input = [
        &b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}\n"[..],
        &msg(NOTE),
    ]
    .concat();
    assert_eq!(
        decode(&input),
        vec![err(DecodeError::MalformedHeader), ok(Kind::Notification, NOTE)]
    );
}

#[test]
fn resync_finds_a_header_right_after_an_unterminated_body() {
    // The bad block's body has no newline; the next block starts right after it.
    let input = [&b"Content-Length: 1x\r\n\r\n{\"a\":1}"[..], &msg(NOTE)].concat();
    assert_eq!(
        decode(&input),
        vec![err(DecodeError::InvalidContentLength), ok(Kind::Notification, NOTE)]
    );
}

#[test]
fn a_body_shorter_than_declared_does_not_lose_the_next_message() {
    // The declared length ends inside `{"a":1}`: the rest of it, `1}`, runs into the next
    // header line, which is then malformed. Resync must still find the `Content-Length` on that
    // same line, so the ping after it is read and answered.
    let input = [&b"Content-Length: 5\r\n\r\n{\"a\":1}"[..], &msg(PING)].concat();
    assert_eq!(
        decode(&input),
        vec![
            (Kind::Invalid, Some(syntax(r#"{"a":"#)), br#"{"a":"#.to_vec()),
            err(DecodeError::MalformedHeader),
            ok(Kind::Request, PING)
        ]
    );
}

/// A header block of exactly `len` bytes, closing empty line included, declaring `body`.
fn block_of_len(len: usize, body: &[u8]) -> Vec<u8> {
    let cl = format!("Content-Length: {}\r\n", body.len());
    let pad_line = len - cl.len() - 2;
    let filler = format!("X-Pad: {}\r\n", "p".repeat(pad_line - "X-Pad: \r\n".len()));
    let block = [cl.as_bytes(), filler.as_bytes(), b"\r\n"].concat();
    assert_eq!(block.len(), len);
    [&block[..], body].concat()
}

#[test]
fn header_block_at_the_bound_passes_and_one_byte_more_is_refused() {
    let at = block_of_len(MAX_HEADER_BYTES, NOTE);
    assert_eq!(decode(&at), vec![ok(Kind::Notification, NOTE)]);
    let past = [block_of_len(MAX_HEADER_BYTES + 1, NOTE), msg(PING)].concat();
    assert_eq!(
        decode(&past),
        vec![err(DecodeError::HeaderTooLarge { limit: MAX_HEADER_BYTES }), ok(Kind::Request, PING)]
    );
}

#[test]
fn endless_header_line_is_never_buffered() {
    let mut codec = JsonRpcCodec::with_framing(limits(), Framing::ContentLength);
    let mut buf = BytesMut::from(&b"X-Endless: "[..]);
    let mut errors = 0;
    for _ in 0..1000 {
        buf.extend_from_slice(&[b'e'; 1000]);
        while let Some(f) = codec.decode(&mut buf).unwrap() {
            assert_eq!(
                f.decode_error(),
                Some(DecodeError::HeaderTooLarge { limit: MAX_HEADER_BYTES })
            );
            errors += 1;
        }
        assert!(buf.len() <= MAX_HEADER_BYTES + 1000, "{} bytes held", buf.len());
    }
    assert_eq!(errors, 1, "reported once");
    buf.extend_from_slice(&[b"\r\n".as_slice(), &msg(PING)].concat());
    assert_eq!(codec.decode(&mut buf).unwrap().unwrap().method(), Some("ping"));
}

#[test]
fn body_at_the_limit_passes_and_one_byte_more_is_dropped_as_it_arrives() {
    let body = |n: usize| {
        let mut v = br#"{"jsonrpc":"2.0","method":"pad","params":[""#.to_vec();
        v.resize(n - 3, b'x');
        v.extend_from_slice(br#""]}"#);
        v
    };
    let at = body(MAX);
    assert_eq!(decode(&msg(&at)), vec![ok(Kind::Notification, &at)]);

    let mut codec = JsonRpcCodec::with_framing(limits(), Framing::ContentLength);
    let mut buf = BytesMut::from(&b"Content-Length: 257\r\n\r\n"[..]);
    let f = codec.decode(&mut buf).unwrap().unwrap();
    assert_eq!(f.decode_error(), Some(DecodeError::FrameTooLarge { limit: MAX }));
    assert_eq!(
        f.message()
            .unwrap()
            .error_reply(mcpwire::ReplyDetail::Spec)
            .map(|r| matches!(r, Outgoing::Error { id: Id::Null, .. })),
        Some(true)
    );
    let past = body(MAX + 1);
    for chunk in past.chunks(10) {
        buf.extend_from_slice(chunk);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        assert!(buf.is_empty(), "body bytes are never held");
    }
    buf.extend_from_slice(&msg(NOTE));
    assert_eq!(codec.decode(&mut buf).unwrap().unwrap().method(), Some("n"));

    // A declared length far past any buffer: refused at once, dropped as it streams.
    let mut buf = BytesMut::from(&b"Content-Length: 9999999999\r\n\r\nabc"[..]);
    let f = codec.decode(&mut buf).unwrap().unwrap();
    assert_eq!(f.decode_error(), Some(DecodeError::FrameTooLarge { limit: MAX }));
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert!(buf.is_empty());
}

#[test]
fn end_of_input_inside_a_message_is_one_truncated_error() {
    let whole = msg(PING);
    for cut in 1..whole.len() {
        let got = decode(&whole[..cut]);
        assert_eq!(got, vec![err(DecodeError::Truncated)], "cut {cut}");
    }
    // Only blank lines left: nothing.
    assert_eq!(decode(&[whole.as_slice(), b"\r\n\n"].concat()), vec![ok(Kind::Request, PING)]);
    // An empty body is a body the parser refuses.
    let got = decode(b"Content-Length: 0\r\n\r\n");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1.unwrap().code(), ErrorCode::PARSE_ERROR);
}

// ---- Detection ----

#[test]
fn detect_chooses_content_length_by_its_header_in_any_case() {
    for head in ["Content-Length", "content-length", "CONTENT-LENGTH"] {
        let input =
            [b" \r\n\xEF\xBB\xBF", format!("{head}: {}\r\n\r\n", PING.len()).as_bytes(), PING]
                .concat();
        for cut in 0..=input.len() {
            let (a, b) = input.split_at(cut);
            let got = decode_chunks(Framing::Detect, limits(), [a, b]);
            assert_eq!(got, vec![ok(Kind::Request, PING)], "{head} cut {cut}");
        }
        let mut codec = JsonRpcCodec::with_framing(limits(), Framing::Detect);
        let mut buf = BytesMut::from(&input[..]);
        assert!(codec.decode(&mut buf).unwrap().is_some());
        assert_eq!(codec.framing(), Framing::ContentLength);
    }
}

#[test]
fn detect_chooses_ndjson_for_json_and_for_anything_else() {
    for (input, kinds) in [
        (
            &b"\n\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n[]\n"[..],
            vec![Kind::Notification, Kind::Invalid],
        ),
        (b"[{\"jsonrpc\":\"2.0\",\"method\":\"a\"}]\n", vec![Kind::Batch]),
        (
            b"hello\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n",
            vec![Kind::Invalid, Kind::Notification],
        ),
        (b"Content-Type: x\n", vec![Kind::Invalid]),
        (b"Content", vec![Kind::Invalid]),
    ] {
        let whole = decode_chunks(Framing::Detect, limits(), [input]);
        assert_eq!(
            whole.iter().map(|v| v.0).collect::<Vec<_>>(),
            kinds,
            "{:?}",
            String::from_utf8_lossy(input)
        );
        assert_eq!(decode_chunks(Framing::Detect, limits(), input.chunks(1)), whole);
        assert_eq!(decode_chunks(Framing::Ndjson, limits(), [input]), whole, "as plain NDJSON");
    }
    let mut codec = JsonRpcCodec::with_framing(limits(), Framing::Detect);
    assert_eq!(codec.framing(), Framing::Detect);
    let mut buf = BytesMut::from(&b"  {}\n"[..]);
    codec.decode(&mut buf).unwrap();
    assert_eq!(codec.framing(), Framing::Ndjson);
}

#[test]
fn endless_whitespace_before_detection_is_not_held() {
    let mut codec = JsonRpcCodec::with_framing(limits(), Framing::Detect);
    let mut buf = BytesMut::new();
    for _ in 0..100 {
        buf.extend_from_slice(&[b' '; 1000]);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        assert!(buf.is_empty());
    }
    assert_eq!(codec.framing(), Framing::Detect);
}

// ---- Encoding ----

#[test]
fn encoder_writes_content_length_and_the_decoder_reads_it_back() {
    let mut codec = JsonRpcCodec::with_framing(limits(), Framing::ContentLength);
    let mut out = BytesMut::from(&b"already queued|"[..]);
    codec
        .encode(
            Outgoing::Notification { method: "é\n", params: Some(RawJson::new("{\n\"a\": 1}")) },
            &mut out,
        )
        .unwrap();
    codec
        .encode(Outgoing::Result { id: Id::Str("x"), result: RawJson::new("[]") }, &mut out)
        .unwrap();
    let body1 = "{\"jsonrpc\":\"2.0\",\"method\":\"é\\n\",\"params\":{ \"a\": 1}}";
    let body2 = "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":[]}";
    let want = format!(
        "already queued|Content-Length: {}\r\n\r\n{body1}Content-Length: {}\r\n\r\n{body2}",
        body1.len(),
        body2.len()
    );
    assert_eq!(std::str::from_utf8(&out).unwrap(), want);
    let mut input = out.split_off("already queued|".len());
    let a = codec.decode(&mut input).unwrap().unwrap();
    let b = codec.decode(&mut input).unwrap().unwrap();
    assert_eq!((a.method(), b.id()), (Some("é\n"), Some(Id::Str("x"))));

    // A frame forwarded keeps its exact bytes, pretty-printing included.
    let mut buf = BytesMut::from(&msg(PRETTY)[..]);
    let f = codec.decode(&mut buf).unwrap().unwrap();
    let mut fwd = BytesMut::new();
    codec.encode(&f, &mut fwd).unwrap();
    assert_eq!(&fwd[..], &msg(PRETTY)[..]);

    // A payload that fails to serialise leaves the buffer as it was.
    let mut bad = std::collections::HashMap::new();
    bad.insert(vec![1u8], 1);
    let mut out = BytesMut::from(&b"kept"[..]);
    let r = codec.encode(
        Outgoing::Notification { method: "m", params: Some(mcpwire::Json(&bad)) },
        &mut out,
    );
    assert!(r.is_err());
    assert_eq!(&out[..], b"kept");
}

#[test]
fn detect_answers_in_the_framing_it_detected() {
    let reply = || Outgoing::Result { id: Id::Num(1), result: RawJson::new("{}") };
    let mut codec = JsonRpcCodec::with_framing(limits(), Framing::Detect);
    let mut out = BytesMut::new();
    codec.encode(reply(), &mut out).unwrap();
    assert!(out.ends_with(b"}\n"), "NDJSON before the decision");
    let mut buf = BytesMut::from(&msg(PING)[..]);
    codec.decode(&mut buf).unwrap().unwrap();
    out.clear();
    codec.encode(reply(), &mut out).unwrap();
    assert!(out.starts_with(b"Content-Length: 36\r\n\r\n{"), "{out:?}");
}

// ---- A real reader ----

#[tokio::test]
async fn lsp_style_stream_through_a_duplex_and_framed_read() {
    let (stream, want) = varied();
    let codec = JsonRpcCodec::with_framing(limits(), Framing::Detect);
    let got: Vec<View> = through_duplex(stream, 11, 17, codec).await.iter().map(view).collect();
    assert_eq!(got, want);
}

// ---- Random chunkings ----

fn piece() -> impl Strategy<Value = Vec<u8>> {
    let (stream, _) = varied();
    let hard = b"Content-Length: 12\r\n\r\n{}[]\":\xEF\xBB\xBF9x".to_vec();
    prop_oneof![
        3 => run_of(stream, 200),
        2 => drawn_from(hard),
        1 => proptest::collection::vec(any::<u8>(), 0..40),
        2 => proptest::sample::select(vec![msg(PING), msg(PRETTY), msg(NOTE)]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any stream, cut anywhere, decodes to the frames of one read, in both Content-Length and
    /// Detect framing.
    #[test]
    fn any_stream_cut_anywhere_decodes_to_the_frames_of_one_read(
        pieces in proptest::collection::vec(piece(), 0..10),
        cuts in proptest::collection::vec(0..120usize, 1..24),
    ) {
        let input = pieces.concat();
        for framing in [Framing::ContentLength, Framing::Detect] {
            let whole = decode_chunks(framing, limits(), [&input[..]]);
            // Zero cuts are empty reads; the rest goes in one last read should they all be zero.
            prop_assert_eq!(decode_chunks(framing, limits(), cut_by(&input, &cuts)), whole);
        }
    }
}
