//! Change notifications: `subscriptions/listen` streams (2026-07-28) and, for legacy sessions,
//! `resources/subscribe` plus a task forwarding list changes and resource updates.

use crate::limits::MAX_RESOURCE_SUBSCRIPTIONS;
use crate::sync::Locked;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;

use super::{Change, ConnectionHandler};
use crate::mcp::meta::{member, str_of};
use crate::mcp::types::ListenParams;
use crate::peer::{Context, Incoming, Reply, RpcError};
use crate::{error::ErrorCode, message::RawJson, message::encode::Json};

/// Gives a stream's place back when it ends, however it ends.
struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Honoured<'a> {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    tools_list_changed: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    prompts_list_changed: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    resources_list_changed: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    resource_subscriptions: Vec<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    task_ids: Vec<&'a str>,
}

/// The params of a notification on a listen stream.
#[derive(Serialize)]
struct Tagged<'a, T: Serialize> {
    #[serde(rename = "_meta")]
    meta: SubscriptionMeta<'a>,
    #[serde(flatten)]
    rest: T,
}

#[derive(Serialize)]
struct SubscriptionMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    id: &'a serde_json::value::RawValue,
}

#[derive(Serialize)]
struct Nothing {}

#[derive(Serialize)]
struct Uri<'a> {
    uri: &'a str,
}

