//! Warp-shuffle reduction with a grid-stride loop.

use super::block::block_reduce;
use crate::gpu::{self, Shared, global};
use crate::ops::{Element, Monoid};

/// Lecture variant 8, warp shuffles: each thread folds a grid-stride slice
/// of the input into a register (as variant 7 does), then the block reduces
/// with `shfl.sync` inside each warp and a single shared slot per warp.
///
/// Shared memory traffic drops from `B` slots and `log2 B` barriers to
/// `B/32` slots and one barrier, and the warp tail needs no `volatile`
/// tricks: `shfl.sync` both moves the data and synchronises the lanes.
///
/// Launch: block of `B` threads, any grid, `B/32 * size_of::<T>()` bytes of
/// shared memory; writes one partial per block to `out[block_idx]`.
///
/// # Safety
/// `input` holds `n` elements and `out` at least `grid_dim` elements, both
/// device memory; the block has `B` threads.
pub unsafe fn reduce_shuffle<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, out: *mut T) {
    let stride = B as u64 * gpu::grid_dim() as u64;
    let mut i = gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64;
    let mut acc = Op::identity();
    while i < n {
        // SAFETY: i < n.
        acc = Op::combine(acc, unsafe { global::load(input.add(i as usize)) });
        i += stride;
    }
    let total = block_reduce::<T, Op, B>(acc, Shared::dynamic());
    if gpu::thread_idx() == 0 {
        // SAFETY: one slot per block.
        unsafe { global::store(out.add(gpu::block_idx() as usize), total) };
    }
}
