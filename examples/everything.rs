//! Every MCP feature, served on mcpwire's typed layer, in both eras at once: the server the
//! official conformance suite (`@modelcontextprotocol/conformance`) runs its server scenarios
//! against, and the worked example for hosts.
//!
//!     cargo run --release --example everything -- --http 127.0.0.1:0   # prints its URL
//!     cargo run --release --example everything -- --stdio
//!
//! Each handler is a few lines on `mcpwire::server::Call`: the server speaks the protocol
//! (both eras, `_meta` envelopes, `input_required` rounds with a sealed `requestState`, caching
//! hints, listen streams, legacy sessions) around them.

use std::borrow::Cow;
use std::time::Duration;

use mcpwire::mcp::types::{
    CallToolResult, CompleteParams, CompleteRef, CompleteResult, Content, CreateMessageParams,
    CreateMessageResult, ElicitParams, ElicitResult, GetPromptResult, InputRequest,
    ListRootsResult, LoggingLevel, Prompt, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, TaskSupport, Tool, match_template,
};
use mcpwire::peer::PeerBuilder;
use mcpwire::server::{Call, HandlerError, InputRequired, Server};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// A JSON Schema 2020-12 input schema using `$schema`, `$defs`, `$anchor`, `$ref`, composition
/// and conditionals: served exactly as written.
const SCHEMA_2020_12: &str = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}"##;

const NAME_FORM: &str =
    r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#;
const OK_FORM: &str =
    r#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}"#;

const DEFAULTS_FORM: &str = r#"{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}"#;

const ENUMS_FORM: &str = r#"{"type":"object","properties":{"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},"required":[]}"#;

fn text(t: impl Into<Cow<'static, str>>) -> Result<CallToolResult<'static>, HandlerError> {
    Ok(CallToolResult::text(t))
}

/// An elicitation's outcome, as the suite's tools report it.
fn elicited(answer: &ElicitResult<'_>) -> String {
    let action = serde_json::to_string(&answer.action).unwrap_or_default();
    let content = answer.content.as_ref().map_or("{}", |c| c.get());
    format!("action={}, content={content}", action.trim_matches('"'))
}

#[derive(serde::Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    message: Cow<'a, str>,
}

#[derive(serde::Deserialize)]
struct Uri<'a> {
    #[serde(borrow, default)]
    uri: Option<Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct PromptArg<'a> {
    #[serde(borrow)]
    prompt: Cow<'a, str>,
}

/// The sampled text of a `sampling/createMessage` answer.
fn sampled(call_answer: &mcpwire::server::Answer) -> Result<String, HandlerError> {
    let r: CreateMessageResult<'_> = call_answer.decode()?;
    Ok(r.content.as_text().unwrap_or("no response").to_owned())
}

