//! POSTs: the happy path, and every row of the server's table about a POST.

use crate::harness::*;
// =============================================================================================
// 1. The happy path.

#[tokio::test]
async fn initialize_opens_a_session_and_requests_are_answered_as_json() {
    let s = serve_default().await;
    let mut c = Client::connect(s.addr).await;

    let a = c.initialize("2025-06-18").await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let v = a.json();
    assert_eq!(v["id"], 0);
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18");
    let sid = a.header(SESSION_HEADER).expect("a session id");
    assert_eq!(sid.len(), 32, "{sid}");
    assert!(sid.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{sid}");

    let a = c.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    a.assert_empty(StatusCode::ACCEPTED);

    c.ping_ok(1).await;
    let a = c.post(r#"{"jsonrpc":"2.0","id":"two","method":"echo","params":{"x":[1,"y"]}}"#).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": "two", "result": {"x": [1, "y"]}}));
    let a = c.post(request(3, "no/such/method")).await;
    assert_eq!(a.status, StatusCode::OK);
    let v = a.json();
    assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (json!(3), json!(-32601)), "{v}");

    // A response the client owes the server (to a request it never made) is taken, 202.
    let a = c.post(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#).await;
    a.assert_empty(StatusCode::ACCEPTED);
    c.ping_ok(4).await;

    // Another connection speaks for the same session.
    c.beside().await.ping_ok(5).await;

    let stats = s.server.stats();
    assert_eq!((stats.sessions, stats.sessions_started), (1, 1));
}

#[tokio::test]
async fn progress_then_the_response_come_as_an_event_stream_in_order() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    for token in [json!("tok"), json!(17)] {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "slow",
                          "params": {"steps": 3, "_meta": {"progressToken": token}}});
        let a = c.post(body.to_string()).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(a.header("cache-control"), Some("no-cache"));
        let events = a.events();
        assert_eq!(events.len(), 4, "{a:?}");
        for (i, e) in events[..3].iter().enumerate() {
            assert_eq!(e["method"], "notifications/progress", "{e}");
            assert_eq!(e["params"]["progressToken"], token);
            assert_eq!(e["params"]["progress"], i + 1);
        }
        assert_eq!(events[3], json!({"jsonrpc": "2.0", "id": 7, "result": {"steps": 3}}));
    }
    // Without a token there is no progress: plain JSON.
    let a = c.post(r#"{"jsonrpc":"2.0","id":8,"method":"slow","params":{"steps":3}}"#).await;
    assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": 8, "result": {"steps": 3}}));
    c.ping_ok(9).await;
}

#[tokio::test]
async fn a_client_that_takes_only_json_gets_the_response_and_no_progress() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"slow","params":{"steps":3,"_meta":{"progressToken":"t"}}}"#;
    let req = c
        .to(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .body(full(body))
        .unwrap();
    let a = c.call(req).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": 7, "result": {"steps": 3}}));
    c.ping_ok(8).await;
}

// =============================================================================================
// 2. Every row of the table.

#[tokio::test]
async fn a_path_other_than_the_endpoint_gets_404() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    for path in ["/", "/mcp/", "/mcpx", "/other", "/MCP"] {
        let req = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::HOST, s.addr.to_string())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, BOTH)
            .body(full(request(1, "ping")))
            .unwrap();
        c.call(req).await.assert_empty(StatusCode::NOT_FOUND);
    }
    // The query is not part of the path.
    let req = Request::builder()
        .method(Method::POST)
        .uri("/mcp?x=1")
        .header(header::HOST, s.addr.to_string())
        .header(header::CONTENT_TYPE, "application/json")
        .header(SESSION_HEADER, c.session.clone().unwrap())
        .body(full(request(1, "ping")))
        .unwrap();
    assert_eq!(c.call(req).await.status, StatusCode::OK);
    // A server on another path.
    let s = serve(HttpServer::new(PeerBuilder::new()).path("/rpc")).await;
    assert_eq!(s.server.endpoint(), "/rpc");
    let mut c = Client::connect(s.addr).await;
    c.call(c.post_of(request(1, "ping"))).await.assert_empty(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_method_other_than_post_get_delete_gets_405_with_allow() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    for m in [Method::PUT, Method::PATCH, Method::OPTIONS, Method::HEAD] {
        let req = c.to(m.clone()).header(header::CONTENT_TYPE, "application/json");
        let a = c.call(req.body(full(request(1, "ping"))).unwrap()).await;
        assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{m}: {a:?}");
        assert_eq!(a.header("allow"), Some("GET, POST, DELETE"), "{m}");
        assert!(a.body.is_empty());
    }
    c.ping_ok(2).await;
}

