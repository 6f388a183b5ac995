// The test types' fields are read through their `Debug` text, which rustc does not count.
#![allow(dead_code)]

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::client::decoded::{Cart, Decoded};
use crate::mcp::types::{CallToolResult, ListToolsResult};
use crate::message::members::Members;
use crate::peer::Incoming;
use crate::{Frame, FrameParser};

/// A response whose `result` is `result`, as the client has it.
fn answer(result: &str) -> Incoming {
    let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
    let frame: Frame = FrameParser::parse_bytes_with(crate::Limits::default(), line.into());
    Incoming::own(frame)
}

/// `T` read from `result` member by member and with `serde_json` over the whole text: the same
/// value (by `Debug`), or both an error. Fails unless the parse recorded the members.
fn same<T>(result: &str) -> Result<String, String>
where
    T: for<'a> yoke::Yokeable<'a>,
    for<'a> <T as yoke::Yokeable<'a>>::Output: Deserialize<'a> + std::fmt::Debug,
{
    let cart = Cart::Result(answer(result));
    assert!(cart.members().unwrap().is_recorded(), "no members recorded for {result}");
    same_by_member::<T>(result)
}

/// [`same`] for any result, its members recorded by the parse or not (then scanned).
fn same_by_member<T>(result: &str) -> Result<String, String>
where
    T: for<'a> yoke::Yokeable<'a>,
    for<'a> <T as yoke::Yokeable<'a>>::Output: Deserialize<'a> + std::fmt::Debug,
{
    let cart = Cart::Result(answer(result));
    let whole = serde_json::from_str::<<T as yoke::Yokeable<'_>>::Output>(result)
        .map(|v| format!("{v:?}"))
        .map_err(|e| e.to_string());
    let by_members =
        Decoded::<T>::decode(cart).map(|d| format!("{:?}", d.get())).map_err(|e| e.to_string());
    match (&whole, &by_members) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{result}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{result}: whole text {whole:?}, by members {by_members:?}"),
    }
    by_members
}

