//! Resumable event streams of legacy sessions (MCP "Resumability and Redelivery", SEP-1699
//! polling, 2025-11-25): event ids `N-K`, the priming event and `retry`, a handler closing its
//! POST's stream (`mcpwire::http::close_sse_stream`), `GET` with `Last-Event-ID` replaying
//! what the stream kept and going on with it, the replay buffer's bounds, the bounds on the
//! streams kept, and the answers to a `Last-Event-ID` that cannot be resumed.

use crate::harness::*;

/// The first version whose streams have priming events and may be closed for polling.
const POLLING: &str = "2025-11-25";

/// One event as sent: its `id`, its `retry`, and its data (empty for a priming event).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Ev {
    id: Option<String>,
    retry: Option<u64>,
    data: String,
}

impl Ev {
    fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

/// Every event in `text`, the priming event included (comments alone are not events).
fn events_of(text: &str) -> Vec<Ev> {
    let mut out = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut ev = Ev { id: None, retry: None, data: String::new() };
        let mut fields = 0;
        for line in block.lines() {
            if line.starts_with(':') {
                continue;
            }
            fields += 1;
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match name {
                "id" => ev.id = Some(value.to_owned()),
                "retry" => ev.retry = Some(value.parse().unwrap()),
                "data" => ev.data.push_str(value),
                "event" => assert_eq!(value, "message", "{text:?}"),
                other => panic!("unexpected field {other:?} in {text:?}"),
            }
        }
        if fields > 0 {
            out.push(ev);
        }
    }
    out
}

/// The events of an answer read whole (an event stream).
fn events(a: &Answer) -> Vec<Ev> {
    assert_eq!(content_type(&a.headers), Some("text/event-stream"), "{a:?}");
    events_of(std::str::from_utf8(&a.body).unwrap())
}

/// The stream number of an event id `N-K`, and `K`.
fn id_parts(id: &str) -> (u64, u64) {
    let (n, k) = id.split_once('-').unwrap_or_else(|| panic!("{id:?} is not N-K"));
    (n.parse().unwrap(), k.parse().unwrap())
}

/// A `poll` request: `before` progress notifications, the close, (`hold`: wait for release),
/// `after` more, the answer.
fn poll(id: i64, before: u64, after: u64, hold: bool) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "poll",
           "params": {"before": before, "after": after, "hold": hold,
                      "_meta": {"progressToken": id}}})
    .to_string()
}

/// A GET of the session's event stream resuming after `last` (any bytes, `None`: no header).
fn resume_req(c: &Client, last: &[&str]) -> Request<crate::harness::Body> {
    let mut b = c.to(Method::GET).header(header::ACCEPT, "text/event-stream");
    for l in last {
        b = b.header("last-event-id", *l);
    }
    b.body(empty()).unwrap()
}

/// Resumes after `last` on a connection of its own, reading the stream to its end.
async fn resume(c: &Client, last: &str) -> Answer {
    let mut g = c.beside().await;
    g.call(resume_req(&g, &[last])).await
}

/// Reads a stream's events until one carries data that `done` accepts.
async fn read_until(
    body: &mut ResponseBody,
    buf: &mut String,
    done: impl Fn(&Ev) -> bool,
) -> Vec<Ev> {
    let mut got = Vec::new();
    loop {
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            for e in events_of(&block) {
                let stop = done(&e);
                got.push(e);
                if stop {
                    return got;
                }
            }
        }
        read_more(body, buf).await;
    }
}

/// Waits for the end of a stream, whose remaining events are returned.
async fn read_to_end(body: &mut ResponseBody, buf: &mut String) -> Vec<Ev> {
    loop {
        let frame = timeout(WAIT, body.frame()).await.expect("the stream ends in time");
        match frame {
            None => return events_of(&std::mem::take(buf)),
            Some(f) => {
                if let Ok(data) = f.unwrap().into_data() {
                    buf.push_str(std::str::from_utf8(&data).unwrap());
                }
            }
        }
    }
}

