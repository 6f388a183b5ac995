//! The calls of a [`Client`]: typed (tools, resources, prompts, completion, change streams)
//! and raw (any method, any params).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use yoke::Yokeable;

use super::decoded::{Cart, Decoded};
use super::error::ClientError;
use super::host::Client;
use super::side::{Change, LEGACY_LISTENER, Listen, Listener, NO_ID_YET, Resolver};
use crate::RawJson;
use crate::mcp::Era;
use crate::mcp::types::{
    CallToolResult, CompleteResult, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, ProgressParams, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use crate::peer::{Incoming, RequestOptions};

/// Options of one call.
#[derive(Clone, Default)]
pub struct CallOptions {
    timeout: Option<Option<Duration>>,
    progress: Option<super::side::ProgressFn>,
    meta: Option<serde_json::Map<String, serde_json::Value>>,
    cancel: Option<CancellationToken>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("meta", &self.meta)
            .field("cancel", &self.cancel)
            .finish()
    }
}

impl CallOptions {
    /// The client's defaults.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// This call's timeout; `None` waits forever.
    #[must_use]
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Calls `f` with each `notifications/progress` the server sends about this call (the
    /// request carries a `progressToken` of the client's).
    #[must_use]
    pub fn on_progress(mut self, f: impl Fn(&ProgressParams<'_>) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// Sets a member of the request's `_meta`.
    #[must_use]
    pub fn meta(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.meta.get_or_insert_with(Default::default).insert(key.into(), value);
        self
    }

    /// Ends the call with [`ClientError::Cancelled`] when `token` fires (the server is told
    /// with `notifications/cancelled`). Dropping the call's future cancels it too.
    #[must_use]
    pub fn cancel_on(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
}

/// Params with the call's own `_meta`, as written.
#[derive(Serialize)]
struct With<'a, P: Serialize> {
    #[serde(flatten)]
    params: P,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

#[derive(Serialize)]
struct Named<'a, A: Serialize> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<A>,
}

#[derive(Serialize)]
struct Cursor<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<&'a str>,
}

#[derive(Serialize)]
struct Uri<'a> {
    uri: &'a str,
}

/// No arguments: what `call_tool` and `get_prompt` take for a tool or prompt without them.
/// It goes out as an empty object: `arguments`, when present, is an object, and servers that
/// check (the TypeScript SDK's) refuse a `null` there with -32602.
pub const NO_ARGUMENTS: NoArguments = NoArguments;

/// The type of [`NO_ARGUMENTS`]: serializes as `{}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoArguments;

impl Serialize for NoArguments {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        serializer.serialize_map(Some(0))?.end()
    }
}

impl Client {
    /// Sends `method` with `params` in the agreed era, fulfils the server's input requests
    /// with the callbacks the host registered (modern `input_required` rounds; a legacy
    /// server's requests come on their own), and returns the final answer.
    async fn send(
        &self,
        method: &str,
        params: Option<&str>,
        options: &CallOptions,
    ) -> Result<Incoming, ClientError> {
        let inner = &*self.0;
        let mut request = RequestOptions::new();
        if let Some(t) = options.timeout.or(inner.timeout.map(Some)) {
            request = request.timeout(t);
        }
        let params = params.map(RawJson::new);
        let call = async {
            if inner.agreed.era() == Era::Legacy {
                // A legacy server asks for input with requests of its own (answered by the
                // side's handler), never with an `input_required` result.
                let answer = inner.agreed.request(&inner.peer, method, params, request).await;
                return answer.map_err(|e| ClientError::request(method, e));
            }
            let resolver = Resolver(&inner.side);
            let answer = inner
                .agreed
                .request_with_input(&inner.peer, method, params, request, &resolver, inner.limits)
                .await;
            answer.map_err(|e| ClientError::input(method, e))
        };
        match &options.cancel {
            None => call.await,
            Some(token) => tokio::select! {
                r = call => r,
                () = token.cancelled() => Err(ClientError::Cancelled),
            },
        }
    }

