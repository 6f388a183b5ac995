//! Held calls (the flow; the tables are `table.rs`): a modern (2026-07-28) client's `tools/call` or
//! `prompts/get` to a legacy-only child, when the child asks for input mid-call
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`). A modern client takes no
//! requests from a server, so the bridge holds the child's call (it goes on waiting in the child)
//! and answers the client with an `input_required` result: the child's request as its one input
//! request (key [`INPUT_KEY`]), and a `requestState` sealed with HMAC-SHA256 under a per-bridge
//! random key, naming the held call, its round and its expiry, and bound to the method and tool or
//! prompt. The client's retry (`inputResponses` and that `requestState`) is opened (a changed byte:
//! -32602), the held call taken (once: a state used or expired names no call), and its answer given
//! to the child, whose call then goes on: its result is the retry's answer, or another input
//! request starts another round.
//!
//! Bounds: [`BridgeBuilder::max_held_calls`](super::super::BridgeBuilder::max_held_calls) held at once
//! (past it the child's request is refused, the call cancelled and the client answered
//! -32000), and [`BridgeBuilder::held_timeout`](super::super::BridgeBuilder::held_timeout) for the
//! client to come back: then the child's elicitation is answered `cancel` (its sampling or
//! roots request -32603), the call cancelled to the child, and the held state freed.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::state::Inner;
use crate::error::ErrorCode;
use crate::peer::RpcError;
use crate::sync::Locked;
use table::Holding;
pub(super) use table::{Ask, AskSender, Call};

pub(super) mod table;

/// The key of the one input request an `input_required` result of the bridge carries.
pub(super) const INPUT_KEY: &str = "input";

/// What comes of waiting on a call: its answer, or the input it needs (the result to give the
/// client: `input_required`).
pub(super) enum Next {
    Answer(Result<String, RpcError>),
    InputRequired(String),
}

/// What a call is bound to: its method and the tool or prompt it names.
pub(super) fn binding(method: &str, params: Option<&str>) -> String {
    let name = params
        .and_then(|p| crate::bridge::json::member(p, "name"))
        .and_then(|n| serde_json::from_str::<String>(n).ok())
        .unwrap_or_default();
    format!("mcpwire-bridge {method} {name}")
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Aborts the call when dropped unless it was held (its client went away while it ran).
struct Running(Option<Call>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.answer.abort();
        }
    }
}

/// Waits on `call` (round `round`): its answer, or the next request of the child's for it,
/// which holds the call and makes the `input_required` result. A request for a capability the
/// client did not declare in `caps` (its `clientCapabilities`) is refused to the child, and the
/// wait goes on.
pub(super) async fn wait(
    inner: &Arc<Inner>,
    call: Call,
    binding: String,
    round: u32,
    caps: Option<&str>,
) -> Next {
    let mut running = Running(Some(call));
    loop {
        let Some(c) = running.0.as_mut() else { return Next::Answer(Err(gone())) };
        let ask = tokio::select! {
            answer = &mut c.answer => {
                running.0 = None;
                return Next::Answer(answer.unwrap_or_else(|e| {
                    Err(RpcError::internal(format!("mcpwire bridge: the call failed: {e}")))
                }));
            }
            ask = c.asks.recv() => ask,
        };
        // The sender lives in the flight until the call ends: none left means it just ended.
        let Some(ask) = ask else {
            let answer = (&mut c.answer).await;
            running.0 = None;
            return Next::Answer(answer.unwrap_or_else(|_| Err(gone())));
        };
        let capability = ask.method.split('/').next().unwrap_or_default();
        if caps.is_none_or(|c| crate::bridge::json::member(c, capability).is_none()) {
            inner.counters.child_requests_refused.fetch_add(1, Ordering::Relaxed);
            let _ = ask.reply.send(Err(RpcError::new(
                ErrorCode::SERVER_ERROR,
                format!(
                    "mcpwire bridge: {} was sent to no client: the 2026-07-28 client whose call \
                     it concerns did not declare the {capability} capability",
                    ask.method
                ),
            )));
            continue;
        }
        let Some(call) = running.0.take() else { return Next::Answer(Err(gone())) };
        return match hold(inner, call, ask, binding, round) {
            Ok(result) => Next::InputRequired(result),
            Err(refused) => Next::Answer(Err(refused)),
        };
    }
}

fn gone() -> RpcError {
    RpcError::internal("mcpwire bridge: the held call ended")
}

/// Holds `call` for its client's answer to `ask`: the `input_required` result.
///
/// # Errors
///
/// -32000 past the bound on held calls: the child's request is refused and the call cancelled.
fn hold(
    inner: &Arc<Inner>,
    call: Call,
    ask: Ask,
    binding: String,
    round: u32,
) -> Result<String, RpcError> {
    let max = inner.config.max_held_calls;
    let holds = &inner.holds;
    let mut map = holds.map.locked();
    if map.len() >= max {
        drop(map);
        inner.counters.held_calls_refused.fetch_add(1, Ordering::Relaxed);
        let e = RpcError::new(
            ErrorCode::SERVER_ERROR,
            format!("mcpwire bridge: too many calls held for their clients' input: at most {max}"),
        )
        .with_data(&serde_json::json!({ "maxHeldCalls": max }));
        let _ = ask.reply.send(Err(e.clone()));
        call.answer.abort();
        return Err(e);
    }
    let id = holds.next.fetch_add(1, Ordering::Relaxed);
    let timeout = inner.config.held_timeout;
    let expires = now_ms().saturating_add(timeout.as_millis() as u64);
    let payload = serde_json::json!({ "call": id, "round": round, "expires": expires }).to_string();
    let state = holds.key.seal(&binding, &payload);
    let params: Value = ask
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or_else(|| serde_json::json!({}));
    let result = serde_json::json!({
        "resultType": crate::mcp::input_rounds::INPUT_REQUIRED,
        "inputRequests": { INPUT_KEY: { "method": ask.method, "params": params } },
        "requestState": state,
    })
    .to_string();
    let timer = tokio::spawn(expire(Arc::downgrade(inner), id, round, timeout));
    map.insert(id, Holding { call, pending: ask, round, binding, timer });
    drop(map);
    inner.counters.calls_held.fetch_add(1, Ordering::Relaxed);
    Ok(result)
}

/// After `timeout`, a call still held at `round` is given up: the child's request answered
/// `cancel` (an elicitation) or -32603, the call cancelled to the child.
async fn expire(inner: Weak<Inner>, id: u64, round: u32, timeout: Duration) {
    tokio::time::sleep(timeout).await;
    let Some(inner) = inner.upgrade() else { return };
    let held = {
        let mut map = inner.holds.map.locked();
        match map.get(&id) {
            Some(h) if h.round == round => map.remove(&id),
            _ => None,
        }
    };
    let Some(h) = held else { return };
    inner.counters.held_calls_expired.fetch_add(1, Ordering::Relaxed);
    let answer = if h.pending.method == "elicitation/create" {
        Ok(r#"{"action":"cancel"}"#.to_owned())
    } else {
        Err(RpcError::internal(format!(
            "mcpwire bridge: the client did not answer {} within {timeout:?}",
            h.pending.method
        )))
    };
    let _ = h.pending.reply.send(answer);
    // The child answers its request first; then the call is cancelled to it.
    tokio::task::yield_now().await;
    h.call.answer.abort();
}

/// A retry's `requestState` opened and its held call taken, its answer (`inputResponses`)
/// given to the child: the call, to wait on for round `round + 1`.
///
/// # Errors
///
/// -32602 when the state was changed or sealed for another call, names a call no longer held
/// (answered, expired, refused), or the retry carries no response to [`INPUT_KEY`].
pub(super) fn resume(
    inner: &Inner,
    binding: &str,
    state: &str,
    responses: Option<&str>,
) -> Result<(Call, u32), RpcError> {
    let bad = |why: &str| RpcError::invalid_params(format!("mcpwire bridge: requestState {why}"));
    let payload =
        inner.holds.key.open(binding, state).ok_or_else(|| bad("integrity check failed"))?;
    let p: Value = serde_json::from_str(&payload).map_err(|_| bad("unreadable"))?;
    let (Some(id), Some(round), Some(expires)) =
        (p["call"].as_u64(), p["round"].as_u64(), p["expires"].as_u64())
    else {
        return Err(bad("unreadable"));
    };
    if now_ms() > expires {
        return Err(bad("expired: the held call was given up"));
    }
    let answer = responses
        .and_then(|r| crate::bridge::json::member(r, INPUT_KEY))
        .ok_or_else(|| {
            RpcError::invalid_params(format!("mcpwire bridge: inputResponses.{INPUT_KEY} missing"))
        })?
        .to_owned();
    let mut map = inner.holds.map.locked();
    match map.get(&id) {
        Some(h) if u64::from(h.round) == round && h.binding == binding => {}
        _ => return Err(bad("names no held call (answered, expired or given up)")),
    }
    let Some(h) = map.remove(&id) else { return Err(bad("names no held call")) };
    drop(map);
    h.timer.abort();
    let _ = h.pending.reply.send(Ok(answer));
    Ok((h.call, h.round + 1))
}
