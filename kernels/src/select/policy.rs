//! The stream-compaction kernels' tuning policy, as data: block size and
//! items per thread. The kernels and the instantiation list read
//! [`items`]; the host planner (`gpuprim::select`) reads [`DEFAULT_BLOCK`]
//! and [`tile_len`]. What was measured and what is worth trying:
//! `docs/tuning/select.md`.

use core::mem::size_of;

/// Threads per block when none is set. Not yet measured for select: the
/// block size of the scans' tile kernels (`scan::policy::DEFAULT_BLOCK`).
pub const DEFAULT_BLOCK: u32 = 256;

/// Items per thread of every select kernel: 128 bytes of input per
/// thread (32 four-byte items, 16 eight-byte ones), warp-striped. The
/// kernels write each column's items out of the staged tile directly, so
/// a tile needs no index list: about 35 KiB of shared memory at 256
/// threads (the staged tile and its padding, a 128-byte ring per warp
/// where items are dropped, the look-back's slots). At 48 registers
/// (ptxas, sm_90) that is 5 blocks and 160 KiB of input resident per
/// multiprocessor, against 120 KiB with an index list at 24 items; the
/// single-pass kernels' time at 2^28 follows those bytes
/// (`docs/tuning/select.md`: `select_if` 0% 449 -> 359 us on the H200).
/// The partitions took 24 (12) items blocked through such a list until
/// 2026-11-29: on the H200 at 2^28 `i32` they are now 1.09x at 0% and
/// 100% selected and for the three-way partition, 1.00x at 50% (0.92x at
/// 2^24); see `docs/tuning/select.md`.
pub const fn items<T>() -> usize {
    let s = size_of::<T>();
    if s <= 4 { 32 } else { 16 }
}

/// Whether a tile's kernel asks L2 for the tile of its block's index
/// while its ticket is in flight ([`crate::block::tile::prefetch_tile`];
/// blocks start in index order, so the ticket is mostly that index or a
/// near one, whose block then finds the lines in L2): for the partitions
/// (`drops` false) and `unique_by_key` (`values`), not for the layouts
/// that drop plain items. H200 against none in the same run, `i32`:
/// partitions 1.04-1.07x at 2^24 and 2^28, the three-way one 1.03-1.07x,
/// `unique_by_key` 0.99-1.05x; `select_if` 0.96-0.98x, `select_flagged`
/// 0.97-1.05x, `unique` 0.97-1.01x. See `docs/tuning/select.md`.
pub const fn prefetch(drops: bool, values: bool) -> bool {
    !drops || values
}

/// Elements of one tile at block size `b` for tiles cut by `T`.
pub const fn tile_len<T>(b: u32) -> u64 {
    b as u64 * items::<T>() as u64
}

/// Nanoseconds every thread of a select, partition or unique block sleeps
/// before the look-back's first status read, in launches of at least 500
/// tiles ([`crate::single_pass::exclusive_prefix`]): meanwhile the
/// youngest predecessors publish, and fewer reads go to L2 for nothing.
/// H200, `i32`, against none in the same call (one run): 1.00-1.075x at
/// all 32 points of the group (2^24 and 2^28), the most at 2^28 for
/// `select_if/0%` (358 -> 333 us) and `select_flagged/0%` (461 -> 433);
/// none slower. 1000 and 250 measured no better (0.96-1.02x and
/// 0.97-1.00x at 2^28). See `docs/tuning/scan.md`.
pub const LOOK_BACK_DELAY_NS: u32 = 500;

/// Nanoseconds a look-back thread sleeps between reads of a predecessor's
/// status that is still INVALID ([`crate::single_pass::TileStatus::wait`]),
/// as CUB's look-back does: fewer reads that find nothing compete at L2
/// with the publishes they wait for. H200, `i32`, 150 against none in the
/// same call, the whole group at 2^24 and 2^28: 21 of 32 points 1.01-1.04x,
/// four 0.99x (the two-way partition at 50%, and at 100% at 2^24;
/// `unique_by_key/run8` at 2^28), the rest within 0.5%; at 2^28
/// `select_if/0%` 333 -> 321 us, `unique/run1000` 421 -> 406,
/// `unique_by_key/run1000` 797 -> 765. 300 measured the same as 150. See
/// `docs/tuning/scan.md`.
pub const LOOK_BACK_POLL_NS: u32 = 150;
