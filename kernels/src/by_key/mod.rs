//! By-key and segmented primitives: reduce-by-key, scan-by-key,
//! run-length encoding and segmented scans, each one single pass over its
//! input with the decoupled look-back ([`crate::single_pass`]).
//!
//! All of them are one scan of `(flag, value)` pairs under the "reduce by
//! segment" operator [`Segmented`]:
//!
//! ```text
//! (c1, v1) . (c2, v2) = (c1 + c2, if c2 > 0 { v2 } else { v1 . v2 })
//! ```
//! `c` counts segment starts (a `u64`, so more than 2^32 elements work) and
//! `v` carries the combine of the values since the last start. The
//! operator is associative but not commutative, so tiles combine in order
//! through the look-back, whose status words carry the whole pair: a
//! 16-byte [`Carry`], or, for 4-byte values when `n < 2^32`, the 8-byte
//! [`Local`] (see [`Status`]).
//!
//! ```text
//! keys     a a b b b c d d
//! values   1 2 3 4 5 6 7 8
//! head     1 0 1 0 0 1 1 0      key[i] != key[i-1] (the key before a tile
//! tail     0 1 0 0 1 1 0 1      comes from global memory, as does the one
//! scan   (1,1)(1,3)(2,3)(2,7)(2,12)(3,6)(4,7)(4,15)      after it)
//!               ^             ^     ^          ^   tails: run `c - 1` ends here
//! reduce-by-key: (a,3) (b,12) (c,6) (d,15)
//! ```
//!
//! | primitive | flag | value | output |
//! |---|---|---|---|
//! | [`reduce::reduce_by_key`] | head | value | at tails: key, `v` at index `c - 1` |
//! | [`reduce::run_length_encode`] | head | 1 | at tails: key, `v` (the length) |
//! | [`reduce::non_trivial_runs`] | head of a run longer than 1 | 1 inside such runs | at their tails: offset, length |
//! | [`scan::scan_by_key`] | head | value | every item: `v` (inclusive), or `init . v` before it |
//! | [`scan::segmented_scan`] | a segment start from the offsets | value | every item |
//!
//! **A tile** of [`policy::BLOCK`] threads x `I` items
//! ([`policy::items`]: 16, 14 or 8 by the bytes an item takes; 16 for
//! reduce-by-key with 8-byte keys and 4-byte values,
//! [`policy::reduce_items`]; 112 bytes of keys for the two kernels that
//! read keys alone) is
//! loaded striped (16-byte vectors for whole tiles) into shared memory;
//! each thread takes its `I` consecutive keys and values, flags them, and
//! combines its pairs as [`Local`]s (32-bit counts: a tile has fewer than
//! 2^32 items); the block scans the thread totals
//! ([`crate::block::scan::exclusive_scan`]); thread 0 publishes the tile's
//! aggregate (narrow or wide, [`Status`]), and warp 0 looks back for the
//! tiles before it ([`crate::single_pass::exclusive_prefix_by_warp`],
//! after a short sleep, [`policy::LOOK_BACK_DELAY_NS`]). The kernels that
//! write runs need the tiles before only for the write, so warp 0 looks
//! back after every warp walked its items, and one barrier hands the
//! result over (`emit_runs`: 1.02-1.09x at 2^28 on an H200).
//! Where the values are 0 or 1 under [`Sum`] (run lengths), they are bits
//! (`Ones`) and a thread's fold is two population counts (H200, 2^28
//! `i32`: run-length encoding 469 us at runs of 1000, 1.44x CUB, 528
//! with the per-item fold).
//!
//! **Outputs** are written coalesced: the scans put their results back in
//! the staged tile and store it striped; run-length encoding and the
//! non-trivial runs keep what each run's output needs at slot `c -
//! c_before` (the run's last position, its length being the distance from
//! the slot before), then the block writes the tile's contiguous range of
//! runs, whose bounds follow from two flags and the tile's count
//! (`emit_runs`). Reduce-by-key keeps a run's value where its last item's
//! value was staged and its position at the run's slot in its warp, and
//! each warp writes its own runs (`emit_runs_by_warp`): no region as long
//! as the tile, so 16 items of `u64` keys and 4-byte values fit four
//! blocks a multiprocessor (1.05-1.10x at runs of 8 and 1000 on an H200
//! against 14 items). The two kernels that read keys alone so
//! keep no tile-sized region but the keys' and the positions': at 2^28
//! `i32` on an H200 run-length encoding holds 5 blocks of 24 keys a thread
//! per multiprocessor where 16-key tiles and a region for the counts held
//! 5 of 16, and went from 672 to 544 us at runs of 1000 (1.24x CUB) and
//! from 1535 to 977 at runs of 1 (1.19x); the non-trivial runs take 28
//! keys a thread (4 blocks).
//! Outputs at index `cap` and beyond are dropped (the host checks the
//! count); the number of runs is written to `count` by the thread holding
//! the last item.
//!
//! **Keys** are compared with `!=`: a float key that is NaN starts a run
//! of its own, and `-0.0` continues a run of `0.0`.

pub mod policy;
pub mod reduce;
pub mod scan;

use crate::block::WARP_SLOTS;
use crate::block::scan::exclusive_scan;
use crate::block::tile::{
    first_items, from_last, pad_every, prefetch_tile, read_items, stage_tile_unsynced, tile_slots,
};
use crate::gpu::warp::Shuffle;
use crate::gpu::{self, Shared, global};
use crate::ops::{Element, Monoid, Sum};
use crate::single_pass::{
    LookBackSmem, TileStatus, clear_words, deferred_prefix, exclusive_prefix_by_warp, look_back_by_warp,
    look_back_smem_bytes, publish_aggregate,
};
use core::marker::PhantomData;
use core::mem::size_of;
use policy::{max, tile_len};

