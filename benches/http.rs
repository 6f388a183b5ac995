//! Streamable HTTP, each side apart: what one `tools/call` of `echo` costs the client and the
//! server, over real loopback TCP (HTTP/1.1 keep-alive), 64 requests in flight, in one process
//! with two tokio runtimes of one worker each: the server's and the client's.
//!
//! Servers, each driven by the same floor client:
//! - `mcpwire modern`: `HttpServer` with `server::Server` (an `echo` tool), every request
//!   stateless (2026-07-28: the `_meta` envelope, the mirrored headers checked);
//! - `mcpwire legacy`: the same server, one session (2025-11-25);
//! - `rmcp`: rmcp's `StreamableHttpService`, default configuration (a session; every answer a
//!   `text/event-stream`), with the same echo as `benches/baselines/rmcp_http_echo.rs`;
//! - `hyper floor`: a bare hyper service that reads the body and answers a fixed result: what
//!   the HTTP library costs a server, with no MCP at all.
//!
//! Clients, against the mcpwire server:
//! - `floor`: one hyper HTTP/1.1 connection per request in flight, each request written from a
//!   prepared body (the id spliced in) and header map, its answer read whole and checked for
//!   the echoed text: what the HTTP library costs a client;
//! - `mcpwire`: `client::Client` over `http://` (its `HttpClient` transport), at each era.
//!
//! Printed beside criterion's time per request: allocations per request and CPU time per
//! request on each side. The CPU time is the sum of the side's threads' CPU clocks
//! (`pthread_getcpuclockid`, user and system), so it does not count time spent waiting for a
//! core, and it holds on a busy machine; system time includes the loopback's delivery.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use criterion::{Criterion, Throughput};
use http::{HeaderMap, HeaderValue, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use mcpwire::client::Client;
use mcpwire::mcp::negotiation::VersionChoice;
use mcpwire::peer::PeerBuilder;

#[path = "common/calls.rs"]
#[allow(dead_code)]
mod calls;
mod common;
#[path = "common/echo.rs"]
mod echo;
#[path = "common/rmcp_echo.rs"]
mod rmcp_echo;

use calls::{Call, drive};
use common::{COUNTING, SIDE_ALLOCATIONS, set_side};
use echo::{MESSAGE, Mcpwire};

/// Requests in flight.
const IN_FLIGHT: usize = 64;

/// Requests over which allocations and CPU time are counted (after as many to warm up).
const COUNTED: u64 = 20_000;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// One side of the process: its runtime's threads count their allocations under `index`, and
/// their CPU clocks are kept to be read.
struct Side {
    index: usize,
    clocks: Mutex<Vec<libc::clockid_t>>,
}

static CLIENT: Side = Side { index: 1, clocks: Mutex::new(Vec::new()) };
static SERVER: Side = Side { index: 2, clocks: Mutex::new(Vec::new()) };

impl Side {
    fn runtime(&'static self) -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(if self.index == 1 { "client" } else { "server" })
            .enable_all()
            .on_thread_start(move || {
                set_side(self.index);
                let mut clock: libc::clockid_t = 0;
                // SAFETY: `pthread_self` is this live thread; `pthread_getcpuclockid` writes one
                // `clockid_t` to the valid, writable `clock` and reads nothing else.
                let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
                if rc == 0 {
                    self.clocks.lock().unwrap().push(clock);
                }
            })
            .build()
            .unwrap()
    }

    /// The CPU time of the side's threads so far (those still running).
    fn cpu(&self) -> Duration {
        let clocks = self.clocks.lock().unwrap();
        clocks
            .iter()
            .filter_map(|&clock| {
                let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                // SAFETY: `clock_gettime` writes one `timespec` to the valid, writable `t`; a
                // clock of a thread that ended is refused (EINVAL), not undefined (were its id
                // reused by a new thread, the read would be that thread's time: a wrong number,
                // not a fault; the runtimes' workers live as long as the bench).
                let rc = unsafe { libc::clock_gettime(clock, &mut t) };
                (rc == 0).then(|| Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
            })
            .sum()
    }
}

/// Starts mcpwire's HTTP server on the current runtime; its URL.
async fn mcpwire_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = echo::server("bench-http");
    let http = mcpwire::http::HttpServer::new(PeerBuilder::new());
    tokio::spawn(async move {
        http.serve(listener, move || server.handler(), std::future::pending::<()>()).await
    });
    format!("http://{addr}/mcp")
}

/// Serves every connection of `listener` with `service` over HTTP/1.1, on the current runtime.
macro_rules! serve_with {
    ($listener:expr, $service:expr) => {{
        let (listener, service) = ($listener, $service);
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let _ = stream.set_nodelay(true);
                let service = service.clone();
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    }};
}

/// Starts rmcp's Streamable HTTP server (default configuration) on the current runtime.
async fn rmcp_server() -> String {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = Arc::new(StreamableHttpService::new(
        || Ok(rmcp_echo::RmcpEcho),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    ));
    let svc = hyper::service::service_fn(move |req| {
        let service = service.clone();
        async move { Ok::<_, std::convert::Infallible>(service.handle(req).await) }
    });
    serve_with!(listener, svc);
    format!("http://{addr}/mcp")
}

/// The fixed answer of the floor server.
const FLOOR_ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"The quick brown fox jumps over the lazy dog, then echoes it back."}],"isError":false}}"#;