    /// [`Client::send`] with serialisable params and the call's own `_meta`, decoded as `T`.
    async fn typed<T, P>(
        &self,
        method: &str,
        params: P,
        options: &CallOptions,
    ) -> Result<Decoded<T>, ClientError>
    where
        T: for<'a> Yokeable<'a>,
        for<'a> <T as Yokeable<'a>>::Output: serde::Deserialize<'a>,
        P: Serialize,
    {
        let route = options.progress.clone().map(|f| self.0.side.progress(f));
        let mut meta = options.meta.clone();
        if let Some(level) = self.0.log_level {
            let level = serde_json::to_value(level).unwrap_or(serde_json::Value::Null);
            meta.get_or_insert_with(Default::default)
                .insert(crate::mcp::LOG_LEVEL_KEY.into(), level);
        }
        if let Some(route) = &route {
            let token: serde_json::Value =
                serde_json::from_str(route.token()).unwrap_or(serde_json::Value::Null);
            meta.get_or_insert_with(Default::default).insert("progressToken".into(), token);
        }
        // Flattening costs serde a detour through a map: only a call with `_meta` takes it.
        let text = match &meta {
            None => serde_json::to_string(&params),
            Some(meta) => serde_json::to_string(&With { params, meta: Some(meta) }),
        }
        .map_err(|e| ClientError::invalid(method, format!("params: {e}")))?;
        let answer = self.send(method, Some(&text), options).await?;
        drop(route);
        Decoded::decode(Cart::Result(answer))
            .map_err(|e| ClientError::invalid(method, format!("result: {e}")))
    }

