//! Sending: a request POSTed on its own (with the headers of its era) and its answer taken,
//! resumed when its event stream ends early; notifications and responses POSTed in order.

use crate::sync::RwLocked;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};
use http::header::HeaderValue;
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming as HyperBody;
use tokio::sync::{mpsc, watch};

use super::receive::Cursor;
use super::{Ctx, ERROR_BODY_KEPT, Mode};
use crate::limits::ORDERED_POST_TIMEOUT;
use crate::mcp::meta::RequestParams;
use crate::peer::{Direct, DirectPost, TransportError};
use crate::{message::Frame, message::FrameParser, message::RawJson, message::owned::OwnedId};

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
    let tools = ctx.tools.read_locked();
    Some(
        crate::mcp::meta::required(meta)
            .and_then(|meta| {
                crate::mcp::headers::mirror_scanned(method, &params, &meta, Some(&tools), headers)
            })
            .map(|()| Mode::Modern { tools: method == "tools/list" }),
    )
}

impl Ctx {
    /// Sends `req`. With OAuth, it carries the token held for the server, and a 401 (or a 403
    /// `insufficient_scope`) is authorized and the request sent again, as often as the OAuth
    /// client's bounds let. The error says what failed (connecting, TLS), with the whole chain
    /// of causes.
    pub(super) async fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> Result<http::Response<HyperBody>, TransportError> {
        #[cfg(feature = "oauth")]
        if let Some((oauth, resource, url)) = &self.oauth {
            return self.send_authorized(req, oauth, resource, url).await;
        }
        self.client.request(req).await.map_err(|e| failure(&e))
    }