/// Starts a bare hyper service that reads each body and answers [`FLOOR_ANSWER`].
async fn floor_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let svc = hyper::service::service_fn(|req: Request<hyper::body::Incoming>| async move {
        let body = req.into_body().collect().await?.to_bytes();
        assert!(!body.is_empty());
        let mut resp = hyper::Response::new(Full::new(Bytes::from_static(FLOOR_ANSWER.as_bytes())));
        resp.headers_mut()
            .insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok::<_, hyper::Error>(resp)
    });
    serve_with!(listener, svc);
    format!("http://{addr}/mcp")
}

/// The floor client: a connection per request in flight, requests from a prepared body.
#[derive(Clone)]
struct Floor {
    uri: http::Uri,
    headers: Arc<HeaderMap>,
    /// The body before and after the id.
    head: Bytes,
    tail: Bytes,
    ids: Arc<AtomicU64>,
    idle: Arc<Mutex<Vec<hyper::client::conn::http1::SendRequest<Full<Bytes>>>>>,
}

impl Floor {
    async fn connect(url: &str, version: &str) -> Self {
        let uri: http::Uri = url.parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert("mcp-protocol-version", HeaderValue::from_str(version).unwrap());
        let mut floor = Self {
            uri,
            headers: Arc::new(HeaderMap::new()),
            head: Bytes::new(),
            tail: Bytes::new(),
            ids: Arc::new(AtomicU64::new(1)),
            idle: Arc::new(Mutex::new(Vec::new())),
        };
        for _ in 0..IN_FLIGHT {
            let c = floor.open().await;
            floor.idle.lock().unwrap().push(c);
        }
        let args = format!(r#""name":"echo","arguments":{{"message":"{MESSAGE}"}}"#);
        let params = if version == MODERN {
            headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
            headers.insert("mcp-name", HeaderValue::from_static("echo"));
            format!(
                r#"{{{args},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"floor","version":"0"}}}}}}"#
            )
        } else {
            // A session: `initialize`, then `notifications/initialized`, on the session's id.
            let init = format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"floor","version":"0"}}}}}}"#
            );
            let mut h = headers.clone();
            h.remove("mcp-protocol-version");
            let resp = floor.post(&h, Bytes::from(init)).await;
            let session = resp.headers().get("mcp-session-id").expect("a session id").clone();
            let _ = resp.into_body().collect().await.unwrap();
            headers.insert("mcp-session-id", session);
            let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
            let resp = floor.post(&headers, Bytes::from_static(note.as_bytes())).await;
            assert_eq!(resp.status(), StatusCode::ACCEPTED);
            let _ = resp.into_body().collect().await.unwrap();
            format!("{{{args}}}")
        };
        floor.headers = Arc::new(headers);
        floor.head = Bytes::from_static(br#"{"jsonrpc":"2.0","id":"#);
        floor.tail = Bytes::from(format!(r#","method":"tools/call","params":{params}}}"#));
        floor
    }

    async fn open(&self) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
        let addr = format!("{}:{}", self.uri.host().unwrap(), self.uri.port_u16().unwrap());
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (send, conn) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(conn);
        send
    }

    async fn post(
        &self,
        headers: &HeaderMap,
        body: Bytes,
    ) -> hyper::Response<hyper::body::Incoming> {
        let mut send = self.idle.lock().unwrap().pop().expect("a connection per request in flight");
        send.ready().await.unwrap();
        let mut req = Request::post(self.uri.clone()).body(Full::new(body)).unwrap();
        *req.headers_mut() = headers.clone();
        let resp = send.send_request(req).await.unwrap();
        self.idle.lock().unwrap().push(send);
        resp
    }
}

