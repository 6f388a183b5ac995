//! `mcpwire load init TARGET`: a starting scenario from the server's `tools/list`, one
//! `tools/call` per tool with arguments generated from its `inputSchema` (as `cargo pmcp
//! loadtest init` does), and a `tools/list`; when the server lists resources and prompts, a
//! `resources/read` of each resource and a `prompts/get` of each prompt (its required
//! arguments set to `"example"`), from the first page of each list.

use std::time::Duration;

use mcpwire::mcp::negotiation::VersionChoice;
use mcpwire::peer::RequestOptions;
use serde_json::{Value, json};

use super::{Method, Mix, Model, Operation, Plan, SetupError, Shape, connect, handshake};
use mcpwire::transport::Target;

/// The most `tools/list` pages `load init` follows: a server whose cursor never ends cannot
/// keep it listing.
const MAX_LIST_PAGES: usize = 100;

/// The most resources, and prompts, a starting scenario reads or gets: a server listing
/// thousands would otherwise make a scenario nobody reads.
const MAX_INIT_ITEMS: usize = 16;

/// The first page of `method`'s `key` list, or nothing when the server has no such list.
async fn first_page(
    agreed: &mcpwire::client::Negotiated,
    peer: &mcpwire::peer::PeerHandle,
    method: &str,
    key: &str,
) -> Vec<Value> {
    let r =
        match agreed.request(peer, method, mcpwire::peer::NO_PARAMS, RequestOptions::new()).await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(method, error = %e, "no list");
                return Vec::new();
            }
        };
    let page: Value = r.result_as().unwrap_or(Value::Null);
    let mut items = page[key].as_array().cloned().unwrap_or_default();
    items.truncate(MAX_INIT_ITEMS);
    items
}

/// `load init`: connects, settles the era, lists the tools (following `nextCursor`) and
/// returns a starting scenario.
///
/// # Errors
///
/// The target cannot be reached, the handshake fails, or `tools/list` fails.
pub async fn init(
    target: Target,
    version: VersionChoice,
    options: mcpwire::transport::ConnectOptions,
) -> Result<String, String> {
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
        http2: false,
        connect: options,
        tasks: false,
        replay: None,
        live: super::live::LiveArgs::default(),
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
    let resources = first_page(&agreed, &peer, "resources/list", "resources").await;
    let prompts = first_page(&agreed, &peer, "prompts/list", "prompts").await;
    peer.close();
    Ok(init_toml(&name, &tools, &resources, &prompts))
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

/// One `[[operation]]` table, as TOML.
fn push_op(out: &mut String, op: toml::Table) {
    let mut doc = toml::Table::new();
    doc.insert("operation".into(), toml::Value::Array(vec![toml::Value::Table(op)]));
    if let Ok(s) = toml::to_string(&doc) {
        out.push('\n');
        out.push_str(&s);
    }
}

/// The scenario `load init` prints: one `tools/call` per tool with arguments from its
/// `inputSchema`, a `tools/list`, a `resources/read` per resource and a `prompts/get` per
/// prompt.
#[must_use]
pub fn init_toml(target: &str, tools: &[Value], resources: &[Value], prompts: &[Value]) -> String {
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
        push_op(&mut out, op);
    }
    out.push_str("\n[[operation]]\nmethod = \"tools/list\"\nweight = 1\n");
    for resource in resources {
        let Some(uri) = resource["uri"].as_str() else { continue };
        let mut op = toml::Table::new();
        op.insert("method".into(), "resources/read".into());
        op.insert("uri".into(), uri.into());
        op.insert("weight".into(), 1.into());
        push_op(&mut out, op);
    }
    for prompt in prompts {
        let Some(name) = prompt["name"].as_str() else { continue };
        let mut args = toml::Table::new();
        for a in prompt["arguments"].as_array().into_iter().flatten() {
            if a["required"] == true
                && let Some(n) = a["name"].as_str()
            {
                args.insert(n.into(), "example".into());
            }
        }
        let mut op = toml::Table::new();
        op.insert("method".into(), "prompts/get".into());
        op.insert("prompt".into(), name.into());
        op.insert("arguments".into(), toml::Value::Table(args));
        op.insert("weight".into(), 1.into());
        push_op(&mut out, op);
    }
    out
}

#[cfg(test)]
mod tests;
