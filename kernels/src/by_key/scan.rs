//! The scans that restart at segment starts: by key (a start wherever the
//! key changes) and by offsets (CSR segment starts). See the
//! [module docs](super) for the scan they share.

use super::policy::{self, tile_len};
use super::{KeyTile, NO_POSITIONS, Pairs, Span, TileSmem, Value, open_key_tile, pad, scan_pairs};
use crate::block::tile::{read_items, stage_tile_unsynced, store_tile};
use crate::gpu::{self, global};
use crate::ops::{Element, Monoid, Sum};
use crate::single_pass::{clear_words, from_words};
use crate::warp;

/// This thread's outputs from the value carried into its first item
/// (`entry`: everything since the last start before it): inclusive `v`,
/// or exclusive `init` at a segment start and `init . v` (the values
/// since the start, before the item) elsewhere.
#[inline(always)]
fn finish<V: Value, Op: Monoid<V>, const I: usize>(
    entry: V,
    heads: u32,
    vals: &[V; I],
    init: V,
    exclusive: bool,
) -> [V; I] {
    let mut out = *vals;
    let mut acc = entry;
    for j in 0..I {
        let head = (heads >> j) & 1 != 0;
        let before = acc;
        acc = super::segmented_value::<V, Op>(acc, vals[j], head);
        out[j] = if !exclusive {
            acc
        } else if head {
            init
        } else {
            Op::combine(init, before)
        };
    }
    out
}

/// Scan by key: an inclusive (`exclusive == 0`) or exclusive scan of
/// `values` that restarts wherever the key differs from the one before.
/// The exclusive scan puts `init` (the first bytes of the word `init`) at
/// every run's head and `init . values[head..i]` after it; the inclusive
/// one ignores `init`.
///
/// ```text
/// keys      a a b b b
/// values    1 2 3 4 5
/// inclusive 1 3 3 7 12
/// exclusive i i+1 i i+3 i+7     (i = init)
/// ```
/// Results go back into the staged values and out striped.
///
/// # Safety
/// `keys`, `values` and `output` hold `n` elements (`output` may be
/// `values`); status as [`super::reduce::reduce_by_key`]. Shared memory:
/// [`smem_bytes`](super::smem_bytes)`::<K, K, V, V>(B, I, NO_POSITIONS)`, `I` from [`items`](super::policy::items).
pub unsafe fn scan_by_key<K: Element, V: Value, Op: Monoid<V>, const B: u32, const I: usize>(
    keys: *const K,
    values: *const V,
    output: *mut V,
    n: u64,
    init: u64,
    exclusive: u32,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    // SAFETY (throughout): the caller's contract; shared accesses inside
    // the carved regions.
    let KeyTile { s, status, tile, start, f } = unsafe {
        open_key_tile::<K, V, Op, K, V, V, B, I, NO_POSITIONS, { policy::PREFETCH_SCANS }>(
            keys,
            Some(values),
            n,
            temp,
            spare,
            spare_words,
        )
    };
    let sv = s.b.after::<V>(0);
    let vals = unsafe { read_items::<V, Op, I>(sv) };
    let pairs = Pairs { starts: f.heads, value: |j: usize| vals[j] };
    let entry = unsafe { scan_pairs::<V, Op, B, I>(&status, tile, &pairs, &s) }.entry::<Op>().value;
    let out = finish::<V, Op, I>(entry, f.heads, &vals, from_words([init, 0]), exclusive != 0);
    // Each thread rewrites only its own staged items; `store_tile` puts a
    // barrier before the striped stores.
    unsafe { store_tile::<V, B, I>(output, n, start, sv, &out) };
}

/// The first index `j` in `0..m` with `offsets[j] >= key` (or `m`), by one
/// warp: each round 32 lanes probe 32 evenly spread entries and the range
/// shrinks to the gap between the last probe below `key` and the next, a
/// 33-fold cut (4 rounds for a million offsets). Never reads outside
/// `0..m`, and ends for unsorted offsets too (with some index).
///
/// # Safety
/// `offsets` holds `m` elements; all 32 lanes of the warp call it.
#[inline(always)]
#[track_caller]
unsafe fn lower_bound_warp(offsets: *const u64, m: u64, key: u64) -> u64 {
    let lane = gpu::lane() as u64;
    let (mut lo, mut hi) = (0u64, m);
    while lo < hi {
        let span = hi - lo;
        if span <= 32 {
            let p = lo + lane;
            // SAFETY: p < hi <= m.
            let below = p < hi && unsafe { global::load(offsets.add(p as usize)) } < key;
            return lo + warp::reduce_all::<u32, Sum>(below as u32) as u64;
        }
        // Strictly increasing probes in lo..hi (span >= 33).
        let probe = |l: u64| lo + span * (l + 1) / 33;
        // SAFETY: probe(lane) < hi <= m.
        let below = unsafe { global::load(offsets.add(probe(lane) as usize)) } < key;
        let c = warp::reduce_all::<u32, Sum>(below as u32) as u64;
        let new_lo = if c == 0 { lo } else { probe(c - 1) + 1 };
        hi = if c == 32 { hi } else { probe(c) };
        lo = new_lo;
    }
    lo
}

