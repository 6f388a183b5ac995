//! `client::Client` against real servers in processes of their own, in every era each offers: the
//! official Python SDK's server (`python_server.py`: stdio, and Streamable HTTP answering with
//! JSON or with event streams), `mcpwire serve` (stdio, TCP, Unix socket, HTTP), and
//! `examples/everything` (stdio and HTTP), whose tools ask the client for input: the Client's
//! elicitation and sampling callbacks answer them, as legacy requests and as modern input rounds.

use std::process::Command;
use std::time::Duration;

use mcpwire::mcp::Era;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcpwire::client::{CallOptions, Change, Client, ClientError, Listen, NO_ARGUMENTS};
use mcpwire::mcp::negotiation::VersionChoice;
use mcpwire::mcp::types::{
    CompleteRef, Content, CreateMessageResult, ElicitAction, ElicitResult, Raw, Role,
};
use mcpwire::transport::{ChildStderr, Target};
use serde_json::json;

use crate::everything::everything;
use crate::harness::{self, BIN, Server, ensure_installed, root, venv_python};

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
/// Escapes, non-ASCII (mirrored in base64 into an HTTP header by a modern client) and quotes.
const MESSAGE: &str = "héllo \"wörld\" ✓\n";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// Each version choice, with the era it must reach against a server of both eras.
fn choices() -> [(VersionChoice, Era, Option<&'static str>); 3] {
    [
        (VersionChoice::Auto, Era::Modern, Some(MODERN)),
        (VersionChoice::Fixed(LEGACY.into()), Era::Legacy, Some(LEGACY)),
        (VersionChoice::Fixed(MODERN.into()), Era::Modern, Some(MODERN)),
    ]
}

fn builder(version: VersionChoice) -> mcpwire::client::ClientBuilder {
    Client::builder()
        .name("mcpwire-interop-host", "1")
        .protocol_version(version)
        .stderr(ChildStderr::Discard)
        .timeout(Some(Duration::from_secs(20)))
}

/// Connects at each version choice and checks the era, the tool list and an exact echo.
fn echo_everywhere(target: impl Fn() -> Target, server_name: &str, context: impl Fn() -> String) {
    runtime().block_on(async {
        for (version, era, agreed) in choices() {
            mcpwire::client::forget_era(&target().to_string());
            let shown = version.to_string();
            let c = builder(version)
                .connect(target())
                .await
                .unwrap_or_else(|e| panic!("{shown}: connect: {e}\n{}", context()));
            assert_eq!(c.era(), era, "{shown}\n{}", context());
            if let Some(v) = agreed {
                assert_eq!(c.protocol_version(), v, "{shown}");
            }
            let info = c.server_info().unwrap_or_else(|| panic!("{shown}: no serverInfo"));
            assert_eq!(info.name, server_name, "{shown}");
            let tools =
                c.list_tools().await.unwrap_or_else(|e| panic!("{shown}: {e}\n{}", context()));
            assert!(tools.iter().any(|t| t.get().name == "echo"), "{shown}: {tools:?}");
            let r = c
                .call_tool("echo", json!({ "message": MESSAGE }))
                .await
                .unwrap_or_else(|e| panic!("{shown}: echo: {e}\n{}", context()));
            let text: String = r.get().content.iter().filter_map(Content::as_text).collect();
            assert_eq!(text, MESSAGE, "{shown}: {}", r.json());
            let unknown = c.call_tool("no_such_tool", NO_ARGUMENTS).await.unwrap_err();
            assert!(
                matches!(unknown, ClientError::Protocol { .. } | ClientError::Tool(_)),
                "{shown}: {unknown:?}"
            );
            c.close().await;
        }
    });
}

fn python_stdio() -> Target {
    let script = root().join("tests/interop/python_server.py");
    Target::command(venv_python().display().to_string(), [script.display().to_string()])
}

fn python_http(sse: bool) -> (Server, String) {
    let mut cmd = Command::new(venv_python());
    cmd.arg("tests/interop/python_server.py").arg("--http");
    if sse {
        cmd.arg("--sse");
    }
    let mut server = Server::start(cmd, format!("python_server.py --http (sse: {sse})"));
    let url = server
        .wait_for_stderr(Duration::from_secs(60), |l| {
            l.strip_prefix("python-server: serving MCP on ").map(|u| u.trim().to_owned())
        })
        .unwrap_or_else(|why| panic!("{why}\n{}", server.describe()));
    (server, url)
}

#[test]
fn client_against_python_sdk_server_over_stdio() {
    ensure_installed();
    echo_everywhere(python_stdio, "python-interop-server", String::new);
}

#[test]
fn client_against_python_sdk_server_over_http_json_and_sse() {
    ensure_installed();
    for sse in [false, true] {
        let (mut server, url) = python_http(sse);
        let describe = std::cell::RefCell::new(String::new());
        echo_everywhere(
            || Target::Http(url.clone()),
            "python-interop-server",
            || describe.borrow().clone(),
        );
        *describe.borrow_mut() = server.describe();
        server.assert_terminates(Duration::from_secs(10));
    }
}

fn serve_on(flag: &str, value: &str, prefix: &str) -> (Server, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", flag, value]);
    let mut server = Server::start(cmd, format!("mcpwire serve {flag} {value}"));
    let found = server
        .wait_for_stderr(harness::ANNOUNCE_TIMEOUT, |l| {
            l.strip_prefix(harness::ANNOUNCE_PREFIX).map(|u| u.trim().to_owned())
        })
        .unwrap_or_else(|why| panic!("{why}\n{}", server.describe()));
    assert!(found.starts_with(prefix), "{found}");
    (server, found)
}

#[test]
fn client_against_mcpwire_serve_on_every_transport() {
    echo_everywhere(|| Target::command(BIN, ["serve", "--stdio"]), "mcpwire", String::new);
    let (_tcp, addr) = serve_on("--tcp", "127.0.0.1:0", "tcp:");
    echo_everywhere(|| addr.parse().unwrap(), "mcpwire", String::new);
    let dir = std::env::temp_dir().join(format!("mcpwire-client-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("serve.sock");
    let (_unix, at) = serve_on("--unix", sock.to_str().unwrap(), "unix:");
    echo_everywhere(|| at.parse().unwrap(), "mcpwire", String::new);
    let (_http, url) = harness::serve_http();
    echo_everywhere(|| Target::Http(url.clone()), "mcpwire", String::new);
    let _ = std::fs::remove_dir_all(dir);
}

/// `everything --http` started, and its URL.
pub(crate) fn everything_http() -> (Server, String) {
    let mut cmd = Command::new(everything());
    cmd.args(["--http", "127.0.0.1:0"]);
    let mut server = Server::start(cmd, "everything --http");
    let url = server
        .wait_for_stderr(harness::ANNOUNCE_TIMEOUT, |l| {
            l.strip_prefix(harness::ANNOUNCE_PREFIX).map(|u| u.trim().to_owned())
        })
        .unwrap_or_else(|why| panic!("{why}\n{}", server.describe()));
    (server, url)
}

/// Every typed call, and the callbacks, against `examples/everything`.
fn everything_calls(target: impl Fn() -> Target) {
    runtime().block_on(async {
        for (version, era, _) in choices() {
            let shown = version.to_string();
            mcpwire::client::forget_era(&target().to_string());
            let c = builder(version)
                .on_elicit(|asked| async move {
                    let _ = asked.get().message.len();
                    Ok(ElicitResult {
                        action: ElicitAction::Accept,
                        content: Some(Raw::owned(r#"{"response":"yes"}"#.into()).unwrap()),
                    })
                })
                .on_sample(|_| async move {
                    Ok(CreateMessageResult {
                        role: Role::Assistant,
                        content: Content::text("sampled"),
                        model: "m".into(),
                        stop_reason: None,
                    })
                })
                .connect(target())
                .await
                .unwrap_or_else(|e| panic!("{shown}: {e}"));
            assert_eq!(c.era(), era, "{shown}");
            let tools = c.list_tools().await.unwrap();
            assert!(tools.len() > 20, "{shown}: {} tools", tools.len());
            let r = c.call_tool("test_simple_text", NO_ARGUMENTS).await.unwrap();
            assert!(r.json().contains("This is a simple text response"), "{shown}: {}", r.json());
            let e = c.call_tool("test_error_handling", NO_ARGUMENTS).await.unwrap_err();
            assert!(matches!(e, ClientError::Tool(_)), "{shown}: {e:?}");
            let r = c.call_tool("test_elicitation", json!({ "message": "ok?" })).await.unwrap();
            assert!(r.json().contains("yes"), "{shown}: {}", r.json());
            let r = c.call_tool("test_sampling", json!({ "prompt": "p" })).await.unwrap();
            assert!(r.json().contains("sampled"), "{shown}: {}", r.json());
            // Mirrored into Mcp-Param-* headers over modern HTTP, checked by the server.
            let r =
                c.call_tool("test_custom_headers", json!({ "region": "eu-west", "priority": 2 }));
            assert!(r.await.unwrap().json().contains("eu-west"), "{shown}");
            let resources = c.list_resources().await.unwrap();
            let first = resources[0].get().uri.to_string();
            let read = c.read_resource(&first).await.unwrap();
            assert!(!read.get().contents.is_empty(), "{shown}");
            let prompts = c.list_prompts().await.unwrap();
            assert!(prompts.iter().any(|p| p.get().name == "test_simple_prompt"), "{shown}");
            let p = c.get_prompt("test_simple_prompt", NO_ARGUMENTS).await.unwrap();
            assert!(!p.get().messages.is_empty(), "{shown}");
            let templates = c.list_resource_templates().await.unwrap();
            assert_eq!(templates[0].get().uri_template, "test://template/{id}/data", "{shown}");
            let item = c.read_resource("test://template/42/data").await.unwrap();
            assert!(item.json().contains("42"), "{shown}: {}", item.json());
            let reference = CompleteRef::Resource { uri: "test://template/{id}/data".into() };
            let done = c.complete(&reference, "id", "4").await.unwrap();
            assert_eq!(done.get().completion.values, ["42"], "{shown}");
            let seen = Arc::new(AtomicUsize::new(0));
            let s = seen.clone();
            let options = CallOptions::new().on_progress(move |_| {
                s.fetch_add(1, Ordering::SeqCst);
            });
            c.call_tool_with("test_tool_with_progress", NO_ARGUMENTS, &options).await.unwrap();
            assert!(seen.load(Ordering::SeqCst) >= 1, "{shown}: no progress");
            // A change announced after `listen` returns reaches the stream.
            let mut changes = c.listen(Listen::new().tools()).await.unwrap();
            c.call_tool("test_trigger_tool_change", NO_ARGUMENTS).await.unwrap();
            let next = tokio::time::timeout(Duration::from_secs(10), changes.next()).await;
            assert_eq!(next.expect("a change within 10 s"), Some(Change::Tools), "{shown}");
            drop(changes);
            c.close().await;
        }
    });
}

#[test]
fn client_against_everything_example_over_stdio_and_http() {
    let exe = everything();
    everything_calls(|| Target::command(exe.display().to_string(), ["--stdio"]));
    let (_server, url) = everything_http();
    everything_calls(|| Target::Http(url.clone()));
}

/// A host that calls a tool without listing the tools first: over modern HTTP the client still
/// mirrors the tool's `x-mcp-header` arguments, which the Python SDK's server requires.
#[test]
fn a_call_before_any_list_still_mirrors_its_headers() {
    ensure_installed();
    let (mut server, url) = python_http(false);
    runtime().block_on(async {
        let c = builder(VersionChoice::Fixed(MODERN.into()))
            .connect(Target::Http(url.clone()))
            .await
            .unwrap();
        let r = c.call_tool("echo", json!({ "message": MESSAGE })).await;
        let r = r.unwrap_or_else(|e| panic!("{e}\n{}", server.describe()));
        let text: String = r.get().content.iter().filter_map(Content::as_text).collect();
        assert_eq!(text, MESSAGE);
    });
}
