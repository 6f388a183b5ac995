//! The resource-server guard (`HttpServer::auth`): the protected resource metadata at its
//! well-known paths, 401 and 403 with their challenges before any session is opened, the
//! caller's principal in every handler (a legacy session's and each stateless request's), a
//! session refused to another caller, and a flood of bad tokens that leaves the server serving.

#![cfg(feature = "oauth")]

use mcpwire::auth::Challenge;
use mcpwire::auth::resource::{JwtValidator, ResourceServer};

use crate::common::jwt::{Issuer, now};
use crate::harness::*;

const ISS: &str = "https://as.example";
const MODERN: &str = "2026-07-28";

/// Answers `initialize`, `ping` and `whoami` (the principal its context holds).
struct WhoAmI;

impl Handler for WhoAmI {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "initialize" => Ok(Reply::raw(
                r#"{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"who","version":"1"}}"#,
            )),
            "ping" => Ok(Reply::empty()),
            "whoami" => {
                let p = cx.principal();
                Reply::json(&json!({
                    "sub": p.and_then(|p| p.subject.clone()),
                    "scopes": p.map(|p| p.scopes.clone()),
                }))
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

struct Guarded {
    served: Served,
    issuer: Issuer,
    resource: String,
}

/// A guarded server whose tokens `issuer` signs, needing the scope `mcp` on every request.
async fn guarded() -> Guarded {
    let issuer = Issuer::new(ISS);
    // The resource URI is known before the port: tests name it, as a proxy's public URL would be.
    let resource = "https://mcp.example/mcp".to_owned();
    let v = JwtValidator::builder(ISS, &resource).jwks_json(&issuer.jwks()).build().unwrap();
    let rs = ResourceServer::new(&resource, v).authorization_server(ISS).require_scope("mcp");
    let server = HttpServer::new(PeerBuilder::new()).auth(rs);
    let served = serve_with(server, |_| WhoAmI).await;
    Guarded { served, issuer, resource }
}

impl Guarded {
    fn token(&self, sub: &str) -> String {
        self.issuer.token(&self.resource, sub, "mcp", json!({}))
    }

    async fn client(&self, token: Option<String>) -> Client {
        let mut c = Client::connect(self.served.addr).await;
        c.token = token;
        c
    }
}

fn whoami(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "whoami"}).to_string()
}

/// A stateless `whoami`, with the headers that mirror it.
fn modern_whoami(c: &Client, id: i64) -> Request<crate::harness::Body> {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "whoami", "params": {"_meta": meta}});
    c.to(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, BOTH)
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", "whoami")
        .body(full(body.to_string()))
        .unwrap()
}

fn challenge(a: &Answer) -> Challenge {
    let h = a.header("www-authenticate").unwrap_or_else(|| panic!("no challenge: {a:?}"));
    Challenge::parse(h).unwrap()
}

