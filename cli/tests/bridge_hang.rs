//! `mcpwire bridge` in front of a child that is alive but hangs (`bridge/hang_child.py`): one
//! that stops reading its stdin, one that stops writing. Once a request has waited
//! `--hang-timeout`, the bridge pings the child; one that does not answer within as long again
//! is killed and started again, its requests in flight fail saying it hung, and the legacy
//! sessions end (404). A slow call, or a stall shorter than the ping's wait, of a child that
//! answers the ping goes on.

#[path = "bridge/support.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Answers, Client, start, text};

fn hang_child() -> Vec<&'static str> {
    vec!["python3", "-u", concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bridge/hang_child.py")]
}

fn starts(log: &str) -> usize {
    log.matches("hang-child: started").count()
}

/// A call the child answers after 2.5 s, five times `--hang-timeout`: the child answers each
/// ping meanwhile, so the call is answered and the child never restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_call_of_a_child_that_answers_pings_goes_on() {
    let bridge = start(&["--hang-timeout", "0.5"], &hang_child());
    let a = Client::new(&bridge.url, false, Answers::default()).await;
    let t = Instant::now();
    let r = a.call("slow", json!({"seconds": 2.5}), json!({})).await.unwrap();
    assert_eq!(text(&r), "slow done", "{r}");
    assert!(t.elapsed() >= Duration::from_millis(2400));
    let log = bridge.log.lock().unwrap().clone();
    assert_eq!(starts(&log), 1, "{log}");
}

/// At the bound: the child stops reading for 3 s with `--hang-timeout 2`. The request has
/// waited past 2 s when the bridge pings, and the child reads the ping (and answers it) before
/// the ping's own 2 s are up: it is not taken to hang, and the call is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_shorter_than_the_pings_wait_is_not_a_hang() {
    let bridge = start(&["--hang-timeout", "2"], &hang_child());
    let a = Client::new(&bridge.url, false, Answers::default()).await;
    let r = a.call("stall", json!({"seconds": 3}), json!({})).await.unwrap();
    assert_eq!(text(&r), "stall done", "{r}");
    assert_eq!(text(&a.call("echo", json!({"message": "same"}), json!({})).await.unwrap()), "same");
    let log = bridge.log.lock().unwrap().clone();
    assert_eq!(starts(&log), 1, "{log}");
}

/// Past the bound, the two ways to hang: a child that stops reading for good, and one that
/// reads on but never writes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_stops_reading_is_killed_and_started_again() {
    killed_and_started_again("deaf").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_stops_writing_is_killed_and_started_again() {
    killed_and_started_again("mute").await;
}

/// Client A's call makes the child hang while B's slow call is in flight: both fail with
/// -32603 saying the child hung, after the two waits counted from B's call, the oldest waiting
/// (ping after 1 s, its answer 1 s more), and within the checks' granularity of A's call; the legacy sessions end (404); the child is started again and
/// a new session is served.
async fn killed_and_started_again(tool: &str) {
    let bridge = start(&["--hang-timeout", "1", "--restart-min", "0.05"], &hang_child());
    let a = Client::new(&bridge.url, false, Answers::default()).await;
    let b = Arc::new(Client::new(&bridge.url, false, Answers::default()).await);
    // The waits run from the oldest request waiting for the child: B's, sent first.
    let oldest = Instant::now();
    let slow = tokio::spawn({
        let b = b.clone();
        async move { b.call("slow", json!({"seconds": 30}), json!({})).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t = Instant::now();
    let hung = a.call(tool, json!({}), json!({})).await.unwrap_err();
    let took = t.elapsed();
    assert_eq!(hung.code, mcpwire::ErrorCode::INTERNAL_ERROR, "{hung:?}");
    assert!(
        hung.message.contains("the child server hung before it answered tools/call"),
        "{hung:?}"
    );
    assert!(hung.message.contains("did not answer a ping within 1s"), "{hung:?}");
    let waited = oldest.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && took < Duration::from_secs(8),
        "{waited:?} {took:?}"
    );
    let other = slow.await.unwrap().unwrap_err();
    assert!(other.message.contains("the child server hung"), "{other:?}");
    // The sessions end once the child is gone (its group killed after the exit grace).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match a.call("echo", json!({"message": "x"}), json!({})).await {
            Err(e) if e.message.to_lowercase().contains("session") => break,
            other => assert!(Instant::now() < deadline, "{other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let fresh = Client::new(&bridge.url, true, Answers::default()).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(r) = fresh.call("echo", json!({"message": "back"}), json!({})).await {
            assert_eq!(text(&r), "back");
            break;
        }
        assert!(Instant::now() < deadline, "{}", bridge.log.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = bridge.log.lock().unwrap().clone();
    assert_eq!(starts(&log), 2, "{log}");
}
