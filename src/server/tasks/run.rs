//! A tool's handler run as a task. The handler is the same async function a plain call runs:
//! the server takes its first step inline, and a handler that answers at once is answered in
//! the call's own response (so is one that asks for input with [`Call::ask_first`]); one that
//! waits becomes a task, run in the background, whose `input_required` rounds the client
//! answers with `tasks/update` (the handler is called again with the answers, as the legacy
//! rounds do, at most [`MAX_INPUT_ROUNDS`] times).

use crate::limits::MAX_INPUT_ROUNDS;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::task::Poll;

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::Notify;

use super::super::call::{Answer, Call, Capabilities};
use super::super::param_slots::ParamSlots;
use super::super::{BoxFuture, ConnectionHandler, ConnectionState, HandlerError, Server};
use super::Place;
use crate::mcp::Era;
use crate::mcp::types::{CallToolResult, LoggingLevel, TaskStatus, TaskSupport};
use crate::peer::{Context, Incoming, Reply, RpcError};

/// How a call that may run as a task went on.
pub(crate) enum Started {
    /// The task was made: its `CreateTaskResult`.
    Task(Reply),
    /// The handler answered on its first step: answered as any call is.
    Inline(Result<CallToolResult<'static>, HandlerError>),
}

/// How a task's handler goes on.
enum Step {
    /// Running.
    Running(BoxFuture<Result<CallToolResult<'static>, HandlerError>>),
    /// Waiting for the client's input.
    Needs(super::super::InputRequired),
}

/// What makes the task's handler's [`Call`] again, each round.
struct Seed {
    request: Incoming,
    cx: Context,
    server: Server,
    session: Arc<ConnectionState>,
    era: Era,
    log_level: Option<LoggingLevel>,
    capabilities: Capabilities,
}

impl Seed {
    fn of(call: &Call) -> Self {
        Self {
            request: call.request.clone(),
            cx: call.cx.clone(),
            server: call.server.clone(),
            session: call.session.clone(),
            era: call.era,
            log_level: call.log_level,
            capabilities: call.capabilities,
        }
    }

    fn call(
        &self,
        answers: Vec<(String, Answer)>,
        state: Option<String>,
    ) -> Result<Call, RpcError> {
        Ok(Call {
            request: self.request.clone(),
            cx: self.cx.clone(),
            server: self.server.clone(),
            session: self.session.clone(),
            era: self.era,
            log_level: self.log_level,
            capabilities: self.capabilities,
            state,
            answers,
            slots: ParamSlots::read(self.request.params())?,
            task: true,
        })
    }
}

impl ConnectionHandler {
    /// Whether a `tools/call` (`is_tool`) of `name` may run as a task, and then the tool's
    /// index and the place reserved for its task: -32021 for a tool that runs only as a task
    /// when the client did not declare the extension, -32000 past a bound on tasks.
    pub(crate) fn task_place(
        &self,
        is_tool: bool,
        call: &Call,
        name: &str,
    ) -> Result<Option<(usize, Place<'_>)>, RpcError> {
        let state = self.state();
        if !is_tool || state.capabilities.extensions.is_none() {
            return Ok(None);
        }
        let Some(i) = state.tools.iter().position(|(t, _, _)| t.name == name) else {
            return Ok(None);
        };
        match state.tools[i].0.task_support_of() {
            TaskSupport::Forbidden => Ok(None),
            _ if super::negotiated(call) => Ok(Some((i, state.tasks.reserve(self.owner(call))?))),
            TaskSupport::Optional => Ok(None),
            TaskSupport::Required => Err(super::missing_extension()),
        }
    }

