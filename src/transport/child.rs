//! A child process's stdio as a peer's transport: our writes go to its stdin, our reads come
//! from its stdout, its stderr goes where the host says.

use std::io;
use std::process::Stdio;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

pub use crate::limits::CHILD_EXIT_GRACE;
use crate::peer::{Connection, Handler, PeerBuilder, PeerHandle};

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

/// Spawns `command` and runs a peer over its stdin (our writes) and stdout (our reads).
///
/// When the connection ends (either side closes, or the [`Connection`] is dropped) the child's
/// stdin is closed once the queued messages are written; the child then gets
/// [`CHILD_EXIT_GRACE`] to exit before it is killed, and it is always reaped.
///
/// # Errors
///
/// When the command cannot be spawned.
pub fn spawn_child<H: Handler>(
    builder: &PeerBuilder,
    mut command: Command,
    stderr: ChildStderr,
    handler: H,
) -> io::Result<(PeerHandle, Connection)> {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true);
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
    if let Some(err) = child.stderr.take() {
        tokio::spawn(forward_lines(err, stderr, pid));
    }
    let (handle, mut conn) = builder.spawn(stdout, stdin, handler);
    let shared = conn.shared.clone();
    conn.pid = pid;
    conn.extra = Some(tokio::spawn(async move {
        // The connection's task closes the child's stdin once it has flushed (or given up); give the
        // child the chance to exit on that, as the MCP stdio transport asks, then kill it.
        shared.done.cancelled().await;
        let status = match tokio::time::timeout(CHILD_EXIT_GRACE, child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                let _ = child.start_kill();
                child.wait().await
            }
        };
        tracing::debug!(?pid, ?status, "child process reaped");
    }));
    Ok((handle, conn))
}

async fn forward_lines<R: AsyncRead + Unpin>(mut from: R, sink: ChildStderr, pid: Option<u32>) {
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
