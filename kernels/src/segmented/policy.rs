//! Tuning policy of the segmented reductions: read by the kernels, the
//! `entries!` list and the host plan.

use crate::block::tile::tile_slots;
use core::mem::size_of;

/// Threads per block of the flat kernel ([`super::flat`]).
// Not yet measured on a GPU: the look-back scan's default (H200, 2^28 i32 scan: 92.5% of copy at 256).
pub const BLOCK: u32 = 256;

/// Threads of the spine ([`super::flat::segmented_spine`]): one block
/// that carries the tiles' partial segments across tile edges.
// The most threads a block may have: 32 warps, each reading a run of the tile records, a chunk of `spine_items` per lane and round (four rounds at 2^28 `i32`). ptxas sm_90: at most 64 registers at 1024 threads. Before the chunks, H200 (ncu, bench clocks): 57.6 us at 2^28 len512 `i32`, 6.7-7.0 us at 2^24.
pub const SPINE_BLOCK: u32 = 1024;

/// Tile records a lane of the spine reads per round, one chunk of
/// consecutive records: 32 bytes of accumulator (eight of up to 4 bytes,
/// four of 8, two of 16), so that its tails and heads go in 16-byte
/// loads and its loads of a round are in flight together.
// ptxas sm_90: see `SPINE_BLOCK` for the registers. H200: rows of 32 with a warp scan each (`0c17957`) spent 57.6 us at 2^28 len512 `i32` on instructions of one multiprocessor.
pub const fn spine_items<A>() -> usize {
    let k = 32 / if size_of::<A>() > 4 { size_of::<A>() } else { 4 };
    if k == 0 { 1 } else { k }
}

/// Mean segment lengths (`n / segments`, known on the host) at which
/// offsets may go to the one-warp-per-segment ranges kernel instead of the
/// flat one ([`route_considered`]); a launch of [`super::ranges::segmented_route`]
/// then counts what the mean does not tell (any segment longer than
/// [`ROUTE_LONGEST`], how many shorter than [`ROUTE_SHORT`]) and the
/// kernels of both paths read the counts to know which of them runs
/// ([`route_to_ranges`]). Since the chunked path ([`chunked`]) takes
/// plain operators from a mean of `ROUTE_MEAN[0]`, this route serves
/// argmin and argmax (and calls that set the route).
// H100, 2^28 `i32` sums (2026-11-27, docs/tuning/segmented.md "The ranges kernel beside the flat one"): segments of 512 at 100% of copy through the ranges kernel against 85% flat (2^24: 26.4 against 48.9 us, CUB 46.4); segments of 16 at 17% against 79%, of 2^20 at 11% against 98%.
pub const ROUTE_MEAN: [u64; 2] = [128, 2048];

/// The longest segment the ranges kernel takes when routed: one warp
/// reads it, 16 KiB at 4-byte items.
pub const ROUTE_LONGEST: u64 = 4096;

/// Segments this short leave most of a warp idle in the ranges kernel;
/// routing needs at most a quarter of them.
pub const ROUTE_SHORT: u64 = 32;

/// Whether offsets of `segments` segments over `n` elements are worth the
/// counting launch ([`ROUTE_MEAN`]; the counts are `u32`).
pub const fn route_considered(n: u64, segments: u64) -> bool {
    segments > 0 && segments <= u32::MAX as u64 && n / segments >= ROUTE_MEAN[0] && n / segments <= ROUTE_MEAN[1]
}

/// Fixed segment lengths over 4-byte elements that go to the ranges
/// kernel, whose warps stage 32 of them at a time in a window of shared
/// memory sized to hold them ([`fixed_to_ranges`], [`ranges_window_for`]).
// H200, 2^28 `i32` (2026-11-30, docs/tuning/segmented.md "A warp's short pairs through shared memory"): fixed segments of 16 through the ranges kernel 309 us (88% of copy) against the short kernel's 326.5 (83.5%), 2^24 23.7 against 28.5; of 8, 455 against 367, and of 4, 904 against 453 (a warp's 32 segments fill a small part of the window). 8-byte elements not measured.
pub const WINDOW_LENGTHS: [u64; 2] = [16, 32];

/// Mean segment lengths (`n / segments`) at which CSR offsets under
/// argmin or argmax go to the ranges kernel ([`offsets_to_ranges`]).
// H200, 2^28 `i32` (2026-11-30, docs/tuning/segmented.md "CSR offsets through the windows"): offsets of 4, 8, 16 and 32 through the ranges kernel 1278, 709, 534 and 452 us against the flat kernel's 1429, 733, 621.5 and 569; random lengths 0..=32, 853 against 2079 (windows for exactly 32 segments of the mean).
pub const WINDOW_MEANS_INDEXED: [u64; 2] = [4, 32];

/// Whether segments of a fixed length `seg_len` over elements of `size`
/// bytes go to the ranges kernel (one launch, nothing to count): from the
/// shortest mean that routes offsets to the longest segment the ranges
/// kernel takes, and 4-byte elements in [`WINDOW_LENGTHS`].
pub const fn fixed_to_ranges(seg_len: u64, size: usize) -> bool {
    (seg_len >= ROUTE_MEAN[0] && seg_len <= ROUTE_LONGEST)
        || (size == 4 && seg_len >= WINDOW_LENGTHS[0] && seg_len <= WINDOW_LENGTHS[1])
}

