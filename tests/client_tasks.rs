//! The client's side of the tasks extension (`io.modelcontextprotocol/tasks`): `Client` against
//! `server::Server`, both eras, in process and over Streamable HTTP (where every `tasks/*` POST
//! must mirror its `taskId` in `Mcp-Name`, which the server checks). A call the server runs as
//! a task ends as a plain call would: its result, the tool's error, the task's JSON-RPC error, or
//! cancelled; input asked inside a task is answered by the client's callbacks with
//! `tasks/update`, within its `InputLimits`; `start_tool` hands the task over.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcpwire::ErrorCode;
use mcpwire::client::{
    CallOptions, Client, ClientBuilder, ClientError, NO_ARGUMENTS, Started, TaskPolling,
};
use mcpwire::http::HttpServer;
use mcpwire::mcp::input_rounds::InputLimits;
use mcpwire::mcp::types::{
    CallToolResult, ElicitAction, ElicitParams, ElicitResult, InputRequest, Raw, TaskStatus,
    TaskSupport, Tool,
};
use mcpwire::peer::{PeerBuilder, RpcError};
use mcpwire::server::{HandlerError, Server};
use tokio_util::sync::CancellationToken;

mod common;

use common::{FORM, LEGACY, MODERN, serve_http};

/// How long the slow tools take: long enough that the server makes a task of them.
const SLOW: Duration = Duration::from_millis(150);

fn server(calls: Arc<AtomicUsize>) -> Server {
    let counted = calls.clone();
    Server::builder("tasks", "1")
        .tool(Tool::new("quick"), |_| async { Ok(CallToolResult::text("quick")) })
        .tool(Tool::new("slow").task_support(TaskSupport::Optional), move |_| {
            let calls = counted.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(SLOW).await;
                Ok(CallToolResult::text("slow done"))
            }
        })
        .tool(Tool::new("forever").task_support(TaskSupport::Optional), |_| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(CallToolResult::text("never"))
        })
        .tool(Tool::new("tool_error").task_support(TaskSupport::Required), |_| async {
            tokio::time::sleep(SLOW).await;
            Err(HandlerError::tool("the job failed"))
        })
        .tool(Tool::new("protocol_error").task_support(TaskSupport::Optional), |_| async {
            tokio::time::sleep(SLOW).await;
            Err(HandlerError::Protocol(RpcError::internal("broke inside")))
        })
        .tool(Tool::new("asks").task_support(TaskSupport::Optional), |call| async move {
            tokio::time::sleep(SLOW).await;
            let a =
                call.ask("who", InputRequest::elicit(&ElicitParams::form("Name?", FORM))).await?;
            let a: ElicitResult<'_> = a.decode()?;
            let name = a.text("name")?.unwrap_or_default().into_owned();
            let b =
                call.ask("again", InputRequest::elicit(&ElicitParams::form("Sure?", FORM))).await?;
            let b: ElicitResult<'_> = b.decode()?;
            let again = b.text("name")?.unwrap_or_default().into_owned();
            Ok(CallToolResult::text(format!("{name}/{again}")))
        })
        .build()
}

