//! The MCP server `mcpwire serve` runs, and `mcpwire load` drives in process: small,
//! well-behaved, and dual-era.
//!
//! - **Legacy** (2024-11-05 … 2025-11-25): `initialize`, `notifications/initialized`, `ping`,
//!   `tools/list`, `tools/call`, as a session.
//! - **Modern** (2026-07-28): a request whose `params._meta` names a protocol version is served
//!   on its own: its envelope is validated (-32602, or -32022 naming the versions served);
//!   `server/discover` describes the server; every result carries `resultType` and the
//!   server's identity in `_meta`; `tools/list` carries caching hints; `initialize`, `ping` and
//!   `logging/setLevel` are -32601; `subscriptions/listen` is acknowledged and then held open
//!   until cancelled (the tool list never changes, so nothing more is sent).
//!
//! A request with no modern `_meta` before any `initialize` is malformed for the modern era
//! (-32602); after `initialize` the connection (or HTTP session) is legacy.
//!
//! Tools: `echo`, `sleep` (cancellable, with progress), `route` (its `region` and `shard`
//! arguments are mirrored to `Mcp-Param-Region` / `Mcp-Param-Shard` over HTTP) and `confirm`
//! (asks the user through the client, as a 2026-07-28 multi round-trip request; it needs the
//! client's `elicitation` capability, -32021 without it); in the legacy era also
//! `test_reconnection`, the conformance suite's SEP-1699 tool (it closes its POST's event
//! stream with [`mcpwire::http::close_sse_stream`], waits 100 ms, then answers, so the client
//! must resume the stream to get the result; elsewhere it just waits and answers). Tool arguments are untrusted: a wrong
//! type or size is a tool result with `isError: true`, an unknown tool -32602, an unknown
//! method -32601.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use mcpwire::mcp::meta::{Envelope, RequestParams, modern_envelope};
use mcpwire::mcp::{self, MODERN_VERSIONS};
use mcpwire::peer::{Context, Handler, Incoming, Reply, RpcError};
use mcpwire::{ErrorCode, Json};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Protocol versions `initialize` agrees to, oldest first; a client offering another one is
/// answered with the latest.
pub const PROTOCOL_VERSIONS: [&str; 4] = mcpwire::http::PROTOCOL_VERSIONS;

/// The longest message `route` and `confirm` accept, in bytes. `echo` has no bound of its own:
/// the frame limit (`--max-frame-bytes`, 16 MiB by default) already bounds its request, and its
/// reply is the same text, so `load --payload-bytes` can go up to the frame limit.
pub const MAX_ECHO_BYTES: usize = 1 << 20;

/// The longest `sleep`, in milliseconds.
pub const MAX_SLEEP_MS: u64 = 60_000;

/// How long a client may keep a `tools/list` or `server/discover` result: the tools never
/// change while the server runs.
#[cfg(test)]
const TTL_MS: &str = "300000";