/// Whether CSR offsets of `segments` segments over `n` elements go to the
/// ranges kernel as begin/end pairs (`offsets`, `offsets + 1`): argmin and
/// argmax (`indexed`) at means in [`WINDOW_MEANS_INDEXED`], where a warp's
/// 32 segments mostly lie in its window and the flat kernel's tiles spend
/// more on their indices. Pairs in any order are the ranges kernel's
/// business, so uneven lengths cost speed, never correctness: a warp whose
/// short segments pass its window reads them a lane each, and long ones go
/// to its slot table. Plain operators stay on the tiles: in a window, each
/// lane sums its own segment, so a warp takes as long as its longest, and
/// random lengths of mean 16 ran 15% slower there than through the short
/// tile kernel (equal lengths 7% faster).
pub const fn offsets_to_ranges(n: u64, segments: u64, indexed: bool) -> bool {
    if segments == 0 || !indexed {
        return false;
    }
    let mean = n / segments;
    mean >= WINDOW_MEANS_INDEXED[0] && mean <= WINDOW_MEANS_INDEXED[1]
}

/// Byte offset, in the header of the temporary storage
/// ([`RECORDS_HEADER`]), of the route's counts: segments longer than
/// [`ROUTE_LONGEST`] (or whose offsets are out of order), then segments
/// shorter than [`ROUTE_SHORT`], a `u32` each.
pub const ROUTE_AT: usize = 8;

/// The ranges kernel runs when no segment is long and at most a quarter
/// are short.
pub const fn route_to_ranges(long: u32, short: u32, segments: u64) -> bool {
    long == 0 && short as u64 * 4 <= segments
}

/// Whether the flat tiles of a plain operator take
/// [`super::short::segmented_short`] rather than
/// [`super::flat::segmented_reduce`], for `segments` segments over `n`
/// elements (offsets, or a fixed length): a mean segment under
/// [`ROUTE_MEAN`]`[0]`, where most threads hold a boundary.
// H200, 2^28 `i32` sums in segments of 16 (2026-11-29): 372 us against the flat kernel's 489 (81% and 62% of copy); 2^24 42.2 against 52.6. Means of 16 to 128 not measured apart (the bench's mixed lengths take the chunked path).
pub const fn short(n: u64, segments: u64) -> bool {
    segments > 0 && n / segments < ROUTE_MEAN[0]
}

/// Elements of `T` a lane of warp 0 reads, in
/// [`super::short::segmented_short`], of the segment that ends at its
/// tile's first boundary but began before the tile: where that part is at
/// most [`lead_max`] elements long the tile writes the segment itself, and
/// the spine has nothing to do for it ([`SPINE_IF_NEEDED`]). None for
/// 8-byte types, whose tiles leave every such segment to the spine.
// Two of 4 bytes: segments of 16 (the bench) need no spine. Each is a load a lane of warp 0, in flight through the tile's first pass and block scan; ptxas sm_90 at the kernel's 48 registers ([`SHORT_REGISTERS`]): no spill. 8-byte types: i64/u64 spilled 12 bytes at 48 with one a lane (f64 needs 56 anyway), and one block fewer is not worth a launch.
pub const fn lead_items<T>() -> u64 {
    if size_of::<T>() <= 4 { 2 } else { 0 }
}

/// The longest part of a segment before a tile that the short kernel reads
/// itself ([`lead_items`] a lane of a warp; 0: none).
pub const fn lead_max<T>() -> u64 {
    32 * lead_items::<T>()
}

/// Registers a thread of [`super::short::segmented_short`] over 4-byte
/// types may use: five blocks of 256 a multiprocessor.
// ptxas sm_90: 48 for 4-byte types before the tiles read their lead part, 56 with it uncapped, 48 capped without a spill. H200 (ncu, 2^28 `i32` segments of 16, 2026-11-29): the tile kernel uncapped (four blocks) 366-372 us against 359-362 capped.
pub const SHORT_REGISTERS: u32 = 48;

/// Threads per block of the launches over the offsets:
/// [`super::flat::segmented_bounds`] (a thread per boundary),
/// [`super::flat::segmented_bounds_search`] (a warp per tile edge) and
/// [`super::ranges::segmented_route`] (a thread per segment).
// Not measured at other sizes: short kernels of loads, stores and a few atomics.
pub const OFFSETS_BLOCK: u32 = 256;

/// Threads per block of the ranges kernel ([`super::ranges`]).
// Not yet measured on a GPU: 8 warps per block, as the reductions' default.
pub const RANGES_BLOCK: u32 = 256;

/// The longest segment one lane of the ranges kernel sums by itself when
/// its warp takes 32 segments at once (at least 32 segments a warp); a
/// longer one is walked by the whole warp. A warp that walked a segment of
/// 16 left half its lanes idle and spent five shuffles and a dependent
/// chain of loads on it: segments of 16 given as pairs ran at 11% of copy
/// (H200, 2^28 `i32`, 2826 us); a lane each, 544 us (56%). Segments of 512
/// (longer than this, so walked by the warp as before) lost nothing
/// (`docs/tuning/segmented.md`).
pub const RANGES_SHORT: u64 = 32;

/// Bytes of a warp's window in the ranges kernel ([`super::ranges`]) by
/// default: where the elements of a warp's 32 short
/// pairs lie within this many bytes of input (512 four-byte elements:
/// pairs of 16 side by side), the warp stages them in its shared memory
/// with coalesced loads and each lane sums its pair from there, instead of
/// each lane reading its own pair (32 lanes' loads 16 elements apart: a
/// cache line a lane). The window is a launch argument: fixed lengths,
/// begin/end pairs (by `n / S`) and CSR offsets get one sized for their
/// mean ([`ranges_window_for`]), this one at the least.
// H200, 2^28 (2026-11-30, docs/tuning/segmented.md "A warp's short pairs through shared memory"): pairs of 16 side by side `i32` 547 -> 331 us (55% -> 91% of copy), 2^24 44.7 -> 28.8 us.
pub const RANGES_WINDOW_BYTES: usize = 2048;

