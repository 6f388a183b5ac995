//! Tools run as tasks: the client's side of the tasks extension (`io.modelcontextprotocol/tasks`,
//! SEP-2663).
//!
//! A client that declares the extension ([`ClientBuilder::tasks`](super::ClientBuilder::tasks))
//! may be answered a task (`resultType: "task"`) instead of a tool's result: the server runs the
//! tool in the background, and the client polls `tasks/get` until the task ends, answers what
//! the task asks for on the way (status `input_required`: its `inputRequests`, answered with
//! `tasks/update` by the callbacks that answer elicitation, sampling and roots), and may cancel
//! it (`tasks/cancel`). [`Client::call_tool`] does all of that itself and returns the tool's
//! result, or its error, exactly as a call answered at once would; [`Client::start_tool`] hands
//! a task to the host as a [`TaskHandle`] instead.
//!
//! Polls are paced by [`TaskPolling`]: the server's `pollIntervalMs`, kept between a floor and a
//! ceiling; with no suggestion, an interval that doubles from a start value up to the ceiling.
//! Input rounds inside a task are bounded by the client's [`InputLimits`]: at most
//! `max_rounds` `tasks/update`s, each answering at most `max_requests` requests.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;

use super::callbacks::Resolver;
use super::client::Client;
use super::decoded::{Cart, Decoded};
use super::error::ClientError;
use super::input::{InputError, InputResolver};
use super::negotiate::Negotiated;
use super::polling::TaskPolling;
use crate::mcp::input_rounds::{InputLimits, Malformed};
use crate::mcp::types::{CallToolResult, Raw};
use crate::mcp::types::{DetailedTask, TaskIdParams, TaskStatus, UpdateTaskParams};
use crate::message::encode::Json;
use crate::peer::{Incoming, PeerHandle, RequestOptions};

/// `method` with params `{"taskId": id}`.
async fn by_id(
    agreed: &Negotiated,
    peer: &PeerHandle,
    method: &str,
    id: &str,
    options: RequestOptions,
) -> Result<Incoming, crate::peer::RequestError> {
    agreed.request(peer, method, Some(Json(&TaskIdParams { task_id: id.into() })), options).await
}

/// The task a `tasks/get` answer describes, checked to be task `id`.
fn task_of<'a>(answer: &'a Incoming, id: &str) -> Result<DetailedTask<'a>, Malformed> {
    let text = answer.result().map_or("null", |r| r.get());
    let task: DetailedTask<'_> =
        serde_json::from_str(text).map_err(|e| Malformed(format!("tasks/get: {e}")))?;
    if task.task.task_id != id {
        return Err(Malformed(format!(
            "tasks/get for {id:?} answered task {:?}",
            task.task.task_id
        )));
    }
    Ok(task)
}

