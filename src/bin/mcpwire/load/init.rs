//! `mcpwire load init TARGET`: a starting scenario from the server's `tools/list`, one
//! `tools/call` per tool with arguments generated from its `inputSchema` (as `cargo pmcp
//! loadtest init` does), and a `tools/list`.

use std::time::Duration;

use mcpwire::mcp::client::VersionChoice;
use mcpwire::peer::RequestOptions;
use serde_json::{Value, json};

use super::{Method, Mix, Model, Operation, Plan, SetupError, Shape, Target, connect, handshake};

/// The most `tools/list` pages `load init` follows: a server whose cursor never ends cannot
/// keep it listing.
const MAX_LIST_PAGES: usize = 100;

/// `load init`: connects, settles the era, lists the tools (following `nextCursor`) and
/// returns a starting scenario.
///
/// # Errors
///
/// The target cannot be reached, the handshake fails, or `tools/list` fails.
pub async fn init(target: Target, version: VersionChoice) -> Result<String, String> {
    let plan = Plan {
        target: target.clone(),
        model: Model::Closed(Shape::Constant(1.0)),
        capacity: None,
        requests: None,
        duration: Duration::ZERO,
        warmup: Duration::ZERO,
        mix: Mix::new(vec![Operation::single(Method::ToolsList, "", None)]),
        payload_bytes: 0,
        filler: String::new(),
        timeout: Duration::from_secs(30),
        protocol_version: version,
        hdr_log: None,
    };
    let name = target.to_string();
    let (peer, _conn) = connect(&plan)
        .await
        .map_err(|e| SetupError::Connect { target: name.clone(), source: e }.to_string())?;
    let agreed = handshake(&peer, &plan, &name)
        .await
        .map_err(|why| SetupError::Handshake { target: name.clone(), why }.to_string())?;
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor.as_ref().map(|c| serde_json::json!({"cursor": c}));
        let r = agreed
            .request(&peer, "tools/list", params.as_ref().map(mcpwire::Json), RequestOptions::new())
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let page: serde_json::Value =
            r.result_as().map_err(|e| format!("tools/list: not a result: {e}"))?;
        tools.extend(page["tools"].as_array().cloned().unwrap_or_default());
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    peer.close();
    Ok(init_toml(&name, &tools))
}

/// How deep `load init` follows nested object schemas; a deeper (or recursive) schema gets
/// `{}` there.
const MAX_SCHEMA_DEPTH: usize = 8;

/// Arguments that satisfy `schema` as far as a starting point can: every required property,
/// from its `default`, first `enum` value, `const`, or a value of its type within its bounds.
#[must_use]
pub fn example_value(schema: &Value, depth: usize) -> Value {
    if let Some(v) = schema.get("default").or_else(|| schema.get("const")) {
        return v.clone();
    }
    if let Some(v) = schema.get("enum").and_then(|e| e.get(0)) {
        return v.clone();
    }
    let ty = match &schema["type"] {
        Value::String(s) => s.as_str(),
        Value::Array(a) => {
            a.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null")
        }
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "integer" | "number" => {
            let lo = schema["minimum"]
                .as_f64()
                .or_else(|| schema["exclusiveMinimum"].as_f64().map(|m| m + 1.0));
            let v = match (lo, schema["maximum"].as_f64()) {
                (Some(l), _) => l,
                (None, Some(h)) => h.min(1.0),
                (None, None) => 1.0,
            };
            if ty == "integer" { json!(v.ceil() as i64) } else { json!(v) }
        }
        "boolean" => json!(false),
        "null" => Value::Null,
        "array" => {
            let n = schema["minItems"].as_u64().unwrap_or(0).min(4);
            let item =
                schema.get("items").map_or(json!("example"), |s| example_value(s, depth + 1));
            Value::Array(vec![item; n as usize])
        }
        "object" => {
            let mut out = serde_json::Map::new();
            if depth < MAX_SCHEMA_DEPTH
                && let (Some(props), Some(required)) =
                    (schema["properties"].as_object(), schema["required"].as_array())
            {
                for name in required.iter().filter_map(Value::as_str) {
                    let sub = props.get(name).cloned().unwrap_or(Value::Null);
                    out.insert(name.to_owned(), example_value(&sub, depth + 1));
                }
            }
            Value::Object(out)
        }
        _ => {
            let min = schema["minLength"].as_u64().unwrap_or(0).min(1024) as usize;
            let s = "example";
            json!(if s.len() >= min { s.to_owned() } else { "x".repeat(min) })
        }
    }
}

/// The scenario `load init` prints for a `tools/list` result: one `tools/call` per tool with
/// arguments from its `inputSchema`, and a `tools/list`.
#[must_use]
pub fn init_toml(target: &str, tools: &[Value]) -> String {
    let mut out = format!(
        "# A starting scenario for `mcpwire load --scenario`, written by `mcpwire load init`\n\
         # from the tools/list of {target}.\n\
         # Arguments come from each tool's inputSchema (defaults, enums, bounds): edit them,\n\
         # set weights, and add `expect_text`, `max_p99_ms`, `max_error_rate` where they matter.\n"
    );
    for tool in tools {
        let Some(name) = tool["name"].as_str() else { continue };
        let args = example_value(tool.get("inputSchema").unwrap_or(&json!({})), 0);
        let mut op = toml::Table::new();
        op.insert("method".into(), "tools/call".into());
        op.insert("tool".into(), name.into());
        if let Ok(toml::Value::Table(t)) = toml::Value::try_from(&args) {
            op.insert("arguments".into(), toml::Value::Table(t));
        }
        op.insert("weight".into(), 1.into());
        let mut doc = toml::Table::new();
        doc.insert("operation".into(), toml::Value::Array(vec![toml::Value::Table(op)]));
        if let Ok(s) = toml::to_string(&doc) {
            out.push('\n');
            out.push_str(&s);
        }
    }
    out.push_str("\n[[operation]]\nmethod = \"tools/list\"\nweight = 1\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::scenario::parse;

    #[test]
    fn init_writes_arguments_from_each_schema_and_parses_back() {
        let tools = vec![
            json!({"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}),
            json!({"name":"sleep","inputSchema":{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":60000}},"required":["ms"]}}),
            json!({"name":"pick","inputSchema":{"type":"object","properties":{"c":{"enum":["red","blue"]},"n":{"type":"number","default":2.5},"o":{"type":"object","properties":{"b":{"type":"boolean"}},"required":["b"]}},"required":["c","n","o"]}}),
        ];
        let text = init_toml("embedded", &tools);
        let ops = parse(&text).unwrap();
        assert_eq!(ops.len(), 4);
        assert_eq!(ops[0].arguments, Some(json!({"message":"example"})));
        assert_eq!(ops[1].arguments, Some(json!({"ms":0})));
        assert_eq!(ops[2].arguments, Some(json!({"c":"red","n":2.5,"o":{"b":false}})));
        assert_eq!(ops[3].method, Method::ToolsList);
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
}
