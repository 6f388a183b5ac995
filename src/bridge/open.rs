//! How the bridge opens its child: as a 2026-07-28 client opens a stdio server whose era it
//! does not know, with `server/discover` first.
//!
//! - **A `DiscoverResult` that names 2026-07-28**: the child is modern. Whether it also keeps a
//!   legacy session on the same connection is asked next: one request in the 2026-07-28
//!   envelope (`ping`; its answer does not matter) settles the era of a child that picks one
//!   per connection from its opening messages (the official SDKs' stdio servers keep a
//!   `server/discover` probe open until the next request), then `initialize`. A child that
//!   answers it speaks both eras on one connection (`mcpwire::server` does): its legacy
//!   session serves legacy clients as a legacy child's would, and calls go to it as modern
//!   requests. A child that refuses it (or does not answer within the discover timeout) is
//!   modern-only to the bridge: no session, legacy clients answered from the discover result
//!   and every request of theirs translated.
//! - **Anything else** (an error that is not a modern one, no answer within the discover
//!   timeout, a result that is no `DiscoverResult`): a legacy child, opened with `initialize`
//!   and then probed again with `server/discover` (a child may answer it only in a session).

use std::io;
use std::time::Duration;

use super::era;
use super::state::Held;
use crate::mcp;
use crate::mcp::negotiation::{self, Decision, ProbeAnswer};
use crate::message::RawJson;
use crate::peer::{Connection, Incoming, PeerHandle, RequestError, RequestOptions};

/// How long the child may take to answer `initialize` when it is opened with it.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens the child behind `peer`: its era, and what it answered.
///
/// # Errors
///
/// When the child ends meanwhile, or is a legacy one that does not answer `initialize` with a
/// result.
pub(super) async fn open(
    peer: &PeerHandle,
    conn: &mut Connection,
    discover_timeout: Duration,
) -> io::Result<Held> {
    let probe = era::discover_params();
    let discovered = ask(peer, conn, negotiation::DISCOVER, &probe, discover_timeout).await?;
    if let Some(result) = modern_result(&discovered) {
        // Its answer does not matter: only that the child has read it.
        let _pinned = ask(peer, conn, "ping", &probe, discover_timeout).await?;
        let init = era::initialize_params();
        let session = ask(peer, conn, "initialize", &init, discover_timeout).await?;
        return match session {
            Ok(a) => legacy_session(peer, &a, None).await,
            Err(refused) => {
                tracing::debug!(
                    error = %refused,
                    "mcpwire bridge: the child is modern-only (it refused initialize)"
                );
                era::held_modern_only(&result).map_err(|e| fail(format!("answered {e}")))
            }
        };
    }
    let init = era::initialize_params();
    let answer = ask(peer, conn, "initialize", &init, INITIALIZE_TIMEOUT)
        .await?
        .map_err(|e| fail(format!("did not open its session: {e}")))?;
    // A child may answer the probe only inside a session.
    legacy_session(peer, &answer, Some(discover_timeout)).await
}

/// The session the child's `initialize` answer opened: `notifications/initialized` sent, and
/// `server/discover` probed again (waiting at most `probe`) unless the child is known to be
/// modern (`None`).
async fn legacy_session(
    peer: &PeerHandle,
    answer: &Incoming,
    probe: Option<Duration>,
) -> io::Result<Held> {
    let result = answer.result().map(|r| r.get().to_owned()).unwrap_or_default();
    peer.notify("notifications/initialized", crate::peer::NO_PARAMS)
        .await
        .map_err(|e| fail(format!("closed: {e}")))?;
    let modern = match probe {
        None => true,
        Some(wait) => {
            let params = era::discover_params();
            let options = RequestOptions::new().timeout(Some(wait));
            let again =
                peer.request_with(negotiation::DISCOVER, Some(RawJson::new(&params)), options);
            modern_result(&again.await).is_some()
        }
    };
    era::held(&result, modern).map_err(|e| fail(format!("answered initialize badly: {e}")))
}

/// The `DiscoverResult` (its text) when the answer shows a child that speaks the bridge's
/// modern version.
fn modern_result(answer: &Result<Incoming, RequestError>) -> Option<String> {
    let probe = match answer {
        Ok(a) => a.result().map_or(ProbeAnswer::NoAnswer, ProbeAnswer::Result),
        Err(RequestError::Rpc(e)) => ProbeAnswer::Error { code: e.code, data: e.data() },
        Err(_) => ProbeAnswer::NoAnswer,
    };
    let tried = mcp::MODERN_VERSIONS[0];
    match negotiation::decide(probe, &mcp::MODERN_VERSIONS, &[], tried) {
        Decision::Modern { version } if version == tried => {
            answer.as_ref().ok()?.result().map(|r| r.get().to_owned())
        }
        _ => None,
    }
}

/// Sends `method` and waits for its answer, at most `timeout`.
///
/// # Errors
///
/// When the child's connection ends first.
async fn ask(
    peer: &PeerHandle,
    conn: &mut Connection,
    method: &str,
    params: &str,
    timeout: Duration,
) -> io::Result<Result<Incoming, RequestError>> {
    let options = RequestOptions::new().timeout(Some(timeout));
    let asked = peer.request_with(method, Some(RawJson::new(params)), options);
    tokio::select! {
        a = asked => Ok(a),
        reason = conn.closed() => Err(fail(format!("ended before it answered {method}: {reason}"))),
    }
}

/// An error starting the child.
fn fail(what: String) -> io::Error {
    io::Error::other(format!("the child server {what}"))
}
