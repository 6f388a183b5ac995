//! Multi round-trip requests (MRTR, 2026-07-28) on the client's side: a server that needs
//! something from the client before it can answer (a form filled, a completion sampled, the
//! roots) answers the request with an `InputRequiredResult` instead of sending requests of
//! its own; the client fulfils each of its `inputRequests` and sends the same request again
//! (a new JSON-RPC id), carrying `inputResponses` keyed as the requests were and the
//! `requestState` it was given, echoed byte for byte.
//!
//! The pieces are pure ([`outcome`], [`retry_params`]) so they can be tested, and used over
//! any I/O; [`Negotiated::request_with_input`](crate::mcp::client::Negotiated::request_with_input)
//! (feature `peer`) runs the loop over a peer, bounded by [`InputLimits`]:
//!
//! - a result without `resultType`, or with `"complete"`, ends the loop (a server of an
//!   earlier version sends none: the client MUST take it as complete);
//! - each `input_required` answer costs one round; past [`InputLimits::max_rounds`] retries
//!   the request fails with [`InputError::TooManyRounds`] rather than loop for as long as the
//!   server asks;
//! - an answer naming more than [`InputLimits::max_requests`] input requests fails with
//!   [`InputError::TooManyRequests`] before any is fulfilled;
//! - every retry is built from the caller's own params: the responses and state of a round go
//!   into the next request of that same call only, never into another request.
//!
//! ```
//! use mcpwire::RawJson;
//! use mcpwire::mcp::mrtr::{Outcome, outcome, retry_params};
//!
//! let answer = RawJson::new(r#"{"resultType":"input_required",
//!     "inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"ok?"}}},
//!     "requestState":"s\u00e9-1"}"#);
//! let Outcome::InputRequired(needed) = outcome(answer).unwrap() else { unreachable!() };
//! assert_eq!(needed.requests[0].key, "confirm");
//! assert_eq!(needed.requests[0].method, "elicitation/create");
//! let params = RawJson::new(r#"{"name":"deploy","arguments":{}}"#);
//! let responses = [("confirm".to_owned(), r#"{"action":"accept"}"#.to_owned())];
//! let retry = retry_params(Some(params), &responses, needed.request_state).unwrap();
//! assert_eq!(retry, r#"{"name":"deploy","arguments":{},"inputResponses":{"confirm":{"action":"accept"}},"requestState":"s\u00e9-1"}"#);
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::meta::member;
use crate::RawJson;

/// The `resultType` of an `InputRequiredResult`.
pub const INPUT_REQUIRED: &str = "input_required";

/// How many times one call is sent again with input responses, by default: a server that
/// answers every retry with more input requests (by fault or on purpose) would otherwise keep
/// the client fulfilling them, and sending, for ever.
pub const DEFAULT_MAX_INPUT_ROUNDS: u32 = 8;

/// How many input requests one `InputRequiredResult` may name, by default: each is fulfilled
/// before the retry (a form shown, a model sampled), so an answer naming thousands would make
/// the client do thousands of such things for one call.
pub const DEFAULT_MAX_INPUT_REQUESTS: usize = 16;

/// The bounds of one call's input rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputLimits {
    /// The most retries with input responses ([`DEFAULT_MAX_INPUT_ROUNDS`]).
    pub max_rounds: u32,
    /// The most input requests one answer may name ([`DEFAULT_MAX_INPUT_REQUESTS`]).
    pub max_requests: usize,
}

impl Default for InputLimits {
    fn default() -> Self {
        Self { max_rounds: DEFAULT_MAX_INPUT_ROUNDS, max_requests: DEFAULT_MAX_INPUT_REQUESTS }
    }
}

impl InputLimits {
    /// At most `n` retries with input responses.
    #[must_use]
    pub fn max_rounds(mut self, n: u32) -> Self {
        self.max_rounds = n;
        self
    }

    /// At most `n` input requests in one answer.
    #[must_use]
    pub fn max_requests(mut self, n: usize) -> Self {
        self.max_requests = n;
        self
    }
}

/// Why a call with input rounds failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// A request of the call failed (an error answer, the connection, a timeout).
    #[cfg(feature = "peer")]
    #[error(transparent)]
    Request(#[from] crate::peer::RequestError),
    /// The server's answer is not a result this client can act on.
    #[error("malformed InputRequiredResult: {0}")]
    Malformed(String),
    /// The server still asked for input after this many retries.
    #[error("the server still asks for input after {0} rounds")]
    TooManyRounds(u32),
    /// The server named this many input requests in one answer, more than allowed.
    #[error("the server named {got} input requests in one answer, more than {max}")]
    TooManyRequests {
        /// How many it named.
        got: usize,
        /// The bound.
        max: usize,
    },
    /// The client could not fulfil an input request.
    #[error("input request {key:?} ({method}) could not be fulfilled: {reason}")]
    Unfulfilled {
        /// The request's key.
        key: String,
        /// Its method.
        method: String,
        /// Why.
        reason: String,
    },
}

