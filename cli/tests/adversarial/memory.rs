//! Memory under hostile input: the 1 GiB line, the 100 MB string, pipelined requests nobody
//! reads, and held requests padded with whitespace.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{
    AFTER, BEFORE, DEFAULT_MAX_FRAME_BYTES, INVALID, MIB, PING, Server, error_of, errors_of, mib,
    null, session, take_session_replies, tool_text,
};

/// A 1 GiB line with no newline in it, streamed in 1 MiB writes, then its newline. The server
/// answers -32600 (`"id": null`) as soon as the line passes the frame limit, while the line is
/// still arriving, and never holds it: its peak RSS must grow, over what it held before the
/// line, by less than `max_frame_bytes` + 64 MiB. Run with the default limit (16 MiB) and with
/// a 64 MiB one.
#[test]
fn a_one_gib_line_is_refused_while_it_streams_and_never_held() {
    let started = Instant::now();
    let runs = [DEFAULT_MAX_FRAME_BYTES, 64 * MIB].map(stream_one_gib_line);
    eprintln!("1 GiB lines: {:.2?} in all", started.elapsed());
    let over: Vec<String> = runs
        .iter()
        .filter(|(limit, grown)| *grown >= limit + 64 * MIB)
        .map(|(limit, grown)| {
            format!(
                "frame limit {} MiB: peak RSS grew {:.1} MiB, bound {:.1} MiB",
                limit / MIB,
                mib(*grown),
                mib(limit + 64 * MIB)
            )
        })
        .collect();
    assert!(over.is_empty(), "{over:#?}");
}

/// Streams the 1 GiB line at a server whose frame limit is `limit`; returns the limit and how
/// far the server's peak RSS rose over its RSS before the line (the binary's own size is not
/// the line's).
fn stream_one_gib_line(limit: u64) -> (u64, u64) {
    const LINE: u64 = 1 << 30;
    const CHUNK: usize = 1 << 20;
    let limit_arg = limit.to_string();
    let args: &[&str] =
        if limit == DEFAULT_MAX_FRAME_BYTES { &[] } else { &["--max-frame-bytes", &limit_arg] };
    let mut s = Server::start(args);
    let baseline = s.rss();
    s.line(BEFORE);

    let head = br#"{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"echo","arguments":{"message":""#;
    let mut chunk = vec![b'a'; CHUNK];
    chunk[..head.len()].copy_from_slice(head);
    let stream_started = Instant::now();
    s.send(&chunk);
    chunk[..head.len()].fill(b'a');
    let mut sent = CHUNK as u64;
    let mut refused_after = None;
    while sent < LINE {
        s.send(&chunk);
        sent += CHUNK as u64;
        // Once the line is past the limit (plus the pipe and the read chunk), the refusal must
        // already be on its way: wait for it before streaming the rest.
        if refused_after.is_none() && sent >= limit + 4 * MIB {
            let reply = s.take(|r| r.get("error").is_some());
            assert_eq!(error_of(&reply), (null(), INVALID), "{reply}");
            assert_eq!(
                reply["error"]["data"],
                format!("frame too large: longer than the {limit}-byte limit")
            );
            refused_after = Some(sent);
        }
    }
    s.send(b"\"}}}\n");
    let streamed = stream_started.elapsed();
    s.line(AFTER);
    s.line(PING);
    let mut replies = s.until("ping");
    let peak = s.peak_rss();
    let after = s.rss();
    assert!(s.alive());
    replies.extend(s.finish());
    // The refusal came while the line streamed; nothing else did.
    assert!(take_session_replies(replies).is_empty());
    eprintln!(
        "1 GiB line, {} MiB limit: refused after {} MiB sent; streamed in {streamed:.2?} \
         ({:.0} MiB/s); serve RSS {:.1} MiB before, peak {:.1} MiB, {:.1} MiB after",
        limit / MIB,
        refused_after.unwrap() / MIB,
        mib(LINE) / streamed.as_secs_f64(),
        mib(baseline),
        mib(peak),
        mib(after),
    );
    (limit, peak.saturating_sub(baseline))
}

