//! Segments that are long on average: each long segment in chunks of a
//! block each, each short one a warp. No tiles, no spine. A segment is a
//! `begins[s]..ends[s]` pair: CSR offsets pass `offsets` and `offsets + 1`,
//! begin/end pairs their two arrays (any order, overlaps allowed: nothing
//! here depends on how the segments lie).

use super::{SegmentedReduction, policy};
use crate::block::reduce::reduce as block_reduce;
use crate::gpu::{self, Shared, WARP_SIZE, atomic, global, warp as gpu_warp};
use crate::ops::{Min, Sum};
use crate::reduce::finish::Accumulators;
use crate::single_pass::clear_words;
use crate::warp;
use core::mem::size_of;

/// Bytes of one vector load.
const VEC: u64 = 16;

/// The plan's header in `temp`, as `u32`s: the number of chunk items, the
/// number of bad segments (byte 4, [`policy::error_count`], where every
/// segmented kernel counts them), whether the items overflowed the plan's
/// room (not 0: see [`segmented_plan`]), and 128 bytes on, in a line of
/// its own, the work kernel's ticket: every block of the work launch
/// loads the count and the overflow word as it starts and takes tickets at
/// the same time.
const COUNT: usize = 0;
const OVERFLOW: usize = 3;
const TICKET: usize = 32;

/// A chunk item: its segment and the index of the segment's first item,
/// packed in a `u64` (both below 2^32: the host checks).
#[inline(always)]
fn item(s: u64, first: u32) -> u64 {
    s | (first as u64) << 32
}

