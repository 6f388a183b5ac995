//! Modern (2026-07-28) requests over the client transport, and the era decision of
//! `mcpwire::client::negotiate` over HTTP, against hand-made servers with fixed answers.

use mcpwire::client::{ClientOptions, NegotiateError, Negotiated, negotiate};
use mcpwire::mcp::Era;
use mcpwire::mcp::negotiation::VersionChoice;

use crate::harness::*;

/// What a fixed-answer server says to one POST: status line, content type, body.
type Answer = (&'static str, &'static str, String);

/// An HTTP/1.1 server that answers each POST with `answer(method, body)`, one request per
/// connection, and keeps every request's head (lower-cased) and body.
struct Fixed {
    server: ByHand,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Fixed {
    async fn start(answer: fn(&str, &Value) -> Answer) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        let server = ByHand::start(move |sock| exchange(sock, answer, kept.clone())).await;
        Self { server, seen }
    }

    fn url(&self) -> &str {
        &self.server.url
    }

    fn seen(&self) -> Vec<(String, Value)> {
        self.seen.lock().unwrap().clone()
    }

    /// The head of the request whose body's method is `method`.
    fn head_of(&self, method: &str) -> String {
        let seen = self.seen();
        seen.iter().find(|(_, b)| b["method"] == method).map(|(h, _)| h.clone()).unwrap_or_else(
            || panic!("no {method} among {:?}", seen.iter().map(|(_, b)| b).collect::<Vec<_>>()),
        )
    }
}

/// One connection of [`Fixed`]: the request, kept, and its answer.
async fn exchange(
    mut sock: TcpStream,
    answer: fn(&str, &Value) -> Answer,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
) {
    let Some((head, body)) = read_request(&mut sock).await else { return };
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    seen.lock().unwrap().push((head.to_ascii_lowercase(), msg.clone()));
    if msg["method"] == "never" {
        // No answer; the connection kept until the client ends it.
        return hold_open(sock).await;
    }
    let (status, kind, body) = if head.starts_with("POST ") {
        match msg["method"].as_str() {
            Some(m) if !msg["id"].is_null() => answer(m, &msg),
            _ => ("202 Accepted", "text/plain", String::new()),
        }
    } else {
        ("405 Method Not Allowed", "text/plain", String::new())
    };
    let _ = sock.write_all(closing_answer(status, kind, "", &body).as_bytes()).await;
    let _ = sock.shutdown().await;
}

fn result(msg: &Value, result: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string()
}

fn error(id: &Value, code: i64, message: &str, data: Option<Value>) -> String {
    let mut e = json!({"code": code, "message": message});
    if let Some(d) = data {
        e["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": e}).to_string()
}

const OK: &str = "200 OK";
const JSON: &str = "application/json";

/// 200 with the legacy `initialize` result.
fn initialized(msg: &Value) -> Answer {
    (OK, JSON, format!(r#"{{"jsonrpc":"2.0","id":{},"result":{INIT_RESULT}}}"#, msg["id"]))
}

/// 200 with `{"method": m}` as the result: what these servers say to any other request.
fn named(msg: &Value, m: &str) -> Answer {
    (OK, JSON, result(msg, &json!({ "method": m })))
}

/// 400 with -32022: the server supports none of the versions the request asked for, only
/// `supported`.
fn unsupported(id: &Value, supported: &[&str]) -> Answer {
    let data = json!({"supported": supported, "requested": "2026-07-28"});
    ("400 Bad Request", JSON, error(id, -32022, "Unsupported protocol version", Some(data)))
}

/// A client of `fake`, not yet past any handshake.
fn client_of(fake: &Fixed) -> (PeerHandle, ConnectionTask) {
    connect(&PeerBuilder::new(), fake.url(), NoHandler).unwrap()
}

/// A modern server: `server/discover`, a `tools/list` with one tool whose annotation is
/// invalid, `tools/call`, and errors as a modern server sends them.
fn modern(method: &str, msg: &Value) -> Answer {
    let id = &msg["id"];
    match method {
        "server/discover" => (
            OK,
            JSON,
            result(
                msg,
                &json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private"}),
            ),
        ),
        "tools/list" => (
            OK,
            JSON,
            result(
                msg,
                &json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": [
                    {"name": "good", "inputSchema": {"type": "object", "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "n": {"type": "integer", "x-mcp-header": "N"},
                        "q": {"type": "string"}}}},
                    {"name": "plain", "inputSchema": {"type": "object"}},
                    {"name": "bad", "inputSchema": {"type": "object", "properties": {
                        "x": {"type": "number", "x-mcp-header": "X"}}}}
                ]}),
            ),
        ),
        "tools/call" => (
            OK,
            JSON,
            result(
                msg,
                &json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}),
            ),
        ),
        "mismatch_null_id" => (
            "400 Bad Request",
            JSON,
            error(&Value::Null, -32020, "Header mismatch: Mcp-Name is required", None),
        ),
        "unsupported" => unsupported(id, &["2026-07-28"]),
        _ => ("404 Not Found", JSON, error(id, -32601, "Method not found", None)),
    }
}

