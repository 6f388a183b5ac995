use super::*;
use crate::peer::Incoming;
use crate::{ErrorCode, FrameParser, Limits};

/// A `tools/call` request with `params`.
fn request(params: &str) -> Incoming {
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
    Incoming::own(FrameParser::parse_bytes_with(Limits::default(), body.into()))
}

/// `params` read from the members the parse recorded, and by the scan.
fn both(req: &Incoming) -> (Result<ParamSlots, Rejection>, Result<ParamSlots, Rejection>) {
    let msg = req.message();
    let members = msg.param_members().unwrap();
    assert!(members.is_recorded(), "the parse recorded the members");
    (ParamSlots::of(Some(members)), ParamSlots::read(msg.params()))
}

#[test]
fn the_recorded_members_read_as_the_scan_reads_params() {
    let cases = [
        r#"{}"#,
        r#"{"name":"echo","arguments":{"message":"hi"},"_meta":{"k":1}}"#,
        r#"{ "name" : "echo" , "arguments" : null , "uri" : "file:///a" }"#,
        r#"{"_meta":null,"other":[1,2],"name":"x"}"#,
        r#"{"requestState":"s","inputResponses":{"a":{}},"name":"t"}"#,
        // Named twice: refused for the four checked members, kept as twice for the others.
        r#"{"requestState":"a","requestState":"b"}"#,
        r#"{"inputResponses":{},"inputResponses":{}}"#,
    ];
    for params in cases {
        let req = request(params);
        let (recorded, read) = both(&req);
        let (recorded, read) = (recorded.unwrap(), read.unwrap());
        assert_eq!(recorded.members, read.members, "{params}");
        assert!(recorded.is_read(), "{params}");
    }
}

#[test]
fn the_recorded_members_are_refused_as_the_scan_refuses_them() {
    let cases = [
        (r#"{"name":"a","name":"b"}"#, "Invalid params: params names name twice"),
        (r#"{"uri":"a","x":1,"uri":"b"}"#, "Invalid params: params names uri twice"),
        (r#"{"_meta":{},"_meta":{}}"#, "Invalid params: params names _meta twice"),
        (r#"{"arguments":[1]}"#, "Invalid params: arguments must be an object"),
        (r#"{"name":"t","_meta":"v"}"#, "Invalid params: _meta must be an object"),
        (
            r#"{"requestState":"a","requestState":"b","name":"x","name":"y"}"#,
            "Invalid params: params names name twice",
        ),
        // Of two refusals, the first met in the text.
        (
            r#"{"arguments":[1],"name":"a","name":"b"}"#,
            "Invalid params: arguments must be an object",
        ),
        (r#"{"name":"a","name":"b","arguments":[1]}"#, "Invalid params: params names name twice"),
    ];
    for (params, message) in cases {
        let req = request(params);
        let (recorded, read) = both(&req);
        let (recorded, read) = (recorded.unwrap_err(), read.unwrap_err());
        assert_eq!(recorded, read, "{params}");
        assert_eq!((recorded.code, &*recorded.message), (ErrorCode::INVALID_PARAMS, message));
    }
}

#[test]
fn of_request_reads_params_the_parse_did_not_record_by_the_scan() {
    // A key written with an escape is not recorded: the scan reads it.
    let req = request(r#"{"n\u0061me":"echo"}"#);
    let msg = req.message();
    assert!(!msg.param_members().unwrap().is_recorded());
    let known = ParamSlots::of_request(&req).unwrap();
    assert_eq!(known.get(msg.params(), Key::Name).unwrap().map(|v| v.get()), Some(r#""echo""#));
    let twice = request(r#"{"n\u0061me":"a","name":"b"}"#);
    assert!(ParamSlots::of_request(&twice).is_err());
}