/// Value types of the by-key primitives: the numbers of 4 and 8 bytes,
/// each with the padding that makes its [`Carry`] exactly 16 bytes and
/// its [`Local`] 8 or 16.
///
/// # Safety
/// `Pad` is plain data (or `()`) such that `Carry<Self>` is 16 bytes with
/// no padding: 4 bytes for 4-byte types, `()` for 8-byte ones. `LPad`
/// likewise makes `Local<Self>` free of padding: `()` for 4-byte types,
/// 4 bytes for 8-byte ones.
pub unsafe trait Value: Element {
    type Pad: Copy + Default + core::fmt::Debug + Send + Sync + 'static;
    type LPad: Copy + Default + core::fmt::Debug + Send + Sync + 'static;
}
// SAFETY: 4-byte numbers: Carry 8 + 4 + 4 bytes, Local 4 + 4.
unsafe impl Value for i32 {
    type Pad = u32;
    type LPad = ();
}
// SAFETY: as above.
unsafe impl Value for u32 {
    type Pad = u32;
    type LPad = ();
}
// SAFETY: as above.
unsafe impl Value for f32 {
    type Pad = u32;
    type LPad = ();
}
// SAFETY: 8-byte numbers: Carry 8 + 8 bytes, Local 4 + 4 + 8.
unsafe impl Value for i64 {
    type Pad = ();
    type LPad = u32;
}
// SAFETY: as above.
unsafe impl Value for u64 {
    type Pad = ();
    type LPad = u32;
}
// SAFETY: as above.
unsafe impl Value for f64 {
    type Pad = ();
    type LPad = u32;
}

/// A `(count, value)` pair of the by-key scans: `count` segment starts,
/// and the combine of the values since the last of them (16 bytes). What
/// tiles publish to each other through the look-back: across tiles the
/// count can pass 2^32.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Carry<V: Value> {
    pub count: u64,
    pub value: V,
    pub pad: V::Pad,
}

impl<V: Value> Carry<V> {
    /// The pair of one item: `flag` (0 or 1) starts a segment.
    #[inline(always)]
    pub fn new(flag: u32, value: V) -> Self {
        const { assert!(size_of::<Carry<V>>() == 16) };
        Carry { count: flag as u64, value, pad: V::Pad::default() }
    }
}

/// The same pair inside one tile, where a 32-bit count suffices: 8 bytes
/// for 4-byte values (16 for 8-byte ones), so the thread's combines and
/// the block scan move half of a [`Carry`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Local<V: Value> {
    pub count: u32,
    pub pad: V::LPad,
    pub value: V,
}

impl<V: Value> Local<V> {
    /// The pair of one item: `flag` (0 or 1) starts a segment.
    #[inline(always)]
    pub fn new(flag: u32, value: V) -> Self {
        const { assert!(size_of::<Local<V>>() == 4 + size_of::<V>() + size_of::<V::LPad>()) };
        Local { count: flag, pad: V::LPad::default(), value }
    }

    /// The tile-wide pair as a [`Carry`].
    #[inline(always)]
    pub fn wide(self) -> Carry<V> {
        Carry { count: self.count as u64, value: self.value, pad: V::Pad::default() }
    }
}

// SAFETY: 16 bytes of plain numbers without padding (the `Value`
// contract), valid for any bit pattern.
unsafe impl<V: Value> Shuffle for Carry<V> {}
// SAFETY: 8 or 16 bytes of plain numbers without padding (the `Value`
// contract), valid for any bit pattern.
unsafe impl<V: Value> Shuffle for Local<V> {}

/// The "reduce by segment" operator over [`Carry`]s (and [`Local`]s) of
/// an operator `Op`:
/// `(c1, v1) . (c2, v2) = (c1 + c2, if c2 > 0 { v2 } else { v1 . v2 })`.
/// Associative, not commutative.
#[derive(Clone, Copy, Debug, Default)]
pub struct Segmented<Op>(PhantomData<Op>);

/// The value half of [`Segmented`]: `b` alone when `b`'s part starts a
/// segment, else `a . b`.
#[inline(always)]
fn segmented_value<V: Value, Op: Monoid<V>>(a: V, b: V, b_starts: bool) -> V {
    if b_starts { b } else { Op::combine(a, b) }
}

impl<V: Value, Op: Monoid<V>> Monoid<Carry<V>> for Segmented<Op> {
    #[inline(always)]
    fn identity() -> Carry<V> {
        Carry::new(0, Op::identity())
    }
    #[inline(always)]
    fn combine(a: Carry<V>, b: Carry<V>) -> Carry<V> {
        let value = segmented_value::<V, Op>(a.value, b.value, b.count > 0);
        Carry { count: a.count.wrapping_add(b.count), value, pad: b.pad }
    }
}

impl<V: Value, Op: Monoid<V>> Monoid<Local<V>> for Segmented<Op> {
    #[inline(always)]
    fn identity() -> Local<V> {
        Local::new(0, Op::identity())
    }
    #[inline(always)]
    fn combine(a: Local<V>, b: Local<V>) -> Local<V> {
        let value = segmented_value::<V, Op>(a.value, b.value, b.count > 0);
        Local { count: a.count.wrapping_add(b.count), pad: b.pad, value }
    }
}

const fn round16(b: usize) -> usize {
    b.div_ceil(16) * 16
}

/// Bytes of a shared region that first holds a staged tile of `S` and
/// then `len + 1` outputs of `O`.
const fn region_bytes<S, O>(b: u32, items: usize) -> usize {
    let len = tile_len(b, items) as usize;
    round16(max(tile_slots::<S>(b, items) * size_of::<S>(), (len + 1) * size_of::<O>()))
}

/// No positions region (the scans by key).
pub const NO_POSITIONS: u8 = 0;
/// A positions region of `len + 1` tile positions (`u16`), by the runs'
/// slots in the tile (run-length encoding, the non-trivial runs).
pub const TILE_POSITIONS: u8 = 1;
/// A positions region of [`policy::WARP_RUNS`] tile positions (`u16`) a
/// warp, by the runs' slots in the warp (reduce-by-key,
/// `emit_runs_by_warp`).
pub const WARP_POSITIONS: u8 = 2;

/// Bytes of the positions region of kind `positions` ([`NO_POSITIONS`],
/// [`TILE_POSITIONS`] or [`WARP_POSITIONS`]).
pub(crate) const fn positions_bytes(b: u32, items: usize, positions: u8) -> usize {
    match positions {
        TILE_POSITIONS => round16((tile_len(b, items) as usize + 1) * 2),
        WARP_POSITIONS => round16(b.div_ceil(gpu::WARP_SIZE) as usize * policy::WARP_RUNS * 2),
        _ => 0,
    }
}

