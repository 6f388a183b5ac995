//! Routes each request to its handler, by era, and encodes what comes back.

use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::ToolEntry;
use super::call::Capabilities;
use super::param_slots::{Key, ParamSlots, Slot};
use super::tasks::run::Started;
use super::{
    BoxFuture, Call, ConnectionHandler, HandlerError, HandlerFn, InputRequired, ServerState,
};
use crate::mcp::meta::{Meta, Rejection, check_meta, member, str_of};
use crate::mcp::types::{
    CacheScope, CallToolResult, InitializeResult, LoggingLevel, ReadResourceResult, SetLevelParams,
    match_template,
};
use crate::mcp::{self, Era, LEGACY_VERSIONS, MODERN_VERSIONS};
use crate::message::members::Members;
use crate::peer::{Context, Handler, Incoming, Reply, RpcError};
use crate::{error::ErrorCode, message::RawJson};

/// What a request's handler returns, before it is encoded.
enum Kind {
    Tool,
    Prompt,
    Resource,
    Complete,
}

/// What a request carries for its handler. The dispatcher lends it (a request's future holds it
/// once, however deep the calls that read it).
struct Envelope {
    era: Era,
    log_level: Option<LoggingLevel>,
    capabilities: Capabilities,
    /// The members of `params` read so far.
    slots: ParamSlots,
}

/// A request's era and what it carries: the modern envelope of a request whose `params._meta`
/// names a protocol version (checked as [`crate::mcp::meta::modern_envelope`] checks it), else
/// a legacy request's; and what was read of `params` on the way.
///
/// `_meta` is looked for before anything is read ([`Members::may_name_meta`]): among the
/// members of `params` the parse recorded, or (when it recorded none) by a look for `"_meta"`
/// in their text. A request whose `params` cannot hold one (no `"_meta"` among them, and no key spelled
/// with `\u` escapes) is legacy, its `params` read later if a handler needs them. One that may
/// is read once, from the recorded members when there are some (no pass over `params`), else
/// whole: what its handler looks up later is found in what this read found.
///
/// A request whose envelope its transport checked (`cx.envelope_spans()`, a stateless HTTP request
/// checked with its headers) is not read again: only the version, that this server serves it.
fn era_of(req: &Incoming, cx: &Context) -> Result<Envelope, Rejection> {
    let msg = req.message();
    if let (Some(checked), Some(params)) = (cx.envelope_spans(), msg.params())
        && checked.version(params.get()).is_some_and(|v| MODERN_VERSIONS.contains(&v))
    {
        let (start, end) = checked.capabilities();
        return Ok(Envelope::modern(
            ParamSlots::of_request(req)?,
            checked.log_level(),
            Slot::At(start, end),
        ));
    }
    // `_meta` may be among the members (named twice, it is refused by the read below).
    let Some(members) = msg.param_members().filter(Members::may_name_meta) else {
        return Ok(Envelope::legacy(ParamSlots::default()));
    };
    let params = RawJson::new(members.text());
    let slots = ParamSlots::of(Some(members))?;
    let meta = slots.meta(params).map(|m| Meta::read(members.meta(m.get()))).transpose()?;
    let Some(meta) = meta.filter(Meta::is_modern) else {
        return Ok(Envelope::legacy(slots));
    };
    let envelope = check_meta(meta, &MODERN_VERSIONS)?;
    let capabilities = Slot::of(params.get(), envelope.capabilities.get());
    Ok(Envelope::modern(slots, envelope.log_level, capabilities))
}

impl Envelope {
    /// A modern request's: its log level (an index into `LOG_LEVELS`), the capabilities at
    /// `capabilities` in its `params`, and `slots` of them.
    fn modern(slots: ParamSlots, log_level: Option<usize>, capabilities: Slot) -> Self {
        let log_level =
            log_level.and_then(|i| LoggingLevel::from_name(crate::mcp::meta::LOG_LEVELS[i]));
        let capabilities = Capabilities::Envelope(capabilities);
        Self { era: Era::Modern, log_level, capabilities, slots }
    }