fn tools(b: mcpwire::server::ServerBuilder) -> mcpwire::server::ServerBuilder {
    b.tool(Tool::new("test_simple_text").description("Tests simple text content response"), |_| async {
        text("This is a simple text response for testing.")
    })
    .tool(Tool::new("test_image_content").description("Tests image content response"), |_| async {
        Ok(CallToolResult::new(vec![Content::image(PNG, "image/png")]))
    })
    .tool(Tool::new("test_audio_content").description("Tests audio content response"), |_| async {
        Ok(CallToolResult::new(vec![Content::audio(WAV, "audio/wav")]))
    })
    .tool(Tool::new("test_embedded_resource").description("Tests embedded resource content response"), |_| async {
        let r = ResourceContents::text("test://embedded-resource", "text/plain", "This is an embedded resource content.");
        Ok(CallToolResult::new(vec![Content::resource(r)]))
    })
    .tool(
        Tool::new("test_multiple_content_types").description("Tests response with multiple content types (text, image, resource)"),
        |_| async {
            let r = ResourceContents::text("test://mixed-content-resource", "application/json", r#"{"test":"data","value":123}"#);
            Ok(CallToolResult::new(vec![
                Content::text("Multiple content types test:"),
                Content::image(PNG, "image/png"),
                Content::resource(r),
            ]))
        },
    )
    .tool(Tool::new("test_tool_with_logging").description("Tests tool that emits log messages during execution"), |call| async move {
        for (i, line) in ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            call.log(LoggingLevel::Info, line).await;
        }
        text("Tool with logging executed successfully")
    })
    .tool(Tool::new("test_tool_with_progress").description("Tests tool that reports progress notifications"), |call| async move {
        for step in [0.0, 50.0, 100.0] {
            if step > 0.0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            call.progress(step, Some(100.0), Some(&format!("Completed step {step} of 100"))).await;
        }
        text("Progress reported")
    })
    .tool(Tool::new("test_error_handling").description("Tests error response handling"), |_| async {
        Err(HandlerError::tool("This tool intentionally returns an error for testing"))
    })
    .tool(
        Tool::new("test_reconnection").description("Closes the request's SSE stream mid-call (legacy HTTP); the result follows once the client reconnects"),
        |call| async move {
            // Legacy HTTP sessions only: the client resumes with Last-Event-ID and gets the
            // result on the resumed stream. Elsewhere this does nothing.
            mcpwire::http::close_sse_stream(call.context());
            tokio::time::sleep(Duration::from_millis(100)).await;
            text("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.")
        },
    )
    .tool(
        Tool::new("test_sampling")
            .description("Tests server-initiated sampling (LLM completion request)")
            .input_schema(r#"{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}"#),
        |call| async move {
            let args: PromptArg<'_> = call.arguments()?;
            let answer = call.ask("sample", InputRequest::sample(&CreateMessageParams::user(args.prompt.as_ref(), 100))).await?;
            text(format!("LLM response: {}", sampled(&answer)?))
        },
    )
    .tool(
        Tool::new("test_elicitation")
            .description("Tests server-initiated elicitation (user input request)")
            .input_schema(r#"{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}"#),
        |call| async move {
            let args: Message<'_> = call.arguments()?;
            let form = r#"{"type":"object","properties":{"response":{"type":"string","description":"User's response"}},"required":["response"]}"#;
            let answer = call.ask("response", InputRequest::elicit(&ElicitParams::form(args.message.as_ref(), form))).await?;
            text(format!("User response: {}", elicited(&answer.decode()?)))
        },
    )
    .tool(Tool::new("test_elicitation_sep1034_defaults").description("Tests elicitation with default values per SEP-1034"), |call| async move {
        let form = ElicitParams::form("Please review and update the form fields with defaults", DEFAULTS_FORM);
        let answer = call.ask("form", InputRequest::elicit(&form)).await?;
        text(format!("Elicitation completed: {}", elicited(&answer.decode()?)))
    })
    .tool(Tool::new("test_elicitation_sep1330_enums").description("Tests elicitation with enum schema improvements per SEP-1330"), |call| async move {
        let form = ElicitParams::form("Please select options from the enum fields", ENUMS_FORM);
        let answer = call.ask("form", InputRequest::elicit(&form)).await?;
        text(format!("Elicitation completed: {}", elicited(&answer.decode()?)))
    })
    .tool(
        Tool::new("json_schema_2020_12_tool")
            .description("Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)")
            .input_schema(SCHEMA_2020_12),
        |call| async move {
            let raw: &serde_json::value::RawValue = call.arguments()?;
            text(format!("JSON Schema 2020-12 tool called with: {raw}"))
        },
    )
}

fn modern_tools(b: mcpwire::server::ServerBuilder) -> mcpwire::server::ServerBuilder {
    b.tool(Tool::new("test_missing_capability").description("Test tool requiring sampling"), |call| async move {
        call.require_client("sampling")?;
        text("Success")
    })
    .tool(Tool::new("test_input_required_result_elicitation").description("MRTR: returns InputRequiredResult with elicitation request"), |call| async move {
        let a = call.ask("user_name", InputRequest::elicit(&ElicitParams::form("What is your name?", NAME_FORM))).await?;
        let a: ElicitResult<'_> = a.decode()?;
        text(format!("Hello, {}!", a.text("name")?.unwrap_or(Cow::Borrowed("unknown"))))
    })
    .tool(Tool::new("test_input_required_result_sampling").description("MRTR: returns InputRequiredResult with sampling request"), |call| async move {
        let a = call.ask("sample_request", InputRequest::sample(&CreateMessageParams::user("What is the capital of France?", 100))).await?;
        text(format!("Sampling result: {}", sampled(&a)?))
    })
    .tool(Tool::new("test_input_required_result_list_roots").description("MRTR: returns InputRequiredResult with roots/list request"), |call| async move {
        let a = call.ask("roots_request", InputRequest::list_roots()).await?;
        let roots: ListRootsResult<'_> = a.decode()?;
        text(format!("Found {} root(s)", roots.roots.len()))
    })
    .tool(Tool::new("test_input_required_result_request_state").description("MRTR: returns InputRequiredResult with requestState"), |call| async move {
        if call.state() == Some("request-state")
            && let Some(a) = call.answer("confirm")?
            && a.decode::<ElicitResult<'_>>()?.flag("ok")? == Some(true)
        {
            return text("state-ok: requestState validated");
        }
        let confirm = InputRequest::elicit(&ElicitParams::form("Please confirm", OK_FORM));
        Err(InputRequired::new().request("confirm", confirm).state("request-state").into())
    })
    .tool(Tool::new("test_input_required_result_multiple_inputs").description("MRTR: returns InputRequiredResult with multiple input requests"), |call| async move {
        if call.state() == Some("multiple-inputs")
            && let (Some(name), Some(greeting), Some(roots)) =
                (call.answer("user_name")?, call.answer("greeting")?, call.answer("client_roots")?)
        {
            let name: ElicitResult<'_> = name.decode()?;
            let roots: ListRootsResult<'_> = roots.decode()?;
            let name = name.text("name")?.unwrap_or(Cow::Borrowed("unknown")).into_owned();
            return text(format!("Name: {name}; Greeting: {}; Roots: {}", sampled(&greeting)?, roots.roots.len()));
        }
        Err(InputRequired::new()
            .request("user_name", InputRequest::elicit(&ElicitParams::form("What is your name?", NAME_FORM)))
            .request("greeting", InputRequest::sample(&CreateMessageParams::user("Generate a greeting", 50)))
            .request("client_roots", InputRequest::list_roots())
            .state("multiple-inputs")
            .into())
    })
    .tool(Tool::new("test_input_required_result_multi_round").description("MRTR: multi-round InputRequiredResult workflow"), |call| async move {
        let step = |key: &str, message: &'static str, field: &str| {
            let form = format!(r#"{{"type":"object","properties":{{"{field}":{{"type":"string"}}}},"required":["{field}"]}}"#);
            let schema = mcpwire::mcp::types::Raw::owned(form).expect("JSON");
            let params = ElicitParams { requested_schema: Some(schema), ..ElicitParams::form(message, "{}") };
            InputRequired::new().request(key, InputRequest::elicit(&params))
        };
        match call.state() {
            Some("round-1") => {
                if let Some(a) = call.answer("step1")? {
                    let name = a.decode::<ElicitResult<'_>>()?.text("name")?.unwrap_or(Cow::Borrowed("friend")).into_owned();
                    let state = serde_json::json!({"round": 2, "name": name}).to_string();
                    return Err(step("step2", "Step 2: What is your favorite color?", "color").state(state).into());
                }
            }
            Some(s) if s.starts_with('{') => {
                let state: serde_json::Value = serde_json::from_str(s).map_err(|e| HandlerError::tool(e.to_string()))?;
                if let Some(a) = call.answer("step2")? {
                    let color = a.decode::<ElicitResult<'_>>()?.text("color")?.unwrap_or(Cow::Borrowed("unknown")).into_owned();
                    let name = state["name"].as_str().unwrap_or("friend");
                    return text(format!("Multi-round complete for {name} who likes {color}"));
                }
            }
            _ => {}
        }
        Err(step("step1", "Step 1: What is your name?", "name").state("round-1").into())
    })
    .tool(Tool::new("test_input_required_result_tampered_state").description("MRTR: HMAC-signed requestState integrity test"), |call| async move {
        // The server refuses a changed state before this handler runs.
        if call.state() == Some("tamper-test") && call.answer("confirm")?.is_some() {
            return text("integrity-ok: state verified");
        }
        let confirm = InputRequest::elicit(&ElicitParams::form("Please confirm", OK_FORM));
        Err(InputRequired::new().request("confirm", confirm).state("tamper-test").into())
    })
    .tool(Tool::new("test_input_required_result_capabilities").description("MRTR: respects client capabilities in inputRequests"), |call| async move {
        let mut received = Vec::new();
        for key in ["elicit_input", "sample_input"] {
            if call.answer(key)?.is_some() {
                received.push(key);
            }
        }
        if !received.is_empty() {
            return text(format!("capabilities-ok: received {}", received.join(",")));
        }
        let mut needed = InputRequired::new();
        if call.client_supports("elicitation") {
            let form = r#"{"type":"object","properties":{"value":{"type":"string"}},"required":["value"]}"#;
            needed = needed.request("elicit_input", InputRequest::elicit(&ElicitParams::form("Elicitation input", form)));
        }
        if call.client_supports("sampling") {
            needed = needed.request("sample_input", InputRequest::sample(&CreateMessageParams::user("Sample request", 50)));
        }
        if needed.is_empty() {
            return text("No supported capabilities declared");
        }
        Err(needed.state("capabilities-test").into())
    })
    .tool(Tool::new("test_streaming_elicitation").description("Diagnostic tool validating response progress streams"), |call| async move {
        call.progress(50.0, Some(100.0), None).await;
        text("Streaming complete")
    })
    .tool(Tool::new("test_logging_tool").description("Diagnostic logging validator tool"), |call| async move {
        call.log(LoggingLevel::Info, "Diagnostic trace logging activated").await;
        text("Logging evaluated")
    })
    .tool(
        Tool::new("test_custom_headers")
            .description("Its region and priority are mirrored to Mcp-Param-Region and Mcp-Param-Priority; the server checks them against the body")
            .input_schema(r#"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"priority":{"type":"integer","x-mcp-header":"Priority"},"query":{"type":"string"}},"required":["region"]}"#),
        |call| async move {
            let args: &serde_json::value::RawValue = call.arguments()?;
            text(format!("Custom headers test completed: {args}"))
        },
    )
    .tool(Tool::new("test_trigger_tool_change").description("Announces a tool list change to listeners"), |call| async move {
        call.server().tools_changed();
        text("Mutation triggered")
    })
    .tool(
        Tool::new("test_trigger_resource_update")
            .description("Announces an update of a resource (test://watched-resource unless uri names another) to its subscribers")
            .input_schema(r#"{"type":"object","properties":{"uri":{"type":"string","description":"The resource updated"}}}"#),
        |call| async move {
            let args: Uri<'_> = call.arguments()?;
            call.server().resource_updated(args.uri.as_deref().unwrap_or("test://watched-resource"));
            text("Update announced")
        },
    )
    .tool(Tool::new("test_trigger_prompt_change").description("Announces a prompt list change to listeners"), |call| async move {
        call.server().prompts_changed();
        text("Mutation triggered")
    })
}

/// The tasks extension's fixtures (`io.modelcontextprotocol/tasks`): the same one-function
/// handlers; the server runs a task-supporting tool as a task when the client declared the
/// extension and the handler does not answer at once.
fn task_tools(b: mcpwire::server::ServerBuilder) -> mcpwire::server::ServerBuilder {
    #[derive(serde::Deserialize)]
    struct Compute<'a> {
        #[serde(default)]
        seconds: f64,
        #[serde(borrow, default)]
        label: Option<Cow<'a, str>>,
    }
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow, default)]
        name: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        filename: Option<Cow<'a, str>>,
    }
    const CONFIRM_FORM: &str =
        r#"{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}"#;
    let confirmed = |a: &mcpwire::server::Answer| -> Result<bool, HandlerError> {
        let r: ElicitResult<'_> = a.decode()?;
        Ok(r.action == mcpwire::mcp::types::ElicitAction::Accept
            && r.flag("confirm")? == Some(true))
    };
    b.tool(Tool::new("greet").description("Sync-only: says hello").input_schema(r#"{"type":"object","properties":{"name":{"type":"string"}}}"#), |call| async move {
        let args: Named<'_> = call.arguments()?;
        text(format!("Hello, {}!", args.name.as_deref().unwrap_or("World")))
    })
    .tool(
        Tool::new("slow_compute")
            .description("Task-supporting: sleeps `seconds` then answers (0: at once, without a task)")
            .input_schema(r#"{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}"#)
            .task_support(TaskSupport::Optional),
        |call| async move {
            let args: Compute<'_> = call.arguments()?;
            let seconds = args.seconds.clamp(0.0, 3600.0);
            if seconds > 0.0 {
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            }
            text(format!("Computed {} after {seconds}s", args.label.as_deref().unwrap_or("result")))
        },
    )
    .tool(
        Tool::new("failing_job").description("Task-required: fails as a tool after about a second").task_support(TaskSupport::Required),
        |_| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Err(HandlerError::tool("failing_job: the job failed"))
        },
    )
    .tool(
        Tool::new("protocol_error_job").description("Task-supporting: ends in a protocol error").task_support(TaskSupport::Optional),
        |_| async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Err(HandlerError::Protocol(mcpwire::peer::RpcError::internal("protocol_error_job: internal failure")))
        },
    )
    .tool(
        Tool::new("confirm_delete")
            .description("Task-supporting: asks the user to confirm, then deletes (nothing)")
            .input_schema(r#"{"type":"object","properties":{"filename":{"type":"string"}}}"#)
            .task_support(TaskSupport::Optional),
        move |call| async move {
            let args: Named<'_> = call.arguments()?;
            let file = args.filename.as_deref().unwrap_or("file").to_owned();
            let form = ElicitParams::form(format!("Delete {file}?"), CONFIRM_FORM);
            let answer = call.ask("confirm", InputRequest::elicit(&form)).await?;
            text(if confirmed(&answer)? { format!("Deleted {file}") } else { format!("Kept {file}") })
        },
    )
    .tool(
        Tool::new("multi_input").description("Task-supporting: asks two things at once").task_support(TaskSupport::Optional),
        move |call| async move {
            if let (Some(name), Some(confirm)) = (call.answer("name")?, call.answer("confirm")?) {
                let name: ElicitResult<'_> = name.decode()?;
                let name = name.text("name")?.unwrap_or(Cow::Borrowed("unknown")).into_owned();
                return text(format!("Name: {name}; confirmed: {}", confirmed(&confirm)?));
            }
            Err(InputRequired::new()
                .request("name", InputRequest::elicit(&ElicitParams::form("What is your name?", NAME_FORM)))
                .request("confirm", InputRequest::elicit(&ElicitParams::form("Confirm?", CONFIRM_FORM)))
                .into())
        },
    )
    .tool(
        Tool::new("test_tool_with_task")
            .description("Task-required: asks for a name in the call's own response, then works as a task")
            .task_support(TaskSupport::Required),
        |call| async move {
            let form = ElicitParams::form("What is your name?", NAME_FORM);
            let answer = call.ask_first("user_name", InputRequest::elicit(&form)).await?;
            let answer: ElicitResult<'_> = answer.decode()?;
            let name = answer.text("name")?.unwrap_or(Cow::Borrowed("unknown")).into_owned();
            tokio::time::sleep(Duration::from_millis(100)).await;
            text(format!("Hello, {name}! (from the task)"))
        },
    )
}

