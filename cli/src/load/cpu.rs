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
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work_done_and_never_goes_back() {
        let before = Cpu::now().expect("getrusage answers on Linux");
        // Spin until the kernel has charged at least 20 ms of user time: the clock ticks at
        // 1-10 ms, so the loop ends on any machine, however loaded.
        let mut x = 0u64;
        let mut after = before;
        while after.since(before).user < Duration::from_millis(20) {
            for i in 0..100_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            after = Cpu::now().expect("getrusage answers on Linux");
            assert!(after.user >= before.user && after.system >= before.system);
        }
        let spent = after.since(before);
        assert!(spent.total() >= Duration::from_millis(20));
        assert_eq!(spent.per_request_us(0), None);
        let per = spent.per_request_us(1_000).expect("requests > 0");
        assert!((per - spent.total().as_secs_f64() * 1e3).abs() < 1e-6);
    }

    #[test]
    fn an_earlier_reading_past_a_later_one_gives_zero_not_a_wrap() {
        let a = Cpu { user: Duration::from_secs(2), system: Duration::from_secs(1) };
        let b = Cpu { user: Duration::from_secs(1), system: Duration::from_secs(3) };
        assert_eq!(b.since(a), Cpu { user: Duration::ZERO, system: Duration::from_secs(2) });
    }
}
