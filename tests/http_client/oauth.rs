//! The OAuth client (`HttpClient::oauth`) against a protected server and its authorization
//! server made by hand on one loopback port: a 401 runs the flow once, however many requests
//! meet it; an expired token is refreshed; a refused refresh falls back to the whole flow; and
//! hostile metadata (too large, too slow) is refused with bounded work, a redirect elsewhere
//! never followed.

#![cfg(feature = "oauth")]

use std::collections::HashMap;

use mcpwire::auth::{FollowRedirect, OAuth};

use crate::harness::*;

/// How the hand-made servers behave, and what they saw.
#[derive(Default)]
struct Fake {
    /// `expires_in` of every token.
    expires_in: u64,
    /// Whether the token endpoint refuses refresh tokens.
    refuse_refresh: bool,
    /// A body of the protected resource metadata of this many bytes, instead of the document.
    huge_prm: Option<usize>,
    /// The protected resource metadata answers after this long.
    slow_prm: Option<Duration>,
    /// The protected resource metadata redirects here.
    redirect_prm: Option<String>,
    /// `METHOD PATH` of every request, in order.
    seen: Vec<String>,
    /// The `grant_type` of every token request, and its `resource`.
    grants: Vec<(String, String)>,
    /// The `Authorization` of every request to the MCP endpoint.
    bearers: Vec<String>,
    /// The access tokens the server takes (every one issued).
    valid: Vec<String>,
    issued: usize,
}

type Shared = Arc<Mutex<Fake>>;

fn form(body: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn json_answer(status: &str, body: &Value) -> String {
    closing_answer(status, "application/json", "", &body.to_string())
}

/// One exchange of the servers at `base` (`http://127.0.0.1:PORT`).
async fn exchange(mut sock: TcpStream, fake: Shared, base: String) {
    let Some((head, body)) = read_request(&mut sock).await else { return };
    let line = head.lines().next().unwrap_or_default().to_owned();
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let bearer = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_default();
    fake.lock().unwrap().seen.push(format!("{method} {path}"));
    let prm_url = format!("{base}/.well-known/oauth-protected-resource/mcp");
    let answer = match (method, path) {
        ("POST", "/mcp") => {
            let mut f = fake.lock().unwrap();
            f.bearers.push(bearer.clone());
            let token = bearer.strip_prefix("Bearer ").unwrap_or_default();
            if f.valid.iter().any(|t| t == token) {
                let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                json_answer("200 OK", &json!({"jsonrpc": "2.0", "id": req["id"], "result": {}}))
            } else {
                let www = format!("www-authenticate: Bearer resource_metadata=\"{prm_url}\"\r\n");
                closing_answer("401 Unauthorized", "application/json", &www, "{}")
            }
        }
        ("GET", "/.well-known/oauth-protected-resource/mcp") => {
            let (huge, slow, redirect) = {
                let f = fake.lock().unwrap();
                (f.huge_prm, f.slow_prm, f.redirect_prm.clone())
            };
            if let Some(wait) = slow {
                tokio::time::sleep(wait).await;
            }
            if let Some(to) = redirect {
                closing_answer("302 Found", "text/plain", &format!("location: {to}\r\n"), "")
            } else if let Some(n) = huge {
                closing_answer("200 OK", "application/json", "", &" ".repeat(n))
            } else {
                json_answer(
                    "200 OK",
                    &json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
                )
            }
        }
        ("GET", "/.well-known/oauth-authorization-server") => json_answer(
            "200 OK",
            &json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "code_challenge_methods_supported": ["S256"],
                "authorization_response_iss_parameter_supported": true,
            }),
        ),
        ("POST", "/register") => json_answer("201 Created", &json!({"client_id": "client-1"})),
        ("GET", "/authorize") => {
            let q = form(query.as_bytes());
            let to = format!(
                "{}?code=code-1&state={}&iss={}",
                q["redirect_uri"],
                q["state"],
                url::form_urlencoded::byte_serialize(base.as_bytes()).collect::<String>()
            );
            closing_answer("302 Found", "text/plain", &format!("location: {to}\r\n"), "")
        }
        ("POST", "/token") => {
            let q = form(&body);
            let grant = q.get("grant_type").cloned().unwrap_or_default();
            let mut f = fake.lock().unwrap();
            f.grants.push((grant.clone(), q.get("resource").cloned().unwrap_or_default()));
            if grant == "refresh_token" && f.refuse_refresh {
                json_answer("400 Bad Request", &json!({"error": "invalid_grant"}))
            } else {
                f.issued += 1;
                let token = format!("at-{}", f.issued);
                f.valid.push(token.clone());
                json_answer(
                    "200 OK",
                    &json!({
                        "access_token": token,
                        "token_type": "Bearer",
                        "expires_in": f.expires_in,
                        "refresh_token": format!("rt-{}", f.issued),
                    }),
                )
            }
        }
        _ => closing_answer("404 Not Found", "text/plain", "", ""),
    };
    let _ = sock.write_all(answer.as_bytes()).await;
    let _ = sock.shutdown().await;
}

