//! Sending: a request POSTed on its own (with the headers of its era) and its answer taken,
//! resumed when its event stream ends early; notifications and responses POSTed in order.

use std::sync::{Arc, PoisonError};

use http::Method;
use http::header::HeaderValue;
use http_body_util::{BodyExt, Limited};
use tokio::sync::{mpsc, watch};

use super::receive::Cursor;
use super::{Ctx, ERROR_BODY_KEPT, Mode};
use crate::limits::ORDERED_POST_TIMEOUT;
use crate::mcp::meta::RequestParams;
use crate::{Frame, OwnedId, RawJson};

/// Writes the headers a modern request carries into `headers`; `None` for a request without a
/// modern `_meta` (nothing written).
fn modern_headers(
    ctx: &Ctx,
    frame: &Frame,
    headers: &mut http::HeaderMap,
) -> Option<Result<Mode, crate::mcp::meta::Rejection>> {
    let m = frame.message()?;
    let params = RequestParams::of(&m).ok()?;
    let meta = params.meta().ok()??;
    if !meta.is_modern() {
        return None;
    }
    let method = m.method().unwrap_or_default();
    let tools = ctx.tools.read().unwrap_or_else(PoisonError::into_inner);
    Some(
        crate::mcp::meta::required(meta)
            .and_then(|meta| {
                crate::mcp::headers::mirror_scanned(method, &params, &meta, Some(&tools), headers)
            })
            .map(|()| Mode::Modern { tools: method == "tools/list" }),
    )
}

/// POSTs one request and hands its answer to the peer.
pub(super) async fn post_request(ctx: Arc<Ctx>, frame: Frame, id: OwnedId, after: u64) {
    // Notifications sent before this request are taken first.
    let mut acked = ctx.acked.clone();
    if *acked.borrow() < after && acked.wait_for(|n| *n >= after).await.is_err() {
        return;
    }
    let initialize = frame.method() == Some("initialize");
    // Legacy requests are not parsed again: they cannot name the key.
    static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| {
            memchr::memmem::Finder::new(crate::mcp::PROTOCOL_VERSION_KEY.as_bytes())
        });
    let looks_modern = KEY.find(frame.as_bytes()).is_some();
    // A modern request's headers go straight into its own header map; no session and no legacy
    // version header: the mirrored ones say it all.
    let mut req = ctx.request(Method::POST, frame.shared_bytes(), looks_modern || initialize);
    let modern = match looks_modern.then(|| modern_headers(&ctx, &frame, req.headers_mut())) {
        None | Some(None) => None,
        Some(Some(Ok(mode))) => Some(mode),
        Some(Some(Err(e))) => {
            let data = e.data.as_deref().map(RawJson::new);
            return ctx.fail_with(&id, e.code, &e.message, data).await;
        }
    };
    if initialize {
        *ctx.modern.write().unwrap_or_else(PoisonError::into_inner) = None;
    }
    let (req, mode, named) = match modern {
        Some(mode) => {
            let version = req.headers().get(crate::mcp::headers::PROTOCOL_VERSION);
            let known =
                ctx.modern.read().unwrap_or_else(PoisonError::into_inner).as_ref() == version;
            if !known {
                *ctx.modern.write().unwrap_or_else(PoisonError::into_inner) = version.cloned();
            }
            (req, mode, None)
        }
        None => {
            let named = if initialize { None } else { ctx.session() };
            if looks_modern && !initialize {
                // Named the key without a modern envelope: a legacy request after all, with
                // the session's headers.
                req = ctx.request(Method::POST, frame.into_bytes(), false);
            }
            (req, if initialize { Mode::Initialize } else { Mode::Legacy }, named)
        }
    };
    let resp = match ctx.send(req).await {
        Ok(r) => r,
        Err(why) => return ctx.fail(&id, &format!("the HTTP request failed: {why}")).await,
    };
    if !matches!(mode, Mode::Modern { .. }) {
        ctx.remember_session(&resp, initialize, named.as_ref());
    }
    let status = resp.status();
    // A 401 or 403 that reaches here was not authorized away (no OAuth client, or it gave up):
    // the error says what the server asked for, and what would answer it.
    let refused = matches!(status.as_u16(), 401 | 403).then(|| refusal(&ctx, &resp));
    let mut cursor = Cursor::default();
    let mut outcome = ctx.take_answer(resp, Some(&id), mode, &mut cursor).await;
    // A legacy event stream that ended (or broke) before the response, having given an event
    // id: the server closed it to be polled, or the connection failed. Resumed with a GET.
    if cursor.resumable() && !matches!(mode, Mode::Modern { .. }) && !matches!(outcome, Ok(true)) {
        outcome = ctx.resume(&id, mode, &mut cursor).await;
    }
    match outcome {
        Ok(true) => {}
        Ok(false) if status.is_success() => {
            ctx.fail(&id, &format!("HTTP {status}: the server sent no response to the request"))
                .await;
        }
        Ok(false) => {
            let more = refused.unwrap_or_default();
            ctx.fail(&id, &format!("HTTP {status}{more}")).await;
        }
        Err(why) => {
            let more = refused.unwrap_or_default();
            ctx.fail(&id, &format!("HTTP {status}{more}: {why}")).await;
        }
    }
}

