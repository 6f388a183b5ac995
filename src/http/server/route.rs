//! The route of a parsed POST: the era decision. A POST in a legacy session goes to the
//! session's peer; a legacy `initialize` opens a session; anything else that names no session
//! is a stateless (2026-07-28) request, unless its `MCP-Protocol-Version` is a legacy one (the
//! client lost its session).

use std::sync::Arc;

use http::request::Parts;
use http::{Response, StatusCode};

use super::config::Config;
use super::response::error;
use super::session::Session;
use super::{Body, VERSION_NAME};
use crate::mcp::Era;
use crate::{error::ErrorCode, message::Frame, message::Id, message::Kind};

/// Where a POST is served.
pub(super) enum Route {
    /// In the legacy session it names.
    Session(Arc<Session>),
    /// In a legacy session opened for it: an `initialize`.
    Open,
    /// As a stateless request.
    Stateless,
}

/// Where the POST with `head` and `frame`, naming `session` (see `sessions::named`), is served,
/// or the answer that refuses it.
pub(super) fn route(
    cfg: &Config,
    head: &Parts,
    frame: &Frame,
    session: Option<Arc<Session>>,
) -> Result<Route, Box<Response<Body>>> {
    // An `initialize` under a modern `MCP-Protocol-Version` is a stateless request for a
    // method 2026-07-28 removed (404, -32601), not the opening of a session: a legacy client
    // sends no version header with it.
    let version =
        head.headers.get(&VERSION_NAME).and_then(|v| v.to_str().ok()).map(str::trim_ascii);
    let modern_header = version.is_some_and(|v| Era::of(v) == Era::Modern);
    let initialize =
        frame.kind() == Kind::Request && frame.method() == Some("initialize") && !modern_header;
    match session {
        Some(_) if initialize => {
            let id = frame.id().unwrap_or(Id::Null);
            let msg = "Invalid Request: the session is already initialized";
            Err(Box::new(error(StatusCode::BAD_REQUEST, id, ErrorCode::INVALID_REQUEST, msg)))
        }
        Some(s) => Ok(Route::Session(s)),
        None if initialize => Ok(Route::Open),
        // A legacy version served with no session: the client lost it (or never opened one).
        // Any other version is a stateless request's (an unknown one is refused with the
        // versions served).
        None if version.is_some_and(|v| cfg.versions.iter().any(|s| s == v)) => {
            let msg = "Bad Request: Mcp-Session-Id header is required";
            Err(Box::new(error(StatusCode::BAD_REQUEST, Id::Null, ErrorCode::SERVER_ERROR, msg)))
        }
        None => Ok(Route::Stateless),
    }
}
