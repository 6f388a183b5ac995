//! The client's side of the connection: what the server asks of it (elicitation, sampling,
//! roots, as legacy requests or modern input requests) and what it tells it (progress, change
//! notifications, log messages), routed to what the host registered.

use crate::sync::{Locked, RwLocked};
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use tokio::sync::Notify;

use super::decoded::{Cart, Decoded};
use super::input::InputResolver;
use crate::mcp::SUBSCRIPTION_ID_KEY;
use crate::mcp::meta::{member, str_of};
use crate::mcp::types::{
    CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, ListRootsResult,
    LoggingMessageParams, ProgressParams, Root,
};
use crate::message::RawJson;
use crate::peer::{Context, Handler, Incoming, Reply, RpcError};

/// A future a callback returns.
pub type CallbackFuture<T> = Pin<Box<dyn Future<Output = Result<T, RpcError>> + Send>>;

pub(crate) type ElicitFn = Arc<
    dyn Fn(Decoded<ElicitParams<'static>>) -> CallbackFuture<ElicitResult<'static>> + Send + Sync,
>;
pub(crate) type SampleFn = Arc<
    dyn Fn(Decoded<CreateMessageParams<'static>>) -> CallbackFuture<CreateMessageResult<'static>>
        + Send
        + Sync,
>;
pub(crate) type ProgressFn = Arc<dyn Fn(&ProgressParams<'_>) + Send + Sync>;
pub(crate) type LogFn = Arc<dyn Fn(&LoggingMessageParams<'_>) + Send + Sync>;

/// What the host registered, and the routes of calls and streams in progress.
#[derive(Default)]
pub(crate) struct Callbacks {
    pub(crate) elicit: Option<ElicitFn>,
    pub(crate) sample: Option<SampleFn>,
    /// `Some` when the client offers roots.
    pub(crate) roots: Option<RwLock<Vec<Root<'static>>>>,
    pub(crate) log: Option<LogFn>,
    /// Whether the client declares the tasks extension.
    pub(crate) tasks: bool,
    /// Progress callbacks by token (the token's JSON text).
    progress: Mutex<HashMap<Box<str>, ProgressFn>>,
    next_token: AtomicU64,
    listeners: Mutex<Vec<Weak<Listener>>>,
}

impl Callbacks {
    /// The capabilities the client declares: one for each thing it can do.
    pub(crate) fn capabilities(&self) -> String {
        let mut caps = serde_json::Map::new();
        if self.elicit.is_some() {
            caps.insert("elicitation".into(), serde_json::json!({ "form": {}, "url": {} }));
        }
        if self.sample.is_some() {
            caps.insert("sampling".into(), serde_json::json!({}));
        }
        if self.roots.is_some() {
            caps.insert("roots".into(), serde_json::json!({ "listChanged": true }));
        }
        if self.tasks {
            let tasks = crate::mcp::types::TASKS_EXTENSION;
            caps.insert("extensions".into(), serde_json::json!({ tasks: {} }));
        }
        serde_json::Value::Object(caps).to_string()
    }

    /// The result (JSON text) of the server's request `method` whose params `params` holds.
    pub(crate) async fn fulfil(&self, method: &str, params: Cart) -> Result<String, RpcError> {
        let bad = |e: serde_json::Error| RpcError::invalid_params(format!("{method}: {e}"));
        let encode =
            |v: &dyn erased::Value| v.json().map_err(|e| RpcError::internal(e.to_string()));
        match method {
            crate::mcp::elicitation::ELICIT => {
                let Some(f) = &self.elicit else { return Err(RpcError::method_not_found(method)) };
                let asked = Decoded::decode(params).map_err(bad)?;
                encode(&f(asked).await?)
            }
            "sampling/createMessage" => {
                let Some(f) = &self.sample else { return Err(RpcError::method_not_found(method)) };
                let asked = Decoded::decode(params).map_err(bad)?;
                encode(&f(asked).await?)
            }
            "roots/list" => {
                let Some(roots) = &self.roots else {
                    return Err(RpcError::method_not_found(method));
                };
                let roots = roots.read_locked().clone();
                encode(&ListRootsResult { roots })
            }
            _ => Err(RpcError::method_not_found(method)),
        }
    }

    /// A fresh progress token routed to `f` until the guard is dropped.
    pub(crate) fn progress(self: &Arc<Self>, f: ProgressFn) -> ProgressRoute {
        let n = self.next_token.fetch_add(1, Ordering::Relaxed) + 1;
        let token: Box<str> = n.to_string().into();
        self.progress.locked().insert(token.clone(), f);
        ProgressRoute { callbacks: Arc::downgrade(self), token }
    }

    pub(crate) fn add_listener(&self, l: &Arc<Listener>) {
        let mut all = self.listeners.locked();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(l));
    }

    /// Whether a live legacy listener other than `me` watches `uri`.
    pub(crate) fn watched_elsewhere(&self, me: &Listener, uri: &str) -> bool {
        let mut found = false;
        self.each_listener(|l| {
            found |= !std::ptr::eq(l, me)
                && l.id.load(Ordering::Acquire) == LEGACY_LISTENER
                && l.filter.uris.iter().any(|u| u == uri);
        });
        found
    }

    fn each_listener(&self, mut f: impl FnMut(&Listener)) {
        let live: Vec<Arc<Listener>> = {
            let all = self.listeners.locked();
            all.iter().filter_map(Weak::upgrade).collect()
        };
        live.iter().for_each(|l| f(l));
    }

    fn on_progress(&self, n: &Incoming) {
        let Ok(p) = n.params_as::<ProgressParams<'_>>() else { return };
        let f = self.progress.locked().get(p.progress_token.get()).cloned();
        if let Some(f) = f {
            f(&p);
        }
    }

    fn on_change(&self, n: &Incoming) {
        let change = match n.method() {
            "notifications/tools/list_changed" => Change::Tools,
            "notifications/prompts/list_changed" => Change::Prompts,
            "notifications/resources/list_changed" => Change::Resources,
            "notifications/resources/updated" => {
                let uri = n.params().and_then(|p| member(p, "uri").ok().flatten()).and_then(str_of);
                let Some(uri) = uri else { return };
                Change::Updated(uri.into_owned())
            }
            _ => return,
        };
        let subscription = subscription_of(n);
        self.each_listener(|l| l.offer(subscription, &change));
    }

    fn on_ack(&self, n: &Incoming) {
        let Some(id) = subscription_of(n) else { return };
        self.each_listener(|l| {
            if l.id.load(Ordering::Acquire) == id {
                l.with(|s| s.acked = true);
            }
        });
    }
}

/// Serialising a result of any of the callback types.
mod erased {
    pub(super) trait Value {
        fn json(&self) -> Result<String, serde_json::Error>;
    }
    impl<T: serde::Serialize> Value for T {
        fn json(&self) -> Result<String, serde_json::Error> {
            serde_json::to_string(self)
        }
    }
}

/// The subscription a notification belongs to (`_meta.…/subscriptionId`, an integer id of
/// this client's), or `None` for a legacy session's notification.
fn subscription_of(n: &Incoming) -> Option<u64> {
    let meta = member(n.params()?, "_meta").ok().flatten()?;
    let id = member(meta, SUBSCRIPTION_ID_KEY).ok().flatten()?;
    id.get().parse().ok()
}

/// Removes a progress route when its call ends.
pub(crate) struct ProgressRoute {
    callbacks: Weak<Callbacks>,
    token: Box<str>,
}

impl ProgressRoute {
    /// The token, as JSON.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        if let Some(callbacks) = self.callbacks.upgrade() {
            callbacks.progress.locked().remove(&self.token);
        }
    }
}

/// The peer's handler on the client's side.
pub(crate) struct CallbackHandler(pub(crate) Arc<Callbacks>);

impl Handler for CallbackHandler {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "ping" => Ok(Reply::empty()),
            m => self.0.fulfil(m, Cart::Params(req.clone())).await.map(Reply::raw_string),
        }
    }

    async fn notification(&self, n: &Incoming, _cx: &Context) {
        match n.method() {
            "notifications/progress" => self.0.on_progress(n),
            "notifications/subscriptions/acknowledged" => self.0.on_ack(n),
            "notifications/message" => {
                if let (Some(f), Ok(p)) = (&self.0.log, n.params_as::<LoggingMessageParams<'_>>()) {
                    f(&p);
                }
            }
            _ => self.0.on_change(n),
        }
    }
}

