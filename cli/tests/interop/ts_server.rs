//! `mcpwire::client::Client` against the TypeScript SDK v2 server (npm
//! `@modelcontextprotocol/server`, `tests/interop/ts_server.mjs`), over stdio and Streamable
//! HTTP, in both eras: the SDK serves 2026-07-28 and, from the same factory, 2025-era clients
//! that open with `initialize` (on stdio a connection pinned to one instance; over HTTP its
//! default stateless fallback, one fresh instance per request).
//!
//! Each connection checks the era and version agreed, the server's name and version, the tool
//! list, `echo` (non-ASCII text back exact), the failing tool as `ClientError::Tool`,
//! `read_resource`, `get_prompt`, and elicitation through the client's callback (accepted,
//! then declined): a modern `input_required` round on 2026-07-28, a real `elicitation/create`
//! request (the SDK's legacy shim) on a 2025-era stdio connection. The one thing the SDK does not offer is elicitation
//! on a 2025-era HTTP request: its stateless fallback holds no client capabilities and cannot
//! send a request to the client, so the tool fails (`isError`) without asking; the test
//! asserts exactly that, and that the callback never ran.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::client::{Client, ClientError, NO_ARGUMENTS};
use mcpwire::mcp::Era;
use mcpwire::mcp::negotiation::VersionChoice;
use mcpwire::mcp::types::{CallToolResult, ElicitAction, ElicitResult, Raw};
use mcpwire::transport::ChildStderr;
use mcpwire::transport::Target;
use serde_json::json;

use crate::harness::{
    ANNOUNCE_TIMEOUT, RUN_TIMEOUT, Server, ensure_installed, node_modern_prefix, node22, root,
};

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
/// What `ts_server.mjs` prints on stderr once it listens, followed by the URL.
const ANNOUNCE: &str = "ts-server: serving MCP on ";
/// Plain ASCII would not show a client that re-encodes or mangles text on the way.
const MESSAGE: &str = "héllo, wörld ✓ — 日本語 🦀 \"quoted\" \\ back\nslash";
/// The name the elicitation callback answers with.
const NAME: &str = "Grace ✓";
/// What the SDK's stateless legacy HTTP fallback answers a tool that needs input.
const NO_LEGACY_HTTP_ASKS: &str =
    "per-request legacy serving cannot receive server-to-client requests";

fn script_args(mode: &str) -> Vec<String> {
    let script = root().join("tests/interop/ts_server.mjs");
    let prefix = node_modern_prefix();
    vec![
        script.to_str().expect("UTF-8 path").to_owned(),
        "--packages".to_owned(),
        prefix.to_str().expect("UTF-8 path").to_owned(),
        mode.to_owned(),
    ]
}

fn node() -> String {
    node22().to_str().expect("UTF-8 path").to_owned()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn text(r: &CallToolResult<'_>) -> String {
    r.content.iter().filter_map(|c| c.as_text()).collect()
}

/// How the SDK serves elicitation on a connection.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Asks {
    /// The tool asks; the client's callback answers.
    Served,
    /// The tool fails without asking (2025-era HTTP, stateless).
    Refused,
}

/// A client at `version` (or `auto`) whose elicitation callback counts its calls, answers the
/// first (and every odd one) with [`NAME`] and declines the second (and every even one).
async fn connect(
    target: Target,
    version: Option<&str>,
    elicited: Arc<AtomicUsize>,
    stderr: ChildStderr,
) -> Result<Client, ClientError> {
    let choice = version.map_or(VersionChoice::Auto, |v| VersionChoice::Fixed(v.to_owned()));
    Client::builder()
        .name("mcpwire-interop", "1")
        .protocol_version(choice)
        .timeout(Some(Duration::from_secs(30)))
        .stderr(stderr)
        .on_elicit(move |asked| {
            let elicited = elicited.clone();
            async move {
                let n = elicited.fetch_add(1, Ordering::SeqCst);
                assert_eq!(asked.get().message, "Name?");
                let schema = asked.get().requested_schema.as_ref().map(|s| s.get().to_owned());
                assert!(schema.as_deref().unwrap_or("").contains("\"name\""), "{schema:?}");
                if n % 2 == 1 {
                    return Ok(ElicitResult { action: ElicitAction::Decline, content: None });
                }
                let answer = json!({ "name": NAME }).to_string();
                Ok(ElicitResult {
                    action: ElicitAction::Accept,
                    content: Some(Raw::owned(answer).expect("JSON")),
                })
            }
        })
        .connect(target)
        .await
}

