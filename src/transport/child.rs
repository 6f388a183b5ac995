//! A child process's stdio as a peer's transport: our writes go to its stdin, our reads come
//! from its stdout, its stderr goes where the host says.

use crate::limits::CHILD_EXIT_GRACE;
use crate::sync::Locked;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use crate::limits::{CHILD_STDERR_DRAIN, DEFAULT_CHILD_STDERR_TAIL};
use crate::peer::{ChildExit, ConnectionTask, Handler, PeerBuilder, PeerHandle};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::process::{Child, Command};
use tokio::sync::watch;

/// Longest stderr line forwarded as one piece; longer lines are forwarded in pieces.
const STDERR_LINE_MAX: usize = 8 * 1024;

/// Where a child's stderr goes.
#[derive(Clone, Default)]
pub enum ChildStderr {
    /// To this process's stderr.
    Inherit,
    /// Nowhere.
    Discard,
    /// Each line as a `tracing` event at level INFO, target `mcpwire::child`.
    #[default]
    Tracing,
    /// Each line (without its line ending, invalid UTF-8 replaced) to a function.
    Lines(Arc<dyn Fn(&str) + Send + Sync>),
}

impl std::fmt::Debug for ChildStderr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Inherit => "Inherit",
            Self::Discard => "Discard",
            Self::Tracing => "Tracing",
            Self::Lines(_) => "Lines(..)",
        })
    }
}

/// Spawns `command` and runs a peer over its stdin (our writes) and stdout (our reads), with
/// the last [`DEFAULT_CHILD_STDERR_TAIL`] bytes of its stderr kept (see [`spawn_child_with`]).
///
/// # Errors
///
/// When the command cannot be spawned.
pub fn spawn_child<H: Handler>(
    builder: &PeerBuilder,
    command: Command,
    stderr: ChildStderr,
    handler: H,
) -> io::Result<(PeerHandle, ConnectionTask)> {
    spawn_child_with(builder, command, stderr, DEFAULT_CHILD_STDERR_TAIL, handler)
}

/// Spawns `command` and runs a peer over its stdin (our writes) and stdout (our reads).
///
/// The child runs in a process group of its own (on unix), so that what it starts (a shell's
/// children) is ended with it. When the connection ends (either side closes, or the
/// [`ConnectionTask`] is dropped) the child's stdin is closed once the queued messages are
/// written; the child then gets [`CHILD_EXIT_GRACE`] to exit, then its group gets SIGTERM,
/// and [`CHILD_EXIT_GRACE`] later SIGKILL; whatever of the group outlives the child is ended
/// the same way. The child is always reaped, and [`ConnectionTask::closed`] returns after all that.
///
/// A child that exits on its own ends the connection with
/// [`CloseReason::Exited`](crate::peer::CloseReason::Exited): its status and the last
/// `stderr_tail` bytes of its stderr (when `stderr` pipes it: [`ChildStderr::Tracing`] or
/// [`ChildStderr::Lines`]; every line is still forwarded there).
///
/// # Errors
///
/// When the command cannot be spawned.
pub fn spawn_child_with<H: Handler>(
    builder: &PeerBuilder,
    mut command: Command,
    stderr: ChildStderr,
    stderr_tail: usize,
    handler: H,
) -> io::Result<(PeerHandle, ConnectionTask)> {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    command.stderr(match stderr {
        ChildStderr::Inherit => Stdio::inherit(),
        ChildStderr::Discard => Stdio::null(),
        ChildStderr::Tracing | ChildStderr::Lines(_) => Stdio::piped(),
    });
    let mut child = command.spawn()?;
    let pid = child.id();
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("the child's stdio was not piped"));
    };
    let tail = Arc::new(Tail::new(stderr_tail));
    let forwarder =
        child.stderr.take().map(|err| tokio::spawn(forward_lines(err, stderr, pid, tail.clone())));
    let (exit_tx, exit_rx) = watch::channel(None);
    let stdout = ExitAware::new(stdout, exit_rx.clone());
    let stdin = ExitAware::new(stdin, exit_rx);
    let (handle, mut conn) = builder.spawn(stdout, stdin, handler);
    let done = conn.shared.done.clone();
    conn.pid = pid;
    conn.extra = Some(tokio::spawn(async move {
        let mut group = Group(pid);
        // The child exits on its own (its exit is told to the connection), or the connection
        // ends first: its task has closed the child's stdin once flushed (or given up), and
        // the child gets the chance to exit on that, as the MCP stdio transport asks.
        let status = tokio::select! {
            status = child.wait() => {
                if let Some(forwarder) = forwarder {
                    let _ = tokio::time::timeout(CHILD_STDERR_DRAIN, forwarder).await;
                }
                if let Ok(status) = &status {
                    let _ = exit_tx.send(Some(ChildExit::new(*status, tail.text())));
                }
                done.cancelled().await;
                status
            }
            () = done.cancelled() => stop(&mut child, &group).await,
        };
        group.end().await;
        tracing::debug!(?pid, ?status, "child process reaped");
    }));
    Ok((handle, conn))
}

