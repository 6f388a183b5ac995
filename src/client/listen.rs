//! [`Client::listen`]: a stream of the changes a server announces, in either era.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::callbacks::{Change, LEGACY_LISTENER, Listen, Listener, NO_ID_YET};
use super::calls::Uri;
use super::client::Client;
use super::error::ClientError;
use crate::mcp::Era;
use crate::message::RawJson;
use crate::peer::RequestOptions;

impl Client {
    /// A stream of the changes `filter` names: a `subscriptions/listen` request held open
    /// (modern), or the legacy session's list-changed notifications plus `resources/subscribe`
    /// for each resource named. Returns once the server has acknowledged (modern) or
    /// subscribed (legacy), so no change after that is missed. Dropping the stream ends the
    /// subscription.
    ///
    /// # Errors
    ///
    /// As any call (the server refuses the subscription, the connection closes).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// use mcpwire::client::{Change, Listen};
    /// let mut changes = client.listen(Listen::new().tools().resource("mem://readme")).await?;
    /// server.tools_changed();
    /// assert_eq!(changes.next().await, Some(Change::Tools));
    /// server.resource_updated("mem://readme");
    /// assert_eq!(changes.next().await, Some(Change::Updated("mem://readme".into())));
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn listen(&self, filter: Listen) -> Result<Changes, ClientError> {
        if self.era() == Era::Legacy {
            let listener = Arc::new(Listener::new(filter, LEGACY_LISTENER));
            self.0.callbacks.add_listener(&listener);
            for uri in &listener.filter.uris {
                self.request_with("resources/subscribe", Uri { uri }).await?;
            }
            return Ok(Changes { listener, client: self.clone(), task: None });
        }
        let listener = Arc::new(Listener::new(filter, NO_ID_YET));
        self.0.callbacks.add_listener(&listener);
        let params = listener.filter.params();
        let inner = self.0.clone();
        let (l, sink) = (listener.clone(), listener.id.clone());
        let task = tokio::spawn(async move {
            let mut options = RequestOptions::new().timeout(None);
            options.id_sink = Some(sink);
            let r = inner
                .agreed
                .request(&inner.peer, "subscriptions/listen", Some(RawJson::new(&params)), options)
                .await;
            let why = match r {
                Ok(_) => "the server ended the subscription".to_owned(),
                Err(e) => ClientError::request("subscriptions/listen", e).to_string(),
            };
            l.with(|s| s.ended = Some(why));
        });
        let watched = listener.clone();
        let changes = Changes { listener, client: self.clone(), task: Some(task) };
        loop {
            let notified = watched.wake.notified();
            let (acked, ended) = watched.peek(|s| (s.acked, s.ended.clone()));
            if acked {
                return Ok(changes);
            }
            if let Some(why) = ended {
                return Err(ClientError::invalid("subscriptions/listen", why));
            }
            notified.await;
        }
    }
}

/// A stream of changes from [`Client::listen`].
pub struct Changes {
    listener: Arc<Listener>,
    client: Client,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes").field("filter", &self.listener.filter).finish_non_exhaustive()
    }
}

impl Changes {
    /// The next change. Changes that came while the host was busy are kept once each (two
    /// updates of one resource are one [`Change::Updated`]). `None` once the subscription
    /// ended (the server closed it, or the connection).
    pub async fn next(&mut self) -> Option<Change> {
        loop {
            let notified = self.listener.wake.notified();
            let (next, ended) = self.listener.peek(|s| (s.changes.pop_first(), s.ended.is_some()));
            if next.is_some() {
                return next;
            }
            if ended || self.client.0.peer.is_closed() {
                return None;
            }
            tokio::select! {
                () = notified => {}
                () = self.client.0.peer.closing() => {}
            }
        }
    }

    /// The subscription's id (the `subscriptions/listen` request's), modern era only.
    #[must_use]
    pub fn id(&self) -> Option<u64> {
        let id = self.listener.id.load(Ordering::Acquire);
        (id < NO_ID_YET).then_some(id)
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            // Dropping the request's future sends `notifications/cancelled`.
            task.abort();
        }
        if self.client.era() == Era::Legacy && !self.listener.filter.uris.is_empty() {
            let callbacks = &self.client.0.callbacks;
            let uris: Vec<String> = (self.listener.filter.uris.iter())
                .filter(|u| !callbacks.watched_elsewhere(&self.listener, u))
                .cloned()
                .collect();
            let client = self.client.clone();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    for uri in &uris {
                        let _ = client.request_with("resources/unsubscribe", Uri { uri }).await;
                    }
                });
            }
        }
    }
}

impl Change {
    /// Whether this is a list change (as opposed to one resource's update).
    #[must_use]
    pub fn is_list(&self) -> bool {
        !matches!(self, Self::Updated(_))
    }
}