impl Negotiated {
    /// Polls task `id` (`tasks/get`, paced by `polling` from the server's first suggestion
    /// `suggested_ms`) until it ends, answering what it asks for on the way with `resolver`
    /// (`tasks/update`, each request key once, within `limits`), and returns the last
    /// `tasks/get` answer: a task that is completed, failed or cancelled. Each request has
    /// `options`.
    ///
    /// # Errors
    ///
    /// [`InputError::Request`] when a request fails (a `tasks/get` the server refuses, the
    /// connection), [`InputError::Malformed`] when an answer is not a task or not this one,
    /// and the other kinds when the task's input requests go past `limits` or cannot be
    /// fulfilled.
    #[expect(clippy::too_many_arguments, reason = "the task, its pacing and its bounds")]
    pub async fn settle_task<R: InputResolver>(
        &self,
        peer: &PeerHandle,
        id: &str,
        suggested_ms: Option<u64>,
        options: RequestOptions,
        resolver: &R,
        polling: TaskPolling,
        limits: InputLimits,
    ) -> Result<Incoming, InputError> {
        let mut wait = polling.next(suggested_ms, None);
        let mut answered: HashSet<String> = HashSet::new();
        let mut rounds = 0u32;
        loop {
            tokio::time::sleep(wait).await;
            let answer = by_id(self, peer, "tasks/get", id, options.clone()).await?;
            let task = task_of(&answer, id)?;
            let status = task.task.status;
            if status.is_terminal() {
                drop(task);
                return Ok(answer);
            }
            wait = polling.next(task.task.poll_interval_ms, Some(wait));
            let Some(requests) =
                task.input_requests.filter(|_| status == TaskStatus::InputRequired)
            else {
                continue;
            };
            let fresh: Vec<_> =
                requests.iter().filter(|(k, _)| !answered.contains(k.as_ref())).collect();
            if fresh.is_empty() {
                continue;
            }
            if rounds == limits.max_rounds {
                return Err(InputError::TooManyRounds(rounds));
            }
            rounds += 1;
            if fresh.len() > limits.max_requests {
                return Err(InputError::TooManyRequests {
                    got: fresh.len(),
                    max: limits.max_requests,
                });
            }
            let mut responses = BTreeMap::new();
            for (key, request) in fresh {
                let params = request.params.as_ref().map(Raw::as_raw_json);
                let answer = resolver.resolve(&request.method, params).await.map_err(|reason| {
                    InputError::Unfulfilled {
                        key: key.to_string(),
                        method: request.method.to_string(),
                        reason,
                    }
                })?;
                let answer = Raw::owned(answer).map_err(|e| Malformed(format!("answer: {e}")))?;
                responses.insert(key.clone(), answer);
            }
            answered.extend(responses.keys().map(|k| k.to_string()));
            tracing::debug!(task = id, round = rounds, "answering a task's input requests");
            let update = UpdateTaskParams { task_id: id.into(), input_responses: responses };
            self.request(peer, "tasks/update", Some(Json(&update)), options.clone()).await?;
            // The answers move the task on: look again soon.
            wait = polling.floor;
        }
    }
}

/// What [`Client::start_tool`] got: the tool's result at once, or a task that will produce it.
#[derive(Debug)]
pub enum Started {
    /// The server answered the call itself.
    Done(Decoded<CallToolResult<'static>>),
    /// The server runs the call as a task.
    Task(TaskHandle),
}

/// A tool call the server runs as a task: poll it, answer it, cancel it, or wait for its end.
#[derive(Clone, Debug)]
pub struct TaskHandle {
    client: Client,
    id: String,
    suggested_ms: Option<u64>,
    options: super::CallOptions,
}

impl TaskHandle {
    /// The task's id, as the server named it.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task as it is now (`tasks/get`): its status and what the status carries, as JSON
    /// text of a `DetailedTask`.
    ///
    /// # Errors
    ///
    /// As any call; an id the server no longer knows is a [`ClientError::Protocol`] with
    /// -32602.
    pub async fn get(
        &self,
    ) -> Result<Decoded<crate::mcp::types::DetailedTask<'static>>, ClientError> {
        let inner = &*self.client.0;
        let answer = by_id(
            &inner.agreed,
            &inner.peer,
            "tasks/get",
            &self.id,
            self.client.request_options(&self.options),
        )
        .await
        .map_err(|e| ClientError::request("tasks/get", e))?;
        Decoded::decode(Cart::Result(answer))
            .map_err(|e| ClientError::invalid("tasks/get", format!("result: {e}")))
    }

    /// Asks the server to cancel the task (`tasks/cancel`). Cancelling is cooperative: the
    /// task may still end otherwise, which [`TaskHandle::wait`] reports.
    ///
    /// # Errors
    ///
    /// As any call.
    pub async fn cancel(&self) -> Result<(), ClientError> {
        self.client.cancel_task(&self.id, &self.options).await
    }

    /// Polls the task until it ends, answering its input requests with the client's callbacks,
    /// and returns what the call would have returned had it been answered at once: the tool's
    /// result, [`ClientError::Tool`] for a result with `isError`, [`ClientError::Protocol`] for
    /// a task that failed with a JSON-RPC error, [`ClientError::Cancelled`] for one cancelled.
    /// The [`CallOptions`](super::CallOptions) of the call that started it apply: its
    /// cancellation token cancels the task.
    ///
    /// # Errors
    ///
    /// As above, and as any call.
    pub async fn wait(self) -> Result<Decoded<CallToolResult<'static>>, ClientError> {
        self.client.settle_tool_task(&self.id, self.suggested_ms, &self.options).await
    }
}