/// Dynamic shared memory of a by-key kernel at block size `b` and `items`
/// per thread: region A (staged `SA`, then outputs `OA`), region B
/// (staged `SB`, then outputs `OB`), the positions region of the kind
/// `positions` says (the kernels that produce one output per run: the
/// tile positions of their runs, `u16`, for outputs read from the staged
/// keys at the end; none for the scans), the block scan's warp slots, the
/// look-back's, one word and the tile's two edge flags.
pub const fn smem_bytes<SA, OA, SB, OB>(b: u32, items: usize, positions: u8) -> usize {
    region_bytes::<SA, OA>(b, items)
        + region_bytes::<SB, OB>(b, items)
        + positions_bytes(b, items, positions)
        + WARP_SLOTS * 16
        + round16(look_back_smem_bytes::<[u64; 2]>())
        + 16
        + 16
}

/// The most dynamic shared memory a by-key kernel may take: four blocks
/// of 256 a multiprocessor on sm_80 and sm_90 (up to 228 KiB a
/// multiprocessor, 1 KiB of it reserved a block). Past the 48 KiB default
/// the host opts the launch in ([`policy::items`]).
pub const MAX_SMEM: usize = 56 * 1024;

/// The carved shared memory; see [`smem_bytes`].
pub(crate) struct TileSmem<V: Value> {
    pub(crate) a: Shared<u8>,
    pub(crate) b: Shared<u8>,
    /// The runs' positions; empty (not to be used) in a layout without.
    pub(crate) pos: Shared<u16>,
    pub(crate) warps: Shared<Local<V>>,
    /// The look-back's shared memory for the wide status ([`Carry`]s)...
    pub(crate) look: LookBackSmem<Carry<V>>,
    /// ...and the same bytes for the narrow one ([`Local`]s).
    pub(crate) look_narrow: LookBackSmem<Local<V>>,
    pub(crate) word: Shared<u64>,
    pub(crate) edges: Shared<u32>,
}

impl<V: Value> TileSmem<V> {
    /// This warp's part of a [`WARP_POSITIONS`] region:
    /// [`policy::WARP_RUNS`] tile positions, by the runs' slots in the warp.
    #[inline(always)]
    pub(crate) fn warp_positions(&self) -> Shared<u16> {
        self.pos.after::<u16>(gpu::warp_idx() as usize * policy::WARP_RUNS)
    }

    #[inline(always)]
    pub(crate) fn carve<SA, OA, SB, OB, const I: usize, const POS: u8>(b: u32) -> Self {
        const { assert!(smem_bytes::<SA, OA, SB, OB>(policy::BLOCK, I, POS) <= MAX_SMEM, "a by-key tile over 56 KiB") };
        let a = Shared::<u8>::dynamic();
        let bytes_a = region_bytes::<SA, OA>(b, I);
        let bytes_b = region_bytes::<SB, OB>(b, I);
        const { assert!(policy::tile_len(policy::BLOCK, I) < 1 << 16, "tile positions are u16") };
        let pos_at = bytes_a + bytes_b;
        let warps_at = pos_at + positions_bytes(b, I, POS);
        let look_at = warps_at + WARP_SLOTS * 16;
        let word_at = look_at + round16(look_back_smem_bytes::<[u64; 2]>());
        TileSmem {
            a,
            b: a.after::<u8>(bytes_a),
            pos: a.after::<u16>(pos_at),
            warps: a.after::<Local<V>>(warps_at),
            look: LookBackSmem::carve(a.after::<Carry<V>>(look_at)),
            look_narrow: LookBackSmem::carve(a.after::<Local<V>>(look_at)),
            word: a.after::<u64>(word_at),
            edges: a.after::<u32>(word_at + 16),
        }
    }
}

/// The padded shared slot of tile element `i`, in 32-bit arithmetic
/// (tiles hold fewer than 2^16 elements).
#[inline(always)]
fn pad<T, const I: usize>(i: usize) -> usize {
    let i = i as u32;
    (i + i / pad_every::<T>(I) as u32) as usize
}

/// Stage the tile of keys at `start` into `s` (no barrier) and read the
/// keys just outside it: thread 0 the one before, thread `B-1` the one
/// after (where they exist; other threads get zero).
///
/// # Safety
/// `keys` holds `n` elements; `s` has room for the staged tile; all
/// threads call it.
#[inline(always)]
#[track_caller]
pub(crate) unsafe fn stage_keys<K: Element, const B: u32, const I: usize>(
    keys: *const K,
    n: u64,
    start: u64,
    s: Shared<K>,
) -> (K, K) {
    // SAFETY: the caller's contract; the neighbours are checked below n.
    unsafe { stage_tile_unsynced::<K, Sum, B, I>(keys, n, start, s) };
    let tid = gpu::thread_idx();
    let end = start + tile_len(B, I);
    let prev = if tid == 0 && start > 0 { unsafe { global::load(keys.add(start as usize - 1)) } } else { K::ZERO };
    let next = if tid == B - 1 && end < n { unsafe { global::load(keys.add(end as usize)) } } else { K::ZERO };
    (prev, next)
}

/// Where this thread's items lie against the end of the input: how many
/// of them are below `n` (`0..=I`), and whether it holds item `n - 1`.
/// Computed once, so the per-item work needs no 64-bit compares.
#[derive(Clone, Copy)]
pub(crate) struct Span {
    pub(crate) len: u32,
    pub(crate) last: bool,
}

impl Span {
    #[inline(always)]
    pub(crate) fn new<const I: usize>(base: u64, n: u64) -> Self {
        let len = if base >= n { 0 } else { Ord::min(n - base, I as u64) as u32 };
        Span { len, last: len > 0 && base + len as u64 == n }
    }

    /// Bit `j` set for this thread's items `j` below `n`.
    #[inline(always)]
    pub(crate) fn mask(self) -> u32 {
        first_items(self.len)
    }
}

/// The flags of a thread's keys (bit `j` for item `j`).
pub(crate) struct Flags {
    /// `key[i] != key[i-1]`, or `i == 0`.
    pub(crate) heads: u32,
    /// `key[i] != key[i+1]`, or `i == n-1`.
    pub(crate) tails: u32,
    pub(crate) span: Span,
}

