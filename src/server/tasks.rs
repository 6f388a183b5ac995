//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the server: the tasks it
//! holds ([`Store`]), bounded per client, in total, in how long a finished task is kept and in
//! the size of the result it keeps; and the three methods on them, `tasks/get`, `tasks/update`
//! and `tasks/cancel`. Running a tool's handler as a task is [`run`]'s.

use crate::sync::Locked;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::Notify;

use super::call::{Answer, Call};
use super::{Change, ConnectionHandler};
use crate::error::ErrorCode;
use crate::limits::{
    DEFAULT_MAX_TASK_RESULT_BYTES, DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_CLIENT,
    DEFAULT_TASK_POLL_INTERVAL, DEFAULT_TASK_RESULT_TTL,
};
use crate::mcp::meta::member;
use crate::mcp::types::{
    DetailedTask, InputRequest, Raw, TASKS_EXTENSION, Task, TaskIdParams, TaskStatus,
    UpdateTaskParams, iso8601,
};
use crate::mcp::{Era, types::Empty};
use crate::message::RawJson;
use crate::peer::{Incoming, Reply, RpcError};

pub(crate) mod run;

/// What the server keeps of tasks, as its builder set it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    pub(crate) per_client: usize,
    pub(crate) total: usize,
    pub(crate) result_ttl: Duration,
    pub(crate) result_bytes: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            per_client: DEFAULT_MAX_TASKS_PER_CLIENT,
            total: DEFAULT_MAX_TASKS,
            result_ttl: DEFAULT_TASK_RESULT_TTL,
            result_bytes: DEFAULT_MAX_TASK_RESULT_BYTES,
        }
    }
}

/// Whose a task is: only its owner sees it (to anyone else its id is unknown).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    /// Modern requests with no authenticated caller: they cannot be told apart.
    Anonymous,
    /// A legacy session (numbered as it first made a task).
    Session(u64),
    /// An authenticated caller: issuer, subject, client.
    Principal(Option<String>, Option<String>, Option<String>),
}

/// A task as held.
struct Entry {
    owner: Owner,
    created: u64,
    updated: u64,
    status: TaskStatus,
    /// `input_required`: what is still unanswered.
    pending: BTreeMap<String, InputRequest<'static>>,
    /// Answers given to this round's requests so far.
    answers: Vec<(String, Answer)>,
    /// The encoded result (`completed`) or error (`failed`).
    outcome: Option<Box<RawValue>>,
    /// Wakes the task's runner once every pending request is answered.
    wake: Arc<Notify>,
    /// Ends the task's handler (`tasks/cancel`).
    abort: Option<tokio::task::AbortHandle>,
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<Arc<str>, Entry>,
    /// Tasks held (and places reserved) per owner.
    per_owner: HashMap<Owner, usize>,
    /// Tasks held and places reserved, in all.
    held: usize,
    /// Finished tasks by when they are forgotten (in finishing order, so in expiry order).
    expiries: VecDeque<(Instant, Arc<str>)>,
}

/// The tasks a server holds.
pub(crate) struct Store {
    inner: Mutex<Inner>,
    pub(crate) bounds: Bounds,
}