/// The largest window a warp gets ([`ranges_window_for`]): 4 KiB, 33 KiB
/// of shared memory a block of 256.
// H200, 2^28 `i32` (2026-11-30, docs/tuning/segmented.md "CSR offsets through the windows"): with 4 KiB windows for every launch, pairs and fixed lengths of 16 and 512 ran 4-6% slower (six blocks' 200 KiB of shared memory leave the multiprocessor's L1, which holds the loads in flight, 28 KiB), so only segments that need the room get it.
pub const RANGES_WINDOW_MAX_BYTES: usize = 4096;

/// Elements of `size` bytes in a warp's default window
/// ([`RANGES_WINDOW_BYTES`]).
pub const fn ranges_window(size: usize) -> u64 {
    (RANGES_WINDOW_BYTES / size) as u64
}

/// Elements of `size` bytes in a warp's window for segments of `mean`
/// elements on average: room for a warp's 32 of them, a multiple of 32
/// from the default window ([`RANGES_WINDOW_BYTES`]) to
/// [`RANGES_WINDOW_MAX_BYTES`]; the default for means over
/// [`RANGES_SHORT`]. No room beyond that for uneven lengths: where their
/// span overflows the window, a warp's lanes read their segments from L1,
/// which measured faster for random lengths than staging them.
// H200, 2^28 `i32` (2026-11-30, docs/tuning/segmented.md "CSR offsets through the windows"): random lengths 0..=32 of mean 16, half as much room again (3 KiB) against exactly 32 (2 KiB): argmin over offsets 921.5 -> 853 us, sums over pairs 512 -> 444.5; equal lengths of 16 the same.
pub const fn ranges_window_for(mean: u64, size: usize) -> u64 {
    if mean > RANGES_SHORT {
        // Segments this long are walked by their warp, not staged.
        return (RANGES_WINDOW_BYTES / size) as u64;
    }
    let want = 32 * mean;
    let want = want.div_ceil(32) * 32;
    let (lo, hi) = ((RANGES_WINDOW_BYTES / size) as u64, (RANGES_WINDOW_MAX_BYTES / size) as u64);
    if want < lo {
        lo
    } else if want > hi {
        hi
    } else {
        want
    }
}

/// Slots of a warp's window of `window` elements: its elements and one
/// spare slot after each 32 (against bank conflicts between lanes reading
/// pairs side by side).
pub const fn ranges_window_slots(window: u64) -> usize {
    (window + window / 32) as usize
}

/// Dynamic shared memory of a ranges block of `b` threads over elements
/// of `size` bytes: a window of `window` elements a warp.
pub const fn ranges_smem_bytes(b: u32, size: usize, window: u64) -> usize {
    (b / 32) as usize * ranges_window_slots(window) * size
}

/// Units of work a warp of the ranges grid is given when few pairs are
/// split into parts ([`ranges_parts`]): several, so that parts of unequal
/// segments even out over a warp's units.
// Measured at this value only (H200, 2026-11-30): 256 pairs of 2^20 at
// 2^28 `i32` in 132 parts each, 255 us (100.6% of copy).
pub const RANGES_UNITS_PER_WARP: u64 = 8;

/// The fewest elements a part of a split pair is cut to, on average over
/// the input ([`ranges_parts`]): a warp's walk of 2048 elements is 64 a
/// lane, eight rounds of eight loads.
// Measured at these values only (H200, 2026-11-30): 16 pairs of 2^20 at
// 2^24 `i32` in 512 parts of 2048, 25.5 us (87% of copy).
pub const RANGES_PART_MIN: u64 = 2048;

/// Parts each of `segments` begin/end pairs over `n` elements is cut
/// into, on a grid of `warps` warps ([`super::ranges::segmented_ranges_parts`];
/// 1: not split, one warp a segment). Enough parts for
/// [`RANGES_UNITS_PER_WARP`] units a warp, but no more than leave the
/// segments' mean length in parts of [`RANGES_PART_MIN`] elements; so
/// where there are parts, `segments * parts <= n / RANGES_PART_MIN`.
pub const fn ranges_parts(n: u64, segments: u64, warps: u64) -> u64 {
    if segments == 0 {
        return 1;
    }
    let want = (RANGES_UNITS_PER_WARP * warps).div_ceil(segments);
    let room = n / segments.saturating_mul(RANGES_PART_MIN);
    let parts = if want < room { want } else { room };
    if parts < 2 { 1 } else { parts }
}

/// Elements of a slot of a long begin/end pair, and the length past which
/// a pair is long (not walked by one warp but listed in the slot table,
/// [`super::ranges::segmented_ranges_slots`]), for `n` input elements and
/// a grid of `warps`: about `n / (4 warps)` (four slots a warp if the
/// whole input were long pairs), a power of two from
/// [`RANGES_SLOT_MIN`] to [`RANGES_SLOT_MAX`]. A warp walks 256 elements
/// a round of eight loads, a memory latency each, so a pair of 2^16 alone
/// took it 256 latencies.
// H200, mixed pairs (1..2^16), i32: 37.4 us at 2^24 (slots of 2048), 329 at 2^28 (8192); main before it 112 / 470, CUB 30 / 258 (docs/tuning/segmented.md, v9-v12).
pub const fn ranges_slot(n: u64, warps: u64) -> u64 {
    let want = n / (4 * if warps > 0 { warps } else { 1 });
    let p = if want <= 1 { 1 } else { want.next_power_of_two() };
    if p < RANGES_SLOT_MIN {
        RANGES_SLOT_MIN
    } else if p > RANGES_SLOT_MAX {
        RANGES_SLOT_MAX
    } else {
        p
    }
}

