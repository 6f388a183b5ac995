//! HTTP/2 over cleartext with prior knowledge, on the same port as HTTP/1.1: both eras, many
//! requests at once on one connection, and each HTTP/2 bound (streams, windows, header list,
//! frame size, resets, floods of SETTINGS and PING, keep-alive PINGs, idle connections) at and
//! past its value, with a well-behaved client served beside the abusive one; HTTP/2 turned off,
//! and the bounds' zero values.
//!
//! The well-behaved client is hyper's HTTP/2 connection (one [`H2`] is one TCP connection);
//! the header-list bound is driven with the `h2` crate, whose client sends exactly the fields
//! it is given; the rest is written frame by frame ([`crate::h2_frames`]).

use std::sync::atomic::{AtomicBool, Ordering};

use hyper_util::rt::TokioExecutor;

use crate::h2_frames::*;
use crate::harness::*;

const MODERN: &str = "2026-07-28";

/// [`Probe`], and `tools/call` answering a text content of its arguments.
#[derive(Clone)]
struct Tools(Probe);

impl Handler for Tools {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        if req.method() == "tools/call" {
            let p = req.params_as::<Value>().map_err(RpcError::invalid_params)?;
            let text = format!("{}: {}", p["name"].as_str().unwrap_or(""), p["arguments"]);
            return Reply::json(&json!({"content": [{"type": "text", "text": text}]}));
        }
        self.0.request(req, cx).await
    }
}

async fn serve_tools(server: HttpServer) -> Served {
    serve_with(server, Tools).await
}

/// One HTTP/2 connection of hyper's client; clones share it.
#[derive(Clone)]
struct H2 {
    send: hyper::client::conn::http2::SendRequest<crate::harness::Body>,
    addr: SocketAddr,
}

impl H2 {
    async fn connect(addr: SocketAddr) -> Self {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let (send, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                .await
                .expect("an HTTP/2 handshake");
        tokio::spawn(conn);
        Self { send, addr }
    }

    fn post(&self, body: String, headers: &[(&str, &str)]) -> Request<crate::harness::Body> {
        let mut b = Request::post(format!("http://{}/mcp", self.addr))
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, BOTH);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(full(body)).unwrap()
    }

