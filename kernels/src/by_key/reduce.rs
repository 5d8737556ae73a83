//! The kernels that produce one output per run: reduce-by-key, run-length
//! encoding and the non-trivial runs. See the [module docs](super) for the
//! scan they share.

use super::policy::{ITEMS, tile_len};
use super::{Carry, TileSmem, Value, emit_runs, key_flags, stage_keys};
use crate::block::tile::{read_items, stage_tile_unsynced};
use crate::gpu;
use crate::ops::{Element, Monoid, Sum};
use crate::single_pass::{TileStatus, clear_words};

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
/// One block per tile, tiles taken by ticket; status (16-byte [`Carry`]s)
/// in `temp`, zeroed; `spare` (`spare_words` words, the other half of
/// double-buffered storage) is zeroed for the next launch. Outputs at
/// index `cap` and beyond are dropped. Shared memory:
/// [`smem_bytes`](super::smem_bytes)`::<K, K, V, V>(B)`.
///
/// # Safety
/// `keys` and `values` hold `n` elements, `unique` and `aggregates` `cap`,
/// `count` one; `temp` the status of `ceil(n / tile)` tiles, zeroed; the
/// grid has one block per tile.
pub unsafe fn reduce_by_key<K: Element, V: Value, Op: Monoid<V>, const B: u32>(
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
    // SAFETY (throughout): the caller's contract; shared accesses inside
    // the carved regions, each region's output slots (at most tile + 1)
    // inside it.
    unsafe { clear_words::<B>(spare, spare_words) };
    let s = TileSmem::<V>::carve::<K, K, V, V>(B);
    let (sk, sv) = (s.a.after::<K>(0), s.b.after::<V>(0));
    let status = TileStatus::<Carry<V>>::new(temp);
    let tile = unsafe { status.take_ticket(s.look.ticket) };
    let start = tile as u64 * tile_len(B);
    let (prev, next) = unsafe { stage_keys::<K, B>(keys, n, start, sk) };
    unsafe { stage_tile_unsynced::<V, Op, B, ITEMS>(values, n, start, sv) };
    gpu::sync_threads();
    let f = unsafe { key_flags::<K, B>(sk, prev, next, n, start) };
    let vals = unsafe { read_items::<V, Op, ITEMS>(sv) };
    let pair = |j: usize| Carry::new((f.heads >> j) & 1, vals[j]);
    let key = |i: u64| f.keys[(i % ITEMS as u64) as usize];
    let emit = |i: u64, run: Carry<V>| (key(i), run.value);
    unsafe {
        emit_runs::<V, Op, K, V, B>(
            &s,
            &status,
            tile,
            start,
            n,
            &f,
            pair,
            f.tails,
            emit,
            (sk, sv),
            (unique, aggregates),
            count,
            cap,
        )
    };
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
/// [`smem_bytes`](super::smem_bytes)`::<K, K, C, C>(B)`.
pub unsafe fn run_length_encode<K: Element, C: Value, const B: u32>(
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
    // SAFETY (throughout): as in `reduce_by_key`.
    unsafe { clear_words::<B>(spare, spare_words) };
    let s = TileSmem::<C>::carve::<K, K, C, C>(B);
    let (sk, sc) = (s.a.after::<K>(0), s.b.after::<C>(0));
    let status = TileStatus::<Carry<C>>::new(temp);
    let tile = unsafe { status.take_ticket(s.look.ticket) };
    let start = tile as u64 * tile_len(B);
    let (prev, next) = unsafe { stage_keys::<K, B>(input, n, start, sk) };
    gpu::sync_threads();
    let f = unsafe { key_flags::<K, B>(sk, prev, next, n, start) };
    let pair = |j: usize| Carry::new((f.heads >> j) & 1, C::ONE);
    let key = |i: u64| f.keys[(i % ITEMS as u64) as usize];
    let emit = |i: u64, run: Carry<C>| (key(i), run.value);
    unsafe {
        emit_runs::<C, Sum, K, C, B>(
            &s,
            &status,
            tile,
            start,
            n,
            &f,
            pair,
            f.tails,
            emit,
            (sk, sc),
            (unique, counts),
            count,
            cap,
        )
    };
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
/// Shared memory: [`smem_bytes`](super::smem_bytes)`::<K, C, C, C>(B)`.
pub unsafe fn non_trivial_runs<K: Element, C: Value + Element<Wide = u64>, const B: u32>(
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
    // SAFETY (throughout): as in `reduce_by_key`.
    unsafe { clear_words::<B>(spare, spare_words) };
    let s = TileSmem::<C>::carve::<K, C, C, C>(B);
    let (sk, so, sl) = (s.a.after::<K>(0), s.a.after::<C>(0), s.b.after::<C>(0));
    let status = TileStatus::<Carry<C>>::new(temp);
    let tile = unsafe { status.take_ticket(s.look.ticket) };
    let start = tile as u64 * tile_len(B);
    let (prev, next) = unsafe { stage_keys::<K, B>(input, n, start, sk) };
    gpu::sync_threads();
    let f = unsafe { key_flags::<K, B>(sk, prev, next, n, start) };
    // Bit j: item j starts a run of at least two; is in such a run; ends one.
    let (starts, inside, ends) = (f.heads & !f.tails, !(f.heads & f.tails), f.tails & !f.heads);
    let pair = |j: usize| Carry::new((starts >> j) & 1, if (inside >> j) & 1 != 0 { C::ONE } else { C::ZERO });
    let emit = |i: u64, run: Carry<C>| (C::from_u64(i + 1 - run.value.widen()), run.value);
    unsafe {
        emit_runs::<C, Sum, C, C, B>(
            &s,
            &status,
            tile,
            start,
            n,
            &f,
            pair,
            ends,
            emit,
            (so, sl),
            (offsets, lengths),
            count,
            cap,
        )
    };
}