/// The head and tail flags of this thread's keys of the staged tile
/// (none for items at `n` and beyond).
///
/// # Safety
/// After the staging barrier; `prev`/`next` from [`stage_keys`].
#[inline(always)]
#[track_caller]
pub(crate) unsafe fn key_flags<K: Element, const B: u32, const I: usize>(
    s: Shared<K>,
    prev: K,
    next: K,
    n: u64,
    start: u64,
) -> Flags {
    const { assert!(I < 32, "flags are bits of a u32") };
    let tid = gpu::thread_idx() as usize;
    let first = tid * I;
    // SAFETY: inside the staged tile (its slots before and after this
    // thread's run belong to the neighbouring threads).
    let keys = unsafe { read_items::<K, Sum, I>(s) };
    let before = if tid == 0 { prev } else { unsafe { s.load(pad::<K, I>(first - 1)) } };
    let after = if tid == B as usize - 1 { next } else { unsafe { s.load(pad::<K, I>(first + I)) } };
    let base = start + first as u64;
    let span = Span::new::<I>(base, n);
    // One compare per neighbouring pair: item j ends a run where item
    // j + 1 starts one (`I + 1` key compares instead of `2 I`).
    let mut heads = 0u32;
    for j in 0..I {
        let left = if j == 0 { before } else { keys[j - 1] };
        heads |= ((keys[j] != left) as u32) << j;
    }
    let mut tails = (heads >> 1) | (((keys[I - 1] != after) as u32) << (I - 1));
    // Item 0 starts a run; item n - 1 ends one; nothing at n or beyond.
    heads |= (base == 0) as u32;
    if span.last {
        tails |= 1 << (span.len - 1);
    }
    Flags { heads: heads & span.mask(), tails: tails & span.mask(), span }
}

/// The block's scan of the tile's pairs (this thread's in `pairs`) and
/// the look-back: the [`Carry`] of everything before the tile, and the
/// tile-local [`Local`] of everything in the tile before this thread's
/// first item.
///
/// # Safety
/// As [`exclusive_prefix_by_warp`]; all threads call it once per tile.
#[inline(always)]
#[track_caller]
pub(crate) unsafe fn scan_pairs<V: Value, Op: Monoid<V>, const B: u32, const I: usize>(
    status: &Status,
    tile: u32,
    pairs: &Pairs<impl PairValues<V, Op>>,
    smem: &TileSmem<V>,
) -> Scanned<V> {
    // Not [`scan_pairs_local`], [`look_back_deferred`] and
    // [`deferred_before`] in a row: that took `scan_by_key` (`u64` keys,
    // `i32` values) from 64 to 70 registers under ptxas sm_90, and 0.91x
    // on the H200 at 2^28.
    const DELAY: u32 = policy::LOOK_BACK_DELAY_NS;
    let mine = pairs.fold::<V, Op, I>();
    let (run, total) = exclusive_scan::<Local<V>, Segmented<Op>, B>(mine, smem.warps);
    // SAFETY (both arms): the caller's contract; the status is read in the
    // form every block of the launch writes (`narrow` follows from `n`).
    let before = if status.narrow::<V>() {
        let st = TileStatus::<Local<V>>::new(status.temp);
        unsafe { publish_aggregate(&st, tile, total) };
        unsafe { exclusive_prefix_by_warp::<Local<V>, Segmented<Op>, DELAY>(&st, tile, total, &smem.look_narrow) }
            .wide()
    } else {
        let st = TileStatus::<Carry<V>>::new(status.temp);
        let wide = total.wide();
        unsafe { publish_aggregate(&st, tile, wide) };
        unsafe { exclusive_prefix_by_warp::<Carry<V>, Segmented<Op>, DELAY>(&st, tile, wide, &smem.look) }
    };
    Scanned { before, run }
}

/// [`scan_pairs`] without the look-back: the block scan and the
/// aggregate's publication. Returns this thread's tile-local [`Local`]
/// before its first item and the tile's. Warp 0 then looks back with
/// [`look_back_deferred`] while the other warps go on with their
/// tile-local work, and the block reads the [`Carry`] of everything
/// before the tile with [`deferred_before`] after a barrier.
///
/// # Safety
/// As [`scan_pairs`].
#[inline(always)]
#[track_caller]
pub(crate) unsafe fn scan_pairs_local<V: Value, Op: Monoid<V>, const B: u32, const I: usize>(
    status: &Status,
    tile: u32,
    pairs: &Pairs<impl PairValues<V, Op>>,
    smem: &TileSmem<V>,
) -> (Local<V>, Local<V>) {
    let mine = pairs.fold::<V, Op, I>();
    let (run, total) = exclusive_scan::<Local<V>, Segmented<Op>, B>(mine, smem.warps);
    // SAFETY (both arms): the caller's contract; the status in the form
    // every block of the launch writes.
    if status.narrow::<V>() {
        unsafe { publish_aggregate(&TileStatus::<Local<V>>::new(status.temp), tile, total) };
    } else {
        unsafe { publish_aggregate(&TileStatus::<Carry<V>>::new(status.temp), tile, total.wide()) };
    }
    (run, total)
}

/// Warp 0's look-back for [`scan_pairs_local`]'s tile, `total` being the
/// tile's pair ([`look_back_by_warp`]: no barrier; the other warps
/// return at once).
///
/// # Safety
/// As [`look_back_by_warp`]; after [`scan_pairs_local`] for this tile.
#[inline(always)]
#[track_caller]
pub(crate) unsafe fn look_back_deferred<V: Value, Op: Monoid<V>>(
    status: &Status,
    tile: u32,
    total: Local<V>,
    smem: &TileSmem<V>,
) {
    const DELAY: u32 = policy::LOOK_BACK_DELAY_NS;
    // SAFETY (both arms): the caller's contract.
    if status.narrow::<V>() {
        let st = TileStatus::<Local<V>>::new(status.temp);
        unsafe { look_back_by_warp::<Local<V>, Segmented<Op>, DELAY>(&st, tile, total, &smem.look_narrow) };
    } else {
        let st = TileStatus::<Carry<V>>::new(status.temp);
        unsafe { look_back_by_warp::<Carry<V>, Segmented<Op>, DELAY>(&st, tile, total.wide(), &smem.look) };
    }
}

/// The [`Carry`] of everything before `tile` that [`look_back_deferred`]
/// left in shared memory.
///
/// # Safety
/// After a barrier that follows [`look_back_deferred`] for this tile.
#[inline(always)]
#[track_caller]
pub(crate) unsafe fn deferred_before<V: Value, Op: Monoid<V>>(
    status: &Status,
    tile: u32,
    smem: &TileSmem<V>,
) -> Carry<V> {
    // SAFETY: the caller's contract; read in the form it was written.
    if status.narrow::<V>() {
        unsafe { deferred_prefix::<Local<V>, Segmented<Op>>(tile, &smem.look_narrow) }.wide()
    } else {
        unsafe { deferred_prefix::<Carry<V>, Segmented<Op>>(tile, &smem.look) }
    }
}

