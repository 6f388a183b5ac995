use super::*;
use crate::Frame;

#[test]
fn the_index_of_one_message_is_packed_into_48_bytes() {
    assert_eq!(std::mem::size_of::<MessageIndex>(), 48);
    // The batch and unreadable cases fit around the envelope's own tag bytes.
    assert_eq!(std::mem::size_of::<FrameIndex>(), 48);
    assert_eq!(std::mem::size_of::<Frame>(), 32 + 48 + 40);
}

#[test]
fn every_packed_member_reads_back_as_written() {
    let mut env = MessageIndex::BLANK;
    let t = |at, len, unescaped| Text { at, len, unescaped };
    for id in [
        IdRepr::Absent,
        IdRepr::Null,
        IdRepr::Num(i64::MIN),
        IdRepr::Num(-1),
        IdRepr::Num(i64::MAX),
        IdRepr::Str(t(u32::MAX - 1, u32::MAX, true)),
        IdRepr::Str(t(7, 0, false)),
        IdRepr::Unreadable,
    ] {
        env.set_id(id);
        assert_eq!(env.id(), id);
    }
    env.set_method(t(3, 4, true));
    assert_eq!(env.method(), Some(t(3, 4, true)));
    env.set_payload(Some(Span { start: 1, end: u32::MAX }));
    assert_eq!(env.payload(), Some(Span { start: 1, end: u32::MAX }));
    env.set_payload(None);
    assert_eq!(env.payload(), None);
    assert_eq!(env.error(), None);
    let e = ErrorRepr {
        code: i64::MIN,
        message: t(9, 2, false),
        data: Some(Span { start: 5, end: 6 }),
    };
    env.set_error(e);
    assert_eq!((env.kind, env.error(), env.method()), (Kind::Error, Some(e), None));
    env.set_error(ErrorRepr { data: None, ..e });
    assert_eq!(env.error().unwrap().data, None);
    env.set_response_shaped(true);
    assert!(env.response_shaped());
    assert_eq!(env.id(), IdRepr::Unreadable, "other members leave the id alone");
}

#[test]
fn every_problem_is_the_decode_error_of_its_name() {
    use crate::error::Member as M;
    assert_eq!(
        *Problem::DuplicateMember(M::ErrorData).get(),
        DecodeError::DuplicateMember(M::ErrorData)
    );
    assert_eq!(
        *Problem::DuplicateMember(M::Jsonrpc).get(),
        DecodeError::DuplicateMember(M::Jsonrpc)
    );
    assert_eq!(*Problem::ErrorMessageNotString.get(), DecodeError::ErrorMessageNotString);
    assert_eq!(*Problem::NotAnObject.get(), DecodeError::NotAnObject);
}