/// The shortest begin/end pair the ranges kernel's warp walks in 16-byte
/// vectors (shorter ones element by element, eight loads a lane).
pub const RANGES_VEC_MIN: u64 = 1024;

/// The shortest slot ([`ranges_slot`]): 8 rounds of a warp's loads.
pub const RANGES_SLOT_MIN: u64 = 2048;

/// The longest slot ([`ranges_slot`]).
pub const RANGES_SLOT_MAX: u64 = 8192;

/// Runs of slots a warp of [`super::ranges::segmented_ranges_slots`] takes
/// at once, of `taken` slots for `warps`: about a quarter of its share,
/// one at least and at most `RANGES_GRAB` elements' worth.
// H200: the slots' kernel takes 40-56 registers, so of the ranges grid's eight blocks a multiprocessor four to six fit at once; runs shared out in advance left the last ones to a second wave; runs of 8 slots of 2048 left most warps idle at 2^24 (80 us against 37).
pub const fn ranges_run(taken: u64, warps: u64, slot: u64) -> u64 {
    let most = RANGES_GRAB / slot;
    let want = taken / (4 * if warps > 0 { warps } else { 1 });
    let run = if want < most { want } else { most };
    if run < 1 { 1 } else { run }
}

/// Elements' worth of slots a warp takes at most at once ([`ranges_run`]).
pub const RANGES_GRAB: u64 = 16384;

/// Slots (and list entries) of a table for `n` elements in slots of
/// `slot` (pairs longer than `slot` listed): every slot of disjoint pairs
/// (at most `n / slot`, plus one partial slot per long pair, of which
/// there are at most `n / slot`), and some; at most [`RANGES_TABLE_MAX`].
pub const fn ranges_table_cap(n: u64, slot: u64) -> u64 {
    let cap = 2 * (n / slot) + 64;
    if cap < RANGES_TABLE_MAX { cap } else { RANGES_TABLE_MAX }
}

/// The most slots (and entries) of a table: its counter keeps the entries
/// in 24 bits and the slots in 40, which this keeps from overflowing
/// (pairs past it are walked by their warps).
pub const RANGES_TABLE_MAX: u64 = 1 << 22;

/// Byte offsets, from the table's start, of its list entries (16 bytes
/// each: pair, first slot), arrival counters (`u32`, one an entry),
/// accumulators (`acc` bytes each, one a slot, 16-byte aligned) and its
/// end, for `cap` entries and slots; two `u64` counters (entries listed
/// and slots taken in one, slots handed out) come first, in 32 bytes.
pub const fn ranges_table_layout(cap: u64, acc: usize) -> [usize; 4] {
    let cap = cap as usize;
    let list = 32;
    let arrive = list + 16 * cap;
    let partials = (arrive + 4 * cap).next_multiple_of(16);
    [list, arrive, partials, partials + acc * cap]
}

/// The most slots (and entries) a table of `acc`-byte accumulators holds
/// in `bytes`: the inverse of [`ranges_table_layout`] (its 32-byte
/// header, up to 12 bytes of alignment before the accumulators, and 16 +
/// 4 + `acc` bytes a slot).
pub const fn ranges_table_fit(bytes: u64, acc: usize) -> u64 {
    const FIXED: u64 = 32 + 16;
    if bytes <= FIXED { 0 } else { (bytes - FIXED) / (16 + 4 + acc as u64) }
}

/// Blocks of the ranges kernels per multiprocessor (grid-stride over the
/// segments beyond that). The ranges kernel itself takes fewer where fewer
/// fit at once (the driver's occupancy: 32 to 48 registers by type and
/// operator, its windows' shared memory), so that no block waits for a
/// place to run its share.
// Fills a multiprocessor's 2048 threads at 256. H200 (2026-11-30): with the ranges kernel at 40 registers (six blocks fit), a grid of eight a multiprocessor made segments of 512 7% slower at 2^28 (the last blocks ran alone); sized by the occupancy they are as fast as before.
pub const RANGES_BLOCKS_PER_SM: u32 = 8;

/// Input elements per thread of the flat kernel: 32 of 4 bytes, 16 of 8
/// (128 bytes each, as the look-back scan's 4-byte tiles).
// H200, 2^28 i32: 16 items ran at 43-66% of copy after the spine (`86823b1`); 32 halves the tiles and the work per tile that does not grow with it (search, barriers, records).
pub const fn items<T>() -> usize {
    if size_of::<T>() <= 4 { 32 } else { 16 }
}

/// Boundaries a tile's shared window holds, for accumulator `A`: 16 per
/// thread (half the positions of a 4-byte tile, so the tile and its window
/// stay within the 48 KiB a block gets without opting in); 4 per thread for
/// the 16-byte accumulators (argmin, argmax), whose kernels run six blocks
/// of 256 a multiprocessor ([`ARG_REGISTERS`]), which fit in shared memory
/// with a window of 2 KiB, not 8 (segments of 8 elements and longer still
/// use it at 4-byte items). A tile with more boundaries searches the
/// offsets in global memory.
pub const fn window_len<A>(b: u32) -> usize {
    if size_of::<A>() > 8 { b as usize * 4 } else { b as usize * 16 }
}

