//! Tuning of the by-key kernels (reduce-by-key, scan-by-key, run-length
//! encode, segmented scan): one place, read by the kernels, the `entries!`
//! list and the host plan.

use core::mem::size_of;

/// Threads per block. The look-back scan's default
/// (`docs/tuning/scan.md`), where 256 threads won at 2^20 and up.
pub const BLOCK: u32 = 256;

/// Items per thread for a tile whose two shared regions take `a` and `b`
/// bytes per item (the larger of what each stages and what it later
/// holds as outputs): 16 items up to 8 bytes an item, 12 up to 12 bytes,
/// else 8. Each is a multiple of 4 (full tiles load with 16-byte vectors)
/// and keeps a tile of [`BLOCK`] threads, with its padding, under 48 KiB
/// of shared memory, so it launches without opting in (the kernels assert
/// the larger bound every by-key tile keeps, [`super::MAX_SMEM`]).
///
/// 8 items for every type measured 0.36-0.76x CUB at 2^28 (2026-11-23):
/// the fixed costs of a tile (the block scan, the look-back over 16-byte
/// carries) were paid per 2048 items. See `docs/tuning/by_key.md`.
pub const fn items_for(a: usize, b: usize) -> usize {
    let per = a + b;
    if per <= 8 {
        16
    } else if per <= 12 {
        12
    } else {
        8
    }
}

pub(crate) const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

/// The fewest items per thread of any by-key kernel (16 bytes an item):
/// the host sizes temporary storage "for any operation" with it.
pub const MIN_ITEMS: usize = 8;

/// Items per thread of `scan_by_key` (keys `K`, values `V`; `reduce_by_key`
/// has [`reduce_items`]): [`items_for`], but 14 for 8-byte keys with
/// 4-byte values (12 for 4-byte keys with 8-byte values: at 14, 68-72
/// registers for `scan_by_key` and the segmented scans, three blocks).
/// Four blocks of 256 run a multiprocessor either way (held by registers:
/// 64 for `scan_by_key`, `u64` keys and 4-byte values, ptxas sm_90); 14
/// items take 46.5 KiB. On an H200 at 2^28 against 12 items: 1-2% faster
/// at every run length; at 2^24 within 1%; 16 items measured 0.96-0.98x
/// (2026-12-01). See `docs/tuning/by_key.md`.
pub const fn items<K, V>() -> usize {
    if size_of::<K>() == 8 && size_of::<V>() == 4 { 14 } else { items_for(size_of::<K>(), size_of::<V>()) }
}

/// Items per thread of `reduce_by_key` (keys `K`, values `V`): 16 for
/// 8-byte keys with 4-byte values, else the scans' [`items`]. A run's value goes
/// where its last item's value was staged, and each warp keeps its runs'
/// positions in a region of [`WARP_RUNS`] a warp (`emit_runs_by_warp`)
/// instead of one of the tile's length, so 16 items of `u64` keys and
/// 4-byte values take 54.6 KiB (the host opts in past the 48 KiB default):
/// four blocks of 256 a multiprocessor, as 14 items did with a tile-long
/// positions region (53.5 KiB). On an H200 against 14 items, alternated
/// twice in one call, `u64` keys: runs of 8 and of 1000 1.08-1.10x at
/// 2^28 (`i32` values 1070 -> 992 and 998 -> 912 us, 85.8% and 83.2% of
/// copy), 1.05-1.07x at 2^24; runs of 1 within 1% at 2^28, 0.98-0.99x at
/// 2^24. See `docs/tuning/by_key.md`.
pub const fn reduce_items<K, V>() -> usize {
    if size_of::<K>() == 8 && size_of::<V>() == 4 { 16 } else { items::<K, V>() }
}

/// Runs a warp of `reduce_by_key` keeps the tile positions of (`u16`
/// each, 2 KiB for the eight warps of a block, what 56 KiB leave beside a
/// tile of 16 items of `u64` keys and 4-byte values): a warp with more
/// (runs shorter than four items on average) finds each run's position
/// from its threads' tail bits instead.
pub const WARP_RUNS: usize = 128;

/// Blocks of 256 a multiprocessor that `reduce_by_key` (8-byte keys,
/// 4-byte values), `run_length_encode` and `non_trivial_runs` (4-byte
/// keys) declare to ptxas as launch bounds
/// ([`crate::gpu::min_blocks_per_sm`]): the four their shared memory
/// allows. Left unbounded, ptxas gave them 40-48 registers, which four
/// blocks do not need; bounded, 57-64 (ptxas 13.0 sm_90, no spill), with
/// more of the tile's work in flight. H200, `i32`, one round each in the
/// same call: 1.01-1.02x at 2^28 (`reduce_by_key` run8 1088 -> 1069 us),
/// 1.01-1.04x at 2^24. See `docs/tuning/by_key.md`.
pub const RUN_BLOCKS_PER_SM: u32 = 4;

