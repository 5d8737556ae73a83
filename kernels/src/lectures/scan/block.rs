//! Lecture block scans: Hillis-Steele and Blelloch. (The third, warp
//! shuffles, is the library's block scan, [`crate::block::scan`].)
//!
//! Both combine in input order (`combine(earlier, later)`), so they
//! are correct for any associative operator, commutative or not. Every
//! thread of the block must call a block-scope scan (they contain
//! barriers); the shared memory they are given must not be touched by
//! anyone else until a barrier after the call.

use crate::gpu::{self, Shared};
use crate::ops::{Item, Monoid};

/// Shared-memory elements [`hillis_steele`] needs: two buffers of `B`.
pub const fn hillis_steele_slots(b: u32) -> usize {
    2 * b as usize
}

/// Lecture scan 1, Hillis-Steele: inclusive scan of one value per thread
/// by `log2 B` doubling steps, double-buffered in shared memory.
///
/// ```text
/// in    x0  x1  x2  x3  x4  x5  x6  x7
/// d=1   x0 x01 x12 x23 x34 x45 x56 x67      read buffer A, write B
/// d=2   x0 x01 x02 x03 x14 x25 x36 x47      read B, write A
/// d=4   x0 x01 x02 x03 x04 x05 x06 x07      read A, write B
/// ```
/// Work `O(B log B)` combines (not work-efficient), `log2 B` steps. Each
/// step reads one buffer and writes the other, then waits at a barrier:
/// the barrier orders this step's writes before the next step's reads, and
/// since the next step writes the *other* buffer, this step's reads are
/// finished (everyone passed the barrier) before anyone overwrites them.
/// A single buffer would need a second barrier between each step's read
/// and its write.
///
/// Returns (inclusive, exclusive, block total) of this thread; the
/// exclusive value of thread 0 is the identity.
#[inline(always)]
#[track_caller]
pub fn hillis_steele<T: Item, Op: Monoid<T>, const B: u32>(x: T, buf: Shared<T>) -> (T, T, T) {
    const { assert!(B.is_power_of_two() && B >= 32 && B <= 1024, "block size must be a power of two in 32..=1024") };
    let tid = gpu::thread_idx() as usize;
    let b = B as usize;
    // SAFETY (all shared accesses): indices below 2B, the launch's size.
    unsafe { buf.store(tid, x) };
    gpu::sync_threads();
    let (mut src, mut v, mut offset) = (0usize, x, 1usize);
    while offset < b {
        if tid >= offset {
            v = Op::combine(unsafe { buf.load(src * b + tid - offset) }, v);
        }
        let dst = 1 - src;
        unsafe { buf.store(dst * b + tid, v) };
        gpu::sync_threads();
        src = dst;
        offset *= 2;
    }
    let exclusive = if tid > 0 { unsafe { buf.load(src * b + tid - 1) } } else { Op::identity() };
    let total = unsafe { buf.load(src * b + b - 1) };
    (v, exclusive, total)
}

/// Shared-memory elements [`blelloch`] needs: `2B` plus one pad slot per
/// 32.
pub const fn blelloch_slots(b: u32) -> usize {
    2 * b as usize + 2 * b as usize / 32
}

/// Index `i` of the Blelloch tree with one pad slot per 32 elements
/// (GPU Gems 3, 39.2.3 `CONFLICT_FREE_OFFSET`): the tree's strided
/// accesses `offset*(2t+1) - 1` would otherwise put up to 32 lanes on one
/// 4-byte bank; the pad shifts each run of 32 by one bank.
#[inline(always)]
fn padded(i: usize) -> usize {
    i + (i >> 5)
}

/// Lecture scan 2, Blelloch: work-efficient exclusive scan of `2B` values,
/// two per thread (`a` at index `tid`, `b` at `tid + B`), by an up-sweep
/// (reduce) and a down-sweep in a balanced tree in shared memory.
///
/// ```text
/// up-sweep (reduce)             down-sweep
/// x0  x1   x2  x3                x0  x01  x2   0      root := identity
/// x0  x01  x2  x23               x0  0    x2   x01    left  := parent,
/// x0  x01  x2  x03 (root=total)  0   x0   x01  x012   right := parent . left
/// ```
/// `O(n)` combines (`2(n-1)`), `2 log2 n` steps with a barrier each; the
/// shared array is padded (one slot per 32, as GPU Gems 3's
/// `CONFLICT_FREE_OFFSET`) so the strided tree accesses do
/// not pile onto one bank. The down-sweep keeps operands in order
/// (`right := parent . left_sum`), so the operator need not commute.
///
/// Returns the exclusive prefixes of `a` and `b`, and the block total,
/// which is valid in thread 0 only.
#[inline(always)]
#[track_caller]
pub fn blelloch<T: Item, Op: Monoid<T>, const B: u32>(a: T, b: T, s: Shared<T>) -> (T, T, T) {
    const { assert!(B.is_power_of_two() && B >= 32 && B <= 1024, "block size must be a power of two in 32..=1024") };
    let tid = gpu::thread_idx() as usize;
    let n = 2 * B as usize;
    // SAFETY (all shared accesses): padded indices of 0..2B, inside
    // `blelloch_slots(B)`.
    unsafe {
        s.store(padded(tid), a);
        s.store(padded(tid + B as usize), b);
    }
    // Up-sweep: after level d, s[offset*(2t+2)-1] holds the sum of its
    // subtree of 2*offset leaves.
    let mut offset = 1usize;
    let mut d = n / 2;
    while d > 0 {
        gpu::sync_threads();
        if tid < d {
            let ai = padded(offset * (2 * tid + 1) - 1);
            let bi = padded(offset * (2 * tid + 2) - 1);
            unsafe { s.store(bi, Op::combine(s.load(ai), s.load(bi))) };
        }
        offset *= 2;
        d /= 2;
    }
    // Thread 0 wrote the root in the last up-sweep step, so it may read and
    // clear it without a barrier.
    let mut total = Op::identity();
    if tid == 0 {
        unsafe {
            total = s.load(padded(n - 1));
            s.store(padded(n - 1), Op::identity());
        }
    }
    // Down-sweep.
    let mut d = 1usize;
    while d < n {
        offset /= 2;
        gpu::sync_threads();
        if tid < d {
            let ai = padded(offset * (2 * tid + 1) - 1);
            let bi = padded(offset * (2 * tid + 2) - 1);
            unsafe {
                let left = s.load(ai);
                let parent = s.load(bi);
                s.store(ai, parent);
                s.store(bi, Op::combine(parent, left));
            }
        }
        d *= 2;
    }
    gpu::sync_threads();
    let (ea, eb) = unsafe { (s.load(padded(tid)), s.load(padded(tid + B as usize))) };
    (ea, eb, total)
}