/// The modern era's input requests, fulfilled by the same callbacks.
pub(crate) struct Resolver<'a>(pub(crate) &'a Callbacks);

impl InputResolver for Resolver<'_> {
    async fn resolve(&self, method: &str, params: Option<RawJson<'_>>) -> Result<String, String> {
        let text = params.map_or("{}", |p| p.get());
        self.0.fulfil(method, Cart::Text(text.into())).await.map_err(|e| e.message.into_owned())
    }
}

/// Which changes a [`Client::listen`](super::Client::listen) stream wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listen {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) uris: Vec<String>,
}

impl Listen {
    /// Nothing yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Changes of the tool list.
    #[must_use]
    pub fn tools(mut self) -> Self {
        self.tools = true;
        self
    }

    /// Changes of the prompt list.
    #[must_use]
    pub fn prompts(mut self) -> Self {
        self.prompts = true;
        self
    }

    /// Changes of the resource list.
    #[must_use]
    pub fn resources(mut self) -> Self {
        self.resources = true;
        self
    }

    /// Updates of the resource at `uri`.
    #[must_use]
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.uris.push(uri.into());
        self
    }

    /// The `subscriptions/listen` params.
    pub(crate) fn params(&self) -> String {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Filter<'a> {
            tools_list_changed: bool,
            prompts_list_changed: bool,
            resources_list_changed: bool,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            resource_subscriptions: &'a [String],
        }
        #[derive(serde::Serialize)]
        struct Params<'a> {
            notifications: Filter<'a>,
        }
        let f = Filter {
            tools_list_changed: self.tools,
            prompts_list_changed: self.prompts,
            resources_list_changed: self.resources,
            resource_subscriptions: &self.uris,
        };
        serde_json::to_string(&Params { notifications: f }).unwrap_or_default()
    }

    fn wants(&self, change: &Change) -> bool {
        match change {
            Change::Tools => self.tools,
            Change::Prompts => self.prompts,
            Change::Resources => self.resources,
            Change::Updated(uri) => self.uris.iter().any(|u| u == uri),
        }
    }
}

