//! Tuning policy of the segmented reductions: read by the kernels, the
//! `entries!` list and the host plan.

use crate::block::tile::tile_slots;
use crate::single_pass::look_back_smem_bytes;
use core::mem::size_of;

/// Threads per block of the flat kernel ([`super::flat`]).
// Not yet measured on a GPU: the look-back scan's default (H200, 2^28 i32 scan: 92.5% of copy at 256).
pub const BLOCK: u32 = 256;

/// Threads per block of the ranges kernel ([`super::ranges`]), one warp
/// per segment.
// Not yet measured on a GPU: 8 warps per block, as the reductions' default.
pub const RANGES_BLOCK: u32 = 256;

/// Blocks of the ranges kernel per multiprocessor (grid-stride over the
/// segments beyond that).
// Not yet measured on a GPU: fills a multiprocessor's 2048 threads at 256.
pub const RANGES_BLOCKS_PER_SM: u32 = 8;

/// Input elements per thread of the flat kernel: 16 (64 bytes of `i32`,
/// 128 of `f64`).
// ptxas (sm_90): at 32 four-byte items (the look-back scan's 128 bytes) the staged loads went to a 128-byte stack frame; at 16, none.
pub const fn items<T>() -> usize {
    16
}

/// Elements of one tile of the flat kernel at block size `b`.
pub const fn tile_len<T>(b: u32) -> u64 {
    b as u64 * items::<T>() as u64
}

const fn round16(b: usize) -> usize {
    b.div_ceil(16) * 16
}

/// Byte offsets of the flat kernel's shared memory for input `T` and
/// accumulator `A` at block size `b`: the staged tile (at 0), the block
/// scan's 32 warp values, its 32 warp flags, the look-back's storage, the
/// tile's two boundary indices (`u64`), the window of the tile's
/// boundaries (`u16` tile positions, one per position); every part
/// 16-byte aligned.
pub const fn smem_layout<T, A>(b: u32) -> [usize; 5] {
    let values = round16(tile_slots::<T>(b, items::<T>()) * size_of::<T>());
    let flags = values + round16(32 * size_of::<A>());
    let look = flags + 32 * 4;
    let bounds = round16(look + look_back_smem_bytes::<A>());
    let window = bounds + 16;
    [values, flags, look, bounds, window]
}

/// Dynamic shared memory (bytes) of the flat kernel.
pub const fn smem_bytes<T, A>(b: u32) -> usize {
    smem_layout::<T, A>(b)[4] + round16(tile_len::<T>(b) as usize * 2)
}