/// Registers a thread of the flat kernel may use for the 16-byte
/// accumulators (argmin, argmax): six blocks of 256 a multiprocessor
/// instead of five (48 registers), with [`window_len`]'s smaller window.
// ptxas sm_90 at .maxnreg 40: no spills for argmin/argmax of every type; the sums would spill 4-8 bytes. H100, 2^28 (2026-11-28, one run, docs/tuning/segmented.md "Six blocks a multiprocessor"): argmin 1-5% faster at every length (len16 f32 638 -> 608 us, len512 f32 539 -> 517, mixed 391 -> 384), the sums at 40 registers 3-5% slower (spills), so they keep 48.
pub const ARG_REGISTERS: u32 = 40;

/// Elements of one tile of the flat kernel at block size `b`.
pub const fn tile_len<T>(b: u32) -> u64 {
    b as u64 * items::<T>() as u64
}

const fn round16(b: usize) -> usize {
    b.div_ceil(16) * 16
}

/// Byte offsets of the flat kernel's shared memory for input `T` and
/// accumulator `A` at block size `b`: the staged tile (at 0), the block
/// scan's 32 warp values, its 32 warp flags, the tile's two boundary
/// indices (`u64`), the window of the tile's boundaries (`u16` tile
/// positions, [`window_len`] of them); every part 16-byte aligned.
pub const fn smem_layout<T, A>(b: u32) -> [usize; 4] {
    let values = round16(tile_slots::<T>(b, items::<T>()) * size_of::<T>());
    let flags = values + round16(32 * size_of::<A>());
    let bounds = flags + 32 * 4;
    let window = bounds + 16;
    [values, flags, bounds, window]
}

/// Dynamic shared memory (bytes) of the flat kernel.
pub const fn smem_bytes<T, A>(b: u32) -> usize {
    smem_layout::<T, A>(b)[3] + round16(window_len::<A>(b) * 2)
}

/// Tile records one block of the spine takes when the records need more
/// than one ([`spine_blocks`]): one round of `spine_items` per lane, 8192
/// of 4-byte accumulators.
// H200 (ncu, bench clocks), one block: 50.4 us at 2^28 len512 `i32` (32769 records, four rounds per pass), a latency chain of 41 cycles per warp instruction on one multiprocessor; blocks of one round each spread it.
pub const fn spine_share<A>() -> u64 {
    SPINE_BLOCK as u64 * spine_items::<A>() as u64
}

/// Blocks of the spine over `tiles` records at `share` records a block
/// ([`spine_share`] unless a test asks for fewer): one up to `share`
/// (`ceil(tiles / share)` beyond), in one launch either way.
pub const fn spine_blocks(tiles: u64, share: u64) -> u64 {
    let share = if share == 0 { 1 } else { share };
    if tiles <= share { 1 } else { tiles.div_ceil(share) }
}

/// The `phase` argument of the spine: one block does it all.
pub const SPINE_WHOLE: u32 = 0;
/// The `phase` argument of the spine: several blocks in one launch, each
/// its warps' pairs (any boundary, tails since the last) to the pairs
/// after the records ([`spine_pairs_bytes`]) and a flag, then, once the
/// blocks before it have raised theirs, each warp's carry from the pairs
/// and the tiles' first segments.
// Two launches before (pairs, then finish): H100 (ncu, 2^28 `i32` mixed lengths, five blocks) 6.0 + 9.6 us.
pub const SPINE_CHAINED: u32 = 1;

/// A bit of the spine's `phase`: the spine returns at once unless a tile
/// raised the `u32` at [`SPINE_NEEDED_AT`] of the temporary storage
/// (the short kernel raises it for a tile whose first segment began more
/// than [`lead_max`] elements before it; the others write that segment
/// themselves).
pub const SPINE_IF_NEEDED: u32 = 2;

/// Byte offset, in the header ([`RECORDS_HEADER`]), of the `u32` that a
/// tile of the short kernel raises when the spine has work
/// ([`SPINE_IF_NEEDED`]).
pub const SPINE_NEEDED_AT: usize = 0;

/// Byte offset, in the header ([`RECORDS_HEADER`]), of the `u32` count of
/// offsets found out of order.
pub const ERRORS_AT: usize = 4;

/// The spine's flag ([`SPINE_NEEDED_AT`]) in the header of the flat
/// kernels' temporary storage `temp`.
#[inline(always)]
pub fn spine_needed(temp: *mut u64) -> *mut u32 {
    temp.cast::<u8>().wrapping_add(SPINE_NEEDED_AT).cast()
}

/// The error count ([`ERRORS_AT`]) in the header of the flat kernels'
/// temporary storage `temp`.
#[inline(always)]
pub fn error_count(temp: *mut u64) -> *mut u32 {
    temp.cast::<u8>().wrapping_add(ERRORS_AT).cast()
}

/// One warp's pair, as the spine's first pass leaves it: the combine of
/// its records' tails since their last boundary, and whether it had one.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SpinePair<A> {
    /// The tails since the last boundary (all of them without one).
    pub value: A,
    /// 1 when a record of the run had a boundary.
    pub reset: u32,
}

/// Byte offsets, after the records ([`records_layout`]'s end), of a spine
/// of `blocks` blocks (more than one): its warps' pairs, each block's
/// flag (`u32`, raised once its pairs are written), the block ticket
/// counter (`u32`), and the end; all zero when the launch starts.
pub const fn spine_pairs_layout<A>(blocks: u64) -> [usize; 4] {
    let flags = round16(blocks as usize * (SPINE_BLOCK / 32) as usize * size_of::<SpinePair<A>>());
    let ticket = flags + blocks as usize * 4;
    [0, flags, ticket, round16(ticket + 4)]
}