    /// Calls tool `name` with `arguments` (anything serde writes as an object; [`NO_ARGUMENTS`]
    /// for none).
    ///
    /// # Errors
    ///
    /// [`ClientError::Tool`] when the tool ran and failed (`isError`: the result is in the
    /// error), and the other kinds of [`ClientError`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let r = client.call_tool("echo", serde_json::json!({ "message": "hi" })).await?;
    /// assert_eq!(r.get().content[0].as_text(), Some("hi"));
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<Decoded<CallToolResult<'static>>, ClientError> {
        self.call_tool_with(name, arguments, &CallOptions::default()).await
    }

    /// [`Client::call_tool`] with options.
    ///
    /// # Errors
    ///
    /// As [`Client::call_tool`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// use mcpwire::mcp::client::{CallOptions, NO_ARGUMENTS};
    /// use std::sync::{Arc, Mutex};
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let s = seen.clone();
    /// let options = CallOptions::new()
    ///     .timeout(Some(std::time::Duration::from_secs(5)))
    ///     .on_progress(move |p| s.lock().unwrap().push(p.progress));
    /// let r = client.call_tool_with("work", NO_ARGUMENTS, &options).await?;
    /// assert_eq!(r.get().content[0].as_text(), Some("done"));
    /// assert_eq!(*seen.lock().unwrap(), [1.0, 2.0]);
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: &CallOptions,
    ) -> Result<Decoded<CallToolResult<'static>>, ClientError> {
        let params = Named { name, arguments: Some(arguments) };
        let r: Decoded<CallToolResult<'static>> = match &self.0.headers_learnt {
            None => self.typed("tools/call", params, options).await?,
            Some(learnt) => {
                // The tools' `x-mcp-header` annotations are learnt from a tool list.
                learnt.get_or_try_init(|| async { self.list_tools().await.map(drop) }).await?;
                match self.typed("tools/call", &params, options).await {
                    // The tool list changed since: learn it again, once.
                    Err(e) if e.code() == Some(crate::ErrorCode::HEADER_MISMATCH) => {
                        self.list_tools().await?;
                        self.typed("tools/call", &params, options).await?
                    }
                    r => r?,
                }
            }
        };
        if r.get().is_error {
            return Err(ClientError::Tool(Box::new(r)));
        }
        Ok(r)
    }

    /// One page of the tool list, from `cursor` (the first page with `None`).
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let page = client.list_tools_page(None, &Default::default()).await?;
    /// assert_eq!(page.get().tools.len(), 2);
    /// assert!(page.get().next_cursor.is_none());
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_tools_page(
        &self,
        cursor: Option<&str>,
        options: &CallOptions,
    ) -> Result<Decoded<ListToolsResult<'static>>, ClientError> {
        self.typed("tools/list", Cursor { cursor }, options).await
    }

    /// Every tool, page after page (at most [`ClientBuilder::max_pages`](super::ClientBuilder::max_pages)).
    /// Over Streamable HTTP the tools' `x-mcp-header` annotations are learnt on the way, so
    /// later calls mirror their arguments into headers.
    ///
    /// # Errors
    ///
    /// As any call, and [`ClientError::Invalid`] when the pages do not end.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let tools = client.list_tools().await?;
    /// assert_eq!(tools[0].get().name, "echo");
    /// assert_eq!(tools[0].get().description.as_deref(), Some("Returns its message"));
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_tools(&self) -> Result<Vec<Decoded<Tool<'static>>>, ClientError> {
        self.all(
            "tools/list",
            |p: &Decoded<ListToolsResult<'static>>| {
                (p.get().tools.len(), p.get().next_cursor.as_deref().map(str::to_owned))
            },
            |p, i| p.project(|r, _| r.tools[i].clone()),
        )
        .await
    }

    /// One page of the resource list.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let page = client.list_resources_page(None, &Default::default()).await?;
    /// assert_eq!(page.get().resources[0].uri, "mem://readme");
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_resources_page(
        &self,
        cursor: Option<&str>,
        options: &CallOptions,
    ) -> Result<Decoded<ListResourcesResult<'static>>, ClientError> {
        self.typed("resources/list", Cursor { cursor }, options).await
    }

    /// Every resource, page after page.
    ///
    /// # Errors
    ///
    /// As [`Client::list_tools`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let resources = client.list_resources().await?;
    /// assert_eq!(resources[0].get().uri, "mem://readme");
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_resources(&self) -> Result<Vec<Decoded<Resource<'static>>>, ClientError> {
        self.all(
            "resources/list",
            |p: &Decoded<ListResourcesResult<'static>>| {
                (p.get().resources.len(), p.get().next_cursor.as_deref().map(str::to_owned))
            },
            |p, i| p.project(|r, _| r.resources[i].clone()),
        )
        .await
    }

    /// One page of the resource template list.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let page = client.list_resource_templates_page(None, &Default::default()).await?;
    /// assert_eq!(page.get().resource_templates.len(), 1);
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<&str>,
        options: &CallOptions,
    ) -> Result<Decoded<ListResourceTemplatesResult<'static>>, ClientError> {
        self.typed("resources/templates/list", Cursor { cursor }, options).await
    }

    /// Every resource template, page after page.
    ///
    /// # Errors
    ///
    /// As [`Client::list_tools`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let templates = client.list_resource_templates().await?;
    /// assert_eq!(templates[0].get().uri_template, "mem://item/{id}");
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_resource_templates(
        &self,
    ) -> Result<Vec<Decoded<ResourceTemplate<'static>>>, ClientError> {
        self.all(
            "resources/templates/list",
            |p: &Decoded<ListResourceTemplatesResult<'static>>| {
                (
                    p.get().resource_templates.len(),
                    p.get().next_cursor.as_deref().map(str::to_owned),
                )
            },
            |p, i| p.project(|r, _| r.resource_templates[i].clone()),
        )
        .await
    }

    /// Reads the resource at `uri`.
    ///
    /// # Errors
    ///
    /// As any call; a resource the server does not have is a protocol error (-32002 from a
    /// legacy server, -32602 from a modern one).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let r = client.read_resource("mem://readme").await?;
    /// assert!(r.json().contains("Read me"));
    /// let missing = client.read_resource("mem://nothing").await.unwrap_err();
    /// assert_eq!(missing.code(), Some(mcpwire::ErrorCode::INVALID_PARAMS)); // modern era
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn read_resource(
        &self,
        uri: &str,
    ) -> Result<Decoded<ReadResourceResult<'static>>, ClientError> {
        self.read_resource_with(uri, &CallOptions::default()).await
    }

    /// [`Client::read_resource`] with options.
    ///
    /// # Errors
    ///
    /// As [`Client::read_resource`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// use mcpwire::mcp::client::CallOptions;
    /// let options = CallOptions::new().meta("trace", serde_json::json!("abc"));
    /// let r = client.read_resource_with("mem://item/1", &options).await?;
    /// assert!(r.json().contains("one"));
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: &CallOptions,
    ) -> Result<Decoded<ReadResourceResult<'static>>, ClientError> {
        self.typed("resources/read", Uri { uri }, options).await
    }

    /// One page of the prompt list.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let page = client.list_prompts_page(None, &Default::default()).await?;
    /// assert_eq!(page.get().prompts[0].name, "greet");
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_prompts_page(
        &self,
        cursor: Option<&str>,
        options: &CallOptions,
    ) -> Result<Decoded<ListPromptsResult<'static>>, ClientError> {
        self.typed("prompts/list", Cursor { cursor }, options).await
    }

    /// Every prompt, page after page.
    ///
    /// # Errors
    ///
    /// As [`Client::list_tools`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let prompts = client.list_prompts().await?;
    /// assert_eq!(prompts[0].get().name, "greet");
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_prompts(&self) -> Result<Vec<Decoded<Prompt<'static>>>, ClientError> {
        self.all(
            "prompts/list",
            |p: &Decoded<ListPromptsResult<'static>>| {
                (p.get().prompts.len(), p.get().next_cursor.as_deref().map(str::to_owned))
            },
            |p, i| p.project(|r, _| r.prompts[i].clone()),
        )
        .await
    }

    /// Gets prompt `name` with `arguments` (an object of strings; [`NO_ARGUMENTS`] for none).
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let p = client.get_prompt("greet", serde_json::json!({ "who": "Ada" })).await?;
    /// assert!(p.json().contains("Say hello to Ada"));
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<Decoded<GetPromptResult<'static>>, ClientError> {
        self.get_prompt_with(name, arguments, &CallOptions::default()).await
    }

    /// [`Client::get_prompt`] with options.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let options = mcpwire::mcp::client::CallOptions::new();
    /// let p = client.get_prompt_with("greet", serde_json::json!({ "who": "Bo" }), &options).await?;
    /// assert_eq!(p.get().messages.len(), 1);
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: &CallOptions,
    ) -> Result<Decoded<GetPromptResult<'static>>, ClientError> {
        self.typed("prompts/get", Named { name, arguments: Some(arguments) }, options).await
    }

    /// Completions for argument `argument` (typed so far: `value`) of a prompt
    /// (`{"type":"ref/prompt","name":…}`) or resource template
    /// (`{"type":"ref/resource","uri":…}`), `reference`.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let reference = CompleteRef::Prompt { name: "greet".into() };
    /// let done = client.complete(&reference, "who", "al").await?;
    /// assert_eq!(done.get().completion.values, ["alpha", "alpine"]);
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn complete(
        &self,
        reference: &crate::mcp::types::CompleteRef<'_>,
        argument: &str,
        value: &str,
    ) -> Result<Decoded<CompleteResult<'static>>, ClientError> {
        #[derive(Serialize)]
        struct Argument<'a> {
            name: &'a str,
            value: &'a str,
        }
        #[derive(Serialize)]
        struct Params<'a, R: Serialize> {
            #[serde(rename = "ref")]
            reference: R,
            argument: Argument<'a>,
        }
        let params = Params { reference, argument: Argument { name: argument, value } };
        self.typed("completion/complete", params, &CallOptions::default()).await
    }

    /// Pages through a list.
    async fn all<L, T>(
        &self,
        method: &str,
        read: impl Fn(&Decoded<L>) -> (usize, Option<String>),
        item: impl Fn(&Decoded<L>, usize) -> Decoded<T>,
    ) -> Result<Vec<Decoded<T>>, ClientError>
    where
        L: for<'a> Yokeable<'a>,
        for<'a> <L as Yokeable<'a>>::Output: serde::Deserialize<'a>,
        T: for<'a> Yokeable<'a>,
    {
        let options = CallOptions::default();
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..self.0.max_pages {
            let p: Decoded<L> =
                self.typed(method, Cursor { cursor: cursor.as_deref() }, &options).await?;
            let (n, next) = read(&p);
            out.extend((0..n).map(|i| item(&p, i)));
            match next {
                Some(next) if Some(&next) == cursor.as_ref() => {
                    return Err(ClientError::invalid(
                        method,
                        "the server gave the same cursor twice",
                    ));
                }
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
        Err(ClientError::invalid(
            method,
            format!("the list goes on past {} pages", self.0.max_pages),
        ))
    }

    /// Sends `method` with no params in the agreed era (raw layer: the answer as it came).
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let listed = client.request("tools/list").await?;
    /// assert!(listed.result().unwrap().get().contains("echo"));
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn request(&self, method: &str) -> Result<Incoming, ClientError> {
        self.send(method, None, &CallOptions::default()).await
    }

    /// Sends `method` with `params` (anything serde writes as an object) in the agreed era.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let params = serde_json::json!({ "name": "echo", "arguments": { "message": "raw" } });
    /// let answer = client.request_with("tools/call", params).await?;
    /// assert!(answer.result().unwrap().get().contains("raw"));
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn request_with(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<Incoming, ClientError> {
        let text = serde_json::to_string(&params)
            .map_err(|e| ClientError::invalid(method, format!("params: {e}")))?;
        self.send(method, Some(&text), &CallOptions::default()).await
    }

    /// Sends notification `method` with no params.
    ///
    /// # Errors
    ///
    /// When the connection is closed.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// client.notify("notifications/roots/list_changed").await?;
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn notify(&self, method: &str) -> Result<(), ClientError> {
        self.notify_raw(method, None).await
    }

    /// Sends notification `method` with `params`.
    ///
    /// # Errors
    ///
    /// When the params cannot be written or the connection is closed.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// let params = serde_json::json!({ "requestId": 99, "reason": "not needed" });
    /// client.notify_with("notifications/cancelled", params).await?;
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn notify_with(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<(), ClientError> {
        let text = serde_json::to_string(&params)
            .map_err(|e| ClientError::invalid(method, format!("params: {e}")))?;
        self.notify_raw(method, Some(&text)).await
    }

    async fn notify_raw(&self, method: &str, params: Option<&str>) -> Result<(), ClientError> {
        let inner = &*self.0;
        let sent = if inner.agreed.era() == Era::Modern {
            let meta = inner.agreed.meta();
            inner.peer.notify(method, Some(meta.params(params.map(RawJson::new)))).await
        } else {
            inner.peer.notify(method, params.map(RawJson::new)).await
        };
        sent.map_err(|e| ClientError::request(method, e))
    }

    /// A stream of the changes `filter` names: a `subscriptions/listen` request held open
    /// (modern), or the legacy session's list-changed notifications plus `resources/subscribe`
    /// for each resource named. Returns once the server has acknowledged (modern) or
    /// subscribed (legacy), so no change after that is missed. Dropping the stream ends the
    /// subscription.
    ///
    /// # Errors
    ///
    /// As any call (the server refuses the subscription, the connection closes).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::mcp::{Client, server::Server, types::*};
    /// # let server = Server::builder("demo", "1")
    /// #     .tool(Tool::new("echo").description("Returns its message"), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { message: String }
    /// #         Ok(CallToolResult::text(call.arguments::<A>()?.message))
    /// #     })
    /// #     .tool(Tool::new("work"), |call| async move {
    /// #         call.progress(1.0, Some(2.0), None).await;
    /// #         call.progress(2.0, Some(2.0), None).await;
    /// #         Ok(CallToolResult::text("done"))
    /// #     })
    /// #     .resource(Resource::new("mem://readme", "readme"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://readme", "text/plain", "Read me")))
    /// #     })
    /// #     .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |_| async move {
    /// #         Ok(ReadResourceResult::new(ResourceContents::text("mem://item/1", "text/plain", "one")))
    /// #     })
    /// #     .prompt(Prompt::new("greet").argument("who", "who to greet", true), |call| async move {
    /// #         #[derive(serde::Deserialize)] struct A { who: String }
    /// #         #[derive(serde::Deserialize)] struct P { arguments: A }
    /// #         let text = format!("Say hello to {}", call.params::<P>()?.arguments.who);
    /// #         Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
    /// #     })
    /// #     .completion(|_| async move { Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()])) })
    /// #     .build();
    /// let client = Client::connect(server.clone()).await?;
    /// use mcpwire::mcp::client::{Change, Listen};
    /// let mut changes = client.listen(Listen::new().tools().resource("mem://readme")).await?;
    /// server.tools_changed();
    /// assert_eq!(changes.next().await, Some(Change::Tools));
    /// server.resource_updated("mem://readme");
    /// assert_eq!(changes.next().await, Some(Change::Updated("mem://readme".into())));
    /// # Ok::<(), mcpwire::mcp::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn listen(&self, filter: Listen) -> Result<Changes, ClientError> {
        if self.era() == Era::Legacy {
            let listener = Arc::new(Listener::new(filter, LEGACY_LISTENER));
            self.0.side.add_listener(&listener);
            for uri in &listener.filter.uris {
                self.request_with("resources/subscribe", Uri { uri }).await?;
            }
            return Ok(Changes { listener, client: self.clone(), task: None });
        }
        let listener = Arc::new(Listener::new(filter, NO_ID_YET));
        self.0.side.add_listener(&listener);
        let params = listener.filter.params();
        let inner = self.0.clone();
        let (l, sink) = (listener.clone(), listener.id.clone());
        let task = tokio::spawn(async move {
            let mut options = RequestOptions::new().timeout(None);
            options.id_sink = Some(sink);
            let r = inner
                .agreed
                .request(&inner.peer, "subscriptions/listen", Some(RawJson::new(&params)), options)
                .await;
            let why = match r {
                Ok(_) => "the server ended the subscription".to_owned(),
                Err(e) => ClientError::request("subscriptions/listen", e).to_string(),
            };
            l.with(|s| s.ended = Some(why));
        });
        let watched = listener.clone();
        let changes = Changes { listener, client: self.clone(), task: Some(task) };
        loop {
            let notified = watched.wake.notified();
            let (acked, ended) = watched.peek(|s| (s.acked, s.ended.clone()));
            if acked {
                return Ok(changes);
            }
            if let Some(why) = ended {
                return Err(ClientError::invalid("subscriptions/listen", why));
            }
            notified.await;
        }
    }
}

/// A stream of changes from [`Client::listen`].
pub struct Changes {
    listener: Arc<Listener>,
    client: Client,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes").field("filter", &self.listener.filter).finish_non_exhaustive()
    }
}

impl Changes {
    /// The next change. Changes that came while the host was busy are kept once each (two
    /// updates of one resource are one [`Change::Updated`]). `None` once the subscription
    /// ended (the server closed it, or the connection).
    pub async fn next(&mut self) -> Option<Change> {
        loop {
            let notified = self.listener.wake.notified();
            let (next, ended) = self.listener.peek(|s| (s.changes.pop_first(), s.ended.is_some()));
            if next.is_some() {
                return next;
            }
            if ended || self.client.0.peer.is_closed() {
                return None;
            }
            tokio::select! {
                () = notified => {}
                () = self.client.0.peer.closing() => {}
            }
        }
    }

    /// The subscription's id (the `subscriptions/listen` request's), modern era only.
    #[must_use]
    pub fn id(&self) -> Option<u64> {
        let id = self.listener.id.load(Ordering::Acquire);
        (id < NO_ID_YET).then_some(id)
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            // Dropping the request's future sends `notifications/cancelled`.
            task.abort();
        }
        if self.client.era() == Era::Legacy && !self.listener.filter.uris.is_empty() {
            let side = &self.client.0.side;
            let uris: Vec<String> = (self.listener.filter.uris.iter())
                .filter(|u| !side.watched_elsewhere(&self.listener, u))
                .cloned()
                .collect();
            let client = self.client.clone();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    for uri in &uris {
                        let _ = client.request_with("resources/unsubscribe", Uri { uri }).await;
                    }
                });
            }
        }
    }
}

impl Change {
    /// Whether this is a list change (as opposed to one resource's update).
    #[must_use]
    pub fn is_list(&self) -> bool {
        !matches!(self, Self::Updated(_))
    }
}