impl ConnectionHandler {
    /// `subscriptions/listen`: acknowledged with the subset of the filter this server honours,
    /// then every matching change until the client cancels the request or the connection ends.
    pub(super) async fn listen(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        let listens = &self.session.listens;
        let _held = Held(listens);
        if listens.fetch_add(1, Ordering::AcqRel) >= crate::limits::MAX_LISTEN_STREAMS {
            return Err(RpcError::new(
                ErrorCode::SERVER_ERROR,
                format!(
                    "Too many subscriptions: at most {} per connection",
                    crate::limits::MAX_LISTEN_STREAMS
                ),
            ));
        }
        let p: ListenParams<'_> = req.params_as().map_err(RpcError::invalid_params)?;
        let f = p.notifications.unwrap_or_default();
        let owner = self.owner_in(cx.principal(), crate::mcp::Era::Modern);
        let caps = &self.server.0.capabilities;
        let resources = caps.resources.is_some();
        let honoured = Honoured {
            tools_list_changed: f.tools_list_changed && caps.tools.is_some(),
            prompts_list_changed: f.prompts_list_changed && caps.prompts.is_some(),
            resources_list_changed: f.resources_list_changed && resources,
            resource_subscriptions: if resources {
                f.resource_subscriptions
                    .iter()
                    .take(crate::limits::MAX_RESOURCE_SUBSCRIPTIONS)
                    .map(|u| u.as_ref())
                    .collect()
            } else {
                Vec::new()
            },
            // Only the caller's own tasks, as many as a list of subscriptions may hold.
            task_ids: f
                .task_ids
                .iter()
                .map(|t| t.as_ref())
                .filter(|t| self.server.0.tasks.owns(t, &owner))
                .take(crate::limits::MAX_RESOURCE_SUBSCRIPTIONS)
                .collect(),
        };
        let id_text = req.id().map_or_else(|| "null".to_owned(), |id| id.to_string());
        let id: &serde_json::value::RawValue =
            serde_json::from_str(&id_text).map_err(|e| RpcError::internal(e.to_string()))?;
        // Subscribed before the acknowledgement, so no change after it is missed.
        let mut changes = self.server.0.changes.subscribe();
        #[derive(Serialize)]
        struct Ack<'a> {
            notifications: &'a Honoured<'a>,
        }
        let ack = Tagged { meta: SubscriptionMeta { id }, rest: Ack { notifications: &honoured } };
        let peer = cx.peer();
        if let Err(e) =
            peer.notify("notifications/subscriptions/acknowledged", Some(Json(&ack))).await
        {
            return Err(RpcError::internal(format!("the acknowledgement was not sent: {e}")));
        }
        // Changes missed by a stream that fell behind: every list it listens to may have
        // changed, and every resource it watches, so each is announced once.
        let mut missed: Vec<Change> = Vec::new();
        loop {
            let change = if let Some(c) = missed.pop() {
                c
            } else {
                match changes.recv().await {
                    Ok(change) => change,
                    Err(RecvError::Lagged(_)) => {
                        missed.extend([Change::Tools, Change::Prompts, Change::Resources]);
                        missed.extend(
                            honoured
                                .resource_subscriptions
                                .iter()
                                .map(|u| Change::Updated((*u).into())),
                        );
                        missed.extend(honoured.task_ids.iter().map(|t| Change::Task((*t).into())));
                        continue;
                    }
                    Err(RecvError::Closed) => std::future::pending().await,
                }
            };
            let meta = SubscriptionMeta { id };
            let sent = match &change {
                Change::Tools if honoured.tools_list_changed => {
                    peer.notify(
                        "notifications/tools/list_changed",
                        Some(Json(&Tagged { meta, rest: Nothing {} })),
                    )
                    .await
                }
                Change::Prompts if honoured.prompts_list_changed => {
                    peer.notify(
                        "notifications/prompts/list_changed",
                        Some(Json(&Tagged { meta, rest: Nothing {} })),
                    )
                    .await
                }
                Change::Resources if honoured.resources_list_changed => {
                    peer.notify(
                        "notifications/resources/list_changed",
                        Some(Json(&Tagged { meta, rest: Nothing {} })),
                    )
                    .await
                }
                Change::Updated(uri)
                    if honoured.resource_subscriptions.iter().any(|u| *u == &**uri) =>
                {
                    peer.notify(
                        "notifications/resources/updated",
                        Some(Json(&Tagged { meta, rest: Uri { uri } })),
                    )
                    .await
                }
                Change::Task(task) if honoured.task_ids.iter().any(|t| *t == &**task) => {
                    let meta = serde_json::to_string(&meta).unwrap_or_else(|_| "{}".into());
                    match super::tasks::status_params(&self.server, &owner, task, &meta) {
                        Some(params) => {
                            peer.notify("notifications/tasks", Some(Json(&params))).await
                        }
                        None => Ok(()),
                    }
                }
                _ => Ok(()),
            };
            if let Err(e) = sent {
                tracing::debug!(error = %e, "listen stream ended");
                return Err(RpcError::internal("the stream could not be written"));
            }
        }
    }

    /// Legacy `resources/subscribe` (`on`) and `resources/unsubscribe`.
    pub(super) fn subscribe(
        &self,
        req: &Incoming,
        cx: &Context,
        on: bool,
    ) -> Result<Reply, RpcError> {
        let p = req.params().ok_or_else(|| RpcError::invalid_params("params.uri is required"))?;
        let Some(uri) = member(p, "uri")?.and_then(str_of) else {
            return Err(RpcError::invalid_params("params.uri must be a string"));
        };
        let mut subscribed = self.session.subscribed.locked();
        let known = subscribed.iter().position(|u| *u == uri);
        match (on, known) {
            (true, None) if subscribed.len() >= MAX_RESOURCE_SUBSCRIPTIONS => {
                return Err(RpcError::invalid_params(format_args!(
                    "at most {MAX_RESOURCE_SUBSCRIPTIONS} resource subscriptions per session"
                )));
            }
            (true, None) => subscribed.push(uri.into_owned()),
            (false, Some(i)) => {
                subscribed.swap_remove(i);
            }
            _ => {}
        }
        drop(subscribed);
        if on {
            self.forward_changes(cx);
        }
        Ok(Reply::empty())
    }

    /// Legacy sessions: starts (once) the task that sends list changes and the updates of
    /// subscribed resources to the client. It ends with the connection.
    pub(super) fn forward_changes(&self, cx: &Context) {
        if self.session.forwarding.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut changes = self.server.0.changes.subscribe();
        let session = self.session.clone();
        let caps = self.server.0.capabilities.clone();
        let server = self.server.clone();
        // Not tied to the request that started it: over HTTP these go to the GET stream.
        let peer = cx.peer().unrelated();
        tokio::spawn(async move {
            loop {
                let change = tokio::select! {
                    () = peer.closing() => return,
                    change = changes.recv() => change,
                };
                let change = match change {
                    Ok(c) => c,
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                };
                let sent = match &change {
                    Change::Tools if caps.tools.is_some() => {
                        peer.notify("notifications/tools/list_changed", None::<RawJson<'_>>).await
                    }
                    Change::Prompts if caps.prompts.is_some() => {
                        peer.notify("notifications/prompts/list_changed", None::<RawJson<'_>>).await
                    }
                    Change::Resources if caps.resources.is_some() => {
                        peer.notify("notifications/resources/list_changed", None::<RawJson<'_>>)
                            .await
                    }
                    Change::Task(task) => match session.task_owner.get() {
                        // A legacy session hears of its own tasks.
                        Some(n) => {
                            let owner = super::tasks::Owner::Session(*n);
                            match super::tasks::status_params(&server, &owner, task, "{}") {
                                Some(p) => peer.notify("notifications/tasks", Some(Json(&p))).await,
                                None => Ok(()),
                            }
                        }
                        None => Ok(()),
                    },
                    Change::Updated(uri) => {
                        let wanted = session.subscribed.locked().iter().any(|u| **u == **uri);
                        if wanted {
                            peer.notify("notifications/resources/updated", Some(Json(&Uri { uri })))
                                .await
                        } else {
                            Ok(())
                        }
                    }
                    _ => Ok(()),
                };
                if sent.is_err() {
                    return;
                }
            }
        });
    }
}
