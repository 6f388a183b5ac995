//! `client::Client` against `server::Server` in this process (a real tokio runtime, the
//! in-memory pipe transport) and against a hand-written legacy server over real TCP: every call
//! in both eras, the callbacks the server's asks reach, progress, cancellation, timeouts, change
//! streams, each error kind a host matches on, and the page bound at and just past its limit.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpwire::client::{CallOptions, Change, Client, ClientError, Listen, NO_ARGUMENTS};
use mcpwire::mcp::Era;
use mcpwire::mcp::negotiation::VersionChoice;
use mcpwire::mcp::types::{
    CallToolResult, CompleteRef, CompleteResult, Content, CreateMessageParams, CreateMessageResult,
    ElicitAction, ElicitResult, GetPromptResult, InputRequest, LoggingLevel, Prompt, PromptMessage,
    Raw, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, Root, Tool,
};
use mcpwire::peer::{Context, Handler, Incoming, PeerBuilder, Reply, RpcError};
use mcpwire::server::{HandlerError, Server};
use mcpwire::transport::Target;
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod common;

use common::{LEGACY, MODERN, ask_name, eventually, greet, peer_on_pipe, serve_tcp};

/// Counts the handler futures dropped before they finished.
struct Dropped(Arc<AtomicUsize>, bool);

impl Drop for Dropped {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn server(cancelled: Arc<AtomicUsize>) -> Server {
    Server::builder("client-test-server", "1.2.3")
        .instructions("be nice")
        .tool(Tool::new("greet").description("says hello"), greet)
        .tool(Tool::new("fail"), |_call| async move { Err(HandlerError::tool("boom")) })
        .tool(Tool::new("ask_name"), ask_name)
        .tool(Tool::new("sample"), |call| async move {
            let asked = InputRequest::sample(&CreateMessageParams::user("2+2?", 10));
            let a = call.ask("model", asked).await?;
            let r: CreateMessageResult<'_> = a.decode()?;
            Ok(CallToolResult::text(format!("model said {}", r.content.as_text().unwrap_or(""))))
        })
        .tool(Tool::new("roots"), |call| async move {
            let a = call.ask("roots", InputRequest::list_roots()).await?;
            let r: mcpwire::mcp::types::ListRootsResult<'_> = a.decode()?;
            Ok(CallToolResult::text(
                r.roots.iter().map(|r| r.uri.as_ref()).collect::<Vec<_>>().join(","),
            ))
        })
        .tool(Tool::new("slow"), move |call| {
            let cancelled = cancelled.clone();
            async move {
                let mut guard = Dropped(cancelled, false);
                for i in 1..=3 {
                    call.progress(f64::from(i), Some(3.0), Some("working")).await;
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
                guard.1 = true;
                Ok(CallToolResult::text("late"))
            }
        })
        .tool(Tool::new("meta"), |call| async move {
            #[derive(serde::Deserialize)]
            struct P<'a> {
                #[serde(borrow, rename = "_meta")]
                meta: &'a serde_json::value::RawValue,
            }
            Ok(CallToolResult::text(call.params::<P<'_>>()?.meta.get().to_owned()))
        })
        .tool(Tool::new("chatty"), |call| async move {
            call.log(LoggingLevel::Info, "informative").await;
            call.log(LoggingLevel::Error, "bad").await;
            Ok(CallToolResult::text("said"))
        })
        .tool(Tool::new("progress"), |call| async move {
            for i in 1..=3 {
                call.progress(f64::from(i), Some(3.0), None).await;
            }
            Ok(CallToolResult::text("done"))
        })
        .resource(Resource::new("mem://a", "a").mime_type("text/plain"), |_call| async move {
            Ok(ReadResourceResult::new(ResourceContents::text("mem://a", "text/plain", "A")))
        })
        .resource_template(ResourceTemplate::new("mem://item/{id}", "item"), |call| async move {
            #[derive(serde::Deserialize)]
            struct P {
                uri: String,
            }
            let uri = call.params::<P>()?.uri;
            let text = format!("item at {uri}");
            Ok(ReadResourceResult::new(ResourceContents::text(uri, "text/plain", text)))
        })
        .prompt(Prompt::new("hello").argument("who", "who to greet", true), |call| async move {
            #[derive(serde::Deserialize)]
            struct Args<'a> {
                #[serde(borrow)]
                who: Cow<'a, str>,
            }
            #[derive(serde::Deserialize)]
            struct P<'a> {
                #[serde(borrow)]
                arguments: Args<'a>,
            }
            let p: P<'_> = call.params()?;
            let text = format!("say hello to {}", p.arguments.who);
            Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(text))]))
        })
        .completion(|_call| async move {
            Ok(CompleteResult::new(vec!["alpha".into(), "alpine".into()]))
        })
        .build()
}