#[tokio::test]
async fn the_metadata_is_served_at_its_well_known_paths() {
    let g = guarded().await;
    let mut c = g.client(None).await;
    for path in
        ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
    {
        let req = Request::builder().uri(path).header(header::HOST, "x").body(empty()).unwrap();
        let a = c.call(req).await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {a:?}");
        assert_eq!(
            a.json(),
            json!({"resource": g.resource, "authorization_servers": [ISS],
                   "scopes_supported": ["mcp"], "bearer_methods_supported": ["header"]})
        );
    }
    let req = Request::builder()
        .uri("/.well-known/oauth-protected-resource/elsewhere")
        .header(header::HOST, "x")
        .body(empty())
        .unwrap();
    assert_eq!(c.call(req).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn no_token_a_bad_one_or_too_few_scopes_open_no_session() {
    let g = guarded().await;
    let prm = "https://mcp.example/.well-known/oauth-protected-resource/mcp";

    let mut c = g.client(None).await;
    let a = c.initialize("2025-11-25").await;
    a.assert_error(StatusCode::UNAUTHORIZED, -32000, Value::Null);
    let ch = challenge(&a);
    assert_eq!(ch.resource_metadata.as_deref(), Some(prm));
    assert_eq!(ch.scope.as_deref(), Some("mcp"));
    assert_eq!(ch.error, None);

    let expired = g.issuer.token(&g.resource, "alice", "mcp", json!({"exp": now() - 3600}));
    let other_audience = g.issuer.token("https://other.example/mcp", "alice", "mcp", json!({}));
    let forged = Issuer::new(ISS).token(&g.resource, "alice", "mcp", json!({}));
    for bad in [expired, other_audience, forged, "garbage".to_owned()] {
        let mut c = g.client(Some(bad)).await;
        let a = c.initialize("2025-11-25").await;
        a.assert_error(StatusCode::UNAUTHORIZED, -32000, Value::Null);
        assert_eq!(challenge(&a).error.as_deref(), Some("invalid_token"));
        let a = c.call(modern_whoami(&c, 1)).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{a:?}");
    }

    let mut c = g.client(Some(g.issuer.token(&g.resource, "alice", "read", json!({})))).await;
    let a = c.initialize("2025-11-25").await;
    a.assert_error(StatusCode::FORBIDDEN, -32000, Value::Null);
    let ch = challenge(&a);
    assert_eq!(ch.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(ch.scope.as_deref(), Some("read mcp"));

    assert_eq!(g.served.server.stats().sessions_started, 0);
}

#[tokio::test]
async fn a_token_in_the_query_string_is_refused() {
    let g = guarded().await;
    let token = g.token("alice");
    let mut c = g.client(Some(token.clone())).await;
    let req = Request::builder()
        .method(Method::POST)
        .uri(format!("/mcp?access_token={token}"))
        .header(header::HOST, "x")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, BOTH)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(full(whoami(1)))
        .unwrap();
    c.call(req).await.assert_error(StatusCode::BAD_REQUEST, -32000, Value::Null);
}

#[tokio::test]
async fn handlers_see_the_caller_and_a_session_is_its_openers_only() {
    let g = guarded().await;
    let mut alice = g.client(Some(g.token("alice"))).await;
    assert_eq!(alice.initialize("2025-11-25").await.status, StatusCode::OK);
    let a = alice.post(whoami(1)).await;
    assert_eq!(a.json()["result"], json!({"sub": "alice", "scopes": ["mcp"]}));

    // Bob with Alice's session id: as if it did not exist, for every method.
    let mut bob = alice.beside().await;
    bob.token = Some(g.token("bob"));
    bob.post(whoami(2)).await.assert_error(StatusCode::NOT_FOUND, -32001, Value::Null);
    let get = bob.to(Method::GET).header(header::ACCEPT, "text/event-stream").body(empty());
    assert_eq!(bob.call(get.unwrap()).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        bob.call(bob.to(Method::DELETE).body(empty()).unwrap()).await.status,
        StatusCode::NOT_FOUND
    );
    // Alice's session goes on, and a new token of hers (a refresh) keeps it.
    alice.token = Some(g.issuer.token(&g.resource, "alice", "mcp", json!({"jti": "second"})));
    assert_eq!(alice.post(whoami(3)).await.json()["result"]["sub"], "alice");

    // Stateless requests: each sees its own caller, on peers that serve one after another.
    let mut c = g.client(None).await;
    for (i, who) in ["carol", "dave", "carol", "erin"].into_iter().enumerate() {
        c.token = Some(g.token(who));
        let a = c.call(modern_whoami(&c, i as i64)).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(a.json()["result"]["sub"], who);
    }
}

#[tokio::test]
async fn a_flood_of_bad_tokens_leaves_the_server_serving() {
    let g = guarded().await;
    let good = g.token("alice");
    let forger = Issuer::new(ISS);
    // Four connections send 2,500 requests each with tokens that are well formed and signed,
    // by the wrong key: each costs a signature check, none is remembered.
    let mut floods = Vec::new();
    for n in 0..4 {
        let mut c = g.client(None).await;
        let forged: Vec<String> = (0..8)
            .map(|i| forger.token(&g.resource, &format!("mallory-{n}-{i}"), "mcp", json!({})))
            .collect();
        floods.push(tokio::spawn(async move {
            for i in 0..2_500 {
                c.token = Some(forged[i % forged.len()].clone());
                let a = c.call(modern_whoami(&c, i as i64)).await;
                assert_eq!(a.status, StatusCode::UNAUTHORIZED);
            }
        }));
    }
    // Meanwhile a legitimate client is served, each time within a second.
    let mut c = g.client(Some(good)).await;
    for i in 0..20 {
        let a = timeout(Duration::from_secs(1), c.call(modern_whoami(&c, i))).await;
        let a = a.expect("a legitimate request is served within a second during the flood");
        assert_eq!(a.json()["result"]["sub"], "alice");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for f in floods {
        f.await.unwrap();
    }
}

/// Scopes per tool, declared at registration: a tool the token's scopes do not cover is refused
/// 403 `insufficient_scope` (asking for the union), and hidden from `tools/list` when the host
/// asks, in both eras.
#[tokio::test]
async fn a_scoped_tool_needs_its_scope_and_is_listed_only_to_those_who_have_it() {
    use mcpwire::mcp::types::{CallToolResult, Tool};
    use mcpwire::server::{Scoped, Server};

    let issuer = Issuer::new(ISS);
    let resource = "https://mcp.example/mcp";
    let v = JwtValidator::builder(ISS, resource).jwks_json(&issuer.jwks()).build().unwrap();
    let rs = ResourceServer::new(resource, v).authorization_server(ISS).require_scope("mcp");
    let mcp = Server::builder("scoped", "1")
        .tool(Tool::new("echo"), |_| async { Ok(CallToolResult::text("echo")) })
        .tool(Tool::new("purge"), |call| async move {
            let who = call.principal().and_then(|p| p.subject.clone()).unwrap_or_default();
            Ok(CallToolResult::text(format!("purged by {who}")))
        })
        .require_scope(Scoped::tool("purge"), "admin")
        .list_only_permitted(true)
        .build();
    let served =
        serve_with(HttpServer::new(PeerBuilder::new()).auth(rs), move |_| mcp.handler()).await;
    let call = |id: i64, tool: &str| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool}});
    let list = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let names = |a: &Answer| -> Vec<String> {
        a.json()["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{a:?}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };

    // Legacy: a session opened with a token of `mcp` alone.
    let mut user = Client::connect(served.addr).await;
    user.token = Some(issuer.token(resource, "bob", "mcp", json!({})));
    assert_eq!(user.initialize("2025-11-25").await.status, StatusCode::OK);
    assert_eq!(names(&user.post(list(1).to_string()).await), ["echo"]);
    let a = user.post(call(2, "purge").to_string()).await;
    a.assert_error(StatusCode::FORBIDDEN, -32003, json!(2));
    let ch = challenge(&a);
    assert_eq!(
        (ch.error.as_deref(), ch.scope.as_deref()),
        (Some("insufficient_scope"), Some("mcp admin"))
    );
    assert_eq!(a.json()["error"]["data"], json!({"scope": "mcp admin"}));
    assert_eq!(
        user.post(call(3, "echo").to_string()).await.json()["result"]["content"][0]["text"],
        "echo"
    );

    // Modern: the same, and an admin's token lists and calls both.
    for (sub, scope, listed) in
        [("bob", "mcp", vec!["echo"]), ("root", "mcp admin", vec!["echo", "purge"])]
    {
        let mut c = Client::connect(served.addr).await;
        c.token = Some(issuer.token(resource, sub, scope, json!({})));
        let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                          "io.modelcontextprotocol/clientCapabilities": {}});
        let modern = |c: &Client, method: &'static str, params: Value| {
            let mut params = params;
            params["_meta"] = meta.clone();
            let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
            let mut b = c
                .to(Method::POST)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, BOTH)
                .header("MCP-Protocol-Version", MODERN)
                .header("Mcp-Method", method);
            if method == "tools/call" {
                b = b.header("Mcp-Name", params["name"].as_str().unwrap());
            }
            b.body(full(body.to_string())).unwrap()
        };
        let a = c.call(modern(&c, "tools/list", json!({}))).await;
        assert_eq!(names(&a), listed, "{sub}");
        assert_eq!(a.json()["result"]["cacheScope"], "private", "a list cut for one caller");
        let a = c.call(modern(&c, "tools/call", json!({"name": "purge"}))).await;
        if sub == "root" {
            assert_eq!(a.json()["result"]["content"][0]["text"], "purged by root", "{a:?}");
        } else {
            a.assert_error(StatusCode::FORBIDDEN, -32003, json!(7));
            assert_eq!(challenge(&a).scope.as_deref(), Some("mcp admin"));
        }
    }
}