/// The progress of a notification event, or `None` for another message.
fn progress(e: &Ev) -> Option<u64> {
    let v = e.json();
    (v["method"] == "notifications/progress").then(|| v["params"]["progress"].as_u64().unwrap())
}

fn is_response(e: &Ev, id: i64) -> bool {
    !e.data.is_empty() && e.json()["id"] == id && e.json()["result"]["polled"] == true
}

#[tokio::test]
async fn a_closed_post_stream_is_resumed_after_its_last_event_id_and_carries_the_response() {
    let s = serve(HttpServer::new(PeerBuilder::new()).sse_retry(Duration::from_millis(250))).await;
    let mut c = Client::session(s.addr, POLLING).await;

    // The POST ends once the handler closed its stream: a priming event (an id, the retry,
    // empty data), then what the handler sent before the close.
    let a = c.post(poll(1, 2, 1, true)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let evs = events(&a);
    assert_eq!(evs.len(), 3, "{evs:?}");
    assert_eq!((evs[0].retry, evs[0].data.as_str()), (Some(250), ""), "{evs:?}");
    let (n, k) = id_parts(evs[0].id.as_deref().unwrap());
    assert_eq!(k, 0);
    for (i, e) in evs[1..].iter().enumerate() {
        assert_eq!(e.id.as_deref(), Some(&*format!("{n}-{}", i + 1)), "{evs:?}");
        assert_eq!(progress(e), Some(i as u64 + 1), "{evs:?}");
    }
    s.probe.held().await;

    // Resumed from the priming event while the handler still runs: the events after it, then
    // what comes, live, up to the response, and the end.
    let mut g = c.beside().await;
    let r = g.send(resume_req(&g, &[&format!("{n}-0")])).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(content_type(r.headers()), Some("text/event-stream"));
    let mut body = r.into_body();
    let mut buf = String::new();
    let replayed = read_until(&mut body, &mut buf, |e| progress(e) == Some(2)).await;
    assert_eq!(replayed.iter().map(progress).collect::<Vec<_>>(), [Some(1), Some(2)]);
    s.probe.release.add_permits(1);
    let mut rest = read_until(&mut body, &mut buf, |e| is_response(e, 1)).await;
    rest.extend(read_to_end(&mut body, &mut buf).await);
    let ids: Vec<_> = rest.iter().map(|e| e.id.clone().unwrap()).collect();
    assert_eq!(ids, [format!("{n}-3"), format!("{n}-4")], "{rest:?}");
    assert_eq!(progress(&rest[0]), Some(3));
    assert!(is_response(&rest[1], 1), "{rest:?}");

    // Resuming again from the same id replays the same events (the stream has finished: the
    // connection ends after them); from the last event, nothing, and the end.
    let a = resume(&c, &format!("{n}-2")).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(events(&a), rest);
    let a = resume(&c, &format!("{n}-2")).await;
    assert_eq!(events(&a), rest, "a repeated Last-Event-ID");
    let a = resume(&c, &format!("{n}-4")).await;
    assert_eq!((a.status, events(&a)), (StatusCode::OK, vec![]), "{a:?}");
    // One it has not sent.
    resume(&c, &format!("{n}-5")).await.assert_error(
        StatusCode::BAD_REQUEST,
        SERVER_ERROR,
        Value::Null,
    );
    assert_eq!(s.server.stats().messages_dropped, 0);
    c.ping_ok(9).await;
}

/// The conformance suite's `test_reconnection`: closed before anything but the priming event,
/// answered after; the resumption gets the response.
#[tokio::test]
async fn a_stream_closed_at_once_is_resumed_from_its_priming_event() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, POLLING).await;
    let a = c.post(poll(7, 0, 0, false)).await;
    let evs = events(&a);
    assert_eq!(evs.len(), 1, "{evs:?}");
    assert_eq!((evs[0].retry, evs[0].data.as_str()), (Some(1000), ""), "the default retry, 1 s");
    let a = resume(&c, evs[0].id.as_deref().unwrap()).await;
    let evs = events(&a);
    assert_eq!(evs.len(), 1, "{evs:?}");
    assert!(is_response(&evs[0], 7), "{evs:?}");
}

