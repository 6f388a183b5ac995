//! A small server with one of everything, for trying a client against (and what the examples
//! in the client's documentation talk to).

use super::Server;
use crate::mcp::types::{
    CallToolResult, CompleteResult, Content, GetPromptResult, Prompt, PromptMessage,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Tool,
};

/// A server with one of each kind of thing a client can reach: an `echo` tool (returns its
/// `message`), a `work` tool (reports progress twice, then answers `done`), a resource
/// (`mem://readme`), a template (`mem://item/{id}`), a prompt (`greet`, with a `who` argument)
/// and completions (`alpha`, `alpine`). A client's examples and first tests can run against it
/// in process, with no server of their own.
///
/// # Examples
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use mcpwire::client::Client;
///
/// let client = Client::connect(mcpwire::server::demo()).await?;
/// let r = client.call_tool("echo", serde_json::json!({ "message": "hi" })).await?;
/// assert_eq!(r.get().content[0].as_text(), Some("hi"));
/// # Ok::<(), mcpwire::client::ClientError>(())
/// # }).unwrap();
/// ```
#[must_use]
pub fn demo() -> Server {
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
