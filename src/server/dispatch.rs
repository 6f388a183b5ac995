//! Routes each request to its handler, by era, and encodes what comes back.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::call::{Answer, MAX_INPUT_ROUNDS};
use super::{Call, Connection, Core, Error, Finished, HandlerFn, InputRequired};
use crate::ErrorCode;
use crate::mcp::meta::{member, modern_envelope, str_of};
use crate::mcp::types::{
    CacheScope, CallToolResult, InitializeResult, InputRequiredResult, LoggingLevel,
    ReadResourceResult, SetLevelParams, match_template,
};
use crate::mcp::{self, Era, LEGACY_VERSIONS, MODERN_VERSIONS};
use crate::peer::{Context, Handler, Incoming, Reply, RpcError};

/// What a request's handler returns, before it is encoded.
enum Kind {
    Tool,
    Prompt,
    Resource,
    Complete,
}

/// What a request carries for its handler.
struct Envelope {
    era: Era,
    log_level: Option<LoggingLevel>,
    capabilities: Option<Arc<str>>,
}

impl Handler for Connection {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        let modern = match modern_envelope(&req.message(), &MODERN_VERSIONS)? {
            Some((_, envelope)) => Envelope {
                era: Era::Modern,
                log_level: envelope
                    .log_level
                    .and_then(|i| LoggingLevel::from_name(crate::mcp::meta::LOG_LEVELS[i])),
                capabilities: Some(envelope.capabilities.get().into()),
            },
            None => return self.legacy(req, cx).await,
        };
        self.modern(req, cx, modern).await
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

impl Connection {
    fn core(&self) -> &Core {
        &self.server.0
    }

    async fn modern(&self, req: &Incoming, cx: &Context, env: Envelope) -> Result<Reply, RpcError> {
        let lists = &self.core().lists;
        if !self.core().declares(req.method()) {
            return Err(RpcError::method_not_found(req.method()));
        }
        match req.method() {
            "server/discover" => Ok(Reply::raw(&lists.discover)),
            "tools/list" => list(req, &lists.tools[1]),
            "resources/list" => list(req, &lists.resources[1]),
            "resources/templates/list" => list(req, &lists.templates[1]),
            "prompts/list" => list(req, &lists.prompts[1]),
            "subscriptions/listen" => self.listen(req, cx).await,
            "tools/call" => self.invoke(Kind::Tool, req, cx, env).await,
            "prompts/get" => self.invoke(Kind::Prompt, req, cx, env).await,
            "resources/read" => self.invoke(Kind::Resource, req, cx, env).await,
            "completion/complete" => self.invoke(Kind::Complete, req, cx, env).await,
            // Removed by 2026-07-28 (`initialize`, `ping`, `logging/setLevel`,
            // `resources/(un)subscribe`), and unknown methods alike.
            other => Err(RpcError::method_not_found(other)),
        }
    }

