//! The lectures' warp-synchronous tail, kept as a cautionary example.

use crate::gpu::{self, Shared, global};
use crate::ops::{Element, Monoid};

/// Lecture variant 5 *as the lectures wrote it*: the last warp reduces
/// through `volatile` shared memory with no synchronisation, assuming the
/// 32 lanes run in lockstep.
///
/// That assumption no longer holds (Volta and later schedule lanes
/// independently): a lane can read `s[tid + 16]` before lane `tid + 16` has
/// written it, so the result is a data race. `volatile` only stops the
/// compiler caching values in registers; it orders nothing between lanes.
/// The CPU emulator runs lanes in a non-lockstep order and reports the race.
/// This kernel exists for that test; the correct version puts a warp
/// barrier between steps or uses shuffles (see `reduce_shuffle`).
///
/// # Safety
/// As [`super::cascaded::reduce_shuffle`], with `B * size_of::<T>()` bytes of
/// shared memory and `ceil(n / 2B)` blocks.
pub unsafe fn reduce_volatile_tail<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, out: *mut T) {
    const { assert!(B.is_power_of_two() && B >= 64 && B <= 1024) };
    let s = Shared::<T>::dynamic();
    let tid = gpu::thread_idx() as usize;
    let i = gpu::block_idx() as u64 * 2 * B as u64 + tid as u64;
    let mut v = Op::identity();
    // SAFETY (all accesses): indices checked against n and B.
    unsafe {
        if i < n {
            v = global::load(input.add(i as usize));
        }
        if i + (B as u64) < n {
            v = Op::combine(v, global::load(input.add(i as usize + B as usize)));
        }
        s.store(tid, v);
        gpu::sync_threads();
        let mut stride = B as usize / 2;
        while stride > 32 {
            if tid < stride {
                s.store(tid, Op::combine(s.load(tid), s.load(tid + stride)));
            }
            gpu::sync_threads();
            stride /= 2;
        }
        if tid < 32 {
            // The race: no barrier between these steps.
            let mut off = 32;
            while off > 0 {
                s.store_volatile(tid, Op::combine(s.load_volatile(tid), s.load_volatile(tid + off)));
                off /= 2;
            }
        }
        if tid == 0 {
            global::store(out.add(gpu::block_idx() as usize), s.load(0));
        }
    }
}
