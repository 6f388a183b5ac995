//! `mcpwire bridge --isolated`: a child of its own per legacy session, with real children
//! (`bridge/counter_child.py`, a counter per process): separate state, the pool's bound at and
//! one past it, an idle child ended (its process gone), a child's exit ending its session, and
//! modern requests refused.

#[path = "bridge/support.rs"]
mod support;

use std::time::{Duration, Instant};

use mcpwire::RawJson;
use mcpwire::peer::{ConnectionTask, NoHandler, PeerBuilder, PeerHandle, RequestError};
use serde_json::json;
use support::{Answers, Client, start};

fn counter_child() -> Vec<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bridge/counter_child.py");
    vec!["python3".into(), "-u".into(), script.into()]
}

fn isolated(flags: &[&str]) -> support::Bridge {
    let child = counter_child();
    let child: Vec<&str> = child.iter().map(String::as_str).collect();
    start(&[&["--isolated"], flags].concat(), &child)
}

/// A legacy client of the bridge, with no handler of its own.
struct Session {
    peer: PeerHandle,
    conn: ConnectionTask,
}

const INIT: &str =
    r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}"#;

impl Session {
    fn new(url: &str) -> Self {
        let (peer, conn) = mcpwire::http::connect(&PeerBuilder::new(), url, NoHandler).unwrap();
        Self { peer, conn }
    }

    /// `initialize` (and `notifications/initialized` once it succeeded).
    async fn initialize(&self) -> Result<(), RequestError> {
        self.peer.request("initialize", Some(RawJson::new(INIT))).await?;
        self.peer.notify("notifications/initialized", mcpwire::peer::NO_PARAMS).await.unwrap();
        Ok(())
    }

    async fn opened(url: &str) -> Self {
        let s = Self::new(url);
        s.initialize().await.unwrap();
        s
    }

    /// `tools/call` of `tool`: the result's text.
    async fn call(&self, tool: &str) -> Result<String, RequestError> {
        let p = json!({"name": tool, "arguments": {}}).to_string();
        let a = self.peer.request("tools/call", Some(RawJson::new(&p))).await?;
        let r: serde_json::Value = serde_json::from_str(a.result().unwrap().get()).unwrap();
        Ok(r["content"][0]["text"].as_str().unwrap().to_owned())
    }

    /// The counter's value and the child's process id.
    async fn count(&self) -> Result<(u64, u32), RequestError> {
        let t = self.call("count").await?;
        let w: Vec<&str> = t.split(' ').collect();
        Ok((w[1].parse().unwrap(), w[3].parse().unwrap()))
    }
}

/// Whether process `pid` is gone (or only a zombie waiting to be reaped).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn eventually(what: &str, secs: u64, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done().await {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Two sessions, two children: each counter counts its own session's calls; a modern request
/// is refused with -32000 saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_has_a_child_of_its_own() {
    let bridge = isolated(&[]);
    let (a, b) = (Session::opened(&bridge.url).await, Session::opened(&bridge.url).await);
    let mut pids = Vec::new();
    for n in 1..=3 {
        let (count, pid) = a.count().await.unwrap();
        assert_eq!(count, n);
        pids.push(pid);
    }
    let (count, pid_b) = b.count().await.unwrap();
    assert_eq!(count, 1, "b's child counted a's calls");
    assert!(pids.iter().all(|p| *p == pids[0]), "{pids:?}");
    assert_ne!(pids[0], pid_b);
    assert!(!gone(pids[0]) && !gone(pid_b));
    let modern = Client::new(&bridge.url, true, Answers::default()).await;
    let e = modern.call("count", json!({}), json!({})).await.unwrap_err();
    assert_eq!(e.code, mcpwire::ErrorCode::SERVER_ERROR, "{e:?}");
    assert!(e.message.contains("isolated mode"), "{e:?}");
}

/// `--max-children 2`: two sessions get children, the third's `initialize` is refused with
/// -32000 and `data.maxChildren`; once a session ends (DELETE), its place is free again and
/// its child gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_holds_max_children_and_refuses_one_more() {
    let bridge = isolated(&["--max-children", "2"]);
    let mut a = Session::opened(&bridge.url).await;
    let b = Session::opened(&bridge.url).await;
    let (_, pid_a) = a.count().await.unwrap();
    assert_eq!(b.count().await.unwrap().0, 1);
    let c = Session::new(&bridge.url);
    match c.initialize().await {
        Err(RequestError::Rpc(e)) => {
            assert_eq!(e.code, mcpwire::ErrorCode::SERVER_ERROR, "{e:?}");
            assert!(e.message.contains("all 2 children"), "{e:?}");
            let data = e.data().map(|d| d.get().to_owned()).unwrap_or_default();
            assert!(data.contains(r#""maxChildren":2"#), "{data}");
        }
        other => panic!("a third session past --max-children 2: {other:?}"),
    }
    a.peer.close();
    let _ = tokio::time::timeout(Duration::from_secs(5), a.conn.closed()).await;
    let d = Session::new(&bridge.url);
    eventually("a place freed by the ended session", 10, async || d.initialize().await.is_ok())
        .await;
    assert_eq!(d.count().await.unwrap().0, 1);
    eventually("the ended session's child exits", 10, async || gone(pid_a)).await;
}

/// `--idle-timeout 0.5`: a child with a request every 0.2 s lives on; one with no request for
/// half a second is ended (its process gone) and its session with it (404: the client initializes again, with a new child).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_child_is_ended_with_its_session() {
    let bridge = isolated(&["--idle-timeout", "0.5"]);
    let a = Session::opened(&bridge.url).await;
    // Under the bound: a request every 0.2 s for 1.6 s keeps the same child.
    let (_, pid) = a.count().await.unwrap();
    for n in 2..=9 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(a.count().await.unwrap(), (n, pid), "a busy child was ended");
    }
    eventually("the idle child's process exits", 10, async || gone(pid)).await;
    match a.count().await {
        Err(RequestError::Transport(mcpwire::peer::TransportError::SessionLost(_))) => {}
        other => panic!("a session whose child was ended: {other:?}"),
    }
    a.initialize().await.unwrap();
    let (count, again) = a.count().await.unwrap();
    assert_eq!(count, 1);
    assert_ne!(again, pid);
}

/// A child that exits fails its request and ends its session (404); the client initializes
/// again and gets a new child; the other session's child is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_exits_ends_its_session_only() {
    let bridge = isolated(&[]);
    let (a, b) = (Session::opened(&bridge.url).await, Session::opened(&bridge.url).await);
    let (_, pid_a) = a.count().await.unwrap();
    assert_eq!(b.count().await.unwrap().0, 1);
    match a.call("exit").await {
        Err(RequestError::Rpc(e)) => assert_eq!(e.code, mcpwire::ErrorCode::INTERNAL_ERROR),
        other => panic!("a call its child exited on: {other:?}"),
    }
    eventually("the session ends with its child", 10, async || {
        matches!(a.count().await, Err(RequestError::Transport(_)))
    })
    .await;
    a.initialize().await.unwrap();
    let (count, again) = a.count().await.unwrap();
    assert_eq!(count, 1);
    assert_ne!(again, pid_a);
    assert_eq!(b.count().await.unwrap().0, 2, "the other session's child was touched");
}
