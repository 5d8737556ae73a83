//! Stream compaction: select, partition (two- and three-way) and unique,
//! in one pass over the input with the decoupled look-back
//! ([`crate::single_pass`]).
//!
//! Every family is one generic kernel, [`select_tiles`], with two traits
//! that say what varies:
//!
//! * [`Classify`]: which class each item is in (first, second, or
//!   neither): a built-in comparison against a threshold ([`Compare`],
//!   its comparison a runtime code, one branch uniform over the launch),
//!   two of them ([`CompareTwo`]), a flags array ([`Flagged`]), or "differs
//!   from the item before" ([`Differs`], for unique);
//! * [`Layout`]: where the classes go: the first class only ([`Select`]),
//!   the first class in order followed by the rest in *reverse* input
//!   order in the same output ([`Partition`], as CUB's `DevicePartition`),
//!   or three outputs each in order ([`ThreeWay`]).
//!
//! One block per tile of `B x ITEMS` items (32 four-byte items a thread,
//! 16 eight-byte ones), staged in shared memory by striped 16-byte loads;
//! no index list, so a tile is its staged items (33 KiB at 256 threads)
//! and as much of the input as possible is resident per multiprocessor:
//!
//! ```text
//! warp w, lane l: items w*32*ITEMS + l + 32 j (warp-striped) -> class masks
//! thread: (comparisons, unique) count its classes among the items it
//!         loaded, in registers -> warp sums -> after the staging barrier
//!         (warp 0 adds what needs another warp's items) thread 0
//!         publishes the tile's AGGREGATE
//! block:  exclusive scan of the counts (both classes in one u32: c1 | c2 << 16)
//!         (others: tile total -> publish AGGREGATE) -> look-back -> counts
//!         before the tile
//! warp:   column j: a vote per class -> lane l's item goes after the items
//!         of its class held by the lanes below it; a column's items of one
//!         class are one contiguous run of that class's output
//! ```
//! **Layouts that drop items** ([`Select`]: select, select flagged,
//! unique) write the kept class only; with values ([`unique_by_key`]) the
//! kept items of sparse columns queue in a small ring per warp and go out
//! 32 at a time (see `write_kept`). At 2^28 `i32` on the H200 `select_if`
//! reads 1 GiB in 306 us with nothing selected (84% of copy; 321 us with
//! the aggregate published after the block scan, 449 us with an index
//! list), and moves 85% at 50% selected. What a classification reads
//! besides the tile (the item before it for unique, the flags) goes out
//! with the tile's loads, before the staging barrier
//! ([`Classify::early`]): `select_flagged` 80% of copy at 0% selected,
//! 78% at 50%. A warp that keeps only a few items visits only the columns
//! that hold them: `unique` 77% of copy at runs of 1000 (66% walking all
//! 32 columns), 68% at runs of 8; `unique_by_key` 108% at runs of 1000
//! (`docs/tuning/select.md`).
//!
//! **Layouts that keep every item** ([`Partition`], [`ThreeWay`]) write
//! every class of a column (`write_classes`); the partition's rejected
//! items go to the end of its output, so their run of a column is written
//! downwards; a full warp's column takes the rest's vote from the
//! classes' and stores through one base and a signed offset. At 2^28
//! `i32` on the H200 the partition moves 85% of copy at 0% and 100%
//! selected, 82% at 50% (73% with a live test and a third vote a column,
//! 83% and 80% with the aggregate published after the block scan), the
//! three-way one 69% (59%).
//! The tile's aggregate is the count of its first-class items (`u64`, so
//! more than 2^32 items work), or a pair of counts for three-way. The
//! last tile writes the total count(s) to `count`.
//!
//! By key ([`unique_by_key`]): tiles are cut by the keys; each kept key's
//! value is read from global memory at its index (the indices increase
//! along a row of the ring, so a warp's reads are nearly contiguous) and
//! written beside its key.
//!
//! **Order.** Selected items keep their input order; so does each class of
//! the three-way partition. The rejected items of [`Partition`] are in
//! reverse input order at the end of the output: the item with the `r`-th
//! rejected index (from 0) goes to `out[n - 1 - r]`.
//!
//! **Floats** compare as IEEE numbers: a NaN is never equal to anything, so
//! `Less`, `Equal`, ... are false for it and `NotEqual` is true, and in
//! [`Differs`] (unique) every NaN starts a new run; `-0.0 == 0.0`.

pub mod policy;

use crate::block::WARP_SLOTS;
use crate::block::scan::exclusive_scan;
use crate::block::tile::{first_items, pad_every, prefetch_tile, stage_tile_loaded, tile_slots, vec_width};
use crate::gpu::{self, Shared, global};
use crate::ops::{BitOr, Element, Item, Monoid, Sum};
use crate::single_pass::{
    LookBackSmem, TileStatus, clear_words, exclusive_prefix, from_words, look_back_smem_bytes, publish_aggregate,
};
use crate::warp;
use core::mem::size_of;

/// Comparison codes of [`Compare`]: `x < t`.
pub const LESS: u32 = 0;
/// `x <= t`.
pub const LESS_EQUAL: u32 = 1;
/// `x > t`.
pub const GREATER: u32 = 2;
/// `x >= t`.
pub const GREATER_EQUAL: u32 = 3;
/// `x == t`.
pub const EQUAL: u32 = 4;
/// `x != t`.
pub const NOT_EQUAL: u32 = 5;

/// Which class each of a thread's items is in.
pub trait Classify<T: Item>: Copy {
    /// What the classification needs from global memory besides the tile
    /// (`()` where nothing).
    type Early: Copy + Default;

    /// Bit `j` of the first mask: this thread's item `j`, tile element
    /// `first + 32 j` of the staged tile (which starts at input index
    /// `start`; warp-striped, `first` the lane's element of its warp's
    /// first column), is in the first class; of the second mask: in the
    /// second. Bits at and above `valid` (items past the input's end) are
    /// ignored by the caller, and the second mask is only read where the
    /// first has no bit.
    ///
    /// `early` is what [`Classify::early`] returned in this thread.
    ///
    /// # Safety
    /// After the tile's staging barrier; `tile` is the staged tile.
    unsafe fn classify<const ITEMS: usize>(
        &self,
        tile: Shared<T>,
        early: Self::Early,
        start: u64,
        first: u32,
        valid: u32,
    ) -> (u32, u32);

    /// Loads [`Classify::Early`] for the tile starting at input index
    /// `start`, or asks L2 for it; called by every thread as the tile's
    /// loads go out, before the staging barrier, so that the load's
    /// latency is hidden behind the tile's instead of standing between
    /// the barrier and the look-back (where a tile's chain waits on it).
    ///
    /// Nothing, unless the classification reads more than the tile.
    ///
    /// # Safety
    /// The tile starts below the input's length `n`.
    #[inline(always)]
    unsafe fn early<const B: u32, const ITEMS: usize>(&self, _start: u64, _n: u64) -> Self::Early {
        Self::Early::default()
    }

