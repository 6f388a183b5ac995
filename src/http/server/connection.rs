//! One connection, served: HTTP/1.1 or HTTP/2 (cleartext, "prior knowledge": the client opens
//! with the HTTP/2 preface) told apart by its first bytes on the same port, with each version's
//! bounds, and the three ways the server ends it besides the client: the server stops, the
//! connection sits idle, or the table sheds it.
//!
//! The idle rule is the HTTP/2 counterpart of HTTP/1.1's header timeout. hyper bounds how long
//! an HTTP/1.1 request's headers (or a kept-alive connection's wait for the next request) may
//! take, and has no such bound for HTTP/2, where a connection may sit open without a stream,
//! or dribble a header block frame by frame. So a connection with no request in progress
//! (`Conn::busy` is 0: no stream being answered) for `header_timeout` is told to close:
//! `GOAWAY` for HTTP/2 (streams already started finish; a client opens a new connection for
//! more), the same close hyper would do for HTTP/1.1, and a connection still sending its first
//! bytes is closed. If it has not closed one more `header_timeout` later, it is dropped.
//!
//! Costs: one builder per server (cloned into each connection's task through an `Arc`); per
//! connection a task, hyper's buffers, and for HTTP/2 its windows (see [`H2Config`]).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::time::Duration;

use futures_util::task::AtomicWaker;

use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::sync::watch;

use super::connections::Conn;
use crate::limits::{
    DEFAULT_HTTP2_CONNECTION_WINDOW, DEFAULT_HTTP2_MAX_FRAME, DEFAULT_HTTP2_MAX_HEADER_LIST,
    DEFAULT_HTTP2_MAX_LOCAL_RESETS, DEFAULT_HTTP2_MAX_PENDING_RESETS,
    DEFAULT_HTTP2_MAX_SEND_BUFFER, DEFAULT_HTTP2_MAX_STREAMS, DEFAULT_HTTP2_PING_INTERVAL,
    DEFAULT_HTTP2_PING_TIMEOUT, DEFAULT_HTTP2_STREAM_WINDOW,
};

/// The HTTP/2 bounds of a server, each a `DEFAULT_HTTP2_*` of [`crate::limits`] until set.
#[derive(Clone, Debug)]
pub(super) struct H2Config {
    pub(super) enabled: bool,
    pub(super) max_streams: u32,
    pub(super) stream_window: u32,
    pub(super) connection_window: u32,
    pub(super) max_header_list: u32,
    pub(super) max_frame: u32,
    pub(super) max_pending_resets: usize,
    pub(super) max_local_resets: usize,
    pub(super) max_send_buffer: usize,
    pub(super) ping_interval: Option<Duration>,
    pub(super) ping_timeout: Duration,
}

impl Default for H2Config {
    fn default() -> Self {
        Self {
            enabled: true,
            max_streams: DEFAULT_HTTP2_MAX_STREAMS,
            stream_window: DEFAULT_HTTP2_STREAM_WINDOW,
            connection_window: DEFAULT_HTTP2_CONNECTION_WINDOW,
            max_header_list: DEFAULT_HTTP2_MAX_HEADER_LIST,
            max_frame: DEFAULT_HTTP2_MAX_FRAME,
            max_pending_resets: DEFAULT_HTTP2_MAX_PENDING_RESETS,
            max_local_resets: DEFAULT_HTTP2_MAX_LOCAL_RESETS,
            max_send_buffer: DEFAULT_HTTP2_MAX_SEND_BUFFER,
            ping_interval: Some(DEFAULT_HTTP2_PING_INTERVAL),
            ping_timeout: DEFAULT_HTTP2_PING_TIMEOUT,
        }
    }
}

/// Largest flow-control window HTTP/2 allows (RFC 9113, 6.9.1).
pub(super) const MAX_WINDOW: u32 = (1 << 31) - 1;
/// The connection window every HTTP/2 connection starts with (RFC 9113, 6.9.2): the peer may
/// send this much before any `WINDOW_UPDATE`, and no setting can make it smaller.
pub(super) const INITIAL_CONNECTION_WINDOW: u32 = 65_535;
/// Frame sizes HTTP/2 allows (RFC 9113, 6.5.2).
pub(super) const FRAME_SIZES: std::ops::RangeInclusive<u32> = (1 << 14)..=((1 << 24) - 1);

/// hyper's connection builder for both versions, with the server's bounds.
pub(super) fn builder(h2: &H2Config, header_timeout: Duration) -> auto::Builder<TokioExecutor> {
    let mut b = auto::Builder::new(TokioExecutor::new());
    b.http1().timer(TokioTimer::new()).header_read_timeout(header_timeout);
    b.http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(h2.max_streams)
        .initial_stream_window_size(h2.stream_window)
        .initial_connection_window_size(h2.connection_window)
        .max_header_list_size(h2.max_header_list)
        .max_frame_size(h2.max_frame)
        .max_pending_accept_reset_streams(h2.max_pending_resets)
        .max_local_error_reset_streams(h2.max_local_resets)
        .max_send_buf_size(h2.max_send_buffer)
        .keep_alive_interval(h2.ping_interval)
        .keep_alive_timeout(h2.ping_timeout);
    if h2.enabled { b } else { b.http1_only() }
}