/// The status of a launch's tiles, in one of two forms chosen by the
/// input's length, the same in every block:
///
/// - **narrow**, for 4-byte values when `n < 2^32`: each tile's pair as a
///   [`Local`] (a 32-bit count, which then cannot wrap, and the value), 8
///   bytes in two status words;
/// - **wide** otherwise: a [`Carry`] (a 64-bit count), 16 bytes in four.
///
/// Half the words halve what a tile publishes (two atomics, not four) and
/// what a look-back reads. H200, 2^28 `u64` keys with 4-byte values, with
/// the look-back's delay ([`policy::LOOK_BACK_DELAY_NS`]), against the
/// wide status without it in the same call: `reduce_by_key` 1.02-1.03x
/// at runs of 1, 1.04-1.05x at 8, 1.07-1.08x at 1000; the scans by key
/// 1.04-1.05x; run-length encoding 1.07x; the non-trivial runs 1.04x
/// (`docs/tuning/by_key.md`).
#[derive(Clone, Copy)]
pub struct Status {
    pub(crate) temp: *mut u64,
    n: u64,
}

impl Status {
    /// The status in the storage at `temp` of a launch over `n` items.
    #[inline(always)]
    pub(crate) fn new(temp: *mut u64, n: u64) -> Self {
        Status { temp, n }
    }

    /// Whether tiles of `V` values publish the narrow form.
    #[inline(always)]
    pub(crate) fn narrow<V: Value>(&self) -> bool {
        size_of::<V>() == 4 && self.n <= u32::MAX as u64
    }

    /// This block's tile, by ticket ([`TileStatus::take_ticket`]; the
    /// counter is the same word in either form).
    ///
    /// # Safety
    /// As [`TileStatus::take_ticket`].
    #[inline(always)]
    #[track_caller]
    pub(crate) unsafe fn take_ticket(&self, slot: Shared<u32>) -> u32 {
        // SAFETY: forwarded.
        unsafe { TileStatus::<u64>::new(self.temp).take_ticket(slot) }
    }
}

/// A thread's `I` pairs: item `j` starts a segment where bit `j` of
/// `starts` is set, and carries `value(j)`.
pub(crate) struct Pairs<F> {
    pub(crate) starts: u32,
    pub(crate) value: F,
}

impl<F> Pairs<F> {
    /// Whether item `j` starts a segment.
    #[inline(always)]
    fn starts_at(&self, j: usize) -> bool {
        self.starts & (1 << j) != 0
    }

    /// The pairs combined in order under [`Segmented`].
    #[inline(always)]
    fn fold<V: Value, Op: Monoid<V>, const I: usize>(&self) -> Local<V>
    where
        F: PairValues<V, Op>,
    {
        self.value.fold::<I>(self.starts)
    }
}

/// Where the values of [`Pairs`] come from, and how a thread's pairs
/// fold under [`Segmented`]`<Op>`.
pub(crate) trait PairValues<V: Value, Op: Monoid<V>> {
    /// Item `j`'s value.
    fn at(&self, j: usize) -> V;
    /// The thread's `I` pairs (item `j` starting a segment where bit `j`
    /// of `starts` is set) combined in order.
    fn fold<const I: usize>(&self, starts: u32) -> Local<V>;
}

/// Values read item by item.
impl<V: Value, Op: Monoid<V>, F: Fn(usize) -> V> PairValues<V, Op> for F {
    #[inline(always)]
    fn at(&self, j: usize) -> V {
        self(j)
    }

    // A population count for the count and a select-and-combine loop for
    // the value cost `scan_by_key` 14 more registers (56 -> 70) and
    // `reduce_by_key` 19 (53 -> 72) under ptxas sm_90: kept pairwise. On
    // the H200 the scans by key ran 8-13% slower with it and
    // `reduce_by_key` within 1% (`docs/tuning/by_key.md`).
    #[inline(always)]
    fn fold<const I: usize>(&self, starts: u32) -> Local<V> {
        let mut m = Local::new(starts & 1, self(0));
        for j in 1..I {
            m = Segmented::<Op>::combine(m, Local::new((starts >> j) & 1, self(j)));
        }
        m
    }
}

/// Values of 0 or 1 under [`Sum`], as bits (bit `j`: item `j`'s value is
/// 1): run lengths, counts of items inside runs. A thread's fold is then
/// two population counts: its starts, and its ones from its last start
/// on (all of them without a start), with no per-item loop.
#[derive(Clone, Copy)]
pub(crate) struct Ones(pub(crate) u32);

impl<C: Value + Element> PairValues<C, Sum> for Ones {
    #[inline(always)]
    fn at(&self, j: usize) -> C {
        if (self.0 >> j) & 1 != 0 { C::ONE } else { C::ZERO }
    }

    #[inline(always)]
    fn fold<const I: usize>(&self, starts: u32) -> Local<C> {
        let since = first_items(I as u32) & from_last(starts);
        Local::new(starts.count_ones(), C::from_u64((self.0 & since).count_ones() as u64))
    }
}

/// What [`scan_pairs`] returns.
pub(crate) struct Scanned<V: Value> {
    /// Everything before the tile.
    pub(crate) before: Carry<V>,
    /// The tile's pairs before this thread's first item.
    pub(crate) run: Local<V>,
}

impl<V: Value> Scanned<V> {
    /// The carry into this thread's first item as a [`Local`] whose count
    /// is the tile's starts before it and whose value includes what came
    /// before the tile (when no start in the tile precedes the item).
    #[inline(always)]
    pub(crate) fn entry<Op: Monoid<V>>(&self) -> Local<V> {
        let value = segmented_value::<V, Op>(self.before.value, self.run.value, self.run.count > 0);
        Local { value, ..self.run }
    }
}

/// A tile of one of the kernels driven by keys, staged and flagged: its
/// carved shared memory, the launch's status, its index and first item,
/// and the head and tail flags of this thread's keys.
pub(crate) struct KeyTile<V: Value> {
    pub(crate) s: TileSmem<V>,
    pub(crate) status: Status,
    pub(crate) tile: u32,
    pub(crate) start: u64,
    pub(crate) f: Flags,
}