/// A place reserved for a task before its handler starts; given back when dropped unused.
pub(crate) struct Place<'a> {
    store: &'a Store,
    owner: Option<Owner>,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        if let Some(owner) = self.owner.take() {
            self.store.lock().release(&owner);
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A task id: 128 random bits, hex (unguessable, so one client cannot reach another's task by
/// trying ids).
fn new_id() -> Arc<str> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random source is unavailable");
    let mut id = String::with_capacity(32);
    for b in bytes {
        id.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        id.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    id.into()
}

impl Inner {
    fn release(&mut self, owner: &Owner) {
        self.held = self.held.saturating_sub(1);
        if let Some(n) = self.per_owner.get_mut(owner) {
            *n -= 1;
            if *n == 0 {
                self.per_owner.remove(owner);
            }
        }
    }

    /// Forgets the finished tasks whose time is up.
    fn sweep(&mut self, now: Instant) {
        while let Some((at, _)) = self.expiries.front() {
            if *at > now {
                break;
            }
            let Some((_, id)) = self.expiries.pop_front() else { break };
            if let Some(entry) = self.tasks.remove(&id) {
                self.release(&entry.owner);
            }
        }
    }
}

impl Store {
    pub(crate) fn new(bounds: Bounds) -> Self {
        Self { inner: Mutex::new(Inner::default()), bounds }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while the lock was held left the map whole (no step leaves it half-made).
        self.inner.locked()
    }

    /// Reserves a place for one more task of `owner`.
    ///
    /// # Errors
    ///
    /// -32000 naming the bound, when `owner` holds as many tasks as one client may, or the
    /// server as many as it may in all.
    pub(crate) fn reserve(&self, owner: Owner) -> Result<Place<'_>, RpcError> {
        let mut inner = self.lock();
        inner.sweep(Instant::now());
        let mine = inner.per_owner.get(&owner).copied().unwrap_or(0);
        if mine >= self.bounds.per_client {
            return Err(RpcError::new(
                ErrorCode::SERVER_ERROR,
                format!(
                    "Too many tasks: at most {} per client are held (finished ones are kept {} ms)",
                    self.bounds.per_client,
                    self.ttl_ms()
                ),
            ));
        }
        if inner.held >= self.bounds.total {
            return Err(RpcError::new(
                ErrorCode::SERVER_ERROR,
                format!("Too many tasks: the server holds at most {}", self.bounds.total),
            ));
        }
        inner.held += 1;
        *inner.per_owner.entry(owner.clone()).or_insert(0) += 1;
        Ok(Place { store: self, owner: Some(owner) })
    }

    /// Makes the task of a reserved place, in `status`, and returns its id: from here on
    /// `tasks/get` finds it.
    pub(crate) fn create(
        &self,
        mut place: Place<'_>,
        status: TaskStatus,
        pending: BTreeMap<String, InputRequest<'static>>,
    ) -> (Arc<str>, Arc<Notify>) {
        let owner = place.owner.take().expect("a place is used once");
        let id = new_id();
        let wake = Arc::new(Notify::new());
        let now = now_ms();
        let entry = Entry {
            owner,
            created: now,
            updated: now,
            status,
            pending,
            answers: Vec::new(),
            outcome: None,
            wake: wake.clone(),
            abort: None,
        };
        self.lock().tasks.insert(id.clone(), entry);
        (id, wake)
    }

    /// Gives the task its handler's abort handle (unless it already ended).
    pub(crate) fn set_abort(&self, id: &str, abort: tokio::task::AbortHandle) {
        let mut inner = self.lock();
        match inner.tasks.get_mut(id) {
            Some(e) if !e.status.is_terminal() => e.abort = Some(abort),
            _ => abort.abort(),
        }
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.bounds.result_ttl.as_millis()).unwrap_or(u64::MAX).max(1)
    }

    /// The task as the wire shows it; `None` when it is unknown to `owner`.
    pub(crate) fn detailed(&self, id: &str, owner: &Owner) -> Option<String> {
        let mut inner = self.lock();
        inner.sweep(Instant::now());
        let e = inner.tasks.get(id).filter(|e| e.owner == *owner)?;
        let created = iso8601(e.created);
        let updated = iso8601(e.updated);
        let outcome = e.outcome.as_deref().map(Raw::borrowed);
        let detailed = DetailedTask {
            task: self.task(id, e, &created, &updated),
            input_requests: (e.status == TaskStatus::InputRequired)
                .then(|| e.pending.iter().map(|(k, v)| (k.as_str().into(), v.clone())).collect()),
            result: outcome.clone().filter(|_| e.status == TaskStatus::Completed),
            error: outcome.filter(|_| e.status == TaskStatus::Failed),
        };
        serde_json::to_string(&detailed).ok()
    }

    fn task<'a>(&self, id: &'a str, e: &Entry, created: &'a str, updated: &'a str) -> Task<'a> {
        Task {
            task_id: id.into(),
            status: e.status,
            status_message: None,
            created_at: created.into(),
            last_updated_at: updated.into(),
            ttl_ms: Some(self.ttl_ms()),
            poll_interval_ms: Some(
                u64::try_from(DEFAULT_TASK_POLL_INTERVAL.as_millis()).unwrap_or(500),
            ),
        }
    }

    /// The task as a `CreateTaskResult` shows it (no result, no error, no input requests).
    pub(crate) fn created(&self, id: &str) -> Option<String> {
        let inner = self.lock();
        let e = inner.tasks.get(id)?;
        let (created, updated) = (iso8601(e.created), iso8601(e.updated));
        serde_json::to_string(&self.task(id, e, &created, &updated)).ok()
    }

    /// Moves a task on: to `status`, with `outcome` when it ends. A task already ended
    /// (cancelled while its handler finished) stays as it is. Whether it changed.
    pub(crate) fn set(
        &self,
        id: &str,
        status: TaskStatus,
        pending: BTreeMap<String, InputRequest<'static>>,
        outcome: Option<Box<RawValue>>,
    ) -> bool {
        let mut inner = self.lock();
        let Some(e) = inner.tasks.get_mut(id) else { return false };
        if e.status.is_terminal() {
            return false;
        }
        e.status = status;
        e.pending = pending;
        e.answers.clear();
        e.outcome = outcome;
        e.updated = now_ms();
        if status.is_terminal() {
            e.abort = None;
            let at = Instant::now() + self.bounds.result_ttl;
            inner.expiries.push_back((at, id.into()));
        }
        true
    }

    /// Takes the answers of a round whose every request is answered (`None` until then, or
    /// when the task is gone).
    pub(crate) fn take_answers(&self, id: &str) -> Option<Vec<(String, Answer)>> {
        let mut inner = self.lock();
        let e = inner.tasks.get_mut(id)?;
        (e.pending.is_empty() && e.status == TaskStatus::Working)
            .then(|| std::mem::take(&mut e.answers))
    }

    /// Whether `owner` has task `id`.
    pub(crate) fn owns(&self, id: &str, owner: &Owner) -> bool {
        self.lock().tasks.get(id).is_some_and(|e| e.owner == *owner)
    }
}

