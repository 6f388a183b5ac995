//! The tallies a run records into: per operation, a latency HdrHistogram of successes,
//! errors by kind and bytes, in a few shards of interval tallies (each worker or driver locks
//! only its own shard, so the locks are uncontended but once a second); the run harvests the
//! shards every second into the totals, the per-second timeline and the `--hdr-log` file.
//! Latencies are in microseconds, in HdrHistograms of 3 significant digits from 1 µs to an
//! hour (longer ones are recorded as an hour).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

/// The longest latency a histogram holds, in microseconds (an hour); longer ones saturate.
pub const MAX_LATENCY_US: u64 = 3_600_000_000;

/// An empty latency histogram.
#[must_use]
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid bounds")
}

/// One operation's tallies over some span.
#[derive(Debug, Clone)]
pub struct OpTally {
    /// Latencies of the successes.
    pub ok: Histogram<u64>,
    /// Latencies of the failures (any kind).
    pub failed: Histogram<u64>,
    pub errors: BTreeMap<String, u64>,
    /// Of the requests the server ran as tasks (`--tasks`), the time to the first answer
    /// (the task's creation); their time to completion is in `ok` or `failed`.
    pub first_answer: Histogram<u64>,
    /// Payload bytes: the request's params and the response's result (or error), as sent and
    /// received, without the envelope.
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

impl OpTally {
    #[must_use]
    pub fn new() -> Self {
        Self {
            ok: histogram(),
            failed: histogram(),
            errors: BTreeMap::new(),
            first_answer: histogram(),
            bytes_sent: 0,
            bytes_received: 0,
        }
    }

    pub fn requests(&self) -> u64 {
        self.ok.len() + self.failed.len()
    }

    pub fn error_count(&self) -> u64 {
        self.failed.len()
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Self) {
        let _ = self.ok.add(&other.ok);
        let _ = self.failed.add(&other.failed);
        let _ = self.first_answer.add(&other.first_answer);
        for (k, n) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += n;
        }
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
    }

    fn reset(&mut self) {
        self.ok.reset();
        self.failed.reset();
        self.first_answer.reset();
        self.errors.clear();
        self.bytes_sent = 0;
        self.bytes_received = 0;
    }

    /// Records one request: its latency, and `Err(kind)` when it failed.
    pub fn record(
        &mut self,
        latency: Duration,
        outcome: Result<(), String>,
        sent: usize,
        got: usize,
    ) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX).clamp(1, MAX_LATENCY_US);
        match outcome {
            Ok(()) => self.ok.saturating_record(us),
            Err(kind) => {
                self.failed.saturating_record(us);
                *self.errors.entry(kind).or_default() += 1;
            }
        }
        self.bytes_sent += sent as u64;
        self.bytes_received += got as u64;
    }

    /// Records the time to the first answer of a request the server ran as a task.
    pub fn record_first(&mut self, first: Duration) {
        let us = u64::try_from(first.as_micros()).unwrap_or(u64::MAX).clamp(1, MAX_LATENCY_US);
        self.first_answer.saturating_record(us);
    }
}

impl Default for OpTally {
    fn default() -> Self {
        Self::new()
    }
}

/// Interval tallies in shards, one `OpTally` per operation in each.
#[derive(Debug)]
pub struct Shards {
    shards: Vec<Mutex<Vec<OpTally>>>,
}

impl Shards {
    #[must_use]
    pub fn new(shards: usize, ops: usize) -> Self {
        let shards = (0..shards.max(1)).map(|_| Mutex::new(vec![OpTally::new(); ops])).collect();
        Self { shards }
    }

    /// Records into shard `shard % n`.
    pub fn record(
        &self,
        shard: usize,
        op: usize,
        latency: Duration,
        outcome: Result<(), String>,
        sent: usize,
        got: usize,
    ) {
        let s = &self.shards[shard % self.shards.len()];
        let mut s = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        s[op].record(latency, outcome, sent, got);
    }

    /// Records into shard `shard % n` the time to the first answer of a request the server
    /// ran as a task (a second, rare lock: nothing is paid when no call becomes a task).
    pub fn record_first(&self, shard: usize, op: usize, first: Duration) {
        let s = &self.shards[shard % self.shards.len()];
        let mut s = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        s[op].record_first(first);
    }

    /// Everything recorded since the last harvest, per operation; the shards start over.
    pub fn harvest(&self) -> Vec<OpTally> {
        let mut out: Vec<OpTally> = Vec::new();
        for s in &self.shards {
            let mut s = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if out.is_empty() {
                out = vec![OpTally::new(); s.len()];
            }
            for (o, t) in out.iter_mut().zip(s.iter_mut()) {
                o.add(t);
                t.reset();
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
