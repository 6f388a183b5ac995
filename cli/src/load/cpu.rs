//! The generator's own CPU time, read from the kernel (`getrusage`), so every report says what
//! the load cost the process that sent it. A load tester whose cost per request rivals the
//! server's measures itself; this number says when that is so.

use std::time::Duration;

/// CPU time this process has used so far, user and system.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cpu {
    pub user: Duration,
    pub system: Duration,
}

impl Cpu {
    /// The process's CPU time now (every thread, the runtime's workers included), or `None`
    /// where the kernel does not say.
    #[must_use]
    pub fn now() -> Option<Self> {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `getrusage` writes one `struct rusage` to the pointer it is given and reads
        // nothing from it; `usage` is a live, writable, properly aligned `rusage`, and
        // `RUSAGE_SELF` is a valid `who`.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // SAFETY: `getrusage` returned 0, so it filled the whole struct (and it was zeroed
        // before, so it is initialised either way).
        let usage = unsafe { usage.assume_init() };
        Some(Self { user: time(usage.ru_utime), system: time(usage.ru_stime) })
    }

    /// The CPU time spent from `earlier` to `self`.
    #[must_use]
    pub fn since(self, earlier: Self) -> Self {
        Self {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }

    #[must_use]
    pub fn total(self) -> Duration {
        self.user + self.system
    }

    /// Microseconds of CPU per request, or `None` with no request.
    #[must_use]
    pub fn per_request_us(self, requests: u64) -> Option<f64> {
        (requests > 0).then(|| self.total().as_secs_f64() * 1e6 / requests as f64)
    }
}

fn time(t: libc::timeval) -> Duration {
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let micros = u32::try_from(t.tv_usec).unwrap_or(0).min(999_999);
    Duration::new(secs, micros * 1_000)
}

#[cfg(test)]
mod tests;
