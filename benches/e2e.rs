//! End to end: MCP `tools/call` round trips between a client and an echo server joined by a
//! `tokio::io::duplex`, with 1, 64 and 1,024 requests in flight, against an equivalent rmcp
//! client/server pair over the same kind of duplex, all measured in the same run.
//!
//! - `mcpwire`: two mcpwire peers. The server answers like `mcpwire serve`: `initialize`, `ping`,
//!   `tools/list`, and `tools/call` of `echo`, whose result is one text block holding the message.
//!   The client sends `tools/call` with typed params and reads the result into a borrowed struct.
//! - `rmcp`: rmcp's client (`().serve(duplex)`, which does the MCP handshake) calling
//!   `Peer::call_tool`, and a `ServerHandler` whose `call_tool` answers
//!   `CallToolResult::success(vec![ContentBlock::text(message)])`, over rmcp's async-rw
//!   transport.
//!
//! Both pairs run on the same runtime and do the MCP handshake first; every response is checked
//! (the echoed text must equal the ~64-byte message sent). The whole measurement runs twice: on
//! a multi-thread tokio runtime with 2 workers (group `e2e/tools_call_echo`) and on one
//! current-thread runtime (`e2e/tools_call_echo_current_thread`), which shows what wake-ups
//! across threads cost each pair. `E2E_RUNTIMES=multi` (or `current`) runs one of them.
//!
//! One criterion iteration is one completed round trip: a sample of `K` iterations starts `N`
//! client tasks that each loop request → await response, taking work from a shared counter until
//! `K` round trips are done, and times the whole; throughput is round trips per second. Samples
//! are flat (every sample the same `K`, large enough that `N` stay in flight nearly throughout).
//!
//! Printed besides: latency percentiles at 1,024 in flight (a separate, untimed-by-criterion run
//! that times each request), and allocations per round trip (client and server together; also
//! for `ping` on the mcpwire pair, whose handler and caller allocate nothing, so its count is
//! the wire core's own) counted
//! with a counting wrapper around the global allocator.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use mcpwire::peer::{
    ConnectionTask, Context, Handler, Incoming, NoHandler, PeerBuilder, PeerHandle, Reply, RpcError,
};
use mcpwire::{ErrorCode, Json, Limits};
use rmcp::model::{CallToolRequestParams, ContentBlock, JsonObject};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

#[path = "common/calls.rs"]
mod calls;
mod common;
#[path = "common/rmcp_echo.rs"]
mod rmcp_echo;

use calls::{Call, allocations_per_call, cpu_per_call, drive};
use rmcp_echo::RmcpEcho;

/// The echoed message: 64 bytes.
const MESSAGE: &str = "The quick brown fox jumps over the lazy dog, then echoes it back.";

/// Bytes each way in the duplex, for both pairs: a Linux pipe's default capacity.
const DUPLEX_BYTES: usize = 64 * 1024;

/// Requests in flight.
const IN_FLIGHT: [usize; 3] = [1, 64, 1024];

/// Round trips each client task makes in the latency run at 1,024 in flight.
const LATENCY_ROUNDS_PER_TASK: usize = 200;

/// The protocol version the mcpwire client offers.
const PROTOCOL_VERSION: &str = "2025-06-18";

// ---- The mcpwire pair. ----

/// `tools/call` params as the client sends them.
#[derive(Serialize)]
struct CallParams<'a> {
    name: &'a str,
    arguments: EchoArgs<'a>,
}

#[derive(Serialize, Deserialize)]
struct EchoArgs<'a> {
    #[serde(borrow)]
    message: Cow<'a, str>,
}

/// `tools/call` params as the server reads them (as `mcpwire serve` does).
#[derive(Deserialize)]
struct CallParamsIn<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

#[derive(Serialize, Deserialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Serialize, Deserialize)]
struct ToolResult<'a> {
    #[serde(borrow)]
    content: Vec<Block<'a>>,
    #[serde(rename = "isError", default, skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
}

const TOOLS: &str = r#"{"tools":[{"name":"echo","description":"Returns its message exactly.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}"#;

/// The echo server, as `mcpwire serve` answers.
struct McpwireEcho;

impl Handler for McpwireEcho {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "initialize" => Ok(Reply::raw(
                r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"mcpwire-bench","version":"0"}}"#,
            )),
            "ping" => Ok(Reply::empty()),
            "tools/list" => Ok(Reply::raw(TOOLS)),
            "tools/call" => {
                let p: CallParamsIn<'_> = req.params_as().map_err(RpcError::invalid_params)?;
                if p.name != "echo" {
                    return Err(RpcError::new(
                        ErrorCode::INVALID_PARAMS,
                        format!("Unknown tool: {}", p.name),
                    ));
                }
                let args = p.arguments.map_or("{}", RawValue::get);
                let a: EchoArgs<'_> =
                    serde_json::from_str(args).map_err(RpcError::invalid_params)?;
                Reply::json(&ToolResult {
                    content: vec![Block { kind: "text".into(), text: a.message }],
                    is_error: false,
                })
            }
            other => Err(RpcError::method_not_found(other)),
        }
    }
}

