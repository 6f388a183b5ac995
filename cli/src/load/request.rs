//! What every driver of a window shares: the run's context ([`Ctx`]), the window's counters
//! ([`Window`]), and one request sent and its answer checked ([`one`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use mcpwire::Json;
use mcpwire::RawJson;
use mcpwire::client::{InputError, InputResolver, Negotiated, TaskPolling};
use mcpwire::mcp::input_rounds::{InputLimits, Outcome, created_task, outcome};
use mcpwire::mcp::types::{DetailedTask, TaskStatus};
use mcpwire::peer::{PeerHandle, RequestError, RequestOptions, TransportError};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::tally::Shards;
use super::{Plan, message};

/// A request sent more than this after its intended start is counted `late` (it waited for an
/// in-flight slot, or the generator fell behind); its latency runs from the intended start all
/// the same.
pub const LATE_AFTER: Duration = Duration::from_millis(10);

/// The parts of a run every driver shares.
pub(super) struct Ctx {
    pub(super) peer: PeerHandle,
    pub(super) agreed: Negotiated,
    pub(super) plan: Plan,
    /// Each operation's params, encoded once (`None` for the generated echo and no params).
    pub(super) params: Vec<Option<String>>,
    pub(super) shards: Shards,
    /// The open loop's lanes: one per runtime thread.
    pub(super) lanes: usize,
}

/// Counters of one window, shared by its drivers and the main task.
pub(super) struct Window {
    /// Requests claimed by closed-loop workers; with `--requests`, no claim past the total.
    pub(super) claimed: AtomicU64,
    /// Picks the operation of each request in turn.
    pub(super) seq: AtomicU64,
    pub(super) done: AtomicU64,
    pub(super) in_flight: AtomicUsize,
    pub(super) peak: AtomicUsize,
    pub(super) late: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) stop: CancellationToken,
    /// Whether results count yet (false during warm-up).
    pub(super) measuring: AtomicBool,
    /// When the window opened, in nanoseconds since `started` (`u64::MAX` until then): the
    /// open loop measures the requests *due* from then on, so a backlog from the warm-up sent
    /// after it does not count.
    pub(super) opened_at: AtomicU64,
    /// Open loop: measured requests sent, answered or not.
    pub(super) sent: AtomicU64,
    /// Wakes the main task when the last of `--requests` is done.
    pub(super) finished: Notify,
    pub(super) started: Instant,
    /// When the window closed, in nanoseconds since `started` (set before `stop`): requests
    /// due before it and never sent are `dropped`.
    pub(super) closed_at: AtomicU64,
}

impl Window {
    pub(super) fn new(measuring: bool) -> Self {
        Self {
            claimed: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            done: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            late: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            stop: CancellationToken::new(),
            measuring: AtomicBool::new(measuring),
            opened_at: AtomicU64::new(if measuring { 0 } else { u64::MAX }),
            sent: AtomicU64::new(0),
            finished: Notify::new(),
            started: Instant::now(),
            closed_at: AtomicU64::new(u64::MAX),
        }
    }

    pub(super) fn count_done(&self, requests: Option<u64>) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if requests == Some(done) {
            self.finished.notify_one();
        }
    }
}

/// One request's end: its outcome (`Err` names the kind of failure), the payload bytes each
/// way, and, when the server ran it as a task, when the first answer (the task's creation) came.
pub(super) struct Done {
    pub(super) outcome: Result<(), String>,
    pub(super) sent: usize,
    pub(super) got: usize,
    pub(super) first: Option<Instant>,
}

/// Sends one request of operation `op` and checks its answer; a task the server makes of it
/// (`--tasks`) is polled to its end, and its end is checked as the answer.
pub(super) async fn one(ctx: &Ctx, op: usize, seq: u64) -> Done {
    send(ctx, op, seq, &Custom::default()).await.0
}

/// What a session's step changes in its request: params and `expect_text` rendered from saved
/// values, and whether the result is kept (for `save`).
#[derive(Default)]
pub(super) struct Custom<'a> {
    pub(super) params: Option<&'a str>,
    pub(super) expect: Option<&'a str>,
    pub(super) keep: bool,
}