/// Bytes of the spine's pairs, flags and ticket for `blocks` blocks (none
/// for one): they follow the records ([`records_layout`]'s end).
pub const fn spine_pairs_bytes<A>(blocks: u64) -> usize {
    if blocks <= 1 { 0 } else { spine_pairs_layout::<A>(blocks)[3] }
}

/// Byte offsets of the spine's dynamic shared memory: the block scan's 32
/// warp values, 32 warp carries, then 32 flags.
pub const fn spine_smem_layout<A>() -> [usize; 3] {
    let values = round16(32 * size_of::<A>());
    [0, values, 2 * values]
}

/// Dynamic shared memory (bytes) of the spine.
pub const fn spine_smem_bytes<A>() -> usize {
    spine_smem_layout::<A>()[2] + 32 * 4
}

/// Bytes of the header of the flat kernel's temporary storage: the
/// spine's flag at byte 0 ([`SPINE_NEEDED_AT`]), the error count at byte
/// 4 ([`ERRORS_AT`]), the route's counts at [`ROUTE_AT`].
pub const RECORDS_HEADER: usize = 16;

/// Byte offsets, in the flat kernel's temporary storage, of its per-tile
/// records for `tiles` tiles with accumulator `A` (after the header):
/// each tile's *tail* (`A`: the combine since its last boundary, or of the
/// whole tile without one), *head* (`A`: the combine from the tile's
/// start to its first boundary) and *first* (`u64`: the index of its first
/// boundary, or a marker), then the `tiles + 1` *bounds* (`u64`, the
/// tiles' ranges of boundaries, when [`super::flat::segmented_bounds`]
/// runs), and the total size; every part 16-byte aligned.
pub const fn records_layout<A>(tiles: u64) -> [usize; 5] {
    let t = tiles as usize;
    let tails = RECORDS_HEADER;
    let heads = tails + round16(t * size_of::<A>());
    let firsts = heads + round16(t * size_of::<A>());
    let bounds = firsts + round16(t * 8);
    let end = bounds + round16((t + 1) * 8);
    [tails, heads, firsts, bounds, end]
}

/// Tiles from which offsets' tile ranges are found by a launch of their
/// own ([`super::flat::segmented_bounds`]) rather than by each tile.
// H200 (ncu, 2^28 `i32` mixed lengths, `cf142e2`): 27% of the tile kernel's stall samples sat at the barrier after its two searches (a guess, then three rounds of dependent loads for 70k segments) and the kernel ran at 67% of DRAM. From 2^24 elements of 4 bytes; below, each tile keeps its own search (an extra launch costs a few us, much of a small input's time; not measured yet).
pub const BOUNDS_MIN_TILES: u64 = 2048;

/// Whether the tiles' boundaries come from a stream over the offsets
/// ([`super::flat::segmented_bounds`]) rather than a search per tile edge
/// ([`super::flat::segmented_bounds_search`]), for `segments` offsets
/// over `tiles` tiles. The stream reads every offset once (its cost grows
/// with the segments) and a boundary writes each tile edge it owns (a
/// warp at a time for long segments); the search costs a chain of
/// dependent rounds per edge: one where lengths are even, several where
/// they are not. So: the stream around one segment a tile (from a quarter
/// to four), where neither cost is large and uneven lengths cost the
/// search its rounds; the search elsewhere.
// NVIDIA H100, bench, 2^28 `i32` (2026-11-28, one run, stream / search): mixed lengths (2.1 segments a tile) 372.8 / 373.4 us (ncu: the launch 4.3 us, the search's 14.8); segments of 16 (512 a tile) 639 / 537 (the stream reads 134 MB of offsets); 2^20 (1/128 a tile) 365.6 both. At 2^24: mixed 41.6 / 42.3, 2^20 40.1 / 37.5, 16 62.7 / 57.8, 512 48.8 / 48.5.
pub const fn bounds_by_stream(segments: u64, tiles: u64) -> bool {
    4 * segments >= tiles && segments <= 4 * tiles
}

