//! The bridge's own `subscriptions/listen` stream to a modern-only child, for its legacy
//! sessions.
//!
//! A modern-only child has no session: it sends list changes and resource updates only on
//! listen streams. The bridge keeps one stream open to it for all legacy sessions, asking for
//! the list changes the child's capabilities declare `listChanged` for, and for the resources
//! the sessions subscribed to (their union; when the child declares `subscribe`). A session's
//! `resources/subscribe` or `resources/unsubscribe` that changes the union opens a new stream
//! with the new list; once the child acknowledged it, the old one is closed (its request
//! cancelled), so nothing is missed meanwhile (a change may come twice). What comes on the
//! stream goes to the sessions as a legacy child's session would have sent it (the
//! subscription id taken out of `_meta`): list changes to every session, a resource's update
//! to the sessions subscribed to it.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use serde_json::Value;
use tokio::sync::oneshot;

use super::handshake;
use super::state::{ChildLink, Inner, Open};
use crate::mcp::SUBSCRIPTION_ID_KEY;
use crate::peer::{RequestOptions, RpcError};
use crate::sync::Locked;
use crate::{error::ErrorCode, message::RawJson};

/// [`sync`] where nothing waits for its outcome (a session opened or ended): a failure is
/// logged.
pub(super) async fn sync_logged(inner: &Arc<Inner>, link: &ChildLink) {
    if let Err(e) = sync(inner, link).await {
        tracing::warn!(error = %e.message, "mcpwire bridge: no listen stream");
    }
}

/// The most resources the bridge's stream watches (as many as a session of
/// `mcpwire::server` takes); a subscription past it is refused.
pub(super) const MAX_UPSTREAM_RESOURCES: usize = 1_024;

/// Makes the bridge's stream to the child ask for what the legacy sessions need now; the
/// resources the child took.
///
/// # Errors
///
/// -32603 when the child refuses the stream or does not acknowledge it in time; -32000 past
/// [`MAX_UPSTREAM_RESOURCES`].
pub(super) async fn sync(inner: &Arc<Inner>, link: &ChildLink) -> Result<Vec<String>, RpcError> {
    let up = &inner.upstream;
    let _one = up.changing.lock().await;
    let caps: Value = serde_json::from_str(&link.handshake.result).unwrap_or_default();
    let caps = &caps["capabilities"];
    let on = |area: &str, what: &str| caps[area][what] == Value::Bool(true);
    let mut uris: Vec<String> = Vec::new();
    if on("resources", "subscribe") {
        for c in inner.sessions() {
            uris.extend(c.session.locked().subscriptions.iter().cloned());
        }
        uris.sort();
        uris.dedup();
    }
    if uris.len() > MAX_UPSTREAM_RESOURCES {
        return Err(RpcError::new(
            ErrorCode::SERVER_ERROR,
            format!(
                "mcpwire bridge: at most {MAX_UPSTREAM_RESOURCES} resources can be subscribed to \
                 through a 2026-07-28 child"
            ),
        ));
    }
    let mut wanted = serde_json::Map::new();
    for (key, area) in [
        ("toolsListChanged", "tools"),
        ("promptsListChanged", "prompts"),
        ("resourcesListChanged", "resources"),
    ] {
        if on(area, "listChanged") {
            wanted.insert(key.into(), Value::Bool(true));
        }
    }
    if !uris.is_empty() {
        wanted.insert("resourceSubscriptions".into(), uris.clone().into());
    }
    if wanted.is_empty() {
        *up.now.locked() = None;
        return Ok(uris);
    }
    let asked = Value::Object(wanted).to_string();
    let same = up.now.locked().as_ref().is_some_and(|o| o.asked == asked && !o.task.is_finished());
    if same {
        return Ok(uris);
    }
    let mut params = handshake::envelope_params();
    params.pop();
    params.push_str(",\"notifications\":");
    params.push_str(&asked);
    params.push('}');
    let id = Arc::new(AtomicU64::new(0));
    let (tx, ack) = oneshot::channel();
    *up.waiting.locked() = Some((id.clone(), tx));
    let mut options = RequestOptions::new().timeout(None);
    options.id_sink = Some(id.clone());
    let peer = link.peer.clone();
    let task = tokio::spawn(async move {
        let answer =
            peer.request_with("subscriptions/listen", Some(RawJson::new(&params)), options);
        if let Err(e) = answer.await {
            tracing::debug!(error = %e, "mcpwire bridge: the child's listen stream ended");
        }
    });
    let open = Open { id, task, asked };
    let timeout = inner.config.discover_timeout;
    let acked = match tokio::time::timeout(timeout, ack).await {
        Ok(Ok(params)) => params,
        _ => {
            up.waiting.locked().take();
            return Err(RpcError::internal(format!(
                "mcpwire bridge: the child server did not acknowledge the bridge's \
                 subscriptions/listen within {timeout:?}"
            )));
        }
    };
    // The new stream is acknowledged: the old one can go.
    *up.now.locked() = Some(open);
    let taken: Value = serde_json::from_str(&acked).unwrap_or_default();
    let taken = &taken["notifications"]["resourceSubscriptions"];
    Ok(uris
        .into_iter()
        .filter(|u| taken.as_array().is_some_and(|a| a.contains(&u.as_str().into())))
        .collect())
}

/// `params` with the subscription id taken out of `_meta` (and `_meta` with it when nothing
/// else is left): what a legacy session's notification carries.
pub(super) fn untagged(params: &str) -> Option<String> {
    let mut v: Value = serde_json::from_str(params).ok()?;
    let obj = v.as_object_mut()?;
    if let Some(Value::Object(meta)) = obj.get_mut("_meta") {
        meta.remove(SUBSCRIPTION_ID_KEY);
        if meta.is_empty() {
            obj.remove("_meta");
        }
    }
    Some(v.to_string())
}