/// As [`one`], as `custom` says; with the result when it is kept and the request succeeded.
pub(super) async fn send(
    ctx: &Ctx,
    op: usize,
    seq: u64,
    custom: &Custom<'_>,
) -> (Done, Option<String>) {
    let operation = &ctx.plan.mix.ops[op];
    let expect = custom.expect.or(operation.expect_text.as_deref());
    let method = operation.method.name();
    let (reply, echo, sent) = if operation.generated_echo() {
        #[derive(serde::Serialize)]
        struct Args<'a> {
            message: &'a str,
        }
        #[derive(serde::Serialize)]
        struct Call<'a> {
            name: &'a str,
            arguments: Args<'a>,
        }
        let msg = message(seq, ctx.plan.payload_bytes, &ctx.plan.filler);
        let params = Call { name: "echo", arguments: Args { message: &msg } };
        let r =
            ctx.agreed.request(&ctx.peer, method, Some(Json(&params)), RequestOptions::new()).await;
        let sent = msg.len() + 36;
        (r, Some(msg), sent)
    } else {
        let params = custom.params.or(ctx.params[op].as_deref());
        let r = ctx
            .agreed
            .request(&ctx.peer, method, params.map(RawJson::new), RequestOptions::new())
            .await;
        (r, None, params.map_or(0, str::len))
    };
    let done = |outcome, got, first| Done { outcome, sent, got, first };
    let reply = match reply {
        Err(e) => return (done(Err(kind(&e)), 0, None), None),
        Ok(r) => r,
    };
    let Some(result) = reply.result() else {
        return (done(Err("bad_result".into()), 0, None), None);
    };
    if ctx.plan.tasks && matches!(outcome(result), Ok(Outcome::Task)) {
        let first = Instant::now();
        let (outcome, got, kept) =
            task(ctx, result, echo.as_deref(), op, expect, custom.keep).await;
        return (done(outcome, got, Some(first)), kept);
    }
    let got = result.get().len();
    let checked = operation.check(result.get(), echo.as_deref(), expect);
    let kept = (custom.keep && checked.is_ok()).then(|| result.get().to_owned());
    (done(checked, got, None), kept)
}

/// Refuses every input request: the generator has no user or model to ask.
struct NoInput;

impl InputResolver for NoInput {
    async fn resolve(&self, _method: &str, _params: Option<RawJson<'_>>) -> Result<String, String> {
        Err("the load generator answers no input requests".into())
    }
}

/// Polls the task `created` names to its end and checks how it ended: a completed task's
/// result as operation `op`'s answer, a failed or cancelled one as an error of its own kind.
async fn task(
    ctx: &Ctx,
    created: RawJson<'_>,
    echo: Option<&str>,
    op: usize,
    expect: Option<&str>,
    keep: bool,
) -> (Result<(), String>, usize, Option<String>) {
    let Ok((id, suggested)) = created_task(created) else {
        return (Err("bad_result".into()), 0, None);
    };
    let settled = ctx
        .agreed
        .settle_task(
            &ctx.peer,
            &id,
            suggested,
            RequestOptions::new(),
            &NoInput,
            TaskPolling::default(),
            InputLimits::default(),
        )
        .await;
    let failed = |kind: &str| (Err(kind.to_owned()), 0, None);
    let answer = match settled {
        Ok(a) => a,
        Err(InputError::Request(e)) => return failed(&kind(&e)),
        Err(InputError::Unfulfilled { .. }) => return failed("task_input_required"),
        Err(_) => return failed("bad_task"),
    };
    let Some(text) = answer.result() else { return failed("bad_task") };
    let Ok(task) = serde_json::from_str::<DetailedTask<'_>>(text.get()) else {
        return failed("bad_task");
    };
    let got = text.get().len();
    let mut kept = None;
    let outcome = match (task.task.status, &task.result, &task.error) {
        (TaskStatus::Completed, Some(result), _) => {
            let checked = ctx.plan.mix.ops[op].check(result.get(), echo, expect);
            kept = (keep && checked.is_ok()).then(|| result.get().to_owned());
            checked
        }
        (TaskStatus::Failed, _, Some(error)) => {
            let code = error.decode::<ErrorOnly>().map_or(0, |e| e.code);
            Err(format!("task_failed_{code}"))
        }
        (TaskStatus::Cancelled, _, _) => Err("task_cancelled".into()),
        _ => Err("bad_task".into()),
    };
    (outcome, got, kept)
}

/// The code of a JSON-RPC error object.
#[derive(serde::Deserialize)]
struct ErrorOnly {
    code: i64,
}

pub(super) fn kind(e: &RequestError) -> String {
    match e {
        RequestError::Rpc(e) => format!("rpc_error_{}", e.code.get()),
        RequestError::Timeout => "timeout".into(),
        RequestError::Closed(_) => "connection_closed".into(),
        RequestError::Encode(_) => "encode".into(),
        RequestError::Transport(t) => match t {
            TransportError::Status { status, .. } => format!("http_{status}"),
            TransportError::Connect(_) => "connect_failed".into(),
            TransportError::Tls(_) => "tls_failed".into(),
            TransportError::SessionLost(_) => "session_lost".into(),
            _ => "transport_failed".into(),
        },
        _ => "other".into(),
    }
}
