//! The loops of a connection: read (in `reader`), write (one write per wake-up of everything
//! queued), and the timer that fails requests past their deadline.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use super::handler::Handler;
use super::reader::Reader;
use super::shared::Shared;
use super::{CloseReason, PeerBuilder, PeerHandle, RequestError};
use crate::codec::READ_BUFFER;
use crate::{Frame, JsonRpcCodec};

/// How long the writer keeps trying to flush after the connection started closing: a peer that
/// stopped reading must not keep a closed connection alive forever.
pub(crate) const CLOSE_FLUSH_GRACE: Duration = Duration::from_secs(5);

/// The writer's buffer is dropped after a write when it grew past this, so one huge message
/// does not pin its memory for the connection's life.
const WRITE_BUFFER_KEEP: usize = 1 << 20;

pub(super) fn start<R, W, H>(
    b: &PeerBuilder,
    peer: PeerHandle,
    reader: R,
    writer: W,
    handler: Arc<H>,
) -> Vec<JoinHandle<()>>
where
    R: AsyncRead + Send + 'static,
    W: AsyncWrite + Send + 'static,
    H: Handler,
{
    let codec = JsonRpcCodec::with_limits(b.limits);
    let reader = Counting { inner: Box::pin(reader), count: peer.shared.bytes_read.clone() };
    let frames = FramedRead::with_capacity(reader, codec, READ_BUFFER);
    start_parts(b, peer, frames, Stream(Box::pin(writer)), handler)
}

/// Counts the bytes of the frames a transport that frames messages itself hands in (its own
/// framing, such as HTTP's, is not counted).
#[cfg(feature = "http")]
pub(crate) fn counted<S>(
    frames: S,
    count: Arc<AtomicU64>,
) -> impl futures_util::Stream<Item = Result<Frame, crate::Error>> + Send + 'static
where
    S: futures_util::Stream<Item = Result<Frame, crate::Error>> + Send + 'static,
{
    use futures_util::StreamExt;
    frames.inspect(move |f| {
        if let Ok(f) = f {
            count.fetch_add(f.as_bytes().len() as u64, Ordering::Relaxed);
        }
    })
}

/// Starts the loops over frames already cut (by a transport that frames messages itself, such
/// as HTTP) and an [`Outlet`] that takes the encoded messages.
pub(crate) fn start_parts<S, O, H>(
    b: &PeerBuilder,
    peer: PeerHandle,
    frames: S,
    outlet: O,
    handler: Arc<H>,
) -> Vec<JoinHandle<()>>
where
    S: futures_util::Stream<Item = Result<Frame, crate::Error>> + Send + 'static,
    O: Outlet,
    H: Handler,
{
    let shared = peer.shared.clone();
    let read = Reader::new(b, peer, handler);
    vec![
        tokio::spawn(read.run(frames)),
        tokio::spawn(write_loop(shared.clone(), outlet)),
        tokio::spawn(timer_loop(shared)),
    ]
}

/// Where the write loop puts what it takes from the write queue: whole messages, each one line
/// of JSON ending in `\n`, as many as were queued since the last write.
pub(crate) trait Outlet: Send + 'static {
    /// Sends the messages in `out`. May take its bytes (leaving it empty) or leave them; the
    /// write loop clears it after.
    fn send(&mut self, out: &mut BytesMut) -> impl Future<Output = std::io::Result<()>> + Send;

    /// No more messages: the connection is closing.
    fn shutdown(&mut self) -> impl Future<Output = std::io::Result<()>> + Send;
}

/// A byte stream as an outlet: the messages are written as they are (NDJSON).
struct Stream<W>(Pin<Box<W>>);

impl<W: AsyncWrite + Send + 'static> Outlet for Stream<W> {
    async fn send(&mut self, out: &mut BytesMut) -> std::io::Result<()> {
        self.0.write_all(out).await?;
        self.0.flush().await
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        self.0.shutdown().await
    }
}

/// Closes the connection if the task holding it ends without doing so itself: a bug that
/// panics a loop must fail the connection loudly, never leave its waiters hanging.
pub(crate) struct CloseOnExit(pub(crate) Arc<Shared>);

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        if !self.0.closing.is_cancelled() {
            self.0.close(CloseReason::Io("a connection task stopped unexpectedly".into()));
        }
    }
}

async fn write_loop<O: Outlet>(shared: Arc<Shared>, mut outlet: O) {
    let _exit = CloseOnExit(shared.clone());
    let io = async {
        let mut out = BytesMut::new();
        while shared.queue.take(&mut out).await {
            let n = out.len();
            outlet.send(&mut out).await?;
            shared.bytes_written.fetch_add(n as u64, Ordering::Relaxed);
            out.clear();
            if out.capacity() > WRITE_BUFFER_KEEP {
                out = BytesMut::new();
            }
        }
        outlet.shutdown().await
    };
    let give_up = async {
        shared.closing.cancelled().await;
        tokio::time::sleep(CLOSE_FLUSH_GRACE).await;
    };
    let outcome = tokio::select! {
        r = io => r,
        () = give_up => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the other side did not take the last messages",
        )),
    };
    match outcome {
        Ok(()) => shared.close(CloseReason::Local),
        Err(e) => {
            tracing::debug!(error = %e, "write loop ended");
            shared.close(CloseReason::Io(e.to_string()));
        }
    }
    shared.writer_done.cancel();
}

/// Fails requests whose deadline passed. The request itself then sends
/// `notifications/cancelled`, since only it knows whether it was ever written.
async fn timer_loop(shared: Arc<Shared>) {
    let _exit = CloseOnExit(shared.clone());
    loop {
        let next = {
            let mut st = shared.lock();
            let next = st.outbound.next_deadline();
            st.timer_target = next;
            next
        };
        let sleep = async {
            match next {
                Some(at) => tokio::time::sleep_until(Instant::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shared.closing.cancelled() => return,
            () = shared.timer.notified() => continue,
            () = sleep => {}
        }
        let now = Instant::now().into_std();
        let mut expired = Vec::new();
        {
            let mut st = shared.lock();
            while let Some((_, waiter)) = st.outbound.poll_expired(now) {
                expired.push(waiter);
            }
        }
        for waiter in expired {
            let _ = waiter.send(Err(RequestError::Timeout));
        }
    }
}

/// At most `rate` events per second, with a burst of `rate`.
pub(crate) struct Limiter {
    rate: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl Limiter {
    pub(crate) fn new(rate: u32) -> Self {
        Self { rate: f64::from(rate), tokens: f64::from(rate), last: None }
    }

    pub(crate) fn allow(&mut self, now: Instant) -> bool {
        if let Some(last) = self.last {
            let refill = now.duration_since(last).as_secs_f64() * self.rate;
            self.tokens = (self.tokens + refill).min(self.rate);
        }
        self.last = Some(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Counts the bytes a reader yields. The reader is boxed so the wrapper is `Unpin` whatever it
/// wraps (one allocation per connection).
struct Counting<R> {
    inner: Pin<Box<R>>,
    count: Arc<AtomicU64>,
}

impl<R: AsyncRead> AsyncRead for Counting<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = self.inner.as_mut().poll_read(cx, buf);
        let read = buf.filled().len() - before;
        self.count.fetch_add(read as u64, Ordering::Relaxed);
        polled
    }
}
