//! The client the MCP conformance suite drives (`conformance client --command CMD`), on
//! mcpwire's Streamable HTTP client and its era negotiation:
//!
//!     conformance_client URL
//!
//! The suite names the scenario in `MCP_CONFORMANCE_SCENARIO`, the protocol version the run
//! targets in `MCP_CONFORMANCE_PROTOCOL_VERSION` (0.2 suites; without it the client detects the
//! era) and, for some scenarios, what to do in `MCP_CONFORMANCE_CONTEXT` (JSON). Each scenario
//! is one arm of [`run`]; everything protocol-shaped (the `_meta` envelope, the mirrored
//! headers and the tools refused for invalid `x-mcp-header`s, the -32022 retry, the multi
//! round-trip loop, elicitation defaults) is the library's.
//!
//! The skills scenarios (`sep-2640-client-*`) run on the typed [`mcpwire::client::Client`]
//! instead: it lists the skills and, but for `sep-2640-client-no-prefetch` (which only lists),
//! loads the first one, each read verified against its entry; a refused skill is an error.
//!
//! Exits 0 when the scenario's steps all succeeded, 1 (with the reason on stderr) otherwise.

use std::process::ExitCode;
use std::time::Duration;

use mcpwire::RawJson;
use mcpwire::client::InputResolver;
use mcpwire::client::{ClientOptions, Negotiated, negotiate};
use mcpwire::mcp::elicitation::{ELICIT, accept_with_defaults};
use mcpwire::mcp::input_rounds::InputLimits;
use mcpwire::mcp::negotiation::VersionChoice;
use mcpwire::peer::{
    ConnectionTask, Context, Handler, Incoming, PeerBuilder, PeerHandle, Reply, RequestOptions,
    RpcError,
};
use serde_json::{Map, Value, json};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// What the client answers a server's elicitation with, as a server-to-client request
/// (legacy) or as an input request (modern): the form accepted with its defaults.
fn elicit(params: Option<RawJson<'_>>) -> Result<String, String> {
    let params = params.ok_or_else(|| format!("{ELICIT} without params"))?;
    Ok(accept_with_defaults(params, Map::new())?.to_string())
}

/// Answers the server's own requests (legacy sessions).
struct Answers;

impl Handler for Answers {
    async fn request(&self, request: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        match request.method() {
            ELICIT => elicit(request.params()).map(Reply::raw_string).map_err(RpcError::internal),
            other => Err(RpcError::method_not_found(other)),
        }
    }
}

/// Fulfils input requests (modern `InputRequiredResult`s).
struct Inputs;

impl InputResolver for Inputs {
    async fn resolve(&self, method: &str, params: Option<RawJson<'_>>) -> Result<String, String> {
        match method {
            ELICIT => elicit(params),
            other => Err(format!("{other} is not supported by this client")),
        }
    }
}

/// A connected, negotiated client.
struct Client {
    peer: PeerHandle,
    conn: ConnectionTask,
    agreed: Negotiated,
}

/// The protocol version the suite names, else the client's choice.
fn protocol_version() -> VersionChoice {
    std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .ok()
        .and_then(|v| v.parse::<VersionChoice>().ok())
        .unwrap_or_default()
}

impl Client {
    async fn connect(url: &str, scenario: &str) -> Result<Self, Error> {
        let version = protocol_version();
        let mut options =
            ClientOptions::new("mcpwire-conformance-client", env!("CARGO_PKG_VERSION"))
                .version(version);
        options.capabilities = json!({"elicitation": {}}).to_string();
        let builder = PeerBuilder::new().request_timeout(Some(REQUEST_TIMEOUT));
        // `sse-retry` times the client's reconnection GET: a standalone GET stream opened beside
        // it could be taken for that reconnection, so that scenario runs without one.
        let mut client =
            mcpwire::http::HttpClient::new(builder).get_stream(scenario != "sse-retry");
        if scenario.starts_with("auth/") {
            client = client.oauth(oauth()?);
        }
        let (peer, conn) = client.connect(url, Answers)?;
        let agreed = negotiate(&peer, &options, None).await?;
        eprintln!("conformance_client: {:?} era at {}", agreed.era(), agreed.version());
        Ok(Self { peer, conn, agreed })
    }

    /// One request in the agreed era, input rounds fulfilled; the result.
    async fn request(&self, method: &str, params: &Value) -> Result<Value, Error> {
        let params = params.to_string();
        let reply = self
            .agreed
            .request_with_input(
                &self.peer,
                method,
                Some(RawJson::new(&params)),
                RequestOptions::new(),
                &Inputs,
                InputLimits::default(),
            )
            .await?;
        Ok(reply.result_as::<Value>()?)
    }

    /// The tools the server lists (less those the transport refused).
    async fn tools(&self) -> Result<Vec<Value>, Error> {
        let listed = self.request("tools/list", &json!({})).await?;
        Ok(listed["tools"].as_array().cloned().unwrap_or_default())
    }

    async fn call(&self, name: &str, arguments: Value) -> Result<Value, Error> {
        let result =
            self.request("tools/call", &json!({"name": name, "arguments": arguments})).await?;
        eprintln!("conformance_client: {name}: {result}");
        Ok(result)
    }

    /// Closes the connection (a legacy session is deleted), waiting a little for it.
    async fn close(self) {
        self.peer.close();
        let mut conn = self.conn;
        let _ = tokio::time::timeout(Duration::from_secs(3), conn.closed()).await;
    }
}

