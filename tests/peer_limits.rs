//! Every bound of the peer at and one past it: handler concurrency, the requests held (by count
//! and by bytes), and the write queue against a client that does not read.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{Raw, Worker, with_raw, write_lines};
use futures::StreamExt;
use mcpwire::Id;
use mcpwire::Limits;
use mcpwire::peer::PeerBuilder;
use serde_json::json;
use tokio::io::AsyncWriteExt;

fn hang(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"hang"}}"#)
}

fn ping(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)
}

// On the paused clock, a sleep ends only once every task is idle: "nothing more will happen".
#[tokio::test(start_paused = true)]
async fn at_most_max_handlers_run_and_the_next_request_waits_for_one_to_finish() {
    let worker = Worker::default();
    let b = PeerBuilder::new().limits(Limits::default().max_handlers(4));
    let (_server, _conn, mut raw) = with_raw(&b, worker.clone());
    for i in 0..4 {
        raw.send(&hang(i)).await;
    }
    raw.send(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(worker.running.load(Ordering::SeqCst), 4);
    let early = tokio::time::timeout(Duration::from_millis(50), raw.frames.next()).await;
    assert!(early.is_err(), "the fifth request ran past the bound: {early:?}");
    // Reading goes on while the fifth waits, so this cancellation gets through and frees a slot.
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#)
        .await;
    assert_eq!(raw.next_json().await, json!({"jsonrpc":"2.0","id":"p","result":{}}));
    assert_eq!(worker.peak.load(Ordering::SeqCst), 4);
}

/// One hung request running, then `queued` more, then `probe`, then a cancellation of the first.
/// Returns whether the probe was admitted: if it was, reading went on and the cancellation ended
/// the first handler; if not, the read loop waits on the probe and never reads the cancellation.
async fn probe_admitted(limits: Limits, queued: usize, probe: &str) -> bool {
    let worker = Worker::default();
    let (_server, _conn, mut raw) = with_raw(&PeerBuilder::new().limits(limits), worker.clone());
    raw.send(&hang(0)).await;
    while worker.running.load(Ordering::SeqCst) < 1 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for i in 1..=queued {
        raw.send(&hang(i)).await;
    }
    raw.send(probe).await;
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}"#)
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(worker.running.load(Ordering::SeqCst), 1, "one handler slot");
    worker.ended.load(Ordering::SeqCst) == 1
}

#[tokio::test(start_paused = true)]
async fn past_max_queued_requests_the_peer_stops_reading() {
    let limits = Limits::default().max_handlers(1).max_queued_requests(8);
    let probe = r#"{"jsonrpc":"2.0","id":"probe","method":"hang"}"#;
    // 7 queued: the probe is the 8th and is admitted, so reading goes on.
    assert!(probe_admitted(limits, 7, probe).await);
    // 8 queued: the probe waits, and nothing after it is read.
    assert!(!probe_admitted(limits, 8, probe).await);
}