/// Plans the work of [`segmented_chunks`] over the segments
/// `begins[s]..ends[s]`: a thread per segment (grid-stride); a segment of at least `short_len` elements
/// gets `ceil(len / chunk_len)` chunk items, placed by one atomic add per
/// warp (so in no fixed order: each segment's items are consecutive, and
/// what they compute does not depend on where they lie); the segment's
/// thread writes up to [`policy::PLAN_OWN_ITEMS`] of them, the warp
/// together where there are more. Segments shorter than `short_len`
/// get nothing here (the work kernel gives them a warp each). A segment
/// with `begin > end` or `end > n` is counted at byte 4 of `temp` and
/// planned as empty.
///
/// **Room.** The items are written only below `cap`. CSR offsets cannot
/// need more than the host's bound (their lengths add up to at most
/// `n`); begin/end pairs may overlap, so theirs can. A warp whose items
/// would pass `cap` writes none of them and marks the header's overflow
/// word, and then the work kernel takes no items at all: it gives every
/// segment a warp (correct for any pairs, slower where they are long).
///
/// ```text
/// lengths   5  40000  900  70000      (short_len 1024, chunk_len 16384)
/// items     -  3      -    5          at base, base + 3 (any order)
/// ```
///
/// # Safety
/// `begins` and `ends` hold `segments` elements, `segments < 2^32`; `temp` the
/// zeroed layout of [`policy::chunks_layout`] for `cap < 2^32` items
/// (for CSR offsets `n / chunk_len + min(segments, n / short_len) + 1`
/// bounds the items); `spare`/`spare_words` as in
/// [`super::flat::segmented_reduce`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn segmented_plan<const B: u32>(
    begins: *const u64,
    ends: *const u64,
    segments: u64,
    n: u64,
    chunk_len: u64,
    short_len: u64,
    cap: u64,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    // The work launch after this one may start now (where the host made it
    // a dependent launch): its blocks wait for this launch's end before
    // they read the plan.
    gpu::launch_dependents();
    // SAFETY: the caller's contract on `spare`.
    unsafe { clear_words::<B>(spare, spare_words) };
    let header = temp as *mut u32;
    let items = temp.wrapping_add(policy::CHUNKS_HEADER_BYTES / 8);
    // An empty segment is short (the work kernel writes it).
    let short_len = Ord::max(short_len, 1);
    let lane = gpu::lane();
    let stride = gpu::grid_dim() as u64 * B as u64;
    // Warp w of block b takes the 32 segments of group w * grid + b (and
    // every stride after): a few groups go to as many multiprocessors,
    // whose item stores then run side by side. Every lane runs the same
    // rounds, so the warp's shuffles see all its lanes.
    let mut base = (gpu::warp_idx() as u64 * gpu::grid_dim() as u64 + gpu::block_idx() as u64) * WARP_SIZE as u64;
    let mut bad = 0u32;
    while base < segments {
        let s = base + lane as u64;
        let (a, e) = if s < segments {
            // SAFETY: s < segments.
            unsafe { (global::load(begins.add(s as usize)), global::load(ends.add(s as usize))) }
        } else {
            (0, 0)
        };
        let ok = a <= e && e <= n;
        bad += !ok as u32;
        let len = if ok { e - a } else { 0 };
        let chunks = if len >= short_len { len.div_ceil(chunk_len) as u32 } else { 0 };
        let incl = warp::inclusive_scan::<u32, Sum>(chunks);
        let total = gpu_warp::shfl_idx(incl, WARP_SIZE - 1);
        let mut first = 0u32;
        if total != 0 {
            let mut at = 0u32;
            if lane == 0 {
                // SAFETY: the header's count.
                at = unsafe { atomic::add(header.add(COUNT), total) };
            }
            let at = gpu_warp::shfl_idx(at, 0);
            first = at + incl - chunks;
            // The warp's items past the room (overlapping pairs): none of
            // them written, the work kernel told (all lanes agree).
            let end = at as u64 + total as u64;
            if end > cap {
                if lane == 0 {
                    // SAFETY: the header's overflow word.
                    unsafe { global::store(header.add(OVERFLOW), 1u32) };
                }
                base += stride;
                continue;
            }
        }
        // An item: the chunk's bounds, its segment and the segment's first
        // item and item count. A segment of a few chunks: its lane writes
        // them (no shuffles; at mixed lengths most segments are so).
        let own = chunks <= policy::PLAN_OWN_ITEMS;
        let mut k = 0;
        while own && k < chunks {
            let lo = a + k as u64 * chunk_len;
            let hi = Ord::min(e, lo + chunk_len);
            // SAFETY: first + chunks <= the items planned <= cap.
            unsafe {
                let at = items.add(4 * (first + k) as usize);
                global::store_vec::<u64, 2>(at, [lo, hi]);
                global::store_vec::<u64, 2>(at.add(2), [item(s, first), chunks as u64]);
            }
            k += 1;
        }
        // Longer ones: the warp writes each one's items together, one
        // segment after another.
        let mut long = gpu_warp::ballot(!own);
        while long != 0 {
            let l = long.trailing_zeros();
            long &= long - 1;
            let (f, c) = (gpu_warp::shfl_idx(first, l), gpu_warp::shfl_idx(chunks, l));
            let (sa, se) = (gpu_warp::shfl_idx(a, l), gpu_warp::shfl_idx(e, l));
            let mut k = lane;
            while k < c {
                let lo = sa + k as u64 * chunk_len;
                let hi = Ord::min(se, lo + chunk_len);
                // SAFETY: f + c <= the items planned <= cap, 32 bytes each.
                unsafe {
                    let at = items.add(4 * (f + k) as usize);
                    global::store_vec::<u64, 2>(at, [lo, hi]);
                    global::store_vec::<u64, 2>(at.add(2), [item(base + l as u64, f), c as u64]);
                }
                k += WARP_SIZE;
            }
        }
        base += stride;
    }
    if bad != 0 {
        // SAFETY: the header's error count.
        unsafe { atomic::add(policy::error_count(temp), bad) };
    }
}

