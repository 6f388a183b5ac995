//! `mcpwire load`: drives concurrent MCP requests at a server and reports throughput, latency
//! percentiles, errors and bytes.
//!
//! Every target first gets the era decision of `--protocol-version` (`mcpwire::mcp::client`):
//! with `auto`, a `server/discover` probe, and the legacy handshake (`initialize`, then
//! `notifications/initialized`) when the server turns out to be legacy; with a fixed modern
//! version, no probe; with a fixed legacy version, the handshake at that version. In the modern
//! era every request carries `_meta` (and over HTTP the mirrored headers), and `tools/call` is
//! preceded by one `tools/list`, which teaches the HTTP transport the tools' `x-mcp-header`
//! annotations. The report names the era and version used.
//!
//! Every response is checked: it answers its own request (the multiplexer delivers a response
//! only to the request whose id it carries, and counts any other), it carries no error, and for
//! `echo` its text contains the message sent.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use hdrhistogram::Histogram;
use mcpwire::mcp::Era;
use mcpwire::mcp::client::{ClientOptions, Negotiated, VersionChoice, negotiate};
use mcpwire::peer::{Connection, NoHandler, PeerBuilder, PeerHandle, RequestError, RequestOptions};
use mcpwire::transport;
use mcpwire::{Json, Limits};
use serde::Deserialize;
use serde_json::json;

use crate::serve::{McpServer, PROTOCOL_VERSIONS};

// `auto` offers the embedded server the legacy versions it speaks, newest first.
const _: () = assert!(PROTOCOL_VERSIONS.len() == mcpwire::mcp::LEGACY_VERSIONS.len());

/// What `load` connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `serve`'s handler in this process, over a tokio duplex.
    Embedded,
    /// A command whose stdin/stdout carry the frames, run by `sh -c`.
    Stdio(String),
    /// A TCP address.
    Tcp(String),
    /// A Unix socket path.
    Unix(String),
    /// A Streamable HTTP endpoint, `http://HOST:PORT/PATH`.
    Http(String),
}

impl std::str::FromStr for Target {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "embedded" {
            return Ok(Self::Embedded);
        }
        if s.starts_with("http://") {
            return Ok(Self::Http(s.to_owned()));
        }
        let (kind, rest) = s.split_once(':').ok_or_else(|| bad_target(s))?;
        if rest.is_empty() {
            return Err(bad_target(s));
        }
        match kind {
            "stdio" => Ok(Self::Stdio(rest.to_owned())),
            "tcp" => Ok(Self::Tcp(rest.to_owned())),
            "unix" => Ok(Self::Unix(rest.to_owned())),
            _ => Err(bad_target(s)),
        }
    }
}

fn bad_target(s: &str) -> String {
    format!("`{s}`: expected embedded, stdio:CMD, tcp:ADDR, unix:PATH or http://HOST:PORT/PATH")
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Embedded => f.write_str("embedded"),
            Self::Stdio(c) => write!(f, "stdio:{c}"),
            Self::Tcp(a) => write!(f, "tcp:{a}"),
            Self::Unix(p) => write!(f, "unix:{p}"),
            Self::Http(u) => f.write_str(u),
        }
    }
}

/// Which request `load` sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    /// `tools/call` of `--tool`.
    #[value(name = "tools/call")]
    ToolsCall,
    /// `ping`.
    Ping,
}

/// A load run's settings.
#[derive(Debug, Clone)]
pub struct Plan {
    pub target: Target,
    pub concurrency: usize,
    /// Stop after this many measured requests…
    pub requests: Option<u64>,
    /// …or after this long.
    pub duration: Duration,
    pub warmup: Duration,
    pub method: Method,
    pub tool: String,
    /// The tool's arguments as given; `None` sends `{"message": …}` of `payload_bytes`.
    pub arguments: Option<serde_json::Value>,
    pub payload_bytes: usize,
    /// What echo messages are cut from (see [`filler`]).
    pub filler: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// `auto` or the one protocol version to speak.
    pub protocol_version: VersionChoice,
}

