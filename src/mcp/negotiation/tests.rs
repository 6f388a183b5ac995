use super::*;

const MODERN: [&str; 1] = ["2026-07-28"];
const LEGACY: [&str; 2] = ["2025-11-25", "2025-06-18"];
const TRIED: &str = "2026-07-28";

fn decide_(answer: ProbeAnswer<'_>) -> Decision {
    decide(answer, &MODERN, &LEGACY, TRIED)
}

fn legacy_at(d: &Decision) -> &str {
    match d {
        Decision::Legacy { version, .. } => version,
        other => panic!("legacy expected, got {other:?}"),
    }
}

fn err(code: ErrorCode, data: Option<&str>) -> ProbeAnswer<'_> {
    ProbeAnswer::Error { code, data: data.map(RawJson::new) }
}

#[test]
fn a_discover_result_is_modern_at_the_newest_mutual_version() {
    let r = RawJson::new(
        r#"{"resultType":"complete","supportedVersions":["2027-01-01","2026-07-28"],"capabilities":{}}"#,
    );
    assert_eq!(decide_(ProbeAnswer::Result(r)), Decision::Modern { version: "2026-07-28".into() });
    // Two modern versions offered: the newer mutual one wins, whatever the server's order.
    let r = RawJson::new(r#"{"supportedVersions":["2026-07-28","2027-01-01"]}"#);
    assert_eq!(
        decide(ProbeAnswer::Result(r), &["2027-01-01", "2026-07-28"], &LEGACY, TRIED),
        Decision::Modern { version: "2027-01-01".into() }
    );
}

#[test]
fn a_discover_result_with_only_a_legacy_version_in_common_is_spoken_to_in_legacy() {
    let r = RawJson::new(r#"{"supportedVersions":["2027-01-01","2025-06-18"]}"#);
    assert_eq!(legacy_at(&decide_(ProbeAnswer::Result(r))), "2025-06-18");
    let r = RawJson::new(r#"{"supportedVersions":["2027-01-01"]}"#);
    assert_eq!(
        decide_(ProbeAnswer::Result(r)),
        Decision::NoMutualVersion { supported: vec!["2027-01-01".into()] }
    );
}

#[test]
fn a_result_that_is_not_a_discover_result_is_legacy() {
    for r in [
        "{}",
        "[]",
        "null",
        r#"{"supportedVersions":"2026-07-28"}"#,
        r#"{"supportedVersions":[1]}"#,
    ] {
        assert_eq!(legacy_at(&decide_(ProbeAnswer::Result(RawJson::new(r)))), "2025-11-25", "{r}");
    }
}

#[test]
fn unsupported_version_with_a_mutual_version_is_modern_at_it() {
    let data = r#"{"supported":["2026-07-28","2025-11-25"],"requested":"2027-01-01"}"#;
    let d = decide(
        err(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, Some(data)),
        &["2027-01-01", "2026-07-28"],
        &LEGACY,
        "2027-01-01",
    );
    assert_eq!(d, Decision::Modern { version: "2026-07-28".into() });
}

#[test]
fn unsupported_version_without_a_mutual_version() {
    // A legacy version in common: legacy, never a second modern try.
    let data = r#"{"supported":["2027-01-01","2025-11-25"],"requested":"2026-07-28"}"#;
    let d = decide_(err(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, Some(data)));
    assert_eq!(legacy_at(&d), "2025-11-25");
    // Nothing in common.
    let data = r#"{"supported":["2027-01-01"],"requested":"2026-07-28"}"#;
    assert_eq!(
        decide_(err(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, Some(data))),
        Decision::NoMutualVersion { supported: vec!["2027-01-01".into()] }
    );
    // -32022 that does not say what it supports is not recognized: legacy.
    for data in [None, Some("{}"), Some(r#"{"supported":"x"}"#), Some("7")] {
        let d = decide_(err(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, data));
        assert_eq!(legacy_at(&d), "2025-11-25", "{data:?}");
    }
}

#[test]
fn header_mismatch_and_missing_capability_are_modern_at_the_version_tried() {
    for code in [ErrorCode::HEADER_MISMATCH, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY] {
        assert_eq!(decide_(err(code, None)), Decision::Modern { version: TRIED.into() });
    }
}

#[test]
fn any_other_error_is_legacy() {
    for code in [
        ErrorCode::METHOD_NOT_FOUND,
        ErrorCode::INVALID_PARAMS,
        ErrorCode::INVALID_REQUEST,
        ErrorCode::INTERNAL_ERROR,
        ErrorCode(-32000),
        ErrorCode(-32001),
    ] {
        let d = decide_(err(code, Some(r#"{"supported":["2026-07-28"]}"#)));
        assert_eq!(legacy_at(&d), "2025-11-25", "{code:?}");
    }
}

/// Over HTTP a 4xx whose body is not a JSON-RPC error reaches the peer as the transport's
/// own -32603: legacy.
#[test]
fn a_4xx_with_a_body_that_is_not_json_rpc_is_legacy() {
    let d = decide_(err(ErrorCode::INTERNAL_ERROR, None));
    assert_eq!(legacy_at(&d), "2025-11-25");
}

#[test]
fn no_answer_is_legacy_and_without_a_legacy_offer_not_modern() {
    assert_eq!(legacy_at(&decide_(ProbeAnswer::NoAnswer)), "2025-11-25");
    assert!(matches!(
        decide(ProbeAnswer::NoAnswer, &MODERN, &[], TRIED),
        Decision::NotModern { reason } if reason.contains("no answer")
    ));
    let e = err(ErrorCode::METHOD_NOT_FOUND, None);
    assert!(matches!(decide(e, &MODERN, &[], TRIED), Decision::NotModern { .. }));
}

#[test]
fn the_retry_rule_takes_another_offered_version_the_server_supports() {
    let c = ErrorCode::UNSUPPORTED_PROTOCOL_VERSION;
    let data = RawJson::new(r#"{"supported":["2026-07-28"],"requested":"2027-01-01"}"#);
    let offered = ["2027-01-01", "2026-07-28"];
    assert_eq!(retry_version(c, Some(data), &offered, "2027-01-01").as_deref(), Some("2026-07-28"));
    // The version tried is never tried again.
    assert_eq!(retry_version(c, Some(data), &offered, "2026-07-28"), None);
    assert_eq!(retry_version(c, Some(data), &["2027-01-01"], "2027-01-01"), None);
    assert_eq!(retry_version(c, None, &offered, "2027-01-01"), None);
    assert_eq!(retry_version(ErrorCode::INVALID_PARAMS, Some(data), &offered, "2027-01-01"), None);
}

fn written(meta: &RequestMeta, params: Option<&str>) -> Result<String, crate::Error> {
    let mut out = BytesMut::from(&b"prefix:"[..]);
    meta.params(params.map(RawJson::new)).write_json(&mut out)?;
    assert!(out.starts_with(b"prefix:"));
    Ok(String::from_utf8(out[7..].to_vec()).unwrap())
}

#[test]
fn meta_is_spliced_into_params_without_touching_them() {
    let meta = RequestMeta::new(
        "2026-07-28",
        RawJson::new(r#"{"roots":{}}"#),
        Some(RawJson::new(r#"{"name":"c","version":"1"}"#)),
    );
    let m = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}"#;
    assert_eq!(written(&meta, None).unwrap(), format!("{{{m}}}"));
    assert_eq!(written(&meta, Some("{}")).unwrap(), format!("{{{m}}}"));
    assert_eq!(written(&meta, Some(" { } ")).unwrap(), format!("{{{m} }} "));
    // Members as written: spacing, escapes and number forms kept.
    assert_eq!(
        written(&meta, Some(r#"{"name":"echo", "arguments":{"n":1.50,"s":"a\"b"}}"#)).unwrap(),
        format!(r#"{{{m},"name":"echo", "arguments":{{"n":1.50,"s":"a\"b"}}}}"#)
    );
    // A key written with escapes may spell `_meta`: read, not guessed.
    let out = written(&meta, Some(r#"{"\u005fmeta":{"progressToken":1},"v":"\u00e9"}"#)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["_meta"]["progressToken"], 1, "{out}");
    assert_eq!(v["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28", "{out}");
    assert!(out.contains(r#""v":"\u00e9""#), "{out}");
    // A `_meta` key inside another member is not theirs.
    assert_eq!(
        written(&meta, Some(r#"{"arguments":{"_meta":1}}"#)).unwrap(),
        format!(r#"{{{m},"arguments":{{"_meta":1}}}}"#)
    );
    for bad in ["[1]", "7", "\"s\"", "null"] {
        assert!(written(&meta, Some(bad)).is_err(), "{bad}");
    }
}

#[test]
fn an_own_meta_keeps_its_other_members_and_loses_the_three() {
    let meta = RequestMeta::new("2026-07-28", RawJson::new("{}"), None);
    let out = written(
        &meta,
        Some(r#"{"name":"x","_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}"#),
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["_meta"]["progressToken"], 7);
    assert_eq!(v["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
    assert_eq!(v["name"], "x");
    assert_eq!(out.matches(PROTOCOL_VERSION_KEY).count(), 1, "{out}");
    let out = written(&meta, Some(r#"{"_meta":null,"a":1}"#)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
    assert!(written(&meta, Some(r#"{"_meta":{},"_meta":{}}"#)).is_err());
    assert!(written(&meta, Some(r#"{"_meta":[1]}"#)).is_err());
}

#[test]
fn at_version_changes_only_the_version() {
    let meta = RequestMeta::new("2027-01-01", RawJson::new("{}"), None);
    let next = meta.at_version("2026-07-28");
    assert_eq!(next.version(), "2026-07-28");
    assert_eq!(next, RequestMeta::new("2026-07-28", RawJson::new("{}"), None));
}

#[test]
fn version_choices_parse() {
    assert_eq!("auto".parse::<VersionChoice>().unwrap(), VersionChoice::Auto);
    let m: VersionChoice = "2026-07-28".parse().unwrap();
    assert_eq!((m.modern(), m.legacy()), (vec!["2026-07-28"], vec![]));
    let l: VersionChoice = "2025-06-18".parse().unwrap();
    assert_eq!((l.modern(), l.legacy()), (vec![], vec!["2025-06-18"]));
    assert_eq!(VersionChoice::Auto.legacy()[0], "2025-11-25");
    for bad in ["", "latest", "2026-07-29", "1900-01-01"] {
        assert!(bad.parse::<VersionChoice>().is_err(), "{bad}");
    }
}