#[tokio::test]
async fn a_foreign_origin_gets_403_and_loopback_or_allowed_origins_pass() {
    let s = serve(HttpServer::new(PeerBuilder::new()).allow_origin("https://app.example")).await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let with_origin = |c: &Client, origin: &str| {
        let mut req = c.post_of(request(5, "ping"));
        req.headers_mut().insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        req
    };
    for bad in [
        "http://evil.example",
        "https://app.example.evil",
        "http://app.example",
        "http://localhost.evil.example",
        "http://127.0.0.1.evil.example:80",
        "http://[::1]evil",
        "http://[::2]:8",
        "http://0.0.0.0",
        "ftp://localhost",
        "null",
        "localhost",
        "",
    ] {
        let a = c.call(with_origin(&c, bad)).await;
        a.assert_error(StatusCode::FORBIDDEN, SERVER_ERROR, Value::Null);
    }
    for good in [
        "http://localhost",
        "http://localhost:1234",
        "https://LOCALHOST:1",
        "http://127.0.0.1",
        "http://127.0.0.1:8080",
        "http://[::1]",
        "http://[::1]:8",
        "https://app.example",
        "HTTPS://APP.EXAMPLE",
    ] {
        let a = c.call(with_origin(&c, good)).await;
        assert_eq!(a.status, StatusCode::OK, "{good}: {a:?}");
        assert_eq!(a.json()["id"], 5);
    }
    // GET and DELETE are checked too.
    let mut req = c.to(Method::DELETE).body(empty()).unwrap();
    req.headers_mut().insert(header::ORIGIN, HeaderValue::from_static("http://evil.example"));
    c.call(req).await.assert_error(StatusCode::FORBIDDEN, SERVER_ERROR, Value::Null);
    let mut req =
        c.to(Method::GET).header(header::ACCEPT, "text/event-stream").body(empty()).unwrap();
    req.headers_mut().insert(header::ORIGIN, HeaderValue::from_static("http://evil.example"));
    c.call(req).await.assert_error(StatusCode::FORBIDDEN, SERVER_ERROR, Value::Null);
    c.ping_ok(6).await;
}

#[tokio::test]
async fn a_post_not_typed_application_json_gets_415() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    for ct in [
        Some("text/plain"),
        Some("application/jsonx"),
        Some("application/json-seq"),
        Some("application/x-www-form-urlencoded"),
        Some("text/event-stream"),
        Some(""),
        None,
    ] {
        let mut req = c.to(Method::POST).header(header::ACCEPT, BOTH);
        if let Some(ct) = ct {
            req = req.header(header::CONTENT_TYPE, ct);
        }
        let a = c.call(req.body(full(request(1, "ping"))).unwrap()).await;
        a.assert_error(StatusCode::UNSUPPORTED_MEDIA_TYPE, SERVER_ERROR, Value::Null);
    }
    for ct in ["application/json; charset=utf-8", "Application/JSON", "application/json ;x=y"] {
        let req = c.to(Method::POST).header(header::CONTENT_TYPE, ct).header(header::ACCEPT, BOTH);
        let a = c.call(req.body(full(request(2, "ping"))).unwrap()).await;
        assert_eq!(a.status, StatusCode::OK, "{ct}: {a:?}");
    }
}

