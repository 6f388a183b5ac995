//! The rmcp echo server both `benches/e2e.rs` and `benches/baselines/rmcp_http_echo.rs` measure
//! against mcpwire: `tools/list` lists `echo`, and `tools/call` of `echo` answers one text block
//! holding its `message` exactly.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

/// The echo server.
#[derive(Clone)]
pub struct RmcpEcho;

impl ServerHandler for RmcpEcho {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema: JsonObject = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        }))
        .unwrap();
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Returns its message exactly.",
            schema,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params(format!("Unknown tool: {}", request.name), None));
        }
        let message = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("message"))
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("echo: message must be a string", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(message)]).into())
    }
}
