//! Form elicitation on the client's side: the defaults a server's `requestedSchema` names,
//! applied to the content a client accepts with (SEP-1034, 2025-11-25 on).
//!
//! A server asking for a form may give each field a `default`; a client that accepts the form
//! with a field left out sends the default in its place, so the server gets a complete answer
//! without having to know which fields the user touched. The same answer serves a legacy
//! `elicitation/create` request and a modern `inputRequests` entry of that method.
//!
//! A default is applied only where it is a value the field may hold (a string for a string,
//! an integral number for an integer, any number for a number, a boolean for a boolean, an
//! array of strings for a multi-select array): content the server would refuse is never made
//! up. Nothing here grows past the schema the server sent, which the frame limit already bounds.

use serde_json::{Map, Value};

use crate::message::RawJson;

/// The `elicitation/create` method.
pub const ELICIT: &str = "elicitation/create";

/// Whether `value` is a value the schema property `property` may hold as its default: a
/// primitive of the property's `type` (an integer for `integer`), or an array of strings for
/// an `array` property; one of its choices (and its items' choices) when it offers some.
fn fits(property: &Map<String, Value>, value: &Value) -> bool {
    match property.get("type").and_then(Value::as_str) {
        Some("string") => value.is_string() && chosen(property, value),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("array") => value.as_array().is_some_and(|a| {
            let items = property.get("items").and_then(Value::as_object);
            a.iter().all(|v| v.is_string() && items.is_none_or(|i| chosen(i, v)))
        }),
        // An enum without a type: its members say what fits.
        None => property
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|members| members.contains(value)),
        Some(_) => false,
    }
}

/// Whether `value` is one of the choices `property` offers (`enum`, or the `const` of each
/// `oneOf` / `anyOf` member of a titled enum); true when it offers none.
fn chosen(property: &Map<String, Value>, value: &Value) -> bool {
    if let Some(members) = property.get("enum").and_then(Value::as_array) {
        return members.contains(value);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = property.get(key).and_then(Value::as_array) {
            return options.iter().any(|o| o.get("const") == Some(value));
        }
    }
    true
}

/// Fills in `content` each field of `requested_schema` that `content` leaves out (or holds
/// `null`) and whose property names a `default` that fits it; returns how many were filled.
/// Fields the content already holds are kept as they are.
///
/// # Examples
///
/// ```
/// use mcpwire::mcp::elicitation::apply_defaults;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "name": {"type": "string", "default": "John Doe"},
///     "age": {"type": "integer", "default": 30},
///     "note": {"type": "string"}}});
/// let mut content = serde_json::Map::new();
/// content.insert("age".into(), json!(41));
/// assert_eq!(apply_defaults(&schema, &mut content), 1);
/// assert_eq!(json!(content), json!({"name": "John Doe", "age": 41}));
/// ```
pub fn apply_defaults(requested_schema: &Value, content: &mut Map<String, Value>) -> usize {
    let Some(properties) = requested_schema.get("properties").and_then(Value::as_object) else {
        return 0;
    };
    let mut filled = 0;
    for (name, property) in properties {
        let Some(property) = property.as_object() else { continue };
        let Some(default) = property.get("default") else { continue };
        if content.get(name).is_some_and(|v| !v.is_null()) || !fits(property, default) {
            continue;
        }
        content.insert(name.clone(), default.clone());
        filled += 1;
    }
    filled
}

/// The `ElicitResult` of a client that accepts the form of an `elicitation/create` request
/// whose params are `params`, with `content` completed by the schema's defaults
/// ([`apply_defaults`]): `{"action":"accept","content":{…}}`.
///
/// # Errors
///
/// When `params` is not an object with a `requestedSchema` object, or asks for a URL
/// elicitation (`"mode": "url"`), which has no form to fill.
///
/// # Examples
///
/// ```
/// use mcpwire::RawJson;
/// use mcpwire::mcp::elicitation::accept_with_defaults;
///
/// let params = r#"{"message":"ok?","requestedSchema":{"type":"object","properties":{
///     "verified":{"type":"boolean","default":true}}}}"#;
/// let result = accept_with_defaults(RawJson::new(params), serde_json::Map::new()).unwrap();
/// assert_eq!(result, serde_json::json!({"action": "accept", "content": {"verified": true}}));
/// ```
pub fn accept_with_defaults(
    params: RawJson<'_>,
    mut content: Map<String, Value>,
) -> Result<Value, String> {
    let params: Value =
        serde_json::from_str(params.get()).map_err(|e| format!("{ELICIT}: params: {e}"))?;
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return Err(format!("{ELICIT}: a URL elicitation has no form to accept"));
    }
    let schema = params
        .get("requestedSchema")
        .filter(|s| s.is_object())
        .ok_or_else(|| format!("{ELICIT}: params carry no requestedSchema object"))?;
    apply_defaults(schema, &mut content);
    Ok(serde_json::json!({ "action": "accept", "content": content }))
}

#[cfg(test)]
mod tests;
