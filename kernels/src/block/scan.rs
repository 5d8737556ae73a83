//! Block-wide exclusive scan over any associative operator.

use crate::gpu::{self, Shared, WARP_SIZE, warp};
use crate::ops::{Item, Monoid};

/// Shared-memory elements [`exclusive_scan`] needs (one per warp).
pub const WARP_SLOTS: usize = 32;

/// Exclusive scan of one value per thread across a block of `B` threads
/// with warp shuffles (lecture scan 3). Returns this thread's exclusive
/// prefix (the identity in thread 0) and the block's total (in every
/// thread).
///
/// ```text
/// warp 0: [x0 .. x31] --shfl scan-->  inclusive; lane 31 -> slot[0]
/// warp 1: [x32.. x63] --shfl scan-->  inclusive; lane 31 -> slot[1]
///  ...                 barrier
/// every warp: shfl scan of slot[0..B/32] -> its warp's prefix, the total
/// thread: prefix = warp prefix . (inclusive from the lane before it)
/// ```
/// Work `O(B log 32)`, one barrier, `B/32` shared slots
/// ([`WARP_SLOTS`] at most). Combines in input order. Every thread of the
/// block must call it; callers that call it again must put a barrier
/// between the calls (the slots are reused).
#[inline(always)]
#[track_caller]
pub fn exclusive_scan<T: Item, Op: Monoid<T>, const B: u32>(v: T, slots: Shared<T>) -> (T, T) {
    const { assert!(B.is_power_of_two() && B >= 32 && B <= 1024, "block size must be a power of two in 32..=1024") };
    let (lane, w) = (gpu::lane(), gpu::warp_idx());
    let inclusive = crate::warp::inclusive_scan::<T, Op>(v);
    // The lane before's inclusive value is this lane's exclusive one.
    let before = warp::shfl_up(inclusive, 1);
    let in_warp = if lane == 0 { Op::identity() } else { before };
    let warps = B / WARP_SIZE;
    if warps == 1 {
        return (in_warp, warp::shfl_idx(inclusive, WARP_SIZE - 1));
    }
    if lane == WARP_SIZE - 1 {
        // SAFETY: w < B/32 <= WARP_SLOTS slots, which the launch provides.
        unsafe { slots.store(w as usize, inclusive) };
    }
    gpu::sync_threads();
    // Every warp scans the warp totals itself (one load and five shuffles
    // beat a second barrier).
    // SAFETY: lane < warps is inside the slots.
    let total_of_lane = if lane < warps { unsafe { slots.load(lane as usize) } } else { Op::identity() };
    let totals = crate::warp::inclusive_scan::<T, Op>(total_of_lane);
    let prior = warp::shfl_idx(totals, if w == 0 { 0 } else { w - 1 });
    let block_total = warp::shfl_idx(totals, warps - 1);
    let warp_prefix = if w == 0 { Op::identity() } else { prior };
    (Op::combine(warp_prefix, in_warp), block_total)
}
