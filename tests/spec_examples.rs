//! The JSON-RPC 2.0 specification's section 7 examples, read from
//! `tests/data/jsonrpc2-spec-examples.txt` and checked one test per example.
//!
//! What the codec alone can answer (-32700, -32600) is built with the crate's reply helpers and
//! compared with the specification's reply as JSON values. Replies that need a server (results,
//! -32601) are checked through the classification instead: the message must be a valid request
//! with the id the reply carries and the method and params the request sent.

use bytes::BytesMut;
use mcpwire::{Frame, Id, JsonRpcCodec, Kind, Message, ReplyDetail};
use serde_json::Value;
use tokio_util::codec::Decoder;

const SPEC_FILE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/jsonrpc2-spec-examples.txt");

/// The number of `-->` examples in the specification's section 7.
const SPEC_EXAMPLE_COUNT: usize = 15;

#[derive(Debug)]
struct Example {
    line: usize,
    request: String,
    /// `None` for "(no reply)".
    reply: Option<String>,
}

fn examples() -> Vec<Example> {
    let text = std::fs::read_to_string(SPEC_FILE)
        .unwrap_or_else(|e| panic!("cannot read the JSON-RPC spec examples at {SPEC_FILE}: {e}"));
    let mut out: Vec<Example> = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        if let Some(req) = line.strip_prefix("--> ") {
            assert!(
                pending.is_none(),
                "line {n}: a request follows a request with no reply in between"
            );
            pending = Some((n, req.to_owned()));
        } else if let Some(rep) = line.strip_prefix("<-- ") {
            let (line, request) =
                pending.take().unwrap_or_else(|| panic!("line {n}: a reply without a request"));
            out.push(Example { line, request, reply: Some(rep.to_owned()) });
        } else if line.trim() == "(no reply)" {
            let (line, request) = pending
                .take()
                .unwrap_or_else(|| panic!("line {n}: \"(no reply)\" without a request"));
            out.push(Example { line, request, reply: None });
        } else {
            assert!(
                line.trim().is_empty() || line.starts_with('#'),
                "line {n}: unrecognised line {line:?}"
            );
        }
    }
    assert!(pending.is_none(), "the file ends with an unanswered request");
    out
}

fn example(index: usize) -> Example {
    let mut all = examples();
    assert_eq!(
        all.len(),
        SPEC_EXAMPLE_COUNT,
        "{SPEC_FILE} should hold the specification's {SPEC_EXAMPLE_COUNT} examples"
    );
    all.swap_remove(index)
}

/// Decodes `line` alone (scratch path: fewer than 64 bytes follow) and followed by other frames
/// (in-place path); both must agree.
fn decode(line: &str) -> Frame {
    let mut codec = JsonRpcCodec::new();
    let mut alone = BytesMut::from(format!("{line}\n").as_bytes());
    let a = codec.decode(&mut alone).unwrap().expect("a frame");
    assert!(alone.is_empty());
    let filler = "{\"jsonrpc\":\"2.0\",\"method\":\"filler\",\"params\":[1,2,3,4,5,6,7,8,9,10]}\n";
    let mut followed = BytesMut::from(format!("{line}\n{filler}{filler}").as_bytes());
    let b = codec.decode(&mut followed).unwrap().expect("a frame");
    assert_eq!(a, b, "both parse paths agree on {line}");
    assert_eq!(a.as_bytes(), line.trim().as_bytes());
    for _ in 0..2 {
        let f = codec.decode(&mut followed).unwrap().expect("the filler frame");
        assert_eq!(f.method(), Some("filler"), "the next frame is intact");
    }
    a
}

fn id_value(id: Id<'_>) -> Value {
    match id {
        Id::Num(n) => Value::from(n),
        Id::Str(s) => Value::from(s),
        Id::Null => Value::Null,
    }
}

/// The codec's spec-style error reply for one invalid message, as text without a line ending.
fn reply_value_text(msg: &Message<'_>) -> String {
    let reply =
        msg.error_reply(ReplyDetail::Spec).unwrap_or_else(|| panic!("no error reply for {msg:?}"));
    let mut out = BytesMut::new();
    reply.write_value(&mut out).unwrap();
    String::from_utf8(out.to_vec()).unwrap()
}