/// Waits [`CHILD_EXIT_GRACE`] for the child to exit, then stops its group: SIGTERM, and
/// SIGKILL a grace later.
async fn stop(child: &mut Child, group: &Group) -> io::Result<std::process::ExitStatus> {
    if let Ok(status) = tokio::time::timeout(CHILD_EXIT_GRACE, child.wait()).await {
        return status;
    }
    group.signal(Signal::Term);
    if let Ok(status) = tokio::time::timeout(CHILD_EXIT_GRACE, child.wait()).await {
        return status;
    }
    group.signal(Signal::Kill);
    let _ = child.start_kill();
    child.wait().await
}

/// The signals a child's group gets.
#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// A child's process group (its id is the child's pid): ended when the child is done with,
/// and killed if the task that minds it is dropped first (a runtime shutting down).
struct Group(Option<u32>);

impl Group {
    /// Sends `signal` to every process of the group; `false` when none is left.
    fn signal(&self, signal: Signal) -> bool {
        #[cfg(unix)]
        if let Some(pgid) = self.0.and_then(|p| libc::pid_t::try_from(p).ok()).filter(|p| *p > 1) {
            let signal = match signal {
                Signal::Term => libc::SIGTERM,
                Signal::Kill => libc::SIGKILL,
            };
            // SAFETY: `killpg` only sends a signal and touches no memory of ours. `pgid` is the
            // group the child was made leader of (`process_group(0)`), never 0 (our own group)
            // or 1; while any of its processes lives, no other group can take its id.
            return unsafe { libc::killpg(pgid, signal) } == 0;
        }
        let _ = signal;
        false
    }

    /// Ends what is left of the group: SIGTERM, then SIGKILL if any is left a grace later.
    async fn end(&mut self) {
        if self.signal(Signal::Term) {
            let deadline = tokio::time::Instant::now() + CHILD_EXIT_GRACE;
            while tokio::time::Instant::now() < deadline && self.alive() {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            self.signal(Signal::Kill);
        }
        self.0 = None;
    }

    /// Whether a process of the group is left (one that exited but is not reaped yet counts).
    fn alive(&self) -> bool {
        #[cfg(unix)]
        if let Some(pgid) = self.0.and_then(|p| libc::pid_t::try_from(p).ok()).filter(|p| *p > 1) {
            // SAFETY: as in `signal`; signal 0 only checks that the group exists.
            return unsafe { libc::killpg(pgid, 0) } == 0;
        }
        false
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(Signal::Kill);
    }
}

/// The last bytes of a child's stderr.
struct Tail {
    max: usize,
    kept: Mutex<VecDeque<u8>>,
}

impl Tail {
    fn new(max: usize) -> Self {
        Self { max, kept: Mutex::new(VecDeque::new()) }
    }

