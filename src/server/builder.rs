//! [`ServerBuilder`]: what a host registers (tools, resources, templates, prompts, completion,
//! skills, scopes, bounds) before [`Server`] encodes its lists once.

use crate::limits::CHANGE_BACKLOG;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use super::{
    Call, HandlerError, HandlerFn, Lists, Scoped, Server, ServerMeta, ServerState, Skills,
    ToolEntry, boxed, extensions, scopes, skills, tasks,
};
use crate::mcp::Era;
use crate::mcp::seal::StateKey;
use crate::mcp::types::{
    CallToolResult, CompleteResult, Empty, GetPromptResult, Implementation, ListChanged, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, ResourcesCapability, ServerCapabilities, Tool,
};

/// Builds a [`Server`].
pub struct ServerBuilder {
    pub(super) info: Implementation<'static>,
    pub(super) instructions: Option<String>,
    pub(super) tools: Vec<ToolEntry>,
    pub(super) resources: Vec<(Resource<'static>, HandlerFn<ReadResourceResult<'static>>)>,
    pub(super) templates: Vec<(ResourceTemplate<'static>, HandlerFn<ReadResourceResult<'static>>)>,
    pub(super) prompts: Vec<(Prompt<'static>, HandlerFn<GetPromptResult<'static>>)>,
    pub(super) completion: Option<HandlerFn<CompleteResult<'static>>>,
    pub(super) list_ttl: Duration,
    pub(super) lists_change: bool,
    pub(super) key: Option<StateKey>,
    pub(super) scopes: scopes::Scopes,
    pub(super) task_bounds: tasks::Bounds,
    pub(super) skills: Option<Skills>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder").field("info", &self.info).finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// How to use the server, for the model (`initialize` and `server/discover`).
    #[must_use]
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// A tool and its handler, served in both eras. A tool of the same name replaces the
    /// earlier one.
    #[must_use]
    pub fn tool<F, Fut>(mut self, tool: Tool<'static>, handler: F) -> Self
    where
        F: Fn(Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult<'static>, HandlerError>> + Send + 'static,
    {
        self.tools.retain(|(t, _, _)| t.name != tool.name);
        self.tools.push((tool, None, boxed(handler)));
        self
    }

    /// A tool served in one era only: that era's `tools/list` lists it and its requests call
    /// it; to the other era's requests it does not exist (`tools/call` answers -32602, "Unknown
    /// tool", as for any name the server does not know). For a tool whose job belongs to one
    /// era, such as one that works the event streams of a legacy Streamable HTTP session. A
    /// tool of the same name replaces the earlier one.
    #[must_use]
    pub fn tool_in<F, Fut>(mut self, era: Era, tool: Tool<'static>, handler: F) -> Self
    where
        F: Fn(Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult<'static>, HandlerError>> + Send + 'static,
    {
        self.tools.retain(|(t, _, _)| t.name != tool.name);
        self.tools.push((tool, Some(era), boxed(handler)));
        self
    }

    /// A resource and the handler that reads it.
    #[must_use]
    pub fn resource<F, Fut>(mut self, resource: Resource<'static>, read: F) -> Self
    where
        F: Fn(Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult<'static>, HandlerError>> + Send + 'static,
    {
        self.resources.push((resource, boxed(read)));
        self
    }

    /// A resource template and the handler that reads any URI it matches (see
    /// [`crate::mcp::types::match_template`]).
    #[must_use]
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate<'static>, read: F) -> Self
    where
        F: Fn(Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult<'static>, HandlerError>> + Send + 'static,
    {
        self.templates.push((template, boxed(read)));
        self
    }

    /// A prompt and its handler.
    #[must_use]
    pub fn prompt<F, Fut>(mut self, prompt: Prompt<'static>, get: F) -> Self
    where
        F: Fn(Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult<'static>, HandlerError>> + Send + 'static,
    {
        self.prompts.retain(|(p, _)| p.name != prompt.name);
        self.prompts.push((prompt, boxed(get)));
        self
    }

    /// The `completion/complete` handler (the server then declares `completions`).
    #[must_use]
    pub fn completion<F, Fut>(mut self, complete: F) -> Self
    where
        F: Fn(Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CompleteResult<'static>, HandlerError>> + Send + 'static,
    {
        self.completion = Some(boxed(complete));
        self
    }

    /// Requires `scope` of the caller's access token to use `on` (a tool, prompt or resource;
    /// repeatable): a caller without it, or a transport that checks no one, gets
    /// [`ErrorCode::INSUFFICIENT_SCOPE`](crate::ErrorCode::INSUFFICIENT_SCOPE) naming the
    /// scopes to ask for (403 `insufficient_scope` from a guarded `HttpServer`). The caller is
    /// [`Call::principal`].
    #[must_use]
    pub fn require_scope(mut self, on: Scoped, scope: impl Into<String>) -> Self {
        self.scopes.require(on, scope.into());
        self
    }

    /// Whether `tools/list` lists only the tools the caller's scopes permit (off by default:
    /// every tool is listed, and calling one the caller may not use is refused).
    #[must_use]
    pub fn list_only_permitted(mut self, hide: bool) -> Self {
        self.scopes.hide_forbidden = hide;
        self
    }

    /// How long clients may cache list results (`ttlMs`, 2026-07-28); default
    /// [`DEFAULT_LIST_TTL`](crate::limits::DEFAULT_LIST_TTL).
    #[must_use]
    pub fn list_ttl(mut self, ttl: Duration) -> Self {
        self.list_ttl = ttl;
        self
    }

    /// Whether the tool, prompt and resource lists may change while the server runs (by
    /// default they may): declared as `listChanged` in the capabilities. A server whose lists
    /// are fixed says `false`, so clients know no `notifications/*/list_changed` will come;
    /// [`Server::tools_changed`], [`Server::prompts_changed`] and
    /// [`Server::resources_changed`] then send nothing. Resource updates
    /// ([`Server::resource_updated`]) are not affected.
    #[must_use]
    pub fn lists_change(mut self, change: bool) -> Self {
        self.lists_change = change;
        self
    }

    /// The key `requestState` is sealed with. By default each server makes a random one; give
    /// every instance behind a load balancer the same key, so any of them can open a state
    /// another one sealed.
    #[must_use]
    pub fn request_state_key(mut self, key: [u8; 32]) -> Self {
        self.key = Some(StateKey::new(key));
        self
    }

    /// Serves `skills` (the skills extension, `io.modelcontextprotocol/skills`, with
    /// `directoryRead`): see [`Skills`].
    #[must_use]
    pub fn skills(mut self, skills: Skills) -> Self {
        self.skills = Some(skills);
        self
    }

    /// The server.
    #[must_use]
    pub fn build(self) -> Server {
        let list_changed = self.lists_change.then_some(true);
        let capabilities = ServerCapabilities {
            tools: (!self.tools.is_empty()).then_some(ListChanged { list_changed }),
            resources: (!self.resources.is_empty()
                || !self.templates.is_empty()
                || self.skills.is_some())
            .then_some(ResourcesCapability { subscribe: Some(true), list_changed }),
            prompts: (!self.prompts.is_empty()).then_some(ListChanged { list_changed }),
            logging: Some(Empty {}),
            completions: self.completion.is_some().then_some(Empty {}),
            extensions: extensions([
                tasks::declared(&self.tools),
                self.skills.as_ref().map(|_| skills::capability()),
            ]),
            experimental: None,
        };
        let meta = serde_json::value::to_raw_value(&ServerMeta { info: &self.info })
            .expect("strings always serialise");
        let ttl_ms = u64::try_from(self.list_ttl.as_millis()).unwrap_or(u64::MAX);
        let lists = Lists::new(&self, &capabilities, &meta, ttl_ms);
        let (changes, _) = broadcast::channel(CHANGE_BACKLOG);
        let state = ServerState {
            tool_index: self
                .tools
                .iter()
                .enumerate()
                .map(|(i, (t, _, _))| (t.name.to_string(), i))
                .collect(),
            prompt_index: self
                .prompts
                .iter()
                .enumerate()
                .map(|(i, (p, _))| (p.name.to_string(), i))
                .collect(),
            info: self.info,
            instructions: self.instructions,
            capabilities,
            meta,
            tools: self.tools,
            resources: self.resources,
            templates: self.templates,
            prompts: self.prompts,
            completion: self.completion,
            lists,
            key: self.key.unwrap_or_else(StateKey::random),
            changes,
            scopes: self.scopes,
            tasks: tasks::Store::new(self.task_bounds),
            skills: self.skills.map(|s| skills::Served::new(s, ttl_ms)),
        };
        Server(Arc::new(state))
    }
}

/// The bounds of tasks (`server::tasks`).
impl ServerBuilder {
    /// The most tasks held for one client at once (running, waiting for input, or finished
    /// and kept); past it a call that would become a task is refused (-32000). Default
    /// [`DEFAULT_MAX_TASKS_PER_CLIENT`](crate::limits::DEFAULT_MAX_TASKS_PER_CLIENT).
    #[must_use]
    pub fn max_tasks_per_client(mut self, n: usize) -> Self {
        self.task_bounds.per_client = n;
        self
    }

    /// The most tasks the server holds in all (-32000 past it). Default
    /// [`DEFAULT_MAX_TASKS`](crate::limits::DEFAULT_MAX_TASKS).
    #[must_use]
    pub fn max_tasks(mut self, n: usize) -> Self {
        self.task_bounds.total = n;
        self
    }

    /// How long a finished task, and its result, is kept after it finishes (its `ttlMs`; at
    /// least a millisecond). Default [`DEFAULT_TASK_RESULT_TTL`](crate::limits::DEFAULT_TASK_RESULT_TTL).
    #[must_use]
    pub fn task_result_ttl(mut self, ttl: Duration) -> Self {
        self.task_bounds.result_ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// The most bytes of encoded result a task keeps; a larger result fails the task
    /// (-32603). Default [`DEFAULT_MAX_TASK_RESULT_BYTES`](crate::limits::DEFAULT_MAX_TASK_RESULT_BYTES).
    #[must_use]
    pub fn max_task_result_bytes(mut self, n: usize) -> Self {
        self.task_bounds.result_bytes = n;
        self
    }
}