    /// A legacy request's: the session's capabilities, and `slots` of its `params`.
    fn legacy(slots: ParamSlots) -> Self {
        Self { era: Era::Legacy, log_level: None, capabilities: Capabilities::Session, slots }
    }
}

impl Handler for ConnectionHandler {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        let env = era_of(req, cx)?;
        match env.era {
            Era::Modern => self.modern(req, cx, &env).await,
            Era::Legacy => self.legacy(req, cx, &env).await,
        }
    }

    /// Every stateless request but `subscriptions/listen` (which keeps a handle to send
    /// changes) runs without a peer: the server's progress and log messages go through
    /// [`Context::notify`], and a modern request asks for input with `input_required`, never
    /// with a request of its own.
    fn peerless(request: &Incoming) -> bool {
        request.method() != "subscriptions/listen"
    }

    async fn notification(&self, n: &Incoming, cx: &Context) {
        // Only a session `initialize` opened gets change notifications.
        if n.method() == "notifications/initialized"
            && self.session.initialized.load(Ordering::Acquire)
        {
            self.forward_changes(cx);
        }
    }
}

impl ConnectionHandler {
    pub(super) fn state(&self) -> &ServerState {
        &self.server.0
    }

    async fn modern(
        &self,
        req: &Incoming,
        cx: &Context,
        env: &Envelope,
    ) -> Result<Reply, RpcError> {
        let lists = &self.state().lists;
        let method = req.method();
        if !self.state().declares(method) {
            return Err(RpcError::method_not_found(method));
        }
        match method {
            "server/discover" => Ok(Reply::raw(&lists.discover)),
            "tools/list" if self.state().scopes.hide_forbidden => {
                self.tools_list(req, cx, Era::Modern)
            }
            "tools/list" => list(req, &lists.tools[1]),
            "resources/list" => list(req, &lists.resources[1]),
            "resources/templates/list" => list(req, &lists.templates[1]),
            "prompts/list" => list(req, &lists.prompts[1]),
            // Boxed: a stream's future is large and lives long, and every other request's
            // future stays small.
            "subscriptions/listen" => Box::pin(self.listen(req, cx)).await,
            "tools/call" => self.invoke(Kind::Tool, req, cx, env).await,
            "prompts/get" => self.invoke(Kind::Prompt, req, cx, env).await,
            "resources/read" => self.invoke(Kind::Resource, req, cx, env).await,
            "completion/complete" => self.invoke(Kind::Complete, req, cx, env).await,
            "tasks/get" | "tasks/update" | "tasks/cancel" => self.tasks(req, cx, env),
            mcp::skills::LIST | mcp::skills::GET | mcp::skills::DIRECTORY_READ => {
                self.skills(req, Era::Modern)
            }
            // Removed by 2026-07-28 (`initialize`, `ping`, `logging/setLevel`,
            // `resources/(un)subscribe`), and unknown methods alike.
            other => Err(RpcError::method_not_found(other)),
        }
    }