/// Blocks of 256 a multiprocessor that `reduce_by_key` with 4-byte keys
/// and 4-byte values declares to ptxas (16 items, about 37 KiB of shared
/// memory: five blocks). Its write-out by warp (`emit_runs_by_warp`) left
/// unbounded took 56 registers (four blocks) where the tile-slot
/// write-out had taken 48 (five); bounded, 48 again, no spill (ptxas 13.0
/// sm_90). H200, `reduce_by_key_k32` (`i32` keys and values) against
/// unbounded: 1.03-1.06x at 2^28, 1.03-1.05x at 2^24.
pub const REDUCE_NARROW_BLOCKS_PER_SM: u32 = 5;

/// Items per thread of `run_length_encode` (keys `K`; the count type does
/// not size the tile): 112 bytes of keys (28 four-byte, 14 eight-byte), as
/// [`ntr_items`]. Its shared memory holds the staged keys and one `u16`
/// run end per item (a run's length is the distance between two ends), so
/// a tile of 28 four-byte keys takes about 45 KiB: 4 blocks of 256 per
/// multiprocessor (112 KiB of keys resident). On an H200 at 2^28 `i32`
/// against 24 keys (39 KiB, 5 blocks, 120 KiB resident) in the same call:
/// 905 -> 860 us at runs of 1 (83.2% -> 87.6% of copy), 468 -> 459.5 at
/// runs of 8, 424 -> 418 at runs of 1000; at 2^24 1.01-1.02x. The tile's
/// fixed costs, not the bytes resident, set the pace at long runs. See
/// `docs/tuning/by_key.md`.
pub const fn rle_items<K>() -> usize {
    112 / size_of::<K>()
}

/// Items per thread of `non_trivial_runs` (keys `K`): 112 bytes of keys
/// (28 four-byte, 14 eight-byte). Its shared memory holds the staged keys
/// and, per run of two or more (at most one per two items), its first and
/// last tile positions: about 45 KiB for 28 four-byte keys, 4 blocks of
/// 256 per multiprocessor. At 2^28 on an H200 that measured 549 / 596 /
/// 554 us at runs of 1 / 8 / 1000 against 570 / 627 / 575 at 24 keys, and
/// beat keeping the runs in the threads' own key slots with no positions
/// region (5 blocks: 541 / 632 / 564). See `docs/tuning/by_key.md`.
pub const fn ntr_items<K>() -> usize {
    112 / size_of::<K>()
}

/// Items per thread of `segmented_scan` (a `u32` flag and a value `V`):
/// as [`items`] with `u32` keys.
pub const fn segmented_items<V>() -> usize {
    items::<u32, V>()
}

/// Whether `reduce_by_key`, `run_length_encode` and `non_trivial_runs`
/// ask L2 for the tile of their block's index while their ticket is in
/// flight ([`crate::block::tile::prefetch_tile`]): blocks start in index
/// order, so the ticket is mostly that index or a near one, whose block
/// then finds the lines in L2. H200, 2^28 `i32` values / `u64` keys,
/// against none in the same run: run-length encoding 1.01-1.04x, the
/// non-trivial runs 1.01-1.02x, `reduce_by_key` 0.995-1.01x. The scans by
/// key lost 2% ([`PREFETCH_SCANS`]). See `docs/tuning/by_key.md`.
pub const PREFETCH_RUNS: bool = true;

/// The same for `scan_by_key`: off, 0.98x with it at 2^28.
/// (`segmented_scan` takes its ticket without the shared opening and
/// prefetches nothing; not measured.)
pub const PREFETCH_SCANS: bool = false;

/// Nanoseconds the look-back's warp sleeps before its first status read,
/// in launches of at least 500 tiles
/// ([`crate::single_pass::exclusive_prefix_by_warp`]): the youngest
/// predecessors publish meanwhile, so the first read finds more of the
/// window complete and fewer reads go to L2 for nothing (CUB's look-back
/// for reduce-by-key on sm_90 waits 560, for the scans by key 1125).
/// H200, 2^28 `u64` keys with 4-byte values, 500 against none in the same
/// call: 1.01-1.02x on every by-key kernel with the wide status,
/// 1.00-1.03x with the narrow one; then 1000 against 500 (two runs each,
/// `i32` and `f32`, 2^28): 1.00-1.02x at all 13 points; 250 0.98-0.99x;
/// 1500 against 1000 (`i32`) 0.98-0.99x but at runs of 1 (1.01x). A sleep
/// between reads of a still INVALID status, as select's
/// ([`crate::select::policy::LOOK_BACK_POLL_NS`]), made these kernels
/// 2-5% slower (150 ns), so they have none. See `docs/tuning/by_key.md`.
pub const LOOK_BACK_DELAY_NS: u32 = 1000;

/// Elements of one tile at block size `b` and `items` per thread.
pub const fn tile_len(b: u32, items: usize) -> u64 {
    b as u64 * items as u64
}
