//! Multi round-trip requests (2026-07-28) on the client's side: a server that needs
//! something from the client before it can answer (a form filled, a completion sampled, the
//! roots) answers the request with an `InputRequiredResult` instead of sending requests of
//! its own; the client fulfils each of its `inputRequests` and sends the same request again
//! (a new JSON-RPC id), carrying `inputResponses` keyed as the requests were and the
//! `requestState` it was given, echoed byte for byte.
//!
//! The pieces are pure ([`outcome`], [`retry_params`]) so they can be tested, and used over
//! any I/O; `Negotiated::request_with_input` in `mcpwire::client` (feature `peer`) runs the
//! loop over a peer, bounded by [`InputLimits`]:
//!
//! - a result without `resultType`, or with `"complete"`, ends the loop (a server of an
//!   earlier version sends none: the client MUST take it as complete);
//! - each `input_required` answer costs one round; past [`InputLimits::max_rounds`] retries
//!   the request fails with `InputError::TooManyRounds` rather than loop for as long as the
//!   server asks;
//! - an answer naming more than [`InputLimits::max_requests`] input requests fails with
//!   `InputError::TooManyRequests` before any is fulfilled;
//! - every retry is built from the caller's own params: the responses and state of a round go
//!   into the next request of that same call only, never into another request.
//!
//! ```
//! use mcpwire::RawJson;
//! use mcpwire::mcp::input_rounds::{Outcome, outcome, retry_params};
//!
//! let answer = RawJson::new(r#"{"resultType":"input_required",
//!     "inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"ok?"}}},
//!     "requestState":"s\u00e9-1"}"#);
//! let Outcome::InputRequired(needed) = outcome(answer).unwrap() else { unreachable!() };
//! assert_eq!(needed.requests[0].key, "confirm");
//! assert_eq!(needed.requests[0].method, "elicitation/create");
//! let params = RawJson::new(r#"{"name":"deploy","arguments":{}}"#);
//! let responses = [("confirm".to_owned(), r#"{"action":"accept"}"#.to_owned())];
//! let retry = retry_params(Some(params), &responses, needed.request_state).unwrap();
//! assert_eq!(retry, r#"{"name":"deploy","arguments":{},"inputResponses":{"confirm":{"action":"accept"}},"requestState":"s\u00e9-1"}"#);
//! ```

use crate::limits::DEFAULT_MAX_INPUT_REQUESTS;
use crate::limits::MAX_INPUT_ROUNDS;
use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::meta::member;
use crate::message::RawJson;

/// The `resultType` of an `InputRequiredResult`.
pub const INPUT_REQUIRED: &str = "input_required";
/// The `resultType` of a result that is a task (`CreateTaskResult`, the tasks extension).
pub const TASK: &str = "task";

/// The bounds of one call's input rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputLimits {
    /// The most retries with input responses ([`MAX_INPUT_ROUNDS`]).
    pub max_rounds: u32,
    /// The most input requests one answer may name ([`DEFAULT_MAX_INPUT_REQUESTS`]).
    pub max_requests: usize,
}

impl Default for InputLimits {
    fn default() -> Self {
        Self { max_rounds: MAX_INPUT_ROUNDS, max_requests: DEFAULT_MAX_INPUT_REQUESTS }
    }
}

impl InputLimits {
    /// At most `n` retries with input responses.
    #[must_use]
    pub fn max_rounds(mut self, n: u32) -> Self {
        self.max_rounds = n;
        self
    }

    /// At most `n` input requests in one answer.
    #[must_use]
    pub fn max_requests(mut self, n: usize) -> Self {
        self.max_requests = n;
        self
    }
}

/// Why an answer or a retry's params could not be read or built: the server's answer is not a
/// result a client can act on, or the caller's params are not a JSON object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed InputRequiredResult: {0}")]
pub struct Malformed(pub String);

/// One request of an `InputRequiredResult`'s `inputRequests`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundRequest<'a> {
    /// The server's key for it, which its response carries back.
    pub key: Cow<'a, str>,
    /// Its method (`elicitation/create`, `sampling/createMessage`, `roots/list`).
    pub method: Cow<'a, str>,
    /// Its params, as sent.
    pub params: Option<RawJson<'a>>,
}

/// What an `InputRequiredResult` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputRound<'a> {
    /// The input requests, in the order the server wrote them.
    pub requests: Vec<RoundRequest<'a>>,
    /// The `requestState` to send back: the JSON string exactly as the server wrote it
    /// (quotes and escapes included), never decoded.
    pub request_state: Option<RawJson<'a>>,
}

/// What a result says about the call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// The call is done (`resultType` `"complete"`, or none).
    Complete,
    /// The server needs input first.
    InputRequired(InputRound<'a>),
    /// The server runs the call as a task (`resultType` `"task"`, the tasks extension): the
    /// result is a `CreateTaskResult`, polled with `tasks/get` until the task ends.
    Task,
}

/// What a `CreateTaskResult` tells the client: the task and the first suggested interval.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Created<'a> {
    #[serde(borrow)]
    task_id: Cow<'a, str>,
    #[serde(default)]
    poll_interval_ms: Option<u64>,
}

/// The task a `CreateTaskResult` (`result`) names, and its suggested interval.
///
/// # Errors
///
/// [`Malformed`] when it names no task id.
pub fn created_task(result: RawJson<'_>) -> Result<(String, Option<u64>), Malformed> {
    let c: Created<'_> = serde_json::from_str(result.get())
        .map_err(|e| Malformed(format!("CreateTaskResult: {e}")))?;
    Ok((c.task_id.into_owned(), c.poll_interval_ms))
}

