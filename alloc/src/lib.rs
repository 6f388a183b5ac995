//! mimalloc as a global allocator, through the entry points that suit each request.
//!
//! The `mimalloc` crate's allocator passes every request to mimalloc's aligned functions
//! (`mi_malloc_aligned` and its kin), whatever its alignment. mimalloc serves those from its
//! fast path only when a free block of the size class happens to have the alignment and the
//! size is at most 1 KiB; anything larger takes its generic aligned path, which for a size that
//! is not a power of two over-allocates by the alignment and aligns the pointer by hand (about
//! 200 instructions more per call, counted with callgrind in PERF.md, and a larger block). A
//! request whose alignment every mimalloc block already has needs none of that: [`MiMalloc`]
//! sends it to `mi_malloc`, `mi_zalloc` and `mi_realloc`, and only a larger alignment (tokio's
//! task cells ask for 128 bytes) to the aligned functions.
//!
//! ```
//! #[global_allocator]
//! static GLOBAL: mcpwire_alloc::MiMalloc = mcpwire_alloc::MiMalloc;
//!
//! let v: Vec<u8> = Vec::with_capacity(4096);
//! assert!(v.capacity() >= 4096);
//! ```

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{mi_free, mi_malloc, mi_realloc, mi_zalloc};

/// The alignment every block mimalloc hands out has, whatever its size: each size class is a
/// whole number of machine words, and each page's first block starts on a 16-byte boundary, so
/// every block starts on a word boundary (`MI_INTPTR_SIZE`). (mimalloc guarantees 16 bytes,
/// `MI_MAX_ALIGN_SIZE`, only for sizes that are multiples of 16, so 16 is not taken here.)
pub const PLAIN_ALIGN: usize = std::mem::size_of::<usize>();

/// The global allocator: mimalloc, through its plain functions for alignments up to
/// [`PLAIN_ALIGN`] and its aligned ones (by way of the `mimalloc` crate) above.
#[derive(Clone, Copy, Debug, Default)]
pub struct MiMalloc;

// SAFETY: each method returns memory from mimalloc that fits `layout`: a plain call for an
// alignment up to `PLAIN_ALIGN` (which every mimalloc block has, see there) and the `mimalloc`
// crate's aligned call otherwise; a pointer is freed or resized by mimalloc, which owns it
// whichever function gave it (mimalloc's `mi_free` and `mi_realloc` take any of its blocks).
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            // SAFETY: `mi_malloc` takes any size; its block is aligned to `PLAIN_ALIGN`.
            unsafe { mi_malloc(layout.size()).cast() }
        } else {
            // SAFETY: the caller's contract for `alloc` is passed on unchanged.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            // SAFETY: as `alloc`; `mi_zalloc` zeroes the block.
            unsafe { mi_zalloc(layout.size()).cast() }
        } else {
            // SAFETY: the caller's contract for `alloc_zeroed` is passed on unchanged.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc, and is freed once (the
        // caller's contract).
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            // SAFETY: `ptr` is a live mimalloc block (the caller's contract); `mi_realloc`
            // keeps its contents up to the smaller size and returns a block aligned to
            // `PLAIN_ALIGN`, or null with `ptr` untouched.
            unsafe { mi_realloc(ptr.cast::<c_void>(), new_size).cast() }
        } else {
            // SAFETY: the caller's contract for `realloc` is passed on unchanged.
            unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
        }
    }
}

#[cfg(test)]
mod tests;
