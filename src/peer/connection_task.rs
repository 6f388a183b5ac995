//! [`ConnectionTask`]: a running connection's task (and child process), to await or detach.

use std::fmt;
use std::sync::Arc;

use tokio::task::JoinHandle;

use super::error::CloseReason;
use super::handle::Shared;

/// The running connection: its task (and child process, for
/// [`transport::spawn_child`](crate::transport::spawn_child)).
///
/// Dropping it closes the connection as [`PeerHandle::close`](super::PeerHandle::close) does;
/// the task then finishes writing what was queued on its own. [`ConnectionTask::detach`] lets it
/// run until it ends by itself instead.
#[must_use = "dropping a ConnectionTask closes it; keep it, await `closed`, or `detach` it"]
pub struct ConnectionTask {
    pub(crate) shared: Arc<Shared>,
    pub(crate) task: Option<JoinHandle<()>>,
    /// The child's supervisor, which reaps it.
    pub(crate) extra: Option<JoinHandle<()>>,
    pub(crate) pid: Option<u32>,
}

impl fmt::Debug for ConnectionTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionTask").field("running", &self.task.is_some()).finish()
    }
}

impl ConnectionTask {
    /// Waits until the connection has ended and its queue is flushed (and, for a child process,
    /// the child has been reaped); returns why it ended.
    ///
    /// Cancel-safe: a `select!` that drops this future leaves the connection as it was.
    pub async fn closed(&mut self) -> CloseReason {
        if let Some(t) = &mut self.task {
            let _ = t.await;
        }
        self.task = None;
        if let Some(t) = &mut self.extra {
            let _ = t.await;
        }
        self.extra = None;
        self.shared.lock().close_reason().unwrap_or(CloseReason::Local)
    }

    /// Lets the connection run on its own until either side closes it.
    pub fn detach(mut self) {
        tokio::spawn(async move {
            self.closed().await;
        });
    }

    /// The child's process id, for a connection made by
    /// [`transport::spawn_child`](crate::transport::spawn_child).
    #[must_use]
    pub fn child_id(&self) -> Option<u32> {
        self.pid
    }

    /// Closes the connection, as [`PeerHandle::close`](super::PeerHandle::close).
    pub fn close(&self) {
        self.shared.close(CloseReason::Local);
    }
}

impl Drop for ConnectionTask {
    fn drop(&mut self) {
        self.shared.close(CloseReason::Local);
    }
}
