//! Classification and accessors, each case decoded on both parse paths: alone in the buffer
//! (copied to scratch: fewer than 64 bytes follow) and followed by more frames (parsed in place).

use bytes::BytesMut;
use mcpwire::{DecodeError, ErrorCode, Frame, Id, JsonRpcCodec, Kind, Limits, Member};
use tokio_util::codec::Decoder;

mod common;

use common::nested_arrays;

/// Decodes `line` both ways, checks both agree, returns one.
fn decode_with(limits: Limits, line: &str) -> Frame {
    let mut codec = JsonRpcCodec::with_limits(limits);
    let mut alone = BytesMut::from(format!("{line}\n").as_bytes());
    let a = codec.decode(&mut alone).unwrap().expect("a frame");
    let filler =
        "{\"jsonrpc\":\"2.0\",\"method\":\"filler\",\"params\":[1,2,3,4,5,6,7,8,9,10,11,12]}\n";
    let mut followed = BytesMut::from(format!("{line}\n{filler}{filler}").as_bytes());
    let b = codec.decode(&mut followed).unwrap().expect("a frame");
    assert_eq!(a, b, "both parse paths agree on {line}");
    assert_eq!(a.as_bytes(), line.trim().as_bytes(), "frame bytes are exactly the input");
    for _ in 0..2 {
        assert_eq!(codec.decode(&mut followed).unwrap().unwrap().method(), Some("filler"));
    }
    a
}

fn decode(line: &str) -> Frame {
    decode_with(Limits::default(), line)
}

fn invalid(line: &str) -> DecodeError {
    let f = decode(line);
    assert_eq!(f.kind(), Kind::Invalid, "{line}");
    f.decode_error().unwrap()
}

