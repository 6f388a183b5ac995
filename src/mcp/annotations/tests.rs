use serde_json::json;

use super::*;

#[test]
fn nested_properties_are_reachable_and_everything_else_is_not() {
    let ok = json!({"type":"object","properties":{"a":{"type":"object","properties":{
        "b":{"type":"integer","x-mcp-header":"B"}}},"c":{"type":"boolean","x-mcp-header":"c-1"}}});
    let p = param_headers(&ok).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].path, ["a", "b"]);
    assert_eq!(p[0].kind, ParamKind::Integer);
    assert_eq!(p[1].header, "mcp-param-c-1");
    for bad in [
        json!({"x-mcp-header":"Root","type":"string"}),
        json!({"properties":{"a":{"oneOf":[{"type":"string","x-mcp-header":"A"}]}}}),
        json!({"$defs":{"d":{"type":"string","x-mcp-header":"A"}}}),
        json!({"items":[{"type":"string","x-mcp-header":"A"}]}),
        json!({"additionalItems":{"type":"string","x-mcp-header":"A"}}),
        json!({"dependencies":{"a":{"properties":{"b":{"type":"string","x-mcp-header":"A"}}}}}),
        json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
        json!({"properties":{"a":{"type":["string","null"],"x-mcp-header":"A"}}}),
        json!({"properties":{"a":{"type":"string","x-mcp-header":""}}}),
        json!({"properties":{"a":{"type":"string","x-mcp-header":"a b"}}}),
        json!({"properties":{"a":{"type":"string","x-mcp-header":"a\r\nX: y"}}}),
        json!({"properties":{"a":{"type":"string","x-mcp-header":7}}}),
        json!({"properties":{"a":{"type":"string","x-mcp-header":"R"},"b":{"type":"string","x-mcp-header":"r"}}}),
    ] {
        assert!(param_headers(&bad).is_err(), "{bad}");
    }
}

#[test]
fn a_tools_list_keeps_valid_tools_and_names_the_dropped_ones() {
    let list = json!({"tools":[
        {"name":"good","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"R"}}}},
        {"name":"plain","inputSchema":{"type":"object"}},
        {"name":"bad","inputSchema":{"properties":{"r":{"type":"number","x-mcp-header":"R"}}}}
    ]});
    let (t, dropped) = ToolHeaders::from_tools_list(&list.to_string()).unwrap();
    assert_eq!(t.get("good").unwrap()[0].token, "R");
    assert!(t.get("plain").is_none());
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0].tool, "bad");
}

#[test]
fn a_deep_schema_is_walked_without_recursion() {
    let mut s = json!({"type":"string"});
    for _ in 0..10_000 {
        let mut m = serde_json::Map::new();
        m.insert("items".into(), s);
        s = Value::Object(m);
    }
    assert_eq!(param_headers(&s).unwrap(), Vec::new());
    // Dropping a deep `Value` recurses in serde_json; leak it instead of overflowing the
    // test thread's stack.
    std::mem::forget(s);
}