fn options() -> ClientOptions {
    ClientOptions::new("http-client-test", "1").probe_timeout(Duration::from_secs(5))
}

/// A client of `fake`, and what `negotiate` with [`options`] made of the server.
async fn negotiated(fake: &Fixed) -> (PeerHandle, ConnectionTask, Negotiated) {
    let (peer, conn) = client_of(fake);
    let agreed = within(negotiate(&peer, &options(), None)).await.unwrap();
    (peer, conn, agreed)
}

async fn modern_client(fake: &Fixed) -> (PeerHandle, ConnectionTask, Negotiated) {
    let (peer, conn, agreed) = negotiated(fake).await;
    assert_eq!(agreed.era(), Era::Modern);
    assert_eq!(agreed.version(), "2026-07-28");
    (peer, conn, agreed)
}

fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':').map(str::trim))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_requests_carry_the_mirrored_headers_and_no_session() {
    let fake = Fixed::start(modern).await;
    let (peer, _conn, agreed) = modern_client(&fake).await;
    let o = RequestOptions::new;
    within(agreed.request(&peer, "tools/list", NO_PARAMS, o())).await.unwrap();
    let args = json!({"name": "good", "arguments": {"region": "héllo wörld", "n": 42, "q": "x"}});
    let r = within(agreed.request(&peer, "tools/call", Some(Json(&args)), o())).await.unwrap();
    assert_eq!(r.result_as::<Value>().unwrap()["content"][0]["text"], "ok");
    let plain = json!({"name": "plain", "arguments": {"region": "r"}});
    within(agreed.request(&peer, "tools/call", Some(Json(&plain)), o())).await.unwrap();

    let discover = fake.head_of("server/discover");
    assert_eq!(header(&discover, "mcp-protocol-version"), Some("2026-07-28"), "{discover}");
    assert_eq!(header(&discover, "mcp-method"), Some("server/discover"), "{discover}");
    assert_eq!(header(&discover, "mcp-name"), None, "{discover}");
    let seen = fake.seen();
    let calls: Vec<_> = seen.iter().filter(|(_, b)| b["method"] == "tools/call").collect();
    assert_eq!(calls.len(), 2);
    let (good, body) = &calls[0];
    assert_eq!(header(good, "mcp-method"), Some("tools/call"), "{good}");
    assert_eq!(header(good, "mcp-name"), Some("good"), "{good}");
    // Not plain ASCII: the base64 form (the kept heads are lower-cased).
    let region = "=?base64?aMOpbGxvIHfDtnJsZA==?=".to_ascii_lowercase();
    assert_eq!(header(good, "mcp-param-region"), Some(region.as_str()), "{good}");
    assert_eq!(header(good, "mcp-param-n"), Some("42"), "{good}");
    let meta = &body["params"]["_meta"];
    assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28", "{body}");
    assert_eq!(meta["io.modelcontextprotocol/clientCapabilities"], json!({}), "{body}");
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "http-client-test", "{body}");
    assert_eq!(body["params"]["arguments"]["n"], 42, "{body}");
    // A tool without annotations gets no Mcp-Param header, whatever its arguments.
    let (plain, _) = &calls[1];
    assert_eq!(header(plain, "mcp-name"), Some("plain"), "{plain}");
    assert!(!plain.contains("mcp-param-"), "{plain}");

    peer.close();
    eventually("the connection closed", || peer.is_closed()).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (head, body) in fake.seen() {
        assert!(head.starts_with("post "), "only POSTs (no GET stream, no DELETE): {head}");
        assert!(!head.contains("mcp-session-id"), "{head}");
        assert!(body["method"] != "initialize", "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_with_invalid_annotations_are_left_out_of_tools_list() {
    let fake = Fixed::start(modern).await;
    let (peer, _conn, agreed) = modern_client(&fake).await;
    let r = within(agreed.request(&peer, "tools/list", NO_PARAMS, RequestOptions::new()))
        .await
        .unwrap();
    let v: Value = r.result_as().unwrap();
    let names: Vec<&str> =
        v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["good", "plain"], "{v}");
    // The rest of the result is as the server sent it.
    assert_eq!(v["cacheScope"], "private", "{v}");
    assert_eq!(v["tools"][0]["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region");
    // A legacy request's tools/list is not the transport's business: carried as is.
    let raw = within(peer.request("tools/list", NO_PARAMS)).await;
    // (the fake answers it like any other; a legacy request has no `_meta`)
    let v: Value = raw.unwrap().result_as().unwrap();
    assert_eq!(v["tools"].as_array().unwrap().len(), 3, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4xx_with_a_modern_error_body_reaches_the_caller_as_that_error() {
    let fake = Fixed::start(modern).await;
    let (peer, _conn, agreed) = modern_client(&fake).await;
    let o = RequestOptions::new;
    // The id the server could not read (`null`) is the request's own.
    let e = rpc_error(within(agreed.request(&peer, "mismatch_null_id", NO_PARAMS, o())).await);
    assert_eq!(e.code, ErrorCode::HEADER_MISMATCH, "{e}");
    assert_eq!(e.message, "Header mismatch: Mcp-Name is required");
    // -32022 keeps its data; with no other version offered it is not retried.
    let e = rpc_error(within(agreed.request(&peer, "unsupported", NO_PARAMS, o())).await);
    assert_eq!(e.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "{e}");
    let data: Value = serde_json::from_str(e.data().unwrap().get()).unwrap();
    assert_eq!(data["supported"], json!(["2026-07-28"]));
    assert_eq!(fake.seen().iter().filter(|(_, b)| b["method"] == "unsupported").count(), 1);
    let e = rpc_error(within(agreed.request(&peer, "nothing/here", NO_PARAMS, o())).await);
    assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND, "{e}");
    // The peer goes on.
    within(agreed.request(&peer, "tools/list", NO_PARAMS, o())).await.unwrap();
}

/// A server that answers the probe with a 400 whose body is not a JSON-RPC error is legacy:
/// the client falls back to `initialize` and then speaks the legacy era on the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_falls_back_to_initialize_on_a_4xx_without_a_modern_error() {
    fn legacy(method: &str, msg: &Value) -> Answer {
        match method {
            "server/discover" => {
                ("400 Bad Request", "text/plain", "Bad Request: no session".into())
            }
            "initialize" => initialized(msg),
            m => named(msg, m),
        }
    }
    let fake = Fixed::start(legacy).await;
    let (peer, _conn, agreed) = negotiated(&fake).await;
    assert_eq!(agreed.era(), Era::Legacy);
    assert_eq!(agreed.version(), "2025-11-25");
    let r = within(agreed.request(&peer, "tools/list", NO_PARAMS, RequestOptions::new())).await;
    assert_eq!(r.unwrap().result_as::<Value>().unwrap(), json!({"method": "tools/list"}));
    let list = fake.head_of("tools/list");
    assert_eq!(header(&list, "mcp-protocol-version"), Some("2025-11-25"), "{list}");
    assert_eq!(header(&list, "mcp-method"), None, "{list}");
    let seen = fake.seen();
    let body = &seen.iter().find(|(_, b)| b["method"] == "tools/list").unwrap().1;
    assert!(body.get("params").is_none(), "a legacy request carries no _meta: {body}");
    assert!(seen.iter().any(|(_, b)| b["method"] == "notifications/initialized"));
}

/// The legacy fixed-answer server of `fixed_answers.rs` answers `server/discover` with a
/// result that is not a DiscoverResult: legacy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_falls_back_on_a_result_that_is_not_a_discover_result() {
    fn legacy(method: &str, msg: &Value) -> Answer {
        match method {
            "initialize" => initialized(msg),
            m => named(msg, m),
        }
    }
    let fake = Fixed::start(legacy).await;
    let (_peer, _conn, agreed) = negotiated(&fake).await;
    assert_eq!(agreed.era(), Era::Legacy);
}