    /// The counts of the items this thread loaded of a whole tile
    /// (`items`, as [`stage_tile_loaded`] hands them back), packed as the
    /// block scan's (first class in the low 16 bits, second in the high),
    /// summed over the block the same numbers [`Classify::classify`]
    /// gives; `None` where the classification does not count them so (the
    /// same in every thread of a block). Counted, the tile's aggregate is
    /// published right after the staging barrier, before the tile is
    /// classified and scanned, as the look-back scan publishes its early
    /// aggregate. H200, 2^28 `i32`, against the aggregate published after
    /// the block scan in the same call: `select_if` 1.03-1.05x (0%
    /// selected 320 -> 306 us, 80.7% -> 84.4% of copy; 1.05-1.09x at 2^24),
    /// `partition_if` 1.02-1.03x, the three-way partition 1.00-1.02x (56
    /// registers instead of 48, four blocks a multiprocessor instead of
    /// five); `unique` 1.01-1.02x (1.03-1.04x at 2^24), `unique_by_key`
    /// 1.02-1.03x but 0.99x at runs of 1. Not the flags: see [`Flagged`].
    /// See `docs/tuning/select.md`.
    ///
    /// # Safety
    /// Before the staging barrier, in every thread; `early` is what
    /// [`Classify::early`] returned for the tile at `start`.
    #[inline(always)]
    unsafe fn count_loaded<const B: u32, const N: usize>(
        &self,
        _items: &[T; N],
        _early: &Self::Early,
        _start: u64,
    ) -> Option<u32> {
        None
    }

    /// Whether [`Classify::count_fixup`] adds to the counts of
    /// [`Classify::count_loaded`].
    const FIXUP: bool = false;

    /// What [`Classify::count_loaded`] left out, counted from the staged
    /// tile by warp 0 (this lane's share; the warp sums them) before
    /// thread 0 publishes the tile's aggregate; packed as there.
    ///
    /// # Safety
    /// After the staging barrier of a whole tile that `count_loaded`
    /// counted; `tile` is the staged tile, `early` as there.
    #[inline(always)]
    unsafe fn count_fixup<const B: u32, const ITEMS: usize>(
        &self,
        _tile: Shared<T>,
        _early: &Self::Early,
        _start: u64,
    ) -> u32 {
        0
    }
}

/// Where the classes go.
pub trait Layout: Copy {
    /// The tile aggregate: the count of first-class items, or both counts.
    type Agg: Item;
    /// How aggregates combine (addition).
    type AggOp: Monoid<Self::Agg>;
    /// Classes counted: 1 or 2.
    const WAYS: u32;
    /// Where items in neither class go.
    const REST: Rest;
    /// The aggregate of a tile whose block total is `packed` (first-class
    /// count in the low 16 bits, second-class in the high).
    fn agg(packed: u32) -> Self::Agg;
    /// The counts of an aggregate: (first class, second class).
    fn split(a: Self::Agg) -> (u64, u64);
}

/// Where the items in neither class go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rest {
    /// Nowhere.
    Drop,
    /// To the end of the first output, in reverse input order.
    Reversed,
    /// To the third output, in input order.
    Own,
}

/// Select: the first class, in order, to the first output.
#[derive(Clone, Copy)]
pub struct Select;
/// Partition: the first class in order, then the rest in reverse order, in
/// the first output.
#[derive(Clone, Copy)]
pub struct Partition;
/// Three-way partition: the first class, the second and the rest, each in
/// order, to three outputs.
#[derive(Clone, Copy)]
pub struct ThreeWay;

/// Sum of pairs of counts (three-way aggregates).
#[derive(Clone, Copy, Debug, Default)]
pub struct PairSum;

impl Monoid<(u64, u64)> for PairSum {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> (u64, u64) {
        (0, 0)
    }
    #[inline(always)]
    fn combine(a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0.wrapping_add(b.0), a.1.wrapping_add(b.1))
    }
}

impl Layout for Select {
    type Agg = u64;
    type AggOp = Sum;
    const WAYS: u32 = 1;
    const REST: Rest = Rest::Drop;
    #[inline(always)]
    fn agg(packed: u32) -> u64 {
        (packed & 0xFFFF) as u64
    }
    #[inline(always)]
    fn split(a: u64) -> (u64, u64) {
        (a, 0)
    }
}

impl Layout for Partition {
    type Agg = u64;
    type AggOp = Sum;
    const WAYS: u32 = 1;
    const REST: Rest = Rest::Reversed;
    #[inline(always)]
    fn agg(packed: u32) -> u64 {
        (packed & 0xFFFF) as u64
    }
    #[inline(always)]
    fn split(a: u64) -> (u64, u64) {
        (a, 0)
    }
}

impl Layout for ThreeWay {
    type Agg = (u64, u64);
    type AggOp = PairSum;
    const WAYS: u32 = 2;
    const REST: Rest = Rest::Own;
    #[inline(always)]
    fn agg(packed: u32) -> (u64, u64) {
        ((packed & 0xFFFF) as u64, (packed >> 16) as u64)
    }
    #[inline(always)]
    fn split(a: (u64, u64)) -> (u64, u64) {
        a
    }
}

/// Bit `j` set where `f(items[j])`.
#[inline(always)]
fn mask_of<T: Copy, const ITEMS: usize>(items: &[T; ITEMS], f: impl Fn(T) -> bool) -> u32 {
    let mut m = 0u32;
    for (j, &x) in items.iter().enumerate() {
        m |= (f(x) as u32) << j;
    }
    m
}

/// `x <op> threshold` for a runtime comparison code (see [`LESS`] ..
/// [`NOT_EQUAL`]; an unknown code selects nothing).
#[derive(Clone, Copy)]
pub struct Compare<T> {
    pub code: u32,
    pub threshold: T,
}

impl<T: Element> Compare<T> {
    /// The mask of `items` that satisfy the comparison. The match is on a
    /// launch-wide value, so every thread takes the same arm: one uniform
    /// branch, and a loop without branches in each arm.
    #[inline(always)]
    fn mask<const ITEMS: usize>(&self, items: &[T; ITEMS]) -> u32 {
        let t = self.threshold;
        match self.code {
            LESS => mask_of(items, |x| x < t),
            LESS_EQUAL => mask_of(items, |x| x <= t),
            GREATER => mask_of(items, |x| x > t),
            GREATER_EQUAL => mask_of(items, |x| x >= t),
            EQUAL => mask_of(items, |x| x == t),
            NOT_EQUAL => mask_of(items, |x| x != t),
            _ => 0,
        }
    }
}

impl<T: Element> Classify<T> for Compare<T> {
    type Early = ();

    #[inline(always)]
    unsafe fn count_loaded<const B: u32, const N: usize>(&self, items: &[T; N], _: &(), _: u64) -> Option<u32> {
        Some(self.mask(items).count_ones())
    }

    #[inline(always)]
    unsafe fn classify<const ITEMS: usize>(
        &self,
        tile: Shared<T>,
        _early: (),
        _start: u64,
        first: u32,
        _valid: u32,
    ) -> (u32, u32) {
        // SAFETY: after the staging barrier (caller).
        let items = unsafe { items_at::<T, ITEMS>(tile, first) };
        (self.mask(&items), 0)
    }
}