    #[cfg(feature = "oauth")]
    async fn send_authorized(
        &self,
        req: Request<Full<Bytes>>,
        oauth: &crate::auth::OAuth,
        resource: &str,
        url: &url::Url,
    ) -> Result<http::Response<HyperBody>, TransportError> {
        use crate::auth::flow::Then;
        let (parts, body) = req.into_parts();
        let mut step_ups = 0;
        // A 401 is authorized again at most twice in a row (a refresh, then the whole flow);
        // step-ups are bounded by the OAuth client.
        let mut unauthorized = 0;
        loop {
            let mut req = Request::new(body.clone());
            *req.method_mut() = parts.method.clone();
            *req.uri_mut() = parts.uri.clone();
            *req.version_mut() = parts.version;
            *req.headers_mut() = parts.headers.clone();
            let sent = oauth.0.authorization(resource).await;
            if let Some(token) = &sent {
                req.headers_mut().insert(http::header::AUTHORIZATION, token.clone());
            }
            let resp = self.client.request(req).await.map_err(|e| failure(&e))?;
            let status = resp.status().as_u16();
            if !matches!(status, 401 | 403) || (status == 401 && unauthorized == 2) {
                return Ok(resp);
            }
            let www = resp
                .headers()
                .get(http::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match oauth.0.challenged(url, status, www.as_deref(), sent.as_ref(), step_ups).await {
                Ok(Then::Retry) if status == 403 => step_ups += 1,
                Ok(Then::Retry) => unauthorized += 1,
                Ok(Then::GiveUp) => return Ok(resp),
                Err(e) => {
                    return Err(TransportError::Broken(format!("authorization failed: {e}")));
                }
            }
        }
    }
}

/// What failed, from a failed exchange: connecting, TLS (a handshake or a certificate refused),
/// or the exchange itself.
fn failure(e: &hyper_util::client::legacy::Error) -> TransportError {
    let chain = crate::error::error_chain(e);
    if tls_failed(e) {
        TransportError::Tls(chain)
    } else if e.is_connect() {
        TransportError::Connect(chain)
    } else {
        TransportError::Broken(format!("the HTTP request failed: {chain}"))
    }
}

/// Whether rustls failed somewhere in `e`'s chain of causes (an I/O error wraps it).
fn tls_failed(e: &(dyn std::error::Error + 'static)) -> bool {
    #[cfg(feature = "tls")]
    {
        let mut cause = Some(e);
        while let Some(c) = cause {
            if c.is::<rustls::Error>() {
                return true;
            }
            // An I/O error's `source` skips the error it wraps (rustls's, or another I/O
            // error around it): that one is looked at instead.
            cause = match c.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref) {
                Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
                None => c.source(),
            };
        }
        false
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = e;
        false
    }
}

/// Requests POSTed from their callers' tasks: the peer's handle runs the exchange in the
/// future of the request (no task of its own, nothing through the connection's task), and the
/// response completes the caller's waiter from there.
pub(super) struct Posts {
    pub(super) ctx: Arc<Ctx>,
    /// The POSTs in flight at once ([`HttpClient::max_concurrent_posts`](super::HttpClient::max_concurrent_posts)).
    pub(super) slots: Arc<tokio::sync::Semaphore>,
}

impl Direct for Posts {
    fn post(&self, body: BytesMut, id: u64) -> DirectPost {
        let ctx = self.ctx.clone();
        let slots = self.slots.clone();
        // The core hands a request over only once every message queued before it reached
        // the outlet, which counted it: the request waits for those to be taken.
        let after = ctx.queued.load(Ordering::Acquire);
        Box::pin(async move {
            let Ok(_slot) = slots.acquire().await else { return };
            let frame = FrameParser::parse_bytes_with(super::own_frames(), body.freeze());
            let id = OwnedId::Num(i64::try_from(id).expect("ids stay below 2^53"));
            post_request(ctx, frame, id, after).await;
        })
    }
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
        *ctx.modern.write_locked() = None;
    }
    let (req, mode, named) = match modern {
        Some(mode) => {
            let version = req.headers().get(crate::mcp::headers::PROTOCOL_VERSION);
            let known = ctx.modern.read_locked().as_ref() == version;
            if !known {
                *ctx.modern.write_locked() = version.cloned();
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
        Err(why) => return ctx.fail(&id, why).await,
    };
    if !matches!(mode, Mode::Modern { .. }) {
        ctx.remember_session(&resp, initialize, named.as_ref());
    }
    let status = resp.status();
    let www = resp
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let mut cursor = Cursor::default();
    let mut outcome = ctx.take_answer(resp, Some(&id), mode, &mut cursor).await;
    // A legacy event stream that ended (or broke) before the response, having given an event
    // id: the server closed it to be polled, or the connection failed. Resumed with a GET.
    if cursor.resumable() && !matches!(mode, Mode::Modern { .. }) && !matches!(outcome, Ok(true)) {
        outcome = ctx.resume(&id, mode, &mut cursor).await;
    }
    let why = match outcome {
        Ok(true) => return,
        Ok(false) if status.is_success() => TransportError::Broken(format!(
            "HTTP {status}: the server sent no response to the request"
        )),
        Err(why) if status.is_success() => TransportError::Broken(format!("HTTP {status}: {why}")),
        Ok(false) => refused(&ctx, status, www, String::new(), mode, named.is_some()),
        Err(why) => refused(&ctx, status, www, why, mode, named.is_some()),
    };
    ctx.fail(&id, why).await;
}

/// An HTTP error that answered no request of ours. A 404 to a legacy request that named the
/// session (or a 400 whose body speaks of the session, or a 400 to one sent without it once
/// the server ended it) means the session is gone and the request was not run; anything else
/// is the status as it came.
fn refused(
    ctx: &Ctx,
    status: StatusCode,
    www_authenticate: Option<String>,
    body: String,
    mode: Mode,
    named: bool,
) -> TransportError {
    let lost = match (mode, status.as_u16()) {
        (Mode::Legacy, 404) => named,
        // Some servers answer an unknown session 400 rather than 404, saying so in the body.
        (Mode::Legacy, 400) if named => body.to_ascii_lowercase().contains("session"),
        (Mode::Legacy, 400) => ctx.session_lost(),
        _ => false,
    };
    if lost {
        let more = if body.is_empty() { String::new() } else { format!(": {body}") };
        return TransportError::SessionLost(format!("HTTP {status}{more}"));
    }
    TransportError::Status { status: status.as_u16(), www_authenticate, body }
}

/// POSTs notifications and responses one at a time, in order.
pub(super) async fn ordered_worker(
    ctx: Arc<Ctx>,
    mut rx: mpsc::Receiver<Frame>,
    acked: watch::Sender<u64>,
) {
    while let Some(frame) = rx.recv().await {
        let initialized = frame.method() == Some("notifications/initialized");
        let modern = ctx.modern.read_locked().clone();
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