/// The opening every kernel driven by keys shares: clear the spare status
/// for the next launch, carve shared memory (region A stages the keys,
/// then holds `OA` outputs; region B stages `values` when given, under
/// `Op`'s fill, then holds `OB` outputs; the positions region where
/// `POS`), take the tile's ticket, stage the tile and flag its keys.
/// Where `PREFETCH`, the tile of the block's own index is asked of L2
/// while the ticket is in flight (the ticket is that index for most
/// blocks, or a near one; [`policy::PREFETCH_RUNS`]).
///
/// # Safety
/// `keys` (and `values`) hold `n` elements; `temp` and `spare` as the
/// kernels' contracts say; all threads call it once.
#[inline(always)]
#[track_caller]
pub(crate) unsafe fn open_key_tile<
    K: Element,
    V: Value,
    Op: Monoid<V>,
    OA,
    SB,
    OB,
    const B: u32,
    const I: usize,
    const POS: u8,
    const PREFETCH: bool,
>(
    keys: *const K,
    values: Option<*const V>,
    n: u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) -> KeyTile<V> {
    // SAFETY (throughout): the caller's contract; shared accesses inside
    // the carved regions.
    unsafe { clear_words::<B>(spare, spare_words) };
    let s = TileSmem::<V>::carve::<K, OA, SB, OB, I, POS>(B);
    let sk = s.a.after::<K>(0);
    let status = Status::new(temp, n);
    if PREFETCH {
        let guess = gpu::block_idx() as u64 * tile_len(B, I);
        unsafe { prefetch_tile::<K, B, I>(keys, n, guess) };
        if let Some(values) = values {
            unsafe { prefetch_tile::<V, B, I>(values, n, guess) };
        }
    }
    let tile = unsafe { status.take_ticket(s.look.ticket) };
    let start = tile as u64 * tile_len(B, I);
    let (prev, next) = unsafe { stage_keys::<K, B, I>(keys, n, start, sk) };
    if let Some(values) = values {
        unsafe { stage_tile_unsynced::<V, Op, B, I>(values, n, start, s.b.after::<V>(0)) };
    }
    gpu::sync_threads();
    let f = unsafe { key_flags::<K, B, I>(sk, prev, next, n, start) };
    KeyTile { s, status, tile, start, f }
}

/// The second half of the kernels that produce one output per run
/// ([`reduce`]): scan the tile's pairs, then at every item whose bit is
/// set in `outs` (the last item of an output run) call `emit(j, i, run)`
/// (its place in this thread, its index and the tile-local carry through
/// it: the count is the tile's starts so far, the value the run's items
/// in this tile), which keeps what the output needs at the run's *slot*
/// of the tile, `run.count`; then the block writes the tile's slots out
/// coalesced, `write(r, g, &edge)` putting slot `r` at output `g =
/// before.count - 1 + r`. The value kept at slot 0 (a run begun before
/// the tile) lacks the items before the tile: `write` combines
/// [`RunEdge::carried`] before it. The thread holding item `n - 1` writes
/// the number of outputs, `before.count` plus its local count there, to
/// `count`. `UNROLL` writes the per-item loop out (for `pairs` whose
/// values index an array).
///
/// **The look-back overlaps the walk.** Nothing but the outputs' indices
/// and slot 0's value needs the tiles before this one, so every warp
/// walks its items first, warp 0 then looks back ([`look_back_deferred`])
/// while the others wait, and one barrier hands its result to the block.
/// Before, warp 0 looked back while the block waited at a barrier, and
/// the walk came after it between two more. H200, 2^28, against that, in
/// the same call: run-length encoding 1.02-1.03x, `reduce_by_key`
/// 1.02-1.03x, the non-trivial runs 1.07-1.09x at runs of 8 and 1000
/// (and under ptxas sm_90 run-length encoding takes 40 registers instead
/// of 48, `reduce_by_key` 40 instead of 56). With warp 0 looking back
/// before its own walk they were 0.96-1.01x: its walk then comes last.
///
/// **Which slots a tile fills** follows from two flags and the tile's
/// total, with no block-wide min and max: the slot of the first output
/// ([`RunEdge::lo`]) is 0 when the tile starts inside a run begun before
/// it (that run's output lands in this tile, or in a later one, at slot 0)
/// and 1 when the tile's first item starts a run; the slot of the last is
/// the tile's count of starts when its last item ends a run (always so
/// for item `n - 1`), else one less (the last run's output belongs to a
/// later tile). Both hold for [`reduce::non_trivial_runs`] too, whose
/// starts are the heads of runs of two or more: a tile that begins with
/// a head can only end such a run after starting it.
///
/// # Safety
/// As [`scan_pairs`]; every thread has read the staged items it needs
/// (its keys' flags, its values) before the call; `emit` stores only to
/// slot `run.count` of regions with room for `tile_len + 1` slots that no
/// thread reads after the scan but `write` (the staged values, free once
/// read, or the positions region), and `write` reads only slots the tile
/// filled (`lo..hi` here, and `r - 1` for `r > lo`) and writes outputs
/// below `cap`; `count` holds one element.
#[inline(always)]
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn emit_runs<V: Value, Op: Monoid<V>, const B: u32, const I: usize, const UNROLL: bool>(
    t: &KeyTile<V>,
    n: u64,
    pairs: Pairs<impl PairValues<V, Op>>,
    outs: u32,
    emit: impl Fn(usize, u64, Local<V>),
    write: impl Fn(u32, u64, &RunEdge<V>),
    count: *mut u64,
    cap: u64,
) {
    let w = unsafe { walk_runs::<V, Op, B, I, UNROLL, false>(t, pairs, outs, |j, i, run, _| emit(j, i, run), count) };
    let ends_run = t.start + tile_len(B, I) >= n || unsafe { t.s.edges.load(1) } != 0;
    let hi = w.total + ends_run as u32;
    let mut r = w.edge.lo + gpu::thread_idx();
    while r < hi {
        let g = w.first.wrapping_add(r as u64);
        if g < cap {
            write(r, g, &w.edge);
        }
        r += B;
    }
}