fn fixed(v: &str) -> VersionChoice {
    VersionChoice::Fixed(v.to_owned())
}

async fn connect(server: &Server, version: &str) -> Client {
    Client::builder()
        .name("client-test", "0.1")
        .protocol_version(fixed(version))
        .on_elicit(|asked| async move {
            assert_eq!(asked.get().message, "Name?");
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: Some(Raw::owned(r#"{"name":"Ada"}"#.into()).unwrap()),
            })
        })
        .on_sample(|asked| async move {
            assert_eq!(asked.get().max_tokens, 10);
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content: Content::text("4"),
                model: "test-model".into(),
                stop_reason: None,
            })
        })
        .roots([Root { uri: "file:///work".into(), name: None }])
        .connect(server.clone())
        .await
        .unwrap_or_else(|e| panic!("connect at {version}: {e}"))
}

fn text(r: &CallToolResult<'_>) -> String {
    r.content.iter().filter_map(|c| c.as_text()).collect()
}

#[tokio::test]
async fn every_typed_call_in_both_eras() {
    let server = server(Arc::default());
    for (version, era) in [(LEGACY, Era::Legacy), (MODERN, Era::Modern)] {
        let c = connect(&server, version).await;
        assert_eq!(c.era(), era);
        assert_eq!(c.protocol_version(), version);
        let info = c.server_info().expect("the server names itself");
        assert_eq!((&*info.name, &*info.version), ("client-test-server", "1.2.3"), "{version}");
        assert!(c.capabilities().tools.is_some());
        assert_eq!(c.instructions(), Some("be nice"));

        let tools = c.list_tools().await.unwrap();
        let names: Vec<String> = tools.iter().map(|t| t.get().name.to_string()).collect();
        assert!(names.contains(&"greet".to_owned()), "{names:?}");
        let greet = tools.iter().find(|t| t.get().name == "greet").unwrap();
        assert_eq!(greet.get().description.as_deref(), Some("says hello"));

        let r = c.call_tool("greet", json!({ "who": "Ada" })).await.unwrap();
        assert_eq!(text(r.get()), "hello Ada", "{version}");
        // The strings of a result are borrowed from the message when they need no unescaping.
        assert!(matches!(r.get().content[0], Content::Text { text: Cow::Borrowed(_), .. }));

        let resources = c.list_resources().await.unwrap();
        assert_eq!(resources.len(), 1);
        assert_eq!(resources[0].get().uri, "mem://a");
        let read = c.read_resource("mem://a").await.unwrap();
        assert!(read.json().contains("\"A\""), "{}", read.json());
        let templates = c.list_resource_templates().await.unwrap();
        assert_eq!(templates[0].get().uri_template, "mem://item/{id}");
        let item = c.read_resource("mem://item/7").await.unwrap();
        assert!(item.json().contains("item at mem://item/7"), "{}", item.json());

        let prompts = c.list_prompts().await.unwrap();
        assert_eq!(prompts[0].get().name, "hello");
        let p = c.get_prompt("hello", json!({ "who": "Bob" })).await.unwrap();
        assert!(p.json().contains("say hello to Bob"), "{}", p.json());

        let reference = CompleteRef::Prompt { name: "hello".into() };
        let done = c.complete(&reference, "who", "al").await.unwrap();
        assert_eq!(done.get().completion.values, ["alpha", "alpine"]);

        // The raw layer, with no turbofish.
        let listed = c.request("tools/list").await.unwrap();
        assert!(listed.result().unwrap().get().contains("greet"));
        let called =
            c.request_with("tools/call", json!({ "name": "greet", "arguments": { "who": "Eve" } }));
        assert!(called.await.unwrap().result().unwrap().get().contains("hello Eve"));
    }
}

