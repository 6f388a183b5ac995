//! What the child sends, routed back to the client it concerns: its requests (sampling,
//! elicitation, roots) go to the client whose request they concern and are refused where that
//! cannot be told; its progress goes to the request whose token it carries, under the client's own
//! token; its log messages to the client they concern; list changes to every session, resource
//! updates to the sessions that subscribed.

use crate::sync::Locked;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use tokio::sync::oneshot;

use super::hold::Ask;
use super::state::{Inner, Relation};
use crate::bridge::json;
use crate::bridge::text;
use crate::peer::{Context, Handler, Incoming, PeerHandle, Reply, RequestError, RpcError};
use crate::{error::ErrorCode, message::RawJson};

/// The child connection's handler.
pub(super) struct ChildHandler {
    pub(super) inner: Weak<Inner>,
}

impl Handler for ChildHandler {
    // `relate` is called on each handler's first poll, before any await: `Flights::prune`
    // counts on it.
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        let Some(inner) = self.inner.upgrade() else {
            return Err(RpcError::internal("mcpwire bridge: stopping"));
        };
        if req.method() == "ping" {
            return Ok(Reply::empty());
        }
        let (client, modern, seq, asks) = match inner.relate(req.position(), cx.peer()) {
            Relation::To { cx, modern, seq, asks } => (cx, modern, seq, asks),
            other => {
                inner.counters.child_requests_refused.fetch_add(1, Ordering::Relaxed);
                let why = match other {
                    Relation::Ambiguous(n) => format!(
                        "requests of {n} clients are in flight and the request names none of \
                         them"
                    ),
                    _ => "no client request is in flight".into(),
                };
                tracing::warn!(method = req.method(), %why, "mcpwire bridge: child request refused");
                return Err(refused(
                    req.method(),
                    &format!("it cannot be told which client it concerns ({why})"),
                ));
            }
        };
        if modern {
            // A 2026-07-28 client takes no requests from a server: its call is held and the
            // request asked in an `input_required` result, when the call can be.
            let Some(asks) = asks.filter(|_| INPUT_METHODS.contains(&req.method())) else {
                inner.counters.child_requests_refused.fetch_add(1, Ordering::Relaxed);
                let why = "the call it concerns is no call the bridge can hold for its input";
                tracing::warn!(method = req.method(), why, "mcpwire bridge: child request refused");
                return Err(refused(
                    req.method(),
                    "the request it concerns came from a 2026-07-28 client, which takes no \
                     server requests, and is no call the bridge can hold for its input",
                ));
            };
            inner.counters.child_requests_routed.fetch_add(1, Ordering::Relaxed);
            let (reply, answer) = oneshot::channel();
            let params = req.params().map(|p| p.get().to_owned());
            inner.park(seq, true);
            drop(inner);
            let ask = Ask { method: req.method().to_owned(), params, reply };
            let answered = match asks.send(ask).await {
                Ok(()) => answer.await.unwrap_or_else(|_| {
                    Err(RpcError::internal("mcpwire bridge: the held call was given up"))
                }),
                Err(_) => Err(RpcError::internal("mcpwire bridge: the call it concerns ended")),
            };
            if let Some(inner) = self.inner.upgrade() {
                inner.park(seq, false);
            }
            return answered.map(Reply::raw_string);
        }
        inner.counters.child_requests_routed.fetch_add(1, Ordering::Relaxed);
        drop(inner);
        match client.peer().request(req.method(), req.params()).await {
            Ok(answer) => Ok(Reply::raw(text(answer.result()))),
            Err(RequestError::Rpc(e)) => Err(e),
            Err(e) => Err(RpcError::internal(format!(
                "mcpwire bridge: the client did not answer {}: {e}",
                req.method()
            ))),
        }
    }

    async fn notification(&self, note: &Incoming, cx: &Context) {
        let Some(inner) = self.inner.upgrade() else { return };
        let method = note.method();
        let params = note.params();
        // A notification of a listen stream: to the client whose `subscriptions/listen` it is,
        // under that client's id for it.
        let sub = params.and_then(|p| json::meta_member(p.get(), crate::mcp::SUBSCRIPTION_ID_KEY));
        if let Some(sub) = sub {
            let id: Option<u64> = sub.trim().parse().ok();
            if let Some(id) = id.filter(|id| inner.upstream.owns(*id)) {
                // The bridge's own stream: for the legacy sessions, as a session would get it.
                if method == "notifications/subscriptions/acknowledged" {
                    inner.upstream.acknowledged(id, text(params));
                } else if let Some(plain) = super::listen_to_child::untagged(text(params)) {
                    legacy_change(&inner, method, Some(RawJson::new(&plain)));
                }
                return;
            }
            let target = id.and_then(|id| inner.listen_target(id));
            let rewritten = target.and_then(|(peer, own)| {
                let p = json::set_meta_member(text(params), crate::mcp::SUBSCRIPTION_ID_KEY, &own)?;
                Some((peer, p))
            });
            let Some((peer, p)) = rewritten else {
                inner.counters.notifications_dropped.fetch_add(1, Ordering::Relaxed);
                return;
            };
            inner.counters.notifications_routed.fetch_add(1, Ordering::Relaxed);
            let _ = peer.notify(method, Some(RawJson::new(&p))).await;
            return;
        }
        if method == "notifications/progress" {
            return progress(&inner, params).await;
        }
        if legacy_change(&inner, method, params) {
            listens(&inner, method, params);
            return;
        }
        // `notifications/message` and anything else: the client it concerns, if one.
        match inner.relate(note.position(), cx.peer()) {
            Relation::To { cx: client, .. } => {
                inner.counters.notifications_routed.fetch_add(1, Ordering::Relaxed);
                let _ = client.notify(method, params).await;
            }
            _ => {
                inner.counters.notifications_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A list change or resource update, to the legacy sessions that take it: list changes to
/// every session, a resource's update to those subscribed to it. Whether it was one.
fn legacy_change(inner: &Inner, method: &str, params: Option<RawJson<'_>>) -> bool {
    match method {
        "notifications/tools/list_changed"
        | "notifications/prompts/list_changed"
        | "notifications/resources/list_changed" => fan_out(inner, method, params, |_| true),
        "notifications/resources/updated" => {
            let uri = params.and_then(|p| json::member(p.get(), "uri")).and_then(unquote);
            fan_out(inner, method, params, |s| {
                uri.as_ref().is_some_and(|u| s.subscriptions.contains(u))
            });
        }
        _ => return false,
    }
    true
}

/// The requests of the child's a modern client can be asked in an `input_required` result.
const INPUT_METHODS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];

/// The child's request refused: sent to no client, and why.
fn refused(method: &str, why: &str) -> RpcError {
    RpcError::new(
        ErrorCode::SERVER_ERROR,
        format!("mcpwire bridge: {method} was sent to no client: {why}"),
    )
}

/// A progress notification, to the request whose (bridge's) token it carries, with the
/// client's own token in its place.
async fn progress(inner: &Arc<Inner>, params: Option<RawJson<'_>>) {
    let params = text(params);
    let target = json::progress_token(params).and_then(|seq| inner.progress_target(seq));
    let Some((client, token)) = target else {
        inner.counters.notifications_dropped.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let Some(params) = json::set_member(params, "progressToken", &token) else {
        inner.counters.notifications_dropped.fetch_add(1, Ordering::Relaxed);
        return;
    };
    inner.counters.notifications_routed.fetch_add(1, Ordering::Relaxed);
    let _ = client.notify("notifications/progress", Some(RawJson::new(&params))).await;
}

/// Sends the notification to every session `to` picks, each on a task of its own (one slow
/// client does not hold back the others, nor the child).
fn fan_out(
    inner: &Inner,
    method: &str,
    params: Option<RawJson<'_>>,
    to: impl Fn(&super::state::Session) -> bool,
) {
    let params: Option<Arc<str>> = params.map(|p| Arc::from(p.get()));
    let method: Arc<str> = Arc::from(method);
    for client in inner.sessions() {
        let peer: Option<PeerHandle> = {
            let s = client.session.locked();
            s.peer.clone().filter(|_| to(&s))
        };
        let Some(peer) = peer else { continue };
        inner.counters.notifications_fanned_out.fetch_add(1, Ordering::Relaxed);
        let (method, params) = (method.clone(), params.clone());
        tokio::spawn(async move {
            let _ = peer.notify(&method, params.as_deref().map(RawJson::new)).await;
        });
    }
}

/// A change to the listen streams the bridge serves itself that take it.
fn listens(inner: &Inner, method: &str, params: Option<RawJson<'_>>) {
    let sent = inner.listens.deliver(method, params);
    inner.counters.notifications_fanned_out.fetch_add(sent, Ordering::Relaxed);
}

/// A JSON string's value.
fn unquote(raw: &str) -> Option<String> {
    serde_json::from_str(raw).ok()
}
