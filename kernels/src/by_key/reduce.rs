//! The kernels that produce one output per run: reduce-by-key, run-length
//! encoding and the non-trivial runs. See the [module docs](super) for the
//! scan they share.

use super::policy::ITEMS;
use super::{Carry, Value, emit_runs, open_key_tile};
use crate::block::tile::read_items;
use crate::ops::{Element, Monoid, Sum};

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
    // SAFETY (throughout): the caller's contract; each region's output
    // slots (at most tile + 1) inside it.
    let t = unsafe { open_key_tile::<K, V, Op, K, V, V, B>(keys, Some(values), n, temp, spare, spare_words) };
    let (sk, sv) = (t.s.a.after::<K>(0), t.s.b.after::<V>(0));
    let vals = unsafe { read_items::<V, Op, ITEMS>(sv) };
    let pair = |j: usize| Carry::new((t.f.heads >> j) & 1, vals[j]);
    let emit = |j: usize, _: u64, run: Carry<V>| (t.f.keys[j], run.value);
    let outs = t.f.tails;
    unsafe { emit_runs::<K, V, Op, K, V, B>(&t, n, pair, outs, emit, (sk, sv), (unique, aggregates), count, cap) };
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
    let t = unsafe { open_key_tile::<K, C, Sum, K, C, C, B>(input, None, n, temp, spare, spare_words) };
    let (sk, sc) = (t.s.a.after::<K>(0), t.s.b.after::<C>(0));
    let pair = |j: usize| Carry::new((t.f.heads >> j) & 1, C::ONE);
    let emit = |j: usize, _: u64, run: Carry<C>| (t.f.keys[j], run.value);
    let outs = t.f.tails;
    unsafe { emit_runs::<K, C, Sum, K, C, B>(&t, n, pair, outs, emit, (sk, sc), (unique, counts), count, cap) };
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
    let t = unsafe { open_key_tile::<K, C, Sum, C, C, C, B>(input, None, n, temp, spare, spare_words) };
    let (so, sl) = (t.s.a.after::<C>(0), t.s.b.after::<C>(0));
    // Bit j: item j starts a run of at least two; is in such a run; ends one.
    let f = &t.f;
    let (starts, inside, ends) = (f.heads & !f.tails, !(f.heads & f.tails), f.tails & !f.heads);
    let pair = |j: usize| Carry::new((starts >> j) & 1, if (inside >> j) & 1 != 0 { C::ONE } else { C::ZERO });
    let emit = |_: usize, i: u64, run: Carry<C>| (C::from_u64(i + 1 - run.value.widen()), run.value);
    unsafe { emit_runs::<K, C, Sum, C, C, B>(&t, n, pair, ends, emit, (so, sl), (offsets, lengths), count, cap) };
}
