//! `--hdr-log FILE`: the run's latencies as an HdrHistogram interval log (the standard text
//! format: a `#[StartTime: …]` header, then one line per histogram per second, tagged with the
//! operation, its value a V2-compressed, base64 histogram), and `report merge`, which adds the
//! logs of several generators into one report.
//!
//! Each operation gets two tags: its name (successes) and `failed:` + its name (failures, all
//! kinds). Tags cannot hold spaces or commas, so those become `_` and `;`.
//!
//! The log is written by its own thread, fed a second's histograms at a time, so the run never
//! waits for the disk or the compressor.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write as _};
use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};

use super::tally::OpTally;

/// Prefix of the tag of an operation's failures.
pub const FAILED: &str = "failed:";

/// The most bytes `report merge` reads from one log: a log is read whole.
pub const DEFAULT_MAX_LOG_BYTES: u64 = 1 << 30;

/// The most seconds of histograms queued for the log's writer: a disk slower than the run
/// would otherwise make the queue, and the memory, grow for as long as the run lasts. An
/// interval that finds the queue full is not written, and `finish` says how many were lost.
pub const DEFAULT_LOG_QUEUE: usize = 64;

/// An operation name as a tag.
#[must_use]
pub fn tag_of(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            ' ' | '\r' | '\n' => '_',
            ',' => ';',
            c => c,
        })
        .collect()
}

/// One second's histograms: (tag, histogram), its start from the log's base time, its length.
type Batch = (Vec<(String, Histogram<u64>)>, Duration, Duration);

/// The writer of one log.
pub struct HdrLog {
    tx: Option<mpsc::SyncSender<Batch>>,
    thread: Option<JoinHandle<io::Result<()>>>,
    /// Intervals dropped because the queue was full.
    lost: std::sync::atomic::AtomicU64,
}

impl HdrLog {
    /// Creates `path` and writes the header: a comment naming the run, then the start time.
    ///
    /// # Errors
    ///
    /// The file cannot be created.
    pub fn create(path: &Path, comment: &str, start: SystemTime) -> io::Result<Self> {
        Self::with_queue(path, comment, start, DEFAULT_LOG_QUEUE)
    }

    /// As [`Self::create`], with room for `queue` seconds of histograms.
    ///
    /// # Errors
    ///
    /// The file cannot be created.
    pub fn with_queue(
        path: &Path,
        comment: &str,
        start: SystemTime,
        queue: usize,
    ) -> io::Result<Self> {
        let file = std::fs::File::create(path)?;
        let comment = comment.to_owned();
        let (tx, rx) = mpsc::sync_channel::<Batch>(queue);
        let thread = std::thread::Builder::new().name("hdr-log".into()).spawn(move || {
            let mut out = BufWriter::new(file);
            let mut serializer = V2DeflateSerializer::new();
            let mut w = IntervalLogWriterBuilder::new()
                .add_comment(&comment)
                .with_start_time(start)
                .with_base_time(start)
                .with_max_value_divisor(1.0)
                .begin_log_with(&mut out, &mut serializer)?;
            for (hists, at, len) in rx {
                for (tag, h) in &hists {
                    w.write_histogram(h, at, len, Tag::new(tag))
                        .map_err(|e| io::Error::other(e.to_string()))?;
                }
            }
            drop(w);
            out.flush()
        })?;
        Ok(Self { tx: Some(tx), thread: Some(thread), lost: 0.into() })
    }