fn client(version: &str) -> ClientBuilder {
    Client::builder()
        .protocol_version(version.parse().unwrap())
        .tasks(true)
        .task_polling(TaskPolling::new().start(Duration::from_millis(20)))
        .on_elicit(|asked| async move {
            let name = if asked.get().message == "Name?" { "Ada" } else { "yes" };
            let content = Raw::owned(format!(r#"{{"name":"{name}"}}"#)).unwrap();
            Ok(ElicitResult { action: ElicitAction::Accept, content: Some(content) })
        })
}

fn text(r: &mcpwire::client::Decoded<CallToolResult<'static>>) -> String {
    r.get().content.iter().filter_map(|c| c.as_text()).collect::<Vec<_>>().join(" ")
}

/// Every kind of end, in one era, over a connected client.
async fn every_end(c: &Client) {
    // A tool answered at once is no task.
    let quick = c.start_tool("quick", NO_ARGUMENTS, &CallOptions::new()).await.unwrap();
    assert!(matches!(quick, Started::Done(ref r) if text(r) == "quick"), "{quick:?}");

    // A slow one becomes a task; call_tool hides it.
    let slow = c.start_tool("slow", NO_ARGUMENTS, &CallOptions::new()).await.unwrap();
    let Started::Task(handle) = slow else { panic!("slow was answered at once: {slow:?}") };
    let now = handle.get().await.unwrap();
    assert_eq!(now.get().task.task_id, handle.id());
    assert!(!now.get().task.status.is_terminal() || now.get().task.status == TaskStatus::Completed);
    assert_eq!(text(&handle.wait().await.unwrap()), "slow done");
    assert_eq!(text(&c.call_tool("slow", NO_ARGUMENTS).await.unwrap()), "slow done");

    // Input inside the task, two rounds, answered by the elicitation callback.
    assert_eq!(text(&c.call_tool("asks", NO_ARGUMENTS).await.unwrap()), "Ada/yes");

    // A tool error is the call's tool error; a protocol error is the call's protocol error.
    match c.call_tool("tool_error", NO_ARGUMENTS).await {
        Err(ClientError::Tool(r)) => assert_eq!(text(&r), "the job failed"),
        other => panic!("tool_error: {other:?}"),
    }
    match c.call_tool("protocol_error", NO_ARGUMENTS).await {
        Err(ClientError::Protocol { method, code, message, .. }) => {
            assert_eq!((method.as_str(), code), ("tools/call", ErrorCode::INTERNAL_ERROR));
            assert!(message.contains("broke inside"), "{message}");
        }
        other => panic!("protocol_error: {other:?}"),
    }

    // Cancelled by the call's token: the call ends cancelled, and the server's task too.
    let token = CancellationToken::new();
    let options = CallOptions::new().cancel_on(token.clone());
    let Started::Task(handle) = c.start_tool("forever", NO_ARGUMENTS, &options).await.unwrap()
    else {
        panic!("forever was answered at once");
    };
    let waiting = tokio::spawn(handle.clone().wait());
    tokio::time::sleep(Duration::from_millis(50)).await;
    token.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(10), waiting).await.unwrap().unwrap();
    assert!(matches!(ended, Err(ClientError::Cancelled)), "{ended:?}");
    let status = wait_status(&handle, TaskStatus::Cancelled).await;
    assert_eq!(status, TaskStatus::Cancelled);
    // And its handle's own cancel on an ended task is acknowledged, not an error.
    handle.cancel().await.unwrap();
}

async fn wait_status(handle: &mcpwire::client::TaskHandle, want: TaskStatus) -> TaskStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = handle.get().await.unwrap().get().task.status;
        if now == want || Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_task_ends_as_a_plain_call_would_in_both_eras_in_process() {
    for version in [MODERN, LEGACY] {
        let s = server(Arc::default());
        let c = client(version).connect(s).await.unwrap();
        every_end(&c).await;
    }
}

#[tokio::test]
async fn a_task_ends_as_a_plain_call_would_in_both_eras_over_http() {
    let s = server(Arc::default());
    let served = serve_http(HttpServer::new(PeerBuilder::new()), move || s.handler()).await;
    for version in [MODERN, LEGACY] {
        let c = client(version).connect(served.url()).await.unwrap();
        every_end(&c).await;
    }
}

#[tokio::test]
async fn without_the_extension_the_call_is_answered_at_once_and_a_required_tool_refused() {
    let calls = Arc::new(AtomicUsize::new(0));
    for version in [MODERN, LEGACY] {
        let c = Client::builder()
            .protocol_version(version.parse().unwrap())
            .connect(server(calls.clone()))
            .await
            .unwrap();
        let started = Instant::now();
        let r = c.start_tool("slow", NO_ARGUMENTS, &CallOptions::new()).await.unwrap();
        assert!(matches!(r, Started::Done(ref r) if text(r) == "slow done"), "{r:?}");
        assert!(started.elapsed() >= SLOW);
        match c.call_tool("tool_error", NO_ARGUMENTS).await {
            Err(ClientError::Protocol { code, .. }) => {
                assert_eq!(code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
            }
            other => panic!("{version}: {other:?}"),
        }
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn input_rounds_inside_a_task_are_bounded_by_the_clients_limits() {
    // `asks` asks twice: one round allowed is one too few.
    for version in [MODERN, LEGACY] {
        let c = client(version)
            .input_limits(InputLimits::default().max_rounds(1))
            .connect(server(Arc::default()))
            .await
            .unwrap();
        match c.call_tool("asks", NO_ARGUMENTS).await {
            Err(ClientError::Invalid { reason, .. }) => {
                assert!(reason.contains("after 1 rounds"), "{version}: {reason}");
            }
            other => panic!("{version}: {other:?}"),
        }
        let c = client(version)
            .input_limits(InputLimits::default().max_rounds(2))
            .connect(server(Arc::default()))
            .await
            .unwrap();
        assert_eq!(text(&c.call_tool("asks", NO_ARGUMENTS).await.unwrap()), "Ada/yes");
    }
}

#[tokio::test]
async fn a_task_that_asks_what_the_client_did_not_declare_fails_precisely() {
    // No elicitation callback, so no elicitation capability: the server does not ask, and the
    // task ends failed with -32021 naming what is missing, which the call returns.
    let c = Client::builder().tasks(true).connect(server(Arc::default())).await.unwrap();
    match c.call_tool("asks", NO_ARGUMENTS).await {
        Err(ClientError::Protocol { method, code, message, data }) => {
            assert_eq!(
                (method.as_str(), code),
                ("tools/call", ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY)
            );
            assert!(message.contains("elicitation"), "{message}");
            assert!(data.unwrap_or_default().contains("elicitation"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn many_tasks_at_once_each_end_with_their_own_result() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = client(MODERN).connect(server(calls.clone())).await.unwrap();
    let all: Vec<_> = (0..200)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(async move { c.call_tool("slow", NO_ARGUMENTS).await })
        })
        .collect();
    for t in all {
        assert_eq!(text(&t.await.unwrap().unwrap()), "slow done");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 200);
}
