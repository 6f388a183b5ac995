//! [`Call`]: what a tool, resource, prompt or completion handler is given. It owns the request
//! (a handle on the frame's bytes) and lends typed views of it; it sends progress and log
//! messages as the request's era allows; and it asks the client for input (elicitation,
//! sampling, roots) the same way in both eras.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::param_slots::{Key, ParamSlots, Slot};
use super::{ConnectionState, Server};
use crate::mcp::Era;
use crate::mcp::meta::{Rejection, member};
use crate::mcp::types::{InputRequest, LoggingLevel, Raw};
use crate::peer::{Context, Incoming, RpcError};
use crate::{error::ErrorCode, message::RawJson, message::encode::Json};

/// Why a handler did not produce its result.
#[derive(Debug)]
#[non_exhaustive]
pub enum HandlerError {
    /// A protocol error, answered as the JSON-RPC error it is.
    Protocol(RpcError),
    /// The handler needs the client's input first: answered `input_required` in the modern
    /// era; in the legacy era the server asks the client itself and calls the handler again.
    InputRequired(InputRequired),
    /// A tool failed: answered as a result with `isError: true` and this text (for handlers
    /// other than tools, -32603).
    Tool(String),
}

impl HandlerError {
    /// A tool failure with this reason.
    #[must_use]
    pub fn tool(reason: impl Into<String>) -> Self {
        Self::Tool(reason.into())
    }
}

impl From<RpcError> for HandlerError {
    fn from(e: RpcError) -> Self {
        Self::Protocol(e)
    }
}

impl From<Rejection> for HandlerError {
    fn from(e: Rejection) -> Self {
        Self::Protocol(e.into())
    }
}

impl From<InputRequired> for HandlerError {
    fn from(e: InputRequired) -> Self {
        Self::InputRequired(e)
    }
}

impl std::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Protocol(e) => write!(f, "{e}"),
            Self::InputRequired(i) => write!(f, "input required: {} request(s)", i.requests.len()),
            Self::Tool(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for HandlerError {}

/// What a handler needs from the client before it can answer: requests keyed by name, and
/// state to find again in the retry (sealed by the server, so the client cannot change it).
#[derive(Debug, Default)]
pub struct InputRequired {
    pub(crate) requests: BTreeMap<String, InputRequest<'static>>,
    pub(crate) state: Option<String>,
    /// Asked in the call's own response, before the call becomes a task.
    pub(crate) before_task: bool,
}

impl InputRequired {
    /// Nothing asked yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks `request`; its answer comes back under `key`.
    #[must_use]
    pub fn request(mut self, key: impl Into<String>, request: InputRequest<'static>) -> Self {
        self.requests.insert(key.into(), request);
        self
    }

    /// Whether nothing is asked.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Asked in the call's own response (an `input_required` result, answered by the client's
    /// retry) even when the call may run as a task: input a tool gathers before it goes on in
    /// the background. Without it, a call that runs as a task asks through the task
    /// (`tasks/get` shows the requests, `tasks/update` answers them).
    #[must_use]
    pub fn before_task(mut self) -> Self {
        self.before_task = true;
        self
    }

    /// State the retry carries back to [`Call::state`] (any text; JSON is handy).
    #[must_use]
    pub fn state(mut self, state: impl Into<String>) -> Self {
        self.state = Some(state.into());
        self
    }
}

/// One answer from the client: the result of an elicitation, sampling or roots request, as
/// JSON text.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer(pub(crate) Raw<'static>);

impl Answer {
    /// The answer decoded, borrowing from it.
    ///
    /// # Errors
    ///
    /// -32602 naming what did not match `T`: what the client answers is untrusted.
    pub fn decode<'a, T: Deserialize<'a>>(&'a self) -> Result<T, HandlerError> {
        decode_named(self.0.get(), "the client's answer")
            .map_err(|reason| HandlerError::Protocol(RpcError::invalid_params(reason)))
    }

    /// The JSON text.
    #[must_use]
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

/// Decodes `text` as `T`. On failure it decodes again, tracking where it was, so the reason
/// names the field (`arguments.address.city: invalid type: ...`); a value that decodes pays
/// nothing for that.
fn decode_named<'a, T: Deserialize<'a>>(text: &'a str, what: &str) -> Result<T, String> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(plain) => {
            let mut de = serde_json::Deserializer::from_str(text);
            match serde_path_to_error::deserialize::<_, T>(&mut de) {
                Err(e) if e.path().to_string() != "." => {
                    Err(format!("{what}.{}: {}", e.path(), e.inner()))
                }
                _ => Err(format!("{what}: {plain}")),
            }
        }
    }
}

