//! [`PeerBuilder`]: how a peer is set up, and where it starts.

use crate::limits::DEFAULT_REQUEST_TIMEOUT;
use crate::limits::DEFAULT_UNADDRESSED_REPLIES_PER_SECOND;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::FramedRead;

use super::connection_task::ConnectionTask;
use super::core::Config;
use super::driver::{self, ByteStream, Counting, Outlet};
use super::handle::{PeerHandle, Shared};
use super::handler::Handler;
use crate::codec::READ_BUFFER;
use crate::{codec::JsonRpcCodec, limits::Limits, message::Frame, message::encode::ReplyDetail};

/// How a peer is set up. `Clone`, so one builder can make many peers (an accept loop).
#[derive(Clone, Debug)]
pub struct PeerBuilder {
    pub(crate) limits: Limits,
    request_timeout: Option<Duration>,
    pub(crate) reply_detail: ReplyDetail,
    unaddressed_per_second: u32,
}

impl Default for PeerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl PeerBuilder {
    /// The defaults: [`Limits::default`], a 60 s request timeout, reasons in error replies.
    #[must_use]
    pub fn new() -> Self {
        Self {
            limits: Limits::default(),
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            reply_detail: ReplyDetail::Reason,
            unaddressed_per_second: DEFAULT_UNADDRESSED_REPLIES_PER_SECOND,
        }
    }

    /// Decoder limits, outbound in-flight bound, handler concurrency and write queue bound.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How long a request waits for its response before it fails with
    /// [`RequestError::Timeout`](super::RequestError::Timeout) (and `notifications/cancelled`
    /// is sent); `None` waits forever.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Whether error replies to invalid messages carry the reason in `data`.
    #[must_use]
    pub fn reply_detail(mut self, detail: ReplyDetail) -> Self {
        self.reply_detail = detail;
        self
    }

    /// How many replies with `"id": null` (to bytes that are not JSON, or to messages whose id
    /// cannot be read) are sent per second at most, with a burst of as many; the rest are
    /// counted and dropped. 0 sends none.
    #[must_use]
    pub fn unaddressed_replies_per_second(mut self, n: u32) -> Self {
        self.unaddressed_per_second = n;
        self
    }

    fn config(&self, track: bool) -> Config {
        Config {
            limits: self.limits,
            request_timeout: self.request_timeout,
            detail: self.reply_detail,
            unaddressed_per_second: self.unaddressed_per_second,
            track,
        }
    }

    /// Starts a peer over one duplex stream (a socket, `tokio::io::duplex`). Must be called
    /// inside a tokio runtime.
    #[must_use = "dropping the ConnectionTask closes it"]
    pub fn connect<T, H>(&self, io: T, handler: H) -> (PeerHandle, ConnectionTask)
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
        H: Handler,
    {
        let (r, w) = tokio::io::split(io);
        self.spawn(r, w, handler)
    }

    /// Starts a peer over a separate reader and writer (a child's stdout and stdin, the halves
    /// of a TCP stream). Must be called inside a tokio runtime.
    #[must_use = "dropping the ConnectionTask closes it"]
    pub fn spawn<R, W, H>(&self, reader: R, writer: W, handler: H) -> (PeerHandle, ConnectionTask)
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
        H: Handler,
    {
        let shared = Arc::new(Shared::new(&self.config(false)));
        let reader = Counting { inner: Box::pin(reader), count: shared.bytes_read.clone() };
        let codec = JsonRpcCodec::with_limits(self.limits);
        let frames = FramedRead::with_capacity(reader, codec, READ_BUFFER);
        start(shared, frames, ByteStream::new(writer), Arc::new(handler))
    }

    /// Starts a peer over frames a transport has already cut, and an outlet that routes the
    /// messages it sends, one [`Sent`](super::core::transmit::Sent) record each (the HTTP
    /// transports).
    #[cfg(feature = "http")]
    pub(crate) fn spawn_parts<S, O, H>(
        &self,
        frames: S,
        outlet: O,
        handler: Arc<H>,
    ) -> (PeerHandle, ConnectionTask)
    where
        S: futures_util::Stream<Item = Result<Frame, crate::error::Error>> + Send + 'static,
        O: Outlet,
        H: Handler,
    {
        use futures_util::StreamExt;
        let shared = Arc::new(Shared::new(&self.config(true)));
        let count = shared.bytes_read.clone();
        // The transport's own framing (HTTP's) is not counted: only the messages' bytes.
        let frames = frames.inspect(move |f| {
            if let Ok(f) = f {
                count.fetch_add(f.as_bytes().len() as u64, std::sync::atomic::Ordering::Relaxed);
            }
        });
        start(shared, frames, outlet, handler)
    }
}

fn start<S, O, H>(
    shared: Arc<Shared>,
    frames: S,
    outlet: O,
    handler: Arc<H>,
) -> (PeerHandle, ConnectionTask)
where
    S: futures_util::Stream<Item = Result<Frame, crate::error::Error>> + Send + 'static,
    O: Outlet,
    H: Handler,
{
    let handle = PeerHandle { shared: shared.clone(), related: None };
    let task = tokio::spawn(driver::run(shared.clone(), frames, outlet, handler));
    (handle, ConnectionTask { shared, task: Some(task), extra: None, pid: None })
}