    async fn legacy(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        let s = &self.session;
        match req.method() {
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
            method if !self.core().declares(method) => {
                return Err(RpcError::method_not_found(method));
            }
            _ => {}
        }
        let lists = &self.core().lists;
        let env = Envelope {
            era: Era::Legacy,
            log_level: None,
            capabilities: s.capabilities.get().cloned(),
        };
        match req.method() {
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
        let core = self.core();
        let result = InitializeResult {
            protocol_version: (*agreed).into(),
            capabilities: core.capabilities.clone(),
            server_info: core.info.clone(),
            instructions: core.instructions.as_deref().map(Into::into),
        };
        let reply = Reply::json(&result)?;
        self.session.initialized.store(true, Ordering::Release);
        Ok(reply)
    }

    /// Runs the handler of a tool, prompt, resource or completion and encodes its result for
    /// the era; in the legacy era, asks the client what the handler needs and calls it again.
    async fn invoke(
        &self,
        kind: Kind,
        req: &Incoming,
        cx: &Context,
        env: Envelope,
    ) -> Result<Reply, RpcError> {
        let core = self.core();
        let mut call = Call {
            request: req.clone(),
            cx: cx.clone(),
            server: self.server.clone(),
            session: self.session.clone(),
            era: env.era,
            log_level: env.log_level,
            capabilities: env.capabilities,
            state: None,
            answers: Vec::new(),
            members: std::sync::OnceLock::new(),
        };
        // The state is opened only on the request it was sealed for. The binding is written
        // out only when a state is opened or sealed (a resource's is checked at once: a read
        // without a `uri` is refused before any handler runs).
        if matches!(kind, Kind::Resource) {
            binding(&kind, &call)?;
        }
        // `"requestState": null` is no state at all.
        let sealed = call.member_of_params("requestState")?;
        if let Some(sealed) = sealed.filter(|s| s.get() != "null") {
            let binding = binding(&kind, &call)?;
            let opened = str_of(sealed).and_then(|s| core.key.open(&binding, &s));
            match opened.as_deref().map(Carried::decode) {
                Some(Some(carried)) => {
                    call.state = carried.s;
                    call.answers = carried
                        .a
                        .into_iter()
                        .map(|(k, v)| (k, Answer(crate::mcp::types::Raw::from_box(v))))
                        .collect();
                }
                _ => {
                    return Err(RpcError::invalid_params("requestState integrity check failed"));
                }
            }
        }
        let handler = self.route(&kind, &call)?;
        let mut rounds = 0;
        loop {
            // What the next round carries: this round's answers and the earlier ones.
            let answers = match call.all_answers() {
                Ok(a) => a,
                Err(Error::Protocol(e)) => return Err(e),
                Err(other) => return Err(RpcError::internal(other.to_string())),
            };
            let next = Call {
                request: call.request.clone(),
                cx: call.cx.clone(),
                server: call.server.clone(),
                session: call.session.clone(),
                era: call.era,
                log_level: call.log_level,
                capabilities: call.capabilities.clone(),
                state: call.state.take(),
                answers: std::mem::take(&mut call.answers),
                // The scan of `params` the dispatcher made serves the handler too (`call` scans
                // again if it ever needs to).
                members: std::mem::take(&mut call.members),
            };
            let outcome = match &handler {
                Route::Tool(f) => f(next).await.map(Encoded::Tool),
                Route::Prompt(f) => f(next).await.map(Encoded::Prompt),
                Route::Resource(f) => f(next).await.map(Encoded::Read),
                Route::Complete(f) => f(next).await.map(Encoded::Complete),
            };
            match outcome {
                Ok(result) => return result.reply(env.era, &core.meta),
                Err(Error::Protocol(e)) => return Err(e),
                Err(Error::Tool(reason)) => {
                    return match kind {
                        Kind::Tool => {
                            Encoded::Tool(CallToolResult::error(reason)).reply(env.era, &core.meta)
                        }
                        _ => Err(RpcError::internal(reason)),
                    };
                }
                // Neither a request nor a state: no retry could ever get further (and a
                // modern InputRequiredResult must carry one of them).
                Err(Error::InputRequired(needed))
                    if needed.requests.is_empty() && needed.state.is_none() =>
                {
                    return Err(RpcError::internal(
                        "the handler asked for input but named no input request and no state",
                    ));
                }
                Err(Error::InputRequired(needed)) => match env.era {
                    Era::Modern => {
                        // What the client did not declare is never asked (-32021), whether the
                        // handler went through `ask` or returned its requests itself.
                        for request in needed.requests.values() {
                            match call.require(request) {
                                Ok(()) => {}
                                Err(Error::Protocol(e)) => return Err(e),
                                Err(other) => return Err(RpcError::internal(other.to_string())),
                            }
                        }
                        return self.input_required(&binding(&kind, &call)?, needed, answers);
                    }
                    Era::Legacy => {
                        rounds += 1;
                        if rounds > MAX_INPUT_ROUNDS {
                            return Err(RpcError::internal(format!(
                                "the handler asked for input more than {MAX_INPUT_ROUNDS} times"
                            )));
                        }
                        call.state = needed.state;
                        let mut gathered = self.gather(&call, needed.requests).await?;
                        for (k, a) in answers {
                            if !gathered.iter().any(|(seen, _)| *seen == k) {
                                gathered.push((k, a));
                            }
                        }
                        call.answers = gathered;
                    }
                },
            }
        }
    }

    /// Legacy era: sends each input request to the client, in order.
    async fn gather(
        &self,
        call: &Call,
        requests: std::collections::BTreeMap<String, crate::mcp::types::InputRequest<'static>>,
    ) -> Result<Vec<(String, Answer)>, RpcError> {
        let mut answers = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            let answer = match call.require(&request) {
                Ok(()) => call.send(&request).await,
                Err(e) => Err(e),
            };
            match answer {
                Ok(a) => answers.push((key, a)),
                Err(Error::Protocol(e)) => return Err(e),
                Err(other) => return Err(RpcError::internal(other.to_string())),
            }
        }
        Ok(answers)
    }