/// What a run measured.
#[derive(Debug)]
pub struct Report {
    pub target: String,
    /// `modern` or `legacy`.
    pub era: &'static str,
    /// The protocol version spoken at the end of the run.
    pub protocol_version: String,
    pub method: String,
    pub concurrency: usize,
    pub requests: u64,
    pub errors: BTreeMap<String, u64>,
    pub elapsed: Duration,
    pub latency_us: Histogram<u64>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub peak_in_flight: usize,
    pub interrupted: bool,
}

impl Report {
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    fn rate(&self, n: u64) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 { n as f64 / secs } else { 0.0 }
    }

    /// The one-object JSON form (`--json`).
    pub fn to_json(&self) -> serde_json::Value {
        let h = &self.latency_us;
        json!({
            "target": self.target,
            "era": self.era,
            "protocol_version": self.protocol_version,
            "method": self.method,
            "concurrency": self.concurrency,
            "requests": self.requests,
            "errors": self.error_count(),
            "errors_by_kind": self.errors,
            "elapsed_s": self.elapsed.as_secs_f64(),
            "throughput_rps": self.rate(self.requests),
            "latency_us": {
                "p50": h.value_at_quantile(0.50),
                "p90": h.value_at_quantile(0.90),
                "p99": h.value_at_quantile(0.99),
                "p999": h.value_at_quantile(0.999),
                "max": h.max(),
            },
            "bytes_sent": self.bytes_sent,
            "bytes_received": self.bytes_received,
            "peak_in_flight": self.peak_in_flight,
            "interrupted": self.interrupted,
        })
    }

    /// The human form.
    pub fn to_text(&self) -> String {
        let h = &self.latency_us;
        let mut out = String::new();
        let _ = writeln!(out, "target:        {}", self.target);
        let _ = writeln!(out, "protocol:      {} ({})", self.protocol_version, self.era);
        let _ = writeln!(out, "method:        {} (concurrency {})", self.method, self.concurrency);
        if self.interrupted {
            let _ = writeln!(out, "interrupted:   yes (partial report)");
        }
        let _ = writeln!(out, "requests:      {}", self.requests);
        let _ = writeln!(out, "errors:        {}", self.error_count());
        for (kind, n) in &self.errors {
            let _ = writeln!(out, "  {kind}: {n}");
        }
        let _ = writeln!(out, "elapsed:       {:.3} s", self.elapsed.as_secs_f64());
        let _ = writeln!(out, "throughput:    {:.0} requests/s", self.rate(self.requests));
        let _ = writeln!(
            out,
            "bytes:         {} sent ({:.1} MB/s), {} received ({:.1} MB/s)",
            self.bytes_sent,
            self.rate(self.bytes_sent) / 1e6,
            self.bytes_received,
            self.rate(self.bytes_received) / 1e6
        );
        let _ = writeln!(
            out,
            "latency (us):  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            h.value_at_quantile(0.50),
            h.value_at_quantile(0.90),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max()
        );
        let _ = writeln!(out, "peak in flight: {}", self.peak_in_flight);
        out
    }
}

/// A failure before any load could be sent.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot connect to {target}: {source}")]
    Connect { target: String, source: std::io::Error },
    #[error("the MCP handshake with {target} failed: {why}")]
    Handshake { target: String, why: String },
}

async fn connect(plan: &Plan) -> Result<(PeerHandle, Connection), std::io::Error> {
    let limits = Limits::default().max_in_flight(plan.concurrency.max(1));
    let builder = PeerBuilder::new().limits(limits).request_timeout(Some(plan.timeout));
    Ok(match &plan.target {
        Target::Embedded => {
            let server = PeerBuilder::new().limits(Limits::default().max_handlers(
                plan.concurrency.clamp(1, mcpwire::limits::DEFAULT_MAX_HANDLERS * 4),
            ));
            let (a, b) = tokio::io::duplex(1 << 20);
            server.connect(a, McpServer::new()).1.detach();
            builder.connect(b, NoHandler)
        }
        Target::Stdio(cmd) => {
            let mut command = tokio::process::Command::new("sh");
            command.arg("-c").arg(format!("exec {cmd}"));
            // Its own process group: a Ctrl-C at the terminal stops the run (and prints the
            // partial report), not the server under test in the middle of it.
            command.process_group(0);
            transport::spawn_child(&builder, command, transport::ChildStderr::Tracing, NoHandler)?
        }
        Target::Tcp(addr) => transport::connect_tcp(&builder, addr.as_str(), NoHandler).await?,
        Target::Unix(path) => transport::connect_unix(&builder, path, NoHandler).await?,
        Target::Http(url) => mcpwire::http::connect(&builder, url, NoHandler)?,
    })
}

