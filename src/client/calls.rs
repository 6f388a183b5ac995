//! The calls of a [`Client`]: typed (tools, resources, prompts, completion, change streams)
//! and raw (any method, any params).

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use yoke::Yokeable;

use super::callbacks::Resolver;
use super::client::Client;
use super::decoded::{Cart, Decoded};
use super::error::ClientError;
use crate::mcp::Era;
use crate::mcp::input_rounds::{Outcome, created_task, outcome_of};
use crate::mcp::types::{CallToolResult, ListToolsResult, ProgressParams, Tool};
use crate::message::RawJson;
use crate::peer::{Incoming, RequestOptions, Timeout};

/// Options of one call.
#[derive(Clone, Default)]
pub struct CallOptions {
    timeout: Timeout,
    progress: Option<super::callbacks::ProgressFn>,
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
        self.timeout = Timeout::from_option(timeout);
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
    /// with `notifications/cancelled`, or `tasks/cancel` once the call runs as a task).
    /// Dropping the call's future cancels it too (a task it started runs on).
    #[must_use]
    pub fn cancel_on(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// This call's timeout, else the client's (`default`), else the peer's.
    pub(super) fn timeout_or(&self, default: Option<Duration>) -> Timeout {
        self.timeout.or(default.map_or(Timeout::PeerDefault, Timeout::After))
    }

    /// The call's cancellation token.
    pub(super) fn cancel_token(&self) -> Option<&CancellationToken> {
        self.cancel.as_ref()
    }
}

/// What a `tools/call` was answered: the tool's result, or a task that will produce it.
pub(super) enum ToolAnswer {
    Done(Decoded<CallToolResult<'static>>),
    Task { id: String, suggested_ms: Option<u64> },
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
pub(super) struct Named<'a, A: Serialize> {
    pub(super) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) arguments: Option<A>,
}

#[derive(Serialize)]
pub(super) struct Cursor<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cursor: Option<&'a str>,
}

#[derive(Serialize)]
pub(super) struct Uri<'a> {
    pub(super) uri: &'a str,
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