    async fn legacy(
        &self,
        req: &Incoming,
        cx: &Context,
        env: &Envelope,
    ) -> Result<Reply, RpcError> {
        let s = &self.session;
        let method = req.method();
        match method {
            "initialize" => return self.initialize(req),
            "ping" => return Ok(Reply::empty()),
            _ if !s.initialized.load(Ordering::Acquire) => {
                // Neither legacy (no `initialize` yet) nor modern (no envelope).
                return Err(RpcError::invalid_params(format_args!(
                    "params._meta must carry {} and {} (or open a legacy session with initialize)",
                    mcp::PROTOCOL_VERSION_KEY,
                    mcp::CLIENT_CAPABILITIES_KEY
                )));
            }
            method if !self.state().declares(method) => {
                return Err(RpcError::method_not_found(method));
            }
            _ => {}
        }
        let lists = &self.state().lists;
        match method {
            "tools/list" if self.state().scopes.hide_forbidden => {
                self.tools_list(req, cx, Era::Legacy)
            }
            "tools/list" => list(req, &lists.tools[0]),
            "resources/list" => list(req, &lists.resources[0]),
            "resources/templates/list" => list(req, &lists.templates[0]),
            "prompts/list" => list(req, &lists.prompts[0]),
            "logging/setLevel" => {
                let p: SetLevelParams = req.params_as().map_err(RpcError::invalid_params)?;
                s.log_level.store(p.level as u8, Ordering::Relaxed);
                Ok(Reply::empty())
            }
            "resources/subscribe" => self.subscribe(req, cx, true),
            "resources/unsubscribe" => self.subscribe(req, cx, false),
            "tools/call" => self.invoke(Kind::Tool, req, cx, env).await,
            "prompts/get" => self.invoke(Kind::Prompt, req, cx, env).await,
            "resources/read" => self.invoke(Kind::Resource, req, cx, env).await,
            "completion/complete" => self.invoke(Kind::Complete, req, cx, env).await,
            "tasks/get" | "tasks/update" | "tasks/cancel" => self.tasks(req, cx, env),
            mcp::skills::LIST | mcp::skills::GET | mcp::skills::DIRECTORY_READ => {
                self.skills(req, Era::Legacy)
            }
            other => Err(RpcError::method_not_found(other)),
        }
    }