/// The work planned by [`segmented_plan`]: blocks take tickets, first for
/// the chunk items (a block reads its chunk, `[a + k * chunk_len, ...)` of
/// segment `[a, e)`, in 16-byte vectors, [`policy::CHUNK_LOADS`] in flight a thread, and
/// reduces it; a segment of one chunk is written at once, otherwise each
/// chunk leaves its partial and the last of the segment's blocks to count
/// in combines them in order), then for batches of consecutive segments,
/// a warp per segment for those shorter than `short_len` (16-byte loads
/// as the blocks make them, [`policy::CHUNK_LOADS`] in flight a lane). A ticket for the next work is taken
/// while the current one runs, so the grid may be any size: a resident
/// grid streams without a launch's worth of blocks idling.
///
/// ```text
/// work      0 .. items              items (segment, chunk): a block each
///           items .. + batches      SHORT_BATCH segments: a warp each short one
/// tickets   0 .. early               batches 0 .. early, run before the
///                                    wait for the plan (none for argmin
///                                    and argmax)
///           then                     the items and the other batches, each
///                                    in order; in the spreading build (`S`,
///                                    from policy::SPREAD_LARGE_FROM bytes of
///                                    input) and from policy::SPREAD_FROM
///                                    tickets a block, the batches evenly
///                                    among the items (`spread`), else after
///                                    them
///           after an overflow        the early batches again, for their
///                                    long segments
/// ```
///
/// The launch is a dependent launch of the plan (sm_90): its blocks may
/// start while the plan runs. The short batches need nothing of the plan
/// (the pairs and the input were written before it), so the first
/// `early` tickets ([`policy::early_batches`], one a block) are batches
/// that blocks run before they wait for the plan's end
/// (`griddepcontrol.wait`); the plan's run is spent on them.
///
/// H100 (2026-12-07, CUB 3.0.1 in the same call), `i32` mixed lengths:
/// sums 360 us at 2^28 (0.98x CUB), 34.6-35.2 at 2^24 (0.97-0.99x);
/// argmin 366 (0.98x) and 35.5 (1.03-1.05x). The dependent launch took
/// about 1 us off every 2^24 case, the early batches 0.3-2 more (segments
/// of 512: 30.6 -> 28.5) and 3 at 2^28. `f32` sums as fast since their
/// vectors are trees ([`SegmentedReduction::run_push_vec`]): 34.9-35.0 us
/// at 2^24 (1.00x CUB), 359-360 at 2^28 (0.98x).
///
/// H200, 2^28 `i32` sums, the plan launch included: mixed lengths 272 us
/// (94% of copy, 0.95x CUB; the flat kernel 296), segments of 2^20 248
/// (104%, 1.13x CUB), of 512 277 (94%, 2.4x CUB). ncu: the work kernel at
/// mixed lengths 261 us at 86% of DRAM's peak, the plan 8 (since its
/// items are written by their own thread: mixed 271 us, 0.97x CUB; at
/// 2^24 31, 0.97x). Argmin (the threads' runs meeting as `u64` keys):
/// mixed lengths 291 us (0.96x CUB; the flat kernel 342), segments of
/// 512 337 (77% of copy, 2.3x CUB), of 2^20 251 (102%, 1.40x CUB).
///
/// # Safety
/// `input` holds `n` elements, `begins`, `ends` and `out` `segments`;
/// `temp` as [`segmented_plan`] left it for the same arguments (after an
/// overflow, its items are ignored), its
/// ticket zero; dynamic shared memory [`policy::chunks_smem_bytes`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn segmented_chunks<R: SegmentedReduction, const B: u32, const V: usize, const S: bool>(
    input: *const R::In,
    n: u64,
    begins: *const u64,
    ends: *const u64,
    segments: u64,
    out: *mut R::Out,
    chunk_len: u64,
    short_len: u64,
    cap: u64,
    temp: *mut u64,
    early: u64,
) {
    const { assert!(V * size_of::<R::In>() == VEC as usize, "V elements make one 16-byte vector") };
    // Six blocks of 256 a multiprocessor for 4-byte inputs under plain
    // operators (ptxas sm_90: 40 registers capped without a spill, eight
    // loads in flight; the 8-byte types take 36-44 uncapped).
    // argmin/argmax run uncapped: 48 registers (52-53 for `f64`), five
    // blocks; with a 64-bit index an element they had spilled 44-124
    // bytes a thread at a cap of 32.
    if size_of::<R::In>() <= 4 && !R::NEEDS_START {
        gpu::max_registers::<{ policy::CHUNKS_REGISTERS }>();
    }
    // Argmin and argmax of 4-byte elements are bounded to five blocks
    // instead: left unbounded, ptxas (13.0, sm_90) gave the `i32` kernel
    // 44-46 registers and kept two to four of a round's eight loads in
    // flight; bounded, 48 and four at once, as the kernel had before the
    // begin/end pairs came here (H200, `i32` mixed lengths in the same
    // call: 296.5 -> 286 us at 2^28, 33.4 -> 32.0 at 2^24; `f32`, 48
    // registers either way, the same). Five blocks either way.
    if size_of::<R::In>() <= 4 && R::NEEDS_START {
        gpu::min_blocks_per_sm::<B, { policy::CHUNKS_BLOCKS_INDEXED }>();
    }
    let header = temp as *mut u32;
    let smem = Shared::<u8>::dynamic();
    let odd = policy::chunks_slots_odd::<R::Acc>(B);
    let words = smem.after::<u32>(policy::chunks_words_at::<R::Acc>(B));
    let tid = gpu::thread_idx();
    let batch = policy::SHORT_BATCH as u64;
    let batches = segments.div_ceil(batch);
    // No early batches for argmin and argmax (`NEEDS_START`): the code
    // before the wait folds away, as their kernels were (H100, 2^28 `i32`
    // mixed lengths: 369-370 us with one a block, 365-366 without).
    let early = if R::NEEDS_START { 0 } else { Ord::min(early, batches) };
    let take = || -> u32 {
        // SAFETY: the header's ticket (zero before the plan's launch, which
        // does not touch it).
        if tid == 0 { unsafe { atomic::add(header.add(TICKET), 1u32) } } else { 0 }
    };
    // Round r's ticket is in word r % 2, stored by thread 0 before the
    // barrier of round r - 1 (before the loop for round 0); thread 0 holds
    // the one after it, taken a round ahead. So a round has one barrier
    // (its block reduction's, or the short segments' closing one), plus one
    // where a segment's chunks meet: a word (and a set of slots) is written
    // again two rounds later, after every thread has passed the barrier
    // between. The first ticket goes to word 0 as it comes, mapped by
    // `ticket_work` after the barrier by every thread: thread 0 asks for both
    // first tickets at once, not the second after the first is back and
    // mapped (the gated spread's start measured 3% slower at 2^24 so).
    if tid == 0 {
        // SAFETY: word 0.
        unsafe { words.store(0, take()) };
    }
    let mut next = take();
    gpu::sync_threads();
    let mut round = 0usize;
    // The first `early` tickets are short batches that need nothing of
    // the plan (they read the pairs and the input, written before the
    // plan's launch): blocks run them before they wait for the plan,
    // beside the plan's run, each until it takes a later ticket. Words
    // as in the main loop below, the tickets raw.
    let short_len = Ord::max(short_len, 1);
    loop {
        let parity = round & 1;
        // SAFETY: words 0 and 1.
        let t = unsafe { words.load(parity) } as u64;
        if t >= early {
            break;
        }
        // SAFETY: the caller's contract; batch t < early <= batches.
        unsafe { short_batch::<R, V>(input, n, begins, ends, segments, out, t, 0, short_len) };
        if tid == 0 {
            // SAFETY: as in the main loop.
            unsafe { words.store(1 - parity, next) };
        }
        next = take();
        gpu::sync_threads();
        round += 1;
    }
    // Launched as a dependent launch of the plan (sm_90), this grid may
    // start while the plan runs: nothing the plan writes is read before
    // its end.
    gpu::grid_dependency_wait();
    let [items_at, arrive_at, partials_at, _] = policy::chunks_layout::<R::Acc>(cap);
    let items = (temp as *mut u8).wrapping_add(items_at) as *const u64;
    let arrive = (temp as *mut u8).wrapping_add(arrive_at) as *mut u32;
    let partials = (temp as *mut u8).wrapping_add(partials_at) as *mut R::Acc;
    // SAFETY: the header (the plan's count and overflow word, written by
    // the launch before). After an overflow no item is taken, and every
    // segment is short: it gets a warp. The overflow folds into `count`
    // and `short_len`, so the short segments' loop tests what it tested
    // before begin/end pairs came here (measured the same as testing the
    // overflow there; the speed came back with the launch bounds above).
    // The early batches left their long segments to items that will not
    // come: after an overflow `early` more tickets (`redo`) give those
    // their warps.
    let (overflow, planned) = unsafe { (global::load(header.add(OVERFLOW)), global::load(header.add(COUNT))) };
    let count = if overflow != 0 { 0 } else { planned as u64 };
    let (lo_len, short_len) = if overflow != 0 { (short_len, u64::MAX) } else { (0, short_len) };
    let redo = if overflow != 0 { early } else { 0 };
    // Tickets past the early ones: the items and the other batches, the
    // batches among the items in the spreading build (`S`) on launches of
    // many tickets a block only ([`policy::SPREAD_FROM`]), else after them
    // (and the redone batches after all). Without `S`, `spread` folds
    // away.
    let total = count + batches + redo;
    let spread_out =
        if S && total - early >= policy::SPREAD_FROM * gpu::grid_dim() as u64 { batches - early } else { 0 };
    let work = |t: u32| ticket_work(t, count, early, spread_out);
    let mut mapped = false;
    loop {
        let parity = round & 1;
        // SAFETY: words 0 and 1.
        let t = unsafe { words.load(parity) };
        let t = if mapped { t } else { work(t) } as u64;
        mapped = true;
        if t >= total {
            break;
        }
        if tid == 0 {
            // SAFETY: as above; its last reads were before the barrier of
            // the round before.
            unsafe { words.store(1 - parity, work(next)) };
        }
        next = take();
        let slots = smem.after::<u8>(parity * odd);
        if t < count {
            // SAFETY: t < count <= cap; the item's segment is valid and
            // at least short_len long (the plan).
            // The item's two halves in flight together: no load of the
            // segment bounds before the chunk's own.
            let ([lo, hi], [it, chunks]) = unsafe {
                let at = items.add(4 * t as usize);
                (global::load_vec::<u64, 2>(at), global::load_vec::<u64, 2>(at.add(2)))
            };
            let (s, first, chunks) = (it & 0xFFFF_FFFF, (it >> 32) as u32, chunks as u32);
            let a = lo - (t as u32 - first) as u64 * chunk_len;
            let run = unsafe { stream::<R, V, false>(input, lo, hi, tid as u64, B as u64) };
            let sum = block_total::<R, B>(run, lo, slots);
            if chunks == 1 {
                if tid == 0 {
                    unsafe { global::store(out.add(s as usize), R::out(sum, a, false)) };
                }
            } else {
                if tid == 0 {
                    // SAFETY: t < cap; first < cap (the plan).
                    let last = unsafe {
                        global::store(partials.add(t as usize), sum);
                        atomic::fence_device();
                        atomic::add(arrive.add(first as usize), 1u32) == chunks - 1
                    };
                    // SAFETY: word 2; its readers of the last round that
                    // had one read it before this round's reduction barrier.
                    unsafe { words.store(2, last as u32) };
                }
                gpu::sync_threads();
                if unsafe { words.load(2) } != 0 && gpu::warp_idx() == 0 {
                    // The segment's other chunks are all in: combine them
                    // in item order.
                    atomic::fence_device();
                    let lane = gpu::lane();
                    let mut acc = R::identity();
                    let mut j = lane;
                    while j < chunks {
                        // SAFETY: first + j < first + chunks <= cap.
                        let p = unsafe { global::load_volatile(partials.add((first + j) as usize)) };
                        acc = R::combine(acc, p);
                        j += WARP_SIZE;
                    }
                    // (Through `ranges::warp_join`, argmin on mixed
                    // lengths measured 5% slower at 2^28, H200: the PTX
                    // differs, the cause not looked into.)
                    let sum = warp::reduce_all::<R::Acc, Accumulators<R>>(acc);
                    if lane == 0 {
                        unsafe { global::store(out.add(s as usize), R::out(sum, a, false)) };
                    }
                }
            }
        } else {
            let j = t - count;
            // Batch j, or (after an overflow) early batch j - batches'
            // long segments.
            let (j, lo, hi) = if j < batches { (j, 0, short_len) } else { (j - batches, lo_len, u64::MAX) };
            // SAFETY: the caller's contract; j < batches.
            unsafe { short_batch::<R, V>(input, n, begins, ends, segments, out, j, lo, hi) };
            // The next round's ticket is in.
            gpu::sync_threads();
        }
        round += 1;
    }
}