/// -32022 to the probe identifies a modern server: with only a legacy version in common the
/// client speaks that one (through `initialize`), and with none it says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_version_to_the_probe_is_a_modern_server() {
    fn only_legacy(method: &str, msg: &Value) -> Answer {
        match method {
            "server/discover" => unsupported(&msg["id"], &["2099-01-01", "2025-06-18"]),
            "initialize" => (
                OK,
                JSON,
                result(
                    msg,
                    &json!({"protocolVersion": "2025-06-18",
                "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}),
                ),
            ),
            m => named(msg, m),
        }
    }
    let fake = Fixed::start(only_legacy).await;
    let (_peer, _conn, agreed) = negotiated(&fake).await;
    assert_eq!((agreed.era(), agreed.version().as_str()), (Era::Legacy, "2025-06-18"));
    let init = fake.seen().into_iter().find(|(_, b)| b["method"] == "initialize").unwrap().1;
    assert_eq!(init["params"]["protocolVersion"], "2025-06-18", "{init}");

    fn none(_: &str, msg: &Value) -> Answer {
        unsupported(&msg["id"], &["2099-01-01"])
    }
    let fake = Fixed::start(none).await;
    let (peer, _conn) = client_of(&fake);
    match within(negotiate(&peer, &options(), None)).await {
        Err(NegotiateError::NoMutualVersion { supported, .. }) => {
            assert_eq!(supported, ["2099-01-01"])
        }
        other => panic!("no mutual version expected, got {other:?}"),
    }
    assert!(fake.seen().iter().all(|(_, b)| b["method"] != "initialize"));
}

/// A fixed modern version probes too and is not cached; `auto`'s finding is cached per target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_version_is_not_cached_and_auto_is_cached_per_target() {
    let fake = Fixed::start(modern).await;
    let probes = || fake.seen().iter().filter(|(_, b)| b["method"] == "server/discover").count();
    let (peer, _conn) = client_of(&fake);
    let fixed = options().version("2026-07-28".parse::<VersionChoice>().unwrap());
    for round in 1..=2 {
        let agreed = within(negotiate(&peer, &fixed, Some(fake.url()))).await.unwrap();
        assert_eq!(agreed.era(), Era::Modern);
        assert!(!agreed.from_cache());
        assert_eq!(probes(), round);
    }
    let first = within(negotiate(&peer, &options(), Some(fake.url()))).await.unwrap();
    assert!(!first.from_cache());
    assert!(first.server().unwrap().contains("supportedVersions"));
    let again = within(negotiate(&peer, &options(), Some(fake.url()))).await.unwrap();
    assert!(again.from_cache());
    assert_eq!(again.era(), Era::Modern);
    assert_eq!(probes(), 3);
}