/// Two comparisons: the first class satisfies `first`, the second
/// satisfies `second` but not `first`.
#[derive(Clone, Copy)]
pub struct CompareTwo<T> {
    pub first: Compare<T>,
    pub second: Compare<T>,
}

impl<T: Element> Classify<T> for CompareTwo<T> {
    type Early = ();

    #[inline(always)]
    unsafe fn count_loaded<const B: u32, const N: usize>(&self, items: &[T; N], _: &(), _: u64) -> Option<u32> {
        let c1 = self.first.mask(items);
        let c2 = self.second.mask(items) & !c1;
        Some(c1.count_ones() | c2.count_ones() << 16)
    }

    #[inline(always)]
    unsafe fn classify<const ITEMS: usize>(
        &self,
        tile: Shared<T>,
        _early: (),
        _start: u64,
        first: u32,
        _valid: u32,
    ) -> (u32, u32) {
        // SAFETY: after the staging barrier (caller).
        let items = unsafe { items_at::<T, ITEMS>(tile, first) };
        (self.first.mask(&items), self.second.mask(&items))
    }
}

/// The first class: items whose byte in `flags` (one per input item) is
/// not zero.
#[derive(Clone, Copy)]
pub struct Flagged {
    pub flags: *const u8,
}

impl<T: Item> Classify<T> for Flagged {
    type Early = ();

    /// Asks L2 for the tile's flags (a 128-byte line a thread), so that
    /// the byte loads after the staging barrier find them there: H200,
    /// `select_flagged` 1.04-1.07x at 0% and 50% selected (2^28 `i32` 0%
    /// 418 -> 399 us, 50% 605 -> 570), 1.01x at 100%
    /// (`docs/tuning/select.md`). The flags are not counted before the
    /// staging barrier ([`Classify::count_loaded`]): loaded 16 bytes at a
    /// time for that, 2^28 `i32` 0% selected took 433 us against 399
    /// (loaded before the tile's items, 447).
    #[inline(always)]
    unsafe fn early<const B: u32, const ITEMS: usize>(&self, start: u64, n: u64) {
        // SAFETY: the tile's flags below n lie inside `flags`.
        unsafe { prefetch_tile::<u8, B, ITEMS>(self.flags, n, start) }
    }

    #[inline(always)]
    unsafe fn classify<const ITEMS: usize>(
        &self,
        _tile: Shared<T>,
        _early: (),
        start: u64,
        first: u32,
        valid: u32,
    ) -> (u32, u32) {
        let p = self.flags.wrapping_add((start + first as u64) as usize);
        let mut m = 0u32;
        // A warp's whole run of 32 * ITEMS flags, 4-byte aligned: loaded
        // as words (ITEMS / 4 a lane, each load 128 bytes of the warp's),
        // each lane's byte of a row of 32 then taken from the lane holding
        // it by a shuffle: row j's bytes are words 8j..8j + 8, word
        // w = l + 32r in lane l's r-th load. H100, 2^28 `i32`, against a
        // byte load an item: 0% selected 514 -> 454 us (87% -> 98.6% of
        // copy), 50% 710 -> 634, 100% 962 -> 801 (83% -> 99.6%); 2^24
        // 1.09-1.13x (`docs/tuning/select.md`). Partial tiles, and flags
        // not 4-byte aligned (a view at an odd offset), load bytes.
        let lane = gpu::lane();
        let base = p.wrapping_sub(lane as usize);
        let whole = ITEMS.is_multiple_of(4)
            && ITEMS <= 32
            && (base as usize).is_multiple_of(4)
            && gpu::warp::ballot(valid == ITEMS as u32) == u32::MAX;
        if whole {
            let words = base as *const u32;
            let shift = 8 * (lane % 4);
            unrolled!(ITEMS / 4, |r| {
                // SAFETY: the warp's 32 * ITEMS flags lie inside `flags`
                // (every lane's ITEMS items are valid).
                let w = unsafe { global::load(words.add(lane as usize + 32 * r)) };
                unrolled!(4, |q| {
                    let v = gpu::warp::shfl_idx(w, 8 * q as u32 + lane / 4);
                    m |= (((v >> shift) & 0xff != 0) as u32).wrapping_shl((4 * r + q) as u32);
                });
            });
            return (m, 0);
        }
        // SAFETY (loads): the flags of a thread's `valid` items lie inside
        // `flags`, which holds one byte per input item.
        // Warp-striped: a warp reads 32 consecutive bytes per item.
        for j in 0..ITEMS {
            if (j as u32) < valid {
                m |= ((unsafe { global::load(p.add(32 * j)) } != 0) as u32) << j;
            }
        }
        (m, 0)
    }
}

/// The first class: the first item of the input and every item that
/// differs (`!=`) from the one before it. The item before a tile comes
/// from global memory (`input`, the tiles' own input).
#[derive(Clone, Copy)]
pub struct Differs<T> {
    pub input: *const T,
}

impl<T: Element> Classify<T> for Differs<T> {
    /// The item before the tile, in warp 0 (zero elsewhere and for the
    /// first tile, where it is not read). Loaded after the ticket, with
    /// the tile, rather than by one lane after the staging barrier.
    type Early = T;

    #[inline(always)]
    unsafe fn early<const B: u32, const ITEMS: usize>(&self, start: u64, _n: u64) -> T {
        // SAFETY: start - 1 lies inside the input. Warp 0's lanes read
        // the same element: one request.
        if gpu::warp_idx() == 0 && start > 0 {
            unsafe { global::load(self.input.add(start as usize - 1)) }
        } else {
            T::ZERO
        }
    }

    /// The items that differ from the one before them, but for each warp's
    /// lane 0's chunks' first items (whose items before were loaded by
    /// another warp, or come before the tile; [`Classify::count_fixup`]
    /// counts those): in a chunk, from the chunk's item before; for a
    /// chunk's first item, from the lane before's chunk (a shuffle).
    #[inline(always)]
    unsafe fn count_loaded<const B: u32, const N: usize>(&self, items: &[T; N], _: &T, _: u64) -> Option<u32> {
        let v = vec_width::<T>(N);
        let lane0 = gpu::lane() == 0;
        let mut c = 0u32;
        for k in 0..N / v {
            let up = gpu::warp::shfl_up(items[k * v + v - 1], 1);
            c += (!lane0 && items[k * v] != up) as u32;
            for j in 1..v {
                c += (items[k * v + j] != items[k * v + j - 1]) as u32;
            }
        }
        Some(c)
    }

    const FIXUP: bool = true;

