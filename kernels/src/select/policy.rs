//! The stream-compaction kernels' tuning policy, as data: block size and
//! items per thread. The kernels and the instantiation list read
//! [`items`]; the host planner (`gpuprim::select`) reads [`DEFAULT_BLOCK`]
//! and [`tile_len`]. What was measured and what is worth trying:
//! `docs/tuning/select.md`.

use core::mem::size_of;

/// Threads per block when none is set. Not yet measured for select: the
/// block size of the scans' tile kernels (`scan::policy::DEFAULT_BLOCK`).
pub const DEFAULT_BLOCK: u32 = 256;

/// Items per thread for tiles cut by elements of `T`: 64 bytes of input per
/// thread (16 four-byte items, 8 eight-byte ones), as the scans' tile
/// kernels (`scan::policy::tile_items`); not yet measured for select. A
/// tile then takes 34 KiB of shared memory at 256 threads for 4-byte
/// items (the staged tile and one 4-byte index per item), 28 KiB for
/// 8-byte ones. At most 32 (one bit per item in a `u32` mask).
pub const fn items<T>() -> usize {
    let s = size_of::<T>();
    if s <= 4 { 16 } else { 8 }
}

/// Elements of one tile at block size `b` for tiles cut by `T`.
pub const fn tile_len<T>(b: u32) -> u64 {
    b as u64 * items::<T>() as u64
}