/// Refuses `arguments` that serde does not write as a JSON object: MCP's tool and prompt
/// arguments are an object, and nothing else is sent. Written once to nowhere (no allocation)
/// to see its first byte; a value that cannot be written at all is left to the real write.
pub(super) fn object_arguments(
    method: &str,
    arguments: &impl Serialize,
) -> Result<(), ClientError> {
    struct First(Option<u8>);
    impl std::io::Write for First {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if self.0.is_none() {
                self.0 = bytes.first().copied();
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut first = First(None);
    if serde_json::to_writer(&mut first, arguments).is_err() {
        return Ok(());
    }
    let got = match first.0 {
        Some(b'{') => return Ok(()),
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b'n') => "null (NO_ARGUMENTS sends none)",
        Some(b't' | b'f') => "a boolean",
        _ => "a number",
    };
    Err(ClientError::invalid(
        method,
        format!("arguments must be a JSON object, not {got}; nothing was sent"),
    ))
}

impl Client {
    /// The request options of one call with `options`.
    pub(super) fn request_options(&self, options: &CallOptions) -> RequestOptions {
        let mut request = RequestOptions::new();
        request.timeout = options.timeout_or(self.0.timeout);
        request
    }

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
        let request = self.request_options(options);
        let params = params.map(RawJson::new);
        let call = async {
            if inner.agreed.era() == Era::Legacy {
                // A legacy server asks for input with requests of its own (answered by the
                // side's handler), never with an `input_required` result.
                let answer = inner.agreed.request(&inner.peer, method, params, request).await;
                return answer.map_err(|e| ClientError::request(method, e));
            }
            let resolver = Resolver(&inner.callbacks);
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
    pub(super) async fn typed<T, P>(
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
        let answer = self.answer(method, params, options).await?;
        Decoded::decode(Cart::Result(answer))
            .map_err(|e| ClientError::invalid(method, format!("result: {e}")))
    }

    /// [`Client::send`] with serialisable params and the call's own `_meta`.
    async fn answer<P: Serialize>(
        &self,
        method: &str,
        params: P,
        options: &CallOptions,
    ) -> Result<Incoming, ClientError> {
        let route = options.progress.clone().map(|f| self.0.callbacks.progress(f));
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
        Ok(answer)
    }

    /// Calls tool `name` with `arguments` (anything serde writes as an object; [`NO_ARGUMENTS`]
    /// for none).
    ///
    /// # Errors
    ///
    /// [`ClientError::Invalid`] naming `arguments`, before anything is sent, when they are not
    /// written as a JSON object (an array, a number, a string, `null`);
    /// [`ClientError::Tool`] when the tool ran and failed (`isError`: the result is in the
    /// error), and the other kinds of [`ClientError`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let r = client.call_tool("echo", serde_json::json!({ "message": "hi" })).await?;
    /// assert_eq!(r.get().content[0].as_text(), Some("hi"));
    /// # Ok::<(), mcpwire::client::ClientError>(())
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
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// use mcpwire::client::{CallOptions, NO_ARGUMENTS};
    /// use std::sync::{Arc, Mutex};
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let s = seen.clone();
    /// let options = CallOptions::new()
    ///     .timeout(Some(std::time::Duration::from_secs(5)))
    ///     .on_progress(move |p| s.lock().unwrap().push(p.progress));
    /// let r = client.call_tool_with("work", NO_ARGUMENTS, &options).await?;
    /// assert_eq!(r.get().content[0].as_text(), Some("done"));
    /// assert_eq!(*seen.lock().unwrap(), [1.0, 2.0]);
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: &CallOptions,
    ) -> Result<Decoded<CallToolResult<'static>>, ClientError> {
        match self.call_tool_answer(name, arguments, options).await? {
            ToolAnswer::Done(r) => Ok(r),
            ToolAnswer::Task { id, suggested_ms } => {
                self.settle_tool_task(&id, suggested_ms, options).await
            }
        }
    }

    /// Sends `tools/call` and reads what came back: the tool's result (an `isError` one is
    /// [`ClientError::Tool`]), or the task the server runs it as.
    pub(super) async fn call_tool_answer(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: &CallOptions,
    ) -> Result<ToolAnswer, ClientError> {
        const METHOD: &str = "tools/call";
        object_arguments(METHOD, &arguments)?;
        let params = Named { name, arguments: Some(arguments) };
        let answer = match &self.0.headers_learnt {
            None => self.answer(METHOD, params, options).await?,
            Some(learnt) => {
                // The tools' `x-mcp-header` annotations are learnt from a tool list.
                learnt.get_or_try_init(|| async { self.list_tools().await.map(drop) }).await?;
                match self.answer(METHOD, &params, options).await {
                    // The tool list changed since: learn it again, once.
                    Err(e) if e.code() == Some(crate::error::ErrorCode::HEADER_MISMATCH) => {
                        self.list_tools().await?;
                        self.answer(METHOD, &params, options).await?
                    }
                    r => r?,
                }
            }
        };
        if let Some(result) = answer.result()
            && matches!(outcome_of(&answer.message(), result), Ok(Outcome::Task))
        {
            let (id, suggested_ms) =
                created_task(result).map_err(|e| ClientError::invalid(METHOD, e))?;
            return Ok(ToolAnswer::Task { id, suggested_ms });
        }
        let r: Decoded<CallToolResult<'static>> = Decoded::decode(Cart::Result(answer))
            .map_err(|e| ClientError::invalid(METHOD, format!("result: {e}")))?;
        if r.get().is_error {
            return Err(ClientError::Tool(Box::new(r)));
        }
        Ok(ToolAnswer::Done(r))
    }

    /// One page of the tool list, from `cursor` (the first page with `None`).
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let page = client.list_tools_page(None, &Default::default()).await?;
    /// assert_eq!(page.get().tools.len(), 2);
    /// assert!(page.get().next_cursor.is_none());
    /// # Ok::<(), mcpwire::client::ClientError>(())
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
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let tools = client.list_tools().await?;
    /// assert_eq!(tools[0].get().name, "echo");
    /// assert_eq!(tools[0].get().description.as_deref(), Some("Returns its message"));
    /// # Ok::<(), mcpwire::client::ClientError>(())
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

    /// Sends `method` with no params in the agreed era (raw layer: the answer as it came).
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let listed = client.request("tools/list").await?;
    /// assert!(listed.result().unwrap().get().contains("echo"));
    /// # Ok::<(), mcpwire::client::ClientError>(())
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
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let params = serde_json::json!({ "name": "echo", "arguments": { "message": "raw" } });
    /// let answer = client.request_with("tools/call", params).await?;
    /// assert!(answer.result().unwrap().get().contains("raw"));
    /// # Ok::<(), mcpwire::client::ClientError>(())
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
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// client.notify("notifications/roots/list_changed").await?;
    /// # Ok::<(), mcpwire::client::ClientError>(())
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
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let params = serde_json::json!({ "requestId": 99, "reason": "not needed" });
    /// client.notify_with("notifications/cancelled", params).await?;
    /// # Ok::<(), mcpwire::client::ClientError>(())
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
}