/// How a connection's task ended.
pub(super) enum Ended<E> {
    /// The connection ended by itself (the client closed it, or it failed).
    Closed(Result<(), E>),
    /// Idle past the bound and not closed within the grace after it was told to.
    Idle,
    /// The table shed it to make room.
    Shed,
    /// Still open [`SHUTDOWN_GRACE`](crate::limits::SHUTDOWN_GRACE) after the stop told it to
    /// close (a client that does not read its answer, say).
    Stopped,
}

/// Drives `conn` until it ends: told to close gracefully when `stop` turns true (then dropped
/// if still open [`SHUTDOWN_GRACE`](crate::limits::SHUTDOWN_GRACE) later) or when no request has
/// been in progress on it for `idle` (then dropped if still open `idle` later), dropped at once
/// when `shed` completes.
pub(super) async fn drive<F, E>(
    conn: F,
    graceful: impl Fn(Pin<&mut F>),
    tracker: &Conn,
    idle: Duration,
    mut stop: Option<watch::Receiver<bool>>,
    shed: impl Future<Output = ()>,
) -> Ended<E>
where
    F: Future<Output = Result<(), E>>,
{
    /// What the watchers saw.
    enum Event {
        Shed,
        Stop,
        Idle,
        Deadline,
    }
    tokio::pin!(conn, shed);
    let mut closing = false;
    let deadline = tokio::time::sleep(Duration::MAX);
    tokio::pin!(deadline);
    // What the deadline ends, once armed.
    let mut timed = None;
    loop {
        let event = {
            let watch = async {
                tokio::select! {
                    biased;
                    () = &mut shed => Event::Shed,
                    () = stopped(stop.as_mut()), if stop.is_some() => Event::Stop,
                    () = tracker.idle_for(idle), if !closing => Event::Idle,
                    () = &mut deadline, if timed.is_some() => Event::Deadline,
                }
            };
            let watch = std::pin::pin!(watch);
            let mut watch = Gated::new(watch);
            // The connection first, at every wake-up; the watchers only when one of them woke
            // the task (each wake-up of a busy connection would otherwise poll them all).
            let next = std::future::poll_fn(|cx| {
                if let Poll::Ready(r) = conn.as_mut().poll(cx) {
                    return Poll::Ready(Err(r));
                }
                watch.poll(cx).map(Ok)
            });
            match next.await {
                Err(r) => return Ended::Closed(r),
                Ok(event) => event,
            }
        };
        match event {
            Event::Shed => return Ended::Shed,
            Event::Stop => {
                graceful(conn.as_mut());
                closing = true;
                // Also a connection the idle bound was already closing: the stop's grace is the
                // shorter wait when the idle bound is long.
                let at = tokio::time::Instant::now() + crate::limits::SHUTDOWN_GRACE;
                if timed.is_none() || at < deadline.deadline() {
                    deadline.as_mut().reset(at);
                    timed = Some(Ended::Stopped);
                }
                stop = None;
            }
            Event::Idle => {
                graceful(conn.as_mut());
                closing = true;
                timed = Some(Ended::Idle);
                deadline.as_mut().reset(tokio::time::Instant::now() + idle);
            }
            Event::Deadline => return timed.unwrap_or(Ended::Idle),
        }
    }
}

/// A future polled only when a waker it was given fired (and the first time): beside a future
/// woken often (a busy connection), one that rarely is (its stop, idle and shed watchers) costs
/// a flag's look per wake-up instead of a poll of each of its parts.
struct Gated<'a, T> {
    fut: Pin<&'a mut T>,
    flag: Arc<Flag>,
    waker: Waker,
}

/// Set by the gated future's wakers, which then wake the task.
struct Flag {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl<'a, T: Future> Gated<'a, T> {
    fn new(fut: Pin<&'a mut T>) -> Self {
        let flag = Arc::new(Flag { woken: AtomicBool::new(true), task: AtomicWaker::new() });
        let waker = Waker::from(flag.clone());
        Self { fut, flag, waker }
    }

    fn poll(&mut self, cx: &mut TaskContext<'_>) -> Poll<T::Output> {
        // Registered before the flag is read: a wake-up in between is not lost.
        self.flag.task.register(cx.waker());
        if !self.flag.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        self.fut.as_mut().poll(&mut TaskContext::from_waker(&self.waker))
    }
}

/// Completes once `stop` says so (or its sender is gone); never without one.
async fn stopped(stop: Option<&mut watch::Receiver<bool>>) {
    match stop {
        Some(rx) => {
            let _ = rx.wait_for(|s| *s).await;
        }
        None => std::future::pending().await,
    }
}

/// The connection builder shared by a server's connection tasks.
pub(super) type Shared = Arc<auto::Builder<TokioExecutor>>;