#[tokio::test]
async fn errors_are_kinds_a_host_matches_on() {
    let server = server(Arc::default());
    for version in [LEGACY, MODERN] {
        let c = connect(&server, version).await;
        match c.call_tool("fail", NO_ARGUMENTS).await {
            Err(ClientError::Tool(r)) => assert_eq!(text(r.get()), "boom"),
            other => panic!("{version}: {other:?}"),
        }
        // A tool's bad arguments are the tool's failure too, with the field named.
        match c.call_tool("greet", json!({ "who": 7 })).await {
            Err(ClientError::Tool(r)) => {
                assert!(text(r.get()).contains("who"), "{}", text(r.get()))
            }
            other => panic!("{version}: {other:?}"),
        }
        let unknown = c.call_tool("nope", NO_ARGUMENTS).await.unwrap_err();
        assert_eq!(unknown.code().map(|c| c.0), Some(-32602), "{version}: {unknown}");
        let missing = c.read_resource("mem://missing").await.unwrap_err();
        let want = if version == LEGACY { -32002 } else { -32602 };
        match &missing {
            ClientError::Protocol { code, data, .. } => {
                assert_eq!(code.0, want, "{version}");
                assert!(data.as_deref().unwrap_or("").contains("mem://missing"), "{data:?}");
            }
            other => panic!("{version}: {other:?}"),
        }
        c.close().await;
        assert!(matches!(
            c.call_tool("greet", json!({"who": "x"})).await,
            Err(ClientError::Closed(_))
        ));
    }
}

#[tokio::test]
async fn callbacks_answer_the_servers_asks_in_both_eras() {
    let server = server(Arc::default());
    for version in [LEGACY, MODERN] {
        let c = connect(&server, version).await;
        let r = c.call_tool("ask_name", NO_ARGUMENTS).await.unwrap();
        assert_eq!(text(r.get()), "hi Ada", "{version}");
        let r = c.call_tool("sample", NO_ARGUMENTS).await.unwrap();
        assert_eq!(text(r.get()), "model said 4", "{version}");
        let r = c.call_tool("roots", NO_ARGUMENTS).await.unwrap();
        assert_eq!(text(r.get()), "file:///work", "{version}");
        c.set_roots(vec![Root { uri: "file:///other".into(), name: None }]).await.unwrap();
        let r = c.call_tool("roots", NO_ARGUMENTS).await.unwrap();
        assert_eq!(text(r.get()), "file:///other", "{version}");
    }
    // A client without the callbacks declares none of the capabilities; the server refuses.
    for version in [LEGACY, MODERN] {
        let bare = Client::builder().protocol_version(fixed(version));
        let c = bare.connect(server.clone()).await.unwrap();
        let e = c.call_tool("ask_name", NO_ARGUMENTS).await.unwrap_err();
        assert!(
            matches!(e, ClientError::Protocol { .. } | ClientError::Tool(_)),
            "{version}: {e:?}"
        );
    }
}

#[tokio::test]
async fn progress_timeout_and_cancellation() {
    let cancelled = Arc::new(AtomicUsize::new(0));
    let server = server(cancelled.clone());
    for version in [LEGACY, MODERN] {
        let c = connect(&server, version).await;
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = seen.clone();
        let options =
            CallOptions::new().on_progress(move |p| s.lock().unwrap().push((p.progress, p.total)));
        let r = c.call_tool_with("progress", NO_ARGUMENTS, &options).await.unwrap();
        assert_eq!(text(r.get()), "done");
        assert_eq!(*seen.lock().unwrap(), [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]);

        let before = cancelled.load(Ordering::SeqCst);
        let options = CallOptions::new().timeout(Some(Duration::from_millis(200)));
        let e = c.call_tool_with("slow", NO_ARGUMENTS, &options).await.unwrap_err();
        assert!(matches!(e, ClientError::Timeout), "{version}: {e:?}");
        eventually("timeout cancels", || cancelled.load(Ordering::SeqCst) == before + 1).await;

        let token = CancellationToken::new();
        let options = CallOptions::new().cancel_on(token.clone());
        let t = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            t.cancel();
        });
        let e = c.call_tool_with("slow", NO_ARGUMENTS, &options).await.unwrap_err();
        assert!(matches!(e, ClientError::Cancelled), "{version}: {e:?}");
        eventually("the token cancels", || cancelled.load(Ordering::SeqCst) == before + 2).await;

        // Dropping the call's future cancels it on the server too.
        let dropped =
            tokio::time::timeout(Duration::from_millis(100), c.call_tool("slow", NO_ARGUMENTS));
        assert!(dropped.await.is_err());
        eventually("a drop cancels", || cancelled.load(Ordering::SeqCst) == before + 3).await;
    }
}