fn resources(b: mcpwire::server::ServerBuilder) -> mcpwire::server::ServerBuilder {
    let fixed = |uri: &'static str, mime: &'static str, body: &'static str| {
        move |_call: Call| async move {
            Ok(ReadResourceResult::new(ResourceContents::text(uri, mime, body)))
        }
    };
    b.resource(
        Resource::new("test://static-text", "static-text").title("Static Text Resource").description("A static text resource for testing").mime_type("text/plain"),
        fixed("test://static-text", "text/plain", "This is the content of the static text resource."),
    )
    .resource(
        Resource::new("test://static-binary", "static-binary").title("Static Binary Resource").description("A static binary resource (image) for testing").mime_type("image/png"),
        |_| async { Ok(ReadResourceResult::new(ResourceContents::blob("test://static-binary", "image/png", PNG))) },
    )
    .resource(
        Resource::new("test://watched-resource", "watched-resource").title("Watched Resource").description("A resource clients may subscribe to").mime_type("text/plain"),
        fixed("test://watched-resource", "text/plain", "Watched resource content"),
    )
    .resource(
        Resource::new("test://stateless-static-text", "Stateless Static Text").description("A static text resource served on the stateless path").mime_type("text/plain"),
        fixed("test://stateless-static-text", "text/plain", "Static text content from the stateless draft path."),
    )
    .resource_template(
        ResourceTemplate::new("test://template/{id}/data", "template").title("Resource Template").description("A resource template with parameter substitution").mime_type("application/json"),
        |call| async move {
            let p: mcpwire::mcp::types::ResourceParams<'_> = call.params()?;
            let mut id = String::new();
            match_template("test://template/{id}/data", &p.uri, |_, v| id = v.to_owned());
            let body = serde_json::json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(ReadResourceResult::new(ResourceContents::text(p.uri.into_owned(), "application/json", body.to_string())))
        },
    )
}