    /// The first items of each warp's lane 0's chunks (tile element
    /// `(k B + 32 w) v` for chunk `k` of warp `w`), against the item before
    /// each in the staged tile, or `early` before the tile; the input's
    /// first item starts a run. Two of them a lane at 256 threads.
    #[inline(always)]
    unsafe fn count_fixup<const B: u32, const ITEMS: usize>(&self, tile: Shared<T>, early: &T, start: u64) -> u32 {
        let v = vec_width::<T>(ITEMS) as u32;
        let chunks = ITEMS as u32 / v;
        let mut c = 0u32;
        let mut p = gpu::lane();
        while p < (B / 32) * chunks {
            let (w, k) = (p / chunks, p % chunks);
            let e = ((k * B + 32 * w) * v) as usize;
            // SAFETY: after the staging barrier (caller); e and e - 1 lie
            // inside the whole tile.
            let x = unsafe { tile.load(slot::<T, ITEMS>(e)) };
            let starts =
                if e == 0 { start == 0 || x != *early } else { x != unsafe { tile.load(slot::<T, ITEMS>(e - 1)) } };
            c += starts as u32;
            p += 32;
        }
        c
    }

    #[inline(always)]
    unsafe fn classify<const ITEMS: usize>(
        &self,
        tile: Shared<T>,
        early: T,
        start: u64,
        first: u32,
        _valid: u32,
    ) -> (u32, u32) {
        // Item j's predecessor is tile element first + 32 j - 1: the
        // lane before in the same column, or for lane 0 lane 31's item
        // of the column before, or the item before the warp's first
        // (the warp before's last, or before the tile: `early`). The
        // tile's very first item starts a run.
        let lane = gpu::lane();
        let opens = start == 0 && first == 0;
        let mut m = 0u32;
        if size_of::<T>() <= 4 {
            // One shuffle an item: lane l reads lane l - 1 (lane 0 reads
            // lane 31), and lane 31 offers its item of the column before
            // (for column 0, the item before its warp's first), so lane 0
            // gets its predecessor from the same shuffle. Against two
            // shared loads and a shuffle an item: H200 `unique` 1.02-1.04x
            // (2^28 `i32` runs of 1000 407 -> 394 us, `docs/tuning/select.md`).
            let from = (lane + 31) & 31;
            // SAFETY (shared loads): after the staging barrier (caller);
            // the indices lie inside the tile (first - 31 is the warp's
            // first element, so its element before is a tile element for
            // warps after the first).
            let mut before_warp = early;
            if lane == 31 && first > 31 {
                before_warp = unsafe { tile.load(slot::<T, ITEMS>(first as usize - 32)) };
            }
            let mut prev = before_warp;
            // Written out: as a loop LLVM unrolled it by 4 only (each
            // shuffle then waited on its column's load: `unique` 14-16%
            // slower on the H200).
            let mut step = |j: usize| {
                let x = unsafe { tile.load(striped_slot::<T, ITEMS>(first, j)) };
                let offered = if lane == 31 { prev } else { x };
                let b = gpu::warp::shfl_idx(offered, from);
                prev = x;
                let starts = x != b || (j == 0 && opens);
                m |= (starts as u32) << j;
            };
            const { assert!(ITEMS <= 32) };
            unrolled!(16, |h| if h < ITEMS {
                step(h)
            });
            unrolled!(16, |h| if h + 16 < ITEMS {
                step(h + 16)
            });
        } else {
            // 8-byte keys: the predecessor read from shared memory (a
            // shuffle measured slower: `unique_by_key` runs of 1000 at
            // 2^28, 854 -> 934 us).
            for j in 0..ITEMS {
                // SAFETY: as above.
                let x = unsafe { tile.load(striped_slot::<T, ITEMS>(first, j)) };
                let b = if first > 0 {
                    unsafe { tile.load(striped_slot::<T, ITEMS>(first - 1, j)) }
                } else if j > 0 {
                    // The tile's first lane: lane 31's item of the column before.
                    unsafe { tile.load(striped_slot::<T, ITEMS>(31, j - 1)) }
                } else {
                    early
                };
                let starts = x != b || (j == 0 && opens);
                m |= (starts as u32) << j;
            }
        }
        (m, 0)
    }
}

/// The shared-memory slot of tile element `i` (the tile's padding, see
/// [`crate::block::tile::pad_every`]).
#[inline(always)]
fn slot<T, const ITEMS: usize>(i: usize) -> usize {
    i + i / pad_every::<T>(ITEMS)
}

/// The shared slot of tile element `first + 32 j`: item `j` of a lane
/// whose first item is tile element `first`, in a warp-striped
/// arrangement. Where the padding's period divides 32 (every 4- and
/// 8-byte policy), `(first + 32 j) / every` is `first / every + 32 j /
/// every`, so a lane's slots are one base plus constants.
#[inline(always)]
fn striped_slot<T, const ITEMS: usize>(first: u32, j: usize) -> usize {
    let every = pad_every::<T>(ITEMS);
    if 32 % every == 0 {
        (first + first / every as u32) as usize + j * (32 + 32 / every)
    } else {
        slot::<T, ITEMS>(first as usize + 32 * j)
    }
}

/// A thread's `ITEMS` items of the staged tile, warp-striped: tile
/// elements `first + 32 j`.
///
/// # Safety
/// After the staging barrier; the elements lie inside the tile.
#[inline(always)]
unsafe fn items_at<T: Element, const ITEMS: usize>(tile: Shared<T>, first: u32) -> [T; ITEMS] {
    // SAFETY: the caller's contract.
    core::array::from_fn(|j| unsafe { tile.load(striped_slot::<T, ITEMS>(first, j)) })
}

const fn round16(b: usize) -> usize {
    b.div_ceil(16) * 16
}

/// Slots of a warp's ring of kept items' indices where items are dropped:
/// two output rows of 32.
const RING: usize = 64;

/// Byte offsets in shared memory of (the rings, the block scan's warp
/// slots, the look-back's storage, the end) for tiles of `b x items`
/// elements of `T` and aggregates of `A`. The rings (of [`RING`] indices
/// per warp) are only there where the layout drops items (`drops`).
const fn smem_layout<T, A>(b: u32, items: usize, drops: bool) -> [usize; 4] {
    let idx = round16(tile_slots::<T>(b, items) * size_of::<T>());
    let indices = if drops { b as usize / 32 * RING } else { 0 };
    let warps = idx + round16(indices * size_of::<u16>());
    let look = warps + round16(WARP_SLOTS * 4);
    [idx, warps, look, look + round16(look_back_smem_bytes::<A>())]
}

/// Dynamic shared memory (bytes) of a select kernel at block size `b` with
/// tiles cut by `T` (the keys of `unique_by_key`): the staged tile, the
/// block scan's warp slots and the look-back's storage, and where the
/// layout drops items a ring per warp. Sized for the largest aggregate
/// (the three-way pair of counts) where items are kept (`drops` false: the
/// partitions), a count where they are dropped.
pub const fn smem_bytes<T>(b: u32, drops: bool) -> usize {
    if drops {
        smem_layout::<T, u64>(b, policy::items::<T>(), true)[3]
    } else {
        smem_layout::<T, (u64, u64)>(b, policy::items::<T>(), false)[3]
    }
}

