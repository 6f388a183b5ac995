//! `x-mcp-header`: tool parameters a tool's `inputSchema` mirrors into `Mcp-Param-{Name}` HTTP
//! headers (2026-07-28), read from the schema once, when the tool list is, and then used per
//! call by a server that validates the headers and a client that writes them.

use std::collections::HashMap;

use serde_json::Value;

/// The JSON Schema property that names a parameter's header.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// The JSON type of an annotated parameter: only these three may be mirrored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// `"type": "string"`: compared as text.
    String,
    /// `"type": "integer"`: compared as a number (`42` matches `42.0`).
    Integer,
    /// `"type": "boolean"`: `true` / `false`.
    Boolean,
}

/// One annotated parameter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamHeader {
    /// The chain of `properties` keys from the schema's root to the parameter.
    pub path: Vec<String>,
    /// The `x-mcp-header` value: the header is `Mcp-Param-{token}` (names compare without
    /// case).
    pub token: String,
    /// The parameter's type.
    pub kind: ParamKind,
    /// `mcp-param-{token}` in lower case, as `http` stores header names.
    pub header: String,
}

/// The annotated parameters of a tool's `inputSchema`, or why the schema's annotations make
/// the tool invalid (a client drops such a tool; a server should not list it).
///
/// An annotation is valid only on a property reached from the root through `properties` keys
/// alone (not through `items`, `oneOf`, `$ref` or any other keyword), with a non-empty token of
/// HTTP field-name characters, on a `string`, `integer` or `boolean` property, and unique
/// (without case) in the schema.
///
/// # Errors
///
/// The reason the annotations are invalid.
///
/// # Examples
///
/// ```
/// use mcpwire::mcp::annotations::{ParamKind, param_headers};
///
/// let schema = serde_json::json!({"type": "object", "properties": {
///     "region": {"type": "string", "x-mcp-header": "Region"}, "q": {"type": "string"}}});
/// let params = param_headers(&schema).unwrap();
/// assert_eq!(params[0].path, ["region"]);
/// assert_eq!(params[0].header, "mcp-param-region");
/// assert_eq!(params[0].kind, ParamKind::String);
///
/// let in_items = serde_json::json!({"type": "array", "items": {"type": "string", "x-mcp-header": "X"}});
/// assert!(param_headers(&in_items).is_err());
/// ```
pub fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    // Keywords whose values are schemas, where an annotation is out of reach.
    const SINGLE: [&str; 12] = [
        "items",
        "additionalItems",
        "contains",
        "unevaluatedItems",
        "additionalProperties",
        "propertyNames",
        "unevaluatedProperties",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    ];
    const LIST: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
    const MAP: [&str; 5] =
        ["patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"];
    let mut found = Vec::new();
    // (path from the root through `properties` only, or None once off it; the schema)
    let mut stack: Vec<(Option<Vec<String>>, &Value)> = vec![(Some(Vec::new()), schema)];
    while let Some((path, node)) = stack.pop() {
        let Value::Object(s) = node else { continue };
        if let Some(token) = s.get(X_MCP_HEADER) {
            let Some(path) = path.as_ref().filter(|p| !p.is_empty()) else {
                return Err(format!(
                    "{X_MCP_HEADER} on a schema not reached from the root through `properties` alone"
                ));
            };
            let at = path.join(".");
            let Value::String(token) = token else {
                return Err(format!("property {at:?}: {X_MCP_HEADER} must be a string"));
            };
            if token.is_empty() || !token.bytes().all(is_tchar) {
                return Err(format!(
                    "property {at:?}: {X_MCP_HEADER} {token:?} is not an HTTP field-name token"
                ));
            }
            let kind = match s.get("type").and_then(Value::as_str) {
                Some("string") => ParamKind::String,
                Some("integer") => ParamKind::Integer,
                Some("boolean") => ParamKind::Boolean,
                other => {
                    return Err(format!(
                        "property {at:?}: {X_MCP_HEADER} is allowed only on string, integer and \
                         boolean properties (type: {})",
                        other.unwrap_or("not one string")
                    ));
                }
            };
            let header = format!("mcp-param-{}", token.to_ascii_lowercase());
            if let Some(dup) = found.iter().find(|p: &&ParamHeader| p.header == header) {
                return Err(format!(
                    "property {at:?}: {X_MCP_HEADER} {token:?} repeats that of property {:?}",
                    dup.path.join(".")
                ));
            }
            found.push(ParamHeader { path: path.clone(), token: token.clone(), kind, header });
        }
        for (k, v) in s {
            match (k.as_str(), v) {
                ("properties", Value::Object(props)) => {
                    for (name, sub) in props {
                        let p = path.as_ref().map(|p| {
                            let mut p = p.clone();
                            p.push(name.clone());
                            p
                        });
                        stack.push((p, sub));
                    }
                }
                // `items` may be an array of schemas (draft 7), like `prefixItems`.
                ("items", Value::Array(l)) => stack.extend(l.iter().map(|v| (None, v))),
                (k, v) if SINGLE.contains(&k) => stack.push((None, v)),
                (k, Value::Array(l)) if LIST.contains(&k) => {
                    stack.extend(l.iter().map(|v| (None, v)));
                }
                (k, Value::Object(m)) if MAP.contains(&k) => {
                    stack.extend(m.values().map(|v| (None, v)));
                }
                _ => {}
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// An RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Each tool's annotated parameters, by tool name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolHeaders {
    tools: HashMap<String, Vec<ParamHeader>>,
}

/// A tool a `tools/list` result names whose annotations are invalid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The tool's name.
    pub tool: String,
    /// Why.
    pub reason: String,
}

impl ToolHeaders {
    /// No tool annotated.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The annotations of every tool in a `tools/list` result (`{"tools": [...]}`), and the
    /// tools left out because theirs are invalid. Tools with no annotation are not kept.
    ///
    /// # Errors
    ///
    /// When `result` is not JSON with a `tools` array.
    pub fn from_tools_list(result: &str) -> Result<(Self, Vec<Dropped>), serde_json::Error> {
        #[derive(serde::Deserialize)]
        struct List {
            tools: Vec<Value>,
        }
        let list: List = serde_json::from_str(result)?;
        let mut me = Self::default();
        let mut dropped = Vec::new();
        for tool in &list.tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else { continue };
            match tool.get("inputSchema").map_or(Ok(Vec::new()), param_headers) {
                Ok(params) => me.insert(name, params),
                Err(reason) => dropped.push(Dropped { tool: name.to_owned(), reason }),
            }
        }
        Ok((me, dropped))
    }

    /// Sets `tool`'s annotated parameters (none: the tool is forgotten).
    pub fn insert(&mut self, tool: &str, params: Vec<ParamHeader>) {
        if params.is_empty() {
            self.tools.remove(tool);
        } else {
            self.tools.insert(tool.to_owned(), params);
        }
    }

    /// `tool`'s annotated parameters.
    #[must_use]
    pub fn get(&self, tool: &str) -> Option<&[ParamHeader]> {
        self.tools.get(tool).map(Vec::as_slice)
    }

    /// Whether no tool is annotated.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests;
