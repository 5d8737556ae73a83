//! How a block hands its total on (partials, atomics, last block), and the
//! warp and block layers over a reduction's accumulators.

use super::reduction::Reduction;
use crate::gpu::{self, Shared, atomic, global};
use crate::ops::Monoid;
use core::marker::PhantomData;

/// The monoid of a [`Reduction`]'s accumulators, for the warp and block
/// layers ([`crate::warp`], [`crate::block`]), which are written over
/// [`Monoid`]s.
#[derive(Clone, Copy)]
pub struct Accumulators<R>(PhantomData<R>);

impl<R: Reduction> Monoid<R::Acc> for Accumulators<R> {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> R::Acc {
        R::identity()
    }
    #[inline(always)]
    fn combine(a: R::Acc, b: R::Acc) -> R::Acc {
        R::combine(a, b)
    }
}

/// [`crate::warp::reduce`] over a reduction's accumulators: the total in
/// lane 0.
#[inline(always)]
#[track_caller]
pub fn warp_reduce<R: Reduction>(v: R::Acc) -> R::Acc {
    crate::warp::reduce::<R::Acc, Accumulators<R>>(v)
}

/// [`crate::block::reduce::reduce`] over a reduction's accumulators: the
/// total in thread 0; `slots` as there.
#[inline(always)]
pub fn block_reduce<R: Reduction, const B: u32>(v: R::Acc, slots: Shared<R::Acc>) -> R::Acc {
    crate::block::reduce::reduce::<R::Acc, Accumulators<R>, B>(v, slots)
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