/// One request of an `InputRequiredResult`'s `inputRequests`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputRequest<'a> {
    /// The server's key for it, which its response carries back.
    pub key: Cow<'a, str>,
    /// Its method (`elicitation/create`, `sampling/createMessage`, `roots/list`).
    pub method: Cow<'a, str>,
    /// Its params, as sent.
    pub params: Option<RawJson<'a>>,
}

/// What an `InputRequiredResult` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputRequired<'a> {
    /// The input requests, in the order the server wrote them.
    pub requests: Vec<InputRequest<'a>>,
    /// The `requestState` to send back: the JSON string exactly as the server wrote it
    /// (quotes and escapes included), never decoded.
    pub request_state: Option<RawJson<'a>>,
}

/// What a result says about the call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// The call is done (`resultType` `"complete"`, or none).
    Complete,
    /// The server needs input first.
    InputRequired(InputRequired<'a>),
}

/// The members of a JSON object, borrowed and in their order.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    if out.iter().any(|(seen, _)| *seen == k) {
                        return Err(serde::de::Error::custom(format!("duplicate key {k:?}")));
                    }
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

fn members(json: RawJson<'_>) -> Result<Vec<(Cow<'_, str>, &RawValue)>, String> {
    serde_json::from_str::<Members<'_>>(json.get()).map(|m| m.0).map_err(|e| e.to_string())
}

/// Reads a result: complete, or the input it requires.
///
/// # Errors
///
/// [`InputError::Malformed`] when `result` is not an object, its `resultType` is neither
/// `"complete"` nor `"input_required"`, or an `InputRequiredResult` has neither
/// `inputRequests` nor `requestState`, an input request without a string `method`, or a
/// `requestState` that is not a string.
pub fn outcome(result: RawJson<'_>) -> Result<Outcome<'_>, InputError> {
    let bad = |why: String| InputError::Malformed(why);
    let kind = member(result, "resultType").map_err(|e| bad(e.message.into_owned()))?;
    let kind: Option<Cow<'_, str>> = match kind {
        None => None,
        Some(k) => {
            Some(k.deserialize().map_err(|_| bad(format!("resultType {k} is not a string")))?)
        }
    };
    match kind.as_deref() {
        None | Some("complete") => return Ok(Outcome::Complete),
        Some(INPUT_REQUIRED) => {}
        Some(other) => return Err(bad(format!("unknown resultType {other:?}"))),
    }
    let requests = member(result, "inputRequests").map_err(|e| bad(e.message.into_owned()))?;
    let state = member(result, "requestState").map_err(|e| bad(e.message.into_owned()))?;
    if let Some(s) = state
        && !s.get().trim_start().starts_with('"')
    {
        return Err(bad(format!("requestState {s} is not a string")));
    }
    let state = state.map(|s| RawJson::new(s.get().trim()));
    let mut out = Vec::new();
    if let Some(requests) = requests {
        for (key, request) in members(requests).map_err(|e| bad(format!("inputRequests: {e}")))? {
            #[derive(serde::Deserialize)]
            struct Wire<'a> {
                #[serde(borrow)]
                method: Cow<'a, str>,
                #[serde(borrow)]
                params: Option<&'a RawValue>,
            }
            let w: Wire<'_> = serde_json::from_str(request.get())
                .map_err(|e| bad(format!("input request {key:?}: {e}")))?;
            out.push(InputRequest {
                key,
                method: w.method,
                params: w.params.map(|p| RawJson::new(p.get())),
            });
        }
    }
    if requests.is_none() && state.is_none() {
        return Err(bad("neither inputRequests nor requestState".into()));
    }
    Ok(Outcome::InputRequired(InputRequired { requests: out, request_state: state }))
}