#[derive(Clone)]
struct McpwireClient(PeerHandle);

impl Call for McpwireClient {
    async fn call(&self) {
        let params = CallParams { name: "echo", arguments: EchoArgs { message: MESSAGE.into() } };
        let response = self.0.request("tools/call", Some(Json(&params))).await.unwrap();
        let result: ToolResult<'_> = response.result_as().unwrap();
        assert!(result.content.len() == 1 && result.content[0].text == MESSAGE);
    }
}

/// `ping` on the same pair: no allocation in the handler (`Reply::empty`) or the caller, so
/// what it allocates per round trip is the wire core's own.
#[derive(Clone)]
struct McpwirePing(PeerHandle);

impl Call for McpwirePing {
    async fn call(&self) {
        let response = self.0.request("ping", mcpwire::peer::NO_PARAMS).await.unwrap();
        assert_eq!(response.result().map(|r| r.get()), Some("{}"));
    }
}

struct McpwirePair {
    client: McpwireClient,
    connections: [ConnectionTask; 2],
}

impl McpwirePair {
    async fn start() -> Self {
        // As `mcpwire load` sets up its embedded server: one handler per request in flight.
        let server = PeerBuilder::new().limits(Limits::default().max_handlers(1024));
        let (a, b) = tokio::io::duplex(DUPLEX_BYTES);
        let (_server, server_conn) = server.connect(a, McpwireEcho);
        let (client, client_conn) = PeerBuilder::new().connect(b, NoHandler);

        let init = serde_json::json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mcpwire-bench", "version": "0"},
        });
        let response = client.request("initialize", Some(Json(&init))).await.unwrap();
        let agreed: serde_json::Value = response.result_as().unwrap();
        assert_eq!(agreed["protocolVersion"], PROTOCOL_VERSION);
        client.notify("notifications/initialized", mcpwire::peer::NO_PARAMS).await.unwrap();

        let pair = Self { client: McpwireClient(client), connections: [server_conn, client_conn] };
        pair.client.call().await;
        pair
    }

    async fn stop(self) {
        self.client.0.close();
        for mut conn in self.connections {
            conn.closed().await;
        }
    }
}

// ---- The rmcp pair. ----

#[derive(Clone)]
struct RmcpClient(Peer<RoleClient>);

impl Call for RmcpClient {
    async fn call(&self) {
        let mut arguments = JsonObject::new();
        arguments.insert("message".into(), MESSAGE.into());
        let params = CallToolRequestParams::new("echo").with_arguments(arguments);
        let result = self.0.call_tool(params).await.unwrap();
        let text = result.content.first().and_then(ContentBlock::as_text).unwrap();
        assert!(result.content.len() == 1 && text.text == MESSAGE);
    }
}

struct RmcpPair {
    client: RmcpClient,
    running: RunningService<RoleClient, ()>,
    server: tokio::task::JoinHandle<()>,
}

impl RmcpPair {
    async fn start() -> Self {
        let (a, b) = tokio::io::duplex(DUPLEX_BYTES);
        let server = tokio::spawn(async move {
            let running = RmcpEcho.serve(a).await.unwrap();
            let _ = running.waiting().await;
        });
        // Sends `initialize`, awaits its result, then sends `notifications/initialized`.
        let running = ().serve(b).await.unwrap();
        assert!(running.peer().peer_info().is_some(), "rmcp handshake");
        let tools = running.peer().list_all_tools().await.unwrap();
        assert_eq!(tools.len(), 1);
        let pair = Self { client: RmcpClient(running.peer().clone()), running, server };
        pair.client.call().await;
        pair
    }

    async fn stop(self) {
        drop(self.client);
        let _ = self.running.cancel().await;
        let _ = self.server.await;
    }
}

// ---- Driving. ----

/// `in_flight` client tasks making `rounds` timed round trips each; returns every latency, in
/// nanoseconds, sorted, and the wall time.
async fn latencies<C: Call>(client: &C, in_flight: usize, rounds: usize) -> (Vec<u64>, Duration) {
    let start = Instant::now();
    let handles: Vec<_> = (0..in_flight)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                let mut times = Vec::with_capacity(rounds);
                for _ in 0..rounds {
                    let t = Instant::now();
                    client.call().await;
                    times.push(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX));
                }
                times
            })
        })
        .collect();
    let mut all = Vec::with_capacity(in_flight * rounds);
    for h in handles {
        all.extend(h.await.unwrap());
    }
    let wall = start.elapsed();
    all.sort_unstable();
    (all, wall)
}

