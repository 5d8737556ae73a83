//! Lecture variants 7 and 8: many elements per thread, then a shared
//! tree or warp shuffles. (Variant 9, the default, is
//! [`crate::reduce::vectorized`].)

use super::unrolled::unrolled_tree;
use crate::gpu::{self, Shared};
use crate::reduce::finish::{block_reduce, finish};
use crate::reduce::reduction::Reduction;
use crate::reduce::vectorized::grid_stride;

/// Lecture variant 7 (Harris #7): algorithm cascading. Each thread first
/// folds many elements sequentially (a grid-stride loop; the grid is sized
/// to the GPU, a few blocks per multiprocessor), then the block runs
/// variant 6's unrolled tree once. Sequential work per thread is cheap;
/// the tree's barriers are paid once per block, not once per `2B` elements.
///
/// Launch: any grid (the host uses a few blocks per multiprocessor), `B`
/// slots + 16 bytes of shared memory.
///
/// # Safety
/// As [`super::interleaved::reduce_interleaved`].
pub unsafe fn reduce_cascaded<R: Reduction, const B: u32>(
    a: *const R::In,
    b: *const R::In,
    n: u64,
    partials: *mut R::Acc,
    out: *mut R::Acc,
    counter: *mut u32,
    mode: u32,
) {
    let s = Shared::<R::Acc>::dynamic();
    let tid = gpu::thread_idx();
    // SAFETY: forwarded; tid < B slots.
    unsafe {
        let acc = grid_stride::<R, B>(a, b, n);
        s.store(tid as usize, acc);
    }
    gpu::sync_threads();
    unrolled_tree::<R, B>(s);
    // SAFETY: thread 0 wrote slot 0 last.
    let total = if tid == 0 { unsafe { s.load(0) } } else { R::identity() };
    // SAFETY: forwarded.
    unsafe { finish::<R, B>(total, s, partials, out, counter, mode) };
}

/// Lecture variant 8, warp shuffles: as variant 7, but the block reduces
/// with `shfl.sync` inside each warp and one shared slot per warp.
///
/// Shared-memory traffic drops from `B` slots and `log2 B` barriers to
/// `B/32` slots and one barrier, and the warp step needs no `volatile`
/// tricks: `shfl.sync` moves the data and synchronises the lanes.
///
/// Launch: as variant 7.
///
/// # Safety
/// As [`super::interleaved::reduce_interleaved`].
pub unsafe fn reduce_shuffle<R: Reduction, const B: u32>(
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
    let acc = unsafe { grid_stride::<R, B>(a, b, n) };
    let total = block_reduce::<R, B>(acc, s);
    // SAFETY: forwarded.
    unsafe { finish::<R, B>(total, s, partials, out, counter, mode) };
}