#[tokio::test]
async fn the_replay_buffer_keeps_its_latest_events_and_refuses_a_resumption_from_before() {
    let s = serve(HttpServer::new(PeerBuilder::new()).replay_buffer(3, 1 << 20)).await;
    let mut c = Client::session(s.addr, POLLING).await;
    let a = c.post(poll(1, 0, 5, false)).await;
    let (n, _) = id_parts(events(&a)[0].id.as_deref().unwrap());
    // Five notifications and the response: events 1 to 6, of which 4, 5 and 6 are kept. Once
    // the response is in, resuming after 3 (exactly at the bound) gets them all.
    let deadline = Instant::now() + WAIT;
    let kept = loop {
        let a = resume(&c, &format!("{n}-3")).await;
        if a.status == StatusCode::OK {
            break events(&a);
        }
        // Not sent yet (400) while the handler runs.
        a.assert_error(StatusCode::BAD_REQUEST, SERVER_ERROR, Value::Null);
        assert!(Instant::now() < deadline, "the handler never answers");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let ids: Vec<_> = kept.iter().map(|e| e.id.clone().unwrap()).collect();
    assert_eq!(ids, [format!("{n}-4"), format!("{n}-5"), format!("{n}-6")]);
    assert!(is_response(&kept[2], 1), "{kept:?}");
    // One past the bound: its next event was dropped.
    let a = resume(&c, &format!("{n}-2")).await;
    a.assert_error(StatusCode::GONE, SERVER_ERROR, Value::Null);
    assert!(a.json()["error"]["message"].as_str().unwrap().contains("dropped"), "{a:?}");
    resume(&c, &format!("{n}-0")).await.assert_error(StatusCode::GONE, SERVER_ERROR, Value::Null);
    assert_eq!(events(&resume(&c, &format!("{n}-6")).await), vec![]);
    resume(&c, &format!("{n}-7")).await.assert_error(
        StatusCode::BAD_REQUEST,
        SERVER_ERROR,
        Value::Null,
    );
}

#[tokio::test]
async fn the_replay_buffers_byte_bound_keeps_the_newest_event_whatever_its_size() {
    let s = serve(HttpServer::new(PeerBuilder::new()).replay_buffer(100, 1)).await;
    let mut c = Client::session(s.addr, POLLING).await;
    let a = c.post(poll(1, 0, 2, false)).await;
    let (n, _) = id_parts(events(&a)[0].id.as_deref().unwrap());
    let deadline = Instant::now() + WAIT;
    loop {
        let a = resume(&c, &format!("{n}-2")).await;
        if a.status == StatusCode::OK {
            let evs = events(&a);
            assert_eq!(evs.len(), 1, "{evs:?}");
            assert!(is_response(&evs[0], 1), "{evs:?}");
            break;
        }
        assert!(Instant::now() < deadline, "the handler never answers");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    resume(&c, &format!("{n}-1")).await.assert_error(StatusCode::GONE, SERVER_ERROR, Value::Null);
}

/// Streams no connection delivers are kept up to a count and for a time; a stream of another
/// session, or one never made, is not this session's to resume.
#[tokio::test]
async fn an_unknown_expired_or_foreign_stream_is_gone() {
    // Long enough that no step of the test takes it on a loaded machine.
    const RETENTION: Duration = Duration::from_secs(1);
    let s = serve(HttpServer::new(PeerBuilder::new()).resumable_streams(1, RETENTION)).await;
    let mut a = Client::session(s.addr, POLLING).await;
    let mut b = Client::session(s.addr, POLLING).await;
    let first = events(&a.post(poll(1, 0, 0, false)).await)[0].id.clone().unwrap();
    let answered = |a: Answer, id: i64| {
        let evs = events(&a);
        assert!(evs.iter().any(|e| is_response(e, id)), "{evs:?}");
    };
    answered(resume(&a, &first).await, 1);

    // Another session's stream: not this one's to resume, and the owner still can.
    let gone = |a: Answer| a.assert_error(StatusCode::GONE, SERVER_ERROR, Value::Null);
    gone(resume(&b, &first).await);
    let (n, _) = id_parts(&first);
    gone(resume(&a, &format!("{}-0", n + 1_000_000)).await);
    answered(resume(&a, &first).await, 1);
    // B's own streams are its own.
    let theirs = events(&b.post(poll(1, 0, 0, false)).await)[0].id.clone().unwrap();
    answered(resume(&b, &theirs).await, 1);

    // Past the count (1 stream no connection delivers): the oldest is forgotten.
    let second = events(&a.post(poll(2, 0, 0, false)).await)[0].id.clone().unwrap();
    answered(resume(&a, &second).await, 2);
    gone(resume(&a, &first).await);
    answered(resume(&a, &second).await, 2);

    // Past the retention.
    tokio::time::sleep(RETENTION + Duration::from_millis(200)).await;
    gone(resume(&a, &second).await);
    a.ping_ok(3).await;
    b.ping_ok(3).await;
}

/// The GET stream is resumable too: a resumption takes it over from a connection still open
/// (which ends), replays what it missed, and goes on with the session's messages.
#[tokio::test]
async fn the_get_stream_is_resumed_and_taken_over() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, POLLING).await;
    let mut g = c.beside().await;
    let mut first = g.open_stream().await.into_body();
    let mut buf = String::new();
    let priming = read_until(&mut first, &mut buf, |_| true).await;
    assert_eq!((priming[0].data.as_str(), priming[0].retry), ("", Some(1000)), "{priming:?}");
    let (n, _) = id_parts(priming[0].id.as_deref().unwrap());
    let a = c.post(r#"{"jsonrpc":"2.0","id":1,"method":"announce","params":["one"]}"#).await;
    assert_eq!(a.json()["id"], 1);
    let one = read_until(&mut first, &mut buf, |e| !e.data.is_empty()).await;
    assert_eq!(one[0].id.as_deref(), Some(&*format!("{n}-1")));
    let a = c.post(r#"{"jsonrpc":"2.0","id":2,"method":"announce","params":["two"]}"#).await;
    assert_eq!(a.json()["id"], 2);

    // A fresh GET while a connection delivers it: 409. A resumption takes it over.
    let mut h = c.beside().await;
    let a = h.call(resume_req(&h, &[])).await;
    a.assert_error(StatusCode::CONFLICT, SERVER_ERROR, Value::Null);
    let mut r = c.beside().await;
    let resumed = r.send(resume_req(&r, &[&format!("{n}-1")])).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut resumed = resumed.into_body();
    let mut rbuf = String::new();
    let two = read_until(&mut resumed, &mut rbuf, |e| !e.data.is_empty()).await;
    assert_eq!(two[0].id.as_deref(), Some(&*format!("{n}-2")));
    assert_eq!(two[0].json()["params"]["data"], json!(["two"]));
    // The connection it was taken from ends (after what it had not sent yet).
    read_to_end(&mut first, &mut buf).await;
    let a = c.post(r#"{"jsonrpc":"2.0","id":3,"method":"announce","params":["three"]}"#).await;
    assert_eq!(a.json()["id"], 3);
    let three = read_until(&mut resumed, &mut rbuf, |e| !e.data.is_empty()).await;
    assert_eq!(three[0].id.as_deref(), Some(&*format!("{n}-3")));
    assert_eq!(s.server.stats().messages_dropped, 0);
}

/// Before 2025-11-25 a session's streams have event ids but no priming event (its clients may
/// fail on empty data), and a handler's close is ignored: the POST streams to its end.
#[tokio::test]
async fn an_older_session_gets_ids_without_priming_and_its_streams_are_not_closed() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let a = c.post(poll(1, 1, 1, false)).await;
    let evs = events(&a);
    assert_eq!(evs.len(), 3, "{evs:?}");
    assert!(evs.iter().all(|e| e.retry.is_none() && !e.data.is_empty()), "{evs:?}");
    let (n, _) = id_parts(evs[0].id.as_deref().unwrap());
    let ids: Vec<_> = evs.iter().map(|e| e.id.clone().unwrap()).collect();
    assert_eq!(ids, [format!("{n}-1"), format!("{n}-2"), format!("{n}-3")]);
    assert!(is_response(&evs[2], 1));
    // Resumable all the same.
    assert_eq!(events(&resume(&c, &format!("{n}-2")).await), evs[2..]);
}

/// Closing is a no-op where the response could not be resumed: a client that takes only
/// JSON, and a stateless (2026-07-28) request.
#[tokio::test]
async fn a_close_is_ignored_for_a_json_only_client_and_a_stateless_request() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, POLLING).await;
    let req = c
        .to(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .body(full(poll(1, 1, 1, false)))
        .unwrap();
    let a = c.call(req).await;
    assert_eq!(a.json(), json!({"jsonrpc": "2.0", "id": 1, "result": {"polled": true}}));

    let modern = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                        "progressToken": 2});
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "poll",
                      "params": {"before": 1, "after": 1, "_meta": modern}});
    let mut m = Client::connect(s.addr).await;
    let req = m
        .to(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, BOTH)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "poll")
        .body(full(body.to_string()))
        .unwrap();
    let a = m.call(req).await;
    let evs = events(&a);
    assert_eq!(evs.len(), 3, "the whole answer on the POST: {evs:?}");
    assert!(evs.iter().all(|e| e.id.is_none() && e.retry.is_none()), "{evs:?}");
    assert!(is_response(&evs[2], 2), "{evs:?}");
}