/// Bytes of single-pass status for `tiles` tiles: the ticket and, per
/// tile, the status words of a count (`ways` = 1) or a pair of counts
/// (`ways` = 2).
pub const fn status_bytes(ways: u32, tiles: u64) -> u64 {
    if ways == 2 {
        crate::single_pass::status_bytes::<(u64, u64)>(tiles)
    } else {
        crate::single_pass::status_bytes::<u64>(tiles)
    }
}

/// The shared memory of [`select_tiles`], carved.
struct SelectSmem<T, A> {
    tile: Shared<T>,
    /// Where items are dropped, each warp's ring of [`RING`] tile indices
    /// of kept items (tiles are shorter than 2^16); empty otherwise.
    idx: Shared<u16>,
    warps: Shared<u32>,
    look: LookBackSmem<A>,
}

impl<T: Item, A: Item> SelectSmem<T, A> {
    #[inline(always)]
    fn carve<const B: u32, const ITEMS: usize>(drops: bool) -> Self {
        let [idx, warps, look, _] = smem_layout::<T, A>(B, ITEMS, drops);
        let base = Shared::<u8>::dynamic();
        SelectSmem {
            tile: base.after::<T>(0),
            idx: base.after::<u16>(idx),
            warps: base.after::<u32>(warps),
            look: LookBackSmem::carve(base.after::<A>(look)),
        }
    }
}

/// The output pointers of one launch: the first class, the second, the
/// rest (null where the layout has no such output), and for
/// [`unique_by_key`] the values and their output (`V = ()` without).
#[derive(Clone, Copy)]
pub struct Outputs<T, V> {
    pub first: *mut T,
    pub second: *mut T,
    pub rest: *mut T,
    pub values: *const V,
    pub values_out: *mut V,
}

/// The stream-compaction kernel: one tile of `B x ITEMS` items per block,
/// single pass with decoupled look-back; see the [module docs](self).
/// `count` receives, from the last tile, the number of first-class items
/// (and for [`ThreeWay`] the number of second-class ones after it).
///
/// Shared memory: [`smem_bytes`]`::<T>(B)`; `temp`: the zeroed status of
/// `ceil(n / (B * ITEMS))` tiles ([`status_bytes`]`(L::WAYS, tiles)`);
/// `spare`/`spare_words`: the other half of double-buffered status storage,
/// zeroed here for the next launch.
///
/// # Safety
/// `input` holds `n > 0` items; each output holds `n` items (the first and
/// rest outputs where the layout writes them, the second for
/// [`ThreeWay`]; `values` and `values_out` `n` values when `V` is not
/// `()`); `count` holds `L::WAYS` words; one block per tile; `temp` and
/// `spare` as above and disjoint.
#[inline(always)]
pub unsafe fn select_tiles<T: Element, V: Copy, C: Classify<T>, L: Layout, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    classify: C,
    out: Outputs<T, V>,
    count: *mut u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    const {
        assert!(ITEMS <= 32, "one mask bit per item");
        assert!(B as usize * ITEMS < 1 << 16, "tile counts travel in 16 bits");
        assert!(B.is_multiple_of(32), "whole warps");
        assert!(!matches!(L::REST, Rest::Drop) || L::WAYS == 1, "a layout that drops items keeps one class");
    };
    // SAFETY: the caller's contract on `spare`.
    unsafe { clear_words::<B>(spare, spare_words) };
    let tid = gpu::thread_idx();
    let drops = L::REST == Rest::Drop;
    let tile_len = B as u64 * ITEMS as u64;
    let status = TileStatus::<L::Agg>::new(temp);
    let smem = SelectSmem::<T, L::Agg>::carve::<B, ITEMS>(drops);
    // SAFETY (shared accesses): inside the carved regions; (global) the
    // tile overlaps 0..n, outputs are written below their length (see each
    // store); (status) tiles below the tile count, each (tile, flag)
    // published once, by thread 0.
    if policy::prefetch(drops, size_of::<V>() > 0) {
        unsafe { prefetch_tile::<T, B, ITEMS>(input, n, gpu::block_idx() as u64 * tile_len) };
    }
    let tile = unsafe { status.take_ticket(smem.look.ticket) };
    let start = tile as u64 * tile_len;
    let m = if n - start < tile_len { (n - start) as u32 } else { tile_len as u32 };
    // Padding past the input's end is never classified (the masks stop at
    // `valid`); `Sum` only names the fill value.
    let loaded = unsafe { stage_tile_loaded::<T, Sum, B, ITEMS>(input, n, start, smem.tile) };
    let early = unsafe { classify.early::<B, ITEMS>(start, n) };
    // Where the classification needs only the items, the tile's aggregate
    // is counted from the loaded registers (a warp sum, then one slot per
    // warp: the look-back's slots, unused until after the block scan's
    // barrier) and published by thread 0 right after the staging barrier,
    // before the tile is classified and scanned: successors waiting on
    // this tile see its AGGREGATE sooner. (The input's partial last tile,
    // which no tile waits on, and the tiles of an input not aligned for
    // vector loads publish after their block scan.)
    let mine = loaded.and_then(|l| unsafe { classify.count_loaded::<B, ITEMS>(&l, &early, start) });
    let counted = mine.is_some();
    if let Some(mine) = mine {
        let warp_total = warp::reduce_all::<u32, Sum>(mine);
        if gpu::lane() == 0 {
            unsafe { smem.look.slots.store(gpu::warp_idx() as usize, L::agg(warp_total)) };
        }
    }
    gpu::sync_threads();
    let fixup = if C::FIXUP && counted && gpu::warp_idx() == 0 {
        let mine = unsafe { classify.count_fixup::<B, ITEMS>(smem.tile, &early, start) };
        warp::reduce_all::<u32, Sum>(mine)
    } else {
        0
    };
    let early_total = if counted && tid == 0 {
        let mut total = L::agg(fixup);
        for k in 0..(B / 32) as usize {
            total = L::AggOp::combine(total, unsafe { smem.look.slots.load(k) });
        }
        unsafe { publish_aggregate(&status, tile, total) };
        total
    } else {
        L::AggOp::identity()
    };

    // A thread's items, warp-striped: lane `l` of warp `w` has tile
    // elements `w * 32 * ITEMS + l + 32 j`, so a warp's items of one class
    // in one column go out as one contiguous run.
    let first = gpu::warp_idx() * 32 * ITEMS as u32 + gpu::lane();
    let valid = if first >= m { 0 } else { Ord::min((m - first).div_ceil(32), ITEMS as u32) };
    let keep = first_items(valid);
    let (c1, c2) = unsafe { classify.classify::<ITEMS>(smem.tile, early, start, first, valid) };
    let c1 = c1 & keep;
    let c2 = if L::WAYS == 2 { c2 & keep & !c1 } else { 0 };
    let (before_me, total) = exclusive_scan::<u32, Sum, B>(c1.count_ones() | c2.count_ones() << 16, smem.warps);
    // The total this tile published (only thread 0's copy is used).
    let aggregate = if counted { early_total } else { L::agg(total) };
    if !counted {
        unsafe { publish_aggregate(&status, tile, aggregate) };
    }
    let prefix = unsafe {
        exclusive_prefix::<L::Agg, L::AggOp, B, { policy::LOOK_BACK_DELAY_NS }, { policy::LOOK_BACK_POLL_NS }>(
            &status, tile, aggregate, &smem.look,
        )
    };
    let (s1, s2) = (total & 0xFFFF, total >> 16);
    let (b1, b2) = L::split(prefix);

    if drops {
        unsafe { write_kept::<T, V, ITEMS>(smem.tile, smem.idx, out, start, first, c1, b1, before_me & 0xFFFF) };
    } else {
        let at = Place { n, start, m, first, valid, before: before_me, b1, b2 };
        unsafe { write_classes::<T, V, L, ITEMS>(smem.tile, out, at, c1, c2) };
    }
    if tid == 0 && tile == gpu::grid_dim() - 1 {
        unsafe { global::store(count, b1 + s1 as u64) };
        if L::WAYS == 2 {
            unsafe { global::store(count.add(1), b2 + s2 as u64) };
        }
    }
}

