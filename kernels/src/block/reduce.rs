//! Block-wide reduction: over a commutative operator, or in thread order.

use crate::gpu::{self, Shared, WARP_SIZE};
use crate::ops::{Item, Monoid};

/// A shared-memory slot for one value, of at least 4 bytes: each warp's 1-
/// or 2-byte total then has a 32-bit word of its own instead of sharing
/// one with its neighbour's. Distinct bytes of a word are distinct
/// locations to the hardware, but the emulator tracks races per word (a
/// conservative model), and a padded slot costs nothing. Values of 4 bytes
/// or more keep their own layout.
#[repr(C, align(4))]
#[derive(Clone, Copy)]
struct Slot<A>(A);

/// Reduce one value per thread across a block of `B` threads: shuffles
/// within each warp ([`crate::warp::reduce`]), one shared slot per warp,
/// then the first warp reduces the slots. The total is valid in thread 0.
/// Needs `B / 32` slots of `T` of at least 4 bytes each (which `B` values
/// of `T` always cover). The operator must commute.
///
/// Every thread of the block must call it (it contains a barrier).
#[inline(always)]
pub fn reduce<T: Item, Op: Monoid<T>, const B: u32>(v: T, slots: Shared<T>) -> T {
    reduce_with::<T, Op, B, false>(v, slots)
}

/// [`reduce`] keeping the threads' order ([`crate::warp::reduce_in_order`]
/// in each warp, then over the warps' totals in warp order), for
/// operators that need not commute: thread 0 gets `v_0 . v_1 . ... .
/// v_B-1`. The same shuffles, slots and barrier.
///
/// Every thread of the block must call it (it contains a barrier).
#[inline(always)]
pub fn reduce_in_order<T: Item, Op: Monoid<T>, const B: u32>(v: T, slots: Shared<T>) -> T {
    reduce_with::<T, Op, B, true>(v, slots)
}

#[inline(always)]
fn warp_reduce<T: Item, Op: Monoid<T>, const ORDERED: bool>(v: T) -> T {
    if ORDERED { crate::warp::reduce_in_order::<T, Op>(v) } else { crate::warp::reduce::<T, Op>(v) }
}

#[inline(always)]
fn reduce_with<T: Item, Op: Monoid<T>, const B: u32, const ORDERED: bool>(v: T, slots: Shared<T>) -> T {
    const { assert!(B.is_power_of_two() && B >= 32 && B <= 1024, "block size must be a power of two in 32..=1024") };
    let v = warp_reduce::<T, Op, ORDERED>(v);
    if B == WARP_SIZE {
        return v;
    }
    let warps = B / WARP_SIZE;
    let (lane, w) = (gpu::lane(), gpu::warp_idx());
    let slots = slots.after::<Slot<T>>(0);
    if lane == 0 {
        // SAFETY: w < B / 32 slots, which the launch provides.
        unsafe { slots.store(w as usize, Slot(v)) };
    }
    gpu::sync_threads();
    let mut total = Op::identity();
    if w == 0 {
        // SAFETY: lane < warps is inside the slots.
        let mine = if lane < warps { unsafe { slots.load(lane as usize) }.0 } else { Op::identity() };
        total = warp_reduce::<T, Op, ORDERED>(mine);
    }
    total
}