/// The codec's reply line for a single invalid message: `Outgoing::write`, one line.
fn reply_line(msg: &Message<'_>) -> Value {
    let reply = msg.error_reply(ReplyDetail::Spec).unwrap();
    let mut out = BytesMut::new();
    reply.write(&mut out).unwrap();
    let text = std::str::from_utf8(&out).unwrap();
    let body = text.strip_suffix('\n').expect("a reply ends with one newline");
    assert!(!body.contains('\n'), "a reply is one line: {text:?}");
    serde_json::from_str(body).unwrap()
}

fn is_codec_error(reply: &Value) -> bool {
    matches!(reply["error"]["code"].as_i64(), Some(-32700) | Some(-32600))
}

/// A valid request whose reply needs a server: check kind, id, method and params instead.
fn assert_request_answered_by(msg: &Message<'_>, request: &Value, reply: &Value, ctx: &str) {
    assert_eq!(msg.kind(), Kind::Request, "{ctx}: {msg:?}");
    assert_eq!(
        id_value(msg.id().expect("a request has an id")),
        reply["id"],
        "{ctx}: the reply's id is the request's id"
    );
    assert_eq!(Some(msg.method().unwrap()), request["method"].as_str(), "{ctx}");
    match request.get("params") {
        Some(p) => assert_eq!(
            &serde_json::from_str::<Value>(msg.params().unwrap().get()).unwrap(),
            p,
            "{ctx}"
        ),
        None => assert!(msg.params().is_none(), "{ctx}"),
    }
}

fn check(index: usize) {
    let ex = example(index);
    let ctx = format!("example at line {} ({})", ex.line, ex.request);
    let frame = decode(&ex.request);
    // The request as serde_json sees it; `None` when the spec sends invalid JSON on purpose.
    let request: Option<Value> = serde_json::from_str(&ex.request).ok();
    let reply: Option<Value> = ex.reply.as_deref().map(|r| {
        serde_json::from_str(r).unwrap_or_else(|e| panic!("{ctx}: reply is not JSON: {e}"))
    });

    match (&reply, frame.kind()) {
        // "(no reply)": notifications only, alone or as a whole batch.
        (None, Kind::Notification) => {
            let req = request.as_ref().unwrap();
            assert_eq!(frame.method(), req["method"].as_str(), "{ctx}");
            assert!(frame.id().is_none(), "{ctx}");
        }
        (None, Kind::Batch) => {
            let reqs = request.as_ref().unwrap().as_array().unwrap();
            let items: Vec<_> = frame.batch().unwrap().collect();
            assert_eq!(items.len(), reqs.len(), "{ctx}");
            for (item, req) in items.iter().zip(reqs) {
                assert_eq!(item.kind(), Kind::Notification, "{ctx}: {item:?}");
                assert_eq!(item.method(), req["method"].as_str(), "{ctx}");
            }
        }
        (None, kind) => panic!("{ctx}: no reply expected, but the frame is {kind:?}: {frame:?}"),

        // A batch answered with an array: the codec's error elements must be exactly the
        // specification's -32700/-32600 elements (in any order: "Batch replies may come in any
        // order"); every other reply element must answer a valid request of the batch by id.
        (Some(Value::Array(spec_items)), Kind::Batch) => {
            let reqs = request.as_ref().unwrap().as_array().unwrap();
            let items: Vec<_> = frame.batch().unwrap().collect();
            assert_eq!(items.len(), reqs.len(), "{ctx}");
            let mut codec_errors = Vec::new();
            let mut requests = Vec::new();
            for (item, req) in items.iter().zip(reqs) {
                match item.kind() {
                    Kind::Invalid => codec_errors.push(reply_value_text(item)),
                    Kind::Request => requests.push((item, req)),
                    Kind::Notification => {}
                    other => panic!("{ctx}: unexpected element kind {other:?}"),
                }
            }
            // The assembled reply: `[`, elements joined by `,`, `]`.
            let assembled = format!("[{}]", codec_errors.join(","));
            let assembled: Value = serde_json::from_str(&assembled)
                .unwrap_or_else(|e| panic!("{ctx}: assembled reply is not JSON: {e}"));
            let spec_errors: Vec<Value> =
                spec_items.iter().filter(|r| is_codec_error(r)).cloned().collect();
            if spec_errors.len() == spec_items.len() {
                // Every element is the codec's to produce: the whole reply must be the spec's.
                assert_eq!(&assembled, reply.as_ref().unwrap(), "{ctx}");
            } else {
                let mut got = assembled.as_array().unwrap().clone();
                let mut want = spec_errors;
                let key = |v: &Value| v.to_string();
                got.sort_by_key(key);
                want.sort_by_key(key);
                assert_eq!(got, want, "{ctx}: the codec's error elements");
            }
            let server_replies: Vec<&Value> =
                spec_items.iter().filter(|r| !is_codec_error(r)).collect();
            assert_eq!(
                server_replies.len(),
                requests.len(),
                "{ctx}: one server reply per valid request"
            );
            for reply in server_replies {
                let (item, req) = requests
                    .iter()
                    .find(|(item, _)| id_value(item.id().unwrap()) == reply["id"])
                    .unwrap_or_else(|| panic!("{ctx}: no request with the id of {reply}"));
                assert_request_answered_by(item, req, reply, &ctx);
            }
        }
        (Some(Value::Array(_)), kind) => {
            panic!("{ctx}: a batch reply expected, but the frame is {kind:?}: {frame:?}")
        }

        // A single reply the codec produces on its own must be exactly the specification's.
        (Some(r), _) if is_codec_error(r) => {
            assert_eq!(frame.kind(), Kind::Invalid, "{ctx}: {frame:?}");
            let msg = frame.message().unwrap();
            assert_eq!(
                msg.decode_error().unwrap().code().get(),
                r["error"]["code"].as_i64().unwrap(),
                "{ctx}: {frame:?}"
            );
            assert_eq!(&reply_line(&msg), r, "{ctx}");
            // The element form of the same reply is the same value.
            assert_eq!(
                &serde_json::from_str::<Value>(&reply_value_text(&msg)).unwrap(),
                r,
                "{ctx}"
            );
        }
        // A result or -32601: the server's to write; the codec must hand it a valid request.
        (Some(r), _) => {
            let msg = frame
                .message()
                .unwrap_or_else(|| panic!("{ctx}: a single message expected: {frame:?}"));
            assert_request_answered_by(&msg, request.as_ref().unwrap(), r, &ctx);
        }
    }
}