#[test]
fn a_tool_result_read_member_by_member_is_the_one_serde_json_reads_from_the_whole_text() {
    let ok = [
        r#"{"content":[{"type":"text","text":"hi"}]}"#,
        r#"{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"},"n":[1,2,{"x":null}]}}"#,
        r#"{"_meta":{},"resultType":"complete","content":[{"type":"text","text":"a\"b\\u00e9"}],"isError":true}"#,
        r#"{ "content" : [ {"type":"text","text":"spaced"} ] , "structuredContent" : {"a": [1, 2.5e3, "x"]} }"#,
        r#"{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}],"structuredContent":null,"isError":false}"#,
        r#"{"content":[],"unknown":{"deep":[[[[{"k":"v"}]]]]},"other":"x\ny"}"#,
    ];
    for text in ok {
        assert!(same::<CallToolResult<'static>>(text).is_ok(), "{text}");
    }
    let refused = [
        // `content` missing, of the wrong type, given twice; `isError` not a bool.
        r#"{"resultType":"complete"}"#,
        r#"{"content":"text"}"#,
        r#"{"content":[],"content":[]}"#,
        r#"{"content":[],"isError":"yes"}"#,
        r#"{"content":[{"type":"text"}]}"#,
    ];
    for text in refused {
        assert!(same::<CallToolResult<'static>>(text).is_err(), "{text}");
    }
}

#[test]
fn a_tool_list_read_member_by_member_is_the_one_serde_json_reads() {
    let list = r#"{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"m":{"type":"string"}}},"annotations":{"readOnlyHint":true}}],"nextCursor":"c2","_meta":{"x":1}}"#;
    let page = same::<ListToolsResult<'static>>(list).unwrap();
    assert!(page.contains("echo") && page.contains("c2"), "{page}");
}

#[derive(Debug, Deserialize)]
struct Meters(f64);
#[derive(Debug, Deserialize)]
struct Point(i32, i32);
#[derive(Debug, Deserialize)]
struct Nothing;
#[derive(Debug, Deserialize)]
enum Tag {
    On,
}
#[derive(Debug, Deserialize)]
enum Shape {
    Square { side: u32 },
}

/// Every kind of field serde asks a deserializer for goes to `serde_json` as it would over the
/// whole text: options, newtypes, tuples, enums, maps, raw values, borrowed and escaped strings,
/// numbers of every width, and a flattened remainder.
#[test]
fn every_kind_of_field_is_read_as_serde_json_reads_it() {
    let text = r#"{"plain":"p","escaped":"e\u0301\n","small":-8,"big":18446744073709551615,"float":1.5,"flag":true,"letter":"z","maybe":7,"newtype":2.5,"pair":[1,"two"],"tuple_struct":[3,-4],"unit":null,"unit_struct":null,"tag":"On","data":{"Square":{"side":9}},"map":{"a":1,"b":-2},"raw":{"kept":[1, 2]},"bytes":[1,2,255],"extra":{"x":[true]},"more":"m"}"#;
    // More than eight members: the parse records none, and they are scanned.
    assert!(!Cart::Result(answer(text)).members().unwrap().is_recorded());
    // Eight at a time, each group against serde_json.
    let groups = [
        r#"{"plain":"p","escaped":"e\u0301\n","small":-8,"big":18446744073709551615,"float":1.5,"flag":true,"letter":"z","maybe":7}"#,
        r#"{"newtype":2.5,"pair":[1,"two"],"tuple_struct":[3,-4],"unit":null,"unit_struct":null,"tag":"On","data":{"Square":{"side":9}},"map":{"a":1,"b":-2}}"#,
        r#"{"raw":{"kept":[1, 2]},"bytes":[1,2,255],"extra":{"x":[true]},"more":"m"}"#,
    ];
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    struct First<'a> {
        #[serde(borrow)]
        plain: &'a str,
        #[serde(borrow)]
        escaped: Cow<'a, str>,
        small: i8,
        big: u128,
        float: f32,
        flag: bool,
        letter: char,
        maybe: Option<u16>,
        missing: Option<u16>,
    }
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    struct Second {
        newtype: Meters,
        pair: (u8, String),
        tuple_struct: Point,
        unit: (),
        unit_struct: Nothing,
        tag: Tag,
        data: Shape,
        map: BTreeMap<String, i64>,
    }
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    struct Third<'a> {
        #[serde(borrow)]
        raw: &'a RawValue,
        bytes: Vec<u8>,
        #[serde(flatten)]
        rest: BTreeMap<String, serde_json::Value>,
    }
    let first = same::<First<'static>>(groups[0]).unwrap();
    assert!(first.contains("18446744073709551615"), "{first}");
    assert!(first.contains(r#"escaped: "e\u{301}\n""#), "{first}");
    let second = same::<Second>(groups[1]).unwrap();
    assert!(second.contains("Square { side: 9 }"), "{second}");
    let third = same::<Third<'static>>(groups[2]).unwrap();
    assert!(third.contains(r#"RawValue({"kept":[1, 2]})"#), "{third}");
    assert!(third.contains(r#""more": String("m")"#), "{third}");
    // And the whole text, scanned: the flattened remainder has every other member.
    let whole = same_whole::<Third<'static>>(text);
    assert!(whole.contains(r#""tag": String("On")"#), "{whole}");
    assert!(whole.contains(r#""plain": String("p")"#), "{whole}");
}

/// `T` read from a result the parse did not record (its members scanned).
fn same_whole<T>(result: &str) -> String
where
    T: for<'a> yoke::Yokeable<'a>,
    for<'a> <T as yoke::Yokeable<'a>>::Output: Deserialize<'a> + std::fmt::Debug,
{
    let d = Decoded::<T>::decode(Cart::Result(answer(result))).unwrap();
    format!("{:?}", d.get())
}

/// A member the type does not have is not read: a value that is not JSON at all, in a member
/// the type skips, passes (the parse checks the frame, so this cannot come off the wire; here it
/// shows the skip reads nothing), where a read of it fails.
#[test]
fn a_member_the_type_does_not_have_is_not_read() {
    #[derive(Debug, Deserialize)]
    struct Only {
        a: u8,
    }
    let members = Members::scanned(r#"{"a":1,"skipped":{not json}}"#);
    let v: Only = Only::deserialize(super::ByMember::new(members)).unwrap();
    assert_eq!(v.a, 1);
    let read = Members::scanned(r#"{"a":{not json}}"#);
    assert!(Only::deserialize(super::ByMember::new(read)).is_err());
}

/// A type that is not a struct is read from the whole object's text, as `serde_json` reads it:
/// an externally tagged enum, a map whose keys are numbers, a raw value, a newtype, a struct
/// with a flattened remainder (serde reads it as a map), `serde_json::Value`, an untagged enum.
#[test]
fn what_is_not_a_struct_is_read_from_the_whole_text() {
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    enum Tagged {
        A(u8),
    }
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    struct Keys(BTreeMap<u32, bool>);
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    struct Whole<'a>(#[serde(borrow)] &'a RawValue);
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    struct Flat {
        a: u8,
        #[serde(flatten)]
        rest: BTreeMap<String, u8>,
    }
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    #[serde(untagged)]
    enum Either {
        Num { n: u8 },
        Text { t: String },
    }
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    struct Any(serde_json::Value);
    assert_eq!(same::<Tagged>(r#"{"A":1}"#).unwrap(), "A(1)");
    assert_eq!(same::<Keys>(r#"{"1":true,"20":false}"#).unwrap(), "Keys({1: true, 20: false})");
    assert!(same::<Whole<'static>>(r#"{"x":[1, 2]}"#).unwrap().contains(r#"{"x":[1, 2]}"#));
    assert_eq!(same::<Flat>(r#"{"a":1,"b":2}"#).unwrap(), r#"Flat { a: 1, rest: {"b": 2} }"#);
    assert_eq!(same::<Either>(r#"{"t":"x"}"#).unwrap(), r#"Text { t: "x" }"#);
    assert!(same::<Any>(r#"{"k":{"deep":[null]}}"#).unwrap().contains("deep"));
    assert!(same::<Tagged>(r#"{"B":1}"#).is_err());
}

/// A struct with `deny_unknown_fields` refuses a member it does not have, as over the whole text.
#[test]
fn a_struct_that_denies_unknown_members_refuses_one() {
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        a: u8,
    }
    assert!(same::<Strict>(r#"{"a":1}"#).is_ok());
    assert!(same::<Strict>(r#"{"a":1,"b":2}"#).is_err());
}

/// A result the parse did not record (more members than it records, a key written with an
/// escape, a key past its offsets) is scanned and read member by member, as `serde_json` reads
/// the whole text.
#[test]
fn a_result_the_parse_did_not_record_is_read_as_serde_json_reads_it() {
    #[derive(Debug, Deserialize, yoke::Yokeable)]
    struct Named<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
        n: Option<u8>,
    }
    let many = (0..9).map(|i| format!(r#""k{i}":{i}"#)).collect::<Vec<_>>().join(",");
    let long = "x".repeat(70_000);
    for (result, recorded) in [
        (format!(r#"{{{many},"name":"ninth","n":9}}"#), false),
        (r#"{"n\u0061me":"escaped","n":1}"#.to_owned(), false),
        (format!(r#"{{"pad":"{long}","name":"far"}}"#), false),
        (r#"{"name":"a","name":"b"}"#.to_owned(), true),
        (r#"{"n\u0061me":"a","name":"b"}"#.to_owned(), false),
        (r#"{ "name" : "spaced" , "n" : null }"#.to_owned(), true),
    ] {
        let cart = Cart::Result(answer(&result));
        assert_eq!(cart.members().unwrap().is_recorded(), recorded, "{result:.80}");
        let _ = same_by_member::<Named<'static>>(&result);
    }
    assert!(same_by_member::<Named<'static>>(r#"{"n\u0061me":"a","name":"b"}"#).is_err());
    assert!(same_by_member::<Option<Named<'static>>>("null").is_ok());
}
