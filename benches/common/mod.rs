//! What the benches share: mimalloc as the global allocator, counting allocations while
//! [`COUNTING`] is on (switched on only outside timed parts), in total and by the side of the
//! thread that allocates ([`set_side`]: client and server runtimes of one process apart).

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mcpwire_alloc::MiMalloc;

/// mimalloc, counting allocations while [`COUNTING`] is on.
struct CountingMimalloc;

pub static COUNTING: AtomicBool = AtomicBool::new(false);
pub static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// Allocations counted by side: 0 for threads no side was set on, then what [`set_side`] named.
#[allow(dead_code)]
pub static SIDE_ALLOCATIONS: [AtomicU64; 3] =
    [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

thread_local! {
    // `const`, with no destructor: reading it never allocates and never fails while the
    // thread lives, so the allocator may read it.
    static SIDE: Cell<usize> = const { Cell::new(0) };
}

/// Counts this thread's allocations under `side` (1 or 2) from now on.
#[allow(dead_code)]
pub fn set_side(side: usize) {
    SIDE.with(|s| s.set(side.min(SIDE_ALLOCATIONS.len() - 1)));
}

fn counted() {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        let side = SIDE.try_with(Cell::get).unwrap_or(0);
        SIDE_ALLOCATIONS[side].fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to mimalloc with the same arguments; counting touches no memory
// the allocator hands out.
unsafe impl GlobalAlloc for CountingMimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted();
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted();
        // SAFETY: the caller's contract for `alloc_zeroed` is passed on unchanged.
        unsafe { MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted();
        // SAFETY: the caller's contract for `realloc` is passed on unchanged; `ptr` came from
        // this allocator, that is from mimalloc.
        unsafe { MiMalloc.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on unchanged; `ptr` came from
        // this allocator, that is from mimalloc.
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }
}

#[cfg(not(system_alloc))]
#[global_allocator]
static GLOBAL: CountingMimalloc = CountingMimalloc;

/// With `RUSTFLAGS="--cfg system_alloc"` the benches count over the system allocator, which heap
/// profilers (valgrind's DHAT) see into: mimalloc takes its memory straight from the kernel.
#[cfg(system_alloc)]
#[global_allocator]
static GLOBAL: CountingSystem = CountingSystem;

#[cfg(system_alloc)]
struct CountingSystem;

// SAFETY: every method forwards to the system allocator with the same arguments; counting
// touches no memory the allocator hands out.
#[cfg(system_alloc)]
unsafe impl GlobalAlloc for CountingSystem {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted();
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted();
        // SAFETY: the caller's contract for `realloc` is passed on unchanged; `ptr` came from
        // this allocator, that is from the system's.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on unchanged; `ptr` came from
        // this allocator, that is from the system's.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}