/// Short batch `j` (segments `j * SHORT_BATCH ..`, [`policy::SHORT_PER_WARP`]
/// a warp), each of its segments of length in `[lo_len, hi_len)` by its
/// warp; a pair with `begin > end` or `end > n` (counted by the plan)
/// gives the identity where `lo_len` is 0.
///
/// # Safety
/// As [`segmented_chunks`]; `j` below the launch's batches.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn short_batch<R: SegmentedReduction, const V: usize>(
    input: *const R::In,
    n: u64,
    begins: *const u64,
    ends: *const u64,
    segments: u64,
    out: *mut R::Out,
    j: u64,
    lo_len: u64,
    hi_len: u64,
) {
    let lane = gpu::lane() as u64;
    let s0 = j * policy::SHORT_BATCH as u64 + gpu::warp_idx() as u64 * policy::SHORT_PER_WARP as u64;
    for i in 0..policy::SHORT_PER_WARP as u64 {
        let s = s0 + i;
        if s >= segments {
            break;
        }
        // SAFETY: s < segments.
        let (b, e) = unsafe { (global::load(begins.add(s as usize)), global::load(ends.add(s as usize))) };
        // Bad pairs were counted by the plan; they give the identity,
        // reading nothing.
        let ok = b <= e && e <= n;
        if if ok { e - b >= hi_len || e - b < lo_len } else { lo_len != 0 } {
            continue;
        }
        let (b, e) = if ok { (b, e) } else { (0, 0) };
        let run = unsafe { stream::<R, V, true>(input, b, e, lane, WARP_SIZE as u64) };
        let sum = warp_total::<R>(run, b);
        if lane == 0 {
            unsafe { global::store(out.add(s as usize), R::out(sum, b, b == e)) };
        }
    }
}