/// `capabilities.extensions` of a server with these tools: the tasks extension when one of
/// them may run as a task.
pub(crate) fn declared(tools: &[super::ToolEntry]) -> Option<Raw<'static>> {
    use crate::mcp::types::TaskSupport;
    tools
        .iter()
        .any(|(t, _, _)| t.task_support_of() != TaskSupport::Forbidden)
        .then(|| Raw::owned(format!(r#"{{"{TASKS_EXTENSION}":{{}}}}"#)).expect("JSON"))
}

/// The JSON-RPC error of an unknown task id.
fn unknown(id: &str) -> RpcError {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Data<'a> {
        task_id: &'a str,
    }
    RpcError::new(ErrorCode::INVALID_PARAMS, format!("Unknown task: {id}"))
        .with_data(&Data { task_id: id })
}

/// Whether the client declared the extension (`capabilities.extensions[TASKS_EXTENSION]`).
pub(crate) fn negotiated(call: &Call) -> bool {
    let Some(caps) = call.client_capabilities() else { return false };
    let Ok(Some(ext)) = member(RawJson::new(caps), "extensions") else { return false };
    ext.get().starts_with('{')
        && matches!(member(ext, TASKS_EXTENSION), Ok(Some(v)) if v.get() != "null")
}

/// -32021: the client must declare the extension.
pub(crate) fn missing_extension() -> RpcError {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Data {
        required_capabilities: Required,
    }
    #[derive(Serialize)]
    struct Required {
        extensions: BTreeMap<&'static str, Empty>,
    }
    let data = Data {
        required_capabilities: Required { extensions: [(TASKS_EXTENSION, Empty {})].into() },
    };
    RpcError::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("Missing required client capability: extensions.{TASKS_EXTENSION}"),
    )
    .with_data(&data)
}

/// Numbers legacy sessions for [`Owner::Session`].
static SESSIONS: AtomicU64 = AtomicU64::new(1);

impl ConnectionHandler {
    /// Who a request's tasks belong to.
    pub(crate) fn owner(&self, call: &Call) -> Owner {
        self.owner_in(call.principal(), call.era)
    }

