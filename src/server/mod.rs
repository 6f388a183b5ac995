//! An MCP server on the typed layer: a host registers tools, resources, prompts and a
//! completion handler; [`Server`] speaks the protocol around them, in both eras at once, on
//! every transport.
//!
//! What the server does so handlers never see it:
//! - **Eras.** A request whose `_meta` names a protocol version (2026-07-28) is served on its
//!   own: its envelope is checked (-32602, -32022), `server/discover` answers, results carry
//!   `resultType` and the server's identity, cacheable results their caching hints, and
//!   `subscriptions/listen` streams change notifications. Otherwise `initialize` opens a legacy
//!   session: `ping`, `logging/setLevel`, `resources/subscribe`, list-changed and
//!   resource-updated notifications.
//! - **Input from the client** ([`Call::ask`], [`InputRequired`]): in the modern era an
//!   `input_required` result, its `requestState` sealed with HMAC-SHA256 and checked on the
//!   retry (a changed state is -32602 before any handler runs); in the legacy era the same
//!   handler's requests are sent to the client as requests of their own and the handler is
//!   called again with the answers, at most [`MAX_INPUT_ROUNDS`](crate::limits::MAX_INPUT_ROUNDS) times.
//! - **Untrusted params.** Each method's params are decoded into the types of
//!   [`crate::mcp::types`]; what does not match is -32602 naming the field; a tool's bad
//!   arguments are a tool failure (`isError`), as MCP asks.
//!
//! # Examples
//!
//! The README's server (a tool that asks the user when it lacks an argument):
//!
//! ```
//! use mcpwire::server::Server;
//! use mcpwire::mcp::types::{CallToolResult, ElicitParams, ElicitResult, InputRequest, Tool};
//!
//! let server = Server::builder("greeter", "1.0.0")
//!     .tool(
//!         Tool::new("greet").input_schema(r#"{"type":"object","properties":{"who":{"type":"string"}}}"#),
//!         |call| async move {
//!             #[derive(serde::Deserialize)]
//!             struct Args<'a> { #[serde(borrow)] who: Option<std::borrow::Cow<'a, str>> }
//!             let who = match call.arguments::<Args<'_>>()?.who {
//!                 Some(who) => who.into_owned(),
//!                 // Ask the user: a request to the client in a legacy session, an
//!                 // `input_required` result (answered by the client's retry) in the modern era.
//!                 None => {
//!                     let form = r#"{"type":"object","properties":{"name":{"type":"string"}}}"#;
//!                     let answer = call.ask("name", InputRequest::elicit(&ElicitParams::form("Who?", form))).await?;
//!                     answer.decode::<ElicitResult<'_>>()?.text("name")?.unwrap_or_default().into_owned()
//!                 }
//!             };
//!             Ok(CallToolResult::text(format!("hello, {who}")))
//!         },
//!     )
//!     .build();
//! // Serve it: `PeerBuilder::new().spawn(reader, writer, server.handler())` over any stream,
//! // `transport::serve_tcp_until(listener, builder, move || server.handler(), stop)`, or
//! // `HttpServer::new(builder).serve(listener, move || server.handler(), stop)`.
//! # let _ = server;
//! ```

mod builder;
mod call;
mod demo;
mod dispatch;
mod listen;
mod param_slots;
mod scopes;
mod skills;
mod tasks;

use crate::limits::DEFAULT_LIST_TTL;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::broadcast;

use crate::mcp::Era;
use crate::transport::{BadTarget, IntoTarget, Target};
pub use builder::ServerBuilder;
pub use call::{Answer, Call, HandlerError, InputRequired};
pub use demo::demo;
pub use scopes::Scoped;
pub use skills::{Skills, SkillsError};

use crate::mcp::seal::StateKey;
use crate::mcp::types::{
    CacheScope, CompleteResult, DiscoverResult, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel, Prompt, Raw,
    ReadResourceResult, Resource, ResourceTemplate, ServerCapabilities,
};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type HandlerFn<T> = Box<dyn Fn(Call) -> BoxFuture<Result<T, HandlerError>> + Send + Sync>;

fn boxed<T, F, Fut>(f: F) -> HandlerFn<T>
where
    F: Fn(Call) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, HandlerError>> + Send + 'static,
{
    Box::new(move |call| Box::pin(f(call)))
}

/// A tool as registered: its definition, the one era it is served in (`None`: both) and its
/// handler.
pub(crate) type ToolEntry = (
    crate::mcp::types::Tool<'static>,
    Option<Era>,
    HandlerFn<crate::mcp::types::CallToolResult<'static>>,
);

/// `_meta` of every modern result: the server's identity.
#[derive(Serialize)]
struct ServerMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    info: &'a Implementation<'static>,
}

