//! `mcpwire load`: drives MCP requests at a server under a load model and reports throughput,
//! latency percentiles, errors and bytes, per operation and in total.
//!
//! The jobs, one file each: `model` (closed and open loops, stages, the open loop's schedule),
//! `scenario` (what is sent and how each answer is checked; `load init`), `drive` (the loops
//! themselves, `--find-capacity`), `report` (tallies, the report, budgets), `hdr_log`
//! (`--hdr-log` and `report merge`), `live` (`--metrics`, `--otlp`) and `compare` (`load compare`, its test in `stats`).
//!
//! Every target first gets the era decision of `--protocol-version` (`mcpwire::mcp::client`):
//! with `auto`, a `server/discover` probe, and the legacy handshake (`initialize`, then
//! `notifications/initialized`) when the server turns out to be legacy; with a fixed modern
//! version, no probe; with a fixed legacy version, the handshake at that version. In the modern
//! era every request carries `_meta` (and over HTTP the mirrored headers), and a run with a
//! `tools/call` first sends one `tools/list`, which teaches the HTTP transport the tools'
//! `x-mcp-header` annotations. The report names the era and version used.
//!
//! Every response is checked: it answers its own request (the multiplexer delivers a response
//! only to the request whose id it carries, and counts any other), it carries no error, and it
//! passes its operation's check (`scenario::Operation::check`).

mod capacity;
mod closed;
pub mod command;
pub mod compare;
pub mod cpu;
mod drive;
pub mod hdr_log;
pub mod html;
mod init;
pub mod live;
pub mod model;
mod open;
pub mod replay;
pub mod report;
mod request;
pub mod scenario;
pub mod stats;
pub mod tally;
mod user;
mod window;

use std::path::PathBuf;
use std::time::Duration;

use mcpwire::Limits;
use mcpwire::client::{ClientOptions, Negotiated, negotiate};
use mcpwire::mcp::Era;
use mcpwire::mcp::negotiation::VersionChoice;
use mcpwire::peer::{ConnectionTask, NoHandler, PeerBuilder, PeerHandle, RequestOptions};
use mcpwire::transport::{self, ConnectOptions, Target};
use serde::Deserialize;

pub use drive::run;
pub use init::init;
pub use model::Shape;
pub use report::Report;
pub use scenario::{Method, Mix, Operation};

/// The server `load` drives when no target is named: `serve`'s server in this process, over an
/// in-memory pipe, shown as `embedded`.
#[must_use]
pub fn embedded() -> Target {
    // As many handlers as the generator can have requests in flight, up to a bound.
    let limits =
        Limits::default().max_handlers(mcpwire::limits::DEFAULT_MAX_HANDLERS * EMBEDDED_HANDLERS);
    let server = crate::serve::server();
    Target::in_process_handler("embedded", PeerBuilder::new().limits(limits), move || {
        server.handler()
    })
}

/// How many times the default number of handlers the embedded server runs at once.
const EMBEDDED_HANDLERS: usize = 4;

/// A target from its text: `embedded`, or what [`Target`]'s `FromStr` reads.
///
/// # Errors
///
/// When the text names no target.
pub fn parse_target(s: &str) -> Result<Target, String> {
    if s == "embedded" {
        return Ok(embedded());
    }
    s.parse::<Target>().map_err(|e| format!("{e}, or embedded"))
}

/// How the load is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// Workers with one request in flight each; the shape is their number.
    Closed(Shape),
    /// Requests at the instants of one schedule; the shape is the rate (requests/s), and at
    /// most `max_in_flight` are in flight (the rest wait, timed from their intended start).
    Open { rate: Shape, max_in_flight: usize },
}

impl Model {
    /// The most requests in flight at once.
    #[must_use]
    pub fn max_in_flight(&self) -> usize {
        match self {
            Self::Closed(c) => c.peak().round().max(1.0) as usize,
            Self::Open { max_in_flight, .. } => *max_in_flight,
        }
    }

    /// As the JSON report gives it.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Closed(c) => serde_json::json!({"kind": "closed", "concurrency": c.to_json()}),
            Self::Open { rate, max_in_flight } => serde_json::json!({
                "kind": "open", "rate": rate.to_json(), "max_in_flight": max_in_flight,
            }),
        }
    }
}

/// The open loop's default bound on requests in flight: generous, so it binds only when the
/// target has stalled, yet it caps the generator's memory (a request in flight holds its
/// future and its frame) when the target stops answering at a high rate.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 10_000;

