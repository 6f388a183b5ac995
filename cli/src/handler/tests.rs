use super::*;

#[test]
fn the_fixed_results_are_json_and_the_tools_annotated() {
    for (what, json) in [("tools", TOOLS), ("modern tools", MODERN_TOOLS), ("discover", DISCOVER)] {
        let v: serde_json::Value =
            serde_json::from_str(json).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(v.is_object(), "{what}");
    }
    let v: serde_json::Value = serde_json::from_str(MODERN_TOOLS).unwrap();
    assert_eq!(v["ttlMs"].to_string(), TTL_MS);
    let (annotated, dropped) = mcp::annotations::ToolHeaders::from_tools_list(TOOLS).unwrap();
    assert!(dropped.is_empty());
    let route = annotated.get("route").unwrap();
    assert_eq!(route.iter().map(|p| p.token.as_str()).collect::<Vec<_>>(), ["Region", "Shard"]);
}

#[test]
fn results_are_finished_by_era() {
    let legacy: serde_json::Value =
        serde_json::from_str(finish(text("a\"b", false), false).as_json().get()).unwrap();
    assert_eq!(legacy, serde_json::json!({"content": [{"type": "text", "text": "a\"b"}]}));
    let modern: serde_json::Value =
        serde_json::from_str(finish(text("x", true), true).as_json().get()).unwrap();
    assert_eq!(modern["resultType"], "complete");
    assert_eq!(modern["isError"], true);
    assert_eq!(modern["_meta"][mcp::SERVER_INFO_KEY]["name"], "mcpwire");
}