#[tokio::test]
async fn a_post_accepting_neither_json_nor_event_stream_gets_406() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    for accept in ["text/html", "application/xml", "image/*", "text/plain, application/jsonx"] {
        let req = c
            .to(Method::POST)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, accept);
        let a = c.call(req.body(full(request(1, "ping"))).unwrap()).await;
        a.assert_error(StatusCode::NOT_ACCEPTABLE, SERVER_ERROR, Value::Null);
    }
    // Wildcards, parameters, and no Accept at all are fine.
    for accept in [Some("*/*"), Some("application/*"), Some("application/json;q=0.9"), None] {
        let mut req = c.to(Method::POST).header(header::CONTENT_TYPE, "application/json");
        if let Some(accept) = accept {
            req = req.header(header::ACCEPT, accept);
        }
        let a = c.call(req.body(full(request(2, "ping"))).unwrap()).await;
        assert_eq!(a.status, StatusCode::OK, "{accept:?}: {a:?}");
        assert_eq!(a.json()["id"], 2);
    }
}

#[tokio::test]
async fn a_body_at_the_frame_limit_passes_and_one_byte_more_gets_413() {
    const LIMIT: usize = 300;
    let peer = PeerBuilder::new().limits(Limits::default().max_frame_bytes(LIMIT));
    let s = serve(HttpServer::new(peer)).await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;

    // With Content-Length.
    let body = echo_of_len(1, LIMIT);
    let a = c.post(&body).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let sent: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(a.json()["result"], sent["params"]);
    let a = c.post(echo_of_len(2, LIMIT + 1)).await;
    a.assert_error(StatusCode::PAYLOAD_TOO_LARGE, INVALID_REQUEST, Value::Null);

    // Chunked, with no Content-Length, cut in pieces.
    for (id, len, ok) in [(3, LIMIT, true), (4, LIMIT + 1, false)] {
        let mut c = c.beside().await;
        let body = Bytes::from(echo_of_len(id, len));
        let parts = vec![body.slice(..100), body.slice(100..LIMIT - 1), body.slice(LIMIT - 1..)];
        let req = c
            .to(Method::POST)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, BOTH)
            .body(chunked(parts))
            .unwrap();
        let a = c.call(req).await;
        if ok {
            assert_eq!(a.status, StatusCode::OK, "{a:?}");
            assert_eq!(a.json()["id"], id);
        } else {
            a.assert_error(StatusCode::PAYLOAD_TOO_LARGE, INVALID_REQUEST, Value::Null);
        }
    }

    // A declared length far past the limit is refused before any of the body is read.
    let mut raw = TcpStream::connect(s.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Accept: {BOTH}\r\n{SESSION_HEADER}: {}\r\nContent-Length: 1000000000\r\n\r\n{{",
        c.session.as_deref().unwrap()
    );
    raw.write_all(head.as_bytes()).await.unwrap();
    let (status, _, body) = timeout(WAIT, read_raw_response(&mut raw)).await.unwrap();
    assert_eq!(status, 413);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (v["error"]["code"].clone(), v["id"].clone()),
        (json!(INVALID_REQUEST), Value::Null)
    );

    let mut c = c.beside().await;
    c.ping_ok(5).await;
}

#[tokio::test]
async fn a_body_that_is_not_json_gets_400_parse_error() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let bodies: [&[u8]; 12] = [
        b"",
        b"   ",
        b"{",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",}",
        b"{'jsonrpc':'2.0'}",
        b"not json",
        b"{} x",
        b"{}{}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xC0\xAF\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":NaN}",
        b"\x00",
    ];
    for body in bodies {
        let a = c.post(Bytes::from_static(body)).await;
        a.assert_error(StatusCode::BAD_REQUEST, PARSE_ERROR, Value::Null);
    }
    // Nesting past the depth limit is a parse error too.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    c.post(deep).await.assert_error(StatusCode::BAD_REQUEST, PARSE_ERROR, Value::Null);
    c.ping_ok(2).await;
}