/// Threads per block of the chunked path ([`super::chunks`]): the plan
/// (a thread per segment) and the work kernel (a block per chunk, a warp
/// per short segment).
// H200 prototype (2026-11-28, docs/tuning/segmented.md "A prototype"): 256 threads beside 128 and 512, best or within 2% everywhere.
pub const CHUNKS_BLOCK: u32 = 256;
/// Blocks of the work kernel per multiprocessor: its grid, which takes
/// tickets until the work is done (no block idles for a whole launch).
// 6 x 256 threads at 40 registers (CHUNKS_REGISTERS): eight loads in flight a thread beat four at 32 registers and eight blocks (H200, 2026-11-28, docs/tuning/segmented.md "Eight loads in flight").
pub const CHUNKS_BLOCKS_PER_SM: u32 = 6;
/// Registers a thread of the work kernel may use (4-byte inputs under
/// plain operators): six blocks of [`CHUNKS_BLOCK`] a multiprocessor.
pub const CHUNKS_REGISTERS: u32 = 40;
/// Blocks of the work kernel a multiprocessor for argmin and argmax of
/// 4-byte elements, given to ptxas as launch bounds
/// ([`crate::gpu::min_blocks_per_sm`]): 48 registers, the five blocks they
/// ran at unbounded, with a round's loads more in flight.
pub const CHUNKS_BLOCKS_INDEXED: u32 = 5;
/// Bytes of input a chunk holds below [`CHUNK_LARGE_FROM`] bytes of
/// input: 16,384 four-byte elements.
// H200 prototype, 2^28 `u32`: chunks of 8,192 elements 2-4% slower at mixed lengths (more partials and atomics), 16,384-65,536 alike.
// H200, eight loads in flight: 128 KiB chunks 4-5% slower at 2^24 (fewer chunks than blocks at segments of 2^20), 64 KiB kept there.
pub const CHUNK_BYTES: u64 = 64 * 1024;
/// Bytes of input a chunk holds from [`CHUNK_LARGE_FROM`] bytes of input
/// on: 32,768 four-byte elements.
// H200, eight loads in flight, 2^28 `i32`/`f32`: 128 KiB chunks 4-5% faster than 64 KiB at mixed lengths and at segments of 2^20 (fewer partials, atomics and item loads).
pub const CHUNK_BYTES_LARGE: u64 = 128 * 1024;
/// Input bytes from which chunks are [`CHUNK_BYTES_LARGE`]: 256 MiB (2^26
/// four-byte elements).
// H200, `i32`, 128 KiB chunks against 64 KiB at every size: 2^24 and 2^25 mixed lengths 1-4% slower; 2^26 0-4% faster, 2^27 3-6%, 2^28 alike (docs/tuning/segmented.md).
pub const CHUNK_LARGE_FROM: u64 = 256 << 20;
/// Segments shorter than this many bytes go a warp each, not a block:
/// 1,024 four-byte elements.
// H200 prototype: segments of 512 at 2^28 `u32` 265 us a warp each, 772 a block each (CUB 660); mixed lengths within 1.5% for 256 or 1024 elements.
pub const SHORT_BYTES: u64 = 4 * 1024;
/// Elements of a chunk of an input of `n` elements of `T`
/// ([`CHUNK_BYTES`], or [`CHUNK_BYTES_LARGE`] from [`CHUNK_LARGE_FROM`]
/// bytes on). `n = 0` gives the shorter chunk, which plans the most items.
pub const fn chunk_len<T>(n: u64) -> u64 {
    let bytes =
        if n.saturating_mul(size_of::<T>() as u64) >= CHUNK_LARGE_FROM { CHUNK_BYTES_LARGE } else { CHUNK_BYTES };
    bytes / size_of::<T>() as u64
}
/// The shortest segment, in elements of `T`, that gets chunks
/// ([`SHORT_BYTES`]).
pub const fn short_len<T>() -> u64 {
    SHORT_BYTES / size_of::<T>() as u64
}
/// Short segments a warp takes in turn within one ticket.
pub const SHORT_PER_WARP: u32 = 1;