/// `--find-capacity`: open-loop steps from `start` requests/s, each `factor` times the last,
/// until the p99 or the error rate passes its threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    pub start: f64,
    pub factor: f64,
    pub max_p99_ms: f64,
    pub max_error_rate: f64,
    pub max_steps: usize,
}

/// The most steps `--find-capacity` takes: at a factor of 1.5 from 100 requests/s, 40 steps
/// pass any rate a single generator can send, so a target that never breaks still ends.
pub const DEFAULT_MAX_CAPACITY_STEPS: usize = 40;

/// A load run's settings.
#[derive(Debug, Clone)]
pub struct Plan {
    pub target: Target,
    pub model: Model,
    /// Replaces the single window by rising open-loop steps.
    pub capacity: Option<Capacity>,
    /// Stop after this many measured requests…
    pub requests: Option<u64>,
    /// …or after this long.
    pub duration: Duration,
    pub warmup: Duration,
    /// What is sent.
    pub mix: Mix,
    /// The size of the generated echo message.
    pub payload_bytes: usize,
    /// What echo messages are cut from (see [`filler`]).
    pub filler: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// `auto` or the one protocol version to speak.
    pub protocol_version: VersionChoice,
    /// Where to write the HdrHistogram interval log.
    pub hdr_log: Option<PathBuf>,
    /// `--http2`: HTTP/2 only (prior knowledge to `http://`, ALPN `h2` to `https://`).
    pub http2: bool,
    /// The caller's headers and TLS settings (`--header`, `--cacert`, …).
    pub connect: ConnectOptions,
    /// `--tasks`: declare the tasks extension, so the server may run tool calls as tasks
    /// (each polled to its end: its latency is the time to completion, and the time to the
    /// first answer is reported beside it).
    pub tasks: bool,
    /// `--replay`: the capture's requests, sent by the open loop instead of the mix.
    pub replay: Option<std::sync::Arc<replay::Script>>,
    /// `--metrics`, `--otlp`: the run's live metrics.
    pub live: live::LiveArgs,
}

