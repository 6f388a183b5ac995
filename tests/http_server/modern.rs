//! Stateless (2026-07-28) requests: no session is named or minted, the headers must mirror the
//! body, each request runs on its own and ends with its POST, and legacy sessions go on beside.

use mcpwire::mcp::annotations::ToolHeaders;

use crate::harness::*;

const MODERN: &str = "2026-07-28";

pub(crate) fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": MODERN,
           "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A stateless request's body.
pub(crate) fn body(id: i64, method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A POST of `body` with these headers (and the usual content type and accept).
pub(crate) fn post(
    c: &Client,
    body: String,
    headers: &[(&str, &str)],
) -> Request<crate::harness::Body> {
    let mut b = c
        .to(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, BOTH);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(full(body)).unwrap()
}

pub(crate) fn mirrored(method: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)]
}

#[tokio::test]
async fn a_stateless_request_is_served_without_a_session() {
    let s = serve_default().await;
    let mut c = Client::connect(s.addr).await;
    let params = json!({"x": 1, "_meta": meta()});
    let a = c.call(post(&c, body(1, "echo", &params), &mirrored("echo"))).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json()["result"]["x"], 1);
    assert_eq!(a.header(SESSION_HEADER), None);
    // `initialize` under a modern version header opens no session: it is a stateless request
    // like any other, answered by the handler (this one finds no protocolVersion param, -32602;
    // `serve`'s answers -32601, 404).
    let init = body(3, "initialize", &json!({"_meta": meta()}));
    let a = c.call(post(&c, init, &mirrored("initialize"))).await;
    a.assert_error(StatusCode::BAD_REQUEST, -32602, json!(3));
    assert_eq!(a.header(SESSION_HEADER), None);
    // An unknown method is 404, with its JSON-RPC error.
    let a = c.call(post(&c, body(2, "nope", &json!({"_meta": meta()})), &mirrored("nope"))).await;
    a.assert_error(StatusCode::NOT_FOUND, -32601, json!(2));
    assert_eq!(s.server.stats().sessions, 0);
    assert_eq!(s.server.stats().sessions_started, 0);
}

/// Headers, method, params, and the status and error code they get.
type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, Value, StatusCode, i64);

#[tokio::test]
async fn every_mismatch_is_refused_with_its_code_and_the_request_id() {
    let s = serve_default().await;
    let mut c = Client::connect(s.addr).await;
    let ok = json!({"_meta": meta()});
    let old = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1900-01-01",
                               "io.modelcontextprotocol/clientCapabilities": {}}});
    let cases: Vec<Case<'_>> = vec![
        (vec![("Mcp-Method", "echo")], "echo", ok.clone(), StatusCode::BAD_REQUEST, -32020),
        (
            vec![("MCP-Protocol-Version", MODERN)],
            "echo",
            ok.clone(),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        (mirrored("ping"), "echo", ok.clone(), StatusCode::BAD_REQUEST, -32020),
        (
            vec![("MCP-Protocol-Version", "2026-07-29"), ("Mcp-Method", "echo")],
            "echo",
            ok.clone(),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        (mirrored("echo"), "echo", json!({"x": 1}), StatusCode::BAD_REQUEST, -32602),
        (mirrored("echo"), "echo", json!({"_meta": 5}), StatusCode::BAD_REQUEST, -32602),
        (
            vec![("MCP-Protocol-Version", "1900-01-01"), ("Mcp-Method", "echo")],
            "echo",
            old,
            StatusCode::BAD_REQUEST,
            -32022,
        ),
        (
            vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", "echo"), ("Mcp-Method", "echo")],
            "echo",
            ok.clone(),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        (
            mirrored("tools/call"),
            "tools/call",
            json!({"name": "t", "_meta": meta()}),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
    ];
    for (i, (headers, method, params, status, code)) in cases.into_iter().enumerate() {
        let id = i64::try_from(i).unwrap() + 10;
        let a = c.call(post(&c, body(id, method, &params), &headers)).await;
        assert_eq!(a.status, status, "case {i}: {a:?}");
        assert_eq!(a.json()["error"]["code"], code, "case {i}: {a:?}");
        assert_eq!(a.json()["id"], id, "case {i}: {a:?}");
    }
    // The unsupported version names the ones served; the connection went on throughout.
    let a = c
        .call(post(
            &c,
            body(
                99,
                "echo",
                &json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01",
                                             "io.modelcontextprotocol/clientCapabilities": {}}}),
            ),
            &[("MCP-Protocol-Version", "2099-01-01"), ("Mcp-Method", "echo")],
        ))
        .await;
    assert_eq!(
        a.json()["error"]["data"],
        json!({"supported": [MODERN], "requested": "2099-01-01"})
    );
}

