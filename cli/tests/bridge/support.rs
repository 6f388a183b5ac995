//! What the bridge tests share: `mcpwire bridge` started on a free port in front of a child,
//! and HTTP clients of either era that record everything they are sent.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpwire::RawJson;
use mcpwire::peer::{Context, Handler, Incoming, PeerBuilder, PeerHandle, Reply, RpcError};

/// `mcpwire bridge` running; ended (its group) when dropped. Its stderr is kept.
pub struct Bridge {
    child: Child,
    pub url: String,
    pub log: Arc<Mutex<String>>,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let pid = self.child.id() as i32;
        let _ = Command::new("kill").args(["-s", "TERM", "--", &format!("-{pid}")]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new("kill").args(["-s", "KILL", "--", &format!("-{pid}")]).status();
        let _ = self.child.wait();
    }
}

/// `mcpwire bridge --http 127.0.0.1:0 FLAGS -- CHILD…`, once it announced its URL.
pub fn start(flags: &[&str], child: &[&str]) -> Bridge {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpwire"));
    cmd.args(["bridge", "--http", "127.0.0.1:0"]).args(flags).arg("--").args(child);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("mcpwire bridge");
    let err = child.stderr.take().expect("piped stderr");
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let kept = log.clone();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("mcpwire: serving MCP on ")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(url.to_owned());
            }
            let mut l = kept.lock().unwrap();
            l.push_str(&line);
            l.push('\n');
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("the bridge did not announce its URL: {}", log.lock().unwrap()));
    Bridge { child, url, log }
}

/// The `mcpwire serve` of this build, on stdio: the child most tests bridge.
pub fn serve_child() -> Vec<&'static str> {
    vec![env!("CARGO_BIN_EXE_mcpwire"), "serve", "--stdio"]
}

/// The legacy-only Python child of `legacy_child.py`.
pub fn legacy_child() -> Vec<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bridge/legacy_child.py");
    vec!["python3".into(), "-u".into(), script.into()]
}

/// What a client was sent by the server: notifications, and the server's requests.
#[derive(Default)]
pub struct Seen {
    pub notes: Mutex<Vec<(String, serde_json::Value)>>,
    pub requests: Mutex<Vec<(String, serde_json::Value)>>,
}

/// How a client answers the server's requests.
#[derive(Clone, Default)]
pub struct Answers {
    /// `elicitation/create`: `confirmed` set to this.
    pub confirmed: bool,
    /// Waited on before answering an elicitation (the other client's must be in flight too).
    pub barrier: Option<Arc<tokio::sync::Barrier>>,
    /// `sampling/createMessage`: the text sampled.
    pub sampled: String,
}

struct Recorder {
    seen: Arc<Seen>,
    answers: Answers,
}

impl Handler for Recorder {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        let params: serde_json::Value = req
            .params()
            .map_or(serde_json::Value::Null, |p| serde_json::from_str(p.get()).unwrap());
        self.seen.requests.lock().unwrap().push((req.method().to_owned(), params));
        match req.method() {
            "elicitation/create" => {
                if let Some(b) = &self.answers.barrier {
                    b.wait().await;
                }
                Ok(Reply::raw_string(format!(
                    r#"{{"action":"accept","content":{{"confirmed":{}}}}}"#,
                    self.answers.confirmed
                )))
            }
            "sampling/createMessage" => Ok(Reply::raw_string(format!(
                r#"{{"role":"assistant","content":{{"type":"text","text":{}}},"model":"m"}}"#,
                serde_json::to_string(&self.answers.sampled).unwrap()
            ))),
            "roots/list" => Ok(Reply::raw(r#"{"roots":[]}"#)),
            m => Err(RpcError::method_not_found(m)),
        }
    }

    async fn notification(&self, n: &Incoming, _cx: &Context) {
        let params: serde_json::Value =
            n.params().map_or(serde_json::Value::Null, |p| serde_json::from_str(p.get()).unwrap());
        self.seen.notes.lock().unwrap().push((n.method().to_owned(), params));
    }
}

/// A client of the bridge.
pub struct Client {
    pub peer: PeerHandle,
    pub seen: Arc<Seen>,
    pub modern: bool,
    _conn: mcpwire::peer::ConnectionTask,
}

pub const MODERN: &str = "2026-07-28";

impl Client {
    /// A client; a legacy one opens its session (declaring elicitation and sampling).
    pub async fn new(url: &str, modern: bool, answers: Answers) -> Self {
        let seen = Arc::new(Seen::default());
        let (peer, conn) = mcpwire::http::connect(
            &PeerBuilder::new(),
            url,
            Recorder { seen: seen.clone(), answers },
        )
        .unwrap();
        Self::open(peer, conn, seen, modern).await
    }

    /// A host on the stdio of `mcpwire bridge --stdio URL FLAGS` (its stderr on the test's);
    /// a legacy one opens its session.
    pub async fn stdio(url: &str, flags: &[&str], modern: bool, answers: Answers) -> Self {
        let seen = Arc::new(Seen::default());
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcpwire"));
        cmd.args(["bridge", "--stdio", url]).args(flags);
        let (peer, conn) = mcpwire::transport::spawn_child_with(
            &PeerBuilder::new(),
            cmd,
            mcpwire::transport::ChildStderr::Inherit,
            4096,
            Recorder { seen: seen.clone(), answers },
        )
        .unwrap();
        Self::open(peer, conn, seen, modern).await
    }

    async fn open(
        peer: PeerHandle,
        conn: mcpwire::peer::ConnectionTask,
        seen: Arc<Seen>,
        modern: bool,
    ) -> Self {
        if !modern {
            let init = r#"{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{}},"clientInfo":{"name":"t","version":"1"}}"#;
            peer.request("initialize", Some(RawJson::new(init))).await.unwrap();
            peer.notify("notifications/initialized", mcpwire::peer::NO_PARAMS).await.unwrap();
        }
        Self { peer, seen, modern, _conn: conn }
    }

    /// `params` with this client's era's `_meta` (and `extra_meta` members) added.
    pub fn params(&self, mut params: serde_json::Value, extra_meta: serde_json::Value) -> String {
        let mut meta = extra_meta.as_object().cloned().unwrap_or_default();
        if self.modern {
            meta.insert("io.modelcontextprotocol/protocolVersion".into(), MODERN.into());
            meta.entry("io.modelcontextprotocol/clientCapabilities")
                .or_insert_with(|| serde_json::json!({"elicitation": {}}));
        }
        if !meta.is_empty() {
            params["_meta"] = serde_json::Value::Object(meta);
        }
        params.to_string()
    }

    /// `tools/call` of `tool`; the result, or the error object.
    pub async fn call(
        &self,
        tool: &str,
        args: serde_json::Value,
        meta: serde_json::Value,
    ) -> Result<serde_json::Value, RpcError> {
        let p = self.params(serde_json::json!({"name": tool, "arguments": args}), meta);
        match self.peer.request("tools/call", Some(RawJson::new(&p))).await {
            Ok(a) => Ok(serde_json::from_str(a.result().unwrap().get()).unwrap()),
            Err(mcpwire::peer::RequestError::Rpc(e)) => Err(e),
            Err(e) => Err(RpcError::internal(e.to_string())),
        }
    }
}

/// The text of a tool result's first block.
pub fn text(result: &serde_json::Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}
