//! The MCP server `mcpwire serve` runs, and `mcpwire load` drives in process: a few tools
//! registered on [`mcpwire::server::Server`], which speaks the protocol around them in both
//! eras at once (legacy sessions opened by `initialize`; stateless 2026-07-28 requests with
//! their `_meta` envelope, `server/discover`, caching hints and `subscriptions/listen`).
//!
//! Tools: `echo`, `sleep` (cancellable, with progress), `route` (its `region` and `shard`
//! arguments are mirrored to `Mcp-Param-Region` / `Mcp-Param-Shard` over HTTP) and `confirm`
//! (asks the user a yes/no question through the client: a 2026-07-28 multi round-trip request,
//! or in a legacy session a request to the client; -32021 without the client's `elicitation`
//! capability); in the legacy era also `test_reconnection`, the conformance suite's SEP-1699
//! tool (it closes its POST's event stream with [`mcpwire::http::close_sse_stream`], waits
//! 100 ms, then answers, so the client must resume the stream to get the result; elsewhere it
//! just waits and answers). Tool arguments are untrusted: a wrong type or size is a tool result
//! with `isError: true`, an unknown tool -32602, an unknown method -32601.

use std::borrow::Cow;
use std::time::Duration;

use mcpwire::mcp::Era;
use mcpwire::mcp::types::Tool;
use mcpwire::mcp::types::{CallToolResult, ElicitParams, ElicitResult, InputRequest, LoggingLevel};
use mcpwire::server::{Call, HandlerError, Server};
use serde::Deserialize;

/// The longest message `route` and `confirm` accept, in bytes. `echo` has no bound of its own:
/// the frame limit (`--max-frame-bytes`, 16 MiB by default) already bounds its request, and its
/// reply is the same text, so `load --payload-bytes` can go up to the frame limit.
pub const MAX_ECHO_BYTES: usize = 1 << 20;

/// The longest `sleep`, in milliseconds.
pub const MAX_SLEEP_MS: u64 = 60_000;

/// How long a client may keep a `tools/list` or `server/discover` result: the tools never
/// change while the server runs.
pub const LIST_TTL: Duration = Duration::from_secs(300);

/// How long `test_reconnection` waits, once it closed its stream, before it answers.
const RECONNECTION_WAIT: Duration = Duration::from_millis(100);

const INSTRUCTIONS: &str = "Test server of the mcpwire crate: echo returns its message, sleep \
                            waits, route echoes with its routing keys, confirm asks the user.";

const ECHO_SCHEMA: &str = r#"{"type":"object","properties":{"message":{"type":"string","description":"The text to return (any length the frame limit admits)."}},"required":["message"]}"#;

const SLEEP_SCHEMA: &str = r#"{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":60000,"description":"How long to wait, in milliseconds."}},"required":["ms"]}"#;

const ROUTE_SCHEMA: &str = r#"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region","description":"Where the call belongs."},"shard":{"type":"integer","x-mcp-header":"Shard","description":"Which shard of the region."},"message":{"type":"string","description":"The text to return."}},"required":["region","message"]}"#;

const CONFIRM_SCHEMA: &str = r#"{"type":"object","properties":{"question":{"type":"string","description":"What to ask."}},"required":["question"]}"#;

/// The form `confirm` asks the client to fill in.
const CONFIRM_FORM: &str =
    r#"{"type":"object","properties":{"confirmed":{"type":"boolean"}},"required":["confirmed"]}"#;

const NO_ARGUMENTS: &str = r#"{"type":"object","properties":{}}"#;

/// The server: its tools, its identity (`mcpwire` at this crate's version) and its caching
/// hints; one per process, a [`Server::handler`] per connection.
#[must_use]
pub fn server() -> Server {
    builder().build()
}

/// `serve --fail-tool NAME`: the same server, but tool `NAME` (echo, sleep, route or confirm)
/// answers every call with `isError: true` (a changed server for `load --replay` to catch).
#[must_use]
pub fn failing(name: &str) -> Option<Server> {
    let schema = match name {
        "echo" => ECHO_SCHEMA,
        "sleep" => SLEEP_SCHEMA,
        "route" => ROUTE_SCHEMA,
        "confirm" => CONFIRM_SCHEMA,
        _ => return None,
    };
    let why = format!("{name}: failing on purpose (serve --fail-tool)");
    let tool = Tool::new(name.to_owned())
        .description("Fails every call (serve --fail-tool).")
        .input_schema(schema);
    let fail = move |_call: Call| {
        let why = why.clone();
        async move { Err(HandlerError::tool(why)) }
    };
    Some(builder().tool(tool, fail).build())
}

