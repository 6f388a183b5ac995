//! How a client paces its polls of a task (the tasks extension): [`TaskPolling`].

use std::time::Duration;

use crate::limits::{DEFAULT_TASK_POLL_CEILING, DEFAULT_TASK_POLL_FLOOR, DEFAULT_TASK_POLL_START};

/// How a client paces its polls of a task.
///
/// ```
/// use std::time::Duration;
/// use mcpwire::client::TaskPolling;
/// let p = TaskPolling::new().floor(Duration::from_millis(20)).ceiling(Duration::from_secs(1));
/// // The server's suggestion, kept within the bounds.
/// assert_eq!(p.next(Some(5), None), Duration::from_millis(20));
/// assert_eq!(p.next(Some(300), None), Duration::from_millis(300));
/// assert_eq!(p.next(Some(60_000), None), Duration::from_secs(1));
/// // No suggestion: the start, then twice the last wait.
/// assert_eq!(p.next(None, None), Duration::from_millis(50));
/// assert_eq!(p.next(None, Some(Duration::from_millis(400))), Duration::from_millis(800));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskPolling {
    pub(super) floor: Duration,
    ceiling: Duration,
    start: Duration,
}

impl Default for TaskPolling {
    fn default() -> Self {
        Self {
            floor: DEFAULT_TASK_POLL_FLOOR,
            ceiling: DEFAULT_TASK_POLL_CEILING,
            start: DEFAULT_TASK_POLL_START,
        }
    }
}

impl TaskPolling {
    /// The defaults ([`DEFAULT_TASK_POLL_FLOOR`], [`DEFAULT_TASK_POLL_CEILING`],
    /// [`DEFAULT_TASK_POLL_START`]).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Never poll sooner than `d` after the last poll.
    #[must_use]
    pub fn floor(mut self, d: Duration) -> Self {
        self.floor = d;
        self
    }

    /// Poll at least every `d` (never below the floor).
    #[must_use]
    pub fn ceiling(mut self, d: Duration) -> Self {
        self.ceiling = d;
        self
    }

    /// The first wait when the server suggests none.
    #[must_use]
    pub fn start(mut self, d: Duration) -> Self {
        self.start = d;
        self
    }

    /// The wait before the next poll: the server's suggestion (in milliseconds) when it made
    /// one, otherwise twice the `last` wait (the start value for the first), within the floor
    /// and the ceiling.
    #[must_use]
    pub fn next(&self, suggested_ms: Option<u64>, last: Option<Duration>) -> Duration {
        let wait = match suggested_ms {
            Some(ms) => Duration::from_millis(ms),
            None => last.map_or(self.start, |l| l.saturating_mul(2)),
        };
        wait.clamp(self.floor, self.ceiling.max(self.floor))
    }
}

#[cfg(test)]
mod tests;