#[tokio::test]
async fn change_streams_in_both_eras() {
    let server = server(Arc::default());
    for version in [LEGACY, MODERN] {
        let c = connect(&server, version).await;
        let mut changes = c.listen(Listen::new().tools().resource("mem://a")).await.unwrap();
        assert_eq!(changes.id().is_some(), version == MODERN);
        server.tools_changed();
        server.prompts_changed(); // not asked for
        server.resource_updated("mem://a");
        server.resource_updated("mem://b"); // not asked for
        let mut got = Vec::new();
        for _ in 0..2 {
            let next = tokio::time::timeout(Duration::from_secs(5), changes.next()).await;
            got.push(next.expect("a change").expect("the stream is open"));
        }
        got.sort();
        assert_eq!(got, [Change::Tools, Change::Updated("mem://a".into())], "{version}");
        // Nothing else is pending.
        let more = tokio::time::timeout(Duration::from_millis(200), changes.next()).await;
        assert!(more.is_err(), "{version}: {more:?}");
        drop(changes);
        c.close().await;
    }
}

/// A legacy-only server written by hand: `initialize`, and a tool list of `pages` pages whose
/// cursors are `1`, `2`, … (or always `1` when `stuck`).
#[derive(Clone)]
struct Paged {
    pages: usize,
    stuck: bool,
}

