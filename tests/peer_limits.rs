//! Every bound of the peer at and one past it: handler concurrency, the request queue (by count
//! and by bytes), and the write queue against a client that does not read.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{Raw, Worker, with_raw};
use futures::StreamExt;
use mcpwire::Id;
use mcpwire::Limits;
use mcpwire::peer::{PeerBuilder, SERVER_BUSY};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

fn hang(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"hang"}}"#)
}

#[tokio::test]
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

/// Sends `n` hanging requests past one running handler and returns the replies to a further
/// `probe` request: busy or not.
async fn queue_then_probe(limits: Limits, queued: usize, probe: &str) -> Value {
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
    // A busy reply comes at once; a queued request never answers (its handler waits behind a
    // hung one), so a short wait tells the two apart.
    let reply = tokio::time::timeout(Duration::from_millis(300), raw.next_json()).await;
    assert_eq!(worker.running.load(Ordering::SeqCst), 1);
    reply.unwrap_or(Value::Null)
}

#[tokio::test]
async fn requests_queue_up_to_max_queued_requests_and_the_next_is_answered_busy() {
    let limits = Limits::default().max_handlers(1).max_queued_requests(8);
    let probe = r#"{"jsonrpc":"2.0","id":"probe","method":"ping"}"#;
    // 7 queued: the probe is the 8th and waits.
    assert_eq!(queue_then_probe(limits, 7, probe).await, Value::Null);
    // 8 queued: the probe is refused at once, with its id.
    let v = queue_then_probe(limits, 8, probe).await;
    assert_eq!(v["id"], "probe");
    assert_eq!(v["error"]["code"], SERVER_BUSY.get());
}

#[tokio::test]
async fn queued_requests_hold_at_most_max_queued_request_bytes() {
    let one = hang(1).len();
    let probe = r#"{"jsonrpc":"2.0","id":99,"method":"hang"}"#;
    assert_eq!(probe.len(), one + 1);
    // Three queued of `one` bytes each, then the probe: exactly at the bound, it waits.
    let at = Limits::default().max_handlers(1).max_queued_request_bytes(3 * one + probe.len());
    assert_eq!(queue_then_probe(at, 3, probe).await, Value::Null);
    // One byte less: it is refused.
    let past = at.max_queued_request_bytes(3 * one + probe.len() - 1);
    let v = queue_then_probe(past, 3, probe).await;
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!(99), json!(SERVER_BUSY.get()))
    );
    // A lone request larger than the bound still queues when nothing else waits.
    let tiny = Limits::default().max_handlers(1).max_queued_request_bytes(1);
    assert_eq!(queue_then_probe(tiny, 0, probe).await, Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_is_held_back_and_then_gets_every_answer() {
    const WRITE_QUEUE: usize = 4096;
    let limits = Limits::default()
        .max_handlers(16)
        .max_queued_requests(64)
        .max_write_queue_bytes(WRITE_QUEUE);
    let (server, _conn, raw) = with_raw(&PeerBuilder::new().limits(limits), Worker::default());
    let Raw { mut frames, mut out } = raw;
    const N: usize = 20_000;
    let writer = tokio::spawn(async move {
        for i in 0..N {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"ping\"}}\n");
            out.write_all(line.as_bytes()).await.unwrap();
        }
        out
    });
    // Not reading: the server fills the pipe, its write queue and then the control budget with
    // answers, then stops reading, so the sender stalls long before all requests are sent.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!writer.is_finished(), "backpressure should have stalled the sender");
    let queued = server.queued_bytes();
    let bound = WRITE_QUEUE + mcpwire::peer::CONTROL_BUDGET_BYTES;
    assert!(queued <= bound, "queue at {queued}, bound {bound}");
    // Now read: every request is answered exactly once, `{}` or busy.
    let mut seen = vec![false; N];
    let (mut ok, mut busy) = (0, 0);
    for _ in 0..N {
        let f = frames.next().await.unwrap().unwrap();
        let Some(Id::Num(i)) = f.id() else { panic!("{f:?}") };
        assert!(!std::mem::replace(&mut seen[i as usize], true), "{i} answered twice");
        match f.error() {
            None => ok += 1,
            Some(e) => {
                assert_eq!(e.code, SERVER_BUSY.get());
                busy += 1;
            }
        }
    }
    writer.await.unwrap();
    assert!(ok >= 16 + 64, "{ok} answered, {busy} busy");
    assert_eq!(server.stats().busy_replies, busy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reads_while_it_pipelines_gets_every_result() {
    let (_server, _conn, raw) = with_raw(&PeerBuilder::new(), Worker::default());
    let Raw { mut frames, mut out } = raw;
    const N: usize = 50_000;
    let writer = tokio::spawn(async move {
        for i in 0..N {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"ping\"}}\n");
            out.write_all(line.as_bytes()).await.unwrap();
        }
        out
    });
    for _ in 0..N {
        let f = frames.next().await.unwrap().unwrap();
        assert_eq!(f.result().map(|r| r.get()), Some("{}"), "{f:?}");
    }
    writer.await.unwrap();
}