/// The list results, encoded once, for each era.
struct Lists {
    tools: [String; 2],
    /// The same, typed: what a list cut down for one caller starts from.
    typed_tools: [ListToolsResult<'static>; 2],
    /// The `tools/list` result of every tool, whatever its era: what
    /// [`Server::tools_list_json`] gives.
    all_tools: String,
    resources: [String; 2],
    templates: [String; 2],
    prompts: [String; 2],
    discover: String,
}

impl Lists {
    fn new(
        b: &ServerBuilder,
        caps: &ServerCapabilities<'static>,
        meta: &RawValue,
        ttl: u64,
    ) -> Self {
        let hints = |r: &mut Option<u64>, s: &mut Option<CacheScope>| {
            *r = Some(ttl);
            *s = Some(CacheScope::Public);
        };
        let in_era = |era: Era| ListToolsResult {
            tools: b
                .tools
                .iter()
                .filter(|(_, only, _)| only.is_none_or(|e| e == era))
                .map(|(t, _, _)| t.clone())
                .collect(),
            ..Default::default()
        };
        let all_tools = json(&ListToolsResult {
            tools: b.tools.iter().map(|(t, _, _)| t.clone()).collect(),
            ..Default::default()
        });
        let legacy_typed = in_era(Era::Legacy);
        let legacy_tools = json(&legacy_typed);
        let mut tools = in_era(Era::Modern);
        let mut resources = ListResourcesResult {
            resources: b
                .resources
                .iter()
                .map(|(r, _)| r.clone())
                .chain(b.skills.iter().flat_map(Skills::listed))
                .collect(),
            ..Default::default()
        };
        let mut templates = ListResourceTemplatesResult {
            resource_templates: b.templates.iter().map(|(t, _)| t.clone()).collect(),
            ..Default::default()
        };
        let mut prompts = ListPromptsResult {
            prompts: b.prompts.iter().map(|(p, _)| p.clone()).collect(),
            ..Default::default()
        };
        let legacy = [legacy_tools, json(&resources), json(&templates), json(&prompts)];
        hints(&mut tools.ttl_ms, &mut tools.cache_scope);
        hints(&mut resources.ttl_ms, &mut resources.cache_scope);
        hints(&mut templates.ttl_ms, &mut templates.cache_scope);
        hints(&mut prompts.ttl_ms, &mut prompts.cache_scope);
        let discover = DiscoverResult {
            supported_versions: crate::mcp::MODERN_VERSIONS.iter().map(|v| (*v).into()).collect(),
            capabilities: caps.clone(),
            instructions: b.instructions.clone().map(Into::into),
            ttl_ms: Some(ttl),
            cache_scope: Some(CacheScope::Public),
        };
        let [t, r, rt, p] = legacy;
        Self {
            tools: [t, modern_json(&tools, "complete", meta)],
            typed_tools: [legacy_typed, tools],
            all_tools,
            resources: [r, modern_json(&resources, "complete", meta)],
            templates: [rt, modern_json(&templates, "complete", meta)],
            prompts: [p, modern_json(&prompts, "complete", meta)],
            discover: modern_json(&discover, "complete", meta),
        }
    }
}

fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("the typed results always serialise")
}

/// A modern result: `value`'s members, then `resultType` and the server's identity.
#[derive(Serialize)]
pub(crate) struct Finished<'a, T> {
    #[serde(flatten)]
    pub(crate) result: &'a T,
    #[serde(rename = "resultType")]
    pub(crate) result_type: &'a str,
    #[serde(rename = "_meta")]
    pub(crate) meta: &'a RawValue,
}

fn modern_json<T: Serialize>(value: &T, result_type: &str, meta: &RawValue) -> String {
    json(&Finished { result: value, result_type, meta })
}

/// What every connection to a [`Server`] shares: what it serves and how (its lists, scopes,
/// sealing key), its change feed and its tasks.
pub(crate) struct ServerState {
    info: Implementation<'static>,
    instructions: Option<String>,
    capabilities: ServerCapabilities<'static>,
    /// `{"io.modelcontextprotocol/serverInfo": …}`.
    meta: Box<RawValue>,
    tools: Vec<ToolEntry>,
    tool_index: HashMap<String, usize>,
    resources: Vec<(Resource<'static>, HandlerFn<ReadResourceResult<'static>>)>,
    templates: Vec<(ResourceTemplate<'static>, HandlerFn<ReadResourceResult<'static>>)>,
    prompts: Vec<(Prompt<'static>, HandlerFn<GetPromptResult<'static>>)>,
    prompt_index: HashMap<String, usize>,
    completion: Option<HandlerFn<CompleteResult<'static>>>,
    lists: Lists,
    key: StateKey,
    changes: broadcast::Sender<Change>,
    scopes: scopes::Scopes,
    tasks: tasks::Store,
    skills: Option<skills::Served>,
}

/// A change announced to listeners.
#[derive(Clone, Debug)]
pub(crate) enum Change {
    Tools,
    Prompts,
    Resources,
    Updated(Arc<str>),
    /// A task's status changed (its id).
    Task(Arc<str>),
}

