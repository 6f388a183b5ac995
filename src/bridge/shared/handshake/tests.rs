use super::*;

#[test]
fn a_client_gets_its_own_version_when_the_child_speaks_a_later_one() {
    let h = from_initialize(
        r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"c","version":"1"},"instructions":"hi"}"#,
        false,
    )
    .unwrap();
    assert_eq!(h.version, "2025-11-25");
    assert!(
        initialize_answer(&h, Some("2025-06-18")).contains(r#""protocolVersion":"2025-06-18""#)
    );
    assert_eq!(initialize_answer(&h, Some("2099-01-01")), h.result);
    assert_eq!(initialize_answer(&h, Some("nonsense")), h.result);
    let d: Value = serde_json::from_str(&h.discover).unwrap();
    assert_eq!(d["supportedVersions"][0], "2026-07-28");
    assert_eq!(d["capabilities"]["tools"], serde_json::json!({}));
    assert_eq!(d["instructions"], "hi");
    assert!(from_initialize("[]", false).is_err());
    serde_json::from_str::<Value>(&initialize_params()).unwrap();
    serde_json::from_str::<Value>(&envelope_params()).unwrap();
}

#[test]
fn a_modern_only_child_s_discover_result_answers_legacy_clients() {
    let h = from_discover(
        r#"{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"instructions":"hi","resultType":"complete","ttlMs":5,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"2"}}}"#,
    )
    .unwrap();
    assert!(h.modern && h.modern_only);
    assert_eq!(h.version, "2025-11-25");
    let init: Value = serde_json::from_str(&h.result).unwrap();
    assert_eq!(
        init,
        serde_json::json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "m", "version": "2"},
            "instructions": "hi",
        })
    );
    assert_eq!(h.server_info, r#"{"name":"m","version":"2"}"#);
    let older: Value = serde_json::from_str(&initialize_answer(&h, Some("2025-03-26"))).unwrap();
    assert_eq!(older["protocolVersion"], "2025-03-26");
    // No serverInfo: an empty one; not an object: refused.
    let bare = from_discover(r#"{"supportedVersions":["2026-07-28"]}"#).unwrap();
    assert_eq!(bare.server_info, "{}");
    assert!(from_discover("[1]").is_err());
    assert!(from_discover("nope").is_err());
}

#[test]
fn the_bridge_s_envelope_is_its_version_capabilities_and_name() {
    let expected = format!(
        r#"{{"_meta":{{"{PROTOCOL_VERSION_KEY}":"{}","{CLIENT_CAPABILITIES_KEY}":{BRIDGE_CAPABILITIES},"{CLIENT_INFO_KEY}":{{"name":"mcpwire-bridge","version":"{}"}}}}}}"#,
        mcp::MODERN_VERSIONS[0],
        env!("CARGO_PKG_VERSION"),
    );
    assert_eq!(envelope_params(), expected);
}
