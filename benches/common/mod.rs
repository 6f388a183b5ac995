//! What the benches share: mimalloc as the global allocator, counting allocations while
//! [`COUNTING`] is on (switched on only outside timed parts).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mimalloc::MiMalloc;

/// mimalloc, counting allocations while [`COUNTING`] is on.
struct CountingMimalloc;

pub static COUNTING: AtomicBool = AtomicBool::new(false);
pub static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

fn counted() {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
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

#[global_allocator]
static GLOBAL: CountingMimalloc = CountingMimalloc;
