use super::*;
use crate::{Frame, FrameParser, Limits};

fn frame(params: &str) -> Frame {
    let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#);
    FrameParser::new(Limits::default()).parse(line.as_str().into())
}

/// The recorded members of `params` and of `_meta`, as (key, value) text.
type Pairs<'a> = Vec<(&'a str, &'a str)>;

fn recorded(f: &Frame) -> Option<(Pairs<'_>, Option<Pairs<'_>>)> {
    let (params, meta) = f.message()?.param_records()?;
    Some((params.iter().collect(), meta.map(|m| m.iter().collect())))
}

#[test]
fn members_of_params_and_meta_read_back_with_their_exact_values() {
    let f = frame(
        r#"{"name":"echo","arguments":{"a":[1,{"b":"}"}]},"_meta":{"p":"2026-07-28","c":{},"n":null},"z":-1.5e3}"#,
    );
    let (params, meta) = recorded(&f).unwrap();
    assert_eq!(
        params,
        [
            ("name", r#""echo""#),
            ("arguments", r#"{"a":[1,{"b":"}"}]}"#),
            ("_meta", r#"{"p":"2026-07-28","c":{},"n":null}"#),
            ("z", "-1.5e3"),
        ]
    );
    assert_eq!(meta.unwrap(), [("p", r#""2026-07-28""#), ("c", "{}"), ("n", "null")]);
}

#[test]
fn whitespace_around_keys_colons_commas_and_braces_is_left_out_of_values() {
    let f = frame("{ \"a\" :\t1 ,\n \"_meta\" : { \"k\" : \"v\" \r\n} , \"b\":[ 2 ] \n}");
    let (params, meta) = recorded(&f).unwrap();
    assert_eq!(params, [("a", "1"), ("_meta", "{ \"k\" : \"v\" \r\n}"), ("b", "[ 2 ]")]);
    assert_eq!(meta.unwrap(), [("k", r#""v""#)]);
}

#[test]
fn empty_objects_record_no_members() {
    assert_eq!(recorded(&frame("{}")).unwrap(), (vec![], None));
    let f = frame(r#"{"_meta":{}}"#);
    let (params, meta) = recorded(&f).unwrap();
    assert_eq!((params, meta.unwrap()), (vec![("_meta", "{}")], vec![]));
}

#[test]
fn eight_keys_in_all_are_recorded_and_a_ninth_is_left_to_the_scanner() {
    let keys = |n: usize| (0..n).map(|i| format!(r#""k{i}":{i}"#)).collect::<Vec<_>>().join(",");
    let f = frame(&format!("{{{}}}", keys(KEY_SLOTS)));
    let (params, _) = recorded(&f).unwrap();
    assert_eq!(params.len(), KEY_SLOTS);
    assert_eq!(params[KEY_SLOTS - 1], ("k7", "7"));
    assert!(recorded(&frame(&format!("{{{}}}", keys(KEY_SLOTS + 1)))).is_none());

    // `params` with six keys, one of them `_meta`: `_meta` is recorded with two keys, not three.
    let with_meta = |m: usize| format!(r#"{{{},"_meta":{{{}}}}}"#, keys(5), keys(m));
    let f = frame(&with_meta(2));
    let (params, meta) = recorded(&f).unwrap();
    assert_eq!((params.len(), meta.unwrap()), (6, vec![("k0", "0"), ("k1", "1")]));
    let f = frame(&with_meta(3));
    let (params, meta) = recorded(&f).unwrap();
    assert_eq!((params.len(), meta), (6, None));
}

#[test]
fn keys_up_to_64_kib_into_params_are_recorded_and_one_past_is_left_to_the_scanner() {
    // Phase 1 counts from the `params` key: `params":{"a":"` is 14 bytes before the padding, and
    // `","` 3 after it, so key `b` lies 17 + pad bytes from it.
    let with_pad = |pad: usize| frame(&format!(r#"{{"a":"{}","b":1}}"#, "x".repeat(pad)));
    let at_bound = with_pad(usize::from(u16::MAX) - 17);
    let (params, _) = recorded(&at_bound).unwrap();
    assert_eq!(params[1], ("b", "1"));
    assert_eq!(params[0].1.len(), usize::from(u16::MAX) - 17 + 2);
    assert!(recorded(&with_pad(usize::from(u16::MAX) - 16)).is_none());
}

#[test]
fn a_key_written_with_an_escape_leaves_its_object_unrecorded() {
    assert!(recorded(&frame(r#"{"n\u0061me":"x"}"#)).is_none());
    assert!(recorded(&frame(r#"{"a":1,"\"q\"":2}"#)).is_none());
    // In `_meta`: `params` is recorded, `_meta` is left to the scanner.
    let f = frame(r#"{"a":1,"_meta":{"\u0070":1}}"#);
    assert_eq!(recorded(&f).unwrap(), (vec![("a", "1"), ("_meta", r#"{"\u0070":1}"#)], None));
    // An escape in a value does not.
    let f = frame(r#"{"name":"a\"b\\","_meta":{"k":"\u00e9"}}"#);
    let (params, meta) = recorded(&f).unwrap();
    assert_eq!(params[0], ("name", r#""a\"b\\""#));
    assert_eq!(meta.unwrap(), [("k", r#""\u00e9""#)]);
}

#[test]
fn only_an_object_meta_is_recorded_and_only_object_params() {
    let f = frame(r#"{"_meta":[1],"x":2}"#);
    let (params, meta) = recorded(&f).unwrap();
    assert_eq!((params.len(), meta), (2, None));
    assert!(recorded(&frame("[1,2]")).is_none());
    // Of two `_meta`s the first object is recorded; a reader refuses the duplicate anyway.
    let f = frame(r#"{"_meta":{"a":1},"_meta":{"b":2}}"#);
    let (_, meta) = recorded(&f).unwrap();
    assert_eq!(meta.unwrap(), [("a", "1")]);
}

#[test]
fn each_batch_element_and_each_kind_has_its_own_table() {
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":1}},{"jsonrpc":"2.0","method":"b","params":{"y":{"_meta":2},"_meta":{"z":3}}},{"jsonrpc":"2.0","id":2,"result":{"x":1}},{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"m","data":{"x":1}}}]"#;
    let f = FrameParser::new(Limits::default().batches(true)).parse(batch.into());
    let items: Vec<_> = f.batch().unwrap().collect();
    let pairs = |i: usize| {
        items[i]
            .param_records()
            .map(|(p, m)| (p.iter().collect::<Vec<_>>(), m.map(|m| m.iter().collect::<Vec<_>>())))
    };
    assert_eq!(pairs(0), Some((vec![("x", "1")], None)));
    assert_eq!(
        pairs(1),
        Some((vec![("y", r#"{"_meta":2}"#), ("_meta", r#"{"z":3}"#)], Some(vec![("z", "3")])))
    );
    assert_eq!(pairs(2), None);
    assert_eq!(pairs(3), None);
    // The error's code and data share the table's slots and still read back.
    let e = items[3].error().unwrap();
    assert_eq!((e.code, e.data.unwrap().get()), (-32000, r#"{"x":1}"#));
}

#[test]
fn a_frame_parsed_from_the_scratch_or_in_place_records_the_same_table() {
    let line = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\n","_meta":{"b":true}}}"#;
    let staged = FrameParser::new(Limits::default()).parse(line.into());
    let mut codec = crate::JsonRpcCodec::new();
    let mut buf = bytes::BytesMut::from(format!("{line}\n{}\n", " ".repeat(128)).as_str());
    let in_place = tokio_util::codec::Decoder::decode(&mut codec, &mut buf).unwrap().unwrap();
    assert_eq!(recorded(&staged), recorded(&in_place));
    assert_eq!(recorded(&staged).unwrap().1.unwrap(), [("b", "true")]);
}

#[test]
fn a_string_is_plain_exactly_when_an_unescaped_quote_closes_it_at_its_unescaped_length() {
    // (written, its unescaped length, plain)
    for (written, len, plain) in [
        (r#""name""#, 4, true),
        (r#""""#, 0, true),
        (r#""n\u0061me""#, 4, false),
        (r#""ab\"""#, 3, false),
        (r#""ab\\""#, 3, false),
        (r#""\\""#, 1, false),
        (r#""a\/b""#, 3, false),
    ] {
        let found = super::super::escape::written_plain(written.as_bytes(), 1, len);
        assert_eq!(found, plain, "{written}");
    }
}

#[test]
fn a_success_responses_result_has_its_members_recorded_and_an_error_response_none() {
    let parse = |line: &str| FrameParser::new(Limits::default()).parse(line.into());
    let f = parse(
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"a":"}"}],"_meta":{"k":true},"resultType":"complete"}}"#,
    );
    let (result, meta) = f.message().unwrap().result_records().unwrap();
    assert_eq!(
        result.iter().collect::<Vec<_>>(),
        [
            ("content", r#"[{"a":"}"}]"#),
            ("_meta", r#"{"k":true}"#),
            ("resultType", r#""complete""#)
        ]
    );
    assert_eq!(meta.unwrap().iter().collect::<Vec<_>>(), [("k", "true")]);
    assert_eq!(f.message().unwrap().param_records(), None);
    for other in [
        r#"{"jsonrpc":"2.0","id":1,"result":[1]}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"m","data":{"x":1}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"x":1},"params":{"y":2}}"#,
    ] {
        assert_eq!(parse(other).message().unwrap().result_records(), None, "{other}");
    }
}

/// Objects that are hard to read, as `params`: whitespace anywhere, nesting, strings holding
/// structural characters, escapes in values and keys, keys named twice, more keys than the
/// table holds, a `_meta` that is not an object or holds more than fits.
fn tricky_objects() -> Vec<String> {
    let keys = |n: usize| (0..n).map(|i| format!(r#""k{i}":{i}"#)).collect::<Vec<_>>().join(",");
    let mut cases: Vec<String> = [
        "{}",
        r#"{"a":1}"#,
        "{ \"a\" :\t1 ,\n \"_meta\" : { \"k\" : \"v\" \r\n} , \"b\":[ 2 ] \n}",
        r#"{"a":{"b":{"c":[1,{"d":"}"}]}},"e":"]","name":[[],{}]}"#,
        r#"{"a":",}","b":"\\","n":"\"{"}"#,
        r#"{"n":-1.5e3,"t":true,"f":false,"z":null,"name":null}"#,
        r#"{"a":1,"a":2}"#,
        r#"{"name":"x","b":0,"name":"y"}"#,
        r#"{"_meta":{"a":1},"_meta":{"b":2}}"#,
        r#"{"_meta":{"a":1,"a":2},"b":1}"#,
        r#"{"name":"a\"b\\","_meta":{"k":"\u00e9"}}"#,
        r#"{"n\u0061me":"x","name":"y"}"#,
        r#"{"a":1,"_meta":{"\u0070":1,"n":2}}"#,
        r#"{"_meta":[1],"x":2}"#,
        r#"{"_meta":"{\"a\":1}","name":"s"}"#,
    ]
    .map(str::to_owned)
    .to_vec();
    cases.push(format!("{{{}}}", keys(KEY_SLOTS)));
    cases.push(format!("{{{},\"name\":\"ninth\"}}", keys(KEY_SLOTS)));
    cases.push(format!(r#"{{{},"_meta":{{{}}}}}"#, keys(5), keys(2)));
    cases.push(format!(r#"{{{},"_meta":{{{}}}}}"#, keys(5), keys(3)));
    cases.push(format!(r#"{{"a":"{}","name":1}}"#, "x".repeat(usize::from(u16::MAX))));
    cases
}

/// Everything a reader asks of [`Members`], as owned text: each member, the values of some
/// keys picked, the named members in order, and the same of the `_meta` value.
fn answers(m: Members<'_>) -> impl PartialEq + std::fmt::Debug {
    const KEYS: [&str; 5] = ["a", "name", "_meta", "b", "k1"];
    let each = |m: Members<'_>| {
        m.each().map(|e| {
            e.map(|m| m.map(|m| (m.key.to_owned(), m.value.to_owned()))).collect::<Vec<_>>()
        })
    };
    let pick = m.pick(KEYS).map(|v| v.map(|v| v.map(str::to_owned)));
    let mut found = vec![];
    let named = m
        .for_each_named(KEYS, |i, v| {
            found.push((i, v.to_owned()));
            Ok::<_, ScanError>(())
        })
        .map(|()| found);
    let meta = match m.pick(["_meta"]) {
        Ok([Some(v)]) => Some((
            each(m.meta(v)),
            m.meta(v).pick(["k", "n", "a"]).map(|v| v.map(|v| v.map(str::to_owned))),
        )),
        _ => None,
    };
    (each(m), pick, named, meta, m.may_name_meta())
}

#[test]
fn the_reader_answers_the_same_from_the_records_and_from_the_scan() {
    let mut recorded = 0;
    for params in tricky_objects() {
        let f = frame(&params);
        let members = f.message().unwrap().param_members().unwrap();
        recorded += usize::from(members.is_recorded());
        let text = f.message().unwrap().params().unwrap().get();
        assert_eq!(answers(members), answers(Members::scanned(text)), "{params:.80}");
    }
    // Most of the table is read from the records: the comparison is not of the scan with
    // itself.
    assert_eq!(recorded, 17);
}

#[test]
fn the_scan_s_errors_reach_every_reader() {
    for text in ["[1]", "1", r#"{"a":}"#, r#"{"a":1 "b":2}"#] {
        let m = Members::scanned(text);
        let scanned = Scan::new(text).map(|s| s.collect::<Result<Vec<_>, _>>().map(|_| ()));
        let err = scanned.and_then(|r| r).unwrap_err();
        assert_eq!(m.pick(["a"]).unwrap_err(), PickError::Scan(err), "{text}");
        let each = m.each().and_then(|e| e.collect::<Result<Vec<_>, _>>().map(|_| ()));
        assert_eq!(each.unwrap_err(), err, "{text}");
    }
}