/// The work of raw ticket `t` as an index (an item `i < items`, or batch
/// `j` as `items + j`, the redone batches after the others): the first
/// `early` tickets are batches `0..early`; the rest go through [`spread`]
/// over the items and the next `batches_spread` batches. `t` past them all
/// stays itself.
#[inline(always)]
fn ticket_work(t: u32, items: u64, early: u64, batches_spread: u64) -> u32 {
    let t = t as u64;
    if t < early {
        return (items + t) as u32;
    }
    let w = spread((t - early) as u32, items, batches_spread) as u64;
    (if w < items { w } else { w + early }) as u32
}

/// The work of ticket `t` among `items` chunk items and `batches` short
/// batches: an item `i < items`, or the batch `items + j`. The batches lie
/// evenly among the items (ticket `t` is a batch where `t * batches /
/// total` steps up), so that their latency-bound warps run beside blocks
/// that stream chunks instead of all at the end of the launch. A
/// bijection of `0..total`; `t >= total` stays `t` (the end), and with
/// `batches = 0` every ticket does (the batches after the items).
#[inline(always)]
fn spread(t: u32, items: u64, batches: u64) -> u32 {
    let (t, total) = (t as u64, items + batches);
    if t >= total || batches == 0 {
        return t as u32;
    }
    // Both products below 2^64: t < total < 2^33, batches < 2^32.
    let before = t * batches / total;
    let after = (t + 1) * batches / total;
    (if after > before { items + before } else { t - before }) as u32
}

