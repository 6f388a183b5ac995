//! The era probe over a peer: `server/discover` sent in the 2026-07-28 envelope, and its answer
//! read into the terms of the era decision ([`crate::mcp::negotiation::decide`]).
//!
//! Two rooms open a server whose era they do not know, and both run this one probe: the client
//! role (`client::negotiate`, for any transport) and the bridge, which opens its stdio child as
//! a client would (`bridge::shared::open`). It sits below both (the bridge may not import the
//! client), above `peer`, whose requests it sends. What each makes of the decision is its own:
//! the client falls back to a legacy version it offers or fails, the bridge opens its child
//! with `initialize`.
//!
//! How an answer reads:
//!
//! | answer | read as |
//! |---|---|
//! | a result | the result ([`ProbeAnswer::Result`]) |
//! | a JSON-RPC error | the error; a decision that the server is not modern says its message |
//! | no answer within the timeout | [`ProbeAnswer::NoAnswer`] |
//! | an HTTP error status with no JSON-RPC answer, or a broken exchange (a legacy server's 400, 404 or 405 to a request without a session) | an error answer, -32603; a decision that the server is not modern says the error |
//! | the connection closed, a refused authorization (401, 403), anything else | no decision: the request's error |

use std::time::Duration;

use crate::error::ErrorCode;
use crate::mcp::negotiation::{DISCOVER, Decision, ProbeAnswer, RequestMeta, decide};
use crate::peer::{Incoming, NO_PARAMS, PeerHandle, RequestError, RequestOptions, TransportError};

/// Sends `server/discover` with `meta` as its `_meta` (and no other params), waiting at most
/// `timeout` for the answer.
pub(crate) async fn send(peer: &PeerHandle, meta: &RequestMeta, timeout: Duration) -> Answer {
    let options = RequestOptions::new().timeout(Some(timeout));
    Answer(peer.request_with(DISCOVER, Some(meta.params(NO_PARAMS)), options).await)
}

/// What the probe got back.
#[derive(Debug)]
pub(crate) struct Answer(Result<Incoming, RequestError>);

impl Answer {
    /// The era decision over this answer to a probe that carried version `tried`, offering
    /// `modern` and `legacy` versions (each newest first), as [`decide`] makes it.
    ///
    /// # Errors
    ///
    /// The request's error when it says nothing of the server's era (see the
    /// [module](self) documentation).
    pub(crate) fn decide(
        &self,
        modern: &[&str],
        legacy: &[&str],
        tried: &str,
    ) -> Result<Decision, RequestError> {
        let decide = |answer| decide(answer, modern, legacy, tried);
        let decision = match &self.0 {
            Ok(r) => decide(r.result().map_or(ProbeAnswer::NoAnswer, ProbeAnswer::Result)),
            Err(RequestError::Rpc(e)) => {
                match decide(ProbeAnswer::Error { code: e.code, data: e.data() }) {
                    // Why the probe failed (over HTTP, often the transport: a refused
                    // connection, a certificate) is the host's to read.
                    Decision::NotModern { reason } => {
                        Decision::NotModern { reason: format!("{reason}: {}", e.message) }
                    }
                    decision => decision,
                }
            }
            Err(RequestError::Timeout) => decide(ProbeAnswer::NoAnswer),
            // An HTTP error with no JSON-RPC answer (a legacy server's 400, 404 or 405 to a
            // request without a session) is an error answer like any other; a failure to reach
            // the server, or a refused authorization, ends the negotiation here.
            Err(RequestError::Transport(
                t @ (TransportError::Status { .. } | TransportError::Broken(_)),
            )) if !t.is_authorization() => {
                let answer = ProbeAnswer::Error { code: ErrorCode::INTERNAL_ERROR, data: None };
                match decide(answer) {
                    Decision::NotModern { reason } => {
                        Decision::NotModern { reason: format!("{reason}: {t}") }
                    }
                    decision => decision,
                }
            }
            Err(e) => return Err(e.clone()),
        };
        Ok(decision)
    }

    /// The `DiscoverResult` as JSON text, when the probe was answered with a result.
    pub(crate) fn result(&self) -> Option<String> {
        self.0.as_ref().ok()?.result().map(|r| r.get().to_owned())
    }
}