/// [`emit_runs`] for reduce-by-key, without a region of slots the size of
/// the tile: `emit(j, i, run, local)` keeps the run's value at its last
/// item's own tile position (where its staged value was) and, where its
/// slot in the warp, `local` (`run.count` less the warp's count before its
/// first item), is below [`policy::WARP_RUNS`], that position at `local`
/// in the warp's part of the positions region ([`WARP_POSITIONS`]). Each
/// warp then writes out its own items' runs, `write(r, p, g, &edge)`
/// putting the run of slot `r`, which ends at tile position `p`, at output
/// `g`:
///
/// - a warp whose runs all have positions kept (the usual case) gives
///   each lane one, as [`emit_runs`] does for the tile;
/// - a warp with more (runs shorter than four items on average, at 16
///   items a thread) takes `I` rounds of 32
///   consecutive positions, each lane testing its own in the word of the
///   thread holding it (that thread's first slot and `outs` bits):
///   consecutive outputs of a thread have consecutive slots, as `outs`
///   are the tails of `starts` (one start follows every tail but the
///   tile's last).
///
/// Warps with no outputs skip the write-out.
///
/// # Safety
/// As [`emit_runs`], with `emit` storing to its own item's position and to
/// slot `local` of its warp's part of the positions region only, `outs`
/// the tails of `pairs.starts`, and `I` at most 16.
#[inline(always)]
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn emit_runs_by_warp<V: Value, Op: Monoid<V>, const B: u32, const I: usize, const UNROLL: bool>(
    t: &KeyTile<V>,
    pairs: Pairs<impl PairValues<V, Op>>,
    outs: u32,
    emit: impl Fn(usize, u64, Local<V>, u32),
    write: impl Fn(u32, u32, u64, &RunEdge<V>),
    count: *mut u64,
    cap: u64,
) {
    const { assert!(I <= 16, "a thread's outputs and first slot share a u32") };
    let starts = pairs.starts;
    let w = unsafe { walk_runs::<V, Op, B, I, UNROLL, true>(t, pairs, outs, emit, count) };
    let any = gpu::warp::ballot(outs != 0);
    if any == 0 {
        return;
    }
    let lane = gpu::lane();
    let warp_first = (gpu::thread_idx() - lane) * I as u32;
    // The slot of this thread's first output: its starts through it.
    let through = (2u32 << Ord::min(outs.trailing_zeros(), 31)).wrapping_sub(1);
    let word = (w.entry + (starts & through).count_ones()) | outs << 16;
    // The warp's outputs fill slots `lo..=hi`.
    let lo = gpu::warp::shfl_idx(word, any.trailing_zeros()) & 0xFFFF;
    let last = gpu::warp::shfl_idx(word, 31 - any.leading_zeros());
    let hi = (last & 0xFFFF) + (last >> 16).count_ones() - 1;
    if hi - w.warp_base < policy::WARP_RUNS as u32 {
        let kept = t.s.warp_positions();
        let mut r = lo + lane;
        while r <= hi {
            // SAFETY: the caller's contract; slots the warp's runs kept.
            let p = unsafe { kept.load((r - w.warp_base) as usize) } as u32;
            let g = w.first.wrapping_add(r as u64);
            if g < cap {
                write(r, p, g, &w.edge);
            }
            r += gpu::WARP_SIZE;
        }
        return;
    }
    unrolled!(if I < 16 { I } else { 16 }, |k| {
        // Round k: the warp's positions 32 k + lane, held by threads
        // (32 k) / I ..= (32 k + 31) / I of the warp.
        let (from, to) = (k * 32 / I, (k * 32 + 31) / I);
        let held = ((2u64 << to) - (1u64 << from)) as u32;
        if any & held != 0 {
            let q = k as u32 * 32 + lane;
            let owner = q / I as u32;
            let theirs = gpu::warp::shfl_idx(word, owner);
            let j = q - owner * I as u32;
            let bits = theirs >> 16;
            if (bits >> j) & 1 != 0 {
                let r = (theirs & 0xFFFF) + (bits & ((1u32 << j) - 1)).count_ones();
                let g = w.first.wrapping_add(r as u64);
                if g < cap {
                    write(r, warp_first + q, g, &w.edge);
                }
            }
        }
    });
}

/// What [`walk_runs`] hands a write-out.
pub(crate) struct Walked<V: Value> {
    /// The tile-local count of starts before this thread's first item.
    pub(crate) entry: u32,
    /// The same before the warp's first item (where asked for, else 0).
    pub(crate) warp_base: u32,
    /// The tile's count of starts.
    pub(crate) total: u32,
    /// The output index of slot 0 (`before.count - 1`, wrapping).
    pub(crate) first: u64,
    pub(crate) edge: RunEdge<V>,
}

/// The part of [`emit_runs`] before its write-out: scan the tile's pairs,
/// walk this thread's items calling `emit` at its outputs, look back and
/// hand the result to the block; the thread holding item `n - 1` writes
/// the count.
///
/// # Safety
/// As [`emit_runs`].
#[inline(always)]
#[track_caller]
unsafe fn walk_runs<
    V: Value,
    Op: Monoid<V>,
    const B: u32,
    const I: usize,
    const UNROLL: bool,
    const WARP_BASE: bool,
