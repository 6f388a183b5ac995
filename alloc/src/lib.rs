//! mimalloc as a global allocator, through the entry points that suit each request.
//!
//! The `mimalloc` crate's allocator passes every request to mimalloc's aligned functions
//! (`mi_malloc_aligned` and its kin), whatever its alignment. mimalloc serves those from its
//! fast path only when a free block of the size class happens to have the alignment and the
//! size is at most 1 KiB; anything larger takes its generic aligned path, which for a size that
//! is not a power of two over-allocates by the alignment and aligns the pointer by hand (about
//! 200 instructions more per call, counted with callgrind in docs/perf-log/load-and-inspect.md,
//! and a larger block). A
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

#![deny(clippy::undocumented_unsafe_blocks)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{mi_free, mi_malloc, mi_realloc, mi_zalloc};

/// The alignment every block of mimalloc's default build has, whatever its size: each size
/// class is a whole number of machine words, and blocks start at a page's start, at a multiple
/// of the block size, or past the page's header (a multiple of 16), so every block starts on a
/// word boundary (`MI_INTPTR_SIZE`). A build with guarded allocations (libmimalloc-sys's debug
/// features) may place a small block against its guard page at any byte: [`MiMalloc`] checks
/// each plain block and moves one that misses the alignment to the aligned functions.
pub const PLAIN_ALIGN: usize = std::mem::size_of::<usize>();

/// The global allocator: mimalloc, through its plain functions for alignments up to
/// [`PLAIN_ALIGN`] and its aligned ones (by way of the `mimalloc` crate) above.
#[derive(Clone, Copy, Debug, Default)]
pub struct MiMalloc;

/// Whether `p` is aligned to `align` (a power of two).
#[inline]
fn fits(p: *mut u8, align: usize) -> bool {
    (p as usize) & (align - 1) == 0
}

/// A plain mimalloc allocation function (`mi_malloc`, `mi_zalloc`).
type Plain = unsafe extern "C" fn(usize) -> *mut c_void;
/// A plain mimalloc resize function (`mi_realloc`).
type PlainResize = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;

/// A block for `layout` from `plain` when its alignment allows and the block has it (null when
/// mimalloc has no memory); otherwise from `aligned`.
///
/// # Safety
///
/// `layout` has a non-zero size; `plain` is a mimalloc function (its blocks are freed with
/// `mi_free`); `aligned` returns a block for `layout` or null.
#[inline]
unsafe fn plain_or(layout: Layout, plain: Plain, aligned: impl FnOnce() -> *mut u8) -> *mut u8 {
    if layout.align() <= PLAIN_ALIGN {
        // SAFETY: `plain` takes any size and returns a block of at least that size, or null.
        let p: *mut u8 = unsafe { plain(layout.size()).cast() };
        if p.is_null() || fits(p, layout.align()) {
            return p;
        }
        // SAFETY: `p` is the live mimalloc block just allocated, freed once.
        unsafe { mi_free(p.cast::<c_void>()) };
    }
    aligned()
}

/// `ptr` resized by `plain` when its alignment allows and the new block has it; a new block
/// that misses the alignment is moved by the aligned resize.
///
/// # Safety
///
/// As [`GlobalAlloc::realloc`], with `ptr` a mimalloc block; `plain` is a mimalloc resize.
#[inline]
unsafe fn plain_resize_or(
    ptr: *mut u8,
    layout: Layout,
    new_size: usize,
    plain: PlainResize,
) -> *mut u8 {
    if layout.align() > PLAIN_ALIGN {
        // SAFETY: the caller's contract for `realloc` is passed on unchanged.
        return unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) };
    }
    // SAFETY: `ptr` is a live mimalloc block (the caller's contract); `plain` keeps its
    // contents up to the smaller size and returns the resized block, or null with `ptr` intact.
    let q: *mut u8 = unsafe { plain(ptr.cast::<c_void>(), new_size).cast() };
    if q.is_null() || fits(q, layout.align()) {
        return q;
    }
    // A new block from the aligned function (mimalloc's aligned resize hands an alignment
    // this small to its plain resize, which may keep the block where it is), the contents
    // copied over, the old block freed.
    // SAFETY: `new_size` at `layout.align()` is a valid layout (the caller's contract for
    // `realloc`); `q` is a live mimalloc block of at least `new_size` bytes holding the
    // contents, and the new block is a distinct block of `new_size` bytes.
    unsafe {
        let moved = Layout::from_size_align_unchecked(new_size, layout.align());
        let r = mimalloc::MiMalloc.alloc(moved);
        if r.is_null() {
            // `ptr` is gone (the plain resize took it), so a null here could not leave the
            // caller its block, as a failed resize must: out of memory on this path (a build
            // with guarded blocks only) ends the process.
            std::process::abort();
        }
        std::ptr::copy_nonoverlapping(q, r, new_size);
        mi_free(q.cast::<c_void>());
        r
    }
}

// SAFETY: each method returns memory from mimalloc that fits `layout`: a plain call for an
// alignment up to `PLAIN_ALIGN`, whose block is checked and, if it misses the alignment, given
// up for an aligned one, and the `mimalloc` crate's aligned call otherwise. Every block is
// mimalloc's, so `mi_free` takes it whichever function gave it. `realloc` picks its path from
// the same `layout.align()` as `alloc` did, so a block aligned above `PLAIN_ALIGN` is only ever
// resized by the aligned function, which keeps its alignment.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` (a non-zero size) is passed on; the
        // fallback is the `mimalloc` crate's aligned allocation for the same layout.
        unsafe { plain_or(layout, mi_malloc, || mimalloc::MiMalloc.alloc(layout)) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`; `mi_zalloc` and the fallback both zero the block.
        unsafe { plain_or(layout, mi_zalloc, || mimalloc::MiMalloc.alloc_zeroed(layout)) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc, and is freed once (the
        // caller's contract).
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is passed on; `ptr` came from this
        // allocator, so from mimalloc.
        unsafe { plain_resize_or(ptr, layout, new_size, mi_realloc) }
    }
}

#[cfg(test)]
mod tests;
