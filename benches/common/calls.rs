//! Driving a caller: `N` tasks making checked calls until a count is done, and the allocations
//! each call costs.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use crate::common::{ALLOCATIONS, COUNTING};

/// One checked call (a round trip).
pub trait Call: Clone + Send + Sync + 'static {
    fn call(&self) -> impl Future<Output = ()> + Send;
}

/// Makes `total` calls with `in_flight` tasks taking work from a shared counter; returns the
/// time taken.
pub async fn drive<C: Call>(client: &C, in_flight: usize, total: u64) -> Duration {
    let remaining = Arc::new(AtomicI64::new(i64::try_from(total).unwrap()));
    let tasks = in_flight.min(usize::try_from(total).unwrap_or(usize::MAX));
    let start = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (client, remaining) = (client.clone(), remaining.clone());
            tokio::spawn(async move {
                while remaining.fetch_sub(1, Ordering::Relaxed) > 0 {
                    client.call().await;
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    start.elapsed()
}

/// Allocations per call at `in_flight`, over `calls` calls after as many to warm up.
pub fn allocations_per_call<C: Call>(
    rt: &tokio::runtime::Runtime,
    client: &C,
    in_flight: usize,
    calls: u64,
) -> f64 {
    rt.block_on(drive(client, in_flight, calls));
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    rt.block_on(drive(client, in_flight, calls));
    COUNTING.store(false, Ordering::Relaxed);
    ALLOCATIONS.load(Ordering::Relaxed) as f64 / calls as f64
}

/// This process's CPU time so far (user and system, every thread).
fn cpu_time() -> Duration {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed value it is given and reads
    // nothing else; RUSAGE_SELF is a valid `who`.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut usage), 0);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// CPU time (this process's, user and system) per call at `in_flight`, over `calls` calls
/// after as many to warm up: what a call costs both sides, whatever else the machine runs.
pub fn cpu_per_call<C: Call>(
    rt: &tokio::runtime::Runtime,
    client: &C,
    in_flight: usize,
    calls: u64,
) -> Duration {
    rt.block_on(drive(client, in_flight, calls));
    let before = cpu_time();
    rt.block_on(drive(client, in_flight, calls));
    (cpu_time() - before) / u32::try_from(calls).unwrap()
}
