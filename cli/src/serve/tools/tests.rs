use super::*;

#[test]
fn the_tools_are_listed_by_era_and_route_is_annotated() {
    let s = server();
    let all: serde_json::Value = serde_json::from_str(s.tools_list_json()).unwrap();
    let names: Vec<_> = all["tools"].as_array().unwrap().iter().map(|t| &t["name"]).collect();
    assert_eq!(names, ["echo", "sleep", "route", "confirm", "test_reconnection"]);
    let (annotated, dropped) =
        mcpwire::mcp::annotations::ToolHeaders::from_tools_list(s.tools_list_json()).unwrap();
    assert!(dropped.is_empty());
    let route = annotated.get("route").unwrap();
    assert_eq!(route.iter().map(|p| p.token.as_str()).collect::<Vec<_>>(), ["Region", "Shard"]);
    // Fixed lists: tools are declared without listChanged.
    assert_eq!(s.capabilities().tools.unwrap().list_changed, None);
}