/// A 100 MB string: with the frame limit raised to 128 MiB the request is parsed whole and the
/// tool answers (`echo` returns any message the frame limit admits, so the reply carries the
/// 100 MB back); with the default limit the frame is refused with -32600 and discarded.
#[test]
fn a_100_mb_string_is_parsed_under_a_raised_limit_and_refused_under_the_default() {
    const LEN: usize = 100_000_000;
    let mut line = Vec::with_capacity(LEN + 200);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"message":""#);
    line.resize(line.len() + LEN, b'z');
    line.extend_from_slice(b"\"}}}\n");

    let started = Instant::now();
    let limit = (128 * MIB).to_string();
    let mut peak = 0;
    let rest = session(&["--max-frame-bytes", &limit], |s| {
        s.send(&line);
        let reply = s.take_id("big");
        peak = s.peak_rss();
        let (text, is_error) = tool_text(&reply);
        assert!(!is_error && text.len() == LEN && text.bytes().all(|b| b == b'z'));
    });
    assert!(rest.is_empty(), "{rest:?}");
    eprintln!(
        "100 MB string, 128 MiB limit: {:.2?}, peak RSS {:.1} MiB",
        started.elapsed(),
        mib(peak)
    );

    let started = Instant::now();
    let rest = session(&[], |s| s.send(&line));
    assert_eq!(errors_of(&rest), [(null(), INVALID)], "{rest:?}");
    eprintln!("100 MB string, default limit: {:.2?}", started.elapsed());
}

/// 10^5 pipelined `echo` calls (105 MiB of requests, as much again of replies) written while
/// the client reads nothing. Backpressure must stop the server reading long before the writer
/// is done; once the client reads, every call is answered exactly once.
///
/// While the client reads nothing, the server holds at most, by the limits (defaults; the
/// terms of `UNREAD_BOUND_OVER_BASELINE`):
/// - replies waiting: the write queue (`max_write_queue_bytes`, 4 MiB, plus the control lane's
///   256 KiB) and the batch the write loop is blocked writing (as much again), each in a buffer
///   grown by doubling, and the smaller buffers each grew from, which the allocator may keep;
/// - tokio's stdin and stdout copy buffers, 2 MiB each;
/// - requests admitted and unanswered: `max_handlers + max_queued_requests` = 4,352, each its
///   ~1.1 KB frame, a task and its reply: about 2.2 KiB each (measured by raising
///   `--max-queued-requests`);
/// - the 64 KiB read-buffer chunks those frames were cut from (contiguous here: ~5 MiB).
///
/// Once the client reads, the rest flows at full speed and the peak is only checked against
/// holding the stream (an unbounded server would hold the 105 MiB of requests, or of
/// replies): the limits do not bound that phase as tightly, because a held frame keeps its
/// whole read-buffer chunk alive (see
/// `held_requests_padded_with_whitespace_stay_within_the_held_bytes_bound`).
#[test]
fn pipelined_requests_while_the_client_does_not_read_stay_bounded_and_all_arrive() {
    const N: usize = 100_000;
    const MESSAGE: usize = 1000;
    const QUEUE: u64 = 4 * MIB + 256 * 1024;
    const HELD: u64 = 256 + 4096;
    const UNREAD_BOUND_OVER_BASELINE: u64 = 2 * 2 * QUEUE // queued, and being written
        + 2 * QUEUE // the buffers those two grew from
        + 2 * 2 * MIB // tokio's stdio copies
        + HELD * 2300 // held requests
        + 8 * MIB; // read-buffer chunks
    let started = Instant::now();
    let mut s = Server::spawn(&[]);
    s.handshake();
    let baseline = s.rss();

    let filler = "m".repeat(MESSAGE - 8);
    let request = move |i: usize| {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"{i:08}{filler}\"}}}}}}\n"
        )
    };
    let total: u64 = (0..N).map(|i| request(i).len() as u64).sum();
    let written = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let mut stdin = s.stdin.take().unwrap();
    let writer = {
        let (written, done) = (written.clone(), done.clone());
        thread::spawn(move || {
            let mut buf = Vec::with_capacity(256 * 1024);
            for i in 0..N {
                buf.extend_from_slice(request(i).as_bytes());
                if buf.len() >= 200 * 1024 || i == N - 1 {
                    stdin.write_all(&buf).unwrap();
                    written.fetch_add(buf.len() as u64, Ordering::SeqCst);
                    buf.clear();
                }
            }
            stdin.write_all(format!("{PING}\n").as_bytes()).unwrap();
            stdin.flush().unwrap();
            done.store(true, Ordering::SeqCst);
            stdin
        })
    };

    // Wait until the writer is stuck (no progress for a second) or done.
    let mut last = (0, Instant::now());
    loop {
        thread::sleep(Duration::from_millis(50));
        let now = written.load(Ordering::SeqCst);
        if done.load(Ordering::SeqCst) {
            break;
        }
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(1) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "writer neither stuck nor done");
    }
    let stuck_at = written.load(Ordering::SeqCst);
    let peak_unread = s.peak_rss();
    assert!(
        !done.load(Ordering::SeqCst),
        "the writer finished all {total} bytes with nobody reading: no backpressure"
    );

    // Now read everything.
    s.start_reading();
    let mut seen = vec![false; N];
    let mut ping = false;
    for _ in 0..=N {
        let r = s.recv();
        if r["id"] == "ping" {
            assert_eq!(r["result"], json!({}));
            assert!(!ping, "ping answered twice");
            ping = true;
            continue;
        }
        let i = usize::try_from(r["id"].as_u64().unwrap_or_else(|| panic!("{r}"))).unwrap();
        assert!(!std::mem::replace(&mut seen[i], true), "{i} answered twice");
        let (text, is_error) = tool_text(&r);
        assert!(!is_error && text.len() == MESSAGE && text.starts_with(&format!("{i:08}")), "{r}");
    }
    assert!(ping && seen.iter().all(|&b| b));
    s.stdin = Some(writer.join().unwrap());
    assert!(s.alive());
    let peak = s.peak_rss();
    let rest = s.finish();
    assert!(rest.is_empty(), "{rest:?}");

    eprintln!(
        "pipelined: {N} requests, {:.1} MiB; the writer stuck at {:.1} MiB; serve RSS {:.1} MiB \
         after the handshake, peak {:.1} MiB while unread, {:.1} MiB overall; test took {:.2?}",
        mib(total),
        mib(stuck_at),
        mib(baseline),
        mib(peak_unread),
        mib(peak),
        started.elapsed()
    );
    assert!(stuck_at < total / 4, "stuck at {stuck_at} of {total}");
    let bound = baseline + UNREAD_BOUND_OVER_BASELINE;
    assert!(
        peak_unread < bound,
        "peak RSS while unread {:.1} MiB, bound {:.1} MiB",
        mib(peak_unread),
        mib(bound)
    );
    assert!(peak < baseline + total, "peak RSS {:.1} MiB: the stream was held", mib(peak));
}