/// Arguments for a tool: a plain value of each required property's type.
fn sample_arguments(tool: &Value) -> Value {
    let schema = &tool["inputSchema"];
    let mut args = Map::new();
    for name in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("string") => json!("value"),
            Some("integer") => json!(1),
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            _ => continue,
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

/// What to do in the scenario the suite's context names: the tool calls it lists.
fn context_tool_calls() -> Vec<(String, Value)> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    context["toolCalls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["name"].as_str()?.to_owned(), c["arguments"].clone())))
        .collect()
}

/// Calls every tool listed, each with [`sample_arguments`].
async fn call_each_tool(client: &Client) -> Result<(), Error> {
    for tool in client.tools().await? {
        let name = tool["name"].as_str().ok_or("a tool without a name")?;
        client.call(name, sample_arguments(&tool)).await?;
    }
    Ok(())
}

/// The metadata document URL the suite's authorization servers take as a client id where
/// they support Client ID Metadata Documents (the suite's own fixed URL).
const CIMD_CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Where the suite's authorization servers send the user back (never listened on: the
/// user-agent step reads the redirect itself).
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The OAuth client of the `auth/*` scenarios: the authorization step headless
/// ([`FollowRedirect`](mcpwire::auth::FollowRedirect)), a pre-registered client where the
/// context gives one, else the metadata document or dynamic registration.
fn oauth() -> Result<mcpwire::auth::OAuth, Error> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let mut b = mcpwire::auth::OAuth::builder(
        "mcpwire-conformance-client",
        REDIRECT_URI,
        mcpwire::auth::FollowRedirect,
    )
    .metadata_url(CIMD_CLIENT_METADATA_URL);
    if let Some(id) = context["client_id"].as_str() {
        b = b.client(id, context["client_secret"].as_str().map(str::to_owned));
    }
    Ok(b.build()?)
}

/// The steps of each scenario.
async fn run(scenario: &str, client: &Client) -> Result<(), Error> {
    match scenario {
        // The handshake (or the per-request envelope) is the whole test.
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => {
            client.tools().await?;
        }
        "tools_call" => {
            client.tools().await?;
            client.call("add_numbers", json!({"a": 5, "b": 3})).await?;
        }
        // Every tool the transport kept is called, so the invalid ones it refused show.
        // `sse-retry`: the server closes the call's event stream; the HTTP client resumes it
        // with Last-Event-ID after the stream's `retry`, and the call completes.
        "elicitation-sep1034-client-defaults"
        | "sep-2322-client-request-state"
        | "http-invalid-tool-headers"
        | "sse-retry" => call_each_tool(client).await?,
        "http-standard-headers" => {
            call_each_tool(client).await?;
            let listed = client.request("resources/list", &json!({})).await?;
            for r in listed["resources"].as_array().into_iter().flatten() {
                client.request("resources/read", &json!({"uri": r["uri"]})).await?;
            }
            let listed = client.request("prompts/list", &json!({})).await?;
            for p in listed["prompts"].as_array().into_iter().flatten() {
                client.request("prompts/get", &json!({"name": p["name"]})).await?;
            }
        }
        "http-custom-headers" => {
            client.tools().await?;
            for (name, arguments) in context_tool_calls() {
                client.call(&name, arguments).await?;
            }
        }
        "json-schema-2020-12-preservation" => {
            let tools = client.tools().await?;
            let focal = tools
                .iter()
                .find(|t| t["name"] == "json_schema_2020_12_tool")
                .ok_or("json_schema_2020_12_tool is not listed")?;
            client.call("json_schema_echo", json!({"schema": focal["inputSchema"]})).await?;
        }
        // Authorized (the OAuth flow ran on the first 401), then a list and a call.
        auth if auth.starts_with("auth/") => {
            client.tools().await?;
            client.call("test-tool", json!({})).await?;
        }
        // A new scenario is one more arm here and its line in tests/conformance/expected.toml
        // (which is what run.sh runs).
        other => return Err(format!("unknown scenario {other:?}").into()),
    }
    Ok(())
}

/// The skills scenarios: the listing (which reads no skill file), then, to load a skill, its
/// `SKILL.md` verified (size, digest, front matter) and, only once it passed, its supporting
/// files, each verified too.
async fn skills(url: &str, scenario: &str) -> Result<(), Error> {
    let client = mcpwire::client::Client::builder()
        .name("mcpwire-conformance-client", env!("CARGO_PKG_VERSION"))
        .protocol_version(protocol_version())
        .timeout(Some(REQUEST_TIMEOUT))
        .connect(url)
        .await?;
    let outcome = async {
        let entries = client.list_skills().await?;
        eprintln!("conformance_client: {} skill(s) listed", entries.len());
        if scenario == "sep-2640-client-no-prefetch" {
            return Ok(());
        }
        let entry = entries.first().ok_or("the server lists no skill")?;
        let loaded = client.load_skill(entry).await?;
        eprintln!("conformance_client: loaded {}", entry.uri);
        for file in loaded.entry.files().unwrap_or_default() {
            if file.uri != entry.uri {
                client.read_skill_file(&loaded, &file.uri).await?;
                eprintln!("conformance_client: read {}", file.uri);
            }
        }
        Ok::<(), Error>(())
    }
    .await;
    client.close().await;
    outcome
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance_client URL (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    if scenario.starts_with("sep-2640-client-") {
        return match skills(&url, &scenario).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("conformance_client: {scenario}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let client = match Client::connect(&url, &scenario).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("conformance_client: {scenario}: connecting to {url} failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = run(&scenario, &client).await;
    client.close().await;
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance_client: {scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}