/// Where a thread's items of a tile go: the input's length, the tile's
/// first index and length, the thread's first tile element (warp-striped)
/// and its number of valid items, its counts before it in the tile
/// (first class in the low 16 bits, second in the high), and the counts
/// of both classes before the tile.
#[derive(Clone, Copy)]
struct Place {
    n: u64,
    start: u64,
    m: u32,
    first: u32,
    valid: u32,
    before: u32,
    b1: u64,
    b2: u64,
}

/// Writes every item of a warp (warp-striped: lane `l` has tile elements
/// `first + 32 j`) to its class's output: first class (bit `j` of `c1`),
/// second (`c2`), or the rest, reversed at the end of the first output
/// ([`Rest::Reversed`]) or in order to the third ([`Rest::Own`]).
///
/// Column by column, each class's items of a column are one contiguous
/// run of its output (a vote says which lanes hold them; lane `l`'s goes
/// after those of the lanes below it), so every store of a column is
/// coalesced without reordering the tile in shared memory, and the tile
/// needs no index list.
///
/// # Safety
/// After the tile's staging barrier and the block scan's; the outputs
/// hold `n` items where the layout writes them.
#[inline(always)]
unsafe fn write_classes<T: Element, V: Copy, L: Layout, const ITEMS: usize>(
    tile: Shared<T>,
    out: Outputs<T, V>,
    at: Place,
    c1: u32,
    c2: u32,
) {
    let lane = gpu::lane();
    let below = first_items(lane);
    // Counts before the warp in the tile: lane 0's (the block scan runs in
    // thread order, and every item of the warps before comes first).
    let w1 = gpu::warp::shfl_idx(at.before & 0xFFFF, 0);
    let w2 = gpu::warp::shfl_idx(at.before >> 16, 0);
    let warp_first = gpu::warp_idx() * 32 * ITEMS as u32;
    // Each class's output from the warp's first item of it on (64-bit
    // pointers once; 32-bit counts of the columns done after that: fewer
    // instructions a column than 64-bit indices, which left the kernel
    // issue-bound). The rest's rank before the warp: the items of neither
    // class before the tile and before the warp in it.
    let rank3 = (at.start - at.b1 - at.b2) + (Ord::min(warp_first, at.m) - w1 - w2) as u64;
    // SAFETY (pointers): offsets inside each output (the caller's
    // contract); for the reversed rest, `n - 1 - rank3` and below.
    let o1 = unsafe { out.first.add((at.b1 + w1 as u64) as usize) };
    let o2 = if L::WAYS == 2 { unsafe { out.second.add((at.b2 + w2 as u64) as usize) } } else { o1 };
    let o3 = match L::REST {
        Rest::Reversed => out.first.wrapping_add((at.n - 1 - rank3) as usize),
        _ => out.rest.wrapping_add(rank3 as usize),
    };
    let (mut d1, mut d2, mut d3) = (0u32, 0u32, 0u32);
    // One column; `full`: every lane's item `j` is valid (then the rest's
    // vote follows from the classes', and no lane skips its store).
    let mut column = |j: u32, full: bool| {
        let live = full || j < at.valid;
        let in1 = (c1 >> j) & 1 != 0;
        let in2 = L::WAYS == 2 && (c2 >> j) & 1 != 0;
        let in3 = live && !in1 && !in2;
        let v1 = gpu::warp::ballot(in1);
        let v2 = if L::WAYS == 2 { gpu::warp::ballot(in2) } else { 0 };
        let v3 = if full { !(v1 | v2) } else { gpu::warp::ballot(in3) };
        if live {
            // One base and one signed offset: the class's output and the
            // item's place in it (downwards for the reversed rest).
            let (base, idx) = if in1 {
                (o1, d1 + (v1 & below).count_ones())
            } else if in2 {
                (o2, d2 + (v2 & below).count_ones())
            } else {
                (o3, d3 + (v3 & below).count_ones())
            };
            let off = if !in1 && !in2 && L::REST == Rest::Reversed { -(idx as isize) } else { idx as isize };
            // SAFETY: a tile element inside the tile; each class's slot
            // inside its output (above).
            unsafe {
                global::store(base.wrapping_offset(off), tile.load(striped_slot::<T, ITEMS>(at.first, j as usize)))
            };
        }
        d1 += v1.count_ones();
        d2 += v2.count_ones();
        d3 += v3.count_ones();
    };
    // Every warp of a full tile is full: the loop without the checks.
    if gpu::warp::ballot(at.valid as usize >= ITEMS) == u32::MAX {
        for j in 0..ITEMS as u32 {
            column(j, true);
        }
    } else {
        for j in 0..ITEMS as u32 {
            column(j, false);
        }
    }
}

