//! A small MCP client on mcpwire's Streamable HTTP client, for the conformance suite's
//! `sse-retry` client scenario (SEP-1699, 2025-11-25):
//!
//!     conformance client --command "target/debug/examples/sse_retry_client" --scenario sse-retry
//!
//! It connects to the URL given as its last argument, initializes a session (2025-11-25),
//! lists the tools and calls the first one (the scenario offers `test_reconnection`, whose
//! POST stream the server closes after a priming event with `retry: 500`; the client must wait
//! that long, resume with `GET` and `Last-Event-ID`, and get the result there), prints the
//! result, closes the session and exits 0; on any failure it says why on stderr and exits 1.
//!
//! It opens no GET stream of its own (`get_stream(false)`): the scenario takes the time of the
//! last GET it saw for the reconnection, and a standalone stream racing the tool call could be
//! taken for it. The resumption GET does not depend on it.

use std::process::ExitCode;
use std::time::Duration;

use mcpwire::RawJson;
use mcpwire::http::HttpClient;
use mcpwire::peer::{NO_PARAMS, NoHandler, PeerBuilder};
use serde_json::{Value, json};

/// Bound for the whole exchange.
const DEADLINE: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: sse_retry_client [ARGS...] URL");
        return ExitCode::from(2);
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sse_retry_client: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(async { tokio::time::timeout(DEADLINE, run(&url)).await }) {
        Ok(Ok(result)) => {
            println!("{result}");
            ExitCode::SUCCESS
        }
        Ok(Err(why)) => {
            eprintln!("sse_retry_client: {why}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("sse_retry_client: no result within {DEADLINE:?}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str) -> Result<Value, String> {
    let client = HttpClient::new(PeerBuilder::new()).get_stream(false);
    let (peer, mut conn) = client.connect(url, NoHandler).map_err(|e| e.to_string())?;
    let init = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "mcpwire-sse-retry-client", "version": env!("CARGO_PKG_VERSION")},
    })
    .to_string();
    peer.request("initialize", Some(RawJson::new(&init)))
        .await
        .map_err(|e| format!("initialize: {e}"))?;
    peer.notify("notifications/initialized", NO_PARAMS)
        .await
        .map_err(|e| format!("notifications/initialized: {e}"))?;
    let list =
        peer.request("tools/list", NO_PARAMS).await.map_err(|e| format!("tools/list: {e}"))?;
    let list: Value = list.result_as().map_err(|e| format!("tools/list: {e}"))?;
    let tool = list["tools"][0]["name"]
        .as_str()
        .ok_or_else(|| format!("tools/list names no tool: {list}"))?
        .to_owned();
    let call = json!({"name": tool, "arguments": {}}).to_string();
    let result = peer
        .request("tools/call", Some(RawJson::new(&call)))
        .await
        .map_err(|e| format!("tools/call {tool}: {e}"))?;
    let result: Value = result.result_as().map_err(|e| format!("tools/call {tool}: {e}"))?;
    if result["isError"] == true {
        return Err(format!("tools/call {tool} failed: {result}"));
    }
    peer.close();
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
    Ok(result)
}
