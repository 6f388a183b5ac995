use std::alloc::{GlobalAlloc, Layout};

use super::{MiMalloc, PLAIN_ALIGN};

const SIZES: [usize; 16] =
    [1, 7, 8, 15, 16, 24, 40, 100, 1000, 1024, 1025, 1500, 4095, 8200, 70_000, 1 << 21];
const ALIGNS: [usize; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 4096];

fn aligned(p: *mut u8, align: usize) -> bool {
    !p.is_null() && (p as usize).is_multiple_of(align)
}

/// Every size and alignment, on both sides of `PLAIN_ALIGN` and of mimalloc's 1 KiB small-block
/// bound: each block has its alignment, keeps what was written into it through a resize up and
/// down, and a zeroed block reads zero.
#[test]
fn every_block_has_its_alignment_and_keeps_its_contents_through_a_resize() {
    for align in ALIGNS {
        for size in SIZES {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: `layout` has a non-zero size; each block is written within its size,
            // resized with the layout it has, and freed once with it.
            unsafe {
                let p = MiMalloc.alloc(layout);
                assert!(aligned(p, align), "alloc {size} aligned {align}: {p:?}");
                for i in 0..size {
                    p.add(i).write((i % 251) as u8);
                }
                let bigger = size * 3 + 5;
                let q = MiMalloc.realloc(p, layout, bigger);
                assert!(aligned(q, align), "realloc {size} -> {bigger} aligned {align}: {q:?}");
                assert!((0..size).all(|i| q.add(i).read() == (i % 251) as u8));
                let layout = Layout::from_size_align(bigger, align).unwrap();
                let smaller = size.div_ceil(2);
                let r = MiMalloc.realloc(q, layout, smaller);
                assert!(aligned(r, align), "realloc {bigger} -> {smaller} aligned {align}");
                assert!((0..smaller).all(|i| r.add(i).read() == (i % 251) as u8));
                MiMalloc.dealloc(r, Layout::from_size_align(smaller, align).unwrap());

                let z = MiMalloc.alloc_zeroed(layout);
                assert!(aligned(z, align), "alloc_zeroed {bigger} aligned {align}");
                assert!((0..bigger).all(|i| z.add(i).read() == 0));
                MiMalloc.dealloc(z, layout);
            }
        }
    }
}

/// A block freed and asked for again of the same size class comes back: both paths hand their
/// blocks back to mimalloc (a mix of plain and aligned blocks, freed in turn, many times over,
/// would otherwise grow without bound).
#[test]
fn blocks_from_both_paths_are_freed_to_mimalloc() {
    let plain = Layout::from_size_align(1500, PLAIN_ALIGN).unwrap();
    let wide = Layout::from_size_align(1500, 64).unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..10_000 {
        // SAFETY: non-zero sizes; each block is freed once with its own layout.
        unsafe {
            let a = MiMalloc.alloc(plain);
            let b = MiMalloc.alloc(wide);
            assert!(aligned(a, PLAIN_ALIGN) && aligned(b, 64));
            seen.insert(a as usize);
            seen.insert(b as usize);
            MiMalloc.dealloc(b, wide);
            MiMalloc.dealloc(a, plain);
        }
    }
    // Reused blocks: a handful of addresses, not 20,000.
    assert!(seen.len() < 64, "{} distinct blocks", seen.len());
}

/// Stand-ins for a plain function that hands out a block off the word boundary, as mimalloc's
/// guarded allocations of a debug build may: mimalloc's own blocks (so `mi_free` takes them),
/// one byte past a 16-byte boundary.
unsafe extern "C" fn odd_malloc(size: usize) -> *mut std::ffi::c_void {
    // SAFETY: any size; mimalloc returns its block or null.
    unsafe { libmimalloc_sys::mi_malloc_aligned_at(size, 16, 1) }
}

unsafe extern "C" fn odd_zalloc(size: usize) -> *mut std::ffi::c_void {
    // SAFETY: as `odd_malloc`, zeroed.
    unsafe { libmimalloc_sys::mi_zalloc_aligned_at(size, 16, 1) }
}

unsafe extern "C" fn odd_realloc(p: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void {
    // SAFETY: `p` is a live mimalloc block (the callers below pass only those).
    unsafe { libmimalloc_sys::mi_realloc_aligned_at(p, size, 16, 1) }
}

/// A plain block that misses the alignment is given up for an aligned one, zeroed where asked,
/// and a resize that lands off the boundary is moved to an aligned block with its contents.
#[test]
fn a_plain_block_off_its_alignment_is_moved_to_an_aligned_one() {
    for size in [3, 40, 1500] {
        let layout = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: non-zero sizes; the stand-ins hand out mimalloc blocks; each block is
        // written within its size and freed once.
        unsafe {
            let off = odd_malloc(size).cast::<u8>();
            assert!(!aligned(off, 8), "the stand-in is off the boundary");
            libmimalloc_sys::mi_free(off.cast());

            let p = super::plain_or(layout, odd_malloc, || MiMalloc.alloc(layout));
            assert!(aligned(p, 8), "{size}: {p:?}");
            for i in 0..size {
                p.add(i).write(i as u8);
            }
            let q = super::plain_resize_or(p, layout, size * 2, odd_realloc);
            assert!(aligned(q, 8), "{size}: resized {q:?}");
            assert!((0..size).all(|i| q.add(i).read() == i as u8));
            MiMalloc.dealloc(q, Layout::from_size_align(size * 2, 8).unwrap());

            let z = super::plain_or(layout, odd_zalloc, || MiMalloc.alloc_zeroed(layout));
            assert!(aligned(z, 8) && (0..size).all(|i| z.add(i).read() == 0));
            MiMalloc.dealloc(z, layout);

            // An alignment the stand-in happens to meet keeps its block.
            let one = Layout::from_size_align(size, 1).unwrap();
            let kept = super::plain_or(one, odd_malloc, || panic!("the plain block fits"));
            assert!(!aligned(kept, 2));
            MiMalloc.dealloc(kept, one);
        }
    }
}