macro_rules! server_info {
    () => {
        concat!(r#"{"name":"mcpwire","version":""#, env!("CARGO_PKG_VERSION"), r#""}"#)
    };
}

macro_rules! tools {
    () => {
        concat!(tool_items!(), "]")
    };
}

/// The tools of both eras, as a JSON array without its closing bracket.
macro_rules! tool_items {
    () => {
        r#"[{"name":"echo","description":"Returns its message exactly.","inputSchema":{"type":"object","properties":{"message":{"type":"string","description":"The text to return (any length the frame limit admits)."}},"required":["message"]}},{"name":"sleep","description":"Waits the given number of milliseconds, then answers; cancellable.","inputSchema":{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":60000,"description":"How long to wait, in milliseconds."}},"required":["ms"]}},{"name":"route","description":"Returns its message with the region and shard it names; over HTTP both are mirrored to headers (Mcp-Param-Region, Mcp-Param-Shard) a gateway can route on.","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region","description":"Where the call belongs."},"shard":{"type":"integer","x-mcp-header":"Shard","description":"Which shard of the region."},"message":{"type":"string","description":"The text to return."}},"required":["region","message"]}},{"name":"confirm","description":"Asks the user a yes/no question through the client (2026-07-28 multi round-trip request; needs the elicitation capability).","inputSchema":{"type":"object","properties":{"question":{"type":"string","description":"What to ask."}},"required":["question"]}}"#
    };
}

/// The legacy `tools/list` result: the tools, and `test_reconnection`, whose stream closing only
/// a legacy session over HTTP has.
const TOOLS: &str = concat!(
    r#"{"tools":"#,
    tool_items!(),
    r#",{"name":"test_reconnection","description":"Closes the event stream of its POST (over HTTP, in a 2025-11-25 session), waits 100 ms, then answers: the client resumes the stream (GET with Last-Event-ID) to get the result.","inputSchema":{"type":"object","properties":{}}}]}"#
);

/// The tools, as `serve --http` reads their `x-mcp-header` annotations.
pub const TOOLS_LIST: &str = TOOLS;

/// How long `test_reconnection` waits, once it closed its stream, before it answers.
const RECONNECTION_WAIT: Duration = Duration::from_millis(100);

/// The modern `tools/list` result: the same tools, with the result's type, caching hints and
/// the server's identity.
const MODERN_TOOLS: &str = concat!(
    r#"{"tools":"#,
    tools!(),
    r#","resultType":"complete","ttlMs":"#,
    "300000",
    r#","cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":"#,
    server_info!(),
    "}}"
);

/// The `server/discover` result.
const DISCOVER: &str = concat!(
    r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"#,
    r#""instructions":"Test server of the mcpwire crate: echo returns its message, sleep waits, route echoes with its routing keys, confirm asks the user.","ttlMs":"#,
    "300000",
    r#","cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":"#,
    server_info!(),
    "}}"
);

/// The most `subscriptions/listen` streams one connection may hold open; past it a new one is
/// refused at once (-32000), so a flood of them cannot take every handler slot.
pub const MAX_SUBSCRIPTIONS: usize = 16;

/// The MCP server's request handler; one per connection (or HTTP session, or stateless HTTP
/// request).
#[derive(Debug, Default)]
pub struct McpServer {
    /// Set once `initialize` succeeded: requests without a modern `_meta` are legacy.
    initialized: AtomicBool,
    /// `subscriptions/listen` streams open.
    subscriptions: std::sync::Arc<AtomicUsize>,
}

impl McpServer {
    /// A handler for a new connection.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Handler for McpServer {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        if let Some((params, envelope)) = modern_envelope(&req.message(), &MODERN_VERSIONS)? {
            if req.method() == "subscriptions/listen" {
                return self.listen(req, cx).await;
            }
            return modern_request(req, &params, &envelope, cx).await;
        }
        match req.method() {
            "initialize" => {
                let reply = initialize(req)?;
                self.initialized.store(true, Ordering::Release);
                Ok(reply)
            }
            "ping" => Ok(Reply::empty()),
            _ if !self.initialized.load(Ordering::Acquire) => {
                // Neither legacy (no `initialize` yet) nor modern (no envelope).
                Err(RpcError::invalid_params(format_args!(
                    "params._meta must carry {} and {} (or open a legacy session with initialize)",
                    mcp::PROTOCOL_VERSION_KEY,
                    mcp::CLIENT_CAPABILITIES_KEY
                )))
            }
            "tools/list" => Ok(Reply::raw(TOOLS)),
            "tools/call" => call(&RequestParams::of(&req.message())?, None, cx).await,
            other => Err(RpcError::method_not_found(other)),
        }
    }

    async fn notification(&self, n: &Incoming, _cx: &Context) {
        match n.method() {
            "notifications/initialized" => tracing::debug!("client initialized"),
            other => tracing::debug!(method = other, "notification ignored"),
        }
    }
}

/// A request of the modern era, its envelope valid.
async fn modern_request(
    req: &Incoming,
    params: &RequestParams<'_>,
    envelope: &Envelope<'_>,
    cx: &Context,
) -> Result<Reply, RpcError> {
    match req.method() {
        "server/discover" => Ok(Reply::raw(DISCOVER)),
        "tools/list" => Ok(Reply::raw(MODERN_TOOLS)),
        "tools/call" => call(params, Some(envelope), cx).await,
        // Removed by 2026-07-28, and unknown methods alike.
        other => Err(RpcError::method_not_found(other)),
    }
}