/// The runs of a warp (offsets from `p0`) combined, valid in lane 0: as
/// [`SegmentedReduction::run_key`]s where the reduction is keyed, else as
/// accumulators.
#[inline(always)]
pub(super) fn warp_total<R: SegmentedReduction>(run: R::Run, p0: u64) -> R::Acc {
    if R::KEYED {
        R::key_acc(warp::reduce::<u64, Min>(R::run_key(run, p0)), p0)
    } else {
        warp::reduce_all::<R::Acc, Accumulators<R>>(R::run_end(run, p0))
    }
}

/// The runs of a block of `B` threads combined, in thread 0, as
/// [`warp_total`]; `slots` holds `B / 32` accumulators.
#[inline(always)]
fn block_total<R: SegmentedReduction, const B: u32>(run: R::Run, p0: u64, slots: Shared<u8>) -> R::Acc {
    if R::KEYED {
        const { assert!(!R::KEYED || size_of::<R::Acc>() >= size_of::<u64>(), "a key fits an accumulator's slot") };
        R::key_acc(block_reduce::<u64, Min, B>(R::run_key(run, p0), slots.after::<u64>(0)), p0)
    } else {
        block_reduce::<R::Acc, Accumulators<R>, B>(R::run_end(run, p0), slots.after::<R::Acc>(0))
    }
}