    async fn call(&mut self, req: Request<crate::harness::Body>) -> Answer {
        let r = timeout(WAIT, self.send.send_request(req)).await.expect("an answer in time");
        let r = r.expect("a response");
        assert_eq!(r.version(), http::Version::HTTP_2);
        Answer::read(r).await
    }
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": MODERN,
           "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A stateless request's body.
fn modern(id: i64, method: &str, mut params: Value) -> String {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

async fn modern_call(c: &mut H2, id: i64) -> Answer {
    let args = json!({"name": "echo", "arguments": {"n": id}});
    let headers =
        [("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];
    let req = c.post(modern(id, "tools/call", args), &headers);
    c.call(req).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_serves_both_eras_many_requests_on_one_connection_and_http1_on_the_same_port() {
    let s = serve_tools(HttpServer::new(PeerBuilder::new())).await;
    let c = H2::connect(s.addr).await;

    // 200 stateless tool calls in flight at once on the one connection.
    let calls = (0..200).map(|id| {
        let mut c = c.clone();
        async move { (id, modern_call(&mut c, id).await) }
    });
    for (id, a) in futures::future::join_all(calls).await {
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        let v = a.json();
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["result"]["content"][0]["text"], format!("echo: {{\"n\":{id}}}"), "{v}");
        assert_eq!(a.header(SESSION_HEADER), None);
    }
    assert_eq!(s.server.stats().connections, 1, "one connection carried them all");

    // A legacy session on the same connection: initialize, requests at once, one answered on
    // an event stream with its progress first.
    let mut c = c.clone();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                      "params": {"protocolVersion": NO_BATCHES, "capabilities": {},
                                 "clientInfo": {"name": "h2", "version": "1"}}});
    let a = c.call(c.post(init.to_string(), &[])).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let session = a.header(SESSION_HEADER).expect("a session id").to_owned();
    let in_session = [(SESSION_HEADER, session.as_str()), (VERSION_HEADER, NO_BATCHES)];
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let a = c.call(c.post(note.into(), &in_session)).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    let pings = (1..=50).map(|id| {
        let mut c = c.clone();
        let req = c.post(request(id, "ping"), &in_session);
        async move { (id, c.call(req).await) }
    });
    let slow = json!({"jsonrpc": "2.0", "id": 99, "method": "slow",
                      "params": {"steps": 3, "_meta": {"progressToken": "p"}}});
    let mut side = c.clone();
    let streamed = side.call(c.post(slow.to_string(), &in_session));
    let (pinged, streamed) = tokio::join!(futures::future::join_all(pings), streamed);
    for (id, a) in pinged {
        assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": id, "result": {}}), "{a:?}");
    }
    let events = streamed.events();
    assert_eq!(events.len(), 4, "{events:?}");
    for (i, e) in events[..3].iter().enumerate() {
        assert_eq!(e["method"], "notifications/progress", "{e}");
        assert_eq!(e["params"]["progress"], i + 1, "{e}");
    }
    assert_eq!(events[3], json!({"jsonrpc": "2.0", "id": 99, "result": {"steps": 3}}));

    // HTTP/1.1 on the same port, in the same session and in one of its own.
    let mut h1 = Client::connect(s.addr).await;
    h1.session = Some(session);
    h1.version = Some(NO_BATCHES.into());
    h1.ping_ok(7).await;
    Client::session(s.addr, NO_BATCHES).await.ping_ok(8).await;
    assert_eq!(s.server.stats().sessions, 2);
}

/// A stateless `hold` on a raw stream: its HEADERS and its body.
async fn open_hold(raw: &mut Raw, stream: u32, authority: &str) {
    let fields =
        post_fields(authority, &[("mcp-protocol-version", MODERN), ("mcp-method", "hold")]);
    let body = modern(i64::from(stream), "hold", json!({}));
    let mut out = frame(HEADERS, END_HEADERS, stream, &hpack(&fields));
    out.extend(frame(DATA, END_STREAM, stream, body.as_bytes()));
    raw.send(&out).await;
}

#[tokio::test]
async fn max_concurrent_streams_is_advertised_every_stream_within_it_is_served_and_one_past_it_refused()
 {
    const MAX: u32 = 4;
    assert_eq!(mcpwire::limits::DEFAULT_HTTP2_MAX_STREAMS, 256);
    let s = serve(HttpServer::new(PeerBuilder::new()).http2_max_concurrent_streams(MAX)).await;
    let authority = s.addr.to_string();
    let mut raw = Raw::connect(s.addr).await;
    assert_eq!(raw.setting(SETTINGS_MAX_CONCURRENT_STREAMS), Some(MAX));

    // MAX streams at once, each held in its handler.
    let streams: Vec<u32> = (0..MAX).map(|i| 2 * i + 1).collect();
    for &id in &streams {
        open_hold(&mut raw, id, &authority).await;
    }
    for _ in &streams {
        s.probe.held().await;
    }
    // One more, sent without waiting for any to end: refused, the others untouched.
    let extra = 2 * MAX + 1;
    open_hold(&mut raw, extra, &authority).await;
    let refused = raw.until(|f| f.stream == extra).await;
    assert_eq!((refused.ty, refused.code()), (RST_STREAM, REFUSED_STREAM), "{refused:?}");

    // Released, every held stream is answered 200 to its end.
    s.probe.release.add_permits(MAX as usize);
    let mut ended = Vec::new();
    let mut ok = Vec::new();
    while ended.len() < streams.len() {
        let f = raw.next().await.expect("the connection goes on");
        if f.stream == extra {
            // The refused stream's DATA came after its reset: h2 answers it STREAM_CLOSED.
            assert_eq!((f.ty, f.code()), (RST_STREAM, STREAM_CLOSED), "{f:?}");
            continue;
        }
        assert_ne!(f.ty, RST_STREAM, "{f:?}");
        if f.is_ok_head() {
            ok.push(f.stream);
        }
        if f.ty == DATA && f.flags & END_STREAM != 0 {
            ended.push(f.stream);
        }
    }
    ok.sort_unstable();
    ended.sort_unstable();
    assert_eq!((ok, ended), (streams.clone(), streams));
    // The refused one may be retried now, on the same connection.
    s.probe.release.add_permits(1);
    open_hold(&mut raw, extra + 2, &authority).await;
    let head = raw.until(|f| f.stream == extra + 2).await;
    assert!(head.is_ok_head(), "{head:?}");
}

#[tokio::test]
async fn flow_control_windows_are_advertised_a_body_of_the_window_is_taken_and_one_byte_more_is_an_error()
 {
    const WINDOW: u32 = 4096;
    const CONNECTION: u32 = 256 * 1024;
    assert_eq!(mcpwire::limits::DEFAULT_HTTP2_STREAM_WINDOW, 256 * 1024);
    assert_eq!(mcpwire::limits::DEFAULT_HTTP2_CONNECTION_WINDOW, 1024 * 1024);
    // A budget of one window's bytes: while one POST holds it, the next waits for room without
    // reading its body, so nothing the server reads reopens that stream's window.
    let server = HttpServer::new(PeerBuilder::new())
        .http2_initial_windows(WINDOW, CONNECTION)
        .max_body_bytes(WINDOW as usize);
    let s = serve(server).await;
    let authority = s.addr.to_string();
    let mut raw = Raw::connect(s.addr).await;
    assert_eq!(raw.setting(SETTINGS_INITIAL_WINDOW_SIZE), Some(WINDOW));
    assert_eq!(raw.connection_window_update, Some(CONNECTION - 65_535));

    // A held POST takes the whole budget (its declared length).
    let window = WINDOW as usize;
    raw.send(&padded_post(&authority, 1, "hold", window, window)).await;
    s.probe.held().await;

    // A body of exactly the window, on a stream that waits for room: taken, no error.
    raw.send(&padded_post(&authority, 3, "echo", window, window)).await;
    // Released, both are answered.
    s.probe.release.add_permits(1);
    let mut ended = Vec::new();
    while ended.len() < 2 {
        let f = raw.next().await.expect("the connection goes on");
        assert_ne!(f.ty, RST_STREAM, "{f:?}");
        assert_ne!(f.ty, GOAWAY, "{f:?}");
        if f.ty == HEADERS {
            assert!(f.is_ok_head(), "{f:?}");
        }
        if f.ty == DATA && f.flags & END_STREAM != 0 {
            ended.push(f.stream);
        }
    }
    ended.sort_unstable();
    assert_eq!(ended, [1, 3]);

    // Held again; then one byte past the window on a waiting stream.
    raw.send(&padded_post(&authority, 5, "hold", window, window)).await;
    s.probe.held().await;
    raw.send(&padded_post(&authority, 7, "echo", window + 1, window + 1)).await;
    // A stream error: that stream is reset, the connection and its other streams go on.
    let error = raw.until(|f| f.ty == GOAWAY || (f.ty == RST_STREAM && f.stream == 7)).await;
    assert_eq!((error.ty, error.stream, error.code()), (RST_STREAM, 7, FLOW_CONTROL_ERROR));
    s.probe.release.add_permits(1);
    let end = raw.until(|f| f.ty == GOAWAY || (f.stream == 5 && f.flags & END_STREAM != 0)).await;
    assert_eq!((end.ty, end.stream), (DATA, 5), "{end:?}");
}

/// A request of the `h2` crate's client with a `x-pad` header making its decoded header list
/// exactly `size` bytes: its status, or the stream's reset.
async fn with_header_list(
    send: &mut h2::client::SendRequest<Bytes>,
    addr: SocketAddr,
    size: usize,
) -> Result<StatusCode, h2::Error> {
    let authority = addr.to_string();
    let base = [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", authority.as_str()),
        (":path", "/elsewhere"),
        ("x-pad", ""),
    ];
    let pad = size.checked_sub(list_size(&base)).expect("room for the request's own fields");
    let req = Request::get(format!("http://{addr}/elsewhere"))
        .header("x-pad", "p".repeat(pad))
        .body(())
        .unwrap();
    let (answer, _) = send.send_request(req, true)?;
    let answer = timeout(WAIT, answer).await.expect("an answer in time")?;
    Ok(answer.status())
}

#[tokio::test]
async fn a_header_list_under_the_bound_is_served_one_that_reaches_it_gets_431_and_four_times_it_ends_the_connection()
 {
    const MAX: u32 = 4096;
    assert_eq!(mcpwire::limits::DEFAULT_HTTP2_MAX_HEADER_LIST, 64 * 1024);
    let s = serve(HttpServer::new(PeerBuilder::new()).http2_max_header_list_size(MAX)).await;
    let tcp = TcpStream::connect(s.addr).await.unwrap();
    let (send, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    let mut send = send.ready().await.unwrap();
    // The path is not the endpoint: 404 is the server's own answer, 431 h2's.
    let max = MAX as usize;
    assert_eq!(with_header_list(&mut send, s.addr, max - 1).await.unwrap(), StatusCode::NOT_FOUND);
    assert_eq!(
        with_header_list(&mut send, s.addr, max).await.unwrap(),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
    assert_eq!(
        with_header_list(&mut send, s.addr, 4 * max).await.unwrap(),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
    // The connection goes on.
    let mut send = send.ready().await.unwrap();
    assert_eq!(with_header_list(&mut send, s.addr, max - 1).await.unwrap(), StatusCode::NOT_FOUND);
    // More than four times the bound: the connection is closed.
    let e = with_header_list(&mut send, s.addr, 4 * max + 1).await.expect_err("a connection error");
    assert!(e.is_go_away(), "{e:?}");
    assert_eq!(e.reason(), Some(h2::Reason::ENHANCE_YOUR_CALM), "{e:?}");
}

/// A well-behaved HTTP/2 client's requests, one after another, each answered within `WAIT`,
/// until `until` is set; how many.
fn served_meanwhile(addr: SocketAddr, until: Arc<AtomicBool>) -> tokio::task::JoinHandle<u32> {
    tokio::spawn(async move {
        let mut c = H2::connect(addr).await;
        let mut n = 0;
        while !until.load(Ordering::Relaxed) {
            let a = modern_call(&mut c, i64::from(n)).await;
            assert_eq!(a.status, StatusCode::OK, "{a:?}");
            n += 1;
        }
        n
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rapid_reset_flood_is_ended_with_enhance_your_calm_while_another_connection_is_served() {
    assert_eq!(mcpwire::limits::DEFAULT_HTTP2_MAX_PENDING_RESETS, 20);
    let s = serve_tools(HttpServer::new(PeerBuilder::new())).await;
    let done = Arc::new(AtomicBool::new(false));
    let other = served_meanwhile(s.addr, done.clone());
    let authority = s.addr.to_string();
    let Raw { mut read, write, .. } = Raw::connect(s.addr).await;
    let mut write = write.unwrap();
    let fields =
        post_fields(&authority, &[("mcp-protocol-version", MODERN), ("mcp-method", "hold")]);
    let block = hpack(&fields);
    // Streams opened and reset at once, 100 to a write, up to 50,000: the server must end the
    // connection long before.
    let started = Instant::now();
    let flood = tokio::spawn(async move {
        let mut sent = 0u32;
        for batch in 0..500u32 {
            let mut out = Vec::new();
            for i in 0..100 {
                let id = 2 * (batch * 100 + i) + 1;
                out.extend(frame(HEADERS, END_HEADERS, id, &block));
                out.extend(rst(id, CANCEL));
            }
            if write.write_all(&out).await.is_err() {
                break;
            }
            sent += 100;
        }
        sent
    });
    let mut rest = Vec::new();
    let closed = timeout(WAIT, read.read_to_end(&mut rest)).await;
    let took = started.elapsed();
    let sent = flood.await.unwrap();
    assert!(closed.is_ok(), "the flooding connection still open after {took:?}");
    let goaway = find_goaway(&rest).expect("a GOAWAY before the close");
    println!("rapid reset: closed after {took:?}, {sent} streams sent");
    assert_eq!(goaway, ENHANCE_YOUR_CALM);
    assert!(sent < 50_000, "the whole flood was taken");
    done.store(true, Ordering::Relaxed);
    let served = timeout(WAIT, other).await.expect("the other client goes on").unwrap();
    assert!(served > 0, "the other connection was served meanwhile");
}

/// The error code of the first GOAWAY among the frames in `bytes` (read after the handshake).
fn find_goaway(mut bytes: &[u8]) -> Option<u32> {
    while bytes.len() >= 9 {
        let len = usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8 | usize::from(bytes[2]);
        if bytes.len() < 9 + len {
            break;
        }
        if bytes[3] == GOAWAY {
            return Some(u32::from_be_bytes(bytes[13..17].try_into().unwrap()));
        }
        bytes = &bytes[9 + len..];
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_of_settings_and_pings_are_each_acknowledged_without_growth_and_the_connection_serves_on()
 {
    const FRAMES: usize = 100_000;
    let s = serve_tools(HttpServer::new(PeerBuilder::new())).await;
    let done = Arc::new(AtomicBool::new(false));
    let other = served_meanwhile(s.addr, done.clone());
    let authority = s.addr.to_string();
    let floods = [("SETTINGS", settings(&[])), ("PING", frame(PING, 0, 0, &[7; 8]))]
        .map(|(what, one)| (what, Bytes::from(one.repeat(FRAMES))));
    let flood_kib = floods.iter().map(|(_, f)| f.len() as u64).sum::<u64>() / 1024;
    // Measured with the floods in memory, and kept there until the end (the writers send
    // clones): what grows is what the server (and the reading of its ACKs) kept, not hidden
    // by the floods' own memory freed and reused.
    let before = rss_kib();
    for (what, flood) in floods.clone() {
        let ty = flood[3];
        let mut raw = Raw::connect(s.addr).await;
        // Written by a task of its own, the answers (an ACK each) never read meanwhile: the
        // server either stops reading (its writes back up) or takes them all; either way
        // what it holds stays bounded (printed: on loopback the buffers took them all).
        let mut write = raw.write.take().unwrap();
        let mut writer = tokio::spawn(async move { write.write_all(&flood).await.map(|()| write) });
        let held_back = timeout(Duration::from_millis(500), &mut writer).await;
        let held_back = match held_back {
            Ok(written) => {
                raw.write = Some(written.unwrap().expect("the flood written"));
                false
            }
            Err(_) => true,
        };
        // Now read: every ACK comes, then a request on the same connection is answered.
        let mut acks = 0;
        while acks < FRAMES {
            let f = raw.next().await.expect("the connection goes on");
            assert_ne!(f.ty, GOAWAY, "{what}: {f:?}");
            if f.ty == ty && f.flags & ACK != 0 {
                acks += 1;
            }
        }
        if held_back {
            raw.write =
                Some(timeout(WAIT, writer).await.expect("the flood written").unwrap().unwrap());
        }
        open_hold(&mut raw, 1, &authority).await;
        s.probe.held().await;
        s.probe.release.add_permits(1);
        let head = raw.until(|f| f.stream == 1).await;
        assert!(head.is_ok_head(), "{what}: {head:?}");
        println!("{what} flood: {FRAMES} frames, each acknowledged; writer held back: {held_back}");
    }
    let grown = rss_kib().saturating_sub(before);
    drop(floods);
    println!("floods: resident memory grew {grown} KiB for {flood_kib} KiB of frames");
    // The whole flood kept would be its size again; half of it fails.
    assert!(
        grown < flood_kib / 2,
        "resident memory grew {grown} KiB for {flood_kib} KiB of frames"
    );
    done.store(true, Ordering::Relaxed);
    let served = timeout(WAIT, other).await.expect("the other client goes on").unwrap();
    assert!(served > 0, "the other connection was served meanwhile");
}

#[tokio::test]
async fn an_h2_connection_left_idle_or_stuck_in_its_preface_is_closed_after_the_header_timeout() {
    const IDLE: Duration = Duration::from_millis(300);
    let s = serve(HttpServer::new(PeerBuilder::new()).header_timeout(IDLE)).await;
    let authority = s.addr.to_string();
    let mut raw = Raw::connect(s.addr).await;
    assert_eq!(raw.setting(SETTINGS_MAX_HEADER_LIST_SIZE), Some(64 * 1024));
    assert_eq!(raw.setting(SETTINGS_MAX_FRAME_SIZE), Some(16 * 1024));
    open_hold(&mut raw, 1, &authority).await;
    s.probe.held().await;
    // A stream in progress for longer than the bound keeps the connection open.
    tokio::time::sleep(IDLE * 2).await;
    s.probe.release.add_permits(1);
    let end = raw.until(|f| f.stream == 1 && f.flags & END_STREAM != 0).await;
    assert_eq!(end.ty, DATA, "{end:?}");
    // Then idle: told to go (GOAWAY, NO_ERROR), and closed.
    let started = Instant::now();
    let goaway = raw.until_closed().await.expect("a GOAWAY before the close");
    let took = started.elapsed();
    assert_eq!(goaway.code(), NO_ERROR, "{goaway:?}");
    assert!(took >= IDLE / 2 && took < IDLE * 4, "closed after {took:?}");

    // A connection that stops inside the preface is closed too (HTTP/1.1 or HTTP/2 is still
    // undecided: neither's own timeout applies yet).
    let mut stuck = TcpStream::connect(s.addr).await.unwrap();
    stuck.write_all(&PREFACE[..10]).await.unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    timeout(WAIT, stuck.read_to_end(&mut rest)).await.expect("closed in time").ok();
    let took = started.elapsed();
    assert!(took >= IDLE / 2 && took < IDLE * 4, "closed after {took:?}");
    // The server goes on.
    Client::session(s.addr, NO_BATCHES).await.ping_ok(1).await;
}

#[tokio::test]
async fn an_h2_connection_is_busy_while_any_of_its_streams_is_answered_and_is_not_shed() {
    const IDLE: Duration = Duration::from_millis(400);
    let s =
        serve(HttpServer::new(PeerBuilder::new()).max_connections(1).header_timeout(IDLE)).await;
    let (addr, authority) = (s.addr, s.addr.to_string());
    let mut raw = Raw::connect(s.addr).await;
    open_hold(&mut raw, 1, &authority).await;
    open_hold(&mut raw, 3, &authority).await;
    s.probe.held().await;
    s.probe.held().await;
    // One of the two answered: the other is still in progress.
    s.probe.release.add_permits(1);
    let first = raw.until(|f| f.flags & END_STREAM != 0 && f.ty == DATA).await;
    // A new connection past the cap waits: the HTTP/2 one is busy, so it is not shed.
    let waiting = tokio::spawn(async move {
        Client::session(addr, NO_BATCHES).await.ping_ok(1).await;
    });
    tokio::time::sleep(IDLE / 2).await;
    assert!(!waiting.is_finished(), "served while the only connection had a stream in progress");
    assert_eq!(s.server.stats().connections_shed, 0);
    s.probe.release.add_permits(1);
    let second = raw.until(|f| f.flags & END_STREAM != 0 && f.ty == DATA).await;
    let mut ended = [first.stream, second.stream];
    ended.sort_unstable();
    assert_eq!(ended, [1, 3]);
    // Idle now: the waiting connection takes its place at once (it is shed, closed without a
    // GOAWAY, before its idle bound), and is served.
    let started = Instant::now();
    let goaway = raw.until_closed().await;
    assert!(goaway.is_none(), "closed for idleness, not shed: {goaway:?}");
    assert!(started.elapsed() < IDLE, "shed after {:?}", started.elapsed());
    timeout(WAIT, waiting).await.expect("served once the other ended").unwrap();
    assert_eq!(s.server.stats().connections_shed, 1);
}

/// Whether, after `out` is written in one go, the connection still answers a request (a 404
/// for another path on a new stream `next`): `Ok(())`, or `Err` with the GOAWAY's code.
async fn still_serves(raw: &mut Raw, out: &[u8], next: u32, authority: &str) -> Result<(), u32> {
    raw.send(out).await;
    let fields =
        [(":method", "GET"), (":scheme", "http"), (":authority", authority), (":path", "/x")];
    raw.send(&frame(HEADERS, END_HEADERS | END_STREAM, next, &hpack(&fields))).await;
    let f = raw.until(|f| f.ty == GOAWAY || (f.ty == HEADERS && f.stream == next)).await;
    if f.ty == GOAWAY { Err(f.code()) } else { Ok(()) }
}

#[tokio::test]
async fn reset_limits_at_their_bound_leave_the_connection_serving_and_one_past_ends_it() {
    const PENDING: usize = 5;
    const LOCAL: usize = 5;
    assert_eq!(mcpwire::limits::DEFAULT_HTTP2_MAX_LOCAL_RESETS, 1024);
    let s = serve(HttpServer::new(PeerBuilder::new()).http2_reset_limits(PENDING, LOCAL)).await;
    let authority = s.addr.to_string();
    let get = [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", authority.as_str()),
        (":path", "/x"),
    ];
    // Streams opened and reset in one write: the server reads them before it takes any.
    let opened_and_reset = |first: u32, n: usize| {
        let mut out = Vec::new();
        for id in (first..).step_by(2).take(n) {
            out.extend(frame(HEADERS, END_HEADERS | END_STREAM, id, &hpack(&get)));
            out.extend(rst(id, CANCEL));
        }
        out
    };
    let mut raw = Raw::connect(s.addr).await;
    let at = 2 * PENDING as u32 + 1;
    assert_eq!(still_serves(&mut raw, &opened_and_reset(1, PENDING), at, &authority).await, Ok(()));
    let mut raw = Raw::connect(s.addr).await;
    let past = opened_and_reset(1, PENDING + 1);
    let next = 2 * PENDING as u32 + 3;
    assert_eq!(still_serves(&mut raw, &past, next, &authority).await, Err(ENHANCE_YOUR_CALM));

    // Streams the server resets for the client's error (a connection-specific header field is
    // malformed in HTTP/2): each is reset PROTOCOL_ERROR, up to the bound.
    let malformed = |first: u32, n: usize| {
        let mut fields = get.to_vec();
        fields.push(("connection", "close"));
        let mut out = Vec::new();
        for id in (first..).step_by(2).take(n) {
            out.extend(frame(HEADERS, END_HEADERS | END_STREAM, id, &hpack(&fields)));
        }
        out
    };
    let mut raw = Raw::connect(s.addr).await;
    let at = 2 * LOCAL as u32 + 1;
    assert_eq!(still_serves(&mut raw, &malformed(1, LOCAL), at, &authority).await, Ok(()));
    let mut raw = Raw::connect(s.addr).await;
    let next = 2 * LOCAL as u32 + 3;
    assert_eq!(
        still_serves(&mut raw, &malformed(1, LOCAL + 1), next, &authority).await,
        Err(ENHANCE_YOUR_CALM)
    );
}

/// Once `serve` stops, an HTTP/2 connection is told to go (`GOAWAY`), the stream under way
/// still gets its answer, the connection closes and `serve` returns.
#[tokio::test]
async fn after_serve_stops_an_h2_connection_finishes_its_stream_and_is_told_to_go() {
    let probe = Probe::new();
    let make = {
        let probe = probe.clone();
        move || probe.clone()
    };
    let ServedHttp { addr, stop, task: serving } =
        serve_http(HttpServer::new(PeerBuilder::new()), make).await;
    let mut raw = Raw::connect(addr).await;
    open_hold(&mut raw, 1, &addr.to_string()).await;
    probe.held().await;
    stop.send(()).unwrap();
    let goaway = raw.until(|f| f.ty == GOAWAY).await;
    assert_eq!(goaway.code(), NO_ERROR, "{goaway:?}");
    // The stream under way finishes once its handler answers; PINGs are answered, as a
    // client does, and the connection then closes.
    probe.release.add_permits(1);
    let mut answered = false;
    while let Some(f) = raw.next().await {
        if f.ty == PING && f.flags & ACK == 0 {
            raw.send(&frame(PING, ACK, 0, &f.payload)).await;
        }
        answered |= f.stream == 1 && f.ty == DATA && f.flags & END_STREAM != 0;
        assert_ne!(f.ty, RST_STREAM, "{f:?}");
    }
    assert!(answered, "the stream under way was answered to its end");
    timeout(WAIT, serving).await.expect("serve returns").unwrap().unwrap();
}

/// A stateless POST of `method` on a raw stream, its body exactly `len` bytes (the request
/// padded with spaces, or cut short: a body the server never reads need not parse), declared
/// in `content-length` and sent in DATA frames of at most `chunk` bytes.
fn padded_post(authority: &str, stream: u32, method: &str, len: usize, chunk: usize) -> Vec<u8> {
    let declared = len.to_string();
    let headers =
        [("mcp-protocol-version", MODERN), ("mcp-method", method), ("content-length", &declared)];
    let fields = post_fields(authority, &headers);
    let mut body = format!("{:<1$}", modern(i64::from(stream), method, json!({})), len);
    body.truncate(len);
    let mut out = frame(HEADERS, END_HEADERS, stream, &hpack(&fields));
    let mut chunks = body.as_bytes().chunks(chunk).peekable();
    while let Some(c) = chunks.next() {
        let flags = if chunks.peek().is_none() { END_STREAM } else { 0 };
        out.extend(frame(DATA, flags, stream, c));
    }
    out
}

/// Whether an `echo` POST on stream `stream` whose body is one DATA frame of `len` bytes is
/// answered 200 (`Ok`), or ends the connection (`Err` with its GOAWAY's code).
async fn one_frame_post(
    raw: &mut Raw,
    stream: u32,
    authority: &str,
    len: usize,
) -> Result<(), u32> {
    raw.send(&padded_post(authority, stream, "echo", len, len)).await;
    let f = raw.until(|f| f.ty == GOAWAY || (f.ty == HEADERS && f.stream == stream)).await;
    if f.ty == GOAWAY {
        return Err(f.code());
    }
    assert!(f.is_ok_head(), "{f:?}");
    Ok(())
}

#[tokio::test]
async fn a_data_frame_of_the_max_frame_size_is_served_and_one_byte_larger_ends_the_connection_with_frame_size_error()
 {
    const FRAME: u32 = 20_000;
    assert_eq!(mcpwire::limits::DEFAULT_HTTP2_MAX_FRAME, 16 * 1024);
    let configured = [
        (HttpServer::new(PeerBuilder::new()), 16 * 1024),
        (HttpServer::new(PeerBuilder::new()).http2_max_frame_size(FRAME), FRAME),
    ];
    for (server, max) in configured {
        let s = serve(server).await;
        let authority = s.addr.to_string();
        let mut raw = Raw::connect(s.addr).await;
        assert_eq!(raw.setting(SETTINGS_MAX_FRAME_SIZE), Some(max));
        let max = max as usize;
        assert_eq!(one_frame_post(&mut raw, 1, &authority, max).await, Ok(()), "{max}");
        // The same connection goes on after a frame of the bound, and is ended by one past it.
        assert_eq!(one_frame_post(&mut raw, 3, &authority, max).await, Ok(()), "{max}");
        let past = one_frame_post(&mut raw, 5, &authority, max + 1).await;
        assert_eq!(past, Err(FRAME_SIZE_ERROR), "{max}");
        assert!(raw.until_closed().await.is_none(), "closed after its GOAWAY");
    }
    // Sizes outside what HTTP/2 allows are taken as its nearest bound.
    for (asked, advertised) in [(0, 16_384), (16_383, 16_384), (u32::MAX, (1 << 24) - 1)] {
        let s = serve(HttpServer::new(PeerBuilder::new()).http2_max_frame_size(asked)).await;
        let raw = Raw::connect(s.addr).await;
        assert_eq!(raw.setting(SETTINGS_MAX_FRAME_SIZE), Some(advertised), "{asked}");
    }
}

/// On a new connection to `s`, whose connection window is `window`: POSTs whose bodies wait
/// for room (another connection's held POST takes the whole body budget of `budget` bytes, so
/// the server reads none of them), `window` bytes over two streams, are taken and the
/// connection serves on; one byte more, on a third stream, ends it with `FLOW_CONTROL_ERROR`.
async fn the_connection_window_is_filled_then_exceeded(s: &Served, window: usize, budget: usize) {
    let authority = s.addr.to_string();
    let mut holder = Raw::connect(s.addr).await;
    holder.send(&padded_post(&authority, 1, "hold", budget, 16 * 1024)).await;
    s.probe.held().await;

    let mut raw = Raw::connect(s.addr).await;
    let opened = raw.connection_window_update.map_or(0, |u| u as usize);
    assert_eq!(65_535 + opened, window);
    let first = window / 2;
    let mut out = padded_post(&authority, 1, "echo", first, 16 * 1024);
    out.extend(padded_post(&authority, 3, "echo", window - first, 16 * 1024));
    assert_eq!(still_serves(&mut raw, &out, 5, &authority).await, Ok(()), "{window}");
    raw.send(&padded_post(&authority, 7, "echo", 1, 1)).await;
    let error = raw.until(|f| f.ty == GOAWAY || f.ty == RST_STREAM).await;
    assert_eq!((error.ty, error.code()), (GOAWAY, FLOW_CONTROL_ERROR), "{error:?}");
    assert!(raw.until_closed().await.is_none(), "closed after its GOAWAY");

    // The held POST is answered: the server goes on.
    s.probe.release.add_permits(1);
    let head = holder.until(|f| f.stream == 1).await;
    assert!(head.is_ok_head(), "{head:?}");
}

#[tokio::test]
async fn a_connection_window_filled_exactly_across_streams_is_taken_and_one_byte_more_is_a_flow_control_error()
 {
    const WINDOW: u32 = 100_000;
    const BUDGET: usize = 1024;
    let server = HttpServer::new(PeerBuilder::new())
        .http2_initial_windows(WINDOW, WINDOW)
        .max_body_bytes(BUDGET);
    let s = serve(server).await;
    the_connection_window_is_filled_then_exceeded(&s, WINDOW as usize, BUDGET).await;
}

#[tokio::test]
async fn a_connection_window_below_the_initial_65535_is_taken_as_65535_and_reopened_whole() {
    const BUDGET: usize = 1024;
    let server = HttpServer::new(PeerBuilder::new())
        .http2_initial_windows(100_000, 1)
        .max_body_bytes(BUDGET);
    let s = serve(server).await;
    // The window every connection starts with, exactly: no more (no WINDOW_UPDATE), no less.
    the_connection_window_is_filled_then_exceeded(&s, 65_535, BUDGET).await;

    // A body of the whole window, read: the server gives the window back whole (a target of 1
    // would give back 1 byte, then each byte as it is read).
    let authority = s.addr.to_string();
    let mut raw = Raw::connect(s.addr).await;
    raw.send(&padded_post(&authority, 1, "echo", 65_535, 16 * 1024)).await;
    let mut reopened = 0u64;
    let mut answered = false;
    loop {
        let f = raw.next().await.expect("the connection goes on");
        assert_ne!(f.ty, GOAWAY, "{f:?}");
        match f.ty {
            WINDOW_UPDATE if f.stream == 0 => {
                reopened += u64::from(u32::from_be_bytes(f.payload[..4].try_into().unwrap()));
            }
            HEADERS => assert!(f.is_ok_head(), "{f:?}"),
            DATA if f.flags & END_STREAM != 0 => {
                // What the server wrote before its answer's end is in before this PING's ACK.
                raw.send(&frame(PING, 0, 0, b"reopened")).await;
                answered = true;
            }
            PING if f.flags & ACK != 0 && answered => break,
            _ => {}
        }
    }
    assert_eq!(reopened, 65_535);
}

#[tokio::test]
async fn an_idle_h2_connection_is_pinged_every_interval_kept_while_it_answers_and_closed_once_it_does_not()
 {
    const EVERY: Duration = Duration::from_millis(200);
    const TIMEOUT: Duration = Duration::from_millis(300);
    assert_eq!(mcpwire::limits::DEFAULT_HTTP2_PING_INTERVAL, Duration::from_secs(30));
    assert_eq!(mcpwire::limits::DEFAULT_HTTP2_PING_TIMEOUT, Duration::from_secs(20));
    // The idle rule (header_timeout) far off: only the PINGs can close these connections.
    let server = HttpServer::new(PeerBuilder::new())
        .http2_keep_alive(Some(EVERY), TIMEOUT)
        .header_timeout(Duration::from_secs(60));
    let s = serve(server).await;

    // A client that answers: a PING about every interval (counted from the last frame the
    // server read), and open well past interval + timeout.
    let mut raw = Raw::connect(s.addr).await;
    let started = Instant::now();
    let mut last = started;
    let mut pings = 0;
    while started.elapsed() < (EVERY + TIMEOUT) * 3 {
        let f = raw.next().await.expect("the connection stays open");
        assert_ne!(f.ty, GOAWAY, "{f:?}");
        if f.ty == PING && f.flags & ACK == 0 {
            let gap = last.elapsed();
            assert!(gap >= EVERY / 2 && gap < EVERY * 5, "a PING after {gap:?}");
            raw.send(&frame(PING, ACK, 0, &f.payload)).await;
            last = Instant::now();
            pings += 1;
        }
    }
    assert!(pings >= 3, "{pings} PINGs in {:?}", started.elapsed());
    assert_eq!(still_serves(&mut raw, &[], 1, &s.addr.to_string()).await, Ok(()));

    // A client that never answers: pinged once, then told to go (GOAWAY, NO_ERROR) and closed
    // once the timeout has passed.
    let mut silent = Raw::connect(s.addr).await;
    let started = Instant::now();
    let ping = silent.until(|f| f.ty == PING).await;
    let pinged = started.elapsed();
    assert_eq!(ping.flags & ACK, 0, "{ping:?}");
    assert!(pinged < EVERY * 5, "the first PING after {pinged:?}");
    let goaway = silent.until_closed().await.expect("a GOAWAY before the close");
    let took = started.elapsed();
    assert_eq!(goaway.code(), NO_ERROR, "{goaway:?}");
    let bound = EVERY + TIMEOUT;
    assert!(took >= bound * 4 / 5 && took < bound * 4, "closed after {took:?}");
}

#[tokio::test]
async fn a_zero_ping_interval_is_taken_as_one_millisecond_so_pings_do_not_come_back_to_back() {
    const FOR: Duration = Duration::from_millis(300);
    let server = HttpServer::new(PeerBuilder::new())
        .http2_keep_alive(Some(Duration::ZERO), WAIT)
        .header_timeout(Duration::from_secs(60));
    let s = serve(server).await;
    let mut raw = Raw::connect(s.addr).await;
    let started = Instant::now();
    let mut pings = 0u32;
    // From each ACK sent to the next PING: the server reads the ACK after it is sent and
    // schedules the next PING 1 ms after that read, so never less than 1 ms (with no floor,
    // the next is due at once, and comes with the timer's next tick, often sooner).
    let mut acked: Option<Instant> = None;
    let mut least = Duration::MAX;
    while started.elapsed() < FOR {
        let f = raw.next().await.expect("the connection stays open");
        assert_ne!(f.ty, GOAWAY, "{f:?} after {pings} PINGs, {:?}", started.elapsed());
        if f.ty == PING && f.flags & ACK == 0 {
            if let Some(at) = acked {
                least = least.min(at.elapsed());
            }
            acked = Some(Instant::now());
            raw.send(&frame(PING, ACK, 0, &f.payload)).await;
            pings += 1;
        }
    }
    let took = started.elapsed();
    println!("zero interval: {pings} PINGs answered in {took:?}, at least {least:?} apart");
    assert!(pings >= 10, "{pings} PINGs in {took:?}");
    assert!(least >= Duration::from_millis(1), "a PING {least:?} after the last one's ACK");
    assert!(u128::from(pings) <= took.as_millis() + 1, "{pings} PINGs in {took:?}");
}

#[tokio::test]
async fn with_http2_off_an_h2c_preface_is_refused_and_http1_is_served_on_the_same_port() {
    let s = serve(HttpServer::new(PeerBuilder::new()).http2(false)).await;
    let mut tcp = TcpStream::connect(s.addr).await.unwrap();
    let mut hello = PREFACE.to_vec();
    hello.extend(settings(&[]));
    tcp.write_all(&hello).await.unwrap();
    let mut answer = Vec::new();
    timeout(WAIT, tcp.read_to_end(&mut answer)).await.expect("closed in time").ok();
    println!("HTTP/2 off, the preface answered: {:?}", String::from_utf8_lossy(&answer));
    assert_eq!(answer, b"", "closed without a byte");
    Client::session(s.addr, NO_BATCHES).await.ping_ok(1).await;
}

#[tokio::test]
async fn zero_concurrent_streams_is_taken_as_one_stream_at_a_time() {
    let s = serve(HttpServer::new(PeerBuilder::new()).http2_max_concurrent_streams(0)).await;
    let authority = s.addr.to_string();
    let mut raw = Raw::connect(s.addr).await;
    assert_eq!(raw.setting(SETTINGS_MAX_CONCURRENT_STREAMS), Some(1));
    open_hold(&mut raw, 1, &authority).await;
    s.probe.held().await;
    open_hold(&mut raw, 3, &authority).await;
    let refused = raw.until(|f| f.stream == 3).await;
    assert_eq!((refused.ty, refused.code()), (RST_STREAM, REFUSED_STREAM), "{refused:?}");
    s.probe.release.add_permits(2);
    let head = raw.until(|f| f.stream == 1 && f.ty == HEADERS).await;
    assert!(head.is_ok_head(), "{head:?}");
    let end = raw.until(|f| f.stream == 1 && f.flags & END_STREAM != 0).await;
    assert_eq!(end.ty, DATA, "{end:?}");
    // One at a time, one after another.
    open_hold(&mut raw, 5, &authority).await;
    let head = raw.until(|f| f.stream == 5).await;
    assert!(head.is_ok_head(), "{head:?}");
}

#[tokio::test]
async fn a_zero_header_list_bound_is_advertised_as_is_and_closes_each_h2_connection_at_its_first_request()
 {
    let s = serve(HttpServer::new(PeerBuilder::new()).http2_max_header_list_size(0)).await;
    let authority = s.addr.to_string();
    for _ in 0..2 {
        let mut raw = Raw::connect(s.addr).await;
        assert_eq!(raw.setting(SETTINGS_MAX_HEADER_LIST_SIZE), Some(0));
        assert_eq!(still_serves(&mut raw, &[], 1, &authority).await, Err(ENHANCE_YOUR_CALM));
        assert!(raw.until_closed().await.is_none(), "closed after its GOAWAY");
    }
    // HTTP/1.1 has its own bound.
    Client::session(s.addr, NO_BATCHES).await.ping_ok(1).await;
}
