//! The three cheap attacks on the connection and session tables, each with real sockets: while
//! it runs, a legitimate client is served within a few seconds and loses nothing, and the
//! server's resident memory stays bounded (measured: the process's `VmRSS` before and after).

use crate::harness::*;

/// How many attacking connections: past the server's cap.
const CAP: usize = 256;
const ATTACKERS: usize = CAP + 64;

/// A legitimate client's session and a few requests, all answered, within `WAIT`.
async fn legitimate_client_is_served(s: &Served) -> Duration {
    let started = Instant::now();
    let mut c =
        timeout(WAIT, Client::session(s.addr, NO_BATCHES)).await.expect("initialize in time");
    for id in 1..=5 {
        timeout(WAIT, c.ping_ok(id)).await.expect("each request in time");
    }
    started.elapsed()
}

#[tokio::test]
async fn idle_connections_past_the_cap_do_not_keep_a_new_client_waiting() {
    let s = serve(HttpServer::new(PeerBuilder::new()).max_connections(CAP)).await;
    let before = rss_kib();
    let mut idle = Vec::new();
    for _ in 0..ATTACKERS {
        idle.push(TcpStream::connect(s.addr).await.unwrap());
    }
    // Sent nothing, and the table is full of them.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let took = legitimate_client_is_served(&s).await;
    let stats = s.server.stats();
    let grown = rss_kib().saturating_sub(before);
    println!("idle flood: served in {took:?}; {stats:?}; resident memory grew {grown} KiB");
    assert!(took < Duration::from_secs(3), "served in {took:?}");
    assert!(stats.connections <= CAP, "{stats:?}");
    assert!(stats.connections_shed > 0, "{stats:?}");
    assert!(grown < 64 * 1024, "resident memory grew {grown} KiB");
}

#[tokio::test]
async fn slowloris_headers_do_not_keep_a_new_client_waiting_and_time_out_as_a_whole() {
    const HEADERS: Duration = Duration::from_secs(2);
    let server = HttpServer::new(PeerBuilder::new()).max_connections(CAP).header_timeout(HEADERS);
    let s = serve(server).await;
    let before = rss_kib();
    // Each attacker sends a request line, then one header line every 100 ms, forever. They
    // connect one after another (a burst of SYNs past the kernel's SYN backlog would only be
    // retried a second later).
    let dribbling = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut attackers = Vec::new();
    for i in 0..ATTACKERS {
        let mut tcp = TcpStream::connect(s.addr).await.unwrap();
        let started = Instant::now();
        tcp.write_all(b"POST /mcp HTTP/1.1\r\n").await.unwrap();
        let on = dribbling.clone();
        attackers.push(tokio::spawn(async move {
            let mut n = 0;
            while on.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                if tcp.write_all(format!("X-Slow-{i}-{n}: a\r\n").as_bytes()).await.is_err() {
                    // Closed by the server: shed, or past the header timeout.
                    return Some(started.elapsed());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            None
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let took = legitimate_client_is_served(&s).await;
    let stats = s.server.stats();
    println!("slowloris: served in {took:?}; {stats:?}");
    assert!(took < Duration::from_secs(1), "served in {took:?}, not by the header timeout");
    assert!(stats.connections_shed > 0, "connections still sending headers were shed: {stats:?}");
    // Dribbling does not extend the header timeout: every attacker is closed, none later than
    // the timeout plus the time it takes to notice (a write after the close fails).
    tokio::time::sleep(HEADERS * 2).await;
    dribbling.store(false, std::sync::atomic::Ordering::Relaxed);
    let mut closed = 0;
    for a in attackers {
        if let Some(lasted) = a.await.unwrap() {
            closed += 1;
            assert!(lasted < HEADERS * 2, "an attacker kept its connection {lasted:?}");
        }
    }
    assert_eq!(closed, ATTACKERS, "every dribbling connection was closed");
    let grown = rss_kib().saturating_sub(before);
    println!("slowloris: resident memory grew {grown} KiB");
    assert!(grown < 64 * 1024, "resident memory grew {grown} KiB");
}

#[tokio::test]
async fn initializes_never_followed_up_with_idle_connections_leave_room_for_a_new_client() {
    // Both tables at once: every session taken by an `initialize` never followed up, on
    // connections left open and idle.
    let server = HttpServer::new(PeerBuilder::new()).max_connections(CAP).max_sessions(CAP / 2);
    let s = serve(server).await;
    let mut held = Vec::new();
    for _ in 0..CAP {
        let mut c = Client::connect(s.addr).await;
        assert_eq!(c.initialize(NO_BATCHES).await.status, StatusCode::OK);
        held.push(c);
    }
    let took = legitimate_client_is_served(&s).await;
    let stats = s.server.stats();
    println!("session flood: served in {took:?}; {stats:?}");
    assert!(took < Duration::from_secs(3), "served in {took:?}");
    assert!(stats.sessions <= CAP / 2 && stats.sessions_evicted > 0, "{stats:?}");
}