/// The era decision (and the legacy handshake when it says legacy).
async fn handshake(peer: &PeerHandle, plan: &Plan, target: &str) -> Result<Negotiated, String> {
    // The modern era has no ping: under `auto`, `--method ping` speaks the newest legacy
    // version (through `initialize`), which a dual-era server serves too.
    let version = match (&plan.protocol_version, plan.method) {
        (VersionChoice::Auto, Method::Ping) => {
            VersionChoice::Fixed(VersionChoice::Auto.legacy()[0].to_owned())
        }
        (v, _) => v.clone(),
    };
    let options = ClientOptions::new("mcpwire-load", env!("CARGO_PKG_VERSION"))
        .version(version)
        .probe_timeout(PROBE_TIMEOUT);
    let agreed = negotiate(peer, &options, Some(target)).await.map_err(|e| e.to_string())?;
    if agreed.era() == Era::Modern {
        if plan.method == Method::Ping {
            return Err(format!(
                "{} (the modern era) has no ping; use --method tools/call, or a legacy version",
                agreed.version()
            ));
        }
        // Lists the tools once: over HTTP the transport learns their x-mcp-header annotations
        // from the answer, which every tools/call must then mirror.
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
            && plan.method == Method::ToolsCall
            && !l.tools.iter().any(|t| t.name.as_deref() == Some(plan.tool.as_str()))
        {
            tracing::warn!(tool = plan.tool, "the tool is not in the server's tools/list");
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
fn message(seq: u64, bytes: usize, filler: &str) -> String {
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

/// One worker's tallies.
struct Tally {
    latency_us: Histogram<u64>,
    errors: BTreeMap<String, u64>,
    ok: u64,
}

impl Tally {
    fn new() -> Self {
        Self {
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            errors: BTreeMap::new(),
            ok: 0,
        }
    }
}

/// Shared between the workers and the reporter.
struct Run {
    /// Requests claimed by workers; with `--requests`, no claim past the total.
    claimed: AtomicU64,
    done: AtomicU64,
    /// Requests sent and not yet answered, as the workers see them, and the most at once.
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    /// Cancels every worker's request in flight and ends the workers.
    stop: CancellationToken,
    /// Whether results count yet (false during warm-up).
    measuring: AtomicBool,
    /// Wakes the reporter when the last of `--requests` is done.
    finished: Notify,
}

async fn worker(
    peer: PeerHandle,
    agreed: Arc<Negotiated>,
    plan: Arc<Plan>,
    run: Arc<Run>,
    seed: u64,
) -> Tally {
    let mut tally = Tally::new();
    let mut seq = seed << 40;
    while !run.stop.is_cancelled() {
        let measuring = run.measuring.load(Ordering::Relaxed);
        if measuring
            && let Some(total) = plan.requests
            && run.claimed.fetch_add(1, Ordering::Relaxed) >= total
        {
            break;
        }
        seq += 1;
        let now = run.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        run.peak.fetch_max(now, Ordering::Relaxed);
        let started = Instant::now();
        // A stop drops the request in flight (which sends notifications/cancelled); it is
        // neither a success nor an error.
        let outcome = tokio::select! {
            biased;
            () = run.stop.cancelled() => None,
            outcome = one(&peer, &agreed, &plan, seq) => Some(outcome),
        };
        let took = started.elapsed();
        run.in_flight.fetch_sub(1, Ordering::Relaxed);
        let Some(outcome) = outcome else { break };
        if !measuring {
            continue;
        }
        match outcome {
            Ok(()) => {
                tally.ok += 1;
                let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1);
                let _ = tally.latency_us.record(us);
            }
            Err(kind) => *tally.errors.entry(kind).or_default() += 1,
        }
        let done = run.done.fetch_add(1, Ordering::Relaxed) + 1;
        if plan.requests == Some(done) {
            run.finished.notify_one();
        }
    }
    tally
}

/// Sends one request and checks its answer; `Err` names the kind of failure.
async fn one(peer: &PeerHandle, agreed: &Negotiated, plan: &Plan, seq: u64) -> Result<(), String> {
    let none = mcpwire::peer::NO_PARAMS;
    match plan.method {
        Method::Ping => {
            let r =
                agreed.request(peer, "ping", none, RequestOptions::new()).await.map_err(kind)?;
            match r.result_as::<serde_json::Value>() {
                Ok(v) if v.is_object() => Ok(()),
                _ => Err("bad_result".into()),
            }
        }
        Method::ToolsCall => {
            if let Some(args) = &plan.arguments {
                let params = json!({"name": plan.tool, "arguments": args});
                let r = agreed
                    .request(peer, "tools/call", Some(Json(&params)), RequestOptions::new())
                    .await
                    .map_err(kind)?;
                return check_tool_result(&r, None);
            }
            #[derive(serde::Serialize)]
            struct Args<'a> {
                message: &'a str,
            }
            #[derive(serde::Serialize)]
            struct Call<'a> {
                name: &'a str,
                arguments: Args<'a>,
            }
            let msg = message(seq, plan.payload_bytes, &plan.filler);
            let params = Call { name: &plan.tool, arguments: Args { message: &msg } };
            let r = agreed
                .request(peer, "tools/call", Some(Json(&params)), RequestOptions::new())
                .await
                .map_err(kind)?;
            check_tool_result(&r, (plan.tool == "echo").then_some(msg.as_str()))
        }
    }
}

/// A tool result must not be `isError`; with `echo`, one of its texts must contain the
/// message sent.
fn check_tool_result(r: &mcpwire::peer::Incoming, echo: Option<&str>) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(borrow, default)]
        text: Option<std::borrow::Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct ToolResult<'a> {
        #[serde(borrow, default)]
        content: Vec<Block<'a>>,
        #[serde(rename = "isError", default)]
        is_error: bool,
    }
    // A modern server that needs the client's input first (a multi round-trip request) has
    // not answered the call; `load` gives none.
    if let Some(result) = r.result()
        && mcpwire::mcp::meta::result_type(result).ok().flatten().as_deref()
            == Some("input_required")
    {
        return Err("input_required".into());
    }
    let result: ToolResult<'_> = r.result_as().map_err(|_| "bad_result".to_owned())?;
    if result.is_error {
        return Err("tool_error".into());
    }
    // The reference server answers `Echo: <message>`, ours the message itself.
    if let Some(sent) = echo
        && !result.content.iter().any(|b| b.text.as_deref().is_some_and(|t| t.contains(sent)))
    {
        return Err("echo_mismatch".into());
    }
    Ok(())
}