/// Over a transport that routes nothing (here a socket pair), `close_sse_stream` writes
/// nothing: the handler's messages and response are all there is.
#[tokio::test]
async fn a_close_is_a_no_op_off_http() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (_server, _conn) = PeerBuilder::new().connect(a, Probe::new());
    let (mut r, mut w) = tokio::io::split(b);
    w.write_all(format!("{}\n", poll(1, 1, 1, false)).as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    while got.iter().filter(|&&b| b == b'\n').count() < 3 {
        let n = timeout(WAIT, r.read(&mut chunk)).await.expect("in time").unwrap();
        assert!(n > 0, "the peer closed");
        got.extend_from_slice(&chunk[..n]);
    }
    // Nothing more comes.
    assert!(timeout(Duration::from_millis(100), r.read(&mut chunk)).await.is_err());
    let text = String::from_utf8(got).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3, "{text:?}");
    assert_eq!(lines[2], json!({"jsonrpc": "2.0", "id": 1, "result": {"polled": true}}));
}

// ---------------------------------------------------------------------------------------------
// A Last-Event-ID that is not one to resume: a precise 4xx, never a panic, and the session and
// server go on.

#[tokio::test]
async fn a_malformed_huge_or_repeated_last_event_id_gets_400() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, POLLING).await;
    let id = events(&c.post(poll(1, 0, 0, false)).await)[0].id.clone().unwrap();
    let huge = "9".repeat(8 * 1024);
    let huge_id = format!("{}-{}", "1".repeat(30), "2".repeat(30));
    let bad: Vec<Vec<&str>> = vec![
        vec!["abc"],
        vec!["1-"],
        vec!["-1"],
        vec!["0-0"],
        vec!["1-1-1"],
        vec!["01-1"],
        vec!["1 -1"],
        vec!["1-0x1"],
        vec!["-"],
        vec!["99999999999999999999999-1"],
        vec![&huge],
        vec![&huge_id],
        vec!["\u{00e9}-1"],
        vec![&id, &id],
        vec![&id, "2-0"],
    ];
    for last in &bad {
        let mut g = c.beside().await;
        let req = resume_req(&g, last);
        let a = g.call(req).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{last:?}: {a:?}");
        a.assert_error(StatusCode::BAD_REQUEST, SERVER_ERROR, Value::Null);
    }
    // Bytes no header value of a client library would send (a NUL is refused by the server's
    // HTTP parser itself), on a raw socket.
    for raw in [&b"1-\x01"[..], b"\xff\xfe-1", b"1-1\x7f", b"\x00"] {
        let mut sock = TcpStream::connect(s.addr).await.unwrap();
        let mut req = format!(
            "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n{SESSION_HEADER}: {}\r\nLast-Event-ID: ",
            s.addr,
            c.session.as_deref().unwrap()
        )
        .into_bytes();
        req.extend_from_slice(raw);
        req.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
        sock.write_all(&req).await.unwrap();
        let mut got = Vec::new();
        timeout(WAIT, sock.read_to_end(&mut got)).await.expect("an answer in time").unwrap();
        let head = String::from_utf8_lossy(&got);
        assert!(head.starts_with("HTTP/1.1 400"), "{raw:?}: {head:?}");
    }
    // An empty one is no resumption: a fresh GET stream.
    let mut g = c.beside().await;
    let r = g.send(resume_req(&g, &[""])).await;
    assert_eq!(r.status(), StatusCode::OK);
    drop(r);
    // The session goes on, and its stream is still resumable.
    c.ping_ok(2).await;
    let evs = events(&resume(&c, &id).await);
    assert!(is_response(&evs[0], 1), "{evs:?}");
}

