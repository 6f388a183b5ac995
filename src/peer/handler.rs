//! What a host plugs into the peer: a [`Handler`] for the requests and notifications the other
//! side sends, and the [`Context`] each call gets.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use futures_util::future::Either;

use super::core::Ticket;
use super::error::RequestError;
use super::handle::PeerHandle;
use super::incoming::{Incoming, Reply, RpcError};
use super::inline::Inline;
use super::principal::Principal;
use crate::message::encode::Payload;

/// Answers the requests and notifications the other side sends.
///
/// A request's handler is polled first by the connection's own task: one that answers without
/// waiting costs no task of its own. One that waits (returns `Pending`) moves to a task, up to
/// [`Limits::max_handlers`](crate::Limits::max_handlers) at once. The returned future is
/// dropped, and no response sent, when the other side cancels the request with
/// `notifications/cancelled` or the connection ends. A handler that panics is answered with
/// -32603 and the peer goes on. Keep the work a handler does before its first `.await` short:
/// the connection reads nothing else meanwhile.
///
/// Notifications are handled one at a time, in order, and a notification handler may send a
/// request and await its response. A request's handler is called only once the handler of every
/// notification read before the request has begun (been polled once), so
/// `notifications/initialized` is seen before the requests that follow it, unless a
/// notification handler before it is waiting (at an `.await` that did not complete at once):
/// then requests are not held back, since one of them may be what it waits for. Up to 4,096
/// notifications (16 MiB of frame bytes) wait for their turn; past that reading waits too, so
/// keep [`Handler::notification`] short, or spawn.
///
/// # Examples
///
/// ```
/// use mcpwire::peer::{Context, Handler, Incoming, Reply, RpcError};
///
/// struct Echo;
///
/// impl Handler for Echo {
///     async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
///         match req.method() {
///             "echo" => Ok(Reply::raw(req.params().map_or("null", |p| p.get()))),
///             other => Err(RpcError::method_not_found(other)),
///         }
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// Answers one request. Return [`RpcError::method_not_found`] for a method you do not
    /// serve.
    fn request(
        &self,
        request: &Incoming,
        cx: &Context,
    ) -> impl Future<Output = Result<Reply, RpcError>> + Send;

    /// Takes one notification. `notifications/cancelled` is consumed by the peer itself; the
    /// default ignores every other notification.
    fn notification(
        &self,
        notification: &Incoming,
        cx: &Context,
    ) -> impl Future<Output = ()> + Send {
        let _ = (notification, cx);
        async {}
    }

    /// Whether a stateless (2026-07-28) Streamable HTTP request may be handled without a peer:
    /// inside the HTTP connection's own future, its [`Context`] backed by the request alone
    /// ([`Context::peer`] is then a closed handle, [`Context::notify`] is how its notifications
    /// go out). `false` by default: the request then runs in a peer of its own, as every
    /// request of a session does. Asked once per stateless request, after its headers were
    /// checked, before any handler is built for it; not asked on any other transport. The
    /// requests it takes share one handler per connection, built for the first of them.
    ///
    /// A handler that answers `true` costs such a request no task, no channel and no peer: an
    /// answer given without waiting is written on the connection's own path, and one that
    /// waits keeps the connection's future (or, once a notification was sent, the event
    /// stream's body) polling it. A handler that sends notifications through
    /// [`Context::notify`] and never through a kept [`PeerHandle`] runs the same in both
    /// eras.
    fn peerless(request: &Incoming) -> bool
    where
        Self: Sized,
    {
        let _ = request;
        false
    }
}

/// A handler for a peer that only sends requests: every request it receives is answered
/// -32601, every notification ignored.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHandler;

impl Handler for NoHandler {
    async fn request(&self, request: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        Err(RpcError::method_not_found(request.method()))
    }
}

/// What a handler is given: the link back to the other side (a peer's handle, or for a request
/// handled without a peer the request's own answer), the request's cancellation, and its caller.
///
/// Send notifications about the request (progress, logs) with [`Context::notify`]: it works
/// wherever the handler runs. [`Context::peer`] is the peer's handle where there is a peer; a
/// stateless HTTP request served without one (see [`Handler::peerless`]) gets a closed handle
/// there, on which every send fails: a handler that keeps a handle to talk later (a task it
/// spawns, a subscription) must answer `false` to `peerless` for such requests.
#[derive(Clone, Debug)]
pub struct Context {
    link: Link,
    /// Who sent it, as the transport vouched (taken as the message came in).
    pub(crate) principal: Option<Arc<Principal>>,
    /// The request's modern envelope, when the transport checked it before the handler got
    /// the request (a stateless HTTP request's, checked with its headers).
    envelope_spans: Option<crate::mcp::envelope_spans::EnvelopeSpans>,
}