fn kind(e: RequestError) -> String {
    match e {
        RequestError::Rpc(e) => format!("rpc_error_{}", e.code.get()),
        RequestError::Timeout => "timeout".into(),
        RequestError::Closed(_) => "connection_closed".into(),
        RequestError::Encode(_) => "encode".into(),
        _ => "other".into(),
    }
}

/// Runs the plan; `interrupt` completing (Ctrl-C) stops it early with a partial report.
pub async fn run(
    plan: Plan,
    interrupt: impl std::future::Future<Output = ()>,
) -> Result<Report, SetupError> {
    let target = plan.target.to_string();
    let (peer, mut conn) = connect(&plan)
        .await
        .map_err(|source| SetupError::Connect { target: target.clone(), source })?;
    let agreed = handshake(&peer, &plan, &target)
        .await
        .map_err(|why| SetupError::Handshake { target: target.clone(), why })?;
    tracing::info!(%target, version = agreed.version(), era = ?agreed.era(), "agreed");
    let agreed = Arc::new(agreed);

    let plan = Arc::new(plan);
    let run = Arc::new(Run {
        claimed: AtomicU64::new(0),
        done: AtomicU64::new(0),
        in_flight: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
        stop: CancellationToken::new(),
        measuring: AtomicBool::new(plan.warmup.is_zero()),
        finished: Notify::new(),
    });
    // Without a warm-up the window opens before the first request is sent (the workers run on
    // other threads at once, and could otherwise send before the first reading of the counters).
    let opened = plan.warmup.is_zero().then(|| (peer.stats(), Instant::now()));
    let workers: Vec<_> = (0..plan.concurrency.max(1))
        .map(|i| {
            let agreed = agreed.clone();
            tokio::spawn(worker(peer.clone(), agreed, plan.clone(), run.clone(), i as u64))
        })
        .collect();

    tokio::pin!(interrupt);
    let mut interrupted = false;
    if !plan.warmup.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(plan.warmup) => {}
            () = &mut interrupt => interrupted = true,
        }
        run.peak.store(run.in_flight.load(Ordering::Relaxed), Ordering::Relaxed);
        run.measuring.store(true, Ordering::Relaxed);
    }
    let (stats0, started) = opened.unwrap_or_else(|| (peer.stats(), Instant::now()));
    let deadline = tokio::time::Instant::now() + plan.duration;
    let bar = progress_bar(&plan);
    if !interrupted {
        loop {
            let tick = tokio::time::Instant::now() + Duration::from_millis(100);
            let wake = if plan.requests.is_some() { tick } else { tick.min(deadline) };
            tokio::select! {
                () = run.finished.notified() => break,
                () = &mut interrupt => {
                    interrupted = true;
                    break;
                }
                () = tokio::time::sleep_until(wake) => {}
            }
            let done = run.done.load(Ordering::Relaxed);
            if let Some(b) = &bar {
                b.set_position(progress(&plan, done, started));
            }
            let enough =
                plan.requests.map_or(tokio::time::Instant::now() >= deadline, |n| done >= n);
            if enough || peer.is_closed() {
                break;
            }
        }
    }
    // The window ends here: elapsed time and bytes are taken now, before the requests still in
    // flight are cancelled.
    let elapsed = started.elapsed();
    let stats1 = peer.stats();
    run.stop.cancel();
    let mut tally = Tally::new();
    for w in workers {
        if let Ok(t) = w.await {
            tally.ok += t.ok;
            let _ = tally.latency_us.add(&t.latency_us);
            for (k, n) in t.errors {
                *tally.errors.entry(k).or_default() += n;
            }
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    peer.close();
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
    Ok(Report {
        target,
        era: match agreed.era() {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        },
        protocol_version: agreed.version(),
        method: match plan.method {
            Method::Ping => "ping".into(),
            Method::ToolsCall => format!("tools/call {}", plan.tool),
        },
        concurrency: plan.concurrency,
        requests: tally.ok + tally.errors.values().sum::<u64>(),
        errors: tally.errors,
        elapsed,
        latency_us: tally.latency_us,
        bytes_sent: stats1.bytes_written - stats0.bytes_written,
        bytes_received: stats1.bytes_read - stats0.bytes_read,
        peak_in_flight: run.peak.load(Ordering::Relaxed),
        interrupted,
    })
}

fn progress(plan: &Plan, done: u64, started: Instant) -> u64 {
    match plan.requests {
        Some(_) => done,
        None => started.elapsed().as_millis().try_into().unwrap_or(u64::MAX),
    }
}

/// A progress bar on a terminal only.
fn progress_bar(plan: &Plan) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let (len, template) = match plan.requests {
        Some(n) => (n, "{bar:40} {pos}/{len} requests  {per_sec}  eta {eta}"),
        None => (
            plan.duration.as_millis().try_into().unwrap_or(u64::MAX),
            "{bar:40} {elapsed}/{duration}",
        ),
    };
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Some(bar)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print_back() {
        for s in [
            "embedded",
            "stdio:node server.js stdio",
            "tcp:127.0.0.1:7000",
            "unix:/tmp/s",
            "http://127.0.0.1:3001/mcp",
        ] {
            assert_eq!(s.parse::<Target>().unwrap().to_string(), s);
        }
        for bad in ["", "stdio:", "https://x", "tcp"] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
    }

    #[test]
    fn messages_have_the_asked_size_and_need_escaping() {
        for bytes in [10, 64, 1000] {
            let m = message(7, bytes, &filler(bytes));
            assert!(m.starts_with("#7 "));
            // Cut on a character boundary: short of the size by less than one character.
            assert!(m.len() <= bytes && m.len() + 4 > bytes, "{bytes}: {}", m.len());
        }
        // Never shorter than its unique prefix.
        assert_eq!(message(7, 0, &filler(0)), "#7 ");
        let m = message(1, 200, &filler(200));
        assert!(m.contains('"') && m.contains('\n') && m.contains('é') && m.contains('😀'));
    }
}