/// Writes a warp's kept items (warp-striped: lane `l` has tile elements
/// `first + 32 j`, kept where bit `j` of `kept` is set) to the output
/// from `b1` (the tile's) + `before` (this thread's count before it in the
/// tile, so lane 0's is its warp's).
///
/// A column's kept items are contiguous in the output: lane `l`'s after
/// those of the lanes below it (a vote). A warp that keeps at most
/// `ITEMS / 4` items visits only the columns that hold them and writes
/// them straight out, with their values if any. Otherwise, without
/// values, each column goes straight out. With values (`unique_by_key`),
/// a whole column with nothing waiting goes straight out, and otherwise
/// the kept items' tile indices queue in the warp's ring and every 32 of
/// them go out as one row, keys and values: at runs of 8, columns written
/// one by one made most key and value stores a few elements wide (H200,
/// 2^28 `u64` keys: 1340 us, against 1053 us through the ring). Without
/// values the ring was slower everywhere (`select_if` 50%: 487 -> 586 us,
/// `unique` runs of 8: 466 -> 518 us): `docs/tuning/select.md`.
///
/// # Safety
/// After the tile's staging barrier and the block scan's (which ends
/// every read of another warp's items); `ring` is this block's rings
/// ([`RING`] slots per warp); the output (and for `V` not `()` the values
/// and their output) hold the kept items' positions.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn write_kept<T: Element, V: Copy, const ITEMS: usize>(
    tile: Shared<T>,
    ring: Shared<u16>,
    out: Outputs<T, V>,
    start: u64,
    first: u32,
    kept: u32,
    b1: u64,
    before: u32,
) {
    let lane = gpu::lane();
    let warp_first = gpu::warp::shfl_idx(before, 0);
    let warp_end = gpu::warp::shfl_idx(before + kept.count_ones(), 31);
    if warp_end == warp_first {
        return;
    }
    let ring = ring.after::<u16>(gpu::warp_idx() as usize * RING);
    let below = first_items(lane);
    // Output index of the ring's first waiting item (or of the next
    // column's first kept item), the ring's first slot and its length:
    // all the same over the warp.
    let mut at = b1 + warp_first as u64;
    let (mut head, mut waiting) = (0u32, 0u32);
    // SAFETY (all accesses): tile elements inside the tile, ring slots
    // below RING, outputs below the kept count (the caller's contract).
    let put = |at: u64, src: u32| unsafe {
        global::store(out.first.add(at as usize), tile.load(slot::<T, ITEMS>(src as usize)));
        if size_of::<V>() != 0 {
            let value = global::load(out.values.add((start + src as u64) as usize));
            global::store(out.values_out.add(at as usize), value);
        }
    };
    // Where the warp keeps at most `ITEMS / 4` items (its count is known:
    // runs of 1000 keep about one item a warp) it visits only the columns
    // where some lane keeps one, by their bits, instead of a vote and its
    // bookkeeping for each of the `ITEMS` columns, and its few items go
    // straight out, values too: H200, 2^28, runs of 1000, `unique` 393 ->
    // 341 us (66% -> 75% of copy), `unique_by_key` 761 -> 711 (99% ->
    // 106%), every other case within 1%. The sparse walk counts its
    // steps (as `while rest != 0` ptxas 13.0 for sm_90 failed on
    // `select_if`: "Register allocation failed with register count of
    // '7'"), and its store without values is predicated in the PTX.
    //
    // Otherwise, without values, each column's kept items go straight
    // out, a vote giving each its place after the columns before: a plain
    // loop, which ptxas unrolls with predicated loads and stores (the
    // same loop unrolled by LLVM kept a branch and a convergence barrier
    // a column, 5-12% slower). With values, see the ring below. See
    // `docs/tuning/select.md`.
    //
    // (The count so far in 32 bits, added to the 64-bit base per store: a
    // 64-bit running index measured 5-6% slower, `select_if` 50% at 2^28
    // 519 against 491 us.)
    let mut done = 0u32;
    if warp_end - warp_first <= ITEMS as u32 / 4 {
        // The same in every lane (from lane 0, so the compiler knows).
        let cols = gpu::warp::shfl_idx(crate::warp::reduce_all::<u32, BitOr>(kept), 0);
        let mut rest = cols;
        for _ in 0..cols.count_ones() {
            let j = rest.trailing_zeros() as usize;
            let mine = (kept >> j) & 1 != 0;
            let votes = gpu::warp::ballot(mine);
            // Every lane loads (inside the tile); the keepers store.
            let v = unsafe { tile.load(striped_slot::<T, ITEMS>(first, j)) };
            let to = at + (done + (votes & below).count_ones()) as u64;
            if size_of::<V>() == 0 {
                unsafe { global::store_if(mine, out.first.wrapping_add(to as usize), v) };
            } else if mine {
                let src = start + (first + (32 * j) as u32) as u64;
                unsafe {
                    global::store(out.first.add(to as usize), v);
                    global::store(out.values_out.add(to as usize), global::load(out.values.add(src as usize)));
                }
            }
            done += votes.count_ones();
            rest &= rest - 1;
        }
        return;
    }
    if size_of::<V>() == 0 {
        for j in 0..ITEMS {
            let mine = (kept >> j) & 1 != 0;
            let votes = gpu::warp::ballot(mine);
            if mine {
                let v = unsafe { tile.load(striped_slot::<T, ITEMS>(first, j)) };
                let to = at + (done + (votes & below).count_ones()) as u64;
                unsafe { global::store(out.first.add(to as usize), v) };
            }
            done += votes.count_ones();
        }
        return;
    }
    for j in 0..ITEMS {
        let mine = (kept >> j) & 1 != 0;
        let votes = gpu::warp::ballot(mine);
        let src = first + (32 * j) as u32;
        if votes == u32::MAX && waiting == 0 {
            put(at + lane as u64, src);
            at += 32;
            continue;
        }
        if mine {
            let k = (head + waiting + (votes & below).count_ones()) as usize % RING;
            unsafe { ring.store(k, src as u16) };
        }
        waiting += votes.count_ones();
        if waiting >= 32 {
            // A full row: after every lane's ring stores, and before the
            // next column's stores reuse the slots it reads.
            gpu::warp::sync(gpu::FULL_MASK);
            let src = unsafe { ring.load((head + lane) as usize % RING) } as u32;
            put(at + lane as u64, src);
            gpu::warp::sync(gpu::FULL_MASK);
            head = (head + 32) % RING as u32;
            waiting -= 32;
            at += 32;
        }
    }
    gpu::warp::sync(gpu::FULL_MASK);
    if lane < waiting {
        let src = unsafe { ring.load((head + lane) as usize % RING) } as u32;
        put(at + lane as u64, src);
    }
}

/// The items `x` with `x <code> threshold` ([`LESS`] ..), in order, to
/// `out`; their number to `count[0]`. `threshold` holds the value's bytes
/// ([`crate::single_pass::to_words`]).
///
/// # Safety
/// As [`select_tiles`].
pub unsafe fn select_if<T: Element, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    out: *mut T,
    count: *mut u64,
    code: u32,
    threshold: u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    let rule = Compare { code, threshold: from_words::<T>([threshold, 0]) };
    let out = Outputs::<T, ()> { first: out, ..no_outputs() };
    // SAFETY: forwarded.
    unsafe { select_tiles::<T, (), _, Select, B, ITEMS>(input, n, rule, out, count, temp, spare, spare_words) }
}

/// [`select_if`]'s items first, then the others in reverse input order,
/// all in `out`; the number selected to `count[0]`.
///
/// # Safety
/// As [`select_tiles`].
pub unsafe fn partition_if<T: Element, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    out: *mut T,
    count: *mut u64,
    code: u32,
    threshold: u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    let rule = Compare { code, threshold: from_words::<T>([threshold, 0]) };
    let out = Outputs::<T, ()> { first: out, ..no_outputs() };
    // SAFETY: forwarded.
    unsafe { select_tiles::<T, (), _, Partition, B, ITEMS>(input, n, rule, out, count, temp, spare, spare_words) }
}

