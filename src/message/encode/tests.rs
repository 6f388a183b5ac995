use super::*;

fn escaped(s: &str) -> String {
    let mut out = BytesMut::new();
    write_str(&mut out, s);
    String::from_utf8(out.to_vec()).unwrap()
}

#[test]
fn escapes_quotes_backslashes_and_every_control_character() {
    for c in (0u8..0x20).map(char::from).chain(['"', '\\', '\u{7f}', '\u{2028}', 'é']) {
        let s = format!("a{c}b");
        let out = escaped(&s);
        assert!(!out.contains('\n') && !out.contains('\r'));
        assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s, "{out}");
    }
}

#[test]
fn raw_json_line_breaks_become_spaces() {
    let mut out = BytesMut::new();
    Outgoing::<RawJson<'_>>::Raw(RawJson::new("{\r\n  \"a\": 1\n}")).write(&mut out).unwrap();
    assert_eq!(&out[..], b"{    \"a\": 1 }\n");
}

#[test]
fn a_line_break_inside_a_string_stays_forbidden_when_put_on_one_line() {
    let cases: [(&[u8], &[u8]); 4] = [
        // Between tokens: whitespace, a space.
        (b"{\n\"a\":\r\"b\"}", b"{ \"a\": \"b\"}"),
        // Inside a string, even after an escaped quote or an escaped backslash.
        (b"{\"a\":\"x\ny\"}", b"{\"a\":\"x\x1fy\"}"),
        (b"{\"a\":\"\\\"\r\"}", b"{\"a\":\"\\\"\x1f\"}"),
        (b"{\"a\\\\\":\n1}", b"{\"a\\\\\": 1}"),
    ];
    for (input, expected) in cases {
        let mut out = BytesMut::new();
        write_one_line(&mut out, input);
        assert_eq!(&out[..], expected, "{}", String::from_utf8_lossy(input));
    }
    // What was not JSON stays not JSON; what was stays the same value.
    let mut out = BytesMut::new();
    write_one_line(&mut out, b"{\"t\":\"a\nb\"}");
    assert!(serde_json::from_slice::<serde_json::Value>(&out).is_err());
    let mut out = BytesMut::new();
    write_one_line(&mut out, b"{\n\"t\" :\r\n[1,\n2]}");
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&out).unwrap()["t"][1], 2);
}

#[test]
fn a_request_with_a_null_id_is_refused() {
    let mut out = BytesMut::from(&b"kept"[..]);
    let msg: Outgoing<'_, RawJson<'_>> =
        Outgoing::Request { id: Id::Null, method: "m", params: None };
    assert!(matches!(msg.write(&mut out), Err(Error::NullRequestId)));
    assert_eq!(&out[..], b"kept");
}

#[test]
fn failed_serialisation_leaves_the_buffer_as_it_was() {
    let mut map = std::collections::HashMap::new();
    map.insert(vec![1u8], 1);
    let mut out = BytesMut::from(&b"kept"[..]);
    let msg = Outgoing::Notification { method: "m", params: Some(Json(&map)) };
    assert!(msg.write(&mut out).is_err());
    assert_eq!(&out[..], b"kept");
}

#[test]
fn a_payload_serialised_inside_another_payload_does_not_panic() {
    struct Nested;
    impl Serialize for Nested {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut inner = BytesMut::new();
            Json(&[1, 2]).write_json(&mut inner).map_err(serde::ser::Error::custom)?;
            s.serialize_str(std::str::from_utf8(&inner).map_err(serde::ser::Error::custom)?)
        }
    }
    let mut out = BytesMut::new();
    Outgoing::Result { id: Id::Num(1), result: Json(&Nested) }.write(&mut out).unwrap();
    assert_eq!(&out[..], b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"[1,2]\"}\n");
}