#[test]
fn request_with_every_accessor() {
    let f = decode(
        r#" {"jsonrpc" : "2.0" , "id" : 42 , "method" : "tools/call" , "params" : { "a" : [1, {"b": "c"}] } } "#,
    );
    assert_eq!(f.kind(), Kind::Request);
    assert_eq!(f.id(), Some(Id::Num(42)));
    assert_eq!(f.method(), Some("tools/call"));
    assert_eq!(f.params().unwrap().get(), r#"{ "a" : [1, {"b": "c"}] }"#);
    assert_eq!(f.result(), None);
    assert_eq!(f.error(), None);
    assert_eq!(f.decode_error(), None);
}

#[test]
fn params_first_and_last_member_spans() {
    let f = decode(r#"{"params":[1,"a,b"],"method":"m","jsonrpc":"2.0"}"#);
    assert_eq!(f.kind(), Kind::Notification);
    assert_eq!(f.params().unwrap().get(), r#"[1,"a,b"]"#);
    let f = decode("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"k\":\"}\"}\t}");
    assert_eq!(f.params().unwrap().get(), r#"{"k":"}"}"#);
}

#[test]
fn escaped_strings_are_unescaped_and_payloads_keep_their_escapes() {
    let line =
        r#"{"jsonrpc":"2.0","id":"a\"b\u00e9","method":"tools\/call","params":{"t":"x\ny\\"}}"#;
    let f = decode(line);
    assert_eq!(f.kind(), Kind::Request);
    assert_eq!(f.id(), Some(Id::Str("a\"bé")));
    assert_eq!(f.method(), Some("tools/call"));
    assert_eq!(f.params().unwrap().get(), r#"{"t":"x\ny\\"}"#);
    #[derive(serde::Deserialize)]
    struct P {
        t: String,
    }
    assert_eq!(f.params_as::<P>().unwrap().t, "x\ny\\");
}

#[test]
fn escaped_keys_match_members() {
    let f = decode(r#"{"json\u0072pc":"2.0","\u0069d":1,"par\u0061ms":[true],"method":"m"}"#);
    assert_eq!(f.kind(), Kind::Request);
    assert_eq!(f.params().unwrap().get(), "[true]");
}

#[test]
fn responses_and_errors() {
    let f = decode(r#"{"jsonrpc":"2.0","id":"x","result":null}"#);
    assert_eq!((f.kind(), f.id()), (Kind::Response, Some(Id::Str("x"))));
    assert_eq!(f.result().unwrap().get(), "null");
    let f = decode(
        r#"{"jsonrpc":"2.0","error":{"data":{"d":[1]},"message":"bad \"x\"","code":-32601},"id":null}"#,
    );
    assert_eq!((f.kind(), f.id()), (Kind::Error, Some(Id::Null)));
    let e = f.error().unwrap();
    assert_eq!((e.code, e.message), (-32601, "bad \"x\""));
    assert_eq!(e.data.unwrap().get(), r#"{"d":[1]}"#);
    let f = decode(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m","data":"last" }}"#);
    assert_eq!(f.error().unwrap().data.unwrap().get(), r#""last""#);
}

#[test]
fn ids() {
    assert_eq!(
        decode(r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"m"}"#).id(),
        Some(Id::Num(i64::MIN))
    );
    assert_eq!(
        decode(r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"m"}"#).id(),
        Some(Id::Num(i64::MAX))
    );
    for bad in ["9223372036854775808", "1.5", "1.0", "true", "{}", "[]", "1e2"] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"m"}}"#);
        assert_eq!(invalid(&line), DecodeError::InvalidId, "{line}");
    }
    assert_eq!(invalid(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#), DecodeError::NullId);
    assert_eq!(invalid(r#"{"jsonrpc":"2.0","id":null,"result":1}"#), DecodeError::NullId);
}

#[test]
fn envelope_rules() {
    use DecodeError as E;
    let cases: &[(&str, DecodeError)] = &[
        (r#"{"id":1,"method":"m"}"#, E::MissingVersion),
        (r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#, E::WrongVersion),
        (r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#, E::WrongVersion),
        (r#"{"jsonrpc":"2.0 ","id":1,"method":"m"}"#, E::WrongVersion),
        (r#"{"jsonrpc":"2.0","id":1,"method":1}"#, E::MethodNotString),
        (r#"{"jsonrpc":"2.0","id":1,"method":null}"#, E::MethodNotString),
        (r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}"#, E::ParamsNotStructured),
        (r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#, E::ParamsNotStructured),
        (r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#, E::ParamsNotStructured),
        (r#"{"jsonrpc":"2.0","method":"m","result":1}"#, E::MethodWithOutcome),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}"#,
            E::ResultAndError,
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, E::NoMethodOrOutcome),
        (r#"{}"#, E::MissingVersion),
        (r#"{"jsonrpc":"2.0"}"#, E::NoMethodOrOutcome),
        (r#"{"jsonrpc":"2.0","result":1}"#, E::ResponseWithoutId),
        (r#"{"jsonrpc":"2.0","id":1,"error":"x"}"#, E::ErrorNotObject),
        (r#"{"jsonrpc":"2.0","id":1,"error":{"message":"x"}}"#, E::ErrorCodeNotInteger),
        (r#"{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"x"}}"#, E::ErrorCodeNotInteger),
        (r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}"#, E::ErrorCodeNotInteger),
        (r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#, E::ErrorMessageNotString),
        (r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}}"#, E::ErrorMessageNotString),
        (r#"{"jsonrpc":"2.0","id":1,"method":"m","extra":1}"#, E::UnknownMember),
        (r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#, E::DuplicateMember(Member::Id)),
        (
            r#"{"jsonrpc":"2.0","method":"a","id":1,"method":"b"}"#,
            E::DuplicateMember(Member::Method),
        ),
        (
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"b"}"#,
            E::DuplicateMember(Member::Jsonrpc),
        ),
        (r#"{"jsonrpc":"2.0","id":1,"result":1,"result":2}"#, E::DuplicateMember(Member::Result)),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2,"message":""}}"#,
            E::DuplicateMember(Member::ErrorCode),
        ),
        ("42", E::NotAnObject),
        ("null", E::NotAnObject),
        (r#""x""#, E::NotAnObject),
        ("[]", E::EmptyBatch),
    ];
    for (line, want) in cases {
        assert_eq!(invalid(line), *want, "{line}");
        assert_eq!(want.code(), ErrorCode::INVALID_REQUEST);
    }
}

#[test]
fn invalid_request_keeps_a_readable_id() {
    let f = decode(r#"{"jsonrpc":"1.0","id":"r1","method":"m"}"#);
    assert_eq!(f.id(), Some(Id::Str("r1")));
    let f = decode(r#"{"jsonrpc":"2.0","id":1,"id":1,"method":"m"}"#);
    assert_eq!(f.id(), None, "a duplicated id is not readable");
    assert_eq!(f.method(), None, "an invalid message lends no method");
}

#[test]
fn parse_errors() {
    for line in [
        "{",
        "{} x",
        "{}{}",
        "{'a':1}",
        "[1,]",
        "{\"a\":01}",
        "{\"a\":NaN}",
        "{\"a\":\"\\u12G4\"}",
        "{\"a\":\"\\uD800\"}",
        "{\"a\":1e400}",
    ] {
        assert_eq!(decode(line).decode_error().unwrap().code(), ErrorCode::PARSE_ERROR, "{line}");
    }
    let mut codec = JsonRpcCodec::new();
    let mut buf = BytesMut::from(&b"{\"a\":\"\xC0\xAF\"}\n"[..]);
    assert_eq!(
        codec.decode(&mut buf).unwrap().unwrap().decode_error(),
        Some(DecodeError::InvalidUtf8)
    );
}

#[test]
fn batches() {
    let f = decode(
        r#"[{"jsonrpc":"2.0","id":1,"method":"a","params":[1]}, 1, {"jsonrpc":"2.0","method":"n"} ,[], {"jsonrpc":"2.0","id":2,"result":{"r":[]}}]"#,
    );
    assert_eq!(f.kind(), Kind::Batch);
    let items: Vec<_> = f.batch().unwrap().collect();
    assert_eq!(items.len(), 5);
    assert_eq!(items[0].params().unwrap().get(), "[1]");
    assert_eq!(items[1].decode_error(), Some(DecodeError::NotAnObject));
    assert_eq!(items[2].method(), Some("n"));
    assert_eq!(items[3].decode_error(), Some(DecodeError::NotAnObject));
    assert_eq!(items[4].result().unwrap().get(), r#"{"r":[]}"#);
    assert_eq!(f.id(), None);
}

#[test]
fn batch_limits_and_refusal() {
    let one = r#"{"jsonrpc":"2.0","method":"n"}"#;
    let batch = |n: usize| format!("[{}]", vec![one; n].join(","));
    let limits = Limits::default().max_batch_len(3);
    assert_eq!(decode_with(limits, &batch(3)).kind(), Kind::Batch);
    assert_eq!(
        decode_with(limits, &batch(4)).decode_error(),
        Some(DecodeError::BatchTooLong { len: 4, limit: 3 })
    );
    assert_eq!(
        decode_with(Limits::default().batches(false), &batch(1)).decode_error(),
        Some(DecodeError::BatchesRefused)
    );
}

#[test]
fn depth_at_and_past_the_limit() {
    let nest = nested_arrays;
    let limits = Limits::default().max_depth(8);
    assert_eq!(decode_with(limits, &nest(8)).kind(), Kind::Notification);
    assert_eq!(
        decode_with(limits, &nest(9)).decode_error(),
        Some(DecodeError::TooDeep { limit: 8 })
    );
    assert_eq!(decode(&nest(128)).kind(), Kind::Notification);
    assert_eq!(decode(&nest(129)).decode_error(), Some(DecodeError::TooDeep { limit: 128 }));
}

#[test]
fn forwarding_a_pretty_printed_body_keeps_it_one_line() {
    use mcpwire::FrameParser;
    use tokio_util::codec::Encoder;
    let body = "{\n  \"jsonrpc\": \"2.0\",\r\n  \"method\": \"m\"\n}";
    let frame = FrameParser::new(Limits::default()).parse(BytesMut::from(body));
    let mut codec = JsonRpcCodec::new();
    let mut wire = BytesMut::new();
    codec.encode(&frame, &mut wire).unwrap();
    assert_eq!(wire.iter().filter(|&&b| b == b'\n').count(), 1);
    let again = codec.decode(&mut wire).unwrap().unwrap();
    assert_eq!((again.kind(), again.method()), (Kind::Notification, Some("m")));
}

#[test]
fn frame_parser_body_at_and_one_past_the_size_limit() {
    use mcpwire::FrameParser;
    let body = r#"{"jsonrpc":"2.0","method":"m"}"#;
    let mut at = FrameParser::new(Limits::default().max_frame_bytes(body.len()));
    assert_eq!(
        at.parse(BytesMut::from(format!("\n {body} \n").as_str())).kind(),
        Kind::Notification
    );
    let mut under = FrameParser::new(Limits::default().max_frame_bytes(body.len() - 1));
    assert_eq!(
        under.parse(BytesMut::from(body)).decode_error(),
        Some(DecodeError::FrameTooLarge { limit: body.len() - 1 })
    );
}