/// The members of a JSON object, borrowed and in their order, each key at most once.
struct UniqueMembers<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for UniqueMembers<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UniqueMembers<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    if out.iter().any(|(seen, _)| *seen == k) {
                        return Err(serde::de::Error::custom(format!("duplicate key {k:?}")));
                    }
                    out.push((k, v));
                }
                Ok(UniqueMembers(out))
            }
        }
        d.deserialize_map(V)
    }
}

fn members(json: RawJson<'_>) -> Result<Vec<(Cow<'_, str>, &RawValue)>, String> {
    serde_json::from_str::<UniqueMembers<'_>>(json.get()).map(|m| m.0).map_err(|e| e.to_string())
}

/// Reads a result: complete, or the input it requires.
///
/// # Errors
///
/// [`Malformed`] when `result` is not an object, its `resultType` is neither
/// `"complete"` nor `"input_required"`, or an `InputRequiredResult` has neither
/// `inputRequests` nor `requestState`, an input request without a string `method`, or a
/// `requestState` that is not a string.
pub fn outcome(result: RawJson<'_>) -> Result<Outcome<'_>, Malformed> {
    let bad = Malformed;
    let kind = member(result, "resultType").map_err(|e| bad(e.message.into_owned()))?;
    let kind: Option<Cow<'_, str>> = match kind {
        None => None,
        Some(k) => {
            Some(k.deserialize().map_err(|_| bad(format!("resultType {k} is not a string")))?)
        }
    };
    match kind.as_deref() {
        None | Some("complete") => return Ok(Outcome::Complete),
        Some(INPUT_REQUIRED) => {}
        Some(TASK) => return Ok(Outcome::Task),
        Some(other) => return Err(bad(format!("unknown resultType {other:?}"))),
    }
    let requests = member(result, "inputRequests").map_err(|e| bad(e.message.into_owned()))?;
    let state = member(result, "requestState").map_err(|e| bad(e.message.into_owned()))?;
    if let Some(s) = state
        && !s.get().trim_start().starts_with('"')
    {
        return Err(bad(format!("requestState {s} is not a string")));
    }
    let state = state.map(|s| RawJson::new(s.get().trim()));
    let mut out = Vec::new();
    if let Some(requests) = requests {
        for (key, request) in members(requests).map_err(|e| bad(format!("inputRequests: {e}")))? {
            #[derive(serde::Deserialize)]
            struct Wire<'a> {
                #[serde(borrow)]
                method: Cow<'a, str>,
                #[serde(borrow)]
                params: Option<&'a RawValue>,
            }
            let w: Wire<'_> = serde_json::from_str(request.get())
                .map_err(|e| bad(format!("input request {key:?}: {e}")))?;
            out.push(RoundRequest {
                key,
                method: w.method,
                params: w.params.map(|p| RawJson::new(p.get())),
            });
        }
    }
    if requests.is_none() && state.is_none() {
        return Err(bad("neither inputRequests nor requestState".into()));
    }
    Ok(Outcome::InputRequired(InputRound { requests: out, request_state: state }))
}

/// [`outcome`] of `result`, the result of the response `msg` as parsed: when the parse recorded
/// the members of `result`, a `resultType` that is absent, `"complete"` or `"task"` is read from
/// them (no pass over the result); anything else is read by [`outcome`].
///
/// # Errors
///
/// As [`outcome`].
// Read by the typed client only.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) fn outcome_of<'a>(
    msg: &crate::message::Message<'a>,
    result: RawJson<'a>,
) -> Result<Outcome<'a>, Malformed> {
    if let Some(members) = msg.result_members()
        && let Ok([kind]) = members.pick(["resultType"])
    {
        match kind {
            None | Some("\"complete\"") => return Ok(Outcome::Complete),
            Some("\"task\"") => return Ok(Outcome::Task),
            _ => {}
        }
    }
    outcome(result)
}

/// The params of a retry: the caller's `original` params (an object; none is `{}`) with
/// their members kept as written and in order, less any `inputResponses` and `requestState`
/// of theirs, then `inputResponses` (one member per `(key, result JSON)`, omitted when there
/// are none) and `requestState` (as given, byte for byte; omitted when `None`).
///
/// # Errors
///
/// [`Malformed`] when `original` is not a JSON object, names a key twice, or a
/// response is not JSON.
pub fn retry_params(
    original: Option<RawJson<'_>>,
    responses: &[(String, String)],
    request_state: Option<RawJson<'_>>,
) -> Result<String, Malformed> {
    let kept = match original {
        Some(p) => members(p).map_err(|e| Malformed(format!("the params: {e}")))?,
        None => Vec::new(),
    };
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let mut out = String::from("{");
    let sep = |out: &mut String| {
        if out.len() > 1 {
            out.push(',');
        }
    };
    for (k, v) in &kept {
        if k == "inputResponses" || k == "requestState" {
            continue;
        }
        sep(&mut out);
        out.push_str(&quote(k));
        out.push(':');
        out.push_str(v.get());
    }
    if !responses.is_empty() {
        sep(&mut out);
        out.push_str("\"inputResponses\":{");
        for (i, (key, result)) in responses.iter().enumerate() {
            let result = RawValue::from_string(result.clone())
                .map_err(|e| Malformed(format!("the response to {key:?} is not JSON: {e}")))?;
            if i > 0 {
                out.push(',');
            }
            out.push_str(&quote(key));
            out.push(':');
            out.push_str(result.get());
        }
        out.push('}');
    }
    if let Some(state) = request_state {
        sep(&mut out);
        out.push_str("\"requestState\":");
        out.push_str(state.get());
    }
    out.push('}');
    Ok(out)
}

#[cfg(test)]
mod tests;