fn initialize(req: &Incoming) -> Result<Reply, RpcError> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "protocolVersion", borrow)]
        protocol_version: Cow<'a, str>,
    }
    let p: Params<'_> = req.params_as().map_err(RpcError::invalid_params)?;
    let offered = p.protocol_version.as_ref();
    let agreed = PROTOCOL_VERSIONS
        .iter()
        .find(|v| **v == offered)
        .unwrap_or(&PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1]);
    tracing::debug!(offered, agreed, "initialize");
    const INFO: &str = server_info!();
    Ok(Reply::raw_string(format!(
        r#"{{"protocolVersion":"{agreed}","capabilities":{{"tools":{{}}}},"serverInfo":{INFO}}}"#
    )))
}

impl McpServer {
    /// `subscriptions/listen`, within [`MAX_SUBSCRIPTIONS`].
    async fn listen(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        /// Gives the stream's place back when it ends, however it ends.
        struct Held(std::sync::Arc<AtomicUsize>);
        impl Drop for Held {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let open = self.subscriptions.fetch_add(1, Ordering::AcqRel);
        let _held = Held(self.subscriptions.clone());
        if open >= MAX_SUBSCRIPTIONS {
            return Err(RpcError::new(
                ErrorCode::SERVER_ERROR,
                format!("Too many subscriptions: at most {MAX_SUBSCRIPTIONS} per connection"),
            ));
        }
        listen(req, cx).await
    }
}

/// `subscriptions/listen`: acknowledged with the subset of the filter this server honours
/// (`toolsListChanged`: the tools never change, so nothing follows), then held open until the
/// client cancels it or the connection ends.
async fn listen(req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
    #[derive(Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Filter {
        #[serde(default)]
        tools_list_changed: bool,
        #[serde(default)]
        prompts_list_changed: bool,
        #[serde(default)]
        resources_list_changed: bool,
        #[serde(default)]
        resource_subscriptions: Vec<serde::de::IgnoredAny>,
    }
    #[derive(Deserialize)]
    struct Params {
        #[serde(default)]
        notifications: Option<Filter>,
    }
    let p: Params = req.params_as().map_err(RpcError::invalid_params)?;
    let f = p.notifications.unwrap_or_default();
    let _ = (f.prompts_list_changed, f.resources_list_changed, f.resource_subscriptions.len());
    let id = req.id().map_or_else(|| "null".to_owned(), |id| id.to_string());
    let honoured = if f.tools_list_changed { r#"{"toolsListChanged":true}"# } else { "{}" };
    let ack = format!(
        r#"{{"_meta":{{"{}":{id}}},"notifications":{honoured}}}"#,
        mcp::SUBSCRIPTION_ID_KEY
    );
    let sent = cx
        .peer()
        .notify("notifications/subscriptions/acknowledged", Some(mcpwire::RawJson::new(&ack)))
        .await;
    if let Err(e) = sent {
        return Err(RpcError::internal(format!("the acknowledgement was not sent: {e}")));
    }
    // Held until cancelled (the handler is dropped) or the connection ends.
    std::future::pending::<()>().await;
    unreachable!("a pending future never completes")
}

/// `tools/call`, its params read once (by the borrowed views of `mcp::meta`, whatever the era).
async fn call(
    params: &RequestParams<'_>,
    modern: Option<&Envelope<'_>>,
    cx: &Context,
) -> Result<Reply, RpcError> {
    let Some(name) = params.name_str() else {
        return Err(RpcError::invalid_params("params.name must be a string naming the tool"));
    };
    let args = params.arguments().map_or("{}", |a| a.get());
    let out = match name.as_ref() {
        "echo" => echo(args),
        "sleep" => {
            let meta = match modern {
                Some(e) => Some(e.meta),
                None => params.meta()?,
            };
            let token = meta.and_then(|m| m.progress_token());
            let logs = modern.and_then(|e| e.log_level).is_some_and(|l| l <= INFO);
            sleep(args, token, logs, cx).await
        }
        "route" => route(args),
        "confirm" => {
            let responses = match params.raw_params() {
                Some(p) => mcp::meta::member(p, "inputResponses")?,
                None => None,
            };
            confirm(args, modern, responses)?
        }
        // The conformance suite's SEP-1699 tool (legacy era): the answer comes once the
        // client resumed the stream.
        "test_reconnection" if modern.is_none() => {
            mcpwire::http::close_sse_stream(cx);
            tokio::time::sleep(RECONNECTION_WAIT).await;
            text(
                "Reconnection test completed: the stream was closed and the result sent after it",
                false,
            )
        }
        other => {
            return Err(RpcError::new(ErrorCode::INVALID_PARAMS, format!("Unknown tool: {other}")));
        }
    };
    Ok(finish(out, modern.is_some()))
}

/// The index of "info" in the log levels.
const INFO: usize = 1;

/// A tool's outcome: a result object, as JSON text.
struct Outcome {
    json: String,
}

/// The reply: the result object, and in the modern era its type and the server's identity.
fn finish(out: Outcome, modern: bool) -> Reply {
    let mut json = out.json;
    if modern && json.ends_with('}') {
        let typed = json.contains(r#""resultType":"#);
        json.pop();
        if !typed {
            json.push_str(r#","resultType":"complete""#);
        }
        json.push_str(concat!(
            r#","_meta":{"io.modelcontextprotocol/serverInfo":"#,
            server_info!(),
            "}}"
        ));
    }
    Reply::raw_string(json)
}

fn echo(args: &str) -> Outcome {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow)]
        message: Cow<'a, str>,
    }
    match serde_json::from_str::<Args<'_>>(args) {
        Err(e) => tool_error(&format!("echo: invalid arguments: {e}")),
        Ok(a) => text(&a.message, false),
    }
}

