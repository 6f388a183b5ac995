//! Resumable event streams of a legacy session (MCP's "Resumability and Redelivery", and the
//! polling of SEP-1699, 2025-11-25).
//!
//! Every event stream of a legacy session (a POST's answer once it streams, and each GET
//! stream) is an [`SseStream`]: numbered from a counter the server's sessions share, so a number
//! names one stream of one session, its events carry `id: N-K` (stream `N`, its `K`-th event;
//! the priming event, which carries no message, is `K` = 0), and it keeps its latest events,
//! bounded in count and bytes (the newest is kept whatever its size), for a client that resumes
//! it with `GET` and `Last-Event-ID: N-K`: that connection gets the events after `K`, then the
//! stream's later ones. A stream is delivered by one connection at a time ([`StreamReader`]);
//! a resumption takes it over from a connection still open (the client has left that one).
//!
//! ```text
//!  router ──► SseStream::append (id N-K, kept, oldest dropped past the bounds) ──► wake
//!                                                                                   │
//!  POST or GET body ◄── StreamReader::next: the events after its cursor ◄───────────┘
//! ```

use crate::sync::Locked;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::Notify;

use crate::{message::RawJson, message::encode::Outgoing};

/// How a server keeps its legacy sessions' event streams resumable.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResumeConfig {
    /// The `retry` the priming event announces.
    pub(crate) retry: Duration,
    /// Events a stream keeps for replay (at least 1).
    pub(crate) events: usize,
    /// Bytes of events a stream keeps for replay (its newest event is kept whatever its size).
    pub(crate) bytes: usize,
    /// Streams no connection delivers that a session keeps for a resumption (at least 1).
    pub(crate) streams: usize,
    /// How long such a stream is kept.
    pub(crate) retention: Duration,
}

/// The longest event id of ours: two `u64`s and a dash.
pub(crate) const MAX_EVENT_ID: usize = 41;

/// Reads an event id of ours, `N-K` (`N` >= 1 and `K` in decimal without leading zeros);
/// `None` for anything else.
pub(crate) fn parse_event_id(v: &[u8]) -> Option<(u64, u64)> {
    if v.len() > MAX_EVENT_ID {
        return None;
    }
    let dash = memchr::memchr(b'-', v)?;
    let number = decimal(&v[..dash])?;
    let seq = decimal(&v[dash + 1..])?;
    (number > 0).then_some((number, seq))
}

fn decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || (v.len() > 1 && v[0] == b'0') || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

/// `N-K` into `out`.
fn write_id(out: &mut BytesMut, number: u64, seq: u64) {
    let mut b = itoa::Buffer::new();
    out.put_slice(b.format(number).as_bytes());
    out.put_u8(b'-');
    out.put_slice(b.format(seq).as_bytes());
}

/// The priming event of stream `number`: its id (`N-0`), the `retry` time, and empty data.
pub(crate) fn priming(number: u64, retry: Duration) -> Bytes {
    let mut out = BytesMut::with_capacity(64);
    out.put_slice(b"id: ");
    write_id(&mut out, number, 0);
    out.put_slice(b"\nretry: ");
    let ms = u64::try_from(retry.as_millis()).unwrap_or(u64::MAX);
    out.put_slice(itoa::Buffer::new().format(ms).as_bytes());
    out.put_slice(b"\ndata: \n\n");
    out.freeze()
}

/// One message as an event with id `N-K`; empty when the message is not UTF-8 (the peer never
/// writes such a message).
fn event(json: &[u8], number: u64, seq: u64) -> Bytes {
    let mut id = BytesMut::with_capacity(MAX_EVENT_ID);
    write_id(&mut id, number, seq);
    let id = std::str::from_utf8(&id).expect("digits and a dash");
    let mut out = BytesMut::with_capacity(json.len() + 64);
    if let Ok(text) = std::str::from_utf8(json) {
        let msg: Outgoing<'_> = Outgoing::Raw(RawJson::new(text));
        if msg.write_sse(Some(id), &mut out).is_err() {
            out.clear();
        }
    }
    out.freeze()
}