    /// Queues one interval of every operation (empty ones are left out); never waits.
    pub fn write(&self, names: &[String], interval: &[OpTally], at: Duration, len: Duration) {
        let mut hists = Vec::new();
        for (name, t) in names.iter().zip(interval) {
            if !t.ok.is_empty() {
                hists.push((tag_of(name), t.ok.clone()));
            }
            if !t.failed.is_empty() {
                hists.push((format!("{FAILED}{}", tag_of(name)), t.failed.clone()));
            }
        }
        if let Some(tx) = &self.tx
            && tx.try_send((hists, at, len)).is_err()
        {
            self.lost.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Writes what is queued and closes the file.
    ///
    /// # Errors
    ///
    /// Writing failed.
    /// Writing failed, or intervals were lost to a full queue.
    pub fn finish(mut self) -> io::Result<()> {
        drop(self.tx.take());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r?,
            Some(Err(_)) => return Err(io::Error::other("the log writer panicked")),
            None => {}
        }
        let lost = self.lost.into_inner();
        if lost > 0 {
            return Err(io::Error::other(format!(
                "{lost} intervals were not written: the disk did not keep up"
            )));
        }
        Ok(())
    }
}

/// One log, read back.
#[derive(Debug, Default)]
pub struct Read {
    /// Seconds since the epoch the log's timestamps count from.
    pub base: f64,
    /// (tag, start from `base`, length, histogram).
    pub intervals: Vec<(String, Duration, Duration, Histogram<u64>)>,
}

/// Reads a log written by `--hdr-log` (or any interval log).
///
/// # Errors
///
/// The file cannot be read, is larger than [`DEFAULT_MAX_LOG_BYTES`], or a line is not a valid
/// interval.
pub fn read(path: &Path) -> Result<Read, String> {
    use std::io::Read as _;
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(DEFAULT_MAX_LOG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > DEFAULT_MAX_LOG_BYTES {
        return Err(format!("{}: longer than {DEFAULT_MAX_LOG_BYTES} bytes", path.display()));
    }
    parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse(bytes: &[u8]) -> Result<Read, String> {
    use base64::Engine as _;
    let mut out = Read::default();
    let (mut start, mut base) = (None, None);
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(bytes) {
        match entry.map_err(|e| format!("not an interval log: {e:?}"))? {
            LogEntry::StartTime(t) => start = Some(t.as_secs_f64()),
            LogEntry::BaseTime(t) => base = Some(t.as_secs_f64()),
            LogEntry::Interval(i) => {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .map_err(|e| format!("a histogram is not base64: {e}"))?;
                let h: Histogram<u64> = de
                    .deserialize(&mut io::Cursor::new(raw))
                    .map_err(|e| format!("a histogram does not decode: {e:?}"))?;
                let tag = i.tag().map(|t| t.as_str().to_owned()).unwrap_or_default();
                out.intervals.push((tag, i.start_timestamp(), i.duration(), h));
            }
        }
    }
    out.base = base.or(start).unwrap_or(0.0);
    Ok(out)
}

/// Several logs added together: per tag, the sum of its histograms; per second (of absolute
/// time), the requests and errors; and the span from the first interval's start to the last
/// one's end.
#[derive(Debug, Default)]
pub struct Merged {
    /// Operation name (the tag) → its successes and failures.
    pub ops: BTreeMap<String, OpTally>,
    pub first: f64,
    pub last: f64,
    /// Absolute second → (requests, errors).
    pub seconds: BTreeMap<i64, (u64, u64)>,
}

/// Adds logs together.
#[must_use]
pub fn merge(logs: &[Read]) -> Merged {
    let mut m = Merged { first: f64::INFINITY, last: f64::NEG_INFINITY, ..Merged::default() };
    for log in logs {
        for (tag, at, len, h) in &log.intervals {
            let start = log.base + at.as_secs_f64();
            m.first = m.first.min(start);
            m.last = m.last.max(start + len.as_secs_f64());
            let sec = m.seconds.entry(start.floor() as i64).or_default();
            let (name, failed) = match tag.strip_prefix(FAILED) {
                Some(name) => (name, true),
                None => (tag.as_str(), false),
            };
            let op = m.ops.entry(name.to_owned()).or_default();
            if failed {
                let _ = op.failed.add(h);
                *op.errors.entry("failed".into()).or_default() += h.len();
                sec.1 += h.len();
            } else {
                let _ = op.ok.add(h);
            }
            sec.0 += h.len();
        }
    }
    if m.ops.is_empty() {
        m.first = 0.0;
        m.last = 0.0;
    }
    m
}

#[cfg(test)]
mod tests;