fn route(args: &str) -> Outcome {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow)]
        region: Cow<'a, str>,
        #[serde(default)]
        shard: Option<i64>,
        #[serde(borrow)]
        message: Cow<'a, str>,
    }
    match serde_json::from_str::<Args<'_>>(args) {
        Err(e) => tool_error(&format!("route: invalid arguments: {e}")),
        Ok(a) if a.message.len() + a.region.len() > MAX_ECHO_BYTES => {
            tool_error(&format!("route: at most {MAX_ECHO_BYTES} bytes are accepted"))
        }
        Ok(a) => {
            let shard = a.shard.map_or(String::new(), |s| format!("/{s}"));
            text(&format!("{}{shard}: {}", a.region, a.message), false)
        }
    }
}

/// `confirm`: a multi round-trip request. The first call returns an `input_required` result
/// asking the client to elicit a yes/no answer; the client's retry carries it in
/// `inputResponses.confirm`, and the answer is the tool's result.
fn confirm(
    args: &str,
    modern: Option<&Envelope<'_>>,
    responses: Option<mcpwire::RawJson<'_>>,
) -> Result<Outcome, RpcError> {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow)]
        question: Cow<'a, str>,
    }
    #[derive(Deserialize)]
    struct Responses<'a> {
        #[serde(borrow)]
        confirm: Option<Elicited<'a>>,
    }
    #[derive(Deserialize)]
    struct Elicited<'a> {
        #[serde(borrow)]
        action: Cow<'a, str>,
        #[serde(default)]
        content: Option<Answer>,
    }
    #[derive(Deserialize)]
    struct Answer {
        #[serde(default)]
        confirmed: Option<bool>,
    }
    let Some(envelope) = modern else {
        return Ok(tool_error("confirm: needs protocol version 2026-07-28 (multi round-trip)"));
    };
    let a = match serde_json::from_str::<Args<'_>>(args) {
        Err(e) => return Ok(tool_error(&format!("confirm: invalid arguments: {e}"))),
        Ok(a) if a.question.len() > MAX_ECHO_BYTES => {
            return Ok(tool_error(&format!(
                "confirm: at most {MAX_ECHO_BYTES} bytes are accepted"
            )));
        }
        Ok(a) => a,
    };
    let declared =
        mcp::meta::member(envelope.capabilities, "elicitation").map_err(RpcError::from)?.is_some();
    if !declared {
        return Err(RpcError::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability: elicitation",
        )
        .with_data(&serde_json::json!({"requiredCapabilities": {"elicitation": {}}})));
    }
    if let Some(r) = responses {
        let r: Responses<'_> = serde_json::from_str(r.get()).map_err(RpcError::invalid_params)?;
        if let Some(e) = r.confirm {
            let yes = e.action == "accept" && e.content.and_then(|c| c.confirmed).unwrap_or(false);
            return Ok(text(if yes { "confirmed" } else { "declined" }, false));
        }
    }
    #[derive(Serialize)]
    struct Ask<'a> {
        method: &'static str,
        params: AskParams<'a>,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct AskParams<'a> {
        mode: &'static str,
        message: &'a str,
        requested_schema: serde_json::Value,
    }
    let ask = Ask {
        method: "elicitation/create",
        params: AskParams {
            mode: "form",
            message: &a.question,
            requested_schema: serde_json::json!({"type": "object",
                "properties": {"confirmed": {"type": "boolean"}}, "required": ["confirmed"]}),
        },
    };
    let ask = serde_json::to_string(&ask).map_err(|e| RpcError::internal(e.to_string()))?;
    Ok(Outcome {
        json: format!(r#"{{"resultType":"input_required","inputRequests":{{"confirm":{ask}}}}}"#),
    })
}