/// Random `Last-Event-ID`s (from a fixed seed), as header values and as raw bytes: each gets
/// 400 or 410 (or, for one hyper refuses, its own 400), and the server goes on.
#[tokio::test]
async fn random_last_event_ids_get_a_4xx_and_nothing_breaks() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, POLLING).await;
    let id = events(&c.post(poll(1, 0, 0, false)).await)[0].id.clone().unwrap();
    let (n, _) = id_parts(&id);
    let mut state: u64 = 0x5eed_1699;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let alphabet = b"0123456789--  abcxyz\t,;\xc3\xa9";
    let mut g = c.beside().await;
    for round in 0..300 {
        let len = (next() % 48) as usize;
        let mut v: Vec<u8> =
            (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
        if round % 3 == 0 {
            // Near misses of a real id: this stream, a number off, an event far ahead.
            let k = next() % 4;
            v = match k {
                0 => format!("{n}-{}", next() % 5 + 1),
                1 => format!("{}-0", n + 1 + next() % 1000),
                2 => format!("{n}-{}", u64::MAX - next() % 3),
                _ => format!("{}-{}", next(), next()),
            }
            .into_bytes();
        }
        let Ok(value) = HeaderValue::from_bytes(&v) else { continue };
        if value.as_bytes().trim_ascii().is_empty() {
            continue;
        }
        let req = g
            .to(Method::GET)
            .header(header::ACCEPT, "text/event-stream")
            .header("last-event-id", value)
            .body(empty())
            .unwrap();
        let a = g.call(req).await;
        let s = a.status;
        let resumed = s == StatusCode::OK;
        assert!(
            resumed || s == StatusCode::BAD_REQUEST || s == StatusCode::GONE,
            "{:?}: {a:?}",
            String::from_utf8_lossy(&v)
        );
        if !resumed {
            a.assert_error(s, SERVER_ERROR, Value::Null);
        }
    }
    c.ping_ok(2).await;
    let evs = events(&resume(&c, &id).await);
    assert!(is_response(&evs[0], 1), "{evs:?}");
}

/// With the GET stream turned off, a GET without `Last-Event-ID` is 405, and a resumption of a
/// POST's stream still works: it is the POST's answer, not a stream of the server's own.
#[tokio::test]
async fn a_post_stream_is_resumed_with_the_get_stream_turned_off() {
    let s = serve(HttpServer::new(PeerBuilder::new()).get_stream(false)).await;
    let mut c = Client::session(s.addr, POLLING).await;
    let id = events(&c.post(poll(1, 0, 0, false)).await)[0].id.clone().unwrap();
    let mut g = c.beside().await;
    g.call(resume_req(&g, &[])).await.assert_empty(StatusCode::METHOD_NOT_ALLOWED);
    let evs = events(&resume(&c, &id).await);
    assert!(is_response(&evs[0], 1), "{evs:?}");
}
