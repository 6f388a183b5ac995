//! A host's client calling a tool in a loop: `mcpwire::client::Client::call_tool` against rmcp's
//! client (`Peer::call_tool`), both talking to the same server over the same kind of in-memory
//! pipe (a `tokio::io::duplex` of 1 MiB each way), with 1 and 64 calls in flight, measured in
//! the same run. Two servers, each shared by every client:
//!
//! - `typed server`: `mcpwire::server::Server` with an `echo` tool (a host's server);
//! - `raw server`: a bare `peer::Handler` answering `initialize` and `tools/call` of `echo`
//!   with a fixed-shape result: the least a server can cost, so what is left is the clients'.
//!
//! Besides the three clients below, `peer floor` is the raw layer under `Client`: a
//! `PeerHandle` that did the legacy handshake by hand, sending `tools/call` with typed params
//! and reading the result into a borrowed struct: what the transport costs, with no client API.
//!
//! - `mcpwire legacy`: the Client pinned to 2025-11-25, the era rmcp's client speaks
//!   (`initialize`, a session).
//! - `mcpwire modern`: the Client at 2026-07-28 (every call carries the `_meta` envelope).
//! - `rmcp`: `().serve(duplex)` (rmcp's handshake), then `call_tool`.
//!
//! Printed besides, for each: allocations per call and CPU time per call (the process's user and
//! system time over 50,000 calls, `getrusage`), client and server together: the CPU figure does
//! not count time spent waiting for a core, so it holds on a busy machine.
//!
//! Every call is checked: the text of the result must equal the 64-byte message sent. One
//! criterion iteration is one call; a sample starts `N` tasks that each call in a loop until
//! the sample's calls are done. Printed besides: allocations per call, client and server
//! together (the server is the same for all three, so the differences are the clients'),
//! counted with a counting wrapper around the global allocator.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use mcpwire::client::Client;
use mcpwire::mcp::negotiation::VersionChoice;
use mcpwire::peer::{
    ConnectionTask, Context, Handler, Incoming, NoHandler, PeerBuilder, PeerHandle, Reply, RpcError,
};
use mcpwire::server::Server;
use rmcp::model::{CallToolRequestParams, ContentBlock, JsonObject};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceExt};

#[path = "common/calls.rs"]
mod calls;
mod common;

#[path = "common/echo.rs"]
mod echo;

use calls::{Call, allocations_per_call, cpu_per_call, drive};
use echo::{EchoArgs, MESSAGE, Mcpwire};

/// Bytes each way in the pipe, for both clients (what `Client` uses for a server in process).
const DUPLEX_BYTES: usize = 1 << 20;

/// Calls in flight.
const IN_FLIGHT: [usize; 2] = [1, 64];

fn server() -> Server {
    echo::server("bench-server")
}

async fn mcpwire<H: Handler>(server: H, version: &str) -> (Mcpwire, ConnectionTask) {
    let (a, b) = tokio::io::duplex(DUPLEX_BYTES);
    let (_s, conn) = PeerBuilder::new().connect(a, server);
    let c = Client::builder()
        .protocol_version(VersionChoice::Fixed(version.into()))
        .connect_stream(b)
        .await
        .unwrap();
    let m = Mcpwire(c);
    m.call().await;
    (m, conn)
}

/// The least a server can do: `initialize`, and `tools/call` of `echo` answered with its
/// message in one text block.
struct RawEcho;

#[derive(serde::Deserialize)]
struct CallIn<'a> {
    #[serde(borrow)]
    arguments: EchoIn<'a>,
}

#[derive(serde::Deserialize, serde::Serialize)]
struct EchoIn<'a> {
    #[serde(borrow)]
    message: std::borrow::Cow<'a, str>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    text: std::borrow::Cow<'a, str>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Echoed<'a> {
    #[serde(borrow)]
    content: [Block<'a>; 1],
}

impl Handler for RawEcho {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "initialize" => Ok(Reply::raw(
                r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}"#,
            )),
            "tools/call" => {
                let p: CallIn<'_> = req.params_as().map_err(RpcError::invalid_params)?;
                let block = Block { kind: "text", text: p.arguments.message };
                Reply::json(&Echoed { content: [block] })
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

/// The raw layer under `Client`, with the handshake done by hand.
#[derive(Clone)]
struct Floor(PeerHandle);

#[derive(serde::Serialize)]
struct CallOut<'a> {
    name: &'a str,
    arguments: EchoArgs<'a>,
}

impl Call for Floor {
    async fn call(&self) {
        let params = CallOut { name: "echo", arguments: EchoArgs { message: MESSAGE } };
        let r = self.0.request("tools/call", Some(mcpwire::Json(&params))).await.unwrap();
        let r: Echoed<'_> = r.result_as().unwrap();
        assert!(r.content[0].text == MESSAGE);
    }
}

async fn floor<H: Handler>(server: H) -> (Floor, [ConnectionTask; 2]) {
    let (a, b) = tokio::io::duplex(DUPLEX_BYTES);
    let (_s, sc) = PeerBuilder::new().connect(a, server);
    let (peer, cc) = PeerBuilder::new().connect(b, NoHandler);
    let init = serde_json::json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "floor", "version": "0"},
    });
    peer.request("initialize", Some(mcpwire::Json(&init))).await.unwrap();
    peer.notify("notifications/initialized", mcpwire::peer::NO_PARAMS).await.unwrap();
    let f = Floor(peer);
    f.call().await;
    (f, [sc, cc])
}

