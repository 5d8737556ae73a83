//! The kernels that produce one output per run: reduce-by-key, run-length
//! encoding and the non-trivial runs. See the [module docs](super) for the
//! scan they share.

use super::policy::{self, PREFETCH_RUNS, tile_len};
use super::{
    KeyTile, Local, Ones, Pairs, RunEdge, TILE_POSITIONS, Value, WARP_POSITIONS, emit_runs, emit_runs_by_warp,
    open_key_tile, pad, positions_bytes,
};
use crate::block::tile::{first_items, read_items};
use crate::gpu::{self, global};
use crate::ops::{Element, Monoid, Sum};
use core::mem::size_of;

/// This thread's item `j` as a position in the tile.
#[inline(always)]
fn tile_position<const I: usize>(j: usize) -> u16 {
    (gpu::thread_idx() as usize * I + j) as u16
}

/// Reduce-by-key: for every run of equal consecutive keys, its key
/// (`unique`) and the combine of its values in order (`aggregates`), at
/// the run's index; the number of runs to `count[0]`.
///
/// ```text
/// keys    a a b b b c     pairs (head, value) scanned with Segmented<Op>;
/// values  1 2 3 4 5 6     at each tail (the key after differs, or the
/// tails     ^     ^ ^     input ends) the run c-1 is complete:
/// unique  a b c           its slot in the tile is c - c_before, and the
/// aggr    3 12 6          block writes the tile's runs contiguously
/// ```
/// One block per tile, tiles taken by ticket; status ([`Status`](super::Status):
/// at most 16 bytes a tile) in `temp`, zeroed; `spare` (`spare_words` words, the other half of
/// double-buffered storage) is zeroed for the next launch. Outputs at
/// index `cap` and beyond are dropped. Shared memory:
/// [`smem_bytes`](super::smem_bytes)`::<K, K, V, V>(B, I, WARP_POSITIONS)`, `I` from [`reduce_items`](super::policy::reduce_items).
///
/// # Safety
/// `keys` and `values` hold `n` elements, `unique` and `aggregates` `cap`,
/// `count` one; `temp` the status of `ceil(n / tile)` tiles, zeroed; the
/// grid has one block per tile.
pub unsafe fn reduce_by_key<K: Element, V: Value, Op: Monoid<V>, const B: u32, const I: usize>(
    keys: *const K,
    values: *const V,
    unique: *mut K,
    aggregates: *mut V,
    count: *mut u64,
    n: u64,
    cap: u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    // Launch bounds where shared memory allows four blocks (16 items), and
    // five for 4-byte keys and values.
    if B == policy::BLOCK && size_of::<K>() == 8 && size_of::<V>() == 4 {
        gpu::min_blocks_per_sm::<B, { policy::RUN_BLOCKS_PER_SM }>();
    } else if B == policy::BLOCK && size_of::<K>() == 4 && size_of::<V>() == 4 {
        gpu::min_blocks_per_sm::<B, { policy::REDUCE_NARROW_BLOCKS_PER_SM }>();
    }
    // SAFETY (throughout): the caller's contract; each region's output
    // slots (at most tile + 1) inside it.
    let t = unsafe {
        open_key_tile::<K, V, Op, K, V, V, B, I, WARP_POSITIONS, { PREFETCH_RUNS }>(
            keys,
            Some(values),
            n,
            temp,
            spare,
            spare_words,
        )
    };
    let (sk, sv) = (t.s.a.after::<K>(0), t.s.b.after::<V>(0));
    let vals = unsafe { read_items::<V, Op, I>(sv) };
    let pairs = Pairs { starts: t.f.heads, value: |j: usize| vals[j] };
    // A run's value goes where its last item's value was staged (each
    // thread's own items, read above); its key stays staged at the same
    // position, which the warp keeps at the run's slot in the warp where
    // there is room.
    let (sums, kept) = (sv, t.s.warp_positions());
    let emit = |j: usize, _: u64, run: Local<V>, local: u32| unsafe {
        let p = tile_position::<I>(j);
        sums.store(pad::<V, I>(p as usize), run.value);
        if local < policy::WARP_RUNS as u32 {
            kept.store(local as usize, p);
        }
    };
    let write = |r: u32, p: u32, g: u64, edge: &RunEdge<V>| unsafe {
        global::store(unique.add(g as usize), sk.load(pad::<K, I>(p as usize)));
        // Slot 0's run began before the tile: its items there first.
        let own = sums.load(pad::<V, I>(p as usize));
        global::store(aggregates.add(g as usize), if r == 0 { Op::combine(edge.carried, own) } else { own });
    };
    unsafe { emit_runs_by_warp::<V, Op, B, I, true>(&t, pairs, t.f.tails, emit, write, count, cap) };
}