#[tokio::test(start_paused = true)]
async fn held_requests_hold_at_most_max_held_request_bytes() {
    let one = hang(1).len();
    let probe = r#"{"jsonrpc":"2.0","id":99,"method":"hang"}"#;
    assert_eq!(probe.len(), one + 1);
    // The running one, three queued and the probe: exactly at the bound, it is admitted.
    let at = Limits::default().max_handlers(1).max_held_request_bytes(4 * one + probe.len());
    assert!(probe_admitted(at, 3, probe).await);
    // One byte less: it waits.
    let past = at.max_held_request_bytes(4 * one + probe.len() - 1);
    assert!(!probe_admitted(past, 3, probe).await);
    // A lone request larger than the bound is still admitted (`probe_admitted` waits for it to
    // run); the next one waits.
    let tiny = Limits::default().max_handlers(1).max_held_request_bytes(1);
    assert!(!probe_admitted(tiny, 0, probe).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_is_held_back_and_then_gets_every_answer() {
    const WRITE_QUEUE: usize = 4096;
    let limits = Limits::default()
        .max_handlers(16)
        .max_queued_requests(64)
        .max_write_queue_bytes(WRITE_QUEUE);
    let (server, _conn, raw) = with_raw(&PeerBuilder::new().limits(limits), Worker::default());
    let Raw { mut frames, out } = raw;
    const N: usize = 20_000;
    let writer = write_lines(out, N, ping);
    // Not reading: the server fills the pipe and its write queue, its handlers wait for room,
    // the queue of held requests fills, and it stops reading: the sender stalls long before
    // all requests are sent.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!writer.is_finished(), "backpressure should have stalled the sender");
    let queued = server.queued_bytes();
    let bound = WRITE_QUEUE + mcpwire::limits::CONTROL_BUDGET_BYTES;
    assert!(queued <= bound, "queue at {queued}, bound {bound}");
    // What it answered fills the pipe and the write queue; what it holds stays within bounds.
    let s = server.stats().inbound;
    assert!(s.begun - s.finished <= 16 + 64, "{s:?}");
    assert!(s.begun < N as u64 / 2, "{s:?}");
    // Now read: every request is answered exactly once, with its result.
    let mut seen = vec![false; N];
    for _ in 0..N {
        let f = frames.next().await.unwrap().unwrap();
        let Some(Id::Num(i)) = f.id() else { panic!("{f:?}") };
        assert!(!std::mem::replace(&mut seen[i as usize], true), "{i} answered twice");
        assert_eq!(f.result().map(|r| r.get()), Some("{}"), "{f:?}");
    }
    writer.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reads_while_it_pipelines_gets_every_result() {
    let (_server, _conn, raw) = with_raw(&PeerBuilder::new(), Worker::default());
    let Raw { mut frames, out } = raw;
    const N: usize = 50_000;
    let writer = write_lines(out, N, ping);
    for _ in 0..N {
        let f = frames.next().await.unwrap().unwrap();
        assert_eq!(f.result().map(|r| r.get()), Some("{}"), "{f:?}");
    }
    writer.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_from_a_client_that_does_not_read_are_held_back_too() {
    let limits =
        Limits::default().max_handlers(16).max_queued_requests(64).max_write_queue_bytes(4096);
    let (server, _conn, raw) = with_raw(&PeerBuilder::new().limits(limits), Worker::default());
    let Raw { mut frames, out } = raw;
    const N: usize = 20_000;
    let writer = write_lines(out, N, |i| format!("[{}]", ping(i)));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!writer.is_finished(), "batches got around backpressure");
    let s = server.stats().inbound;
    assert!(s.begun < N as u64 / 2, "{s:?}");
    for _ in 0..N {
        let f = frames.next().await.unwrap().unwrap();
        assert_eq!(f.kind(), mcpwire::Kind::Batch);
    }
    writer.await.unwrap();
}

/// Answers `ping`; its notification handler holds on to the first notification for an hour.
#[derive(Clone)]
struct SlowNotes;

impl mcpwire::peer::Handler for SlowNotes {
    async fn request(
        &self,
        _: &mcpwire::peer::Incoming,
        _: &mcpwire::peer::Context,
    ) -> Result<mcpwire::peer::Reply, mcpwire::peer::RpcError> {
        Ok(mcpwire::peer::Reply::empty())
    }

    async fn notification(&self, _: &mcpwire::peer::Incoming, _: &mcpwire::peer::Context) {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
}

/// Sends `batches` batches, each one short notification padded with 1 MiB of whitespace, behind
/// a notification the handler holds, then a line that is not JSON; returns whether its -32700
/// came back, that is whether the read loop still read after the batches. (Not a request: a
/// request's handler waits until the notifications read before it have begun.)
async fn read_after_padded_notification_batches(batches: usize) -> bool {
    let (_server, _conn, raw) = with_raw(&PeerBuilder::new(), SlowNotes);
    let Raw { mut frames, mut out } = raw;
    let writer = tokio::spawn(async move {
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"first\"}\n").await.unwrap();
        let padding = vec![b' '; 1 << 20];
        for _ in 0..batches {
            out.write_all(b"[{\"jsonrpc\":\"2.0\",\"method\":\"n\"}").await.unwrap();
            out.write_all(&padding).await.unwrap();
            out.write_all(b"]\n").await.unwrap();
        }
        out.write_all(b"not json\n").await.unwrap();
        out
    });
    let answered = tokio::time::timeout(Duration::from_secs(60), frames.next()).await.is_ok();
    writer.abort();
    answered
}

// The notifications held for the ordered worker are bounded by their frames' bytes (16 MiB), and
// a batch's notifications count their share of the batch: padding cannot hide what they keep.
#[tokio::test(start_paused = true)]
async fn notifications_in_batches_count_the_bytes_they_keep() {
    // 15 batches of a little over 1 MiB each are held, under the bound: reading goes on.
    assert!(read_after_padded_notification_batches(15).await);
    // 17 pass it: the read loop waits for room, and the last line is never read.
    assert!(!read_after_padded_notification_batches(17).await);
}