/// 16-byte loads a thread keeps in flight while it streams a chunk
/// ([`crate::segmented::chunks`]), and a lane while its warp streams a
/// short segment (a whole one of [`SHORT_BYTES`] in one round). The
/// prototype's loop (nvcc unrolled its two loads a round into eight, four
/// in flight at any time) streamed at 4.2 TB/s on the H200; against two
/// at a time, four made the library's path 1-14% faster at segments of
/// 512 and at mixed lengths; eight (at 40 registers, six blocks a
/// multiprocessor, 128 KiB chunks at 2^28) another 4-5% at mixed lengths
/// and segments of 2^20 at 2^28. Under the cap of 40 registers ptxas
/// (13.0, sm_90) issues a round's first four loads together and each
/// later one as an earlier one's data is used (the SASS, 2026-12-07), so
/// a round costs about two round trips, not one.
pub const CHUNK_LOADS: usize = 8;
/// Consecutive segments one ticket of the work kernel covers at short
/// lengths.
pub const SHORT_BATCH: u32 = CHUNKS_BLOCK / 32 * SHORT_PER_WARP;
/// Tickets a block (chunk items and short batches over the work launch's
/// grid) from which the short batches lie evenly among the items instead
/// of after them ([`super::chunks`]): their latency-bound rounds then run
/// beside blocks that stream, not at the end of the launch.
// H100, `i32` mixed lengths, spread against after, two runs each in one call (docs/tuning/segmented.md): at 2^28 (about 39 tickets a block) sums 1.01x, argmin 1.035x; at 2^24 (about 2.6) sums 0.97-0.98x, argmin 0.97-0.99x.
pub const SPREAD_FROM: u64 = 8;
/// Input bytes from which the chunked path's work launch is the build that
/// may spread the short batches (`segmented_chunks_spread`, which does so
/// from [`SPREAD_FROM`] tickets a block): 256 MiB, where the chunks grow
/// too ([`CHUNK_LARGE_FROM`]). Below it, the build without the spreading
/// code, which runs faster where there are few tickets a block.
// H100, `i32`, one call, three runs each: the spreading build with its gate closed lost 1-2.5% against main at 2^24 mixed lengths (sums 37.6-38.4 us against 36.9-37.3); at 2^28 it gained 1% for the sums and 4.5% for argmin (400 -> 382 us).
// H100, next call, two runs each: the two builds chosen here matched main at 2^24 (mixed sums 36.9-37.1 against 37.0-37.2) and the spreading build at 2^28 (argmin 382-383 against main's 400).
pub const SPREAD_LARGE_FROM: u64 = CHUNK_LARGE_FROM;
/// Whether `n` elements of `T` take the spreading build of the chunked
/// path's work launch ([`SPREAD_LARGE_FROM`]).
pub const fn spread_chunks<T>(n: u64) -> bool {
    n.saturating_mul(size_of::<T>() as u64) >= SPREAD_LARGE_FROM
}
/// Short batches that the chunked path's work launch of `grid` blocks
/// runs before its blocks wait for the plan ([`super::chunks`]: its
/// first tickets, the kernel taking no more than there are batches):
/// [`EARLY_PER_BLOCK`] a block, so that the plan's run is spent on work
/// that needs nothing of it.
pub const fn early_batches(grid: u64) -> u64 {
    grid * EARLY_PER_BLOCK
}
/// [`early_batches`] per block of the work launch.
// H100, `i32`, against none (main), two runs each in one call (docs/tuning/segmented.md, "Short batches before the wait"): mixed sums 35.0-35.3 -> 34.6-35.2 us at 2^24 and 363 -> 360 at 2^28, ranges 363-364 -> 359-360, segments of 512 at 2^24 30.6 -> 28.5-28.8; four a block the same for the sums, argmin worse (375 at 2^28).
pub const EARLY_PER_BLOCK: u64 = 1;
/// Whether CSR offsets of `segments` segments over `n` elements take the
/// chunked path: a mean segment of at least [`ROUTE_MEAN`]`[0]`
/// elements (the flat kernel below that, where warps would idle on
/// segments of a few elements), for every operator. Argmin and argmax
/// stream there as runs of `u32` offsets from the chunk's start: on the
/// H200 at 2^24 and 2^28 `i32` 1.13-1.24x the flat kernel at mixed
/// lengths and segments of 2^20, alike at segments of 512
/// (`docs/tuning/segmented.md`).
pub const fn chunked(n: u64, segments: u64) -> bool {
    segments > 0 && segments < u32::MAX as u64 && n / segments >= ROUTE_MEAN[0]
}
/// The least `n / S` at which `S` begin/end pairs take the chunked path
/// rather than the ranges kernel. H200, 2^28 `i32` sums: mixed lengths
/// (1 to 2^16, a mean near 3900) 292 us through the ranges kernel, 271
/// through the chunks as offsets; pairs of 512 259 us through the ranges
/// kernel against 277 as offsets, so the pairs of a few hundred stay
/// there; so do pairs few enough to be cut into parts
/// ([`ranges_parts`]: 16 pairs of 2^20 at 2^24, 25.6 us in parts, 31.9
/// chunked). (For pairs `n / S` is a guess at the mean: they need not
/// cover the input.)
pub const RANGES_CHUNKED_MEAN: u64 = 2048;
/// Whether `S = segments` begin/end pairs over `n` elements take the
/// chunked path ([`RANGES_CHUNKED_MEAN`]).
pub const fn ranges_chunked(n: u64, segments: u64) -> bool {
    segments > 0 && segments < u32::MAX as u64 && n / segments >= RANGES_CHUNKED_MEAN
}
/// The longest chunk, and the longest segment a warp takes alone, on the
/// chunked path (elements): the work kernel counts an element's offset
/// from its chunk's start in 32 bits.
pub const CHUNK_MAX_LEN: u64 = 1 << 30;
/// Bytes of the other half of the temporary storage that one block of
/// the plan launch zeroes, at most (the launch takes more blocks than its
/// segments need where there is more to zero). H200, 2^28 `i32` in
/// segments of 2^20 (256 segments, one block): the plan took 34 us, most
/// of it one multiprocessor zeroing 660 KB and writing 512 KB of items.
pub const PLAN_CLEAR_BYTES: u64 = 8 * 1024;
/// Chunk items of one segment that the plan's thread for it writes
/// alone; a segment of more is written by its warp together.
// Mixed lengths (1..=2^16) at 2^24 `i32`: up to 4 chunks a segment, so every lane writes its own (the warp took 32 turns).
pub const PLAN_OWN_ITEMS: u32 = 8;
/// Bytes of the chunked path's header in the temporary storage: the
/// number of chunk items, the bad segments (byte 4), the overflow word,
/// and 128 bytes on, in a line of its own, the work kernel's ticket.
pub const CHUNKS_HEADER_BYTES: usize = 256;
/// Chunk items the plan may write for `n` elements of `T` in `segments`
/// segments, with chunks of `chunk` and long segments from `short`
/// elements: each long segment has at most `len / chunk + 1`.
pub const fn chunk_items(n: u64, segments: u64, chunk: u64, short: u64) -> u64 {
    let short = if short == 0 { 1 } else { short };
    let long = if segments < n / short { segments } else { n / short };
    n / chunk + long + 1
}
/// Byte offsets in the temporary storage of the chunked path for `cap`
/// items and accumulator `A`: the items (32 bytes: the chunk's bounds,
/// its segment and the segment's first item, the segment's items), their arrival counts
/// (`u32`), their partials (`A`), and the end.
pub const fn chunks_layout<A>(cap: u64) -> [usize; 4] {
    let items = CHUNKS_HEADER_BYTES;
    let arrive = items + cap as usize * 32;
    let partials = round16(arrive + cap as usize * 4);
    [items, arrive, partials, round16(partials + cap as usize * size_of::<A>())]
}
/// Byte offset of the work kernel's slots for odd rounds (its block
/// reduction's slots alternate between two sets, so one barrier a round
/// separates a round's reads from the next round's writes).
pub const fn chunks_slots_odd<A>(b: u32) -> usize {
    let slot = if size_of::<A>() > 4 { size_of::<A>() } else { 4 };
    round16((b / 32) as usize * slot)
}
/// Byte offset of the work kernel's `u32` words after its two sets of
/// slots: the tickets of even and odd rounds, the last-chunk flag.
pub const fn chunks_words_at<A>(b: u32) -> usize {
    2 * chunks_slots_odd::<A>(b)
}
/// Dynamic shared memory (bytes) of the work kernel.
pub const fn chunks_smem_bytes<A>(b: u32) -> usize {
    chunks_words_at::<A>(b) + 16
}
