//! Lecture variant 6: complete unrolling with the block size known at
//! compile time.

use super::sequential::load_two;
use super::warp_tail;
use crate::gpu::{self, Shared};
use crate::reduce::finish::finish;
use crate::reduce::reduction::Reduction;

/// One tree step of a completely unrolled reduction, halving `2 * HALF`
/// slots; it compiles to nothing when the block is smaller or the step
/// belongs to the warp tail.
#[inline(always)]
fn step<R: Reduction, const B: u32, const HALF: u32>(s: Shared<R::Acc>, tid: u32) {
    if B >= 2 * HALF && HALF > 32 {
        if tid < HALF {
            // SAFETY: tid + HALF < B slots.
            unsafe { s.store(tid as usize, R::combine(s.load(tid as usize), s.load((tid + HALF) as usize))) };
        }
        gpu::sync_threads();
    }
}

/// Reduce `B` shared slots to `s[0]`, every step written out for the
/// compile-time block size `B` (the lectures' C++ template, here a const
/// generic): no loop counter, no comparisons against `block_dim`, and the
/// steps a block of this size does not need are not in the code at all.
#[inline(always)]
pub(super) fn unrolled_tree<R: Reduction, const B: u32>(s: Shared<R::Acc>) {
    let tid = gpu::thread_idx();
    step::<R, B, 512>(s, tid);
    step::<R, B, 256>(s, tid);
    step::<R, B, 128>(s, tid);
    step::<R, B, 64>(s, tid);
    if tid < 32 {
        warp_tail::<R>(s, tid as usize, if B >= 64 { 32 } else { B / 2 });
    }
}

/// Lecture variant 6 (Harris #6): complete unrolling. As variant 5, with
/// the block size a const generic so every step of the tree is unrolled
/// and the dead ones vanish at compile time.
///
/// With rustc, the loops of variants 3 to 5 over a *run-time*
/// `block_dim()` stay loops; here the trip count is known, as in the
/// lecture's templated kernel.
///
/// Launch: as variant 4.
///
/// # Safety
/// As [`super::interleaved::reduce_interleaved`].
pub unsafe fn reduce_complete_unroll<R: Reduction, const B: u32>(
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
    unsafe { load_two::<R>(a, b, n, s) };
    unrolled_tree::<R, B>(s);
    let tid = gpu::thread_idx();
    // SAFETY: thread 0 wrote slot 0 last, in the tail.
    let total = if tid == 0 { unsafe { s.load(0) } } else { R::identity() };
    // SAFETY: forwarded.
    unsafe { finish::<R, B>(total, s, partials, out, counter, mode) };
}
