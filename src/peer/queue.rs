//! The bounded write queue: encoded messages appended to one buffer, taken whole by the write
//! loop, so every message queued between two wake-ups of the writer goes out in one write.
//!
//! Two lanes share the buffer. [`Lane::Normal`] (requests, notifications, handlers' replies)
//! waits while the buffer holds `cap` bytes. [`Lane::Control`] (what the read loop and a
//! request's `Drop` must send without waiting on the other side: error replies, cancellations)
//! may go [`CONTROL_BUDGET`] bytes past it, so the read loop keeps reading while handlers wait
//! for room; only when that budget too is spent has the other side stopped reading altogether,
//! and then the read loop waits as well.

use std::cell::RefCell;
use std::sync::Mutex;

use bytes::BytesMut;
use tokio::sync::Notify;

use super::room::Room;
use crate::Error;

/// Bytes the control lane may queue past the normal bound.
pub(crate) const CONTROL_BUDGET: usize = 256 * 1024;

/// Which bound a message waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// Waits while `cap` bytes are queued.
    Normal,
    /// Waits only while `cap + CONTROL_BUDGET` bytes are queued.
    Control,
}

/// Why a message was not queued right away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TrySendError {
    /// The connection is ending and nothing more is written.
    Closed,
    /// No room in the message's lane.
    Full,
}

/// Encoded bytes waiting for the writer, bounded by a byte count.
pub(crate) struct WriteQueue {
    inner: Mutex<Inner>,
    /// Wakes the writer; `notify_one` keeps a permit, so a push between the writer's check and
    /// its wait is never missed.
    writer: Notify,
    /// Wakes senders waiting for room.
    space: Room,
    cap: usize,
}

struct Inner {
    buf: BytesMut,
    closed: bool,
}

/// Scratch buffers kept per thread for encoding a message before it is queued; larger ones are
/// dropped after use so one huge message does not pin its memory.
const SCRATCH_KEEP: usize = 64 * 1024;

thread_local! {
    static SCRATCH: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

impl WriteQueue {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            inner: Mutex::new(Inner { buf: BytesMut::new(), closed: false }),
            writer: Notify::new(),
            space: Room::new(),
            cap,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves the buffer whole (every operation under it is
        // an append, a swap or a flag), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Encodes one message and queues it in `lane`, waiting for room. A message larger than
    /// the lane's bound goes alone into an empty queue.
    pub(crate) async fn send(
        &self,
        lane: Lane,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), Error>,
    ) -> Result<(), SendError> {
        let mut msg = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        msg.clear();
        let queued = match encode(&mut msg) {
            Ok(()) => self.push(lane, &msg).await,
            Err(e) => Err(SendError::Encode(e)),
        };
        if msg.capacity() <= SCRATCH_KEEP {
            SCRATCH.with(|s| *s.borrow_mut() = msg);
        }
        queued
    }

    fn bound(&self, lane: Lane) -> usize {
        match lane {
            Lane::Normal => self.cap,
            Lane::Control => self.cap.saturating_add(CONTROL_BUDGET),
        }
    }

    /// Appends `msg` if it fits in `lane`.
    fn try_push(&self, lane: Lane, msg: &[u8]) -> Result<(), TrySendError> {
        let mut q = self.lock();
        if q.closed {
            return Err(TrySendError::Closed);
        }
        if !q.buf.is_empty() && q.buf.len() + msg.len() > self.bound(lane) {
            return Err(TrySendError::Full);
        }
        q.buf.extend_from_slice(msg);
        drop(q);
        self.writer.notify_one();
        Ok(())
    }

    async fn push(&self, lane: Lane, msg: &[u8]) -> Result<(), SendError> {
        let attempt = || match self.try_push(lane, msg) {
            Ok(()) => Some(Ok(())),
            Err(TrySendError::Closed) => Some(Err(SendError::Closed)),
            Err(TrySendError::Full) => None,
        };
        // Closing wakes every waiter and makes the attempt fail, so no other stop is needed.
        self.space.until(attempt, std::future::pending()).await.unwrap_or(Err(SendError::Closed))
    }

    /// Queues a control message without waiting, for where waiting is impossible (a `Drop`, the
    /// timer); the caller drops it when the lane is full.
    pub(crate) fn try_send_control(
        &self,
        encode: impl FnOnce(&mut BytesMut),
    ) -> Result<(), TrySendError> {
        let mut msg = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        msg.clear();
        encode(&mut msg);
        let queued = self.try_push(Lane::Control, &msg);
        if msg.capacity() <= SCRATCH_KEEP {
            SCRATCH.with(|s| *s.borrow_mut() = msg);
        }
        queued
    }

    /// Swaps everything queued into `out` (which must be empty), waiting until there is
    /// something. `false` once the queue is closed and drained.
    pub(crate) async fn take(&self, out: &mut BytesMut) -> bool {
        debug_assert!(out.is_empty());
        loop {
            {
                let mut q = self.lock();
                if !q.buf.is_empty() {
                    std::mem::swap(&mut q.buf, out);
                    drop(q);
                    self.space.release();
                    return true;
                }
                if q.closed {
                    return false;
                }
            }
            self.writer.notified().await;
        }
    }

    /// Refuses further messages; what is queued is still taken by the writer.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.writer.notify_one();
        self.space.wake_all();
    }

    /// Bytes waiting.
    pub(crate) fn len(&self) -> usize {
        self.lock().buf.len()
    }
}

