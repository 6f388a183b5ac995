//! The server the examples in the client's documentation talk to. Not part of the API.

use super::Server;
use crate::mcp::types::{
    CallToolResult, CompleteResult, Content, GetPromptResult, Prompt, PromptMessage,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Tool,
};

/// A server with an `echo` and a `work` (progress) tool, a resource, a template, a prompt and
/// completions, for the documentation's runnable examples.
#[doc(hidden)]
#[must_use]
pub fn __doc_server() -> Server {
    #[derive(serde::Deserialize)]
    struct Message {
        message: String,
    }
    #[derive(serde::Deserialize)]
    struct Who {
        who: String,
    }
    #[derive(serde::Deserialize)]
    struct PromptParams {
        arguments: Who,
    }
    Server::builder("demo", "1")
        .tool(Tool::new("echo").description("Returns its message"), |call| async move {
            Ok(CallToolResult::text(call.arguments::<Message>()?.message))
        })
        .tool(Tool::new("work"), |call| async move {
            call.progress(1.0, Some(2.0), None).await;
            call.progress(2.0, Some(2.0), None).await;
            Ok(CallToolResult::text("done"))
        })
        .resource(Resource::new("mem://readme", "readme"), |_| async move {
            let text = ResourceContents::text("mem://readme", "text/plain", "Read me");
            Ok(ReadResourceResult::new(text))
        })
        .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
            Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
        })
        .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
            let text = format!("Say hello to {}", call.params::<PromptParams>()?.arguments.who);
            Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
        })
        .completion(
            |_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) },
        )
        .build()
}