/// Where a handler's messages go.
#[derive(Clone, Debug)]
enum Link {
    /// A peer's: its handle, and the request handled (`None` for a notification).
    Peer { peer: PeerHandle, ticket: Option<Ticket> },
    /// A request handled without a peer.
    Inline(Arc<Inline>),
}

impl Context {
    /// A context on a peer, for request `ticket` (`None`: a notification).
    pub(crate) fn of_peer(
        peer: PeerHandle,
        ticket: Option<Ticket>,
        principal: Option<Arc<Principal>>,
    ) -> Self {
        Self { link: Link::Peer { peer, ticket }, principal, envelope_spans: None }
    }

    /// A context for a request handled without a peer, its messages going to `call`.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn inline(call: Arc<Inline>, principal: Option<Arc<Principal>>) -> Self {
        Self { link: Link::Inline(call), principal, envelope_spans: None }
    }

    /// This context, for a request whose envelope the transport has checked (`checked`).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn with_envelope_spans(
        mut self,
        spans: Option<crate::mcp::envelope_spans::EnvelopeSpans>,
    ) -> Self {
        self.envelope_spans = spans;
        self
    }

    /// The request's modern envelope, when the transport checked it: the server reads it
    /// instead of reading `_meta` again.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn envelope_spans(&self) -> Option<&crate::mcp::envelope_spans::EnvelopeSpans> {
        self.envelope_spans.as_ref()
    }

    /// The handle to the other side: send it notifications (progress) or requests of your own.
    ///
    /// For a request handled without a peer (a stateless HTTP request of a handler whose
    /// [`Handler::peerless`] said so) this is a closed handle: every request and notification
    /// sent on it fails with [`RequestError::Closed`]. Use [`Context::notify`] for the
    /// request's notifications: it reaches the client in both cases.
    #[must_use]
    pub fn peer(&self) -> &PeerHandle {
        match &self.link {
            Link::Peer { peer, .. } => peer,
            Link::Inline(_) => PeerHandle::detached(),
        }
    }

    /// Sends a notification about this request (`notifications/progress`,
    /// `notifications/message`): on its peer, related to the request (over Streamable HTTP it
    /// travels on the request's stream), or for a request handled without a peer, on the
    /// request's answer, which becomes an event stream when the client takes one (else the
    /// notification is dropped, as a peer's would be).
    ///
    /// # Errors
    ///
    /// When the params cannot be serialised, or the request's answer (or the connection) is
    /// gone.
    pub async fn notify<P: Payload>(
        &self,
        method: &str,
        params: Option<P>,
    ) -> Result<(), RequestError> {
        match &self.link {
            Link::Peer { peer, .. } => peer.notify(method, params).await,
            Link::Inline(call) => call.notify(method, params),
        }
    }

    /// Completes when the other side cancels this request or the connection ends (for a request
    /// handled without a peer: when its answer was given, or the client closed the request).
    /// The handler's future is dropped at that point anyway; this lets a handler stop work it
    /// spawned.
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
        match &self.link {
            Link::Peer { peer, ticket: None } => Either::Left(Either::Left(peer.closing())),
            Link::Peer { peer, ticket: Some(ticket) } => {
                let ticket = *ticket;
                Either::Left(Either::Right(std::future::poll_fn(move |cx| {
                    if peer.shared.with(|c| c.handler_cancelled(ticket, Some(cx.waker()))) {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                })))
            }
            Link::Inline(call) => Either::Right(std::future::poll_fn(|cx| call.ended(cx.waker()))),
        }
    }

    /// Who sent the request, as the transport vouched for it: the principal of the access token
    /// an [`HttpServer`](crate::http::HttpServer) with a resource-server guard checked (for a
    /// legacy session, the one that opened it). `None` on a transport that checks no one.
    #[must_use]
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_deref()
    }

    /// Whether the request has been cancelled.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        match &self.link {
            Link::Peer { peer, ticket: None } => peer.is_closed(),
            Link::Peer { peer, ticket: Some(ticket) } => {
                peer.shared.with(|c| c.handler_cancelled(*ticket, None))
            }
            Link::Inline(call) => call.is_ended(),
        }
    }
}

#[cfg(feature = "http")]
impl Context {
    /// Asks a routing transport to close the event stream that carries this request's answer
    /// (see `mcpwire::http::close_sse_stream`); nothing on any other transport, nor for a
    /// notification's context.
    pub(crate) fn close_stream(&self) {
        if let Link::Peer { peer, .. } = &self.link
            && let Some(id) = &peer.related
        {
            peer.shared.with(|c| c.close_stream(id));
        }
    }
}