/// An MCP server: cheap to clone, shared by every connection.
#[derive(Clone)]
pub struct Server(pub(crate) Arc<ServerState>);

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("info", &self.0.info).finish_non_exhaustive()
    }
}

impl From<Server> for Target {
    /// The server in this process, a fresh [`Server::handler`] per connection.
    fn from(server: Server) -> Self {
        Target::in_process_handler("in-process", crate::peer::PeerBuilder::new(), move || {
            server.handler()
        })
    }
}

impl IntoTarget for Server {
    fn into_target(self) -> Result<Target, BadTarget> {
        Ok(self.into())
    }
}

impl Server {
    /// A server named `name` at `version`.
    #[must_use]
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name.into(), version.into()),
            instructions: None,
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            completion: None,
            list_ttl: DEFAULT_LIST_TTL,
            lists_change: true,
            key: None,
            scopes: scopes::Scopes::default(),
            task_bounds: tasks::Bounds::default(),
            skills: None,
        }
    }

    /// A handler for one connection (or HTTP session, or stateless HTTP peer): give it to the
    /// peer, a transport's `serve_*`, or the HTTP server's factory.
    #[must_use]
    pub fn handler(&self) -> ConnectionHandler {
        ConnectionHandler { server: self.clone(), session: Arc::new(ConnectionState::default()) }
    }

    /// A `tools/list` result of every tool (those of one era only included) as JSON: what the
    /// HTTP server reads the tools' `x-mcp-header` annotations from
    /// (`ToolHeaders::from_tools_list`).
    #[must_use]
    pub fn tools_list_json(&self) -> &str {
        &self.0.lists.all_tools
    }

    /// What the server declares.
    #[must_use]
    pub fn capabilities(&self) -> &ServerCapabilities<'static> {
        &self.0.capabilities
    }

    /// Tells listeners the tool list changed (`notifications/tools/list_changed`: legacy
    /// sessions, and modern `subscriptions/listen` streams that asked for it).
    /// Nothing when the server was built with `lists_change(false)`.
    pub fn tools_changed(&self) {
        if self.0.capabilities.tools.is_some_and(|c| c.list_changed == Some(true)) {
            let _ = self.0.changes.send(Change::Tools);
        }
    }

    /// Tells listeners the prompt list changed (nothing with `lists_change(false)`).
    pub fn prompts_changed(&self) {
        if self.0.capabilities.prompts.is_some_and(|c| c.list_changed == Some(true)) {
            let _ = self.0.changes.send(Change::Prompts);
        }
    }

    /// Tells listeners the resource list changed (nothing with `lists_change(false)`).
    pub fn resources_changed(&self) {
        if self.0.capabilities.resources.is_some_and(|c| c.list_changed == Some(true)) {
            let _ = self.0.changes.send(Change::Resources);
        }
    }

    /// Tells the clients subscribed to `uri` that it changed
    /// (`notifications/resources/updated`).
    pub fn resource_updated(&self, uri: &str) {
        let _ = self.0.changes.send(Change::Updated(uri.into()));
    }
}

/// What one connection remembers: legacy session state and what is open on it.
#[derive(Debug, Default)]
pub(crate) struct ConnectionState {
    /// `initialize` succeeded.
    initialized: AtomicBool,
    /// The capabilities `initialize` declared.
    capabilities: OnceLock<Arc<str>>,
    /// The least severe level `logging/setLevel` asked for (a [`LoggingLevel`] as u8).
    log_level: AtomicU8,
    /// Resources `resources/subscribe` named.
    subscribed: Mutex<Vec<String>>,
    /// `subscriptions/listen` streams open.
    listens: AtomicUsize,
    /// The task that forwards change notifications to a legacy session is running.
    forwarding: AtomicBool,
    /// The session's number as the owner of tasks, given when it first makes one.
    task_owner: OnceLock<u64>,
}

impl ConnectionState {
    pub(crate) fn log_level(&self) -> LoggingLevel {
        const LEVELS: [LoggingLevel; 8] = [
            LoggingLevel::Debug,
            LoggingLevel::Info,
            LoggingLevel::Notice,
            LoggingLevel::Warning,
            LoggingLevel::Error,
            LoggingLevel::Critical,
            LoggingLevel::Alert,
            LoggingLevel::Emergency,
        ];
        LEVELS[usize::from(self.log_level.load(Ordering::Relaxed)).min(7)]
    }
}

/// The peer handler of one connection to a [`Server`].
#[derive(Debug)]
pub struct ConnectionHandler {
    server: Server,
    session: Arc<ConnectionState>,
}

/// The extensions the server declares: the members of each declaring part, in one object.
fn extensions<const N: usize>(parts: [Option<Raw<'static>>; N]) -> Option<Raw<'static>> {
    let mut all = serde_json::Map::new();
    for part in parts.into_iter().flatten() {
        if let Ok(serde_json::Value::Object(members)) = serde_json::from_str(part.get()) {
            all.extend(members);
        }
    }
    (!all.is_empty()).then(|| Raw::to_json(&all).expect("a map of JSON values"))
}