/// One change a server announced.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Change {
    /// The tool list changed: list it again.
    Tools,
    /// The prompt list changed.
    Prompts,
    /// The resource list changed.
    Resources,
    /// The resource at this URI changed: read it again.
    Updated(String),
}

/// The id of a listener that takes a legacy session's notifications (they carry no
/// subscription id).
pub(crate) const LEGACY_LISTENER: u64 = u64::MAX;
/// The id of a modern listener before its request has one.
pub(crate) const NO_ID_YET: u64 = u64::MAX - 1;

/// One listen stream's state. Changes not yet taken are kept as a set, so a consumer that
/// falls behind sees each pending change once, and the state never holds more than one entry
/// per list plus one per URI listened to.
pub(crate) struct Listener {
    pub(crate) filter: Listen,
    /// The subscription's id: the `subscriptions/listen` request's id, or
    /// [`LEGACY_LISTENER`].
    pub(crate) id: Arc<AtomicU64>,
    state: Mutex<Pending>,
    pub(crate) wake: Notify,
}

#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) changes: BTreeSet<Change>,
    pub(crate) acked: bool,
    /// Why the stream ended, once it has.
    pub(crate) ended: Option<String>,
}

impl Listener {
    pub(crate) fn new(filter: Listen, id: u64) -> Self {
        Self {
            filter,
            id: Arc::new(AtomicU64::new(id)),
            state: Mutex::default(),
            wake: Notify::new(),
        }
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Pending) -> R) -> R {
        let r = f(&mut self.state.locked());
        self.wake.notify_one();
        r
    }

    pub(crate) fn peek<R>(&self, f: impl FnOnce(&mut Pending) -> R) -> R {
        f(&mut self.state.locked())
    }

    fn offer(&self, subscription: Option<u64>, change: &Change) {
        let mine = match subscription {
            Some(id) => self.id.load(Ordering::Acquire) == id,
            None => self.id.load(Ordering::Acquire) == LEGACY_LISTENER,
        };
        if mine && self.filter.wants(change) {
            self.with(|s| s.changes.insert(change.clone()));
        }
    }
}