impl Handler for Paged {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "initialize" => Ok(Reply::raw(
                r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"paged","version":"1"}}"#,
            )),
            "tools/list" => {
                #[derive(serde::Deserialize)]
                struct P {
                    cursor: Option<String>,
                }
                let p: P = req.params_as().map_err(RpcError::invalid_params)?;
                let at: usize = p.cursor.as_deref().map_or(0, |c| c.parse().unwrap_or(0));
                let next = if at + 1 < self.pages {
                    json!(if self.stuck { 1 } else { at + 1 }.to_string())
                } else {
                    serde_json::Value::Null
                };
                let tool = json!({ "name": format!("t{at}"), "inputSchema": { "type": "object" } });
                let mut page = json!({ "tools": [tool] });
                if !next.is_null() {
                    page["nextCursor"] = next;
                }
                Ok(Reply::raw_string(page.to_string()))
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

async fn paged_server(pages: usize, stuck: bool) -> String {
    let handler = Paged { pages, stuck };
    let (addr, _accepting) = serve_tcp(move || handler.clone()).await;
    format!("tcp:{addr}")
}

#[tokio::test]
async fn pages_are_followed_up_to_the_bound() {
    for (pages, ok) in [(3, true), (4, false)] {
        let target = paged_server(pages, false).await;
        let c = Client::builder().max_pages(3).connect(&target).await.unwrap();
        assert_eq!(c.era(), Era::Legacy, "discover is -32601 here");
        assert_eq!(c.server_info().unwrap().name, "paged");
        match c.list_tools().await {
            Ok(tools) if ok => {
                let names: Vec<_> = tools.iter().map(|t| t.get().name.to_string()).collect();
                assert_eq!(names, ["t0", "t1", "t2"]);
            }
            Err(ClientError::Invalid { reason, .. }) if !ok => {
                assert!(reason.contains("3 pages"), "{reason}")
            }
            other => panic!("{pages} pages: {other:?}"),
        }
    }
    let target = paged_server(5, true).await;
    let c = Client::connect(&target).await.unwrap();
    match c.list_tools().await {
        Err(ClientError::Invalid { reason, .. }) => {
            assert!(reason.contains("same cursor"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn connection_and_era_failures() {
    // A modern client against a legacy-only server.
    let target = paged_server(1, false).await;
    let e = Client::builder().protocol_version(fixed(MODERN)).connect(&target).await.unwrap_err();
    assert!(matches!(e, ClientError::Era(_)), "{e:?}");
    // A server that exits at once.
    let e = Client::connect(Target::command("sh", ["-c", "exit 0"])).await.unwrap_err();
    assert!(matches!(e, ClientError::Closed(_)), "{e:?}");
    // Nothing listening.
    let e = Client::connect("tcp:127.0.0.1:1").await.unwrap_err();
    assert!(matches!(e, ClientError::Connect(_)), "{e:?}");
    let e = Client::connect("carrier-pigeon:home").await.unwrap_err();
    assert!(matches!(e, ClientError::Connect(_)), "{e:?}");
}

#[tokio::test]
async fn a_calls_own_meta_and_the_log_level_reach_the_server() {
    let server = server(Arc::default());
    for version in [LEGACY, MODERN] {
        let c = connect(&server, version).await;
        let options = CallOptions::new().meta("trace", json!("abc-123"));
        let r = c.call_tool_with("meta", NO_ARGUMENTS, &options).await.unwrap();
        let meta: serde_json::Value = serde_json::from_str(&text(r.get())).unwrap();
        assert_eq!(meta["trace"], "abc-123", "{version}: {meta}");
        // A modern request's envelope is merged with the call's own members.
        let envelope = meta.get(mcpwire::mcp::PROTOCOL_VERSION_KEY);
        assert_eq!(envelope.is_some(), version == MODERN, "{version}: {meta}");

        for (level, want) in
            [(LoggingLevel::Info, vec!["informative", "bad"]), (LoggingLevel::Error, vec!["bad"])]
        {
            let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
            let s = seen.clone();
            let c = Client::builder()
                .protocol_version(fixed(version))
                .log_level(level)
                .on_log(move |m| s.lock().unwrap().push(m.data.get().trim_matches('"').to_owned()))
                .connect(server.clone())
                .await
                .unwrap();
            c.call_tool("chatty", NO_ARGUMENTS).await.unwrap();
            eventually("log messages", || seen.lock().unwrap().len() >= want.len()).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert_eq!(*seen.lock().unwrap(), want, "{version} at {level:?}");
        }
    }
}

#[tokio::test]
async fn a_client_over_a_stream_of_the_hosts_own() {
    let server = server(Arc::default());
    let (_peer, _conn, b) = peer_on_pipe(&PeerBuilder::new(), 64 * 1024, server.handler());
    let c = Client::builder().connect_stream(b).await.unwrap();
    assert_eq!(c.era(), Era::Modern);
    let r = c.call_tool("greet", json!({ "who": "Io" })).await.unwrap();
    assert_eq!(text(r.get()), "hello Io");
}

/// A legacy server written by hand that answers `tools/call` and `prompts/get` with the params
/// it received, and refuses `"arguments": null` with -32602 as the TypeScript SDK does.
#[derive(Clone)]
struct Strict;

impl Handler for Strict {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "initialize" => Ok(Reply::raw(
                r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"prompts":{}},"serverInfo":{"name":"strict","version":"1"}}"#,
            )),
            m @ ("tools/call" | "prompts/get") => {
                let params = req.params().map(|p| p.get().to_owned()).unwrap_or_default();
                let p: serde_json::Value = serde_json::from_str(&params).unwrap_or_default();
                if p.get("arguments").is_some_and(|a| !a.is_object()) {
                    return Err(RpcError::invalid_params("arguments: expected record"));
                }
                let said = Content::text(params);
                Ok(Reply::raw_string(if m == "tools/call" {
                    json!({ "content": [said] }).to_string()
                } else {
                    json!({ "messages": [{ "role": "user", "content": said }] }).to_string()
                }))
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

#[tokio::test]
async fn no_arguments_go_out_as_an_empty_object() {
    let (addr, _accepting) = serve_tcp(|| Strict).await;
    let c = Client::connect(format!("tcp:{addr}")).await.unwrap();
    let r = c.call_tool("t", NO_ARGUMENTS).await.unwrap();
    assert_eq!(text(r.get()), r#"{"name":"t","arguments":{}}"#);
    let p = c.get_prompt("p", NO_ARGUMENTS).await.unwrap();
    assert_eq!(p.get().messages[0].content.as_text(), Some(r#"{"name":"p","arguments":{}}"#));
    // Given arguments go out as they are.
    let r = c.call_tool("t", json!({ "a": 1 })).await.unwrap();
    assert_eq!(text(r.get()), r#"{"name":"t","arguments":{"a":1}}"#);
    // A `null` there (which a strict server refuses with -32602) is not even sent.
    let e = c.call_tool("t", None::<()>).await.unwrap_err();
    assert!(matches!(&e, ClientError::Invalid { .. }) && e.code().is_none(), "{e:?}");
}
