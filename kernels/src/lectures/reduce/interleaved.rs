//! Lecture variants 1 and 2: interleaved addressing.

use crate::gpu::{self, Shared};
use crate::reduce::finish::finish;
use crate::reduce::reduction::Reduction;

/// Load one element per thread into shared memory (identity past `n`).
#[inline(always)]
#[track_caller]
pub(super) unsafe fn load_one<R: Reduction>(a: *const R::In, b: *const R::In, n: u64, s: Shared<R::Acc>) {
    let tid = gpu::thread_idx();
    let i = gpu::block_idx() as u64 * gpu::block_dim() as u64 + tid as u64;
    // SAFETY: i < n is checked; s has block_dim slots.
    unsafe {
        let v = if i < n { R::load(a, b, i) } else { R::identity() };
        s.store(tid as usize, v);
    }
    gpu::sync_threads();
}

/// Lecture variant 1 (Harris #1): interleaved addressing with divergent
/// branching.
///
/// ```text
/// s:      x0  x1  x2  x3  x4  x5  x6  x7
/// step 1: x01     x23     x45     x67      threads 0,2,4,6 (tid % 2 == 0)
/// step 2: x0-3            x4-7             threads 0,4     (tid % 4 == 0)
/// step 3: x0-7                             thread 0        (tid % 8 == 0)
/// ```
/// Every step is taken by a thread pattern scattered over all warps: warps
/// stay busy with mostly idle lanes (divergence), and `%` is slow.
///
/// Launch: one element per thread, `ceil(n / B)` blocks, `B` accumulator
/// slots + 16 bytes of shared memory. The loop runs to `block_dim()` at run
/// time, as in the lecture; the block size is still fixed per instance.
///
/// # Safety
/// See [`crate::reduce::finish::finish`] for `partials`, `out`, `counter`; `a` (and
/// `b`) hold `n` elements.
pub unsafe fn reduce_interleaved<R: Reduction, const B: u32>(
    a: *const R::In,
    b: *const R::In,
    n: u64,
    partials: *mut R::Acc,
    out: *mut R::Acc,
    counter: *mut u32,
    mode: u32,
) {
    let s = Shared::<R::Acc>::dynamic();
    // SAFETY: forwarded.
    unsafe { load_one::<R>(a, b, n, s) };
    let tid = gpu::thread_idx();
    let mut stride = 1;
    while stride < gpu::block_dim() {
        // The lecture's modulo, kept: its cost is part of what this variant shows.
        #[allow(clippy::manual_is_multiple_of)]
        let active = tid % (2 * stride) == 0;
        if active {
            // SAFETY: tid + stride < block_dim since tid is a multiple of 2*stride.
            unsafe { s.store(tid as usize, R::combine(s.load(tid as usize), s.load((tid + stride) as usize))) };
        }
        gpu::sync_threads();
        stride *= 2;
    }
    // SAFETY: slot 0 holds the total after the last barrier.
    let total = if tid == 0 { unsafe { s.load(0) } } else { R::identity() };
    // SAFETY: forwarded.
    unsafe { finish::<R, B>(total, s, partials, out, counter, mode) };
}

/// Lecture variant 2 (Harris #2): interleaved addressing with a strided
/// index (`index = 2 * stride * tid`), so the active threads are the first
/// ones and whole warps retire early: no divergence within active warps.
///
/// The price is shared-memory bank conflicts: at stride `s`, lane `t`
/// touches word `2*s*t`, so for `s >= 16` many lanes of a warp hit the same
/// bank and their accesses are serialised.
///
/// Launch and safety as [`reduce_interleaved`].
///
/// # Safety
/// As [`reduce_interleaved`].
pub unsafe fn reduce_interleaved_strided<R: Reduction, const B: u32>(
    a: *const R::In,
    b: *const R::In,
    n: u64,
    partials: *mut R::Acc,
    out: *mut R::Acc,
    counter: *mut u32,
    mode: u32,
) {
    let s = Shared::<R::Acc>::dynamic();
    // SAFETY: forwarded.
    unsafe { load_one::<R>(a, b, n, s) };
    let tid = gpu::thread_idx();
    let dim = gpu::block_dim();
    let mut stride = 1;
    while stride < dim {
        let index = 2 * stride * tid;
        if index < dim {
            // SAFETY: index + stride < dim (index is a multiple of 2*stride < dim).
            unsafe { s.store(index as usize, R::combine(s.load(index as usize), s.load((index + stride) as usize))) };
        }
        gpu::sync_threads();
        stride *= 2;
    }
    // SAFETY: slot 0 holds the total.
    let total = if tid == 0 { unsafe { s.load(0) } } else { R::identity() };
    // SAFETY: forwarded.
    unsafe { finish::<R, B>(total, s, partials, out, counter, mode) };
}