#[tokio::test]
async fn json_that_is_not_a_message_gets_400_invalid_request() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let cases = [
        (r#"{"foo":1}"#, Value::Null),
        ("{}", Value::Null),
        ("42", Value::Null),
        ("null", Value::Null),
        (r#""x""#, Value::Null),
        (r#"{"jsonrpc":"2.0","method":"ping","id":{}}"#, Value::Null),
        (r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, json!(3)),
        (r#"{"id":4,"method":"ping"}"#, json!(4)),
        (r#"{"jsonrpc":"2.0","id":5,"method":7}"#, json!(5)),
        (r#"{"jsonrpc":"2.0","id":"s","method":"ping","params":"x"}"#, json!("s")),
        (r#"{"jsonrpc":"2.0","id":6,"result":1,"error":{"code":1,"message":"m"}}"#, json!(6)),
    ];
    for (body, id) in cases {
        let a = c.post(body).await;
        a.assert_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, id);
    }
    c.ping_ok(7).await;
}

#[tokio::test]
async fn an_unknown_session_gets_404_session_not_found() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let mut other = c.beside().await;
    for sid in ["0123456789abcdef0123456789abcdef", "nope", ""] {
        other.session = Some(sid.to_owned());
        let a = other.post(request(1, "ping")).await;
        a.assert_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, Value::Null);
        let req = other.to(Method::GET).header(header::ACCEPT, "text/event-stream");
        let a = other.call(req.body(empty()).unwrap()).await;
        a.assert_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, Value::Null);
        let a = other.call(other.to(Method::DELETE).body(empty()).unwrap()).await;
        a.assert_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, Value::Null);
    }
    // Not even `initialize` opens a session under an id the client made up.
    other.session = Some("0123456789abcdef0123456789abcdef".into());
    let a = other.post(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#).await;
    a.assert_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, Value::Null);
    c.ping_ok(2).await;
}

#[tokio::test]
async fn no_session_id_makes_a_stateless_request_unless_the_request_is_initialize() {
    let s = serve_default().await;
    let mut c = Client::connect(s.addr).await;
    // Without a session a request is of the 2026-07-28 era: its envelope is missing (-32602);
    // with a legacy version header, the client lost its session (-32000).
    c.post(request(1, "ping")).await.assert_error(StatusCode::BAD_REQUEST, -32602, json!(1));
    let lost = c.post_of(request(2, "ping"));
    let (mut parts, body) = lost.into_parts();
    parts.headers.insert(VERSION_HEADER, HeaderValue::from_static(NO_BATCHES));
    let a = c.call(Request::from_parts(parts, body)).await;
    a.assert_error(StatusCode::BAD_REQUEST, SERVER_ERROR, Value::Null);
    // A notification (even one named initialize, having no id) is accepted and goes nowhere.
    for body in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
    ] {
        c.post(body).await.assert_empty(StatusCode::ACCEPTED);
    }
    // A response is no stateless request.
    let a = c.post(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).await;
    a.assert_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, Value::Null);
    // GET and DELETE belong to legacy sessions: without one they are not allowed.
    let req = c.to(Method::GET).header(header::ACCEPT, "text/event-stream");
    let a = c.call(req.body(empty()).unwrap()).await;
    a.assert_empty(StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(a.header("allow"), Some("POST"));
    let a = c.call(c.to(Method::DELETE).body(empty()).unwrap()).await;
    a.assert_empty(StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(s.server.stats().sessions, 0);
}

#[tokio::test]
async fn a_session_cannot_be_initialized_twice() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let a = c.post(r#"{"jsonrpc":"2.0","id":"again","method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#).await;
    a.assert_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, json!("again"));
    c.ping_ok(1).await;
    assert_eq!(s.server.stats().sessions, 1);
}