/// The params of a retry: the caller's `original` params (an object; none is `{}`) with
/// their members kept as written and in order, less any `inputResponses` and `requestState`
/// of theirs, then `inputResponses` (one member per `(key, result JSON)`, omitted when there
/// are none) and `requestState` (as given, byte for byte; omitted when `None`).
///
/// # Errors
///
/// [`InputError::Malformed`] when `original` is not a JSON object, names a key twice, or a
/// response is not JSON.
pub fn retry_params(
    original: Option<RawJson<'_>>,
    responses: &[(String, String)],
    request_state: Option<RawJson<'_>>,
) -> Result<String, InputError> {
    let kept = match original {
        Some(p) => members(p).map_err(|e| InputError::Malformed(format!("the params: {e}")))?,
        None => Vec::new(),
    };
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let mut out = String::from("{");
    let sep = |out: &mut String| {
        if out.len() > 1 {
            out.push(',');
        }
    };
    for (k, v) in &kept {
        if k == "inputResponses" || k == "requestState" {
            continue;
        }
        sep(&mut out);
        out.push_str(&quote(k));
        out.push(':');
        out.push_str(v.get());
    }
    if !responses.is_empty() {
        sep(&mut out);
        out.push_str("\"inputResponses\":{");
        for (i, (key, result)) in responses.iter().enumerate() {
            let result = RawValue::from_string(result.clone()).map_err(|e| {
                InputError::Malformed(format!("the response to {key:?} is not JSON: {e}"))
            })?;
            if i > 0 {
                out.push(',');
            }
            out.push_str(&quote(key));
            out.push(':');
            out.push_str(result.get());
        }
        out.push('}');
    }
    if let Some(state) = request_state {
        sep(&mut out);
        out.push_str("\"requestState\":");
        out.push_str(state.get());
    }
    out.push('}');
    Ok(out)
}

#[cfg(feature = "peer")]
pub use connected::InputResolver;

#[cfg(feature = "peer")]
mod connected {
    use std::future::Future;

    use super::{InputError, InputLimits, Outcome, outcome, retry_params};
    use crate::RawJson;
    use crate::mcp::client::Negotiated;
    use crate::peer::{Incoming, PeerHandle, RequestOptions};

    /// Fulfils a server's input requests: the client's side of elicitation, sampling and
    /// roots, answered inside a call rather than as requests of the server's own.
    pub trait InputResolver: Send + Sync {
        /// The result (JSON text) of the input request `method` with `params`, or why it
        /// cannot be fulfilled.
        fn resolve(
            &self,
            method: &str,
            params: Option<RawJson<'_>>,
        ) -> impl Future<Output = Result<String, String>> + Send;
    }

    impl Negotiated {
        /// Sends a request as [`Negotiated::request`] does and, while the server answers
        /// `input_required`, fulfils its input requests with `resolver` and sends the request
        /// again (a new id) with the `inputResponses` and the `requestState` echoed, within
        /// `limits` (see the [module](super) documentation). The answer that ends the call is
        /// returned as it came.
        ///
        /// # Errors
        ///
        /// [`InputError::Request`] when a request fails, and the other variants when the
        /// server's answers go past `limits`, are malformed, or an input request cannot be
        /// fulfilled.
        pub async fn request_with_input<R: InputResolver>(
            &self,
            peer: &PeerHandle,
            method: &str,
            params: Option<RawJson<'_>>,
            options: RequestOptions,
            resolver: &R,
            limits: InputLimits,
        ) -> Result<Incoming, InputError> {
            let mut retry: Option<String> = None;
            let mut round = 0u32;
            loop {
                let sent = retry.as_deref().map(RawJson::new).or(params);
                let reply = self.request(peer, method, sent, options.clone()).await?;
                let Some(result) = reply.result() else { return Ok(reply) };
                let needed = match outcome(result)? {
                    Outcome::Complete => return Ok(reply),
                    Outcome::InputRequired(needed) => needed,
                };
                if round == limits.max_rounds {
                    return Err(InputError::TooManyRounds(round));
                }
                round += 1;
                if needed.requests.len() > limits.max_requests {
                    return Err(InputError::TooManyRequests {
                        got: needed.requests.len(),
                        max: limits.max_requests,
                    });
                }
                let mut responses = Vec::with_capacity(needed.requests.len());
                for r in &needed.requests {
                    let answer = resolver.resolve(&r.method, r.params).await.map_err(|reason| {
                        InputError::Unfulfilled {
                            key: r.key.clone().into_owned(),
                            method: r.method.clone().into_owned(),
                            reason,
                        }
                    })?;
                    responses.push((r.key.clone().into_owned(), answer));
                }
                tracing::debug!(method, round, "retrying with input responses");
                retry = Some(retry_params(params, &responses, needed.request_state)?);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needed(json: &str) -> InputRequired<'_> {
        match outcome(RawJson::new(json)).unwrap() {
            Outcome::InputRequired(n) => n,
            Outcome::Complete => panic!("complete: {json}"),
        }
    }

    #[test]
    fn no_result_type_and_complete_are_complete() {
        for r in [r#"{"content":[]}"#, r#"{"resultType":"complete","content":[]}"#, "{}"] {
            assert_eq!(outcome(RawJson::new(r)).unwrap(), Outcome::Complete, "{r}");
        }
    }

    #[test]
    fn input_requests_are_read_in_order_with_their_params_as_written() {
        let n = needed(
            r#"{"resultType":"input_required","inputRequests":{
                "b":{"method":"roots/list"},
                "a":{"method":"elicitation/create","params":{"message":"x", "n":1.50}}}}"#,
        );
        let keys: Vec<&str> = n.requests.iter().map(|r| r.key.as_ref()).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(n.requests[0].params, None);
        assert_eq!(n.requests[1].params.unwrap().get(), r#"{"message":"x", "n":1.50}"#);
        assert_eq!(n.request_state, None);
    }

