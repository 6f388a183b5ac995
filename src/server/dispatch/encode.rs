//! Encoding results: a modern result's `resultType` and `_meta` appended to its text, and a
//! tool's result written without serde's walk of its common text blocks.

use serde::Serialize;

use crate::mcp::types::{CallToolResult, Content};
use crate::peer::{Reply, RpcError};

/// A modern result: `result`'s members, then `resultType` and the server's identity in
/// `_meta` (as [`super::Finished`] writes them). Appended to the result's own text: serde's `flatten`
/// would write every member through a map, at several times the cost.
pub(in crate::server) fn modern_reply(
    json: String,
    result_type: &'static str,
    meta: &serde_json::value::RawValue,
) -> Result<Reply, RpcError> {
    typed_reply(json, result_type, Some(meta))
}

/// `result`'s members, then `resultType` and, when given, the server's identity in `_meta`
/// (a legacy-era result of the tasks extension carries no identity).
pub(in crate::server) fn typed_reply(
    json: String,
    result_type: &'static str,
    meta: Option<&serde_json::value::RawValue>,
) -> Result<Reply, RpcError> {
    typed_json(json, result_type, meta).map(Reply::raw_string)
}

/// The bytes [`typed_json`] appends to a result (with room to spare).
pub(in crate::server) fn typed_room(
    result_type: &str,
    meta: Option<&serde_json::value::RawValue>,
) -> usize {
    32 + result_type.len() + meta.map_or(0, |m| m.get().len())
}

/// The text of [`typed_reply`]: `json`'s members, then `resultType` (and `_meta` when given).
pub(in crate::server) fn typed_json(
    mut json: String,
    result_type: &'static str,
    meta: Option<&serde_json::value::RawValue>,
) -> Result<String, RpcError> {
    // Every result type is a struct: an object, written without whitespace.
    if json.pop() != Some('}') {
        return Err(RpcError::internal("the result is not a JSON object"));
    }
    if json.len() > 1 {
        json.push(',');
    }
    json.reserve(typed_room(result_type, meta));
    json.push_str(r#""resultType":""#);
    json.push_str(result_type);
    json.push('"');
    if let Some(meta) = meta {
        json.push_str(r#","_meta":"#);
        json.push_str(meta.get());
    }
    json.push('}');
    Ok(json)
}

/// A result as JSON text.
pub(super) fn encode<T: Serialize>(result: &T) -> Result<String, RpcError> {
    serde_json::to_string(result).map_err(cannot_encode)
}

fn cannot_encode(e: serde_json::Error) -> RpcError {
    RpcError::internal(format!("the result could not be serialised: {e}"))
}

/// A tool's result as JSON text: the text serde writes for it (`tool_results_are_written_as_serde_writes_them`
/// holds them equal), its text blocks (the common result) written here rather than through
/// serde's walk of the content enum.
///
/// `room` is what the caller will append (a modern result's `resultType` and `_meta`): it is
/// reserved with the rest, so the text is written in the one allocation.
pub(in crate::server) fn tool_json(
    result: &CallToolResult<'_>,
    room: usize,
) -> Result<String, RpcError> {
    // Every field named: one added to the type cannot be left out here.
    let CallToolResult { content, structured_content, is_error } = result;
    let texts: usize = content
        .iter()
        .map(|c| match c {
            Content::Text { text, .. } => text.len(),
            _ => 0,
        })
        .sum();
    let mut out = Vec::with_capacity(64 + texts + texts / 8 + room);
    out.extend_from_slice(br#"{"content":["#);
    for (i, block) in content.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match block {
            Content::Text { text, annotations: None } => {
                out.extend_from_slice(br#"{"type":"text","text":"#);
                serde_json::to_writer(&mut out, text.as_ref()).map_err(cannot_encode)?;
                out.push(b'}');
            }
            other => serde_json::to_writer(&mut out, other).map_err(cannot_encode)?,
        }
    }
    out.push(b']');
    if let Some(structured) = structured_content {
        out.extend_from_slice(br#","structuredContent":"#);
        serde_json::to_writer(&mut out, structured).map_err(cannot_encode)?;
    }
    if *is_error {
        out.extend_from_slice(br#","isError":true"#);
    }
    out.push(b'}');
    // SAFETY: serde_json writes UTF-8 (it escapes nothing into invalid sequences), and every
    // other byte written here is ASCII.
    Ok(unsafe { String::from_utf8_unchecked(out) })
}