/// A fixed modern version against a legacy server fails at the probe, with no `initialize`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_modern_version_fails_against_a_legacy_server() {
    fn legacy(method: &str, msg: &Value) -> Answer {
        match method {
            "server/discover" => (
                "400 Bad Request",
                JSON,
                error(&Value::Null, -32000, "Bad Request: No valid session ID provided", None),
            ),
            m => named(msg, m),
        }
    }
    let fake = Fixed::start(legacy).await;
    let (peer, _conn) = client_of(&fake);
    let fixed = options().version("2026-07-28".parse::<VersionChoice>().unwrap());
    match within(negotiate(&peer, &fixed, None)).await {
        Err(NegotiateError::NotModern(why)) => assert!(why.contains("-32000"), "{why}"),
        other => panic!("NotModern expected, got {other:?}"),
    }
    assert!(fake.seen().iter().all(|(_, b)| b["method"] == "server/discover"));
}

/// The same when the server answers with event streams: annotations learnt and invalid tools
/// left out from a `tools/list` result that came as an event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_list_in_an_event_stream_is_read_the_same() {
    fn modern_sse(method: &str, msg: &Value) -> Answer {
        match modern(method, msg) {
            (OK, _, body) => (OK, "text/event-stream", format!("event: message\ndata: {body}\n\n")),
            other => other,
        }
    }
    let fake = Fixed::start(modern_sse).await;
    let (peer, _conn, agreed) = modern_client(&fake).await;
    let r = within(agreed.request(&peer, "tools/list", NO_PARAMS, RequestOptions::new())).await;
    let v: Value = r.unwrap().result_as().unwrap();
    let names: Vec<&str> =
        v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["good", "plain"], "{v}");
    let args = json!({"name": "good", "arguments": {"region": "eu", "n": -7}});
    within(agreed.request(&peer, "tools/call", Some(Json(&args)), RequestOptions::new()))
        .await
        .unwrap();
    let call = fake.head_of("tools/call");
    assert_eq!(header(&call, "mcp-param-region"), Some("eu"), "{call}");
    assert_eq!(header(&call, "mcp-param-n"), Some("-7"), "{call}");
}