/// One request being handled.
pub struct Call {
    pub(crate) request: Incoming,
    pub(crate) cx: Context,
    pub(crate) server: Server,
    pub(crate) session: Arc<ConnectionState>,
    pub(crate) era: Era,
    /// The `logLevel` of a modern request.
    pub(crate) log_level: Option<LoggingLevel>,
    /// The client's capabilities: the envelope's (modern) or `initialize`'s (legacy).
    pub(crate) capabilities: Capabilities,
    /// The opened `requestState`.
    pub(crate) state: Option<String>,
    /// Legacy era: the answers gathered by the server for the handler's earlier rounds.
    pub(crate) answers: Vec<(String, Answer)>,
    /// The members of `params` the server reads, found by one scan before any handler runs.
    pub(crate) slots: ParamSlots,
    /// The call may run as a task (the tool allows it and the client declared the extension).
    pub(crate) task: bool,
}

/// The client's capabilities, as a request carries them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Capabilities {
    /// A legacy session's, as `initialize` declared them (if it did).
    Session,
    /// A modern request's, in its `_meta` envelope: where they lie in the text of `params`.
    Envelope(Slot),
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("method", &self.request.method())
            .field("era", &self.era)
            .finish_non_exhaustive()
    }
}

impl Call {
    /// The method (`tools/call`, `prompts/get`, ...).
    #[must_use]
    pub fn method(&self) -> &str {
        self.request.method()
    }

    /// The request's era.
    #[must_use]
    pub fn era(&self) -> Era {
        self.era
    }

    /// The whole request.
    #[must_use]
    pub fn request(&self) -> &Incoming {
        &self.request
    }

    /// The request's context: cancellation, the caller, and [`Context::notify`]. A stateless
    /// HTTP request is served without a peer ([`Handler::peerless`](crate::peer::Handler::peerless)):
    /// there [`Context::peer`] is a closed handle, so send through [`Context::notify`] (or
    /// [`Call::progress`] and [`Call::log`]).
    #[must_use]
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// Who called, as the transport vouched for it: the principal of the access token an
    /// [`HttpServer`](crate::http::HttpServer) guarded with
    /// [`auth`](crate::http::HttpServer::auth) accepted. `None` when nothing checked the caller.
    #[must_use]
    pub fn principal(&self) -> Option<&crate::peer::Principal> {
        self.cx.principal()
    }

    /// The server, to announce changes (`tools_changed`, `resource_updated`, ...).
    #[must_use]
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The params, decoded as `T`, borrowing.
    ///
    /// # Errors
    ///
    /// -32602 with serde's reason (which names the field) when they do not match `T`.
    pub fn params<'a, T: Deserialize<'a>>(&'a self) -> Result<T, HandlerError> {
        let text = self.request.params().map_or("null", |p| p.get());
        decode_named(text, "params")
            .map_err(|reason| HandlerError::Protocol(RpcError::invalid_params(reason)))
    }