/// Why a `Last-Event-ID` cannot be resumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unresumable {
    /// No stream of this session has the number: never one of its streams (another session's,
    /// or none at all), or one no longer kept (past the retention, or the count of streams).
    Unknown,
    /// Events after it were dropped from the stream's replay buffer.
    Dropped,
    /// The stream has not sent that event yet.
    Future,
}

/// One resumable event stream.
pub(crate) struct SseStream {
    pub(crate) number: u64,
    state: Mutex<State>,
}

struct State {
    /// The number of the next event (the priming event is 0, messages start at 1).
    next: u64,
    /// Events kept for a resumption, oldest first: `kept[i]` is event `first + i`.
    kept: VecDeque<Bytes>,
    first: u64,
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
    /// No event will come any more: a reader that delivered them all ends.
    finished: bool,
    /// The connection delivering the stream, if any.
    live: Option<Live>,
    /// Readers attached so far; `live` names the current one.
    readers: u64,
    /// Since when no connection has delivered the stream (its making, at first).
    idle_since: Instant,
}

struct Live {
    reader: u64,
    wake: Arc<Notify>,
    /// The reader ends once it delivered this event (the stream was closed for it).
    end_after: Option<u64>,
}

impl SseStream {
    pub(crate) fn new(number: u64, cfg: &ResumeConfig) -> Arc<Self> {
        Arc::new(Self {
            number,
            state: Mutex::new(State {
                next: 1,
                kept: VecDeque::new(),
                first: 1,
                bytes: 0,
                max_events: cfg.events.max(1),
                max_bytes: cfg.bytes,
                finished: false,
                live: None,
                readers: 0,
                idle_since: Instant::now(),
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.locked()
    }

    /// Adds a message as the stream's next event and wakes its reader; `false` when the stream
    /// has finished (the message goes nowhere).
    pub(crate) fn append(&self, json: &[u8]) -> bool {
        let mut st = self.state();
        if st.finished {
            return false;
        }
        let ev = event(json, self.number, st.next);
        st.next += 1;
        st.bytes += ev.len();
        st.kept.push_back(ev);
        while st.kept.len() > 1 && (st.kept.len() > st.max_events || st.bytes > st.max_bytes) {
            let old = st.kept.pop_front().expect("more than one kept");
            st.bytes -= old.len();
            st.first += 1;
        }
        if let Some(live) = &st.live {
            live.wake.notify_one();
        }
        true
    }

    /// No event will come any more: the reader ends once it delivered them all.
    pub(crate) fn finish(&self) {
        let mut st = self.state();
        st.finished = true;
        if let Some(live) = &st.live {
            live.wake.notify_one();
        }
    }

    /// Ends the connection delivering the stream once it delivered the events so far (the
    /// stream itself goes on: a client resumes it).
    pub(crate) fn cut(&self) {
        let mut st = self.state();
        let last = st.next - 1;
        if let Some(live) = &mut st.live {
            live.end_after = Some(last);
            live.wake.notify_one();
        }
    }

    /// The number of the last event so far (0: none but the priming event).
    pub(crate) fn last(&self) -> u64 {
        self.state().next - 1
    }

    /// Whether a connection delivers the stream.
    pub(crate) fn is_live(&self) -> bool {
        self.state().live.is_some()
    }

    /// Whether no connection has delivered the stream for `retention` or longer.
    pub(crate) fn expired(&self, now: Instant, retention: Duration) -> bool {
        let st = self.state();
        st.live.is_none() && now.saturating_duration_since(st.idle_since) >= retention
    }

    /// Since when no connection has delivered the stream; `None` while one does.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let st = self.state();
        st.live.is_none().then_some(st.idle_since)
    }

    /// A connection delivering the stream from after event `after`: first `prefix` (the
    /// priming event), and, with `end_after`, ending once that event was delivered. It takes
    /// the stream over from the connection that delivered it, which ends.
    pub(crate) fn attach(
        self: &Arc<Self>,
        after: u64,
        prefix: Option<Bytes>,
        end_after: Option<u64>,
    ) -> StreamReader {
        let mut st = self.state();
        st.readers += 1;
        let wake = Arc::new(Notify::new());
        let reader = st.readers;
        let old = st.live.replace(Live { reader, wake: wake.clone(), end_after });
        if let Some(old) = old {
            old.wake.notify_one();
        }
        StreamReader {
            stream: self.clone(),
            reader: st.readers,
            cursor: after,
            wake,
            prefix,
            skipped: 0,
        }
    }

    /// A connection resuming the stream after event `after` (a `Last-Event-ID`).
    pub(crate) fn resume(self: &Arc<Self>, after: u64) -> Result<StreamReader, Unresumable> {
        {
            let st = self.state();
            if after >= st.next {
                return Err(Unresumable::Future);
            }
            if after + 1 < st.first {
                return Err(Unresumable::Dropped);
            }
        }
        Ok(self.attach(after, None, None))
    }
}

/// The connection delivering a stream: the events after its cursor, as they come. Dropping it
/// leaves the stream to be resumed.
pub(crate) struct StreamReader {
    stream: Arc<SseStream>,
    reader: u64,
    /// The last event delivered.
    cursor: u64,
    wake: Arc<Notify>,
    prefix: Option<Bytes>,
    /// Events dropped from the buffer before this reader delivered them.
    pub(crate) skipped: u64,
}

impl StreamReader {
    /// The next bytes to send (every event ready, in one chunk); `None` once the stream has
    /// finished and all was delivered, the stream was closed for this connection, or another
    /// connection took it over. Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<Bytes> {
        loop {
            {
                let mut st = self.stream.state();
                let live = st.live.as_ref().filter(|l| l.reader == self.reader)?;
                let end_after = live.end_after;
                let last = end_after.map_or(st.next - 1, |e| e.min(st.next - 1));
                if self.cursor + 1 < st.first {
                    // The reader fell behind the buffer's bounds: those events are gone.
                    self.skipped += st.first - 1 - self.cursor;
                    self.cursor = st.first - 1;
                }
                let events = if self.cursor < last {
                    let from = usize::try_from(self.cursor + 1 - st.first).unwrap_or(usize::MAX);
                    let to = usize::try_from(last + 1 - st.first).unwrap_or(usize::MAX);
                    self.cursor = last;
                    Some(concat(st.kept.range(from..to)))
                } else {
                    None
                };
                let out = match (self.prefix.take(), events) {
                    (Some(p), Some(e)) => Some(concat([&p, &e].into_iter())),
                    (p, e) => p.or(e),
                };
                if out.is_some() {
                    return out;
                }
                let done = st.finished || end_after.is_some_and(|e| self.cursor >= e);
                if done {
                    st.live = None;
                    st.idle_since = Instant::now();
                    return None;
                }
            }
            self.wake.notified().await;
        }
    }
}

impl Drop for StreamReader {
    fn drop(&mut self) {
        let mut st = self.stream.state();
        if st.live.as_ref().is_some_and(|l| l.reader == self.reader) {
            st.live = None;
            st.idle_since = Instant::now();
        }
    }
}

/// The events in one chunk (the one itself when there is one).
fn concat<'a>(mut events: impl Iterator<Item = &'a Bytes> + Clone) -> Bytes {
    let len: usize = events.clone().map(Bytes::len).sum();
    let Some(first) = events.next() else { return Bytes::new() };
    if first.len() == len {
        return first.clone();
    }
    let mut out = BytesMut::with_capacity(len);
    out.put_slice(first);
    for e in events {
        out.put_slice(e);
    }
    out.freeze()
}

#[cfg(test)]
mod tests;