    /// Runs tool `tool`'s handler on `call` (the client declared the extension, and `place` is
    /// reserved for the task): inline while it answers at once, as a task once it waits.
    pub(crate) async fn start_task(
        &self,
        call: Call,
        tool: usize,
        place: Place<'_>,
    ) -> Result<Started, RpcError> {
        let state = self.state();
        let seed = Seed::of(&call);
        let earlier = call.answers.clone();
        let mut running = (state.tools[tool].2)(call);
        let first = std::future::poll_fn(|cx| Poll::Ready(running.as_mut().poll(cx))).await;
        let step = match first {
            Poll::Pending => Step::Running(running),
            Poll::Ready(Err(HandlerError::InputRequired(needed)))
                if !needed.before_task && !needed.requests.is_empty() =>
            {
                Step::Needs(needed)
            }
            Poll::Ready(outcome) => return Ok(Started::Inline(outcome)),
        };
        let (id, wake) = state.tasks.create(place, TaskStatus::Working, BTreeMap::new());
        let created = state
            .tasks
            .created(&id)
            .ok_or_else(|| RpcError::internal("the task ended before it was announced"))?;
        let era = seed.era;
        let runner = tokio::spawn(run(id.clone(), wake, tool, seed, earlier, step));
        state.tasks.set_abort(&id, runner.abort_handle());
        self.task_reply(era, created, "task").map(Started::Task)
    }
}

/// The task's life: the handler's rounds until it ends.
async fn run(
    id: Arc<str>,
    wake: Arc<Notify>,
    tool: usize,
    seed: Seed,
    mut answers: Vec<(String, Answer)>,
    mut step: Step,
) {
    let server = seed.server.clone();
    let store = &server.0.tasks;
    let mut rounds = 0;
    loop {
        let outcome = match step {
            Step::Running(f) => f.await,
            Step::Needs(needed) => Err(HandlerError::InputRequired(needed)),
        };
        let needed = match outcome {
            Ok(result) => return completed(&server, &id, &result, seed.era),
            Err(HandlerError::Tool(reason)) => {
                return completed(&server, &id, &CallToolResult::error(reason), seed.era);
            }
            Err(HandlerError::Protocol(e)) => return failed(&server, &id, &e),
            Err(HandlerError::InputRequired(needed)) => needed,
        };
        rounds += 1;
        let refusal = if needed.requests.is_empty() {
            Some(RpcError::internal("the handler asked for input but named no input request"))
        } else if rounds > MAX_INPUT_ROUNDS {
            Some(RpcError::internal(format!(
                "the handler asked for input more than {MAX_INPUT_ROUNDS} times"
            )))
        } else {
            None
        };
        if let Some(e) = refusal {
            return failed(&server, &id, &e);
        }
        // What the client did not declare is never asked (-32021, the task fails).
        let check = match seed.call(Vec::new(), None) {
            Ok(call) => needed.requests.values().find_map(|r| match call.require(r) {
                Ok(()) => None,
                Err(HandlerError::Protocol(e)) => Some(e),
                Err(other) => Some(RpcError::internal(other.to_string())),
            }),
            Err(e) => Some(e),
        };
        if let Some(e) = check {
            return failed(&server, &id, &e);
        }
        if !store.set(&id, TaskStatus::InputRequired, needed.requests, None) {
            return;
        }
        server.task_changed(&id);
        let mut given = loop {
            if let Some(given) = store.take_answers(&id) {
                break given;
            }
            wake.notified().await;
        };
        for (k, a) in answers {
            if !given.iter().any(|(seen, _)| *seen == k) {
                given.push((k, a));
            }
        }
        answers = given;
        let call = match seed.call(answers.clone(), needed.state) {
            Ok(call) => call,
            Err(e) => return failed(&server, &id, &e),
        };
        step = Step::Running((server.0.tools[tool].2)(call));
    }
}

/// The task completed with `result` (kept unless it is past the size bound: then it fails).
/// The result is kept as the call would have answered it: in the modern era with
/// `resultType: "complete"` (the extension's TypeScript requester refuses a result without it).
fn completed(server: &Server, id: &str, result: &CallToolResult<'_>, era: Era) {
    let store = &server.0.tasks;
    let room = match era {
        Era::Modern => super::super::dispatch::encode::typed_room("complete", None),
        Era::Legacy => 0,
    };
    let encode = super::super::dispatch::encode::tool_json(result, room);
    let json = match era {
        Era::Modern => encode
            .and_then(|json| super::super::dispatch::encode::typed_json(json, "complete", None)),
        Era::Legacy => encode,
    };
    let json = match json {
        Ok(json) => json,
        Err(e) => return failed(server, id, &e),
    };
    if json.len() > store.bounds.result_bytes {
        let e = RpcError::internal(format!(
            "the task's result is {} bytes, past the {} a task keeps",
            json.len(),
            store.bounds.result_bytes
        ));
        return failed(server, id, &e);
    }
    match RawValue::from_string(json) {
        Ok(raw) => {
            if store.set(id, TaskStatus::Completed, BTreeMap::new(), Some(raw)) {
                server.task_changed(id);
            }
        }
        Err(e) => failed(server, id, &RpcError::internal(e.to_string())),
    }
}

/// The task failed with protocol error `e` (`{code, message, data?}`).
fn failed(server: &Server, id: &str, e: &RpcError) {
    #[derive(Serialize)]
    struct Shape<'a> {
        code: i64,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<&'a RawValue>,
    }
    let data = e.data().and_then(|d| serde_json::from_str::<&RawValue>(d.get()).ok());
    let shape = Shape { code: e.code.get(), message: &e.message, data };
    let raw = serde_json::value::to_raw_value(&shape).ok();
    if server.0.tasks.set(id, TaskStatus::Failed, BTreeMap::new(), raw) {
        server.task_changed(id);
    }
}