    /// Modern era: the `input_required` result, its state sealed.
    ///
    /// The state carries the handler's own state and every answer the client gave so far, so a
    /// handler that asks for one thing after another (`ask`, then `ask` again) finds the earlier
    /// answers on the retry, as it would in a legacy session.
    fn input_required(
        &self,
        binding: &str,
        needed: InputRequired,
        answers: Vec<(String, Answer)>,
    ) -> Result<Reply, RpcError> {
        let core = self.core();
        let carried = (needed.state.is_some() || !answers.is_empty()).then(|| Carried {
            s: needed.state,
            a: answers.into_iter().map(|(k, a)| (k, a.0.into_box())).collect(),
        });
        let sealed = match carried.map(|c| serde_json::to_string(&c)).transpose() {
            Ok(payload) => payload.map(|p| core.key.seal(binding, &p)),
            Err(e) => {
                return Err(RpcError::internal(format!("the state could not be encoded: {e}")));
            }
        };
        // A state the retry could not bring back (it is refused past the bound unread).
        if let Some(s) = &sealed
            && s.len() > super::MAX_REQUEST_STATE_BYTES
        {
            return Err(RpcError::internal(format!(
                "the handler's requestState seals to {} bytes, past the {} a retry may carry",
                s.len(),
                super::MAX_REQUEST_STATE_BYTES
            )));
        }
        let result = InputRequiredResult {
            input_requests: needed.requests.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            request_state: sealed.map(Into::into),
        };
        Reply::json(&Finished { result: &result, result_type: "input_required", meta: &core.meta })
    }

    fn route(&self, kind: &Kind, call: &Call) -> Result<Route<'_>, RpcError> {
        let core = self.core();
        match kind {
            Kind::Tool => {
                let name = call.name();
                let found = core.tool_index.get(name.as_ref()).map(|&i| &core.tools[i]);
                match found {
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
            Kind::Prompt => {
                let name = call.name();
                match core.prompt_index.get(name.as_ref()) {
                    Some(&i) => Ok(Route::Prompt(&core.prompts[i].1)),
                    None => Err(RpcError::new(
                        ErrorCode::INVALID_PARAMS,
                        format!("Unknown prompt: {name}"),
                    )),
                }
            }
            Kind::Resource => {
                let uri = req_uri(call)?;
                if let Some((_, f)) = core.resources.iter().find(|(r, _)| r.uri == uri) {
                    return Ok(Route::Resource(f));
                }
                if let Some((_, f)) = core
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
            Kind::Complete => match &core.completion {
                Some(f) => Ok(Route::Complete(f)),
                None => Err(RpcError::method_not_found("completion/complete")),
            },
        }
    }
}

impl Core {
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
        } else {
            true
        }
    }
}

/// The sealed payload of a `requestState`: the handler's state and the answers so far.
#[derive(Serialize, Deserialize)]
struct Carried {
    s: Option<String>,
    #[serde(default)]
    a: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>>,
}

impl Carried {
    fn decode(payload: &str) -> Option<Self> {
        serde_json::from_str(payload).ok()
    }
}

/// What a `requestState` is bound to: the method, and the tool, prompt or resource the request
/// names (a completion names no one thing: its method alone).
fn binding(kind: &Kind, call: &Call) -> Result<String, RpcError> {
    let what = match kind {
        Kind::Tool | Kind::Prompt => call.name().into_owned(),
        Kind::Resource => req_uri(call)?,
        Kind::Complete => String::new(),
    };
    Ok(format!("{}\n{what}", call.method()))
}

fn req_uri(call: &Call) -> Result<String, RpcError> {
    if call.request.params().is_none() {
        return Err(RpcError::invalid_params("params.uri is required"));
    }
    match call.member_of_params("uri")?.and_then(str_of) {
        Some(uri) => Ok(uri.into_owned()),
        None => Err(RpcError::invalid_params("params.uri must be a string")),
    }
}

/// A list result: one page, so a cursor (which this server never hands out) is refused.
fn list(req: &Incoming, encoded: &str) -> Result<Reply, RpcError> {
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

/// A handler's result, ready to encode.
enum Encoded {
    Tool(CallToolResult<'static>),
    Read(ReadResourceResult<'static>),
    Prompt(crate::mcp::types::GetPromptResult<'static>),
    Complete(crate::mcp::types::CompleteResult<'static>),
}

impl Encoded {
    fn reply(self, era: Era, meta: &serde_json::value::RawValue) -> Result<Reply, RpcError> {
        fn finish<T: Serialize>(
            result: &T,
            era: Era,
            meta: &serde_json::value::RawValue,
        ) -> Result<Reply, RpcError> {
            match era {
                Era::Legacy => Reply::json(result),
                Era::Modern => Reply::json(&Finished { result, result_type: "complete", meta }),
            }
        }
        match self {
            Self::Tool(r) => finish(&r, era, meta),
            Self::Read(mut r) => {
                if era == Era::Modern {
                    // A read is cacheable: hints the handler did not give say "do not keep it".
                    r.ttl_ms.get_or_insert(0);
                    r.cache_scope.get_or_insert(CacheScope::Private);
                }
                finish(&r, era, meta)
            }
            Self::Prompt(r) => finish(&r, era, meta),
            Self::Complete(r) => finish(&r, era, meta),
        }
    }
}
