//! Warp scope: collectives of the 32 lanes of a warp over any
//! [`Monoid`], built on the shuffles of [`crate::gpu::warp`].
//!
//! No shared memory and no barrier: `shfl.sync` moves the data and
//! synchronises the named lanes, so these are correct without lockstep
//! (sm_70+). All 32 lanes must call each of them.
//!
//! | function | order | result |
//! |---|---|---|
//! | [`inclusive_scan`] | input order (any associative operator) | every lane |
//! | [`reduce`] | tree order (commutative operators) | lane 0 |
//! | [`reduce_all`] | butterfly (commutative operators) | every lane |
//! | [`max_i32`] | — | every lane |

use crate::gpu::{self, WARP_SIZE, warp};
use crate::ops::{Item, Monoid};

/// Inclusive scan of one value per lane across the warp (Kogge-Stone with
/// `shfl.sync.up`): after step `k` lane `i` holds `x[i-2^k+1 ..= i]`.
///
/// ```text
/// lane    0   1   2   3   4   5   6   7 ...
/// +1     x0 x01 x12 x23 x34 x45 x56 x67
/// +2     x0 x01 x02 x03 x14 x25 x36 x47
/// +4     x0 x01 x02 x03 x04 x05 x06 x07     (5 steps for 32 lanes)
/// ```
/// 5 shuffles and at most 5 combines per lane. Combines in input order
/// (`combine(earlier, later)`), so the operator need not commute.
#[inline(always)]
#[track_caller]
pub fn inclusive_scan<T: Item, Op: Monoid<T>>(mut v: T) -> T {
    let lane = gpu::lane();
    let mut offset = 1;
    while offset < WARP_SIZE {
        let up = warp::shfl_up(v, offset);
        if lane >= offset {
            v = Op::combine(up, v);
        }
        offset *= 2;
    }
    v
}

/// Reduce one value per lane across the warp with `shfl.sync.down`.
///
/// ```text
/// lanes  0 1 2 3 ... 16 17 ... 31
/// step 1: lane i += lane i+16
/// step 2: lane i += lane i+8      (5 steps, no shared memory)
/// ```
/// The total is valid in lane 0; other lanes hold partial results. The
/// combine tree pairs lane `i` with lane `i + 16` first, so the operator
/// must commute.
#[inline(always)]
#[track_caller]
pub fn reduce<T: Item, Op: Monoid<T>>(mut v: T) -> T {
    let mut offset = WARP_SIZE / 2;
    while offset > 0 {
        v = Op::combine(v, warp::shfl_down(v, offset));
        offset /= 2;
    }
    v
}

/// Reduce `v` across the warp keeping the lanes' order, for operators
/// that need not commute: lane `i` first combines lane `i + 1`'s value
/// into its own, then `i + 2`'s pair, `i + 4`'s four, so lane 0 ends with
/// `v_0 . v_1 . ... . v_31` in that order. Five `shfl.down` steps and
/// combines, as [`reduce`]. The total is valid in lane 0 only (lanes near
/// the top combine their own value again where the shuffle runs past lane
/// 31).
///
/// ```text
/// step 1: lane i = v_i . v_i+1
/// step 2: lane i = (v_i . v_i+1) . (v_i+2 . v_i+3)     ...
/// ```
#[inline(always)]
#[track_caller]
pub fn reduce_in_order<T: Item, Op: Monoid<T>>(mut v: T) -> T {
    let mut offset = 1;
    while offset < WARP_SIZE {
        v = Op::combine(v, warp::shfl_down(v, offset));
        offset *= 2;
    }
    v
}

/// The combine of `v` over the warp in butterfly order (five `shfl.xor`
/// steps), in every lane: for commutative operators only.
#[inline(always)]
#[track_caller]
pub fn reduce_all<T: Item, Op: Monoid<T>>(mut v: T) -> T {
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        v = Op::combine(v, warp::shfl_xor(v, mask));
        mask /= 2;
    }
    v
}

/// The maximum of `v` over the warp (five `shfl.xor` steps), in every
/// lane.
#[inline(always)]
#[track_caller]
pub fn max_i32(mut v: i32) -> i32 {
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        let other = warp::shfl_xor(v, mask);
        v = if other > v { other } else { v };
        mask /= 2;
    }
    v
}
