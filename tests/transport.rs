//! The same exchange over every transport: TCP, a Unix socket, a real child process, and the
//! in-process duplex.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::peer::{
    CloseReason, ConnectionTask, Context, Handler, Incoming, NO_PARAMS, NoHandler, PeerBuilder,
    PeerHandle, Reply, RequestError, RpcError,
};
use mcpwire::transport::{self, ChildStderr};
use mcpwire::{ErrorCode, Json};
use serde_json::{Value, json};

mod common;

use common::{pair, serve_tcp};

struct Echo;

impl Handler for Echo {
    async fn request(&self, req: &Incoming, _: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "echo" => Ok(Reply::raw(req.params().map_or("null", |p| p.get()))),
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

/// The exchange every transport must carry: 200 concurrent echoes of non-ASCII text with
/// characters that need escaping, an unknown method, and a request whose answer is large.
async fn exchange(client: &PeerHandle) {
    let calls = (0..200).map(|i| {
        let client = client.clone();
        async move {
            let params = json!({ "text": format!("héllo \"{i}\"\n\t✓ {}", "x".repeat(i * 7)) });
            let r = client.request("echo", Some(Json(&params))).await.unwrap();
            assert_eq!(r.result_as::<Value>().unwrap(), params);
        }
    });
    futures::future::join_all(calls).await;
    match client.request("nope", NO_PARAMS).await {
        Err(RequestError::Rpc(e)) => assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND),
        other => panic!("{other:?}"),
    }
    let big = json!({ "blob": "é".repeat(300_000) });
    let r = client.request("echo", Some(Json(&big))).await.unwrap();
    assert_eq!(r.result_as::<Value>().unwrap(), big);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_client_and_accept_loop() {
    let (addr, server) = serve_tcp(|| Echo).await;
    // Two clients at once, each its own connection.
    let b = PeerBuilder::new();
    let (c1, _k1) = transport::connect_tcp(&b, addr, NoHandler).await.unwrap();
    let (c2, _k2) = transport::connect_tcp(&b, addr, NoHandler).await.unwrap();
    tokio::join!(exchange(&c1), exchange(&c2));
    server.abort();
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_socket_client_and_accept_loop() {
    let dir = std::env::temp_dir().join(format!("mcpwire-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("peer.sock");
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let server = tokio::spawn(transport::serve_unix(listener, PeerBuilder::new(), || Echo));
    let (client, _conn) =
        transport::connect_unix(&PeerBuilder::new(), &path, NoHandler).await.unwrap();
    exchange(&client).await;
    server.abort();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_duplex() {
    let p = pair(&PeerBuilder::new(), NoHandler, Echo);
    exchange(&p.client).await;
}

/// The `stdio_echo` example, built on demand when the test runs alone, into the target folder
/// this test runs from (wherever `CARGO_TARGET_DIR` or `--target-dir` put it).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // <target>/<profile>/deps/<this test>
    let profile = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = profile.join("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        let mut cargo = std::process::Command::new(env!("CARGO"));
        cargo.args(["build", "--example", name]).arg("--target-dir").arg(profile.parent().unwrap());
        if !cfg!(debug_assertions) {
            cargo.arg("--release");
        }
        let status = cargo.status().expect("cargo runs");
        assert!(status.success(), "building example {name} failed");
    }
    assert!(path.exists(), "{} was not built", path.display());
    path
}

fn stdio_echo(stderr: ChildStderr) -> (PeerHandle, ConnectionTask) {
    let cmd = tokio::process::Command::new(example("stdio_echo"));
    transport::spawn_child(&PeerBuilder::new(), cmd, stderr, NoHandler).unwrap()
}

fn alive(pid: u32) -> bool {
    // `kill -0` checks for the process without signalling it; a reaped child is gone.
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process_over_stdio_with_its_stderr_forwarded() {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = {
        let lines = lines.clone();
        ChildStderr::Lines(Arc::new(move |l: &str| lines.lock().unwrap().push(l.to_owned())))
    };
    let (client, mut conn) = stdio_echo(sink);
    exchange(&client).await;
    let pid = conn.child_id().unwrap();
    let answered: u32 = client.request("pid", NO_PARAMS).await.unwrap().result_as().unwrap();
    assert_eq!(answered, pid);
    // A panicking handler in the child: -32603, and the child goes on.
    match client.request("panic", NO_PARAMS).await {
        Err(RequestError::Rpc(e)) => assert_eq!(e.code, ErrorCode::INTERNAL_ERROR),
        other => panic!("{other:?}"),
    }
    client.request("ping", NO_PARAMS).await.unwrap();
    // Closing ours closes its stdin: it exits by itself and is reaped.
    client.close();
    assert_eq!(conn.closed().await, CloseReason::Local);
    assert!(!alive(pid), "child {pid} still exists");
    let lines = lines.lock().unwrap();
    assert!(lines.iter().any(|l| l == "stdio_echo: ready"), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("asked to panic")), "{lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_ignores_eof_is_killed_and_reaped() {
    // `sleep` never reads its stdin, so closing it does not end it: the grace period runs out.
    let mut cmd = tokio::process::Command::new("sleep");
    cmd.arg("3600");
    let (client, mut conn) =
        transport::spawn_child(&PeerBuilder::new(), cmd, ChildStderr::Discard, NoHandler).unwrap();
    let pid = conn.child_id().unwrap();
    assert!(alive(pid));
    conn.close();
    assert!(client.is_closed());
    let started = std::time::Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(20), conn.closed()).await;
    assert!(closed.is_ok(), "the connection did not end");
    assert!(started.elapsed() >= mcpwire::limits::CHILD_EXIT_GRACE);
    assert!(!alive(pid), "child {pid} still exists");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_exits_fails_pending_requests_at_once() {
    let (client, mut conn) = stdio_echo(ChildStderr::Discard);
    let pid = conn.child_id().unwrap();
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.request("sleep", Some(Json(&json!({"ms": 60_000})))).await }
    });
    client.request("ping", NO_PARAMS).await.unwrap();
    std::process::Command::new("kill").arg(pid.to_string()).status().unwrap();
    let r = tokio::time::timeout(Duration::from_secs(10), pending).await.unwrap().unwrap();
    // The connection's end says how the child ended: killed by SIGTERM.
    let Err(RequestError::Closed(CloseReason::Exited(exit))) = &r else { panic!("{r:?}") };
    assert_eq!((exit.code, exit.signal), (None, Some(15)), "{exit:?}");
    conn.closed().await;
    assert!(!alive(pid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_accept_loop_closes_the_connections_it_accepted() {
    let (addr, server) = serve_tcp(|| Echo).await;
    let (client, _conn) =
        transport::connect_tcp(&PeerBuilder::new(), addr, NoHandler).await.unwrap();
    exchange(&client).await;
    server.abort();
    let closed = tokio::time::timeout(Duration::from_secs(10), client.closing()).await;
    assert!(closed.is_ok(), "the server side did not close the connection");
    assert!(matches!(client.request("echo", NO_PARAMS).await, Err(RequestError::Closed(_))));
}
