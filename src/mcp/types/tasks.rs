//! The official tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a `tools/call` the
//! server runs in the background answers with a task (`resultType: "task"`), which the client
//! polls (`tasks/get`), answers when it needs input (`tasks/update`) and may cancel
//! (`tasks/cancel`). Both roles read and write these types.
//!
//! The wire shapes are flat: a task's fields sit at the top of the result (no `task` wrapper),
//! durations are integer milliseconds named `…Ms`, and a finished task carries its outcome
//! inline (`result` or `error`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{InputRequest, Raw};

/// The extension's identifier, the key under `capabilities.extensions` (client and server).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Where a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client's answers (`inputRequests`, answered with `tasks/update`).
    InputRequired,
    /// Finished with a result (a tool's own failure is a result with `isError: true`).
    Completed,
    /// Ended by a protocol error (`error`).
    Failed,
    /// Cancelled (`tasks/cancel`).
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended (completed, failed or cancelled): nothing changes it again.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// What every task message carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task<'a> {
    /// The server's opaque identifier.
    #[serde(borrow)]
    pub task_id: Cow<'a, str>,
    /// Where it is.
    pub status: TaskStatus,
    /// A message about the status, for people.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<Cow<'a, str>>,
    /// When it was created (ISO 8601, UTC).
    #[serde(borrow)]
    pub created_at: Cow<'a, str>,
    /// When its status last changed (ISO 8601, UTC).
    #[serde(borrow)]
    pub last_updated_at: Cow<'a, str>,
    /// How long the server keeps it, in milliseconds (`null`: no bound given). Always written.
    pub ttl_ms: Option<u64>,
    /// How often the server suggests polling, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

/// A `tasks/get` result (and a `notifications/tasks` params): the task, and what its status
/// carries: the pending `inputRequests` (`input_required`), the tool's `result` (`completed`),
/// or the JSON-RPC `error` (`failed`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask<'a> {
    /// The task.
    #[serde(borrow, flatten)]
    pub task: Task<'a>,
    /// What the task waits for, keyed by the server's ids (`input_required` only).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<BTreeMap<Cow<'a, str>, InputRequest<'a>>>,
    /// The tool's result (`completed` only).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Raw<'a>>,
    /// The protocol error, `{code, message, data?}` (`failed` only).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Raw<'a>>,
}

/// The params of `tasks/get` and `tasks/cancel`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams<'a> {
    /// The task.
    #[serde(borrow)]
    pub task_id: Cow<'a, str>,
}

/// The params of `tasks/update`: answers to the task's `inputRequests`, keyed as asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams<'a> {
    /// The task.
    #[serde(borrow)]
    pub task_id: Cow<'a, str>,
    /// Each answer (an elicitation, sampling or roots result) under its request's key.
    #[serde(borrow)]
    pub input_responses: BTreeMap<Cow<'a, str>, Raw<'a>>,
}

/// Whether a tool runs as a task, as its definition declares (`execution.taskSupport`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never: every call is answered in its own response (the default).
    #[default]
    Forbidden,
    /// When the client declared the extension; otherwise the call is answered in its own
    /// response.
    Optional,
    /// Only as a task: a client that did not declare the extension is refused (-32021).
    Required,
}

/// How a tool is executed (a tool's `execution` member).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether it runs as a task.
    #[serde(default)]
    pub task_support: TaskSupport,
}

/// A UTC instant as ISO 8601 with milliseconds (`2026-07-28T12:00:00.000Z`), from milliseconds
/// since the Unix epoch.
#[must_use]
pub fn iso8601(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm, in u64/i64).
    let z = i64::try_from(days).unwrap_or(i64::MAX / 2) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms % 1000
    )
}

#[cfg(test)]
mod tests;