    /// Who the tasks of a request from `principal` in `era` belong to.
    pub(crate) fn owner_in(&self, principal: Option<&crate::peer::Principal>, era: Era) -> Owner {
        if let Some(p) = principal {
            return Owner::Principal(p.issuer.clone(), p.subject.clone(), p.client_id.clone());
        }
        match era {
            Era::Modern => Owner::Anonymous,
            Era::Legacy => Owner::Session(
                *self.session.task_owner.get_or_init(|| SESSIONS.fetch_add(1, Ordering::Relaxed)),
            ),
        }
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`, for a client that declared the extension
    /// (-32021 otherwise).
    pub(crate) fn tasks_method(&self, call: &Call, req: &Incoming) -> Result<Reply, RpcError> {
        if !negotiated(call) {
            return Err(missing_extension());
        }
        let store = &self.state().tasks;
        let owner = self.owner(call);
        let ack = || self.task_reply(call.era, "{}".to_owned(), "complete");
        match req.method() {
            "tasks/get" => {
                let p: TaskIdParams<'_> = req.params_as().map_err(RpcError::invalid_params)?;
                let json = store.detailed(&p.task_id, &owner).ok_or_else(|| unknown(&p.task_id))?;
                self.task_reply(call.era, json, "complete")
            }
            "tasks/cancel" => {
                let p: TaskIdParams<'_> = req.params_as().map_err(RpcError::invalid_params)?;
                self.cancel(&p.task_id, &owner)?;
                ack()
            }
            "tasks/update" => {
                let p: UpdateTaskParams<'_> = req.params_as().map_err(RpcError::invalid_params)?;
                self.update(&p, &owner)?;
                ack()
            }
            other => Err(RpcError::method_not_found(other)),
        }
    }

    /// Cancels a task that has not ended (one that has is left as it is: the same ack).
    fn cancel(&self, id: &str, owner: &Owner) -> Result<(), RpcError> {
        let store = &self.state().tasks;
        let abort = {
            let mut inner = store.lock();
            let e = inner.tasks.get_mut(id).filter(|e| e.owner == *owner);
            let e = e.ok_or_else(|| unknown(id))?;
            if e.status.is_terminal() {
                return Ok(());
            }
            e.abort.take()
        };
        if let Some(handle) = abort {
            handle.abort();
        }
        if store.set(id, TaskStatus::Cancelled, BTreeMap::new(), None) {
            self.server.task_changed(id);
        }
        Ok(())
    }

    /// Takes the answers to the task's pending requests (others are ignored); once none is
    /// pending, the task works again and its handler is called with them.
    fn update(&self, p: &UpdateTaskParams<'_>, owner: &Owner) -> Result<(), RpcError> {
        let store = &self.state().tasks;
        let id: &str = &p.task_id;
        let woke = {
            let mut inner = store.lock();
            let e = inner.tasks.get_mut(id).filter(|e| e.owner == *owner);
            let e = e.ok_or_else(|| unknown(id))?;
            if e.status != TaskStatus::InputRequired {
                return Ok(());
            }
            for (key, answer) in &p.input_responses {
                if e.pending.remove(key.as_ref()).is_some() {
                    e.answers.push((key.to_string(), Answer(answer.clone().into_owned())));
                }
            }
            if e.pending.is_empty() {
                e.status = TaskStatus::Working;
                e.updated = now_ms();
                e.wake.notify_one();
                true
            } else {
                false
            }
        };
        if woke {
            self.server.task_changed(id);
        }
        Ok(())
    }

    /// A result of the extension's: `json` with `resultType`, and in the modern era the
    /// server's identity.
    pub(crate) fn task_reply(
        &self,
        era: Era,
        json: String,
        result_type: &'static str,
    ) -> Result<Reply, RpcError> {
        let meta = (era == Era::Modern).then_some(&*self.state().meta);
        super::dispatch::encode::typed_reply(json, result_type, meta)
    }
}

impl super::Server {
    /// Announces a task's new status to the listen streams that follow it.
    pub(crate) fn task_changed(&self, id: &str) {
        let _ = self.0.changes.send(Change::Task(id.into()));
    }
}

/// The `notifications/tasks` params of task `id` as `owner` sees it, `meta` (JSON text) first;
/// `None` once the task is gone.
pub(crate) fn status_params(
    server: &super::Server,
    owner: &Owner,
    id: &str,
    meta: &str,
) -> Option<Box<RawValue>> {
    let detailed = server.0.tasks.detailed(id, owner)?;
    let mut text = String::with_capacity(detailed.len() + meta.len() + 10);
    text.push_str(r#"{"_meta":"#);
    text.push_str(meta);
    if detailed.len() > 2 {
        text.push(',');
    }
    text.push_str(&detailed[1..]);
    RawValue::from_string(text).ok()
}
