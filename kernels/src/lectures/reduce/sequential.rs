//! Lecture variants 3, 4 and 5: sequential addressing, the first add
//! during the load, and the unrolled last warp.

use super::interleaved::load_one;
use super::warp_tail;
use crate::gpu::{self, Shared};
use crate::reduce::finish::finish;
use crate::reduce::reduction::Reduction;

/// Halve the active range each step: `s[t] += s[t + stride]` for
/// `t < stride`, from `stride = block_dim / 2` down to `stop`.
#[inline(always)]
fn tree_down_to<R: Reduction>(s: Shared<R::Acc>, stop: u32) {
    let tid = gpu::thread_idx();
    let mut stride = gpu::block_dim() / 2;
    while stride > stop {
        if tid < stride {
            // SAFETY: tid + stride < block_dim slots.
            unsafe { s.store(tid as usize, R::combine(s.load(tid as usize), s.load((tid + stride) as usize))) };
        }
        gpu::sync_threads();
        stride /= 2;
    }
}

/// Lecture variant 3 (Harris #3): sequential addressing.
///
/// ```text
/// s:      x0  x1  x2  x3 | x4  x5  x6  x7
/// step 1: x04 x15 x26 x37                  threads 0..4: s[t] += s[t+4]
/// step 2: x0246 x1357                      threads 0..2: s[t] += s[t+2]
/// step 3: x0-7                             thread 0
/// ```
/// Consecutive lanes read consecutive words: no bank conflicts, and the
/// active threads stay packed in the first warps. Half the threads are
/// idle from the first step, which variant 4 fixes.
///
/// Launch: one element per thread, `ceil(n / B)` blocks, `B` accumulator
/// slots + 16 bytes of shared memory.
///
/// # Safety
/// As [`super::interleaved::reduce_interleaved`].
pub unsafe fn reduce_sequential<R: Reduction, const B: u32>(
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
    tree_down_to::<R>(s, 0);
    let tid = gpu::thread_idx();
    // SAFETY: slot 0 holds the total.
    let total = if tid == 0 { unsafe { s.load(0) } } else { R::identity() };
    // SAFETY: forwarded.
    unsafe { finish::<R, B>(total, s, partials, out, counter, mode) };
}

/// Each thread loads elements `i` and `i + block_dim` and combines them
/// before the tree (identity past `n`).
#[inline(always)]
#[track_caller]
pub(super) unsafe fn load_two<R: Reduction>(a: *const R::In, b: *const R::In, n: u64, s: Shared<R::Acc>) {
    let tid = gpu::thread_idx();
    let dim = gpu::block_dim() as u64;
    let i = gpu::block_idx() as u64 * 2 * dim + tid as u64;
    // SAFETY: indices are checked against n; s has block_dim slots.
    unsafe {
        let mut v = if i < n { R::load(a, b, i) } else { R::identity() };
        if i + dim < n {
            v = R::combine(v, R::load(a, b, i + dim));
        }
        s.store(tid as usize, v);
    }
    gpu::sync_threads();
}

/// Lecture variant 4 (Harris #4): first add during the global load. Each
/// thread loads two elements a block apart and combines them on the way
/// into shared memory, so half as many blocks do the same work and no
/// thread idles in the first step.
///
/// Launch: `ceil(n / 2B)` blocks, `B` slots + 16 bytes of shared memory.
///
/// # Safety
/// As [`super::interleaved::reduce_interleaved`].
pub unsafe fn reduce_first_add<R: Reduction, const B: u32>(
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
    tree_down_to::<R>(s, 0);
    let tid = gpu::thread_idx();
    // SAFETY: slot 0 holds the total.
    let total = if tid == 0 { unsafe { s.load(0) } } else { R::identity() };
    // SAFETY: forwarded.
    unsafe { finish::<R, B>(total, s, partials, out, counter, mode) };
}

/// Lecture variant 5 (Harris #5): unroll the last warp. Once 32 threads or
/// fewer are active, the last six steps need no block barrier: only warp 0
/// works, so those `__syncthreads` and the loop overhead go.
///
/// The lectures rely on the warp running in lockstep with `volatile`
/// shared memory; since Volta that is a data race (see
/// [`super::volatile_tail`]). Here each step reads its operands, waits at a
/// warp barrier (`bar.warp.sync`), writes, and waits again
/// ([`super::warp_tail`]): cheap, and correct on any schedule.
///
/// Launch: as variant 4.
///
/// # Safety
/// As [`super::interleaved::reduce_interleaved`].
pub unsafe fn reduce_unrolled_warp<R: Reduction, const B: u32>(
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
    tree_down_to::<R>(s, 32);
    let tid = gpu::thread_idx();
    if tid < 32 {
        warp_tail::<R>(s, tid as usize, (gpu::block_dim() / 2).min(32));
    }
    // SAFETY: thread 0 wrote slot 0 last, in the tail.
    let total = if tid == 0 { unsafe { s.load(0) } } else { R::identity() };
    // SAFETY: forwarded.
    unsafe { finish::<R, B>(total, s, partials, out, counter, mode) };
}
