//! `subscriptions/listen` for modern clients of a legacy-only child, served by the bridge.
//!
//! The child has one legacy session, the bridge's, whose list changes and resource updates
//! the bridge reads anyway (for its legacy clients). A listen stream takes those its filter
//! names and the child can send (its `listChanged` and `subscribe` capabilities), each tagged
//! with the client's id for the stream (`io.modelcontextprotocol/subscriptionId`), on the
//! stream's POST. A resource the stream names is subscribed to on the child's session with
//! `resources/subscribe` unless a legacy session or another stream already holds it, and
//! unsubscribed when its last holder goes. The stream lasts until its client closes it, or
//! until the child ends (its subscriptions end with it: the stream is answered -32603 and the
//! client listens again).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::state::{ChildLink, Inner, Stream};
use crate::mcp::SUBSCRIPTION_ID_KEY;
use crate::mcp::types::ListenParams;
use crate::peer::{Context, PeerHandle, Reply, RequestOptions, RpcError};
use crate::sync::Locked;
use crate::{error::ErrorCode, message::Id, message::RawJson};

/// The most resources one stream may watch; the rest of its list is not honoured (as many as
/// a session of `mcpwire::server` takes).
const MAX_STREAM_RESOURCES: usize = 1_024;

/// A modern client's `subscriptions/listen` to a legacy-only child: acknowledged with what the
/// child can send of what it asks, then its changes until the client closes the stream.
pub(super) async fn serve(
    inner: &Arc<Inner>,
    link: &ChildLink,
    params: Option<RawJson<'_>>,
    cx: &Context,
    id: Option<Id<'_>>,
) -> Result<Reply, RpcError> {
    let p: ListenParams<'_> = serde_json::from_str(params.map_or("{}", |p| p.get()))
        .map_err(|e| RpcError::invalid_params(format!("subscriptions/listen: {e}")))?;
    let f = p.notifications.unwrap_or_default();
    let held: Value = serde_json::from_str(&link.handshake.result).unwrap_or_default();
    let caps = &held["capabilities"];
    let on = |area: &str, what: &str| caps[area][what] == Value::Bool(true);
    let stream = Arc::new(Stream {
        peer: cx.peer().clone(),
        id: id.map_or_else(|| "null".to_owned(), |i| i.to_string()),
        tools: f.tools_list_changed && on("tools", "listChanged"),
        prompts: f.prompts_list_changed && on("prompts", "listChanged"),
        resources: f.resources_list_changed && on("resources", "listChanged"),
        uris: Mutex::new(Vec::new()),
        ready: AtomicBool::new(false),
    });
    let key = inner.listens.next.fetch_add(1, Ordering::Relaxed);
    {
        let mut streams = inner.listens.streams.locked();
        if streams.len() >= inner.config.max_listen_streams {
            return Err(RpcError::new(
                ErrorCode::SERVER_ERROR,
                format!(
                    "mcpwire bridge: too many subscriptions: at most {} listen streams at once \
                     (--max-listen-streams)",
                    inner.config.max_listen_streams
                ),
            ));
        }
        streams.insert(key, stream.clone());
    }
    let _registered = Registered { inner: inner.clone(), key, child: link.peer.clone() };
    if on("resources", "subscribe") {
        let mut asked: Vec<&str> = Vec::new();
        for uri in &f.resource_subscriptions {
            if asked.len() == MAX_STREAM_RESOURCES {
                break;
            }
            if !asked.contains(&uri.as_ref()) {
                asked.push(uri);
            }
        }
        for uri in asked {
            let _one = inner.listens.changing.lock().await;
            // Noted first: a legacy session's unsubscription meanwhile keeps the child's.
            stream.uris.locked().push(uri.to_owned());
            if held_elsewhere(inner, uri, key)
                || ask(&link.peer, "resources/subscribe", uri, inner.config.request_timeout).await
            {
                continue;
            }
            stream.uris.locked().retain(|u| u != uri);
        }
    }
    let honoured = serde_json::json!({
        "_meta": { SUBSCRIPTION_ID_KEY: serde_json::from_str::<Value>(&stream.id).unwrap_or_default() },
        "notifications": honoured(&stream),
    })
    .to_string();
    cx.peer()
        .notify("notifications/subscriptions/acknowledged", Some(RawJson::new(&honoured)))
        .await
        .map_err(|e| RpcError::internal(format!("the acknowledgement was not sent: {e}")))?;
    stream.ready.store(true, Ordering::Release);
    link.peer.closing().await;
    Err(RpcError::internal(
        "mcpwire bridge: the child server ended, and the stream's subscriptions with it: listen \
         again",
    ))
}

/// The filter a stream honours, as the acknowledgement says it.
fn honoured(s: &Stream) -> Value {
    let mut out = serde_json::Map::new();
    for (name, on) in [
        ("toolsListChanged", s.tools),
        ("promptsListChanged", s.prompts),
        ("resourcesListChanged", s.resources),
    ] {
        if on {
            out.insert(name.into(), Value::Bool(true));
        }
    }
    let uris = s.uris.locked().clone();
    if !uris.is_empty() {
        out.insert("resourceSubscriptions".into(), uris.into());
    }
    Value::Object(out)
}

/// Whether a legacy session, or a stream other than `key`, holds the child's subscription to
/// `uri`.
fn held_elsewhere(inner: &Inner, uri: &str, key: u64) -> bool {
    inner.listens.watches(uri, Some(key))
        || inner.sessions().iter().any(|c| c.session.locked().subscriptions.contains(uri))
}

/// `resources/subscribe` or `resources/unsubscribe` of `uri` on the child's session; whether
/// the child took it.
async fn ask(
    child: &PeerHandle,
    method: &str,
    uri: &str,
    timeout: Option<std::time::Duration>,
) -> bool {
    let params = serde_json::json!({ "uri": uri }).to_string();
    let options = RequestOptions::new().timeout(timeout);
    match child.request_with(method, Some(RawJson::new(&params)), options).await {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(%uri, error = %e, "mcpwire bridge: the child refused {method}");
            false
        }
    }
}

/// A stream's place in [`Listens`]: when it ends, however it ends (the client closed it, the
/// child ended), it is taken out and the child's subscriptions it alone held are undone.
struct Registered {
    inner: Arc<Inner>,
    key: u64,
    child: PeerHandle,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let Some(stream) = self.inner.listens.streams.locked().remove(&self.key) else { return };
        let uris = std::mem::take(&mut *stream.uris.locked());
        if uris.is_empty() || self.child.is_closed() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let (inner, child, key) = (self.inner.clone(), self.child.clone(), self.key);
        rt.spawn(async move {
            let timeout = inner.config.request_timeout;
            for uri in uris {
                let _one = inner.listens.changing.lock().await;
                if !held_elsewhere(&inner, &uri, key) {
                    ask(&child, "resources/unsubscribe", &uri, timeout).await;
                }
            }
        });
    }
}
