//! `mcpwire bridge` in front of real children, with real HTTP clients of both eras: every
//! answer, progress notification and server request checked to reach the client it belongs
//! to, and each bound at and one past its limit. Faults and bad input: `bridge_faults.rs`.

#[path = "bridge/support.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::{Answers, Client, serve_child, start, text};

/// Many clients of both eras at once over one `mcpwire serve` child, each with several
/// requests in flight, echoes and sleeps with progress under tokens every client also uses:
/// every answer is the client's own, every progress notification reaches the client whose
/// request it concerns under that client's own token, and no client sees anyone else's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_clients_get_only_their_own_messages() {
    const CLIENTS: usize = 40;
    const REQUESTS: usize = 24;
    let bridge = start(&[], &serve_child());
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let url = bridge.url.clone();
        tasks.push(tokio::spawn(async move {
            let client = Arc::new(Client::new(&url, c % 2 == 1, Answers::default()).await);
            let mut calls = Vec::new();
            for r in 0..REQUESTS {
                let client = client.clone();
                calls.push(tokio::spawn(async move {
                    if r % 4 == 0 {
                        // The same tokens in every client: only the rewrite keeps them apart.
                        let res = client
                            .call(
                                "sleep",
                                json!({"ms": 5}),
                                json!({"progressToken": format!("t{r}")}),
                            )
                            .await
                            .unwrap();
                        assert_eq!(text(&res), "slept 5");
                    } else {
                        let message = format!("client {c} request {r}");
                        let res = client
                            .call("echo", json!({"message": message}), json!({}))
                            .await
                            .unwrap();
                        assert_eq!(text(&res), message, "an answer reached the wrong client");
                    }
                }));
            }
            for call in calls {
                call.await.unwrap();
            }
            let notes = client.seen.notes.lock().unwrap();
            let mut tokens: Vec<String> = notes
                .iter()
                .filter(|(m, _)| m == "notifications/progress")
                .map(|(_, p)| p["progressToken"].as_str().unwrap().to_owned())
                .collect();
            tokens.sort();
            let mut expected: Vec<String> =
                (0..REQUESTS).step_by(4).flat_map(|r| [format!("t{r}"), format!("t{r}")]).collect();
            expected.sort();
            assert_eq!(tokens, expected, "client {c}: progress misrouted");
            assert!(client.seen.requests.lock().unwrap().is_empty(), "client {c}");
            // The child logs each sleep (a legacy client's calls reach it as modern ones, at
            // the legacy session's level, debug); a log message names no request, so it goes
            // to the one client with requests in flight when there is one (its own sleep's, as
            // this client's requests are the only ones then) and is dropped otherwise.
            let others: Vec<_> = notes
                .iter()
                .filter(|(m, p)| m != "notifications/progress" && p["data"] != "sleeping 5 ms")
                .collect();
            assert!(others.is_empty(), "client {c} was sent {others:?}");
            let logs = notes.len() - tokens.len();
            assert!(c % 2 == 0 || logs == 0, "modern client {c} asked for no log messages");
            tokens.len()
        }));
    }
    let mut notes = 0;
    for t in tasks {
        notes += t.await.unwrap();
    }
    // Two progress notifications per sleep across every client.
    assert_eq!(notes, CLIENTS * REQUESTS.div_ceil(4) * 2);
}