/// An annotated argument its declared type does not allow cannot be mirrored: the request
/// fails at once with -32020 and is not sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_argument_that_cannot_be_mirrored_fails_before_it_is_sent() {
    let fake = Fixed::start(modern).await;
    let (peer, _conn, agreed) = modern_client(&fake).await;
    within(agreed.request(&peer, "tools/list", NO_PARAMS, RequestOptions::new())).await.unwrap();
    for bad in [json!({"region": 5}), json!({"n": 1.5}), json!({"n": "7"})] {
        let args = json!({"name": "good", "arguments": bad});
        let r =
            within(agreed.request(&peer, "tools/call", Some(Json(&args)), RequestOptions::new()));
        let e = rpc_error(r.await);
        assert_eq!(e.code, ErrorCode::HEADER_MISMATCH, "{bad}: {e}");
    }
    assert!(fake.seen().iter().all(|(_, b)| b["method"] != "tools/call"), "{:?}", fake.seen());
}

/// In the modern era a cancelled request's POST is ended, and no `notifications/cancelled`
/// is POSTed (the specification defines none over HTTP).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_cancellation_ends_the_post_and_sends_no_notification() {
    let fake = Fixed::start(modern).await;
    let client = HttpClient::new(PeerBuilder::new()).max_concurrent_posts(1);
    let (peer, _conn) = client.connect(fake.url(), NoHandler).unwrap();
    let agreed = within(negotiate(&peer, &options(), None)).await.unwrap();
    let short = RequestOptions::new().timeout(Some(Duration::from_millis(200)));
    for _ in 0..3 {
        let r = within(agreed.request(&peer, "never", NO_PARAMS, short.clone())).await;
        assert!(matches!(r, Err(RequestError::Timeout)), "{r:?}");
    }
    // One POST slot: the ended POSTs gave theirs back.
    within(agreed.request(&peer, "tools/list", NO_PARAMS, RequestOptions::new())).await.unwrap();
    let seen = fake.seen();
    assert_eq!(seen.iter().filter(|(_, b)| b["method"] == "never").count(), 3);
    assert!(seen.iter().all(|(_, b)| b["method"] != "notifications/cancelled"), "{seen:?}");
}