/// Every call against a connected client; `Err` says what went wrong.
async fn exercise(
    c: &Client,
    era: Era,
    version: &str,
    asks: Asks,
    elicited: &AtomicUsize,
) -> Result<(), String> {
    let e = |what: &str, err: ClientError| format!("{what}: {err}");
    check(c.era() == era, format!("era {:?}, expected {era:?}", c.era()))?;
    check(c.protocol_version() == version, format!("version {}", c.protocol_version()))?;
    let info = c.server_info().ok_or("the server gave no serverInfo")?;
    check(
        (&*info.name, &*info.version) == ("ts-interop-server", "2.4.0"),
        format!("serverInfo {info:?}"),
    )?;
    check(c.capabilities().tools.is_some(), "no tools capability".into())?;

    let tools = c.list_tools().await.map_err(|err| e("list_tools", err))?;
    let names: Vec<String> = tools.iter().map(|t| t.get().name.to_string()).collect();
    check(names == ["echo", "fail", "ask_name"], format!("tools {names:?}"))?;
    let echo = tools[0].get();
    check(
        echo.description.as_deref() == Some("Returns its message exactly.")
            && echo.input_schema.get().contains("\"message\""),
        format!("echo tool {echo:?}"),
    )?;

    let r =
        c.call_tool("echo", json!({ "message": MESSAGE })).await.map_err(|err| e("echo", err))?;
    check(text(r.get()) == MESSAGE, format!("echo gave {:?}", text(r.get())))?;

    match c.call_tool("fail", NO_ARGUMENTS).await {
        Err(ClientError::Tool(r)) => check(text(r.get()) == "boom", format!("fail: {r:?}"))?,
        other => return Err(format!("fail: expected ClientError::Tool, got {other:?}")),
    }

    let read = c.read_resource("mem://greeting").await.map_err(|err| e("read_resource", err))?;
    let contents = &read.get().contents;
    check(
        contents.len() == 1
            && contents[0].uri == "mem://greeting"
            && contents[0].mime_type.as_deref() == Some("text/plain")
            && contents[0].text.as_deref() == Some("grüße aus TypeScript ✓"),
        format!("read_resource gave {}", read.json()),
    )?;

    let prompts = c.list_prompts().await.map_err(|err| e("list_prompts", err))?;
    let hello = prompts.iter().find(|p| p.get().name == "hello").ok_or("no prompt `hello`")?;
    let args = &hello.get().arguments;
    check(args.len() == 1 && args[0].name == "who", format!("prompt arguments {args:?}"))?;
    let p =
        c.get_prompt("hello", json!({ "who": "Ada ✓" })).await.map_err(|err| e("prompt", err))?;
    let said: Vec<&str> = p.get().messages.iter().filter_map(|m| m.content.as_text()).collect();
    check(said == ["say hello to Ada ✓"], format!("get_prompt gave {}", p.json()))?;

    let before = elicited.load(Ordering::SeqCst);
    let asked = c.call_tool("ask_name", NO_ARGUMENTS).await;
    let calls = elicited.load(Ordering::SeqCst) - before;
    match (asks, asked) {
        (Asks::Served, Ok(r)) => {
            check(text(r.get()) == format!("hello {NAME}"), format!("ask_name: {:?}", r.json()))?;
            check(calls == 1, format!("the elicitation callback ran {calls} times, not once"))?;
            // The second ask is declined: the tool sees the decline.
            let r =
                c.call_tool("ask_name", NO_ARGUMENTS).await.map_err(|err| e("ask_name", err))?;
            check(text(r.get()) == "no name: decline", format!("declined ask_name: {}", r.json()))?;
            let calls = elicited.load(Ordering::SeqCst) - before;
            check(calls == 2, format!("the elicitation callback ran {calls} times, not twice"))?;
        }
        (Asks::Refused, Err(ClientError::Tool(r))) => {
            check(text(r.get()).contains(NO_LEGACY_HTTP_ASKS), format!("ask_name: {}", r.json()))?;
            check(calls == 0, format!("the elicitation callback ran {calls} times"))?;
        }
        (asks, other) => return Err(format!("ask_name ({asks:?}): {other:?}")),
    }
    Ok(())
}