/// Items satisfying the first comparison to `first`, the others satisfying
/// the second to `second`, the rest to `rest`, each in order; the first two
/// counts to `count[0..2]`.
///
/// # Safety
/// As [`select_tiles`].
pub unsafe fn partition_three_way<T: Element, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    first: *mut T,
    second: *mut T,
    rest: *mut T,
    count: *mut u64,
    code1: u32,
    threshold1: u64,
    code2: u32,
    threshold2: u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    let rule = CompareTwo {
        first: Compare { code: code1, threshold: from_words::<T>([threshold1, 0]) },
        second: Compare { code: code2, threshold: from_words::<T>([threshold2, 0]) },
    };
    let out = Outputs::<T, ()> { first, second, rest, ..no_outputs() };
    // SAFETY: forwarded.
    unsafe { select_tiles::<T, (), _, ThreeWay, B, ITEMS>(input, n, rule, out, count, temp, spare, spare_words) }
}

/// The items whose byte in `flags` is not zero, in order, to `out`; their
/// number to `count[0]`.
///
/// # Safety
/// As [`select_tiles`]; `flags` holds `n` bytes.
pub unsafe fn select_flagged<T: Element, const B: u32, const ITEMS: usize>(
    input: *const T,
    flags: *const u8,
    n: u64,
    out: *mut T,
    count: *mut u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    let out = Outputs::<T, ()> { first: out, ..no_outputs() };
    // SAFETY: forwarded.
    unsafe {
        select_tiles::<T, (), _, Select, B, ITEMS>(input, n, Flagged { flags }, out, count, temp, spare, spare_words)
    }
}

/// The first item of every run of equal (`==`) consecutive items, in order,
/// to `out`; their number to `count[0]`.
///
/// # Safety
/// As [`select_tiles`].
pub unsafe fn unique<T: Element, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    out: *mut T,
    count: *mut u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    let out = Outputs::<T, ()> { first: out, ..no_outputs() };
    // SAFETY: forwarded.
    unsafe {
        select_tiles::<T, (), _, Select, B, ITEMS>(input, n, Differs { input }, out, count, temp, spare, spare_words)
    }
}

/// [`unique`] on `keys`, with each selected key's value beside it: the
/// first (key, value) of every run of equal consecutive keys.
///
/// # Safety
/// As [`select_tiles`]; `values` and `values_out` hold `n` values.
pub unsafe fn unique_by_key<K: Element, V: Copy, const B: u32, const ITEMS: usize>(
    keys: *const K,
    values: *const V,
    n: u64,
    keys_out: *mut K,
    values_out: *mut V,
    count: *mut u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    let out =
        Outputs { first: keys_out, second: core::ptr::null_mut(), rest: core::ptr::null_mut(), values, values_out };
    // SAFETY: forwarded.
    unsafe {
        select_tiles::<K, V, _, Select, B, ITEMS>(
            keys,
            n,
            Differs { input: keys },
            out,
            count,
            temp,
            spare,
            spare_words,
        )
    }
}

#[inline(always)]
fn no_outputs<T>() -> Outputs<T, ()> {
    Outputs {
        first: core::ptr::null_mut(),
        second: core::ptr::null_mut(),
        rest: core::ptr::null_mut(),
        values: core::ptr::null(),
        values_out: core::ptr::null_mut(),
    }
}

entries! {
    select_if(input: *const T, n: u64, out: *mut T, count: *mut u64, code: u32, threshold: u64,
              temp: *mut u64, spare: *mut u64, spare_words: u64)
        => select_if::<T, {B}, { policy::items::<T>() }>;
        types [i32, u32, i64, u64, f32, f64] blocks [256];
    partition_if(input: *const T, n: u64, out: *mut T, count: *mut u64, code: u32, threshold: u64,
                 temp: *mut u64, spare: *mut u64, spare_words: u64)
        => partition_if::<T, {B}, { policy::items::<T>() }>;
        types [i32, u32, i64, u64, f32, f64] blocks [256];
    partition_three_way(input: *const T, n: u64, first: *mut T, second: *mut T, rest: *mut T, count: *mut u64,
                        code1: u32, threshold1: u64, code2: u32, threshold2: u64,
                        temp: *mut u64, spare: *mut u64, spare_words: u64)
        => partition_three_way::<T, {B}, { policy::items::<T>() }>;
        types [i32, u32, i64, u64, f32, f64] blocks [256];
    select_flagged(input: *const T, flags: *const u8, n: u64, out: *mut T, count: *mut u64,
                   temp: *mut u64, spare: *mut u64, spare_words: u64)
        => select_flagged::<T, {B}, { policy::items::<T>() }>;
        types [i32, u32, i64, u64, f32, f64] blocks [256];
    unique(input: *const T, n: u64, out: *mut T, count: *mut u64, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => unique::<T, {B}, { policy::items::<T>() }>;
        types [i32, u32, i64, u64, f32, f64] blocks [256];
    unique_by_key(keys: *const K, values: *const T, n: u64, keys_out: *mut K, values_out: *mut T, count: *mut u64,
                  temp: *mut u64, spare: *mut u64, spare_words: u64)
        => unique_by_key::<K, T, {B}, { policy::items::<K>() }>;
        keys [u32, u64, i64] types [i32, u32, i64, u64, f32, f64] blocks [256];
    // Small tiles (at 32 threads: 1024 four-byte items, 512 eight-byte
    // ones), so that the
    // tests can run hundreds of tiles on the emulator and make the
    // look-back cross many windows.
    select_if(input: *const T, n: u64, out: *mut T, count: *mut u64, code: u32, threshold: u64,
              temp: *mut u64, spare: *mut u64, spare_words: u64)
        => select_if::<T, {B}, { policy::items::<T>() }>;
        types [i32, f64] blocks [32];
    partition_if(input: *const T, n: u64, out: *mut T, count: *mut u64, code: u32, threshold: u64,
                 temp: *mut u64, spare: *mut u64, spare_words: u64)
        => partition_if::<T, {B}, { policy::items::<T>() }>;
        types [i32, f64] blocks [32];
    partition_three_way(input: *const T, n: u64, first: *mut T, second: *mut T, rest: *mut T, count: *mut u64,
                        code1: u32, threshold1: u64, code2: u32, threshold2: u64,
                        temp: *mut u64, spare: *mut u64, spare_words: u64)
        => partition_three_way::<T, {B}, { policy::items::<T>() }>;
        types [i32, f64] blocks [32];
    select_flagged(input: *const T, flags: *const u8, n: u64, out: *mut T, count: *mut u64,
                   temp: *mut u64, spare: *mut u64, spare_words: u64)
        => select_flagged::<T, {B}, { policy::items::<T>() }>;
        types [i32, f64] blocks [32];
    unique(input: *const T, n: u64, out: *mut T, count: *mut u64, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => unique::<T, {B}, { policy::items::<T>() }>;
        types [i32, f64] blocks [32];
    unique_by_key(keys: *const K, values: *const T, n: u64, keys_out: *mut K, values_out: *mut T, count: *mut u64,
                  temp: *mut u64, spare: *mut u64, spare_words: u64)
        => unique_by_key::<K, T, {B}, { policy::items::<K>() }>;
        keys [u32, u64] types [i32, f64] blocks [32];
}
