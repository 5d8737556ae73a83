//! Warp- and block-scope reductions, and how a block hands its total on.

use super::reduction::Reduction;
use crate::gpu::{self, FULL_MASK, Shared, WARP_SIZE, atomic, global, warp};

/// Reduce one value per lane across the warp with shuffles.
///
/// ```text
/// lanes  0 1 2 3 ... 16 17 ... 31
/// step 1: lane i += lane i+16
/// step 2: lane i += lane i+8      (5 steps, no shared memory)
/// ```
/// The total is valid in lane 0; other lanes hold partial results.
#[inline(always)]
#[track_caller]
pub fn warp_reduce<R: Reduction>(mut v: R::Acc) -> R::Acc {
    let mut offset = WARP_SIZE / 2;
    while offset > 0 {
        v = R::combine(v, warp::shfl_down(v, offset));
        offset /= 2;
    }
    v
}

/// A shared-memory slot for one accumulator, of at least 4 bytes: each
/// warp's 1- or 2-byte total then has a 32-bit word of its own instead of
/// sharing one with its neighbour's. Distinct bytes of a word are distinct
/// locations to the hardware, but the emulator tracks races per word (a
/// conservative model), and a padded slot costs nothing. Accumulators of 4
/// bytes or more keep their own layout.
#[repr(C, align(4))]
#[derive(Clone, Copy)]
struct Slot<A>(A);

/// Reduce one value per thread across a block of `B` threads: shuffles
/// within each warp, one shared slot per warp, then the first warp reduces
/// the slots. The total is valid in thread 0. Needs `B / 32` accumulator
/// slots of at least 4 bytes each (which `B` accumulators always cover).
///
/// Every thread of the block must call it (it contains a barrier).
#[inline(always)]
pub fn block_reduce<R: Reduction, const B: u32>(v: R::Acc, slots: Shared<R::Acc>) -> R::Acc {
    const { assert!(B.is_power_of_two() && B >= 32 && B <= 1024, "block size must be a power of two in 32..=1024") };
    let v = warp_reduce::<R>(v);
    if B == WARP_SIZE {
        return v;
    }
    let warps = B / WARP_SIZE;
    let (lane, w) = (gpu::lane(), gpu::warp_idx());
    let slots = slots.after::<Slot<R::Acc>>(0);
    if lane == 0 {
        // SAFETY: w < B / 32 slots, which the launch provides.
        unsafe { slots.store(w as usize, Slot(v)) };
    }
    gpu::sync_threads();
    let mut total = R::identity();
    if w == 0 {
        // SAFETY: lane < warps is inside the slots.
        let mine = if lane < warps { unsafe { slots.load(lane as usize) }.0 } else { R::identity() };
        total = warp_reduce::<R>(mine);
    }
    total
}

/// Reduce the last 64 slots of a shared-memory tree with one warp, the
/// lectures' "unrolled last warp", made correct without lockstep: each
/// step reads both operands, waits at a warp barrier, then writes, and
/// waits again before the next step reads. The total lands in `s[0]`.
///
/// Call from the 32 threads of warp 0 only, with `s[0..2 * start]` filled;
/// `start` is 32, or 16 for a block of 32 threads.
#[inline(always)]
pub fn warp_tail<R: Reduction>(s: Shared<R::Acc>, tid: usize, start: u32) {
    let mut off = start as usize;
    while off > 0 {
        // SAFETY: lanes past the live range read the identity-free upper
        // half only while `tid + off < 2 * start` slots; others idle.
        unsafe {
            let v =
                if tid + off < 2 * start as usize { R::combine(s.load(tid), s.load(tid + off)) } else { R::identity() };
            warp::sync(FULL_MASK);
            s.store(tid, v);
            warp::sync(FULL_MASK);
        }
        off /= 2;
    }
}

/// How a block hands on its total (kernel parameter `mode`).
pub mod mode {
    /// Write the block's total to `partials[block]`; the host finishes.
    pub const PARTIALS: u32 = 0;
    /// Combine the block's total into `out[0]` atomically (compare-and-swap
    /// on its bits); the host sets `out[0]` to the identity first. The
    /// combine order, and so a float result, varies run to run.
    pub const ATOMIC: u32 = 1;
    /// Write `partials[block]`, then the last block to finish (counted with
    /// an atomic ticket) reduces all partials in a fixed order and writes
    /// `out[0]`: one launch, deterministic.
    pub const LAST_BLOCK: u32 = 2;
}

