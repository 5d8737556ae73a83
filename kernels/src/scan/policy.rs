//! The scans' tuning policy: block sizes, items per thread and the block
//! size by input length, as data. The kernels and the instantiation list
//! (`scan_entries!`) read the items per thread; the host planner
//! (`gpuprim::scan`) reads the block sizes. What was measured and tried:
//! `docs/tuning/scan.md`.

use core::mem::size_of;

/// Threads per block when none is set and the table below has no entry.
pub const DEFAULT_BLOCK: u32 = 256;

/// Block size of the three-phase scan's phase 3 (adding each tile's prefix).
pub const ADD_BLOCK: u32 = 256;

/// Items per thread of the tile kernels for element type `T`: 16 for
/// 4-byte types, 8 for 8-byte types, 4 for 16-byte ones — 64 bytes of
/// input per thread either way, which keeps enough loads in flight to
/// saturate HBM without spilling registers.
pub const fn tile_items<T>() -> usize {
    let s = size_of::<T>();
    if s <= 4 {
        16
    } else if s <= 8 {
        8
    } else {
        4
    }
}

/// Items per thread of the look-back scan, whose tiles stay in shared
/// memory: 128 bytes per thread (32 four-byte items), or 64 at 512 threads
/// and more so that a tile fits in 48 KiB.
pub const fn lookback_items<T>(b: u32) -> usize {
    let bytes = if b >= 512 { 64 } else { 128 };
    bytes / size_of::<T>()
}

/// Elements of one tile at block size `b`.
pub const fn tile_len<T>(b: u32) -> u64 {
    b as u64 * tile_items::<T>() as u64
}

/// The look-back's block size by input length when none is set, as
/// `(largest n, block)` in order, for 4-byte elements.
///
/// H200, 2026-11-23: per size the block with the shortest median time where
/// it beat 256 threads by more than 2% (i32 and f32 together). Up to 2^19
/// a one- or few-tile input finishes sooner in small blocks: less of the
/// tile is padding, and more multiprocessors share the loads.
pub const LOOKBACK_BLOCKS_4: &[(u64, u32)] = &[
    (1 << 10, 32),
    (1 << 11, 64),
    (1 << 12, 128),
    (1 << 15, 32),
    (1 << 17, 64),
    (1 << 19, 128),
    (1 << 22, 256),
    (1 << 24, 128),
    (u64::MAX, DEFAULT_BLOCK),
];

/// The same for 8-byte elements (H200, 2026-11-23, f64).
pub const LOOKBACK_BLOCKS_8: &[(u64, u32)] =
    &[(1 << 10, 64), (1 << 11, 128), (1 << 12, 256), (1 << 16, 64), (1 << 17, 128), (u64::MAX, DEFAULT_BLOCK)];

/// Any other algorithm or element size: [`DEFAULT_BLOCK`].
pub const DEFAULT_BLOCKS: &[(u64, u32)] = &[(u64::MAX, DEFAULT_BLOCK)];

/// The look-back's table for elements of `bytes` bytes.
pub const fn lookback_blocks(bytes: usize) -> &'static [(u64, u32)] {
    match bytes {
        4 => LOOKBACK_BLOCKS_4,
        8 => LOOKBACK_BLOCKS_8,
        _ => DEFAULT_BLOCKS,
    }
}

/// Nanoseconds the look-back scan's blocks sleep before their first status
/// read ([`crate::single_pass::exclusive_prefix`]): none. 500 measured
/// 0.996-1.007x on an H200 (`i32`, 2^24 and 2^28, one run), within noise,
/// so the scan keeps its code; select gained with it
/// ([`crate::select::policy::LOOK_BACK_DELAY_NS`]).
pub const LOOK_BACK_DELAY_NS: u32 = 0;
