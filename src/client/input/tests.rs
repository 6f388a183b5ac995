use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::client::{ClientOptions, Negotiated, negotiate};
use crate::mcp::input_rounds::*;
use crate::mcp::negotiation::VersionChoice;
use crate::peer::{Context, Handler, Incoming, PeerBuilder, PeerHandle, Reply, RpcError};

/// A modern server whose `tools/call` asks for input `rounds` times (each answer naming
/// `requests` elicitations and a state naming the round), then echoes what the last retry
/// carried. Every `tools/call` params it saw is kept.
struct Server {
    rounds: u32,
    requests: usize,
    seen: Mutex<Vec<Value>>,
    /// The params of each `tools/call` as written.
    raw: Mutex<Vec<String>>,
}

/// The state of round `round` as the server writes it: escapes included, to see it come
/// back byte for byte.
fn raw_state(round: u32) -> String {
    format!(r#""{{\"round\":{round},\"s\":\"\u00e9\"}}""#)
}

impl Handler for std::sync::Arc<Server> {
    async fn request(&self, request: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        let params: Value =
            request.params().map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
        match request.method() {
            "server/discover" => Reply::json(&json!({"resultType": "complete",
                "supportedVersions": ["2026-07-28"], "capabilities": {}})),
            "tools/call" => {
                let mut seen = self.seen.lock().unwrap();
                seen.push(params.clone());
                self.raw.lock().unwrap().push(request.params().unwrap().get().to_owned());
                let round = seen.len() as u32 - 1;
                if round < self.rounds {
                    let requests: serde_json::Map<String, Value> = (0..self.requests)
                        .map(|i| {
                            (
                                format!("k{i}"),
                                json!({"method": "elicitation/create",
                                "params": {"message": format!("m{i}")}}),
                            )
                        })
                        .collect();
                    // No requests at all: the state alone (a server shedding load).
                    let requests = if self.requests == 0 {
                        String::new()
                    } else {
                        format!(r#""inputRequests":{},"#, Value::Object(requests))
                    };
                    return Ok(Reply::raw_string(format!(
                        r#"{{"resultType":"input_required",{requests}"requestState":{}}}"#,
                        raw_state(round)
                    )));
                }
                Reply::json(&json!({"resultType": "complete", "content": [], "got": params}))
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

/// Answers each elicitation with its message.
struct Echo;

impl InputResolver for Echo {
    async fn resolve(&self, method: &str, params: Option<RawJson<'_>>) -> Result<String, String> {
        let p: Value = serde_json::from_str(params.map_or("null", |p| p.get())).unwrap();
        Ok(json!({"action": "accept", "content": {"method": method, "m": p["message"]}})
            .to_string())
    }
}

async fn pair(rounds: u32, requests: usize) -> (std::sync::Arc<Server>, PeerHandle, Negotiated) {
    let server = std::sync::Arc::new(Server {
        rounds,
        requests,
        seen: Mutex::new(Vec::new()),
        raw: Mutex::new(Vec::new()),
    });
    let (a, b) = tokio::io::duplex(1 << 16);
    PeerBuilder::new().connect(a, server.clone()).1.detach();
    let (peer, conn) = PeerBuilder::new().connect(b, crate::peer::NoHandler);
    conn.detach();
    let options = ClientOptions::new("t", "1")
        .version(VersionChoice::Fixed("2026-07-28".into()))
        .probe_timeout(Duration::from_secs(5));
    let agreed = negotiate(&peer, &options, None).await.unwrap();
    (server, peer, agreed)
}

async fn call(
    agreed: &Negotiated,
    peer: &PeerHandle,
    limits: InputLimits,
) -> Result<Incoming, InputError> {
    let params = RawJson::new(r#"{"name":"t","arguments":{"a":1}}"#);
    let call = agreed.request_with_input(
        peer,
        "tools/call",
        Some(params),
        crate::peer::RequestOptions::new(),
        &Echo,
        limits,
    );
    tokio::time::timeout(Duration::from_secs(10), call).await.unwrap()
}

#[tokio::test]
async fn a_call_needing_exactly_max_rounds_completes() {
    let (server, peer, agreed) = pair(3, 2).await;
    let reply = call(&agreed, &peer, InputLimits::default().max_rounds(3)).await.unwrap();
    let got: Value = reply.result_as().unwrap();
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.len(), 4);
    // The first call is the caller's own; each retry carries the last round only.
    assert!(seen[0].get("inputResponses").is_none() && seen[0].get("requestState").is_none());
    for (round, p) in seen.iter().enumerate().skip(1) {
        assert_eq!(p["name"], "t");
        assert_eq!(p["arguments"], json!({"a": 1}));
        assert_eq!(p["requestState"], format!(r#"{{"round":{},"s":"é"}}"#, round - 1));
        let raw = &server.raw.lock().unwrap()[round];
        let echoed = format!(r#""requestState":{}"#, raw_state(round as u32 - 1));
        assert!(raw.contains(&echoed), "{raw}");
        let responses = p["inputResponses"].as_object().unwrap();
        assert_eq!(responses.keys().collect::<Vec<_>>(), ["k0", "k1"]);
        assert_eq!(responses["k1"]["content"]["m"], "m1");
        assert_eq!(responses["k0"]["content"]["method"], "elicitation/create");
        assert!(p["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string());
    }
    assert_eq!(got["got"], seen[3]);
}

#[tokio::test]
async fn a_call_needing_one_round_more_than_max_fails() {
    let (server, peer, agreed) = pair(4, 1).await;
    let e = call(&agreed, &peer, InputLimits::default().max_rounds(3)).await.unwrap_err();
    assert!(matches!(e, InputError::TooManyRounds(3)), "{e}");
    // The first call and three retries were sent; no fifth.
    assert_eq!(server.seen.lock().unwrap().len(), 4);
    let (_, peer, agreed) = pair(1, 1).await;
    let e = call(&agreed, &peer, InputLimits::default().max_rounds(0)).await.unwrap_err();
    assert!(matches!(e, InputError::TooManyRounds(0)), "{e}");
}

#[tokio::test]
async fn input_requests_at_the_bound_are_fulfilled_and_past_it_refused() {
    let (_, peer, agreed) = pair(1, 3).await;
    assert!(call(&agreed, &peer, InputLimits::default().max_requests(3)).await.is_ok());
    let (server, peer, agreed) = pair(1, 4).await;
    let e = call(&agreed, &peer, InputLimits::default().max_requests(3)).await.unwrap_err();
    assert!(matches!(e, InputError::TooManyRequests { got: 4, max: 3 }), "{e}");
    assert_eq!(server.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_state_only_round_is_retried_with_the_state_and_no_responses() {
    let (server, peer, agreed) = pair(1, 0).await;
    call(&agreed, &peer, InputLimits::default()).await.unwrap();
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].get("inputResponses").is_none(), "{}", seen[1]);
    let raw = &server.raw.lock().unwrap()[1];
    assert!(raw.contains(&format!(r#""requestState":{}"#, raw_state(0))), "{raw}");
}