#[tokio::test]
async fn annotated_tool_arguments_must_travel_in_their_headers() {
    let list = json!({"tools": [{"name": "echo", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}}]});
    let (tools, _) = ToolHeaders::from_tools_list(&list.to_string()).unwrap();
    let s = serve(HttpServer::new(PeerBuilder::new()).tool_headers(tools)).await;
    let mut c = Client::connect(s.addr).await;
    let call = |region: &str| {
        body(
            1,
            "tools/call",
            &json!({"name": "echo", "arguments": {"region": region}, "_meta": meta()}),
        )
    };
    let mut h = mirrored("tools/call");
    h.push(("Mcp-Name", "echo"));
    // Without the header, and with a header that says something else: refused.
    let a = c.call(post(&c, call("eu"), &h)).await;
    a.assert_error(StatusCode::BAD_REQUEST, -32020, json!(1));
    let mut wrong = h.clone();
    wrong.push(("Mcp-Param-Region", "us"));
    c.call(post(&c, call("eu"), &wrong)).await.assert_error(
        StatusCode::BAD_REQUEST,
        -32020,
        json!(1),
    );
    // Matching, in base64 (of "é"): the handler runs (and answers -32601 for tools/call, 404).
    let mut good = h.clone();
    good.push(("mcp-param-region", "=?base64?w6k=?="));
    let a = c.call(post(&c, call("é"), &good)).await;
    a.assert_error(StatusCode::NOT_FOUND, -32601, json!(1));
}

#[tokio::test]
async fn legacy_sessions_and_stateless_requests_share_one_server() {
    let s = serve_default().await;
    let mut legacy = Client::session(s.addr, NO_BATCHES).await;
    let mut modern = Client::connect(s.addr).await;
    for i in 0..20 {
        legacy.ping_ok(i).await;
        let params = json!({"i": i, "_meta": meta()});
        let a = modern.call(post(&modern, body(i, "echo", &params), &mirrored("echo"))).await;
        assert_eq!(a.json()["result"]["i"], i, "{a:?}");
    }
    assert_eq!(s.server.stats().sessions, 1);
    // A modern request that names the session anyway is stateless: the id is ignored.
    let mut named = legacy.beside().await;
    named.version = None;
    let params = json!({"i": 99, "_meta": meta()});
    let a = named.call(post(&named, body(99, "echo", &params), &mirrored("echo"))).await;
    assert_eq!(a.json()["result"]["i"], 99, "{a:?}");
}

#[tokio::test]
async fn notifications_of_a_stateless_request_go_on_its_own_stream() {
    let s = serve_default().await;
    let mut c = Client::connect(s.addr).await;
    let params = json!({"said": "hi", "_meta": meta()});
    let a = c.call(post(&c, body(5, "announce", &params), &mirrored("announce"))).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.header("x-accel-buffering"), Some("no"));
    let events = a.events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["method"], "notifications/message");
    assert_eq!(events[0]["params"]["data"]["said"], "hi");
    assert_eq!(events[1]["id"], 5);
}