/// The servers, behaving as `fake` says; their base URL and what they saw.
async fn servers(fake: Fake) -> (ByHand, String, Shared) {
    let fake = Arc::new(Mutex::new(fake));
    let shared = fake.clone();
    let base = Arc::new(Mutex::new(String::new()));
    let base_at = base.clone();
    let server = ByHand::start(move |sock| {
        let fake = fake.clone();
        let base = base_at.lock().unwrap().clone();
        exchange(sock, fake, base)
    })
    .await;
    let root = server.url.trim_end_matches("/mcp").to_owned();
    *base.lock().unwrap() = root.clone();
    (server, root, shared)
}

fn oauth() -> OAuth {
    OAuth::builder("oauth-test", "http://127.0.0.1:1/callback", FollowRedirect)
        .timeout(Duration::from_millis(800))
        .build()
        .unwrap()
}

/// A client of `url` authorizing with [`oauth`], no GET stream.
fn with_oauth(url: &str) -> (PeerHandle, ConnectionTask) {
    HttpClient::new(PeerBuilder::new())
        .get_stream(false)
        .oauth(oauth())
        .connect(url, NoHandler)
        .unwrap()
}

async fn ping(peer: &PeerHandle) -> Result<Incoming, RequestError> {
    within(peer.request("ping", NO_PARAMS)).await
}