/// Each held request's frame shares the read-buffer allocation it was cut from. A short
/// `sleep` call followed on its line by 65,000 spaces (JSON whitespace, outside the frame's
/// body) is held by its ~100-byte body in the accounting, but keeps alive the ~64 KiB chunk it
/// was read into. 4,000 such calls (held: 256 running, the rest queued; under every count
/// bound) must not make the server hold more than `max_held_request_bytes` (64 MiB) allows:
/// the bound is that plus 32 MiB for the 4,000 tasks (~2.2 KiB each) and the I/O buffers,
/// over the RSS before the first of them.
#[test]
fn held_requests_padded_with_whitespace_stay_within_the_held_bytes_bound() {
    const N: usize = 4000;
    const PAD: usize = 65_000;
    const DEFAULT_MAX_HELD_REQUEST_BYTES: u64 = 64 * MIB;
    let (mut baseline, mut peak) = (0, 0);
    let started = Instant::now();
    let rest = session(&[], |s| {
        baseline = s.rss();
        let pad = " ".repeat(PAD);
        for i in 0..N {
            s.send(
                format!(
                    r#"{{"jsonrpc":"2.0","id":"z{i}","method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":60000}}}}}}{pad}"#
                )
                .as_bytes(),
            );
            s.send(b"\n");
        }
        // Answered by the read loop itself: once it comes, every line before it was read.
        s.line(r#"{"jsonrpc":"2.0","id":"probe","method":5}"#);
        assert_eq!(error_of(&s.take_id("probe")), (json!("probe"), INVALID));
        peak = s.peak_rss();
        let cancels: String = (0..N)
            .map(|i| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":\"z{i}\"}}}}\n"))
            .collect();
        s.send(cancels.as_bytes());
    });
    // The cancelled calls answer nothing.
    assert!(rest.is_empty(), "{rest:?}");
    eprintln!(
        "{N} held calls padded to {PAD} bytes: serve RSS {:.1} MiB before, peak {:.1} MiB; \
         {:.2?}",
        mib(baseline),
        mib(peak),
        started.elapsed()
    );
    let bound = baseline + DEFAULT_MAX_HELD_REQUEST_BYTES + 32 * MIB;
    assert!(peak < bound, "peak RSS {:.1} MiB, bound {:.1} MiB", mib(peak), mib(bound));
}
