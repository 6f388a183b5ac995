//! A request's `input_required` rounds: the `requestState` a retry carries (opened, checked
//! against what it was sealed for), the handler's outcome settled by era, and the rounds a
//! legacy session runs by asking the client itself.

use crate::limits::MAX_INPUT_ROUNDS;
use serde::{Deserialize, Serialize};

use super::{Encoded, Envelope, Kind, Round, Route, encode, modern_reply, req_uri};
use crate::mcp::Era;
use crate::mcp::meta::str_of;
use crate::mcp::types::{CallToolResult, InputRequiredResult};
use crate::peer::{Context, Incoming, Reply, RpcError};
use crate::server::call::Answer;
use crate::server::param_slots::{Key, ParamSlots};
use crate::server::{Call, ConnectionHandler, HandlerError, InputRequired};

impl ConnectionHandler {
    /// Opens the `requestState` a retry carries into `call` (its state and the answers of
    /// earlier rounds). The state is opened only on the request it was sealed for; the binding
    /// is written out only when a state is opened or sealed (a resource's is checked at once: a
    /// read without a `uri` is refused before any handler runs).
    pub(super) fn open_state(&self, kind: &Kind, call: &mut Call) -> Result<(), RpcError> {
        if matches!(kind, Kind::Resource) {
            binding(kind, call)?;
        }
        // `"requestState": null` is no state at all.
        let Some(sealed) = call.member_of_params(Key::RequestState)? else { return Ok(()) };
        let binding = binding(kind, call)?;
        let opened = str_of(sealed).and_then(|s| self.state().key.open(&binding, &s));
        let Some(Some(carried)) = opened.as_deref().map(Carried::decode) else {
            return Err(RpcError::invalid_params("requestState integrity check failed"));
        };
        call.state = carried.s;
        call.answers = carried
            .a
            .into_iter()
            .map(|(k, v)| (k, Answer(crate::mcp::types::Raw::from_box(v))))
            .collect();
        Ok(())
    }

    /// What one round of a handler came to: the reply, or what the handler needs first.
    pub(super) fn settle(
        &self,
        kind: &Kind,
        era: Era,
        outcome: Result<Encoded, HandlerError>,
    ) -> Round {
        let meta = &self.state().meta;
        Round::Done(match outcome {
            Ok(result) => result.reply(era, meta),
            Err(HandlerError::Protocol(e)) => Err(e),
            Err(HandlerError::Tool(reason)) => match kind {
                Kind::Tool => Encoded::Tool(CallToolResult::error(reason)).reply(era, meta),
                _ => Err(RpcError::internal(reason)),
            },
            // Neither a request nor a state: no retry could ever get further (and a modern
            // InputRequiredResult must carry one of them).
            Err(HandlerError::InputRequired(needed))
                if needed.requests.is_empty() && needed.state.is_none() =>
            {
                Err(RpcError::internal(
                    "the handler asked for input but named no input request and no state",
                ))
            }
            Err(HandlerError::InputRequired(needed)) => return Round::Needs(needed),
        })
    }