    #[test]
    fn request_state_is_kept_as_written() {
        let n = needed(r#"{"resultType":"input_required","requestState": "a\"b\u00e9\/" }"#);
        assert!(n.requests.is_empty());
        assert_eq!(n.request_state.unwrap().get(), r#""a\"b\u00e9\/""#);
    }

    #[test]
    fn malformed_results_are_refused() {
        for r in [
            "[]",
            r#"{"resultType":7}"#,
            r#"{"resultType":"later"}"#,
            r#"{"resultType":"input_required"}"#,
            r#"{"resultType":"input_required","requestState":{"s":1}}"#,
            r#"{"resultType":"input_required","inputRequests":[]}"#,
            r#"{"resultType":"input_required","inputRequests":{"a":{"params":{}}}}"#,
            r#"{"resultType":"input_required","inputRequests":{"a":{"method":"x"},"a":{"method":"y"}}}"#,
            r#"{"resultType":"input_required","resultType":"complete"}"#,
        ] {
            assert!(matches!(outcome(RawJson::new(r)), Err(InputError::Malformed(_))), "{r}");
        }
    }

    #[test]
    fn retry_params_echo_the_state_verbatim_and_key_responses_as_requested() {
        let state = RawJson::new(r#""{\"nonce\":\"\u00e9\",\"originalId\":3}""#);
        let responses = vec![
            ("confirm".to_owned(), r#"{"action":"accept","content":{"ok":true}}"#.to_owned()),
            ("roots".to_owned(), r#"{"roots":[]}"#.to_owned()),
        ];
        let original = RawJson::new(r#"{"name":"t", "arguments":{"x":1.50}}"#);
        let out = retry_params(Some(original), &responses, Some(state)).unwrap();
        assert_eq!(
            out,
            format!(
                r#"{{"name":"t","arguments":{{"x":1.50}},"inputResponses":{{"confirm":{},"roots":{}}},"requestState":{}}}"#,
                responses[0].1,
                responses[1].1,
                state.get()
            )
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["requestState"], "{\"nonce\":\"é\",\"originalId\":3}");
        assert_eq!(v["inputResponses"]["confirm"]["content"]["ok"], true);
    }

    #[test]
    fn retry_params_replace_old_rounds_and_omit_what_is_absent() {
        let original = RawJson::new(
            r#"{"inputResponses":{"old":{}},"name":"t","requestState":"old","_meta":{"k":1}}"#,
        );
        assert_eq!(
            retry_params(Some(original), &[], None).unwrap(),
            r#"{"name":"t","_meta":{"k":1}}"#
        );
        assert_eq!(retry_params(None, &[], None).unwrap(), "{}");
        assert_eq!(
            retry_params(None, &[], Some(RawJson::new(r#""s""#))).unwrap(),
            r#"{"requestState":"s"}"#
        );
        for bad in ["[]", "7", r#"{"a":1,"a":2}"#] {
            assert!(retry_params(Some(RawJson::new(bad)), &[], None).is_err(), "{bad}");
        }
        let not_json = [("k".to_owned(), "{".to_owned())];
        assert!(retry_params(None, &not_json, None).is_err());
    }

    #[test]
    fn limits_default_to_the_constants_and_are_settable() {
        let l = InputLimits::default();
        assert_eq!(
            (l.max_rounds, l.max_requests),
            (DEFAULT_MAX_INPUT_ROUNDS, DEFAULT_MAX_INPUT_REQUESTS)
        );
        let l = l.max_rounds(2).max_requests(3);
        assert_eq!((l.max_rounds, l.max_requests), (2, 3));
    }
}

#[cfg(all(test, feature = "peer"))]
mod loop_tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::mcp::client::{ClientOptions, Negotiated, VersionChoice, negotiate};
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
                        return Ok(Reply::raw_string(format!(
                            r#"{{"resultType":"input_required","inputRequests":{},"requestState":{}}}"#,
                            Value::Object(requests),
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
        async fn resolve(
            &self,
            method: &str,
            params: Option<RawJson<'_>>,
        ) -> Result<String, String> {
            let p: Value = serde_json::from_str(params.map_or("null", |p| p.get())).unwrap();
            Ok(json!({"action": "accept", "content": {"method": method, "m": p["message"]}})
                .to_string())
        }
    }

    async fn pair(
        rounds: u32,
        requests: usize,
    ) -> (std::sync::Arc<Server>, PeerHandle, Negotiated) {
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
}