    fn initialize(&self, req: &Incoming) -> Result<Reply, RpcError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Params<'a> {
            #[serde(borrow)]
            protocol_version: std::borrow::Cow<'a, str>,
            #[serde(borrow, default)]
            capabilities: Option<&'a serde_json::value::RawValue>,
        }
        let p: Params<'_> = req.params_as().map_err(RpcError::invalid_params)?;
        if let Some(caps) = p.capabilities {
            if !caps.get().starts_with('{') {
                return Err(RpcError::invalid_params("params.capabilities must be an object"));
            }
            let _ = self.session.capabilities.set(caps.get().into());
        }
        // The version the client asked for when this server speaks it, else the newest legacy
        // one (the client then decides whether to go on).
        let agreed = LEGACY_VERSIONS
            .iter()
            .find(|v| **v == p.protocol_version)
            .unwrap_or(&LEGACY_VERSIONS[LEGACY_VERSIONS.len() - 1]);
        let state = self.state();
        let result = InitializeResult {
            protocol_version: (*agreed).into(),
            capabilities: state.capabilities.clone(),
            server_info: state.info.clone(),
            instructions: state.instructions.as_deref().map(Into::into),
        };
        let reply = Reply::json(&result)?;
        self.session.initialized.store(true, Ordering::Release);
        Ok(reply)
    }

    /// The [`Call`] a handler is given for `req`, `slots` its `params` as read.
    fn call(&self, req: &Incoming, cx: &Context, env: &Envelope, slots: ParamSlots) -> Call {
        Call {
            request: req.clone(),
            cx: cx.clone(),
            server: self.server.clone(),
            session: self.session.clone(),
            era: env.era,
            log_level: env.log_level,
            capabilities: env.capabilities,
            state: None,
            answers: Vec::new(),
            slots,
            task: false,
        }
    }

    /// Runs the handler of a tool, prompt, resource or completion and encodes its result for
    /// the era; when the handler needs the client's input first, goes on in [`Self::rounds`].
    async fn invoke(
        &self,
        kind: Kind,
        req: &Incoming,
        cx: &Context,
        env: &Envelope,
    ) -> Result<Reply, RpcError> {
        // What is made for the handler is moved into it here, in a scope of its own: the
        // request's future keeps no room for it while the handler runs.
        let (handler, running, earlier) = {
            // One read of `params` finds what the dispatcher and most handlers look up (a
            // modern request's was read with its envelope).
            let slots = if env.slots.is_read() { env.slots } else { ParamSlots::of_request(req)? };
            let mut call = self.call(req, cx, env, slots);
            self.open_state(&kind, &mut call)?;
            let params = req.params();
            let name = match kind {
                Kind::Tool | Kind::Prompt => slots.get(params, Key::Name)?.and_then(str_of),
                Kind::Resource | Kind::Complete => None,
            };
            let handler = self.route(&kind, &call, name.as_deref().unwrap_or_default())?;
            if !self.state().scopes.is_empty()
                && let Some(on) = self.scoped(&kind, &call, name.as_deref().unwrap_or_default())
            {
                self.state().scopes.check(&on, call.principal())?;
            }
            // The answers of earlier rounds, for the next one should this one ask for more
            // (none, and nothing to copy, in the common case).
            let earlier = call.answers.clone();
            let running = match self.task_place(
                matches!(kind, Kind::Tool),
                &call,
                name.as_deref().unwrap_or_default(),
            )? {
                Some((tool, place)) => {
                    call.task = true;
                    // Boxed: only calls that may run as tasks pay for the larger future.
                    match Box::pin(self.start_task(call, tool, place)).await? {
                        Started::Task(reply) => return Ok(reply),
                        Started::Inline(outcome) => Running::Settled(outcome),
                    }
                }
                None => handler.start(call),
            };
            (handler, running, earlier)
        };
        match self.settle(&kind, env.era, running.outcome().await) {
            Round::Done(reply) => reply,
            // Boxed: the rounds are rare, and the future of every request stays small.
            Round::Needs(needed) => {
                Box::pin(self.rounds(kind, req, cx, env, &handler, earlier, needed)).await
            }
        }
    }

    /// The tasks extension's methods (the removed `tasks/result` and `tasks/list` are unknown
    /// methods, as any other).
    fn tasks(&self, req: &Incoming, cx: &Context, env: &Envelope) -> Result<Reply, RpcError> {
        let slots = if env.slots.is_read() { env.slots } else { ParamSlots::of_request(req)? };
        self.tasks_method(&self.call(req, cx, env, slots), req)
    }

    /// What scopes may be required for: the tool or prompt named, or the resource read (its
    /// URI, else the template it matched).
    fn scoped(&self, kind: &Kind, call: &Call, name: &str) -> Option<super::Scoped> {
        match kind {
            Kind::Tool => Some(super::Scoped::tool(name)),
            Kind::Prompt => Some(super::Scoped::prompt(name)),
            Kind::Resource => {
                let uri = req_uri(call).ok()?;
                let exact = super::Scoped::resource(uri.as_str());
                let registered = self.state().resources.iter().any(|(r, _)| r.uri == uri);
                if registered || self.state().scopes.names(&exact) {
                    return Some(exact);
                }
                let t = self
                    .state()
                    .templates
                    .iter()
                    .find(|(t, _)| match_template(&t.uri_template, &uri, |_, _| {}))?;
                Some(super::Scoped::resource(t.0.uri_template.to_string()))
            }
            Kind::Complete => None,
        }
    }

    /// `tools/list` cut down to the tools the caller may call.
    fn tools_list(&self, req: &Incoming, cx: &Context, era: Era) -> Result<Reply, RpcError> {
        let state = self.state();
        list(req, "")?;
        let typed = &state.lists.typed_tools[usize::from(era == Era::Modern)];
        let mine = state.scopes.tools_for(typed.clone(), cx.principal());
        let text = match era {
            Era::Legacy => serde_json::to_string(&mine),
            Era::Modern => serde_json::to_string(&super::Finished {
                result: &mine,
                result_type: "complete",
                meta: &state.meta,
            }),
        };
        text.map(Reply::raw_string).map_err(|e| RpcError::internal(e.to_string()))
    }

    /// The handler of a request of `kind` naming `name` (a tool's or prompt's).
    fn route(&self, kind: &Kind, call: &Call, name: &str) -> Result<Route<'_>, RpcError> {
        let state = self.state();
        match kind {
            Kind::Tool => {
                match state.tool(name) {
                    // A tool of one era is unknown to the other's requests.
                    Some((_, only, f)) if only.is_none_or(|e| e == call.era) => Ok(Route::Tool(f)),
                    _ if name.is_empty() => Err(RpcError::invalid_params(
                        "params.name must be a string naming the tool",
                    )),
                    _ => Err(RpcError::new(
                        ErrorCode::INVALID_PARAMS,
                        format!("Unknown tool: {name}"),
                    )),
                }
            }
            Kind::Prompt => match state.prompt_index.get(name) {
                Some(&i) => Ok(Route::Prompt(&state.prompts[i].1)),
                None => {
                    Err(RpcError::new(ErrorCode::INVALID_PARAMS, format!("Unknown prompt: {name}")))
                }
            },
            Kind::Resource => {
                let uri = req_uri(call)?;
                if let Some((_, f)) = state.resources.iter().find(|(r, _)| r.uri == uri) {
                    return Ok(Route::Resource(f));
                }
                if let Some(s) = state.skills.as_ref().filter(|s| s.serves(&uri)) {
                    return Ok(Route::Resource(s.reader()));
                }
                if let Some((_, f)) = state
                    .templates
                    .iter()
                    .find(|(t, _)| match_template(&t.uri_template, &uri, |_, _| {}))
                {
                    return Ok(Route::Resource(f));
                }
                // 2026-07-28 moved "resource not found" from -32002 to -32602.
                let code = match call.era {
                    Era::Modern => ErrorCode::INVALID_PARAMS,
                    Era::Legacy => ErrorCode::RESOURCE_NOT_FOUND,
                };
                #[derive(Serialize)]
                struct Data<'a> {
                    uri: &'a str,
                }
                Err(RpcError::new(code, format!("Resource not found: {uri}"))
                    .with_data(&Data { uri: &uri }))
            }
            Kind::Complete => match &state.completion {
                Some(f) => Ok(Route::Complete(f)),
                None => Err(RpcError::method_not_found("completion/complete")),
            },
        }
    }
}