#[tokio::test]
async fn an_unsupported_protocol_version_gets_400_and_supported_ones_pass() {
    let s = serve_default().await;
    let c = Client::session(s.addr, NO_BATCHES).await;
    // (hyper trims the whitespace around a header value, so "2025-06-18 " is the version itself.
    // A modern version, such as "2099-01-01", makes the request stateless: `stateless.rs`.)
    for v in ["2025-6-18", "", "latest", "2025-06-18,2025-03-26", "2025-13-01"] {
        let mut other = c.beside().await;
        other.version = Some(v.to_owned());
        let a = other.post(request(1, "ping")).await;
        a.assert_error(StatusCode::BAD_REQUEST, SERVER_ERROR, Value::Null);
        let req = other.to(Method::GET).header(header::ACCEPT, "text/event-stream");
        let a = other.call(req.body(empty()).unwrap()).await;
        a.assert_error(StatusCode::BAD_REQUEST, SERVER_ERROR, Value::Null);
        let a = other.call(other.to(Method::DELETE).body(empty()).unwrap()).await;
        a.assert_error(StatusCode::BAD_REQUEST, SERVER_ERROR, Value::Null);
    }
    for (i, v) in LEGACY_VERSIONS.iter().enumerate() {
        let mut other = c.beside().await;
        other.version = Some((*v).to_owned());
        other.ping_ok(10 + i as i64).await;
    }
    // No header at all: the version is assumed.
    let mut other = c.beside().await;
    other.version = None;
    other.ping_ok(20).await;

    // A server that accepts fewer versions refuses the others.
    let s = serve(HttpServer::new(PeerBuilder::new()).protocol_versions(["2025-11-25"])).await;
    let mut c = Client::session(s.addr, "2025-11-25").await;
    c.ping_ok(1).await;
    c.version = Some("2025-06-18".into());
    c.post(request(2, "ping")).await.assert_error(
        StatusCode::BAD_REQUEST,
        SERVER_ERROR,
        Value::Null,
    );
}

#[tokio::test]
async fn a_batch_is_refused_unless_the_session_negotiated_2025_03_26() {
    let s = serve_default().await;
    let batch = format!("[{},{}]", request(1, "ping"), request(2, "ping"));
    for v in LEGACY_VERSIONS.iter().filter(|v| **v != BATCHES) {
        let mut c = Client::session(s.addr, v).await;
        assert_eq!(c.version.as_deref(), Some(*v));
        for body in
            [batch.as_str(), r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#, "[1]"]
        {
            c.post(body).await.assert_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, Value::Null);
        }
        // The session's version counts, not the header's.
        c.version = Some(BATCHES.into());
        let a = c.post(batch.clone()).await;
        a.assert_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, Value::Null);
        c.ping_ok(3).await;
    }
}

#[tokio::test]
async fn under_2025_03_26_a_batch_is_answered_with_an_array_of_its_responses() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, BATCHES).await;
    assert_eq!(c.version.as_deref(), Some(BATCHES));

    let a = c
        .post(format!(
            r#"[{},{{"jsonrpc":"2.0","id":"b","method":"echo","params":[true]}}]"#,
            request(1, "ping")
        ))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let v = a.json();
    let v = v.as_array().expect("an array");
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v.contains(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})), "{v:?}");
    assert!(v.contains(&json!({"jsonrpc": "2.0", "id": "b", "result": [true]})), "{v:?}");

    // Notifications only: 202.
    let notes = r#"[{"jsonrpc":"2.0","method":"n/a"},{"jsonrpc":"2.0","method":"n/b"}]"#;
    c.post(notes).await.assert_empty(StatusCode::ACCEPTED);

    // A request and a notification: the request's response only.
    let a = c.post(format!(r#"[{},{{"jsonrpc":"2.0","method":"n/c"}}]"#, request(3, "ping"))).await;
    assert_eq!(a.json(), json!([{"jsonrpc": "2.0", "id": 3, "result": {}}]));

    // A request and an invalid element: both answered in the array.
    let a = c.post(format!("[{},1]", request(4, "ping"))).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let v = a.json();
    let v = v.as_array().expect("an array");
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v.contains(&json!({"jsonrpc": "2.0", "id": 4, "result": {}})), "{v:?}");
    assert!(v.iter().any(|r| r["error"]["code"] == INVALID_REQUEST && r["id"].is_null()), "{v:?}");

    // Invalid elements with no request to carry their answers; an empty batch.
    for body in ["[1,2,3]", r#"[{"foo":1}]"#, "[]"] {
        c.post(body).await.assert_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, Value::Null);
    }
    // The same id twice in one batch.
    let a = c.post(format!("[{},{}]", request(5, "ping"), request(5, "ping"))).await;
    a.assert_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, json!(5));

    // A batch with progress: events for each, then the array.
    let body = r#"[{"jsonrpc":"2.0","id":6,"method":"slow","params":{"steps":2,"_meta":{"progressToken":"p6"}}},{"jsonrpc":"2.0","id":7,"method":"ping"}]"#;
    let a = c.post(body).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let events = a.events();
    let last = events.last().expect("events");
    assert_eq!(last.as_array().map(Vec::len), Some(2), "{events:?}");
    let progress: Vec<_> =
        events[..events.len() - 1].iter().map(|e| e["params"]["progress"].clone()).collect();
    assert_eq!(progress, [json!(1), json!(2)], "{events:?}");
    c.ping_ok(8).await;
}