/// One HTTP/1.1 response read off `tcp`: its head (lower-cased) and body, by Content-Length.
async fn read_answer(tcp: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = timeout(WAIT, tcp.read(&mut chunk)).await.expect("an answer in time").unwrap();
        assert!(
            n > 0,
            "the connection closed before an answer: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let mut chunk = [0u8; 4096];
        let n = timeout(WAIT, tcp.read(&mut chunk)).await.expect("the body in time").unwrap();
        assert!(n > 0, "the connection closed inside the body");
        body.extend_from_slice(&chunk[..n]);
    }
    (head, body)
}

/// A refusal is answered before the body is read; the connection must still carry the next
/// request, even when the body arrives after the head (as it often does over TLS), which is how
/// an OAuth client goes on to fetch the metadata after its first 401. A body too large to
/// drain is not read: the answer then says the connection closes.
#[tokio::test]
async fn a_refused_request_leaves_its_connection_usable_or_says_it_closes() {
    let g = guarded().await;
    let body = whoami(1);
    let mut tcp = TcpStream::connect(g.served.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: {BOTH}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    tcp.write_all(body.as_bytes()).await.unwrap();
    let (head, _) = read_answer(&mut tcp).await;
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(!head.contains("connection: close"), "{head}");
    let get = "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: x\r\n\r\n";
    tcp.write_all(get.as_bytes()).await.unwrap();
    let (head, metadata) = read_answer(&mut tcp).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(serde_json::from_slice::<Value>(&metadata).unwrap()["resource"], g.resource);

    // A body larger than what is drained: refused unread, and the connection closes.
    let mut tcp = TcpStream::connect(g.served.addr).await.unwrap();
    let head = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
                Content-Length: 10000000\r\n\r\n";
    tcp.write_all(head.as_bytes()).await.unwrap();
    let (head, _) = read_answer(&mut tcp).await;
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
}
