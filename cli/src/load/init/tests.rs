use super::*;
use crate::load::scenario::parse;

#[test]
fn init_writes_arguments_from_each_schema_and_parses_back() {
    let tools = vec![
        json!({"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}),
        json!({"name":"sleep","inputSchema":{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":60000}},"required":["ms"]}}),
        json!({"name":"pick","inputSchema":{"type":"object","properties":{"c":{"enum":["red","blue"]},"n":{"type":"number","default":2.5},"o":{"type":"object","properties":{"b":{"type":"boolean"}},"required":["b"]}},"required":["c","n","o"]}}),
    ];
    let resources = vec![json!({"uri":"file:///a","name":"a"}), json!({"name":"no uri"})];
    let prompts =
        vec![json!({"name":"p","arguments":[{"name":"city","required":true},{"name":"state"}]})];
    let text = init_toml("embedded", &tools, &resources, &prompts);
    let ops = parse(&text).unwrap();
    assert_eq!(ops.len(), 6);
    assert_eq!(ops[0].arguments, Some(json!({"message":"example"})));
    assert_eq!(ops[1].arguments, Some(json!({"ms":0})));
    assert_eq!(ops[2].arguments, Some(json!({"c":"red","n":2.5,"o":{"b":false}})));
    assert_eq!(ops[3].method, Method::ToolsList);
    // A resource without a URI is left out; a prompt gets its required arguments only.
    assert_eq!((ops[4].method, ops[4].uri.as_deref()), (Method::ResourcesRead, Some("file:///a")));
    assert_eq!(ops[5].prompt.as_deref(), Some("p"));
    assert_eq!(ops[5].arguments, Some(json!({"city":"example"})));
    // A schema that nests deeper than the bound stops with {} there.
    let mut deep = json!({"type":"object"});
    for _ in 0..(MAX_SCHEMA_DEPTH + 2) {
        deep = json!({"type":"object","properties":{"a":deep},"required":["a"]});
    }
    let v = example_value(&deep, 0);
    let mut depth = 0;
    let mut cur = &v;
    while let Some(next) = cur.get("a") {
        depth += 1;
        cur = next;
    }
    assert_eq!(depth, MAX_SCHEMA_DEPTH);
}