/// How a task's last `tasks/get` answer ends the call.
fn ended(answer: Incoming) -> Result<Decoded<CallToolResult<'static>>, ClientError> {
    const METHOD: &str = "tools/call";
    let text = answer.result().map_or("null", |r| r.get());
    let task: DetailedTask<'_> =
        serde_json::from_str(text).map_err(|e| ClientError::invalid("tasks/get", e))?;
    match task.task.status {
        TaskStatus::Completed => {
            let Some(result) = task.result else {
                return Err(ClientError::invalid("tasks/get", "a completed task without a result"));
            };
            let r: Decoded<CallToolResult<'static>> =
                Decoded::decode(Cart::Text(result.get().into()))
                    .map_err(|e| ClientError::invalid(METHOD, format!("result: {e}")))?;
            if r.get().is_error {
                return Err(ClientError::Tool(Box::new(r)));
            }
            Ok(r)
        }
        TaskStatus::Failed => {
            #[derive(Deserialize)]
            struct Error<'a> {
                code: i64,
                #[serde(borrow)]
                message: Cow<'a, str>,
                #[serde(borrow, default)]
                data: Option<Raw<'a>>,
            }
            let e: Error<'_> = task
                .error
                .as_ref()
                .ok_or_else(|| ClientError::invalid("tasks/get", "a failed task without an error"))?
                .decode()
                .map_err(|e| ClientError::invalid("tasks/get", format!("error: {e}")))?;
            Err(ClientError::Protocol {
                method: METHOD.into(),
                code: crate::error::ErrorCode(e.code),
                message: e.message.into_owned(),
                data: e.data.map(|d| d.get().to_owned()),
            })
        }
        TaskStatus::Cancelled => Err(ClientError::Cancelled),
        TaskStatus::Working | TaskStatus::InputRequired => {
            Err(ClientError::invalid("tasks/get", "the task has not ended"))
        }
    }
}

impl Client {
    /// `tasks/cancel` for task `id`.
    async fn cancel_task(&self, id: &str, options: &super::CallOptions) -> Result<(), ClientError> {
        let inner = &*self.0;
        by_id(&inner.agreed, &inner.peer, "tasks/cancel", id, self.request_options(options))
            .await
            .map(drop)
            .map_err(|e| ClientError::request("tasks/cancel", e))
    }

    /// Drives task `id` of a tool call to its end (see [`TaskHandle::wait`]).
    pub(super) async fn settle_tool_task(
        &self,
        id: &str,
        suggested_ms: Option<u64>,
        options: &super::CallOptions,
    ) -> Result<Decoded<CallToolResult<'static>>, ClientError> {
        let inner = &*self.0;
        let resolver = Resolver(&inner.callbacks);
        let settle = inner.agreed.settle_task(
            &inner.peer,
            id,
            suggested_ms,
            self.request_options(options),
            &resolver,
            inner.task_polling,
            inner.limits,
        );
        let answer = match options.cancel_token() {
            None => settle.await,
            Some(token) => tokio::select! {
                r = settle => r,
                () = token.cancelled() => {
                    // Told, best effort: the call ends cancelled whatever the server says.
                    let _ = self.cancel_task(id, options).await;
                    return Err(ClientError::Cancelled);
                }
            },
        };
        ended(answer.map_err(|e| ClientError::input("tasks/get", e))?)
    }

    /// Calls tool `name` as [`Client::call_tool_with`] does, but hands a task the server
    /// starts to the caller rather than waiting for its end: [`Started::Task`], which
    /// [`TaskHandle::wait`] drives as `call_tool` would. A server answers with a task only to a
    /// client that declared the extension ([`ClientBuilder::tasks`](super::ClientBuilder::tasks)).
    ///
    /// # Errors
    ///
    /// As [`Client::call_tool_with`], for the call itself.
    pub async fn start_tool(
        &self,
        name: &str,
        arguments: impl serde::Serialize,
        options: &super::CallOptions,
    ) -> Result<Started, ClientError> {
        match self.call_tool_answer(name, arguments, options).await? {
            super::calls::ToolAnswer::Done(r) => Ok(Started::Done(r)),
            super::calls::ToolAnswer::Task { id, suggested_ms } => Ok(Started::Task(TaskHandle {
                client: self.clone(),
                id,
                suggested_ms,
                options: options.clone(),
            })),
        }
    }
}