/// What a 401 or 403 adds to the error: the challenge, and the way to meet it.
fn refusal(ctx: &Ctx, resp: &http::Response<hyper::body::Incoming>) -> String {
    let challenge = resp
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(|c| format!(" (WWW-Authenticate: {c})"))
        .unwrap_or_default();
    #[cfg(feature = "oauth")]
    let authorizing = ctx.oauth.is_some();
    #[cfg(not(feature = "oauth"))]
    let authorizing = {
        let _ = ctx;
        false
    };
    let hint = match (resp.status().as_u16(), authorizing) {
        (401, false) => {
            "; the server asks for authorization: give the client OAuth (ClientBuilder::oauth, \
             mcpwire load --oauth) or a token (an Authorization header)"
        }
        (_, false) => "; the token sent is not enough for this request",
        (_, true) => "; authorizing did not help",
    };
    format!("{challenge}{hint}")
}

/// POSTs notifications and responses one at a time, in order.
pub(super) async fn ordered_worker(
    ctx: Arc<Ctx>,
    mut rx: mpsc::Receiver<Frame>,
    acked: watch::Sender<u64>,
) {
    while let Some(frame) = rx.recv().await {
        let initialized = frame.method() == Some("notifications/initialized");
        let modern = ctx.modern.read().unwrap_or_else(PoisonError::into_inner).clone();
        let named = ctx.session();
        if modern.is_some() && frame.method() == Some("notifications/cancelled") {
            // The modern era cancels a request by ending its POST, which is done.
            acked.send_modify(|n| *n += 1);
            continue;
        }
        let method = frame.method().and_then(|m| HeaderValue::from_str(m).ok());
        let mut req = ctx.request(Method::POST, frame.into_bytes(), modern.is_some());
        if let Some(version) = modern {
            req.headers_mut().insert(crate::mcp::headers::PROTOCOL_VERSION, version);
            if let Some(method) = method {
                req.headers_mut().insert(crate::mcp::headers::METHOD, method);
            }
        }
        let sent = tokio::time::timeout(ORDERED_POST_TIMEOUT, ctx.send(req)).await;
        let Ok(sent) = sent else {
            tracing::warn!("a message was not taken within {ORDERED_POST_TIMEOUT:?}; going on");
            acked.send_modify(|n| *n += 1);
            continue;
        };
        match sent {
            Ok(resp) => {
                let status = resp.status();
                ctx.remember_session(&resp, false, named.as_ref());
                if status.is_success() {
                    if initialized {
                        ctx.start_get_stream();
                    }
                } else {
                    let body = Limited::new(resp.into_body(), ERROR_BODY_KEPT).collect();
                    let body = tokio::time::timeout(ORDERED_POST_TIMEOUT, body).await;
                    let text =
                        body.ok().and_then(Result::ok).map(|b| b.to_bytes()).unwrap_or_default();
                    tracing::warn!(%status, body = %String::from_utf8_lossy(&text), "a message was refused");
                }
            }
            Err(e) => tracing::warn!(error = %e, "a message could not be sent"),
        }
        acked.send_modify(|n| *n += 1);
    }
}