/// `[lo, hi)` combined by `w` threads, this one `me`: 16-byte vectors of
/// `V` elements, `w` vectors apart and [`policy::CHUNK_LOADS`] in flight a
/// thread, the elements before the first 16-byte boundary and after the
/// last one singly (all of them where the input is not 16-byte aligned).
/// The vectors' elements go through a [`SegmentedReduction::Run`] with
/// their offsets from `lo` (the accumulator itself for plain operators;
/// for argmin/argmax the best element and its `u32` offset, a min, a
/// compare and a select an element), returned as the run: the threads'
/// runs meet in [`warp_total`] or [`block_total`]. `STARTED`: the run
/// starts at the thread's first vector element
/// ([`SegmentedReduction::run_started`]), as the warps of short segments
/// take it: H200, 2^28 `i32` argmin, segments of 512 1.12x faster, but
/// the blocks' chunks 1-3% slower (mixed lengths, segments of 2^20).
///
/// # Safety
/// `input` holds at least `hi` elements; `hi - lo < 2^31` (a chunk, or a
/// segment shorter than a chunk: the host bounds both).
#[inline(always)]
pub(super) unsafe fn stream<R: SegmentedReduction, const V: usize, const STARTED: bool>(
    input: *const R::In,
    lo: u64,
    hi: u64,
    me: u64,
    w: u64,
) -> R::Run {
    let v = V as u64;
    let aligned = (input as usize).is_multiple_of(VEC as usize);
    let a = if aligned { Ord::min(lo.next_multiple_of(v), hi) } else { hi };
    let z = Ord::max(a, hi - hi % v);
    // The head [lo, a) (fewer than `v` elements, or all when unaligned)
    // and the tail [z, hi) (fewer than `v`), ahead of the run: the run
    // keeps the first of equal elements among its own, and `combine`
    // breaks ties by index, so the order between them does not matter.
    let mut lead = unsafe { stream_scalar::<R>(input, lo, a, me, w) };
    if z + me < hi {
        lead = R::combine(lead, unsafe { R::load(input, input, z + me) });
    }
    const U: usize = policy::CHUNK_LOADS;
    let mut i = a + me * v;
    // The thread's first vector element, where it has one (offsets below
    // 2^31: the caller).
    let first = if i < z { (i - lo) as u32 } else { u32::MAX };
    let mut run = if STARTED { R::run_started(lead, first) } else { R::run_from(lead) };
    while i + (U as u64 - 1) * w * v < z {
        // SAFETY: below z <= hi, 16-byte aligned.
        let x: [_; U] = core::array::from_fn(|k| unsafe { R::load_raw::<V>(input, input, i + k as u64 * w * v) });
        // Offsets from lo: below 2^31 (the caller).
        let off = (i - lo) as u32;
        unrolled!(U, |k| run = R::run_push_vec::<V, STARTED>(run, x[k].a, off + (k as u64 * w * v) as u32));
        i += U as u64 * w * v;
    }
    if i < z {
        // The last round, fewer than U vectors a thread: all in flight
        // together (one at a time, a chunk of a few vectors a thread paid a
        // round trip for each). A vector past z loads the last one again
        // (valid: i < z) and is not combined.
        let x: [_; U] = core::array::from_fn(|k| {
            let at = Ord::min(i + k as u64 * w * v, z - v);
            // SAFETY: a <= at < z, 16-byte aligned.
            unsafe { R::load_raw::<V>(input, input, at) }
        });
        let off = (i - lo) as u32;
        unrolled!(U, |k| {
            let past = i + k as u64 * w * v >= z;
            let c = R::run_push_vec::<V, STARTED>(run, x[k].a, off + (k as u64 * w * v) as u32);
            run = if past { run } else { c };
        });
    }
    run
}