/// Why a message could not be queued.
#[derive(Debug)]
pub(crate) enum SendError {
    Closed,
    Encode(Error),
}

#[cfg(test)]
mod tests {
    use bytes::BufMut;

    use super::*;

    fn line(n: usize) -> impl FnOnce(&mut BytesMut) -> Result<(), Error> {
        move |b: &mut BytesMut| {
            b.extend_from_slice(&vec![b'x'; n]);
            Ok(())
        }
    }

    #[tokio::test]
    async fn messages_queued_between_takes_come_out_together() {
        let q = WriteQueue::new(100);
        q.send(Lane::Normal, line(3)).await.unwrap();
        q.send(Lane::Control, line(4)).await.unwrap();
        let mut out = BytesMut::new();
        assert!(q.take(&mut out).await);
        assert_eq!(out.len(), 7);
    }

    #[tokio::test]
    async fn a_full_queue_makes_the_sender_wait_until_the_writer_takes() {
        let q = std::sync::Arc::new(WriteQueue::new(10));
        q.send(Lane::Normal, line(10)).await.unwrap();
        let q2 = q.clone();
        let waiting = tokio::spawn(async move { q2.send(Lane::Normal, line(1)).await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        assert_eq!(q.len(), 10);
        let mut out = BytesMut::new();
        assert!(q.take(&mut out).await);
        waiting.await.unwrap().unwrap();
        assert_eq!(q.len(), 1);
    }

    #[tokio::test]
    async fn a_message_larger_than_the_bound_goes_alone() {
        let q = WriteQueue::new(4);
        q.send(Lane::Normal, line(9)).await.unwrap();
        assert_eq!(q.len(), 9);
    }

    #[tokio::test]
    async fn the_control_lane_goes_past_the_bound_by_its_budget_and_no_further() {
        let q = WriteQueue::new(10);
        q.send(Lane::Normal, line(10)).await.unwrap();
        assert_eq!(q.try_send_control(|b| b.extend_from_slice(&[b'c'; CONTROL_BUDGET])), Ok(()));
        assert_eq!(q.len(), 10 + CONTROL_BUDGET);
        assert_eq!(q.try_send_control(|b| b.put_u8(b'c')), Err(TrySendError::Full));
        assert_eq!(q.try_push(Lane::Normal, b"n"), Err(TrySendError::Full));
    }

    #[tokio::test]
    async fn closing_drains_what_was_queued_then_refuses() {
        let q = WriteQueue::new(100);
        q.send(Lane::Normal, line(5)).await.unwrap();
        q.close();
        assert!(matches!(q.send(Lane::Normal, line(1)).await, Err(SendError::Closed)));
        assert_eq!(q.try_send_control(|_| ()), Err(TrySendError::Closed));
        let mut out = BytesMut::new();
        assert!(q.take(&mut out).await);
        out.clear();
        assert!(!q.take(&mut out).await);
    }

    #[tokio::test]
    async fn an_encoding_failure_queues_nothing() {
        let q = WriteQueue::new(100);
        let r = q.send(Lane::Normal, |_| Err(Error::NullRequestId)).await;
        assert!(matches!(r, Err(SendError::Encode(Error::NullRequestId))));
        assert_eq!(q.len(), 0);
    }
}
