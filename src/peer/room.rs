//! [`Room`]: how a task waits until a bound has room again (the read loop for the held-request
//! and notification bounds, a sender for the write queue), at no cost when nobody waits.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Wakes the tasks waiting for room when something lets go; a release with nobody waiting is
/// one atomic load.
///
/// The protocol that makes a wake-up impossible to miss: a waiter counts itself, registers for
/// the wake, then re-checks its condition; a releaser changes the state, then reads the count.
/// Both sides use sequentially consistent operations on the count (and the releaser on the state
/// it changes, or a lock around it), so at least one of them sees the other's write.
#[derive(Debug, Default)]
pub(crate) struct Room {
    notify: Notify,
    waiters: AtomicUsize,
}

impl Room {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Runs `attempt` until it returns `Some`, waiting for a [`release`](Self::release) between
    /// tries; `None` if `stop` completes first. The first try registers nothing.
    pub(crate) async fn until<T>(
        &self,
        mut attempt: impl FnMut() -> Option<T>,
        stop: impl Future<Output = ()>,
    ) -> Option<T> {
        if let Some(done) = attempt() {
            return Some(done);
        }
        let _counted = Counted::new(&self.waiters);
        tokio::pin!(stop);
        loop {
            let room = self.notify.notified();
            tokio::pin!(room);
            // Registered before the re-check, so a release after it wakes this task.
            room.as_mut().enable();
            if let Some(done) = attempt() {
                return Some(done);
            }
            tokio::select! {
                biased;
                () = &mut stop => return None,
                () = room => {}
            }
        }
    }

    /// Something let go: wakes the waiters, if any.
    pub(crate) fn release(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.notify.notify_waiters();
        }
    }

    /// Wakes every waiter whatever the count says, for a state change they must all see (a
    /// close).
    pub(crate) fn wake_all(&self) {
        self.notify.notify_waiters();
    }
}

/// Counts a waiter for as long as it waits (its future may be dropped mid-wait).
struct Counted<'a>(&'a AtomicUsize);

impl<'a> Counted<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[tokio::test]
    async fn a_waiter_wakes_on_release_and_stops_on_stop() {
        let room = Arc::new(Room::new());
        let open = Arc::new(AtomicBool::new(false));
        let (r, o) = (room.clone(), open.clone());
        let waiter = tokio::spawn(async move {
            r.until(|| o.load(Ordering::SeqCst).then_some(7), std::future::pending()).await
        });
        // Not done while the condition is false, however often released.
        for _ in 0..3 {
            tokio::task::yield_now().await;
            room.release();
        }
        assert!(!waiter.is_finished());
        open.store(true, Ordering::SeqCst);
        room.release();
        let woke = tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await;
        assert_eq!(woke.expect("the release woke the waiter").unwrap(), Some(7));
        assert_eq!(room.waiters.load(Ordering::SeqCst), 0, "the waiter uncounted itself");

        let stopped = room.until(|| None::<()>, async {}).await;
        assert_eq!(stopped, None);
        assert_eq!(room.waiters.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_release_between_the_check_and_the_wait_is_not_missed() {
        // The releaser runs at the worst moment: right after the waiter's re-check failed and
        // before it waits. The attempt itself plays the releaser on its second call. A waiter
        // that registered after its check, or a release that skipped the wake because the
        // waiter was not yet counted, would sleep for ever; the timeout makes that a failure.
        let room = Room::new();
        let open = AtomicBool::new(false);
        let mut calls = 0;
        let attempt = || {
            calls += 1;
            let seen = open.load(Ordering::SeqCst);
            if calls == 2 {
                open.store(true, Ordering::SeqCst);
                room.release();
            }
            seen.then_some(calls)
        };
        let woke = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            room.until(attempt, std::future::pending()),
        )
        .await;
        assert_eq!(woke, Ok(Some(3)), "the release after the failed check was missed");
    }
}
