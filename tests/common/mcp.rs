//! What the typed client's tests (`mcp_client.rs`) and the typed server's (`mcp_server.rs`)
//! both use: the protocol revisions, and the tools both servers register.

use std::borrow::Cow;

use mcpwire::mcp::types::{CallToolResult, ElicitParams, ElicitResult, InputRequest};
use mcpwire::server::{Call, HandlerError};

/// The legacy era's latest revision.
pub const LEGACY: &str = "2025-11-25";

/// The modern (stateless) era's revision.
pub const MODERN: &str = "2026-07-28";

/// The form `ask_name` elicits: one required string, `name`.
pub const FORM: &str =
    r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#;

/// `greet`: "hello" and its `who` argument.
pub async fn greet(call: Call) -> Result<CallToolResult<'static>, HandlerError> {
    #[derive(serde::Deserialize)]
    struct Args<'a> {
        #[serde(borrow)]
        who: Cow<'a, str>,
    }
    let a: Args<'_> = call.arguments()?;
    Ok(CallToolResult::text(format!("hello {}", a.who)))
}

/// `ask_name`: asks the client for a name with [`FORM`], then "hi" and the name.
pub async fn ask_name(call: Call) -> Result<CallToolResult<'static>, HandlerError> {
    let a = call.ask("name", InputRequest::elicit(&ElicitParams::form("Name?", FORM))).await?;
    let a: ElicitResult<'_> = a.decode()?;
    Ok(CallToolResult::text(format!("hi {}", a.text("name")?.unwrap_or_default())))
}