    fn push(&self, bytes: &[u8]) {
        let bytes = &bytes[bytes.len().saturating_sub(self.max)..];
        let mut kept = self.kept.locked();
        let over = (kept.len() + bytes.len()).saturating_sub(self.max);
        kept.drain(..over);
        kept.extend(bytes);
    }

    /// What was kept, as text, without the line ending the end.
    fn text(&self) -> String {
        let kept = self.kept.locked();
        let bytes: Vec<u8> = kept.iter().copied().collect();
        String::from_utf8_lossy(&bytes).trim_end().to_owned()
    }
}

/// A child's stdout or stdin that, when it ends (the end of stdout, a failed write), waits a
/// little for the child's exit and fails with it instead, so the connection says how the
/// child ended.
struct ExitAware<T> {
    inner: T,
    exit: watch::Receiver<Option<ChildExit>>,
    waiting: Option<Pin<Box<dyn Future<Output = Option<ChildExit>> + Send>>>,
    /// What the wait found, once it is over.
    told: Option<Option<ChildExit>>,
}

impl<T> ExitAware<T> {
    fn new(inner: T, exit: watch::Receiver<Option<ChildExit>>) -> Self {
        Self { inner, exit, waiting: None, told: None }
    }

    /// The child's exit, once told (within [`CHILD_EXIT_GRACE`]), as the error to end with;
    /// `None` when it was not.
    fn poll_exit(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Error>> {
        if self.told.is_none() {
            let mut exit = self.exit.clone();
            let waiting = self.waiting.get_or_insert_with(|| {
                Box::pin(async move {
                    let told =
                        tokio::time::timeout(CHILD_EXIT_GRACE, exit.wait_for(Option::is_some));
                    told.await.ok()?.ok()?.clone()
                })
            });
            self.told = Some(ready!(waiting.as_mut().poll(cx)));
            self.waiting = None;
        }
        let told = self.told.clone().flatten();
        Poll::Ready(told.map(|e| io::Error::new(io::ErrorKind::UnexpectedEof, e)))
    }

    /// Whether the stream has ended and its end is being (or was) told.
    fn ending(&self) -> bool {
        self.waiting.is_some() || self.told.is_some()
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ExitAware<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.ending() {
            let before = buf.filled().len();
            ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
            if buf.filled().len() > before || buf.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
        }
        // The end of stdout.
        Poll::Ready(ready!(this.poll_exit(cx)).map_or(Ok(()), Err))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ExitAware<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.ending() {
            match ready!(Pin::new(&mut this.inner).poll_write(cx, buf)) {
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) => tracing::debug!(error = %e, "writing to the child failed"),
            }
        }
        let failed = || io::Error::from(io::ErrorKind::BrokenPipe);
        Poll::Ready(Err(ready!(this.poll_exit(cx)).unwrap_or_else(failed)))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

async fn forward_lines<R: AsyncRead + Unpin>(
    mut from: R,
    sink: ChildStderr,
    pid: Option<u32>,
    tail: Arc<Tail>,
) {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let emit = |line: &[u8]| {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches(['\n', '\r']);
        match &sink {
            ChildStderr::Lines(f) => f(text),
            _ => tracing::info!(target: "mcpwire::child", pid, "{text}"),
        }
    };
    loop {
        let n = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        tail.push(&chunk[..n]);
        buf.extend_from_slice(&chunk[..n]);
        while let Some(i) = memchr::memchr(b'\n', &buf) {
            emit(&buf[..i]);
            buf.drain(..=i);
        }
        while buf.len() >= STDERR_LINE_MAX {
            emit(&buf[..STDERR_LINE_MAX]);
            buf.drain(..STDERR_LINE_MAX);
        }
    }
    if !buf.is_empty() {
        emit(&buf);
    }
}