/// Two legacy clients call `confirm` at once through a child that also speaks 2026-07-28:
/// each client is asked its own question (both questions are out at once, each answer waits
/// for the other question to be asked) and gets the answer to its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_elicitations_each_reach_their_own_client() {
    let bridge = start(&[], &serve_child());
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let yes = Answers { confirmed: true, barrier: Some(barrier.clone()), ..Answers::default() };
    let no = Answers { confirmed: false, barrier: Some(barrier), ..Answers::default() };
    let (a, b) =
        tokio::join!(Client::new(&bridge.url, false, yes), Client::new(&bridge.url, false, no));
    let (ra, rb) = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(
            a.call("confirm", json!({"question": "A: deploy?"}), json!({})),
            b.call("confirm", json!({"question": "B: delete?"}), json!({})),
        )
    })
    .await
    .expect("both elicitations were answered");
    assert_eq!(text(&ra.unwrap()), "confirmed");
    assert_eq!(text(&rb.unwrap()), "declined");
    for (client, question) in [(&a, "A: deploy?"), (&b, "B: delete?")] {
        let asked = client.seen.requests.lock().unwrap();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0].0, "elicitation/create");
        assert_eq!(asked[0].1["message"], question);
    }
}

/// A modern client in front of a child that speaks 2026-07-28 gets the child's own
/// `input_required` answer, as it would directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_client_gets_input_required_through_a_modern_child() {
    let bridge = start(&[], &serve_child());
    let c = Client::new(&bridge.url, true, Answers::default()).await;
    let r = c.call("confirm", json!({"question": "ok?"}), json!({})).await.unwrap();
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert_eq!(r["inputRequests"]["confirm"]["method"], "elicitation/create", "{r}");
    assert_eq!(r["inputRequests"]["confirm"]["params"]["message"], "ok?", "{r}");
    let d = c
        .peer
        .request("server/discover", Some(mcpwire::RawJson::new(&c.params(json!({}), json!({})))))
        .await
        .unwrap();
    assert!(d.result().unwrap().get().contains("2026-07-28"));
}

/// `--max-client-in-flight 3`: a client's three requests in flight go through, its fourth is
/// refused at once with -32000 naming the bound, another client is unaffected meanwhile, and
/// once one answer came the client may send again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_past_its_in_flight_bound_is_refused_at_once() {
    let bridge = start(&["--max-client-in-flight", "3"], &serve_child());
    let a = Arc::new(Client::new(&bridge.url, false, Answers::default()).await);
    let b = Client::new(&bridge.url, false, Answers::default()).await;
    let mut slow = Vec::new();
    for _ in 0..3 {
        let a = a.clone();
        slow.push(tokio::spawn(
            async move { a.call("sleep", json!({"ms": 1500}), json!({})).await },
        ));
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let refused = a.call("echo", json!({"message": "fourth"}), json!({})).await.unwrap_err();
    assert_eq!(refused.code.get(), -32000, "{refused:?}");
    assert!(refused.message.contains("at most 3 per client"), "{refused:?}");
    assert_eq!(refused.data().unwrap().get(), r#"{"maxInFlight":3}"#);
    let other = b.call("echo", json!({"message": "b"}), json!({})).await.unwrap();
    assert_eq!(text(&other), "b");
    for s in slow {
        assert_eq!(text(&s.await.unwrap().unwrap()), "slept 1500");
    }
    let again = a.call("echo", json!({"message": "again"}), json!({})).await.unwrap();
    assert_eq!(text(&again), "again");
}

/// `--max-child-in-flight 1`: one client with many requests queued cannot hold back another
/// client's single request: it goes next, not after the whole queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_to_the_child_is_round_robin() {
    let bridge = start(&["--max-child-in-flight", "1"], &serve_child());
    let greedy = Arc::new(Client::new(&bridge.url, false, Answers::default()).await);
    let polite = Client::new(&bridge.url, false, Answers::default()).await;
    let mut queued = Vec::new();
    for _ in 0..10 {
        let g = greedy.clone();
        queued.push(tokio::spawn(
            async move { g.call("sleep", json!({"ms": 200}), json!({})).await },
        ));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    let r = polite.call("echo", json!({"message": "me"}), json!({})).await.unwrap();
    assert_eq!(text(&r), "me");
    // Behind the one sleep in flight at most (and a second being admitted), not all ten.
    assert!(started.elapsed() < Duration::from_millis(1000), "{:?}", started.elapsed());
    for q in queued {
        q.await.unwrap().unwrap();
    }
}