    /// Member `key` of `params` (`None` when absent or `null`), as [`member`] reads it, from
    /// the one scan of `params` made before the handler ran.
    pub(crate) fn params_member(&self, key: Key) -> Result<Option<RawJson<'_>>, HandlerError> {
        Ok(self.member_of_params(key)?)
    }

    /// [`Call::params_member`], failing with the [`Rejection`] itself.
    pub(crate) fn member_of_params(&self, key: Key) -> Result<Option<RawJson<'_>>, Rejection> {
        self.slots.get(self.request.params(), key)
    }

    /// A tool's `arguments` (or a prompt's), decoded as `T`, borrowing; absent arguments read as
    /// `{}`.
    ///
    /// # Errors
    ///
    /// For a tool, arguments that do not match `T` are a tool failure ([`HandlerError::Tool`], the
    /// result the model sees, naming the field); -32602 when `params` is malformed.
    pub fn arguments<'a, T: Deserialize<'a>>(&'a self) -> Result<T, HandlerError> {
        let raw = self.params_member(Key::Arguments)?.map_or("{}", |a| a.get());
        let raw = if raw == "null" { "{}" } else { raw };
        decode_named(raw, "arguments")
            .map_err(|reason| HandlerError::Tool(format!("invalid {reason}")))
    }

    /// The client's capabilities, as given (`{"elicitation":{},...}`).
    #[must_use]
    pub fn client_capabilities(&self) -> Option<&str> {
        match &self.capabilities {
            Capabilities::Session => self.session.capabilities.get().map(|c| &**c),
            Capabilities::Envelope(at) => self.request.params().and_then(|p| at.get(p.get())),
        }
    }

    /// Whether the client declared capability `name` (`elicitation`, `sampling`, `roots`).
    #[must_use]
    pub fn client_supports(&self, name: &str) -> bool {
        self.client_capabilities().is_some_and(
            |caps| matches!(member(RawJson::new(caps), name), Ok(Some(v)) if v.get() != "null"),
        )
    }

    /// The state the client echoed, as the handler sealed it in an earlier round (already
    /// checked: a changed state never reaches a handler).
    #[must_use]
    pub fn state(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The answer the client gave under `key` in this round, if any.
    ///
    /// # Errors
    ///
    /// -32602 when `inputResponses` is malformed.
    pub fn answer(&self, key: &str) -> Result<Option<Answer>, HandlerError> {
        if let Some(responses) = self.params_member(Key::InputResponses)?
            && let Some(found) = member(responses, key)?
        {
            let text = found.get().to_owned();
            let raw = Raw::owned(text).map_err(|e| RpcError::internal(e.to_string()))?;
            return Ok(Some(Answer(raw)));
        }
        // Answers of earlier rounds: carried in the sealed state (modern), or gathered by the
        // server (legacy).
        Ok(self.answers.iter().find(|(k, _)| k == key).map(|(_, a)| a.clone()))
    }

    /// Every answer this round can see, this round's first: what the next round carries.
    pub(crate) fn all_answers(&self) -> Result<Vec<(String, Answer)>, HandlerError> {
        let mut all: Vec<(String, Answer)> = Vec::new();
        if let Some(responses) = self.params_member(Key::InputResponses)? {
            let map: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> =
                serde_json::from_str(responses.get()).map_err(|e| {
                    HandlerError::Protocol(RpcError::invalid_params(format_args!(
                        "params.inputResponses: {e}"
                    )))
                })?;
            all.extend(map.into_iter().map(|(k, v)| (k, Answer(Raw::from_box(v)))));
        }
        for (k, a) in &self.answers {
            if !all.iter().any(|(seen, _)| seen == k) {
                all.push((k.clone(), a.clone()));
            }
        }
        Ok(all)
    }

    /// Asks the client for one thing and returns its answer.
    ///
    /// Legacy era: sends the request to the client and waits for its response. Modern era: the
    /// answer of the retry's `inputResponses[key]` when present; otherwise the handler ends
    /// here with [`HandlerError::InputRequired`] (use `?`), which answers `input_required`.
    ///
    /// # Errors
    ///
    /// -32021 when the client did not declare the capability the request needs; the client's
    /// error response; [`HandlerError::InputRequired`] as above.
    pub async fn ask(
        &self,
        key: &str,
        request: InputRequest<'static>,
    ) -> Result<Answer, HandlerError> {
        if let Some(answer) = self.answer(key)? {
            return Ok(answer);
        }
        self.require(&request)?;
        match self.era {
            // A task asks through the task, in both eras.
            _ if self.task => Err(InputRequired::new().request(key, request).into()),
            Era::Modern => Err(InputRequired::new().request(key, request).into()),
            Era::Legacy => self.send(&request).await,
        }
    }

    /// As [`Call::ask`], but in the call's own response even when the call may run as a task
    /// ([`InputRequired::before_task`]): a tool that gathers input first and then works in the
    /// background asks with this, and becomes a task once it waits on anything else.
    ///
    /// # Errors
    ///
    /// As [`Call::ask`].
    pub async fn ask_first(
        &self,
        key: &str,
        request: InputRequest<'static>,
    ) -> Result<Answer, HandlerError> {
        if let Some(answer) = self.answer(key)? {
            return Ok(answer);
        }
        self.require(&request)?;
        match self.era {
            Era::Modern => Err(InputRequired::new().request(key, request).before_task().into()),
            Era::Legacy => self.send(&request).await,
        }
    }

    /// Whether this call may run as a task: the tool allows it and the client declared the
    /// extension (`io.modelcontextprotocol/tasks`). Such a call that does not answer at once
    /// is answered with a task, and the handler goes on in the background.
    #[must_use]
    pub fn may_run_as_task(&self) -> bool {
        self.task
    }

    /// -32021 unless the client declared what `request` needs.
    pub(crate) fn require(&self, request: &InputRequest<'_>) -> Result<(), HandlerError> {
        match request.capability() {
            Some(cap) => self.require_client(cap),
            None => Ok(()),
        }
    }

    /// Refuses the request with -32021 (data `{"requiredCapabilities": {cap: {}}}`) unless the
    /// client declared capability `cap`.
    ///
    /// # Errors
    ///
    /// As above.
    pub fn require_client(&self, cap: &str) -> Result<(), HandlerError> {
        if self.client_supports(cap) {
            return Ok(());
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Data<'a> {
            required_capabilities: BTreeMap<&'a str, crate::mcp::types::Empty>,
        }
        let data = Data { required_capabilities: [(cap, crate::mcp::types::Empty {})].into() };
        Err(HandlerError::Protocol(
            RpcError::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("Missing required client capability: {cap}"),
            )
            .with_data(&data),
        ))
    }

    /// Legacy era: one input request sent to the client as a request of its own.
    pub(crate) async fn send(&self, request: &InputRequest<'_>) -> Result<Answer, HandlerError> {
        let params = request.params.as_ref().map(Raw::as_raw_json);
        match self.cx.peer().request(&request.method, params).await {
            Ok(response) => {
                let text = response.result().map_or("null", |r| r.get()).to_owned();
                let raw = Raw::owned(text).map_err(|e| RpcError::internal(e.to_string()))?;
                Ok(Answer(raw))
            }
            Err(e) => Err(HandlerError::Protocol(RpcError::new(
                ErrorCode::INTERNAL_ERROR,
                format!("{} failed: {e}", request.method),
            ))),
        }
    }

    /// The progress token the request carries, as its JSON text.
    fn progress_token(&self) -> Option<RawJson<'_>> {
        let meta = self.params_member(Key::Meta).ok()??;
        member(meta, "progressToken").ok()?
    }

    /// Reports progress, when the request asked for it (`_meta.progressToken`); otherwise
    /// does nothing. Over HTTP the notification travels on the request's own stream.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = self.progress_token() else { return };
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Progress<'a> {
            progress_token: &'a serde_json::value::RawValue,
            progress: f64,
            #[serde(skip_serializing_if = "Option::is_none")]
            total: Option<f64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            message: Option<&'a str>,
        }
        let Ok(token) = serde_json::from_str::<&serde_json::value::RawValue>(token.get()) else {
            return;
        };
        let p = Progress { progress_token: token, progress, total, message };
        if let Err(e) = self.cx.notify("notifications/progress", Some(Json(&p))).await {
            tracing::debug!(error = %e, "progress not sent");
        }
    }

    /// Sends a log message, when the client wants messages this severe: in the legacy era as
    /// `logging/setLevel` set (every level until it is called); in the modern era only when
    /// the request's `_meta` names a `logLevel` at or below `level`.
    pub async fn log<T: Serialize + ?Sized>(&self, level: LoggingLevel, data: &T) {
        let wanted = match self.era {
            Era::Modern => self.log_level.is_some_and(|least| level >= least),
            Era::Legacy => level >= self.session.log_level(),
        };
        if !wanted {
            return;
        }
        #[derive(Serialize)]
        struct Message<'a, T: ?Sized> {
            level: LoggingLevel,
            logger: &'a str,
            data: &'a T,
        }
        let m = Message { level, logger: &self.server.0.info.name, data };
        if let Err(e) = self.cx.notify("notifications/message", Some(Json(&m))).await {
            tracing::debug!(error = %e, "log message not sent");
        }
    }

    /// The name a `tools/call` or `prompts/get` names.
    #[must_use]
    pub fn name(&self) -> Cow<'_, str> {
        self.params_member(Key::Name)
            .ok()
            .flatten()
            .and_then(crate::mcp::meta::str_of)
            .unwrap_or(Cow::Borrowed(""))
    }
}