fn count(fake: &Shared, what: &str) -> usize {
    fake.lock().unwrap().seen.iter().filter(|s| *s == what).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_runs_the_flow_once_for_every_request_and_an_expired_token_is_refreshed() {
    // A token of 4 s is refreshed after half its life (times are whole seconds).
    let (server, base, fake) = servers(Fake { expires_in: 4, ..Fake::default() }).await;
    let (peer, _conn) = with_oauth(&server.url);
    // Eight requests meet the 401 together: one authorization serves them all.
    let all = futures::future::join_all((0..8).map(|_| ping(&peer))).await;
    assert!(all.iter().all(Result::is_ok), "{all:?}");
    assert_eq!(count(&fake, "GET /authorize"), 1);
    assert_eq!(count(&fake, "POST /register"), 1);
    // Until it is due, the token is sent as it is.
    ping(&peer).await.unwrap();
    assert_eq!(fake.lock().unwrap().grants.len(), 1);
    // Past half its life, the next request refreshes first, and carries the new token.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    ping(&peer).await.unwrap();
    let f = fake.lock().unwrap();
    let grants: Vec<&str> = f.grants.iter().map(|(g, _)| g.as_str()).collect();
    assert_eq!(grants[..2], ["authorization_code", "refresh_token"], "{grants:?}");
    // The resource indicator is the metadata's resource, in every token request.
    assert!(f.grants.iter().all(|(_, r)| *r == format!("{base}/mcp")), "{:?}", f.grants);
    assert_eq!(
        f.bearers.last().map(String::as_str),
        Some(format!("Bearer at-{}", f.issued).as_str())
    );
    assert!(f.issued >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_refresh_falls_back_to_the_whole_flow() {
    let (server, _, fake) =
        servers(Fake { expires_in: 4, refuse_refresh: true, ..Fake::default() }).await;
    let (peer, _conn) = with_oauth(&server.url);
    ping(&peer).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    ping(&peer).await.unwrap();
    let grants: Vec<String> = fake.lock().unwrap().grants.iter().map(|(g, _)| g.clone()).collect();
    assert_eq!(grants, ["authorization_code", "refresh_token", "authorization_code"]);
    assert_eq!(count(&fake, "GET /authorize"), 2);
}

/// The request's error, as the peer gives it.
async fn refused(fake: Fake) -> (String, Shared) {
    let (server, _, shared) = servers(fake).await;
    let (peer, _conn) = with_oauth(&server.url);
    let e = ping(&peer).await.unwrap_err();
    (e.to_string(), shared)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_metadata_gets_bounded_work_and_a_clear_error() {
    // Larger than the 64 KiB bound: not read past it.
    let (why, fake) = refused(Fake { huge_prm: Some(200_000), ..Fake::default() }).await;
    assert!(why.contains("larger than 65536 bytes"), "{why}");
    assert_eq!(count(&fake, "GET /authorize"), 0);

    // Slower than the fetch bound.
    let (why, _) =
        refused(Fake { slow_prm: Some(Duration::from_secs(5)), ..Fake::default() }).await;
    assert!(why.contains("no answer within"), "{why}");

    // A redirect to another host is not followed.
    let elsewhere = Arc::new(AtomicUsize::new(0));
    let hits = elsewhere.clone();
    let other = ByHand::start(move |mut sock| {
        let hits = hits.clone();
        async move {
            hits.fetch_add(1, Ordering::SeqCst);
            let _ = sock.shutdown().await;
        }
    })
    .await;
    let (server, _, fake) =
        servers(Fake { redirect_prm: Some(other.url.clone()), ..Fake::default() }).await;
    let (peer, _conn) = with_oauth(&server.url);
    // Not found there, nor at the root: the server's own origin is taken as its authorization
    // server (as for a 2025-03-26 server), which this one is.
    ping(&peer).await.unwrap();
    assert_eq!(elsewhere.load(Ordering::SeqCst), 0, "the redirect was followed");
    assert_eq!(count(&fake, "GET /.well-known/oauth-protected-resource/mcp"), 1);
}

/// A browser made by hand: GETs `url` (the authorization endpoint), then follows its redirect
/// to the loopback listener, asking for a favicon there first as browsers do.
async fn browser(url: url::Url) {
    let get = |url: url::Url| async move {
        let addr = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
        let mut sock = TcpStream::connect(addr).await.unwrap();
        let target = &url[url::Position::BeforePath..];
        let req = format!("GET {target} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        sock.write_all(req.as_bytes()).await.unwrap();
        let mut answer = String::new();
        let _ = sock.read_to_string(&mut answer).await;
        answer
    };
    let answer = get(url.clone()).await;
    let location = answer
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .expect("the authorization endpoint redirects")
        .trim()
        .to_owned();
    let back = url::Url::parse(&location).unwrap();
    let favicon = get(back.join("/favicon.ico").unwrap()).await;
    assert!(favicon.starts_with("HTTP/1.1 404"), "{favicon}");
    let page = get(back).await;
    assert!(page.contains("this window may be closed"), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loopback_user_agent_takes_the_browsers_redirect_on_the_registered_port() {
    let (server, _, fake) = servers(Fake { expires_in: 3600, ..Fake::default() }).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let shown = Arc::new(AtomicUsize::new(0));
    let count_shown = shown.clone();
    let agent = mcpwire::auth::Loopback::new(move |url| {
        count_shown.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(browser(url.clone()));
    })
    .wait(Duration::from_secs(10));
    let oauth =
        OAuth::builder("oauth-test", format!("http://127.0.0.1:{port}/callback"), agent).build();
    let (peer, _conn) = HttpClient::new(PeerBuilder::new())
        .get_stream(false)
        .oauth(oauth.unwrap())
        .connect(&server.url, NoHandler)
        .unwrap();
    ping(&peer).await.unwrap();
    assert_eq!(shown.load(Ordering::SeqCst), 1);
    assert_eq!(count(&fake, "GET /authorize"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_without_oauth_says_what_the_server_asked_for_and_what_would_answer_it() {
    let (server, _, _) = servers(Fake::default()).await;
    let (peer, _conn) = HttpClient::new(PeerBuilder::new())
        .get_stream(false)
        .connect(&server.url, NoHandler)
        .unwrap();
    let e = ping(&peer).await.unwrap_err().to_string();
    assert!(e.contains("HTTP 401 (WWW-Authenticate: Bearer resource_metadata="), "{e}");
    assert!(e.contains("give the client OAuth"), "{e}");
}