fn check(ok: bool, why: String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(why) }
}

#[test]
fn client_against_the_ts_sdk_v2_server_over_stdio_in_both_eras() {
    ensure_installed();
    let rt = runtime();
    let target = Target::command(node(), script_args("--stdio"));
    for (version, era) in
        [(Some(LEGACY), Era::Legacy), (Some(MODERN), Era::Modern), (None, Era::Modern)]
    {
        let agreed = version.unwrap_or(MODERN);
        let what = format!("stdio at {}", version.unwrap_or("auto"));
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let keep = lines.clone();
        let stderr = ChildStderr::Lines(Arc::new(move |l| keep.lock().unwrap().push(l.to_owned())));
        let elicited = Arc::new(AtomicUsize::new(0));
        let outcome = rt.block_on(async {
            tokio::time::timeout(RUN_TIMEOUT, async {
                let c = connect(target.clone(), version, elicited.clone(), stderr)
                    .await
                    .map_err(|e| format!("connect: {e}"))?;
                let done = exercise(&c, era, agreed, Asks::Served, &elicited).await;
                c.close().await;
                done
            })
            .await
            .unwrap_or_else(|_| Err(format!("not done within {RUN_TIMEOUT:?}")))
        });
        let lines = lines.lock().unwrap().join("\n");
        if let Err(why) = outcome {
            panic!("{what}: {why}\n--- server stderr ---\n{lines}");
        }
        // The SDK itself served the era the client agreed on (an instance per connection).
        let era_name = if era == Era::Legacy { "legacy" } else { "modern" };
        assert!(lines.contains(&format!("ts-server: tool echo {era_name}")), "{what}:\n{lines}");
        println!("{what}: every call passed\n{lines}");
    }
}

#[test]
fn client_against_the_ts_sdk_v2_server_over_http_in_both_eras() {
    ensure_installed();
    let mut cmd = Command::new(node22());
    cmd.args(script_args("--http"));
    let mut server = Server::start(cmd, "ts_server.mjs --http");
    let url = server
        .wait_for_stderr(ANNOUNCE_TIMEOUT, |l| {
            l.strip_prefix(ANNOUNCE).map(|u| u.trim().to_owned())
        })
        .unwrap_or_else(|why| panic!("no announce line: {why}\n{}", server.describe()));
    let rt = runtime();
    let runs = [
        (Some(LEGACY), Era::Legacy, Asks::Refused),
        (Some(MODERN), Era::Modern, Asks::Served),
        (None, Era::Modern, Asks::Served),
    ];
    for (version, era, asks) in runs {
        let agreed = version.unwrap_or(MODERN);
        let what = format!("{url} at {}", version.unwrap_or("auto"));
        let elicited = Arc::new(AtomicUsize::new(0));
        let target: Target = url.parse().expect("an HTTP target");
        let outcome = rt.block_on(async {
            tokio::time::timeout(RUN_TIMEOUT, async {
                let c = connect(target, version, elicited.clone(), ChildStderr::Discard)
                    .await
                    .map_err(|e| format!("connect: {e}"))?;
                let done = exercise(&c, era, agreed, asks, &elicited).await;
                c.close().await;
                done
            })
            .await
            .unwrap_or_else(|_| Err(format!("not done within {RUN_TIMEOUT:?}")))
        });
        if let Err(why) = outcome {
            panic!("{what}: {why}\n{}", server.describe());
        }
        // The SDK served the echo call in the era the client agreed on.
        let era_name = if era == Era::Legacy { "legacy" } else { "modern" };
        let want = format!("ts-server: tool echo {era_name}");
        server
            .wait_for_stderr(Duration::from_secs(5), |l| (l == want).then_some(()))
            .unwrap_or_else(|why| panic!("{what}: no {want:?}: {why}\n{}", server.describe()));
        println!("{what}: every call passed");
    }
    server.assert_terminates(Duration::from_secs(10));
}
