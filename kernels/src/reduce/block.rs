//! Warp- and block-scope reductions used by the device-wide kernels.

use crate::gpu::{self, Shared, WARP_SIZE, warp};
use crate::ops::{Element, Monoid};

/// Reduce one value per lane across the warp with shuffles.
///
/// ```text
/// lanes  0 1 2 3 ... 16 17 ... 31
/// step 1: lane i += lane i+16
/// step 2: lane i += lane i+8      (5 steps, 31 combines, no shared memory)
/// ```
/// The total is valid in lane 0; other lanes hold partial sums.
#[inline(always)]
pub fn warp_reduce<T: Element, Op: Monoid<T>>(mut v: T) -> T {
    let mut offset = WARP_SIZE / 2;
    while offset > 0 {
        v = Op::combine(v, warp::shfl_down(v, offset));
        offset /= 2;
    }
    v
}

/// Bytes of shared memory [`block_reduce`] needs for block size `B`.
pub const fn block_reduce_smem<T>(b: u32) -> usize {
    (b / WARP_SIZE) as usize * core::mem::size_of::<T>()
}

/// Reduce one value per thread across a block of `B` threads: shuffles
/// within each warp, one shared slot per warp, then the first warp reduces
/// the slots. The total is valid in thread 0.
///
/// Every thread of the block must call it (it contains a barrier).
#[inline(always)]
pub fn block_reduce<T: Element, Op: Monoid<T>, const B: u32>(v: T, slots: Shared<T>) -> T {
    const { assert!(B.is_power_of_two() && B >= 32 && B <= 1024, "block size must be a power of two in 32..=1024") };
    let v = warp_reduce::<T, Op>(v);
    if B == WARP_SIZE {
        return v;
    }
    let warps = B / WARP_SIZE;
    let (lane, w) = (gpu::lane(), gpu::warp_idx());
    if lane == 0 {
        // SAFETY: w < B / 32 slots, which the launch provides.
        unsafe { slots.store(w as usize, v) };
    }
    gpu::sync_threads();
    let mut total = Op::identity();
    if w == 0 {
        // SAFETY: lane < warps is inside the slots.
        let mine = if lane < warps { unsafe { slots.load(lane as usize) } } else { Op::identity() };
        total = warp_reduce::<T, Op>(mine);
    }
    total
}