>(
    t: &KeyTile<V>,
    pairs: Pairs<impl PairValues<V, Op>>,
    outs: u32,
    emit: impl Fn(usize, u64, Local<V>, u32),
    count: *mut u64,
) -> Walked<V> {
    let KeyTile { s, status, tile, start, f } = t;
    let (tile, start) = (*tile, *start);
    let tid = gpu::thread_idx();
    // The edge flags travel through the barriers below.
    // SAFETY (throughout): the caller's contract; two edge slots.
    if tid == 0 {
        unsafe { s.edges.store(0, f.heads & 1) };
    }
    if tid == B - 1 {
        unsafe { s.edges.store(1, (f.tails >> (I - 1)) & 1) };
    }
    let (mut run, total) = unsafe { scan_pairs_local::<V, Op, B, I>(status, tile, &pairs, s) };
    let entry = run.count;
    let warp_base = if WARP_BASE { gpu::warp::shfl_idx(entry, 0) } else { 0 };
    // Every thread read its staged items before the block scan's barrier:
    // the slots are free. A block of one warp has no such barrier.
    if B == gpu::WARP_SIZE {
        gpu::sync_threads();
    }
    let base = start + (tid as usize * I) as u64;
    // The run count past the thread's items (only the thread holding the
    // input's last item needs it): its starts added to the entry count,
    // without the walk below.
    let count_after = run.count + pairs.starts.count_ones();
    let mut step = |j: usize| {
        let starts = pairs.starts_at(j);
        run.count += starts as u32;
        run.value = segmented_value::<V, Op>(run.value, pairs.value.at(j), starts);
        if (outs >> j) & 1 != 0 {
            emit(j, base + j as u64, run, run.count.wrapping_sub(warp_base));
        }
    };
    // Written out where `pairs` reads an array of values: rolled, this loop
    // put `reduce_by_key`'s (4-byte keys, 16 items) in a 64-byte stack
    // frame. Rolled where it does not: written out, run-length encoding
    // took 70 registers instead of 40 (sm_90).
    // The walk only serves the outputs: a thread without any skips it
    // (at long runs most warps have none, and skip it whole). H200, 2^28
    // `i32`: the non-trivial runs at runs of 1 (none to write) 547 -> 475
    // us, `reduce_by_key` at runs of 1000 1144 -> 1121; runs of 8 within
    // 1%. See `docs/tuning/by_key.md`.
    if outs != 0 {
        if UNROLL {
            // (`unrolled!` writes out at most 16; `I` is at most that here.)
            const { assert!(!UNROLL || I <= 16, "unrolled per-item loop over 16 items") };
            unrolled!(if I < 16 { I } else { 16 }, |j| step(j));
        } else {
            for j in 0..I {
                step(j);
            }
        }
    }
    // Warp 0 looks back after its own walk: the walk is work the delay
    // before its first read would otherwise idle through.
    unsafe { look_back_deferred::<V, Op>(status, tile, total, s) };
    gpu::sync_threads();
    let before = unsafe { deferred_before::<V, Op>(status, tile, s) };
    if f.span.last {
        // Items past n add no starts (`starts` is masked to the input).
        unsafe { global::store(count, before.count + count_after as u64) };
    }
    let edge = RunEdge { lo: unsafe { s.edges.load(0) }, carried: before.value };
    Walked { entry, warp_base, total: total.count, first: before.count.wrapping_sub(1), edge }
}

/// The edge of a tile's run slots for [`emit_runs`]'s `write`.
pub(crate) struct RunEdge<V> {
    /// The tile's first filled slot: 0 when it starts inside a run begun
    /// before it, 1 when its first item starts a run.
    pub(crate) lo: u32,
    /// The value carried into the tile: in slot 0's run, what the tiles
    /// before it combined (for run lengths, its items before the tile),
    /// which `write` combines before the value the tile kept.
    pub(crate) carried: V,
}

#[allow(unused_imports)]
use crate::ops::{Max, Min};
use reduce::{non_trivial_runs, reduce_by_key, run_length_encode};
use scan::{scan_by_key, segmented_scan};

// The block sizes must include `policy::BLOCK`; 32 threads for the tests
// (tiles of 256 to 512 items, so a few thousand items cross many tiles).
entries! {
    reduce_by_key(keys: *const K, values: *const T, unique: *mut K, aggregates: *mut T, count: *mut u64, n: u64, cap: u64, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => reduce_by_key::<K, T, Op, {B}, { policy::reduce_items::<K, T>() }>;
        ops [sum = Sum, min = Min, max = Max] keys [u32, u64, i32, i64] types [i32, u32, f32, i64, u64, f64] blocks [256];
    reduce_by_key(keys: *const K, values: *const T, unique: *mut K, aggregates: *mut T, count: *mut u64, n: u64, cap: u64, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => reduce_by_key::<K, T, Op, {B}, { policy::reduce_items::<K, T>() }>;
        ops [sum = Sum] keys [u32] types [i32] blocks [32];
    scan_by_key(keys: *const K, values: *const T, output: *mut T, n: u64, init: u64, exclusive: u32, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => scan_by_key::<K, T, Op, {B}, { policy::items::<K, T>() }>;
        ops [sum = Sum, min = Min, max = Max] keys [u32, u64, i32, i64] types [i32, u32, f32, i64, u64, f64] blocks [256];
    scan_by_key(keys: *const K, values: *const T, output: *mut T, n: u64, init: u64, exclusive: u32, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => scan_by_key::<K, T, Op, {B}, { policy::items::<K, T>() }>;
        ops [sum = Sum] keys [u32] types [i32] blocks [32];
    // Run lengths are sums of ones: the operator axis names that, the key
    // axis the input type, the type axis the count type.
    run_length_encode(input: *const K, unique: *mut K, counts: *mut T, count: *mut u64, n: u64, cap: u64, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => run_length_encode::<K, T, {B}, { policy::rle_items::<K>() }>;
        ops [sum = Sum] keys [i32, u32, i64, u64, f32, f64] types [u32, u64] blocks [256];
    run_length_encode(input: *const K, unique: *mut K, counts: *mut T, count: *mut u64, n: u64, cap: u64, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => run_length_encode::<K, T, {B}, { policy::rle_items::<K>() }>;
        ops [sum = Sum] keys [u32] types [u32] blocks [32];
    non_trivial_runs(input: *const K, offsets: *mut T, lengths: *mut T, count: *mut u64, n: u64, cap: u64, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => non_trivial_runs::<K, T, {B}, { policy::ntr_items::<K>() }>;
        ops [sum = Sum] keys [i32, u32, i64, u64, f32, f64] types [u32, u64] blocks [256];
    non_trivial_runs(input: *const K, offsets: *mut T, lengths: *mut T, count: *mut u64, n: u64, cap: u64, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => non_trivial_runs::<K, T, {B}, { policy::ntr_items::<K>() }>;
        ops [sum = Sum] keys [u32] types [u32] blocks [32];
    segmented_scan(input: *const T, offsets: *const u64, segments: u64, output: *mut T, n: u64, init: u64, exclusive: u32, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => segmented_scan::<T, Op, {B}, { policy::segmented_items::<T>() }>;
        ops [sum = Sum, min = Min, max = Max] types [i32, u32, f32, i64, u64, f64] blocks [256];
    segmented_scan(input: *const T, offsets: *const u64, segments: u64, output: *mut T, n: u64, init: u64, exclusive: u32, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => segmented_scan::<T, Op, {B}, { policy::segmented_items::<T>() }>;
        ops [sum = Sum] types [i32] blocks [32];
}