/// Shared memory (bytes) that [`finish`] needs besides the slots the
/// kernel itself uses: the "last block" flag, after `B` accumulator slots.
pub const fn finish_smem<Acc>(b: u32) -> usize {
    b as usize * core::mem::size_of::<Acc>() + 16
}

/// Hand on a block's total (valid in thread 0) as `mode` says. All threads
/// of the block must call it. `s` must have `B` accumulator slots followed
/// by 16 bytes (see [`finish_smem`]).
///
/// # Safety
/// `partials` holds `grid_dim` accumulators, `out` one, `counter` one
/// `u32` that is zero before the launch (the last block resets it).
#[inline(always)]
pub unsafe fn finish<R: Reduction, const B: u32>(
    total: R::Acc,
    s: Shared<R::Acc>,
    partials: *mut R::Acc,
    out: *mut R::Acc,
    counter: *mut u32,
    mode: u32,
) {
    let tid = gpu::thread_idx();
    let block = gpu::block_idx() as usize;
    match mode {
        mode::ATOMIC => {
            if tid == 0 {
                // SAFETY: out holds one accumulator (caller).
                unsafe { R::atomic_combine(out, total) };
            }
        }
        mode::LAST_BLOCK => {
            if gpu::grid_dim() == 1 {
                // A lone block is its own last block: no ticket, no partials.
                if tid == 0 {
                    // SAFETY: out holds one accumulator (caller).
                    unsafe { global::store(out, total) };
                }
                return;
            }
            let flag = s.after::<u32>(B as usize);
            if tid == 0 {
                // SAFETY: one partial per block; counter valid (caller).
                unsafe {
                    global::store(partials.add(block), total);
                    // One acquire-release RMW: release publishes our partial
                    // before our ticket; acquire makes every partial released
                    // before the tickets we follow visible to this thread,
                    // and the barrier below passes that on to the block.
                    let ticket = atomic::add_acq_rel_u32(counter, 1);
                    flag.store(0, (ticket == gpu::grid_dim() - 1) as u32);
                }
            }
            gpu::sync_threads();
            // SAFETY: written by thread 0 before the barrier.
            let last = unsafe { flag.load(0) } == 1;
            if last {
                let grid = gpu::grid_dim() as usize;
                let mut acc = R::identity();
                let mut i = tid as usize;
                while i < grid {
                    // Volatile: from L2, where the other blocks' partials
                    // are, never from a stale L1 line.
                    // SAFETY: i < grid partials.
                    acc = R::combine(acc, unsafe { global::load_volatile(partials.add(i)) });
                    i += B as usize;
                }
                let t = block_reduce::<R, B>(acc, s);
                if tid == 0 {
                    // SAFETY: out and counter valid (caller). Resetting the
                    // counter lets the next launch reuse it.
                    unsafe {
                        global::store(out, t);
                        global::store(counter, 0);
                    }
                }
            }
        }
        _ => {
            if tid == 0 {
                // SAFETY: one partial per block (caller).
                unsafe { global::store(partials.add(block), total) };
            }
        }
    }
}

/// `*p = combine(*p, v)` atomically, by compare-and-swap on the bits.
///
/// # Safety
/// `p` is a live, aligned accumulator; `R::ATOMIC_BYTES` is 4 or 8.
#[inline(always)]
pub unsafe fn cas_combine<R: Reduction>(p: *mut R::Acc, v: R::Acc) {
    match R::ATOMIC_BYTES {
        4 => {
            let p = p as *mut u32;
            // SAFETY: 4-byte accumulator (checked above), caller's pointer.
            let mut old = unsafe { global::load(p) };
            loop {
                // SAFETY: Acc is 4 bytes of plain data.
                let cur: R::Acc = unsafe { core::mem::transmute_copy(&old) };
                let new: u32 = unsafe { core::mem::transmute_copy(&R::combine(cur, v)) };
                // SAFETY: as above.
                let seen = unsafe { atomic::cas_u32(p, old, new) };
                if seen == old {
                    break;
                }
                old = seen;
            }
        }
        8 => {
            let p = p as *mut u64;
            // SAFETY: 8-byte accumulator, caller's pointer.
            let mut old = unsafe { global::load(p) };
            loop {
                // SAFETY: Acc is 8 bytes of plain data.
                let cur: R::Acc = unsafe { core::mem::transmute_copy(&old) };
                let new: u64 = unsafe { core::mem::transmute_copy(&R::combine(cur, v)) };
                // SAFETY: as above.
                let seen = unsafe { atomic::cas_u64(p, old, new) };
                if seen == old {
                    break;
                }
                old = seen;
            }
        }
        _ => {}
    }
}
