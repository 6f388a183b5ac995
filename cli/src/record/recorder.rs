//! The capture being written while the traffic passes: one writer shared by the readers of
//! both directions, flushed on a timer and at the end.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::capture::{self, Dir};

/// The capture being written, shared by the readers of both directions.
#[derive(Clone)]
pub(crate) struct Recorder {
    inner: Arc<Mutex<capture::Writer<BufWriter<File>>>>,
    start: Instant,
}

impl Recorder {
    pub(super) fn create(
        path: &std::path::Path,
        max_bytes: u64,
        source: serde_json::Map<String, serde_json::Value>,
    ) -> std::io::Result<Self> {
        let file = File::create(path)?;
        let ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        let writer = capture::Writer::new(
            BufWriter::with_capacity(64 * 1024, file),
            max_bytes,
            source,
            u64::try_from(ms).unwrap_or(u64::MAX),
        )?;
        Ok(Self { inner: Arc::new(Mutex::new(writer)), start: Instant::now() })
    }

    /// Now, as a capture's time.
    pub(crate) fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Records frames; a capture that cannot be written stops recording (said once), never
    /// the traffic.
    pub(crate) fn frames<'a>(
        &self,
        t: Duration,
        dir: Dir,
        conn: u64,
        session: Option<&str>,
        frames: impl IntoIterator<Item = &'a [u8]>,
    ) {
        let mut w = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        for f in frames {
            let compact = capture::one_line(f);
            if let Err(e) = w.frame(t, dir, conn, session, compact.as_deref().unwrap_or(f)) {
                write_stderr(&format!("mcpwire record: cannot write the capture: {e}"));
                // Recording stops; the traffic goes on.
                w.stop();
                return;
            }
        }
    }

    /// Records a frame that is not one, with why.
    pub(crate) fn bad(&self, t: Duration, dir: Dir, conn: u64, text: &[u8], reason: &str) {
        let mut w = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = w.bad(t, dir, conn, text, reason) {
            write_stderr(&format!("mcpwire record: cannot write the capture: {e}"));
            w.stop();
        }
    }

    /// Flushes the capture.
    pub(crate) fn flush(&self) {
        let mut w = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = w.flush() {
            write_stderr(&format!("mcpwire record: cannot write the capture: {e}"));
        }
    }

    /// Flushes every `every` until the task is dropped, so a recorder killed outright loses
    /// at most that much.
    pub(crate) fn flush_every(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                me.flush();
            }
        })
    }

    /// Flushes, and says on standard error what the bound left out.
    pub(crate) fn finish(&self) {
        self.flush();
        let w = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if w.left_out() > 0 {
            write_stderr(&format!(
                "mcpwire record: the capture reached --max-bytes ({} bytes written); {} frames \
                 after it passed but were not recorded",
                w.written(),
                w.left_out()
            ));
        }
    }
}

/// A line on standard error that never panics (a host may have closed it).
pub(crate) fn write_stderr(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