#[tokio::test]
async fn closing_a_stateless_request_cancels_it() {
    let s = serve_default().await;
    let probe = s.probe.clone();
    let c = Client::connect(s.addr).await;
    let req = post(&c, body(1, "hold", &json!({"_meta": meta()})), &mirrored("hold"));
    let mut held = c;
    let task = tokio::spawn(async move { held.send(req).await });
    probe.held().await;
    // The client goes away while the handler waits: its connection closes.
    task.abort();
    let _ = task.await;
    // A handler still running would take the permit released now; a cancelled one cannot.
    tokio::time::sleep(Duration::from_millis(200)).await;
    probe.release.add_permits(1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(probe.release.available_permits(), 1, "the handler ran on after its POST closed");
}

/// A raw stateless POST of `body` with `extra` header lines, on a connection of its own.
async fn raw_post(addr: SocketAddr, extra: &str, body: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: {BOTH}\r\n\
         MCP-Protocol-Version: {MODERN}\r\nMcp-Method: echo\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    // The server may answer and close before it has read everything: a failed write is fine.
    let _ = s.write_all(req.as_bytes()).await;
    let mut buf = Vec::new();
    let _ = timeout(WAIT, s.read_to_end(&mut buf)).await.expect("the server answers or closes");
    let head = String::from_utf8_lossy(&buf);
    head.get(9..12).and_then(|c| c.parse().ok())
}

#[tokio::test]
async fn oversized_header_sections_are_refused_and_the_server_goes_on() {
    let s = serve_default().await;
    let echo = body(1, "echo", &json!({"_meta": meta()}));
    let many: String = (0..10_000).map(|i| format!("Mcp-Param-P{i}: {i}\r\n")).collect();
    let huge = format!("Mcp-Param-Big: {}\r\n", "x".repeat(1 << 20));
    for (what, extra) in [("10,000 Mcp-Param headers", many), ("a 1 MiB header", huge)] {
        let status = raw_post(s.addr, &extra, &echo).await;
        // hyper refuses a header section past its bounds (431), or closes the connection.
        assert!(matches!(status, None | Some(431)), "{what}: {status:?}");
    }
    // Each bad value of a header that is checked: its error, with the request's id.
    let bad_name = body(2, "tools/call", &json!({"name": "t", "_meta": meta()}));
    for value in ["=?base64?not base64!?=", "=?base64?//79?=", "=?base64?dA?="] {
        let mut c = Client::connect(s.addr).await;
        let mut h = mirrored("tools/call");
        h.push(("Mcp-Name", value));
        let a = c.call(post(&c, bad_name.clone(), &h)).await;
        a.assert_error(StatusCode::BAD_REQUEST, -32020, json!(2));
    }
    let mut c = Client::connect(s.addr).await;
    let a = c.call(post(&c, echo, &mirrored("echo"))).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
}

#[tokio::test]
async fn a_quiet_stream_carries_keep_alive_comments_until_it_ends() {
    let s = serve(HttpServer::new(PeerBuilder::new()).keep_alive(Duration::from_millis(40))).await;
    let mut c = Client::connect(s.addr).await;
    let req =
        post(&c, body(1, "announce_hold", &json!({"_meta": meta()})), &mirrored("announce_hold"));
    let r = c.send(req).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(content_type(r.headers()), Some("text/event-stream"));
    assert_eq!(r.headers().get("x-accel-buffering").unwrap(), "no");
    let mut body = r.into_body();
    let mut text = String::new();
    let started = Instant::now();
    while text.matches(": keep-alive").count() < 3 {
        assert!(started.elapsed() < WAIT, "no keep-alive comments: {text:?}");
        let frame = timeout(WAIT, body.frame()).await.expect("a frame in time").unwrap().unwrap();
        if let Ok(data) = frame.into_data() {
            text.push_str(std::str::from_utf8(&data).unwrap());
        }
    }
    assert!(text.starts_with("event: message\ndata: {"), "{text:?}");
    s.probe.release.add_permits(1);
    while let Some(frame) = timeout(WAIT, body.frame()).await.expect("the end in time") {
        if let Ok(data) = frame.unwrap().into_data() {
            text.push_str(std::str::from_utf8(&data).unwrap());
        }
    }
    let events = sse_events(&text);
    assert_eq!(events.last().unwrap()["result"]["released"], true, "{text:?}");
}

#[tokio::test]
async fn answered_requests_leave_their_peer_for_the_next_and_closed_ones_end_it() {
    let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let probe = Probe::new();
    let (m, p) = (made.clone(), probe.clone());
    let make = move || {
        m.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        p.clone()
    };
    let served = serve_http(HttpServer::new(PeerBuilder::new()), make).await;
    let addr = served.addr;
    let mut c = Client::connect(addr).await;
    for i in 0..20 {
        let params = json!({"i": i, "_meta": meta()});
        let a = c.call(post(&c, body(i, "echo", &params), &mirrored("echo"))).await;
        assert_eq!(a.json()["result"]["i"], i, "{a:?}");
    }
    let count = || made.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(count(), 1, "sequential stateless requests share one idle peer");
    // A request whose POST the client closes takes its peer down with it.
    let held = Client::connect(addr).await;
    let req = post(&held, body(1, "hold", &json!({"_meta": meta()})), &mirrored("hold"));
    let mut h = held;
    let task = tokio::spawn(async move { h.send(req).await });
    probe.held().await;
    task.abort();
    let _ = task.await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let params = json!({"i": 99, "_meta": meta()});
    let a = c.call(post(&c, body(99, "echo", &params), &mirrored("echo"))).await;
    assert_eq!(a.json()["result"]["i"], 99, "{a:?}");
    assert_eq!(count(), 2, "the closed request's peer was not reused, the answered one was");
}

#[tokio::test]
async fn a_handler_that_keeps_its_handle_never_speaks_into_another_request() {
    let s = serve_default().await;
    let mut a = Client::connect(s.addr).await;
    let r = a.call(post(&a, body(1, "late", &json!({"_meta": meta()})), &mirrored("late"))).await;
    assert_eq!(r.status, StatusCode::OK, "{r:?}");
    // Another client's request, answered only after the first one's late notification.
    let mut b = Client::connect(s.addr).await;
    let req = post(&b, body(1, "hold", &json!({"_meta": meta()})), &mirrored("hold"));
    let held = tokio::spawn(async move { b.call(req).await });
    s.probe.held().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.probe.release.add_permits(1);
    let r = held.await.unwrap();
    assert_eq!(r.status, StatusCode::OK, "{r:?}");
    assert_eq!(content_type(&r.headers), Some("application/json"), "{r:?}");
    assert_eq!(r.json()["result"]["released"], true, "{r:?}");
}

#[tokio::test]
async fn stopping_the_server_ends_stateless_requests_too() {
    let probe = Probe::new();
    let p = probe.clone();
    let ServedHttp { addr, stop, task: server } =
        serve_http(HttpServer::new(PeerBuilder::new()), move || p.clone()).await;
    // One peer left idle, one request answering.
    let mut c = Client::connect(addr).await;
    let a = c.call(post(&c, body(1, "echo", &json!({"_meta": meta()})), &mirrored("echo"))).await;
    assert_eq!(a.status, StatusCode::OK);
    let req = post(&c, body(2, "hold", &json!({"_meta": meta()})), &mirrored("hold"));
    let held = tokio::spawn(async move { c.call(req).await });
    probe.held().await;
    let started = Instant::now();
    stop.send(()).unwrap();
    let answer = timeout(WAIT, held).await.expect("the POST ends").unwrap();
    answer.assert_error(StatusCode::OK, INTERNAL_ERROR, json!(2));
    timeout(WAIT, server).await.expect("serve returns").unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}