#[tokio::test]
async fn a_request_whose_id_is_in_flight_gets_400_with_that_id() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let mut first = c.beside().await;
    let held = tokio::spawn(async move { first.post(request(7, "hold")).await });
    s.probe.held().await;

    let a = c.post(request(7, "ping")).await;
    a.assert_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, json!(7));
    // A string "7" is another id.
    let a = c.post(r#"{"jsonrpc":"2.0","id":"7","method":"ping"}"#).await;
    assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": "7", "result": {}}));

    s.probe.release.add_permits(1);
    let a = timeout(WAIT, held).await.unwrap().unwrap();
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": 7, "result": {"released": true}}));
    // Answered, the id is free again.
    c.ping_ok(7).await;
}

#[tokio::test]
async fn a_cancelled_request_ends_its_post_with_no_response() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    // A client that takes event streams gets an empty one; a JSON-only client gets 202.
    for (id, accept) in [(12, BOTH), (13, "application/json")] {
        let held = c.hold(&s.probe, id, accept).await;
        c.post(cancel(id)).await.assert_empty(StatusCode::ACCEPTED);
        let a = timeout(WAIT, held).await.expect("the POST ends").unwrap();
        if accept == BOTH {
            assert_eq!(a.status, StatusCode::OK, "{a:?}");
            assert_eq!(a.events(), Vec::<Value>::new(), "{a:?}");
        } else {
            a.assert_empty(StatusCode::ACCEPTED);
        }
        // The id is free again.
        c.ping_ok(id).await;
    }
    // A cancelled request of a batch: the batch's POST is answered with the others.
    let mut c = Client::session(s.addr, BATCHES).await;
    let mut first = c.beside().await;
    let batch = format!("[{},{}]", request(14, "hold"), request(15, "ping"));
    let held = tokio::spawn(async move { first.post(batch).await });
    s.probe.held().await;
    c.post(cancel(14)).await.assert_empty(StatusCode::ACCEPTED);
    let a = timeout(WAIT, held).await.expect("the POST ends").unwrap();
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json(), json!([{"jsonrpc": "2.0", "id": 15, "result": {}}]));
    c.ping_ok(14).await;
    // Cancelling what is not in flight is harmless.
    c.post(cancel(99)).await.assert_empty(StatusCode::ACCEPTED);
    c.ping_ok(16).await;
}

#[tokio::test]
async fn a_client_that_takes_only_event_streams_gets_one() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let req = c
        .to(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "text/event-stream")
        .body(full(request(1, "ping")))
        .unwrap();
    let a = c.call(req).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.events(), [json!({"jsonrpc": "2.0", "id": 1, "result": {}})]);
}