/// Sleeps; with a progress token, sends `notifications/progress` as it starts and as it ends;
/// with `logs` (a modern request whose `logLevel` is `info` or below), a log message first.
async fn sleep(
    args: &str,
    token: Option<mcpwire::RawJson<'_>>,
    logs: bool,
    cx: &Context,
) -> Outcome {
    // The token's text, as it came (validated JSON: it borrows).
    let token: Option<&RawValue> = token.and_then(|t| serde_json::from_str(t.get()).ok());
    #[derive(Deserialize)]
    struct Args {
        ms: serde_json::Number,
    }
    let ms = match serde_json::from_str::<Args>(args) {
        Err(e) => return tool_error(&format!("sleep: invalid arguments: {e}")),
        Ok(a) => a.ms.as_u64().filter(|ms| *ms <= MAX_SLEEP_MS),
    };
    let Some(ms) = ms else {
        return tool_error(&format!("sleep: ms must be an integer from 0 to {MAX_SLEEP_MS}"));
    };
    if logs {
        let note = serde_json::json!({"level": "info", "logger": "sleep", "data": format!("sleeping {ms} ms")});
        if let Err(e) = cx.peer().notify("notifications/message", Some(Json(&note))).await {
            tracing::debug!(error = %e, "log not sent");
        }
    }
    #[derive(Serialize)]
    struct Progress<'a> {
        #[serde(rename = "progressToken")]
        token: &'a RawValue,
        progress: u64,
        total: u64,
    }
    let progress = |done: u64| async move {
        if let Some(token) = token {
            let p = Progress { token, progress: done, total: ms };
            let sent = cx.peer().notify("notifications/progress", Some(Json(&p))).await;
            if let Err(e) = sent {
                tracing::debug!(error = %e, "progress not sent");
            }
        }
    };
    progress(0).await;
    // Dropped, and nothing answered, when the client cancels.
    tokio::time::sleep(Duration::from_millis(ms)).await;
    progress(ms).await;
    text(&format!("slept {ms}"), false)
}

/// A tool result of one text block.
fn text(text: &str, is_error: bool) -> Outcome {
    #[derive(Serialize)]
    struct Block<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        text: &'a str,
    }
    #[derive(Serialize)]
    struct ToolResult<'a> {
        content: [Block<'a>; 1],
        #[serde(rename = "isError", skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    }
    let result = ToolResult { content: [Block { kind: "text", text }], is_error };
    // A struct of strings and a bool always serialises.
    Outcome { json: serde_json::to_string(&result).unwrap_or_else(|_| "{}".to_owned()) }
}

fn tool_error(message: &str) -> Outcome {
    text(message, true)
}

#[cfg(test)]
mod tests;
