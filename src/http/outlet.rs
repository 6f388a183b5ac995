//! The outlet both HTTP transports give their peer: each batch of messages the peer writes is
//! sent by an async function (the client's POSTs, the server's router to the waiting POSTs and
//! streams), which [`Async`] drives as the peer's [`Outlet`].

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, ready};

use bytes::BytesMut;

use crate::peer::core::transmit::Sent;
use crate::peer::driver::Outlet;

/// An outlet whose sends are async functions (the HTTP client's POSTs, the server's router), made an [`Outlet`] by
/// [`Async`].
pub(crate) trait AsyncOutlet: Send + 'static {
    /// Sends the messages in `out`, described by `sent`.
    fn send(
        &mut self,
        out: BytesMut,
        sent: Vec<Sent>,
    ) -> impl Future<Output = io::Result<()>> + Send;

    /// No more messages: the connection is closing.
    fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send;
}

/// An [`AsyncOutlet`] as an [`Outlet`]: each send or shutdown is a boxed future that owns the
/// outlet while it runs and gives it back at its end.
pub(crate) struct Async<O> {
    idle: Option<O>,
    busy: Option<Busy<O>>,
}

/// A send or shutdown under way, owning the outlet until it ends.
type Busy<O> = Pin<Box<dyn Future<Output = (O, io::Result<()>)> + Send>>;

impl<O: AsyncOutlet> Async<O> {
    pub(crate) fn new(outlet: O) -> Self {
        Self { idle: Some(outlet), busy: None }
    }

    fn poll_busy(&mut self, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        let Some(busy) = self.busy.as_mut() else { return Poll::Ready(Ok(())) };
        let (outlet, r) = ready!(busy.as_mut().poll(cx));
        self.busy = None;
        self.idle = Some(outlet);
        Poll::Ready(r)
    }
}

impl<O: AsyncOutlet> Outlet for Async<O> {
    fn poll_send(
        &mut self,
        cx: &mut TaskContext<'_>,
        out: &mut BytesMut,
        sent: &mut Vec<Sent>,
    ) -> Poll<io::Result<()>> {
        if self.busy.is_none() {
            let Some(mut outlet) = self.idle.take() else {
                return Poll::Ready(Err(io::Error::other("the outlet was lost")));
            };
            let (bytes, records) = (out.split(), std::mem::take(sent));
            self.busy = Some(Box::pin(async move {
                let r = outlet.send(bytes, records).await;
                (outlet, r)
            }));
        }
        self.poll_busy(cx)
    }

    fn poll_shutdown(&mut self, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        if self.busy.is_none() {
            let Some(mut outlet) = self.idle.take() else { return Poll::Ready(Ok(())) };
            self.busy = Some(Box::pin(async move {
                let r = outlet.shutdown().await;
                (outlet, r)
            }));
        }
        self.poll_busy(cx)
    }
}
