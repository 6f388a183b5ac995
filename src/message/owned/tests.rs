use bytes::BytesMut;

use super::*;
use crate::{FrameParser, Limits};

fn parse(json: &str) -> crate::Frame {
    FrameParser::new(Limits::default()).parse(BytesMut::from(json))
}

#[test]
fn progress_tokens_are_read_from_progress_notifications_only() {
    let note = parse(
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#,
    );
    assert_eq!(progress_token(&note.message().unwrap()), Some(OwnedId::Num(7)));
    let other = parse(r#"{"jsonrpc":"2.0","method":"x","params":{"progressToken":7}}"#);
    assert_eq!(progress_token(&other.message().unwrap()), None);
}

#[test]
fn cancellations_name_their_request_escaped_or_not() {
    let c = parse(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a\"b"}}"#,
    );
    assert_eq!(cancelled_request(&c.message().unwrap()), Some("a\"b".into()));
    let c =
        parse(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#);
    assert_eq!(cancelled_request(&c.message().unwrap()), Some(OwnedId::Num(3)));
    let bad =
        parse(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[]}}"#);
    assert_eq!(cancelled_request(&bad.message().unwrap()), None);
    let other = parse(r#"{"jsonrpc":"2.0","method":"x","params":{"requestId":3}}"#);
    assert_eq!(cancelled_request(&other.message().unwrap()), None);
}