impl Plan {
    /// The report's `method`: the one operation, or the scenario's mix.
    #[must_use]
    pub fn method_label(&self) -> String {
        if self.mix.session.is_some() {
            let steps: Vec<&str> = self.mix.ops.iter().map(|o| o.name.as_str()).collect();
            return format!("session ({})", steps.join(" -> "));
        }
        match self.mix.ops.as_slice() {
            [one] => one.name.clone(),
            ops => format!(
                "scenario ({})",
                ops.iter()
                    .map(|o| format!("{} x{}", o.name, o.weight))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    fn all(&self, m: Method) -> bool {
        self.mix.ops.iter().all(|o| o.method == m)
    }

    fn any(&self, m: Method) -> bool {
        self.mix.ops.iter().any(|o| o.method == m)
    }
}

/// A failure before any load could be sent.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot connect to {target}: {source}")]
    Connect { target: String, source: std::io::Error },
    #[error("the MCP handshake with {target} failed: {why}")]
    Handshake { target: String, why: String },
    #[error("cannot write the HdrHistogram log: {0}")]
    Log(std::io::Error),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Metrics(String),
}

/// Room left for the envelope around an operation's params: `jsonrpc`, `id`, `method`, and in
/// the modern era the `_meta` triple (client info and capabilities), with a wide margin.
const ENVELOPE_BYTES: usize = 4096;

/// Refuses, before connecting, an operation whose request could not fit the frame limit (the
/// server would discard it unanswered and the request would wait out its timeout); for `echo`
/// the reply, as large again, has to fit the same limit on the way back.
fn check_sizes(plan: &Plan) -> Result<(), SetupError> {
    let limit = mcpwire::limits::DEFAULT_MAX_FRAME_BYTES;
    for op in &plan.mix.ops {
        let size = if op.generated_echo() {
            // The longest sequence number, escaped as JSON escapes it.
            let sample = message(u64::MAX, plan.payload_bytes, &plan.filler);
            serde_json::to_string(&sample).map_or(usize::MAX, |s| s.len())
        } else {
            op.params().map_or(0, |p| p.to_string().len())
        };
        if size.saturating_add(ENVELOPE_BYTES) > limit {
            return Err(SetupError::TooLarge(format!(
                "{}: its request would take about {} bytes with the envelope, past the \
                 {limit}-byte frame limit (JSON escapes make a message longer than its text)",
                op.name,
                size.saturating_add(ENVELOPE_BYTES)
            )));
        }
    }
    Ok(())
}

pub(crate) async fn connect(plan: &Plan) -> Result<(PeerHandle, ConnectionTask), std::io::Error> {
    let limits = Limits::default().max_in_flight(plan.model.max_in_flight().max(1));
    let builder = PeerBuilder::new().limits(limits).request_timeout(Some(plan.timeout));
    // A child runs in its own process group: a Ctrl-C at the terminal stops the run (and
    // prints the partial report), not the server under test in the middle of it.
    let options = plan
        .connect
        .clone()
        .stderr(transport::ChildStderr::Tracing)
        .own_process_group(true)
        .http2(plan.http2);
    plan.target.connect(&builder, NoHandler, &options).await
}

/// The era decision (and the legacy handshake when it says legacy).
pub(crate) async fn handshake(
    peer: &PeerHandle,
    plan: &Plan,
    target: &str,
) -> Result<Negotiated, String> {
    // The modern era has no ping: under `auto`, a run with a `ping` speaks the newest legacy
    // version (through `initialize`), which a dual-era server serves too.
    let version = match &plan.protocol_version {
        VersionChoice::Auto if plan.any(Method::Ping) => {
            VersionChoice::Fixed(VersionChoice::Auto.legacy()[0].to_owned())
        }
        v => v.clone(),
    };
    let mut options = ClientOptions::new("mcpwire-load", env!("CARGO_PKG_VERSION"))
        .version(version)
        .probe_timeout(PROBE_TIMEOUT);
    if plan.tasks {
        let tasks = mcpwire::mcp::types::TASKS_EXTENSION;
        options.capabilities = serde_json::json!({ "extensions": { tasks: {} } }).to_string();
    }
    let agreed = negotiate(peer, &options, Some(target)).await.map_err(|e| e.to_string())?;
    if agreed.era() == Era::Modern {
        if plan.any(Method::Ping) {
            return Err(format!(
                "{} (the modern era) has no ping; use another method, or a legacy version",
                agreed.version()
            ));
        }
        // Lists the tools once: over HTTP the transport learns their x-mcp-header annotations
        // from the answer, which every tools/call must then mirror.
        if plan.all(Method::Ping) {
            return Ok(agreed);
        }
        let init = RequestOptions::new().timeout(Some(Duration::from_secs(30)));
        let list = agreed
            .request(peer, "tools/list", mcpwire::peer::NO_PARAMS, init)
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        #[derive(Deserialize)]
        struct Listed<'a> {
            #[serde(borrow, default)]
            name: Option<std::borrow::Cow<'a, str>>,
        }
        #[derive(Deserialize)]
        struct List<'a> {
            #[serde(borrow, default)]
            tools: Vec<Listed<'a>>,
            #[serde(rename = "nextCursor", default)]
            next_cursor: Option<serde::de::IgnoredAny>,
        }
        // A tool left out (over HTTP: one whose x-mcp-header annotations are invalid) is
        // still called, and its errors counted; say why they will come.
        if let Ok(l) = list.result_as::<List<'_>>()
            && l.next_cursor.is_none()
        {
            for tool in plan.mix.ops.iter().filter_map(|o| o.tool.as_deref()) {
                if !l.tools.iter().any(|t| t.name.as_deref() == Some(tool)) {
                    tracing::warn!(tool, "the tool is not in the server's tools/list");
                }
            }
        }
    }
    Ok(agreed)
}

/// How long `auto` waits for the answer to its `server/discover` probe before it takes the
/// server for a legacy one that stays silent.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The text every echo message is cut from: non-ASCII text and characters JSON must escape.
const FILLER: &str = "héllo wörld ✓ \"quoted\" back\\slash\ttab\nnew line 日本語 😀 ";

/// A message of about `bytes` bytes (on a character boundary), unique by `seq`.
pub(crate) fn message(seq: u64, bytes: usize, filler: &str) -> String {
    use std::fmt::Write as _;
    let mut m = String::with_capacity(bytes.max(24));
    let _ = write!(m, "#{seq} ");
    let mut cut = bytes.saturating_sub(m.len()).min(filler.len());
    while !filler.is_char_boundary(cut) {
        cut -= 1;
    }
    m.push_str(&filler[..cut]);
    m
}

/// `FILLER` repeated to at least `bytes`.
pub fn filler(bytes: usize) -> String {
    FILLER.repeat(bytes / FILLER.len() + 1)
}

#[cfg(test)]
mod tests;
