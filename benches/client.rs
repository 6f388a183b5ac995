//! A host's client calling a tool in a loop: `mcpwire::mcp::Client::call_tool` against rmcp's
//! client (`Peer::call_tool`), both talking to the same server (`mcpwire::mcp::server::Server`
//! with an `echo` tool) over the same kind of in-memory pipe (a `tokio::io::duplex` of 1 MiB
//! each way), with 1 and 64 calls in flight, measured in the same run.
//!
//! - `mcpwire legacy`: the Client pinned to 2025-11-25, the era rmcp's client speaks
//!   (`initialize`, a session).
//! - `mcpwire modern`: the Client at 2026-07-28 (every call carries the `_meta` envelope).
//! - `rmcp`: `().serve(duplex)` (rmcp's handshake), then `call_tool`.
//!
//! Every call is checked: the text of the result must equal the 64-byte message sent. One
//! criterion iteration is one call; a sample starts `N` tasks that each call in a loop until
//! the sample's calls are done. Printed besides: allocations per call, client and server
//! together (the server is the same for all three, so the differences are the clients'),
//! counted with a counting wrapper around the global allocator.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpwire::mcp::client::{Client, VersionChoice};
use mcpwire::mcp::server::Server;
use mcpwire::mcp::types::{CallToolResult, Tool};
use mcpwire::peer::{Connection, PeerBuilder};
use rmcp::model::{CallToolRequestParams, ContentBlock, JsonObject};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceExt};

#[path = "common/calls.rs"]
mod calls;
mod common;

use calls::{Call, allocations_per_call, drive};

/// The echoed message: 64 bytes.
const MESSAGE: &str = "The quick brown fox jumps over the lazy dog, then echoes it back.";

/// Bytes each way in the pipe, for both clients (what `Client` uses for a server in process).
const DUPLEX_BYTES: usize = 1 << 20;

/// Calls in flight.
const IN_FLIGHT: [usize; 2] = [1, 64];

fn server() -> Server {
    Server::builder("bench-server", "0")
        .tool(Tool::new("echo"), |call| async move {
            #[derive(serde::Deserialize)]
            struct Args<'a> {
                #[serde(borrow)]
                message: std::borrow::Cow<'a, str>,
            }
            let a: Args<'_> = call.arguments()?;
            Ok(CallToolResult::text(a.message.into_owned()))
        })
        .build()
}

#[derive(Clone)]
struct Mcpwire(Client);

#[derive(serde::Serialize)]
struct EchoArgs<'a> {
    message: &'a str,
}

impl Call for Mcpwire {
    async fn call(&self) {
        let r = self.0.call_tool("echo", EchoArgs { message: MESSAGE }).await.unwrap();
        let r = r.get();
        assert!(r.content.len() == 1 && r.content[0].as_text() == Some(MESSAGE));
    }
}

async fn mcpwire(server: &Server, version: &str) -> Mcpwire {
    let c = Client::builder()
        .protocol_version(VersionChoice::Fixed(version.into()))
        .connect(server.clone())
        .await
        .unwrap();
    let m = Mcpwire(c);
    m.call().await;
    m
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

async fn rmcp(server: &Server) -> (Rmcp, RunningService<RoleClient, ()>, Connection) {
    let (a, b) = tokio::io::duplex(DUPLEX_BYTES);
    let (_peer, conn) = PeerBuilder::new().connect(a, server.handler());
    let running = ().serve(b).await.unwrap();
    assert!(running.peer().peer_info().is_some(), "rmcp handshake");
    let r = Rmcp(running.peer().clone());
    r.call().await;
    (r, running, conn)
}

fn report_allocations<C: Call>(rt: &tokio::runtime::Runtime, name: &str, c: &C, n: usize) {
    let per = allocations_per_call(rt, c, n, 20_000);
    println!("client allocations per call (client and server), {n} in flight, {name}: {per:.1}");
}

fn client(c: &mut Criterion) {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let server = server();
    let legacy = rt.block_on(mcpwire(&server, "2025-11-25"));
    let modern = rt.block_on(mcpwire(&server, "2026-07-28"));
    let (rmcp, running, conn) = rt.block_on(rmcp(&server));
    for n in IN_FLIGHT {
        report_allocations(&rt, "mcpwire legacy", &legacy, n);
        report_allocations(&rt, "mcpwire modern", &modern, n);
        report_allocations(&rt, "rmcp", &rmcp, n);
    }
    let mut group = c.benchmark_group("client_call_tool");
    group.throughput(Throughput::Elements(1));
    for n in IN_FLIGHT {
        group.bench_with_input(BenchmarkId::new("mcpwire legacy", n), &n, |b, &n| {
            b.iter_custom(|iters| rt.block_on(drive(&legacy, n, iters)));
        });
        group.bench_with_input(BenchmarkId::new("mcpwire modern", n), &n, |b, &n| {
            b.iter_custom(|iters| rt.block_on(drive(&modern, n, iters)));
        });
        group.bench_with_input(BenchmarkId::new("rmcp", n), &n, |b, &n| {
            b.iter_custom(|iters| rt.block_on(drive(&rmcp, n, iters)));
        });
    }
    group.finish();
    rt.block_on(async move {
        drop((legacy, modern, rmcp));
        let _ = running.cancel().await;
        drop(conn);
    });
}

criterion_group!(benches, client);
criterion_main!(benches);