impl ServerState {
    /// The tool named `name`.
    fn tool(&self, name: &str) -> Option<&ToolEntry> {
        // A few names are compared faster than one is hashed.
        if self.tools.len() <= 8 {
            return self.tools.iter().find(|(t, _, _)| t.name == name);
        }
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    /// Whether `method` belongs to what the server declares: `tools/…`, `prompts/…` and
    /// `resources/…` are unknown methods (-32601) to a server without tools, prompts or
    /// resources, as any method it does not serve.
    fn declares(&self, method: &str) -> bool {
        let caps = &self.capabilities;
        if method.starts_with("tools/") {
            caps.tools.is_some()
        } else if method.starts_with("resources/") {
            caps.resources.is_some()
        } else if method.starts_with("prompts/") {
            caps.prompts.is_some()
        } else if method.starts_with("tasks/") {
            caps.extensions.is_some()
        } else {
            true
        }
    }
}

fn req_uri(call: &Call) -> Result<String, RpcError> {
    if call.request.params().is_none() {
        return Err(RpcError::invalid_params("params.uri is required"));
    }
    match call.member_of_params(Key::Uri)?.and_then(str_of) {
        Some(uri) => Ok(uri.into_owned()),
        None => Err(RpcError::invalid_params("params.uri must be a string")),
    }
}

/// A list result: one page, so a cursor (which this server never hands out) is refused.
fn list(req: &Incoming, encoded: &str) -> Result<Reply, RpcError> {
    if req.params().is_some_and(|p| !p.get().trim_start().starts_with('{')) {
        return Err(RpcError::invalid_params("params must be an object"));
    }
    if let Some(p) = req.params()
        && member(p, "cursor")?.is_some_and(|c| c.get() != "null")
    {
        return Err(RpcError::invalid_params("Invalid cursor: this server's lists have one page"));
    }
    Ok(Reply::raw(encoded))
}

enum Route<'a> {
    Tool(&'a HandlerFn<CallToolResult<'static>>),
    Prompt(&'a HandlerFn<crate::mcp::types::GetPromptResult<'static>>),
    Resource(&'a HandlerFn<ReadResourceResult<'static>>),
    Complete(&'a HandlerFn<crate::mcp::types::CompleteResult<'static>>),
}

