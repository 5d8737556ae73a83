//! The kernels that produce one output per run: reduce-by-key, run-length
//! encoding and the non-trivial runs. See the [module docs](super) for the
//! scan they share.

use super::{Local, Pairs, Value, emit_runs, open_key_tile, pad};
use crate::block::tile::read_items;
use crate::gpu;
use crate::ops::{Element, Monoid, Sum};

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
/// One block per tile, tiles taken by ticket; status (16-byte [`Carry`](super::Carry)s)
/// in `temp`, zeroed; `spare` (`spare_words` words, the other half of
/// double-buffered storage) is zeroed for the next launch. Outputs at
/// index `cap` and beyond are dropped. Shared memory:
/// [`smem_bytes`](super::smem_bytes)`::<K, K, V, V>(B, I)`, `I` from [`items`](super::policy::items).
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
    // SAFETY (throughout): the caller's contract; each region's output
    // slots (at most tile + 1) inside it.
    let t = unsafe { open_key_tile::<K, V, Op, K, V, V, B, I>(keys, Some(values), n, temp, spare, spare_words) };
    let (sk, sv) = (t.s.a.after::<K>(0), t.s.b.after::<V>(0));
    let vals = unsafe { read_items::<V, Op, I>(sv) };
    let pairs = Pairs { starts: t.f.heads, value: |j: usize| vals[j] };
    // A run's slot holds its last item's tile position; its key is read
    // from the staged keys (which stay) when the slots are written out.
    let emit = |j: usize, _: u64, run: Local<V>| (tile_position::<I>(j), run.value);
    let key = |p: u16| unsafe { sk.load(pad::<K, I>(p as usize)) };
    let (slots, outs) = ((t.s.pos, sv), t.f.tails);
    unsafe {
        emit_runs::<V, Op, u16, K, V, B, I, true>(
            &t,
            n,
            pairs,
            outs,
            emit,
            slots,
            key,
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
/// [`smem_bytes`](super::smem_bytes)`::<K, K, C, C>(B, I)`, `I` from [`rle_items`](super::policy::rle_items).
pub unsafe fn run_length_encode<K: Element, C: Value, const B: u32, const I: usize>(
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
    let t = unsafe { open_key_tile::<K, C, Sum, K, C, C, B, I>(input, None, n, temp, spare, spare_words) };
    let (sk, sc) = (t.s.a.after::<K>(0), t.s.b.after::<C>(0));
    let pairs = Pairs { starts: t.f.heads, value: |_| C::ONE };
    let emit = |j: usize, _: u64, run: Local<C>| (tile_position::<I>(j), run.value);
    let key = |p: u16| unsafe { sk.load(pad::<K, I>(p as usize)) };
    let (slots, outs) = ((t.s.pos, sc), t.f.tails);
    unsafe {
        emit_runs::<C, Sum, u16, K, C, B, I, false>(&t, n, pairs, outs, emit, slots, key, (unique, counts), count, cap)
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
/// Shared memory: [`smem_bytes`](super::smem_bytes)`::<K, C, C, C>(B, I)`, `I` from [`ntr_items`](super::policy::ntr_items).
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
    // SAFETY (throughout): as in `reduce_by_key`.
    let t = unsafe { open_key_tile::<K, C, Sum, C, C, C, B, I>(input, None, n, temp, spare, spare_words) };
    let (so, sl) = (t.s.a.after::<C>(0), t.s.b.after::<C>(0));
    // Bit j: item j starts a run of at least two; is in such a run; ends one.
    let f = &t.f;
    let (starts, inside, ends) = (f.heads & !f.tails, !(f.heads & f.tails), f.tails & !f.heads);
    let pairs = Pairs { starts, value: |j: usize| if (inside >> j) & 1 != 0 { C::ONE } else { C::ZERO } };
    let emit = |_: usize, i: u64, run: Local<C>| (C::from_u64(i + 1 - run.value.widen()), run.value);
    let slots = (so, sl);
    unsafe {
        emit_runs::<C, Sum, C, C, C, B, I, false>(
            &t,
            n,
            pairs,
            ends,
            emit,
            slots,
            |o| o,
            (offsets, lengths),
            count,
            cap,
        )
    };
}