/// `[lo, hi)` combined by `w` threads, this one `me`, element by element
/// `w` apart, four loads in flight (the last up to three together too).
///
/// # Safety
/// `input` holds at least `hi` elements.
#[inline(always)]
unsafe fn stream_scalar<R: SegmentedReduction>(input: *const R::In, lo: u64, hi: u64, me: u64, w: u64) -> R::Acc {
    let mut acc = R::identity();
    let mut i = lo + me;
    while i + 3 * w < hi {
        // SAFETY: below hi.
        let x = unsafe {
            [
                R::load(input, input, i),
                R::load(input, input, i + w),
                R::load(input, input, i + 2 * w),
                R::load(input, input, i + 3 * w),
            ]
        };
        acc = R::combine(R::combine(acc, x[0]), R::combine(x[1], R::combine(x[2], x[3])));
        i += 4 * w;
    }
    if i < hi {
        // Fewer than four loads left: in flight together, each past hi
        // loading the last element again (valid: i < hi) and not combined.
        let x: [_; 3] = core::array::from_fn(|k| {
            // SAFETY: lo <= the index < hi.
            unsafe { R::load(input, input, Ord::min(i + k as u64 * w, hi - 1)) }
        });
        unrolled!(3, |k| {
            let c = R::combine(acc, x[k]);
            acc = if i + k as u64 * w < hi { c } else { acc };
        });
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::{spread, ticket_work};
    use std::{format, vec};

    /// `ticket_work` gives the first `early` tickets batches `0..early` in
    /// order, is a bijection of `0..items + batches + redo` (the redone
    /// batches last), with the batches spread or not, and leaves the
    /// tickets past the end alone.
    #[test]
    fn early_tickets_then_the_rest() {
        for (items, batches, early, redo) in
            [(0, 0, 0, 0), (0, 5, 5, 5), (5, 3, 0, 0), (7, 3, 2, 0), (3, 7, 7, 0), (100, 13, 4, 0), (0, 13, 4, 4)]
        {
            for spread_on in [false, true] {
                let total = items + batches + redo;
                let spread_out = if spread_on { batches - early } else { 0 };
                let mut seen = vec![false; total as usize];
                for t in 0..total {
                    let w = ticket_work(t as u32, items, early, spread_out) as u64;
                    let what = format!("items {items} batches {batches} early {early} ticket {t}");
                    if t < early {
                        assert_eq!(w, items + t, "{what}");
                    }
                    assert!(w < total && !seen[w as usize], "{what}: {w}");
                    seen[w as usize] = true;
                }
                for t in [total, total + 1, total + 1000] {
                    assert_eq!(ticket_work(t as u32, items, early, spread_out) as u64, t);
                }
            }
        }
    }

    /// `spread` hands out items 0, 1, ... and batches `items`, `items + 1`,
    /// ... each in order (so it is a bijection of `0..total`), no two
    /// batches further apart than `ceil(total / batches)` tickets, and
    /// leaves the tickets past the end alone, and every ticket where no
    /// batch is spread.
    #[test]
    fn spread_interleaves_in_order() {
        for (items, batches) in
            [(0, 0), (0, 5), (5, 0), (1, 1), (7, 3), (3, 7), (100, 13), (13, 100), (22_369, 8_703), (4_000_000, 1)]
        {
            let total = items + batches;
            let (mut next_item, mut next_batch, mut last_batch) = (0u64, items, None::<u64>);
            for t in 0..total {
                let w = spread(t as u32, items, batches) as u64;
                if w < items {
                    assert_eq!(w, next_item, "items {items} batches {batches} ticket {t}");
                    next_item += 1;
                } else {
                    assert_eq!(w, next_batch, "items {items} batches {batches} ticket {t}");
                    next_batch += 1;
                    let gap = t - last_batch.map_or(0, |l| l + 1);
                    assert!(gap < total.div_ceil(batches), "items {items} batches {batches} ticket {t}");
                    last_batch = Some(t);
                }
            }
            assert_eq!((next_item, next_batch), (items, total));
            for t in [total, total + 1, total + 1000] {
                assert_eq!(spread(t as u32, items, batches), t as u32);
            }
            // No batches spread (a launch of few tickets a block): the
            // items, then the batches after them, as the tickets come.
            for t in 0..total + 3 {
                assert_eq!(spread(t as u32, items, 0), t as u32, "items {items} batches {batches} ticket {t}");
            }
        }
    }
}