fn builder() -> mcpwire::server::ServerBuilder {
    Server::builder("mcpwire", env!("CARGO_PKG_VERSION"))
        .instructions(INSTRUCTIONS)
        .list_ttl(LIST_TTL)
        // The tools are fixed: no `listChanged` is declared.
        .lists_change(false)
        .tool(
            Tool::new("echo").description("Returns its message exactly.").input_schema(ECHO_SCHEMA),
            echo,
        )
        .tool(
            Tool::new("sleep")
                .description("Waits the given number of milliseconds, then answers; cancellable.")
                .input_schema(SLEEP_SCHEMA),
            sleep,
        )
        .tool(
            Tool::new("route")
                .description(
                    "Returns its message with the region and shard it names; over HTTP both are \
                     mirrored to headers (Mcp-Param-Region, Mcp-Param-Shard) a gateway can \
                     route on.",
                )
                .input_schema(ROUTE_SCHEMA),
            route,
        )
        .tool(
            Tool::new("confirm")
                .description(
                    "Asks the user a yes/no question through the client (2026-07-28 multi \
                     round-trip request, or a request to the client in a legacy session; needs \
                     the elicitation capability).",
                )
                .input_schema(CONFIRM_SCHEMA),
            confirm,
        )
        // Stream closing belongs to a legacy session over HTTP.
        .tool_in(
            Era::Legacy,
            Tool::new("test_reconnection")
                .description(
                    "Closes the event stream of its POST (over HTTP, in a 2025-11-25 session), \
                     waits 100 ms, then answers: the client resumes the stream (GET with \
                     Last-Event-ID) to get the result.",
                )
                .input_schema(NO_ARGUMENTS),
            test_reconnection,
        )
}

/// A tool failure (bad arguments) named after its tool: `echo: invalid arguments...`.
fn named(tool: &str, e: HandlerError) -> HandlerError {
    match e {
        HandlerError::Tool(reason) => HandlerError::Tool(format!("{tool}: {reason}")),
        other => other,
    }
}

async fn echo(call: Call) -> Result<CallToolResult<'static>, HandlerError> {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow)]
        message: Cow<'a, str>,
    }
    let a: Args<'_> = call.arguments().map_err(|e| named("echo", e))?;
    Ok(CallToolResult::text(a.message.into_owned()))
}

/// Sleeps; with a progress token, reports progress as it starts and as it ends; for a modern
/// request whose `logLevel` is `info` or below, a log message first.
async fn sleep(call: Call) -> Result<CallToolResult<'static>, HandlerError> {
    #[derive(Deserialize)]
    struct Args {
        ms: serde_json::Number,
    }
    let a: Args = call.arguments().map_err(|e| named("sleep", e))?;
    let Some(ms) = a.ms.as_u64().filter(|ms| *ms <= MAX_SLEEP_MS) else {
        return Err(HandlerError::tool(format!(
            "sleep: ms must be an integer from 0 to {MAX_SLEEP_MS}"
        )));
    };
    // Only where the request asked for log messages (a legacy session would get them unasked).
    if call.era() == Era::Modern {
        call.log(LoggingLevel::Info, &format!("sleeping {ms} ms")).await;
    }
    let total = ms as f64;
    call.progress(0.0, Some(total), None).await;
    // Dropped, and nothing answered, when the client cancels.
    tokio::time::sleep(Duration::from_millis(ms)).await;
    call.progress(total, Some(total), None).await;
    Ok(CallToolResult::text(format!("slept {ms}")))
}

async fn route(call: Call) -> Result<CallToolResult<'static>, HandlerError> {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow)]
        region: Cow<'a, str>,
        #[serde(default)]
        shard: Option<i64>,
        #[serde(borrow)]
        message: Cow<'a, str>,
    }
    let a: Args<'_> = call.arguments().map_err(|e| named("route", e))?;
    if a.message.len() + a.region.len() > MAX_ECHO_BYTES {
        return Err(HandlerError::tool(format!(
            "route: at most {MAX_ECHO_BYTES} bytes are accepted"
        )));
    }
    let shard = a.shard.map_or(String::new(), |s| format!("/{s}"));
    Ok(CallToolResult::text(format!("{}{shard}: {}", a.region, a.message)))
}

/// Asks the client for a yes/no answer: in the modern era the first call is answered
/// `input_required` (an elicitation under `confirm`) and the client's retry carries the answer;
/// in a legacy session the server sends the elicitation to the client itself.
async fn confirm(call: Call) -> Result<CallToolResult<'static>, HandlerError> {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow)]
        question: Cow<'a, str>,
    }
    let a: Args<'_> = call.arguments().map_err(|e| named("confirm", e))?;
    if a.question.len() > MAX_ECHO_BYTES {
        return Err(HandlerError::tool(format!(
            "confirm: at most {MAX_ECHO_BYTES} bytes are accepted"
        )));
    }
    // Refused (-32021) before any answer is read: the client must be able to elicit at all.
    call.require_client("elicitation")?;
    let form = ElicitParams {
        mode: Some("form".into()),
        ..ElicitParams::form(a.question.as_ref(), CONFIRM_FORM)
    };
    let answer = call.ask("confirm", InputRequest::elicit(&form)).await?;
    let yes = answer.decode::<ElicitResult<'_>>()?.flag("confirmed")? == Some(true);
    Ok(CallToolResult::text(if yes { "confirmed" } else { "declined" }))
}

/// The conformance suite's SEP-1699 tool: the answer comes once the client resumed the stream.
async fn test_reconnection(call: Call) -> Result<CallToolResult<'static>, HandlerError> {
    mcpwire::http::close_sse_stream(call.context());
    tokio::time::sleep(RECONNECTION_WAIT).await;
    Ok(CallToolResult::text(
        "Reconnection test completed: the stream was closed and the result sent after it",
    ))
}

#[cfg(test)]
mod tests;