#[derive(Clone)]
struct Rmcp(Peer<RoleClient>);

impl Call for Rmcp {
    async fn call(&self) {
        let mut arguments = JsonObject::new();
        arguments.insert("message".into(), MESSAGE.into());
        let params = CallToolRequestParams::new("echo").with_arguments(arguments);
        let result = self.0.call_tool(params).await.unwrap();
        let text = result.content.first().and_then(ContentBlock::as_text).unwrap();
        assert!(result.content.len() == 1 && text.text == MESSAGE);
    }
}

async fn rmcp<H: Handler>(server: H) -> (Rmcp, RunningService<RoleClient, ()>, ConnectionTask) {
    let (a, b) = tokio::io::duplex(DUPLEX_BYTES);
    let (_peer, conn) = PeerBuilder::new().connect(a, server);
    let running = ().serve(b).await.unwrap();
    assert!(running.peer().peer_info().is_some(), "rmcp handshake");
    let r = Rmcp(running.peer().clone());
    r.call().await;
    (r, running, conn)
}

fn report_allocations<C: Call>(rt: &tokio::runtime::Runtime, name: &str, c: &C, n: usize) {
    let per = allocations_per_call(rt, c, n, 20_000);
    let cpu = cpu_per_call(rt, c, n, 50_000);
    println!(
        "client per call (client and server), {n} in flight, {name}: {per:.1} allocations, \
         {:.2} µs CPU",
        cpu.as_secs_f64() * 1e6
    );
}

fn bench<C: Call>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    name: &str,
    c: &C,
) {
    for n in IN_FLIGHT {
        report_allocations(rt, name, c, n);
    }
    for n in IN_FLIGHT {
        group.bench_with_input(BenchmarkId::new(name, n), &n, |b, &n| {
            b.iter_custom(|iters| rt.block_on(drive(c, n, iters)));
        });
    }
}

fn client(c: &mut Criterion) {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let typed = server();
    let mut group = c.benchmark_group("client_call_tool");
    group.throughput(Throughput::Elements(1));
    let mut keep = Vec::new();
    {
        let (legacy, c1) = rt.block_on(mcpwire(typed.handler(), "2025-11-25"));
        let (modern, c2) = rt.block_on(mcpwire(typed.handler(), "2026-07-28"));
        let (floor, c3) = rt.block_on(floor(typed.handler()));
        let (rmcp, running, c4) = rt.block_on(rmcp(typed.handler()));
        bench(&mut group, &rt, "typed server: mcpwire legacy", &legacy);
        bench(&mut group, &rt, "typed server: mcpwire modern", &modern);
        bench(&mut group, &rt, "typed server: peer floor", &floor);
        bench(&mut group, &rt, "typed server: rmcp", &rmcp);
        keep.push((running, vec![c1, c2, c4], c3));
    }
    {
        let (legacy, c1) = rt.block_on(mcpwire(RawEcho, "2025-11-25"));
        let (floor, c3) = rt.block_on(floor(RawEcho));
        let (rmcp, running, c4) = rt.block_on(rmcp(RawEcho));
        bench(&mut group, &rt, "raw server: mcpwire legacy", &legacy);
        bench(&mut group, &rt, "raw server: peer floor", &floor);
        bench(&mut group, &rt, "raw server: rmcp", &rmcp);
        keep.push((running, vec![c1, c4], c3));
    }
    group.finish();
    rt.block_on(async move {
        for (running, _connections, _floor) in keep {
            let _ = running.cancel().await;
        }
    });
}

criterion_group!(benches, client);

/// With `MCPWIRE_CALLS=CLIENT:N` (CLIENT one of `legacy`, `modern`, `floor`, `rmcp`, against
/// the typed server; `raw-legacy`, `raw-floor`, `raw-rmcp` against the raw one), makes the
/// handshake and `N` calls one after another on a single-thread runtime, and exits: run under
/// `valgrind --tool=callgrind` at two values of `N`, the difference counts the instructions of
/// one call, client and server together, whatever else the machine is doing.
fn main() {
    let Ok(spec) = std::env::var("MCPWIRE_CALLS") else {
        benches();
        Criterion::default().configure_from_args().final_summary();
        return;
    };
    let (which, n) = spec.split_once(':').expect("MCPWIRE_CALLS=CLIENT:N");
    let n: u64 = n.parse().expect("a count");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let typed = server();
    rt.block_on(async {
        match which {
            "legacy" => drive(&mcpwire(typed.handler(), "2025-11-25").await.0, 1, n).await,
            "modern" => drive(&mcpwire(typed.handler(), "2026-07-28").await.0, 1, n).await,
            "floor" => drive(&floor(typed.handler()).await.0, 1, n).await,
            "rmcp" => drive(&rmcp(typed.handler()).await.0, 1, n).await,
            "raw-legacy" => drive(&mcpwire(RawEcho, "2025-11-25").await.0, 1, n).await,
            "raw-floor" => drive(&floor(RawEcho).await.0, 1, n).await,
            "raw-rmcp" => drive(&rmcp(RawEcho).await.0, 1, n).await,
            other => panic!("no client {other}"),
        }
    });
}
