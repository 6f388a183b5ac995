//! Multi round-trip requests over a peer: [`Negotiated::request_with_input`] sends a request,
//! fulfils the input requests of each `input_required` answer with an [`InputResolver`] and
//! sends the request again, bounded by [`InputLimits`] (the pure pieces and the rules are in
//! [`crate::mcp::input_rounds`]).

use std::future::Future;

use super::Negotiated;
use crate::mcp::input_rounds::{InputLimits, Malformed, Outcome, outcome_of, retry_params};
use crate::message::RawJson;
use crate::peer::{Incoming, PeerHandle, RequestOptions};

/// Why a call with input rounds failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// A request of the call failed (an error answer, the connection, a timeout).
    #[error(transparent)]
    Request(#[from] crate::peer::RequestError),
    /// The server's answer is not a result this client can act on.
    #[error(transparent)]
    Malformed(#[from] Malformed),
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
    /// `limits` (see [`crate::mcp::input_rounds`]). The answer that ends the call is
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
            let needed = match outcome_of(&reply.message(), result)? {
                // A task is the caller's to drive (see `Client::call_tool`).
                Outcome::Complete | Outcome::Task => return Ok(reply),
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

#[cfg(test)]
mod tests;