#[test]
fn spec_file_holds_every_example() {
    let all = examples();
    assert_eq!(all.len(), SPEC_EXAMPLE_COUNT, "{all:#?}");
}

#[test]
fn rpc_call_with_positional_parameters() {
    check(0);
    check(1);
}

#[test]
fn rpc_call_with_named_parameters() {
    check(2);
    check(3);
}

#[test]
fn notification_with_params() {
    check(4);
}

#[test]
fn notification_without_params() {
    check(5);
}

#[test]
fn rpc_call_of_non_existent_method() {
    check(6);
}

#[test]
fn rpc_call_with_invalid_json() {
    check(7);
}

#[test]
fn rpc_call_with_invalid_request_object() {
    check(8);
}

#[test]
fn rpc_call_batch_invalid_json() {
    check(9);
}

#[test]
fn rpc_call_with_an_empty_array() {
    check(10);
}

#[test]
fn rpc_call_with_an_invalid_batch_but_not_empty() {
    check(11);
}

#[test]
fn rpc_call_with_invalid_batch() {
    check(12);
}

#[test]
fn rpc_call_batch() {
    check(13);
}

#[test]
fn rpc_call_batch_all_notifications() {
    check(14);
}

/// The two cases the brief singles out, spelled out so a change in the table logic cannot
/// weaken them: the `-32700` batch and `[]` must produce exactly the specification's JSON.
#[test]
fn invalid_json_batch_and_empty_array_produce_exactly_the_spec_reply() {
    for (index, want_code) in [(9, -32700), (10, -32600)] {
        let ex = example(index);
        let frame = decode(&ex.request);
        assert_eq!(frame.kind(), Kind::Invalid, "{}", ex.request);
        let msg = frame.message().unwrap();
        assert_eq!(msg.decode_error().unwrap().code().get(), want_code);
        let spec: Value = serde_json::from_str(ex.reply.as_deref().unwrap()).unwrap();
        assert_eq!(reply_line(&msg), spec, "{}", ex.request);
    }
}
