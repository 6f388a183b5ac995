//! What a host plugs into the peer: a [`Handler`] for the requests and notifications the other
//! side sends, and the [`Context`] each call gets.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use futures_util::future::Either;

use super::core::Ticket;
use super::handle::PeerHandle;
use super::incoming::{Incoming, Reply, RpcError};
use super::principal::Principal;

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

/// What a handler is given: the other side's handle, and the request's cancellation.
#[derive(Clone, Debug)]
pub struct Context {
    pub(crate) peer: PeerHandle,
    /// The request handled; `None` for a notification.
    pub(crate) ticket: Option<Ticket>,
    /// Who sent it, as the transport vouched (taken as the message came in).
    pub(crate) principal: Option<Arc<Principal>>,
}

impl Context {
    /// The handle to the other side: send it notifications (progress) or requests of your own.
    #[must_use]
    pub fn peer(&self) -> &PeerHandle {
        &self.peer
    }

    /// Completes when the other side cancels this request or the connection ends. The handler's
    /// future is dropped at that point anyway; this lets a handler stop work it spawned.
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
        match self.ticket {
            None => Either::Left(self.peer.closing()),
            Some(ticket) => Either::Right(std::future::poll_fn(move |cx| {
                let shared = &self.peer.shared;
                if shared.with(|c| c.handler_cancelled(ticket, Some(cx.waker()))) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })),
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
        match self.ticket {
            None => self.peer.is_closed(),
            Some(ticket) => self.peer.shared.with(|c| c.handler_cancelled(ticket, None)),
        }
    }
}

#[cfg(feature = "http")]
impl Context {
    /// Asks a routing transport to close the event stream that carries this request's answer
    /// (see `mcpwire::http::close_sse_stream`); nothing on any other transport, nor for a
    /// notification's context.
    pub(crate) fn close_stream(&self) {
        if let Some(id) = &self.peer.related {
            self.peer.shared.with(|c| c.close_stream(id));
        }
    }
}