    /// A handler needs the client's input (`needed`), having seen the answers `earlier`: in
    /// the modern era, the `input_required` result; in the legacy era, asks the client and
    /// calls the handler again, as long as it needs more.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn rounds(
        &self,
        kind: Kind,
        req: &Incoming,
        cx: &Context,
        env: &Envelope,
        handler: &Route<'_>,
        mut earlier: Vec<(String, Answer)>,
        mut needed: InputRequired,
    ) -> Result<Reply, RpcError> {
        let mut rounds = 0;
        loop {
            // The request again (the handler took the last one): what the next round carries
            // is this round's answers and the earlier ones.
            let mut again = self.call(req, cx, env, ParamSlots::read(req.params())?);
            again.answers = earlier;
            let answers = match again.all_answers() {
                Ok(a) => a,
                Err(HandlerError::Protocol(e)) => return Err(e),
                Err(other) => return Err(RpcError::internal(other.to_string())),
            };
            if env.era == Era::Modern {
                // What the client did not declare is never asked (-32021), whether the handler
                // went through `ask` or returned its requests itself.
                for request in needed.requests.values() {
                    match again.require(request) {
                        Ok(()) => {}
                        Err(HandlerError::Protocol(e)) => return Err(e),
                        Err(other) => return Err(RpcError::internal(other.to_string())),
                    }
                }
                return self.input_required(&binding(&kind, &again)?, needed, answers);
            }
            rounds += 1;
            if rounds > MAX_INPUT_ROUNDS {
                return Err(RpcError::internal(format!(
                    "the handler asked for input more than {MAX_INPUT_ROUNDS} times"
                )));
            }
            again.state = needed.state;
            let mut gathered = self.gather(&again, needed.requests).await?;
            for (k, a) in answers {
                if !gathered.iter().any(|(seen, _)| *seen == k) {
                    gathered.push((k, a));
                }
            }
            again.answers = gathered;
            earlier = again.answers.clone();
            needed = match self.settle(&kind, env.era, handler.start(again).outcome().await) {
                Round::Done(reply) => return reply,
                Round::Needs(needed) => needed,
            };
        }
    }

    /// Legacy era: sends each input request to the client, in order.
    pub(super) async fn gather(
        &self,
        call: &Call,
        requests: std::collections::BTreeMap<String, crate::mcp::types::InputRequest<'static>>,
    ) -> Result<Vec<(String, Answer)>, RpcError> {
        let mut answers = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            let answer = match call.require(&request) {
                Ok(()) => call.send(&request).await,
                Err(e) => Err(e),
            };
            match answer {
                Ok(a) => answers.push((key, a)),
                Err(HandlerError::Protocol(e)) => return Err(e),
                Err(other) => return Err(RpcError::internal(other.to_string())),
            }
        }
        Ok(answers)
    }

    /// Modern era: the `input_required` result, its state sealed.
    ///
    /// The state carries the handler's own state and every answer the client gave so far, so a
    /// handler that asks for one thing after another (`ask`, then `ask` again) finds the earlier
    /// answers on the retry, as it would in a legacy session.
    pub(super) fn input_required(
        &self,
        binding: &str,
        needed: InputRequired,
        answers: Vec<(String, Answer)>,
    ) -> Result<Reply, RpcError> {
        let state = self.state();
        let carried = (needed.state.is_some() || !answers.is_empty()).then(|| Carried {
            s: needed.state,
            a: answers.into_iter().map(|(k, a)| (k, a.0.into_box())).collect(),
        });
        let sealed = match carried.map(|c| serde_json::to_string(&c)).transpose() {
            Ok(payload) => payload.map(|p| state.key.seal(binding, &p)),
            Err(e) => {
                return Err(RpcError::internal(format!("the state could not be encoded: {e}")));
            }
        };
        // A state the retry could not bring back (it is refused past the bound unread).
        if let Some(s) = &sealed
            && s.len() > crate::limits::MAX_REQUEST_STATE_BYTES
        {
            return Err(RpcError::internal(format!(
                "the handler's requestState seals to {} bytes, past the {} a retry may carry",
                s.len(),
                crate::limits::MAX_REQUEST_STATE_BYTES
            )));
        }
        let result = InputRequiredResult {
            input_requests: needed.requests.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            request_state: sealed.map(Into::into),
        };
        modern_reply(encode(&result)?, "input_required", &state.meta)
    }
}

/// The sealed payload of a `requestState`: the handler's state and the answers so far.
#[derive(Serialize, Deserialize)]
struct Carried {
    s: Option<String>,
    #[serde(default)]
    a: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>>,
}

impl Carried {
    pub(super) fn decode(payload: &str) -> Option<Self> {
        serde_json::from_str(payload).ok()
    }
}

/// What a `requestState` is bound to: the method, and the tool, prompt or resource the request
/// names (a completion names no one thing: its method alone).
fn binding(kind: &Kind, call: &Call) -> Result<String, RpcError> {
    let what = match kind {
        Kind::Tool | Kind::Prompt => call.name().into_owned(),
        Kind::Resource => req_uri(call)?,
        Kind::Complete => String::new(),
    };
    Ok(format!("{}\n{what}", call.method()))
}