/// Segmented scan: an inclusive or exclusive scan of `input` restarting
/// at every segment start, `offsets[0..segments]` (CSR: non-decreasing
/// starts, the last entry `n`; entries at `n` or beyond start nothing, and
/// item 0 always starts a segment). Exclusive: `init` at each start, as
/// [`scan_by_key`].
///
/// The tile's starts become flags in shared memory: warp 0 finds the first
/// offset at or after the tile (`lower_bound_warp`), then the block
/// reads the offsets from there to the tile's end, `B` at a time, and
/// flags each distinct one (so an empty segment's start, equal to the
/// next, is written once). The rest is [`scan_by_key`] with those flags.
///
/// # Safety
/// `input` and `output` hold `n` elements (`output` may be `input`),
/// `offsets` `segments`; status as [`super::reduce::reduce_by_key`]. Shared
/// memory: [`smem_bytes`](super::smem_bytes)`::<u32, u32, V, V>(B, I, NO_POSITIONS)`, `I` from
/// [`segmented_items`](super::policy::segmented_items).
pub unsafe fn segmented_scan<V: Value, Op: Monoid<V>, const B: u32, const I: usize>(
    input: *const V,
    offsets: *const u64,
    segments: u64,
    output: *mut V,
    n: u64,
    init: u64,
    exclusive: u32,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    // SAFETY (throughout): the caller's contract; shared accesses inside
    // the carved regions; flags at positions below the tile length.
    unsafe { clear_words::<B>(spare, spare_words) };
    let s = TileSmem::<V>::carve::<u32, u32, V, V, I, NO_POSITIONS>(B);
    let (flags, sv) = (s.a.after::<u32>(0), s.b.after::<V>(0));
    let status = super::Status::new(temp, n);
    let tile = unsafe { status.take_ticket(s.look.ticket) };
    let start = tile as u64 * tile_len(B, I);
    unsafe { stage_tile_unsynced::<V, Op, B, I>(input, n, start, sv) };
    let first = gpu::thread_idx() as usize * I;
    for j in 0..I {
        unsafe { flags.store(pad::<u32, I>(first + j), 0) };
    }
    if gpu::warp_idx() == 0 {
        let j0 = if start == 0 { 0 } else { unsafe { lower_bound_warp(offsets, segments, start) } };
        if gpu::lane() == 0 {
            unsafe { s.word.store(0, j0) };
        }
    }
    gpu::sync_threads();
    let end = Ord::min(start + tile_len(B, I), n);
    let mut j = unsafe { s.word.load(0) } + gpu::thread_idx() as u64;
    while j < segments {
        let o = unsafe { global::load(offsets.add(j as usize)) };
        if o >= end {
            break;
        }
        if o >= start && (j == 0 || unsafe { global::load(offsets.add(j as usize - 1)) } != o) {
            unsafe { flags.store(pad::<u32, I>((o - start) as usize), 1) };
        }
        j += B as u64;
    }
    gpu::sync_threads();
    let base = start + first as u64;
    let mut heads = (base == 0) as u32;
    for j in 0..I {
        heads |= ((unsafe { flags.load(pad::<u32, I>(first + j)) } != 0) as u32) << j;
    }
    heads &= Span::new::<I>(base, n).mask();
    let vals = unsafe { read_items::<V, Op, I>(sv) };
    let pairs = Pairs { starts: heads, value: |j: usize| vals[j] };
    let entry = unsafe { scan_pairs::<V, Op, B, I>(&status, tile, &pairs, &s) }.entry::<Op>().value;
    let out = finish::<V, Op, I>(entry, heads, &vals, from_words([init, 0]), exclusive != 0);
    unsafe { store_tile::<V, B, I>(output, n, start, sv, &out) };
}