/// Run-length encoding: for every run of equal consecutive items, the item
/// (`unique`) and the run's length (`counts`, in `C`), at the run's index;
/// the number of runs to `count[0]`. [`reduce_by_key`] with every value 1
/// under [`Sum`], and no values read. A run longer than `C` can count
/// wraps (the host refuses inputs that long for `u32` counts).
///
/// # Safety
/// As [`reduce_by_key`], without `values`; `unique` and `counts` hold
/// `cap` elements. Shared memory:
/// [`smem_bytes`](super::smem_bytes)`::<K, K, (), ()>(B, I, TILE_POSITIONS)`, `I` from [`rle_items`](super::policy::rle_items).
pub unsafe fn run_length_encode<K: Element, C: Value + Element<Wide = u64>, const B: u32, const I: usize>(
    input: *const K,
    unique: *mut K,
    counts: *mut C,
    count: *mut u64,
    n: u64,
    cap: u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    // Launch bounds where shared memory allows four blocks (28 keys).
    if B == policy::BLOCK && size_of::<K>() == 4 {
        gpu::min_blocks_per_sm::<B, { policy::RUN_BLOCKS_PER_SM }>();
    }
    // SAFETY (throughout): as in `reduce_by_key`. No second region: a
    // run's length follows from its end and the one before.
    let t = unsafe { open_runs_tile::<K, C, B, I>(input, n, temp, spare, spare_words) };
    let sk = t.s.a.after::<K>(0);
    let pairs = Pairs { starts: t.f.heads, value: Ones(first_items(I as u32)) };
    let pos = t.s.pos;
    let emit = |j: usize, _: u64, run: Local<C>| unsafe { pos.store(run.count as usize, tile_position::<I>(j)) };
    // Slot r > lo holds a run that starts right after slot r - 1's; the
    // first holds one that starts at the tile's start (lo = 1) or before
    // it, with `carried` items there (lo = 0).
    let write = |r: u32, g: u64, edge: &RunEdge<C>| unsafe {
        let p = pos.load(r as usize);
        let len = if r == edge.lo {
            let own = C::from_u64(p as u64 + 1);
            if r == 0 { Sum::combine(edge.carried, own) } else { own }
        } else {
            C::from_u64((p - pos.load(r as usize - 1)) as u64)
        };
        global::store(unique.add(g as usize), sk.load(pad::<K, I>(p as usize)));
        global::store(counts.add(g as usize), len);
    };
    unsafe { emit_runs::<C, Sum, B, I, false>(&t, n, pairs, t.f.tails, emit, write, count, cap) };
}

/// The runs longer than one item: for each, its offset (first index) and
/// length, in `C`, at its index among them; how many to `count[0]`.
///
/// The same scan with other pairs: the flag marks a head that is not also
/// a tail (a run of at least two starts), the value is 1 for every item of
/// such a run and 0 for items of runs of one, so at a tail that is not a
/// head the carried value is the run's length and its count the run's
/// index + 1.
///
/// ```text
/// input   a b b c d d d
/// flag    0 1 0 0 1 0 0
/// value   0 1 1 0 1 1 1
/// out         (1,2)   (4,3)   at the tails of b and d
/// ```
///
/// # Safety
/// As [`run_length_encode`]; `offsets` and `lengths` hold `cap` elements.
/// Shared memory: [`smem_bytes`](super::smem_bytes)`::<K, K, (), ()>(B, I, TILE_POSITIONS)`, `I` from [`ntr_items`](super::policy::ntr_items).
pub unsafe fn non_trivial_runs<K: Element, C: Value + Element<Wide = u64>, const B: u32, const I: usize>(
    input: *const K,
    offsets: *mut C,
    lengths: *mut C,
    count: *mut u64,
    n: u64,
    cap: u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    // Launch bounds where shared memory allows four blocks (28 keys).
    if B == policy::BLOCK && size_of::<K>() == 4 {
        gpu::min_blocks_per_sm::<B, { policy::RUN_BLOCKS_PER_SM }>();
    }
    // SAFETY (throughout): as in `reduce_by_key`. No second region: a
    // run's slot holds its first and last tile positions, and a tile has
    // at most `tile_len / 2` runs of two or more, so the slots fit the
    // positions region as pairs of `u16`.
    const { assert!(positions_bytes(B, I, TILE_POSITIONS) >= (tile_len(B, I) as usize / 2 + 1) * 4, "run ends fit as u32") };
    let t = unsafe { open_runs_tile::<K, C, B, I>(input, n, temp, spare, spare_words) };
    let ends_at = t.s.pos.after::<u32>(0);
    let start = t.start;
    // Bit j: item j starts a run of at least two; is in such a run; ends one.
    let f = &t.f;
    let (starts, inside, ends) = (f.heads & !f.tails, !(f.heads & f.tails), f.tails & !f.heads);
    let pairs = Pairs { starts, value: Ones(inside) };
    // A run that starts in the tile is shorter than the tile: its first
    // position is its last one less its length, less one. Slot 0's run
    // (lo = 0) started before the tile, with `carried` items there.
    let emit = |j: usize, _: u64, run: Local<C>| unsafe {
        let last = tile_position::<I>(j) as u32;
        let first = (last + 1).wrapping_sub(run.value.widen() as u32) & 0xFFFF;
        ends_at.store(run.count as usize, first << 16 | last);
    };
    let write = |r: u32, g: u64, edge: &RunEdge<C>| unsafe {
        let e = ends_at.load(r as usize);
        let last = (e & 0xFFFF) as u64;
        let (offset, len) = if r == 0 {
            let before = edge.carried.widen();
            (start - before, before + last + 1)
        } else {
            let first = (e >> 16) as u64;
            (start + first, last + 1 - first)
        };
        global::store(offsets.add(g as usize), C::from_u64(offset));
        global::store(lengths.add(g as usize), C::from_u64(len));
    };
    unsafe { emit_runs::<C, Sum, B, I, false>(&t, n, pairs, ends, emit, write, count, cap) };
}

/// The opening of the two kernels that read keys alone (run-length
/// encoding, the non-trivial runs): [`open_key_tile`] with no values and
/// a positions region by the tile's slots.
///
/// # Safety
/// As [`open_key_tile`].
#[inline(always)]
#[track_caller]
unsafe fn open_runs_tile<K: Element, C: Value, const B: u32, const I: usize>(
    input: *const K,
    n: u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) -> KeyTile<C> {
    // SAFETY: the caller's contract.
    unsafe {
        open_key_tile::<K, C, Sum, K, (), (), B, I, TILE_POSITIONS, { PREFETCH_RUNS }>(
            input,
            None,
            n,
            temp,
            spare,
            spare_words,
        )
    }
}
