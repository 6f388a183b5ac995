use super::*;

#[test]
fn a_client_gets_its_own_version_when_the_child_speaks_a_later_one() {
    let h = held(
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
    assert!(held("[]", false).is_err());
    serde_json::from_str::<Value>(&initialize_params()).unwrap();
    serde_json::from_str::<Value>(&discover_params()).unwrap();
}