impl Call for Floor {
    async fn call(&self) {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let mut body = BytesMut::with_capacity(self.head.len() + 20 + self.tail.len());
        body.put_slice(&self.head);
        body.put_slice(itoa::Buffer::new().format(id).as_bytes());
        body.put_slice(&self.tail);
        let resp = self.post(&self.headers, body.freeze()).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert!(memchr::memmem::find(&body, MESSAGE.as_bytes()).is_some(), "{body:?}");
    }
}

/// `client::Client` over its HTTP transport, pinned to `version`.
async fn mcpwire_client(url: &str, version: &str) -> Mcpwire {
    let c = Client::builder()
        .protocol_version(VersionChoice::Fixed(version.into()))
        .connect(url)
        .await
        .unwrap();
    let m = Mcpwire(c);
    m.call().await;
    m
}

/// Allocations and CPU time per request on each side, over [`COUNTED`] requests after as many
/// to warm up; printed.
fn per_side<C: Call>(name: &str, rt: &tokio::runtime::Runtime, client: &C) {
    rt.block_on(drive(client, IN_FLIGHT, COUNTED));
    for s in &SIDE_ALLOCATIONS {
        s.store(0, Ordering::Relaxed);
    }
    let (c0, s0) = (CLIENT.cpu(), SERVER.cpu());
    COUNTING.store(true, Ordering::Relaxed);
    rt.block_on(drive(client, IN_FLIGHT, COUNTED));
    COUNTING.store(false, Ordering::Relaxed);
    let (c1, s1) = (CLIENT.cpu(), SERVER.cpu());
    let per = |n: &AtomicU64| n.load(Ordering::Relaxed) as f64 / COUNTED as f64;
    let us = |d: Duration| d.as_secs_f64() * 1e6 / COUNTED as f64;
    println!(
        "{name}: per request, client {:.1} allocations {:.2} us CPU; server {:.1} allocations {:.2} us CPU",
        per(&SIDE_ALLOCATIONS[CLIENT.index]),
        us(c1 - c0),
        per(&SIDE_ALLOCATIONS[SERVER.index]),
        us(s1 - s0),
    );
}

static PAIRS: AtomicUsize = AtomicUsize::new(0);

fn bench_pair<C: Call>(c: &mut Criterion, rt: &tokio::runtime::Runtime, name: &str, client: C) {
    PAIRS.fetch_add(1, Ordering::Relaxed);
    // `MCPWIRE_HTTP=N` with a filter: only the pairs the filter names, N requests each, no
    // criterion (for a profiler).
    if let Ok(n) = std::env::var("MCPWIRE_HTTP") {
        let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
        if name.contains(&filter) {
            let n = n.parse().expect("MCPWIRE_HTTP=N");
            let took = rt.block_on(drive(&client, IN_FLIGHT, n));
            println!("{name}: {n} requests in {took:?}");
        }
        return;
    }
    per_side(name, rt, &client);
    let mut group = c.benchmark_group("http 64 in flight");
    group.throughput(Throughput::Elements(1));
    group.bench_function(name, |b| {
        b.iter_custom(|iters| rt.block_on(drive(&client, IN_FLIGHT, iters)));
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    let server_rt = SERVER.runtime();
    let client_rt = CLIENT.runtime();
    let mcpwire_url = server_rt.block_on(mcpwire_server());
    let rmcp_url = server_rt.block_on(rmcp_server());
    let floor_url = server_rt.block_on(floor_server());

    // The servers, each with the floor client.
    let floor = |url: &str, v: &str| client_rt.block_on(Floor::connect(url, v));
    bench_pair(c, &client_rt, "server mcpwire modern / client floor", floor(&mcpwire_url, MODERN));
    bench_pair(c, &client_rt, "server mcpwire legacy / client floor", floor(&mcpwire_url, LEGACY));
    bench_pair(c, &client_rt, "server rmcp / client floor", floor(&rmcp_url, LEGACY));
    bench_pair(c, &client_rt, "server hyper floor / client floor", floor(&floor_url, MODERN));
    // The clients, against mcpwire's server.
    let mcpwire = |v: &str| client_rt.block_on(mcpwire_client(&mcpwire_url, v));
    bench_pair(c, &client_rt, "server mcpwire modern / client mcpwire", mcpwire(MODERN));
    bench_pair(c, &client_rt, "server mcpwire legacy / client mcpwire", mcpwire(LEGACY));
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
    assert!(PAIRS.load(Ordering::Relaxed) > 0);
}