fn percentile(sorted: &[u64], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    Duration::from_nanos(sorted[i])
}

fn report_latency<C: Call>(rt: &tokio::runtime::Runtime, name: &str, client: &C) {
    let n = IN_FLIGHT[IN_FLIGHT.len() - 1];
    // Warm up at full concurrency first.
    rt.block_on(drive(client, n, (n * 20) as u64));
    let (sorted, wall) = rt.block_on(latencies(client, n, LATENCY_ROUNDS_PER_TASK));
    println!(
        "e2e latency, {n} in flight, {name}: {} round trips in {wall:.2?} ({:.0}/s); \
         p50 {:.1?}, p90 {:.1?}, p99 {:.1?}, p99.9 {:.1?}, max {:.1?}",
        sorted.len(),
        sorted.len() as f64 / wall.as_secs_f64(),
        percentile(&sorted, 0.50),
        percentile(&sorted, 0.90),
        percentile(&sorted, 0.99),
        percentile(&sorted, 0.999),
        Duration::from_nanos(*sorted.last().unwrap()),
    );
}

/// Allocations per round trip, client and server together, at `in_flight`.
fn report_allocations<C: Call>(
    rt: &tokio::runtime::Runtime,
    name: &str,
    client: &C,
    in_flight: usize,
) {
    let per = allocations_per_call(rt, client, in_flight, 20_000);
    println!("e2e allocations per round trip, {in_flight} in flight, {name}: {per:.1}");
    let cpu = cpu_per_call(rt, client, in_flight, 50_000);
    println!(
        "e2e CPU per round trip (getrusage), {in_flight} in flight, {name}: {:.2} µs",
        cpu.as_secs_f64() * 1e6
    );
}

/// The runtimes both pairs are measured on, each a pass of its own: tokio's multi-thread
/// scheduler with 2 workers (a host's usual choice; wake-ups may cross threads), and one
/// current-thread runtime (every task of both peers on the thread that polls it: no
/// cross-thread wake-up at all). `E2E_RUNTIMES` picks (`multi`, `current`, or both, comma
/// separated; both by default).
const RUNTIMES: [&str; 2] = ["multi", "current"];

fn runtime(kind: &str) -> tokio::runtime::Runtime {
    match kind {
        "multi" => {
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()
        }
        _ => tokio::runtime::Builder::new_current_thread().enable_all().build(),
    }
    .unwrap()
}

fn e2e(c: &mut Criterion) {
    let chosen = std::env::var("E2E_RUNTIMES").unwrap_or_else(|_| RUNTIMES.join(","));
    for kind in RUNTIMES.into_iter().filter(|k| chosen.split(',').any(|c| c.trim() == *k)) {
        e2e_on(c, kind);
    }
}

/// The whole measurement on one runtime: allocations and CPU per round trip, criterion's
/// throughput at each concurrency, latency at 1,024 in flight.
fn e2e_on(c: &mut Criterion, kind: &str) {
    let rt = runtime(kind);
    let mcpwire = rt.block_on(McpwirePair::start());
    let rmcp = rt.block_on(RmcpPair::start());
    let tag = |name: &str| format!("{name} ({kind})");

    let ping = McpwirePing(mcpwire.client.0.clone());
    for n in IN_FLIGHT {
        report_allocations(&rt, &tag("mcpwire"), &mcpwire.client, n);
        report_allocations(&rt, &tag("mcpwire ping (the wire core alone)"), &ping, n);
        report_allocations(&rt, &tag("rmcp"), &rmcp.client, n);
    }

    // The multi-thread group keeps the name earlier runs were saved under.
    let group_name = match kind {
        "multi" => "e2e/tools_call_echo".to_owned(),
        _ => format!("e2e/tools_call_echo_{kind}_thread"),
    };
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    for n in IN_FLIGHT {
        group.bench_with_input(BenchmarkId::new("mcpwire", n), &n, |b, &n| {
            b.iter_custom(|iters| rt.block_on(drive(&mcpwire.client, n, iters)));
        });
        group.bench_with_input(BenchmarkId::new("rmcp", n), &n, |b, &n| {
            b.iter_custom(|iters| rt.block_on(drive(&rmcp.client, n, iters)));
        });
    }
    group.finish();

    report_latency(&rt, &tag("mcpwire"), &mcpwire.client);
    report_latency(&rt, &tag("rmcp"), &rmcp.client);
    let stats = mcpwire.client.0.stats();
    println!("e2e mcpwire client ({kind}): peak in flight {}", stats.peak_in_flight);

    rt.block_on(async {
        mcpwire.stop().await;
        rmcp.stop().await;
    });
}

criterion_group!(benches, e2e);
criterion_main!(benches);