fn prompts(b: mcpwire::server::ServerBuilder) -> mcpwire::server::ServerBuilder {
    let user_text = |t: String| PromptMessage::user(Content::text(t));
    b.prompt(Prompt::new("test_simple_prompt").title("Simple Test Prompt").description("A simple prompt without arguments"), move |_| async move {
        Ok(GetPromptResult::new(vec![user_text("This is a simple prompt for testing.".into())]))
    })
    .prompt(
        Prompt::new("test_prompt_with_arguments")
            .title("Prompt With Arguments")
            .description("A prompt with required arguments")
            .argument("arg1", "First test argument", true)
            .argument("arg2", "Second test argument", true),
        move |call| async move {
            let p: mcpwire::mcp::types::GetPromptParams<'_> = call.params()?;
            let (a1, a2) = (p.argument("arg1")?.unwrap_or_default(), p.argument("arg2")?.unwrap_or_default());
            Ok(GetPromptResult::new(vec![user_text(format!("Prompt with arguments: arg1='{a1}', arg2='{a2}'"))]))
        },
    )
    .prompt(
        Prompt::new("test_prompt_with_embedded_resource")
            .title("Prompt With Embedded Resource")
            .description("A prompt that includes an embedded resource")
            .argument("resourceUri", "URI of the resource to embed", true),
        move |call| async move {
            let p: mcpwire::mcp::types::GetPromptParams<'_> = call.params()?;
            let uri = p.argument("resourceUri")?.unwrap_or(Cow::Borrowed("test://example-resource")).into_owned();
            let r = ResourceContents::text(uri, "text/plain", "Embedded resource content for testing.");
            Ok(GetPromptResult::new(vec![
                PromptMessage::user(Content::resource(r)),
                user_text("Please process the embedded resource above.".into()),
            ]))
        },
    )
    .prompt(Prompt::new("test_prompt_with_image").title("Prompt With Image").description("A prompt that includes image content"), move |_| async move {
        Ok(GetPromptResult::new(vec![
            PromptMessage::user(Content::image(PNG, "image/png")),
            user_text("Please analyze the image above.".into()),
        ]))
    })
    .prompt(Prompt::new("test_input_required_result_prompt").description("MRTR: prompt that requires elicitation input"), move |call| async move {
        let form = r#"{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}"#;
        let a = call.ask("user_context", InputRequest::elicit(&ElicitParams::form("What context should the prompt use?", form))).await?;
        let a: ElicitResult<'_> = a.decode()?;
        let context = a.text("context")?.unwrap_or(Cow::Borrowed("unknown")).into_owned();
        Ok(GetPromptResult::new(vec![user_text(format!("Prompt with context: {context}"))]))
    })
    .completion(|call| async move {
        let p: CompleteParams<'_> = call.params()?;
        let candidates: &[&str] = match (&p.reference, p.argument.name.as_ref()) {
            (CompleteRef::Prompt { name }, "arg1" | "arg2") if name == "test_prompt_with_arguments" => &["alpha", "beta", "gamma"],
            (CompleteRef::Resource { uri }, "id") if uri == "test://template/{id}/data" => &["1", "2", "42"],
            _ => &[],
        };
        let typed = p.argument.value.as_ref();
        Ok(CompleteResult::new(candidates.iter().filter(|c| c.starts_with(typed)).map(|c| Cow::Borrowed(*c)).collect()))
    })
}