impl Route<'_> {
    /// Starts the handler on `call`: it takes the call now, so only its boxed future is held
    /// while it runs.
    fn start(&self, call: Call) -> Running {
        match self {
            Route::Tool(f) => Running::Tool(f(call)),
            Route::Prompt(f) => Running::Prompt(f(call)),
            Route::Resource(f) => Running::Resource(f(call)),
            Route::Complete(f) => Running::Complete(f(call)),
        }
    }
}

/// A handler running.
enum Running {
    Tool(BoxFuture<Result<CallToolResult<'static>, HandlerError>>),
    Prompt(BoxFuture<Result<crate::mcp::types::GetPromptResult<'static>, HandlerError>>),
    Resource(BoxFuture<Result<ReadResourceResult<'static>, HandlerError>>),
    Complete(BoxFuture<Result<crate::mcp::types::CompleteResult<'static>, HandlerError>>),
    /// A tool's handler that answered on its first step (a call that may run as a task).
    Settled(Result<CallToolResult<'static>, HandlerError>),
}

impl Running {
    /// What the handler returns, ready to encode.
    async fn outcome(self) -> Result<Encoded, HandlerError> {
        match self {
            Running::Tool(f) => f.await.map(Encoded::Tool),
            Running::Prompt(f) => f.await.map(Encoded::Prompt),
            Running::Resource(f) => f.await.map(Encoded::Read),
            Running::Complete(f) => f.await.map(Encoded::Complete),
            Running::Settled(outcome) => outcome.map(Encoded::Tool),
        }
    }
}

/// What one round of a handler came to.
enum Round {
    /// The reply (or the error) to answer with.
    Done(Result<Reply, RpcError>),
    /// The handler needs the client's input first.
    Needs(InputRequired),
}

/// A handler's result, ready to encode.
enum Encoded {
    Tool(CallToolResult<'static>),
    Read(ReadResourceResult<'static>),
    Prompt(crate::mcp::types::GetPromptResult<'static>),
    Complete(crate::mcp::types::CompleteResult<'static>),
}

impl Encoded {
    fn reply(self, era: Era, meta: &serde_json::value::RawValue) -> Result<Reply, RpcError> {
        // What `modern_reply` appends, reserved with the result.
        let room = match era {
            Era::Modern => typed_room("complete", Some(meta)),
            Era::Legacy => 0,
        };
        let json = match self {
            Self::Tool(r) => tool_json(&r, room)?,
            Self::Read(mut r) => {
                if era == Era::Modern {
                    // A read is cacheable: hints the handler did not give say "do not keep it".
                    r.ttl_ms.get_or_insert(0);
                    r.cache_scope.get_or_insert(CacheScope::Private);
                }
                encode(&r)?
            }
            Self::Prompt(r) => encode(&r)?,
            Self::Complete(r) => encode(&r)?,
        };
        match era {
            Era::Legacy => Ok(Reply::raw_string(json)),
            Era::Modern => modern_reply(json, "complete", meta),
        }
    }
}

pub(in crate::server) mod encode;
mod rounds;

use encode::encode;
use encode::{modern_reply, tool_json, typed_room};

#[cfg(test)]
mod tests;
