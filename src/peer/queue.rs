//! The bounded write queue: encoded messages appended to one buffer, taken whole by the write
//! loop, so every message queued between two wake-ups of the writer goes out in one write.

use std::cell::RefCell;
use std::sync::Mutex;

use bytes::BytesMut;
use tokio::sync::Notify;

use crate::Error;

/// The queue was closed: the connection is ending and nothing more is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueClosed;

/// Encoded bytes waiting for the writer, bounded by a byte count.
pub(crate) struct WriteQueue {
    inner: Mutex<Inner>,
    /// Wakes the writer; `notify_one` keeps a permit, so a push between the writer's check and
    /// its wait is never missed.
    writer: Notify,
    /// Wakes senders waiting for room.
    space: Notify,
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
            space: Notify::new(),
            cap,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves the buffer whole (every operation under it is
        // an append, a swap or a flag), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Encodes one message and queues it, waiting while the queue holds `cap` bytes or more.
    /// A message larger than `cap` goes alone into an empty queue.
    pub(crate) async fn send(
        &self,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), Error>,
    ) -> Result<(), SendError> {
        let mut msg = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        msg.clear();
        let queued = match encode(&mut msg) {
            Ok(()) => self.push(&msg).await.map_err(|QueueClosed| SendError::Closed),
            Err(e) => Err(SendError::Encode(e)),
        };
        if msg.capacity() <= SCRATCH_KEEP {
            SCRATCH.with(|s| *s.borrow_mut() = msg);
        }
        queued
    }

    async fn push(&self, msg: &[u8]) -> Result<(), QueueClosed> {
        loop {
            let room = self.space.notified();
            tokio::pin!(room);
            // Registered before the check, so a writer that frees room after it wakes us.
            room.as_mut().enable();
            {
                let mut q = self.lock();
                if q.closed {
                    return Err(QueueClosed);
                }
                if q.buf.is_empty() || q.buf.len() + msg.len() <= self.cap {
                    q.buf.extend_from_slice(msg);
                    drop(q);
                    self.writer.notify_one();
                    return Ok(());
                }
            }
            room.await;
        }
    }

    /// Queues without waiting for room: only for small control messages sent where waiting is
    /// impossible (a `Drop`), whose number is bounded by the requests that preceded them.
    pub(crate) fn send_now(&self, encode: impl FnOnce(&mut BytesMut)) -> Result<(), QueueClosed> {
        let mut q = self.lock();
        if q.closed {
            return Err(QueueClosed);
        }
        encode(&mut q.buf);
        drop(q);
        self.writer.notify_one();
        Ok(())
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
                    self.space.notify_waiters();
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
        self.space.notify_waiters();
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
        q.send(line(3)).await.unwrap();
        q.send(line(4)).await.unwrap();
        let mut out = BytesMut::new();
        assert!(q.take(&mut out).await);
        assert_eq!(out.len(), 7);
    }

    #[tokio::test]
    async fn a_full_queue_makes_the_sender_wait_until_the_writer_takes() {
        let q = std::sync::Arc::new(WriteQueue::new(10));
        q.send(line(10)).await.unwrap();
        let q2 = q.clone();
        let waiting = tokio::spawn(async move { q2.send(line(1)).await });
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
        q.send(line(9)).await.unwrap();
        assert_eq!(q.len(), 9);
    }

    #[tokio::test]
    async fn closing_drains_what_was_queued_then_refuses() {
        let q = WriteQueue::new(100);
        q.send(line(5)).await.unwrap();
        q.close();
        assert!(matches!(q.send(line(1)).await, Err(SendError::Closed)));
        assert_eq!(q.send_now(|_| ()), Err(QueueClosed));
        let mut out = BytesMut::new();
        assert!(q.take(&mut out).await);
        out.clear();
        assert!(!q.take(&mut out).await);
    }

    #[tokio::test]
    async fn an_encoding_failure_queues_nothing() {
        let q = WriteQueue::new(100);
        let r = q.send(|_| Err(Error::NullRequestId)).await;
        assert!(matches!(r, Err(SendError::Encode(Error::NullRequestId))));
        assert_eq!(q.len(), 0);
    }
}