fn server() -> Server {
    // The skills extension: the skill directory beside this example.
    let skills =
        mcpwire::server::Skills::load(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills"))
            .expect("examples/skills loads");
    let b = Server::builder("mcpwire-everything", env!("CARGO_PKG_VERSION"))
        .skills(skills)
        .instructions("Every MCP feature, for the conformance suite: tools, resources, prompts, completion, logging, progress, sampling, elicitation, roots.")
        .list_ttl(Duration::from_secs(300));
    prompts(resources(task_tools(modern_tools(tools(b))))).build()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = server();
    let builder = PeerBuilder::new();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["--stdio"] => {
            let (stdin, stdout) = mcpwire::transport::stdio();
            let (_peer, mut conn) = builder.spawn(stdin, stdout, server.handler());
            let reason = conn.closed().await;
            eprintln!("everything: stdio connection ended: {reason}");
            Ok(())
        }
        ["--http", addr] => {
            let (headers, _) =
                mcpwire::mcp::annotations::ToolHeaders::from_tools_list(server.tools_list_json())
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
            let http = mcpwire::http::HttpServer::new(builder).tool_headers(headers);
            let listener = mcpwire::http::server::bind(addr).await?;
            eprintln!(
                "mcpwire: serving MCP on http://{}{}",
                listener.local_addr()?,
                http.endpoint()
            );
            let stop = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            http.serve(listener, move || server.handler(), stop).await
        }
        _ => {
            eprintln!("usage: everything --http ADDR | --stdio");
            std::process::exit(2);
        }
    }
}
