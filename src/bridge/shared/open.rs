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
//!
//! The probe itself, and how its answer reads, is `crate::probe`: the client role's too.

use std::future::Future;
use std::io;
use std::time::Duration;

use super::handshake::{self, Handshake};
use crate::mcp;
use crate::mcp::negotiation::{self, Decision};
use crate::peer::{ConnectionTask, Incoming, PeerHandle, RequestError, RequestOptions};
use crate::probe;
use crate::{message::RawJson, message::encode::Payload};

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
    conn: &mut ConnectionTask,
    discover_timeout: Duration,
) -> io::Result<Handshake> {
    let meta = handshake::request_meta();
    let probe = probe::send(peer, &meta, discover_timeout);
    let discovered = until_closed(conn, negotiation::DISCOVER, probe).await?;
    if let Some(result) = modern_result(&discovered) {
        // Its answer does not matter: only that the child has read it.
        let ping = ask(peer, "ping", meta.params(crate::peer::NO_PARAMS), discover_timeout);
        let _pinned = until_closed(conn, "ping", ping).await?;
        let init = handshake::initialize_params();
        let init = ask(peer, "initialize", RawJson::new(&init), discover_timeout);
        let session = until_closed(conn, "initialize", init).await?;
        return match session {
            Ok(a) => legacy_session(peer, &a, None).await,
            Err(refused) => {
                tracing::debug!(
                    error = %refused,
                    "mcpwire bridge: the child is modern-only (it refused initialize)"
                );
                handshake::from_discover(&result).map_err(|e| fail(format!("answered {e}")))
            }
        };
    }
    let init = handshake::initialize_params();
    let init = ask(peer, "initialize", RawJson::new(&init), INITIALIZE_TIMEOUT);
    let answer = until_closed(conn, "initialize", init)
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
) -> io::Result<Handshake> {
    let result = answer.result().map(|r| r.get().to_owned()).unwrap_or_default();
    peer.notify("notifications/initialized", crate::peer::NO_PARAMS)
        .await
        .map_err(|e| fail(format!("closed: {e}")))?;
    let modern = match probe {
        None => true,
        Some(wait) => {
            let again = probe::send(peer, &handshake::request_meta(), wait).await;
            modern_result(&again).is_some()
        }
    };
    handshake::from_initialize(&result, modern)
        .map_err(|e| fail(format!("answered initialize badly: {e}")))
}

/// The `DiscoverResult` (its text) when the probe's answer shows a child that speaks the
/// bridge's modern version. Any other answer, a failed request among them, is a legacy child's.
fn modern_result(answer: &probe::Answer) -> Option<String> {
    let tried = mcp::MODERN_VERSIONS[0];
    match answer.decide(&mcp::MODERN_VERSIONS, &[], tried) {
        Ok(Decision::Modern { version }) if version == tried => answer.result(),
        _ => None,
    }
}

/// Sends `method` with `params` and waits for its answer, at most `timeout`.
async fn ask(
    peer: &PeerHandle,
    method: &str,
    params: impl Payload,
    timeout: Duration,
) -> Result<Incoming, RequestError> {
    let options = RequestOptions::new().timeout(Some(timeout));
    peer.request_with(method, Some(params), options).await
}

/// What `asked` (a request of `method` to the child) comes to.
///
/// # Errors
///
/// When the child's connection ends first.
async fn until_closed<T>(
    conn: &mut ConnectionTask,
    method: &str,
    asked: impl Future<Output = T>,
) -> io::Result<T> {
    tokio::select! {
        a = asked => Ok(a),
        reason = conn.closed() => Err(fail(format!("ended before it answered {method}: {reason}"))),
    }
}

/// An error starting the child.
fn fail(what: String) -> io::Error {
    io::Error::other(format!("the child server {what}"))
}
