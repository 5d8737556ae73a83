//! The stream-compaction kernels' tuning policy, as data: block size and
//! items per thread. The kernels and the instantiation list read
//! [`items`]; the host planner (`gpuprim::select`) reads [`DEFAULT_BLOCK`]
//! and [`tile_len`]. What was measured and what is worth trying:
//! `docs/tuning/select.md`.

use core::mem::size_of;

/// Threads per block when none is set. Not yet measured for select: the
/// block size of the scans' tile kernels (`scan::policy::DEFAULT_BLOCK`).
pub const DEFAULT_BLOCK: u32 = 256;

/// Items per thread for tiles cut by elements of `T`: 96 bytes of input
/// per thread (24 four-byte items, 12 eight-byte ones). A tile then takes
/// 38 KiB of shared memory at 256 threads (the staged tile, one 2-byte
/// index per item, the look-back's slots): under the 48 KiB a launch gets
/// without opting in, 5 blocks per multiprocessor. The first H200
/// measurement, at 64 bytes per thread (4-byte indices), read 2^28 `i32`
/// at 1.85 TB/s with nothing selected: a tile's fixed costs (ticket,
/// look-back, barriers) over too few bytes in flight
/// (`docs/tuning/select.md`). At most 32 (one bit per item in a `u32`
/// mask).
pub const fn items<T>() -> usize {
    let s = size_of::<T>();
    if s <= 4 { 24 } else { 12 }
}

/// Elements of one tile at block size `b` for tiles cut by `T`.
pub const fn tile_len<T>(b: u32) -> u64 {
    b as u64 * items::<T>() as u64
}
