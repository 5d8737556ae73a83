//! Segments given as begin/end pairs: any order, any overlap.
//!
//! Three forms, by how many pairs there are for the grid: a lane a short
//! pair and a warp a long one ([`segmented_ranges`], at least 32 pairs a
//! warp), a warp a pair (the same kernel, fewer), or each pair cut into
//! parts, a warp a part, and a second launch joining them
//! ([`segmented_ranges_parts`], few long pairs). In the first two, pairs
//! longer than a slot (2048 to 8192 elements, by the input's length) are
//! listed in a slot table and walked by all the warps of one more launch
//! ([`segmented_ranges_slots`], in 16-byte vectors). Where a warp's 32
//! short pairs lie side by side, the warp stages their elements in its
//! shared memory with coalesced loads and each lane sums its pair from
//! there. On an H200 (2^28 `i32`, CUB 3.0.1 in the same run): pairs of 1 to
//! 2^16 elements (log-uniform) 292 µs (87.5% of copy; CUB 258), pairs of
//! 16 side by side 331 µs (91%; CUB 58x slower); at 2^24 33.0 and 28.8 µs.

use super::chunks::{stream, warp_total};
use super::{SegmentedReduction, policy, routed_to_ranges};
use crate::gpu::{self, FULL_MASK, Shared, WARP_SIZE, atomic, global};
use crate::ops::{Max, Min};
use crate::reduce::finish::Accumulators;
use crate::reduce::reduction::Raw;
use crate::single_pass::clear_words;
use crate::warp;

/// Grid-stride over the segments, one of two ways by how many there are:
///
/// * **Fewer than 32 a warp of the grid:** one warp per segment. The lanes
///   read `[begins[s], ends[s])` 32 elements apart (coalesced), eight loads
///   in flight each, combine across the warp (shuffles), and lane 0 writes
///   `out[s]`.
/// * **At least 32 a warp:** a warp takes 32 consecutive segments, a lane
///   each, their bounds in one coalesced load. A lane sums a segment of at
///   most [`policy::RANGES_SHORT`] elements by itself, in order. Where the
///   short ones' elements lie in one window of `window` elements (a launch
///   argument: room for 32 segments of the mean, from
///   [`policy::RANGES_WINDOW_BYTES`] to 4 KiB, [`policy::ranges_window_for`];
///   the smallest begin to the largest end,
///   two warp reductions), the warp first copies the window into its part
///   of shared memory, 32 consecutive elements a load, and each lane reads
///   its pair from there ([`stage_window`], [`sum_window`]); otherwise each
///   lane reads its own pair from global memory, four loads in flight
///   (lanes 16 elements apart touch a cache line each: segments of 16 at
///   55% of copy that way, 91% through the window). The longer ones of the
///   32 (a ballot) are walked by the whole warp as above, one after
///   another.
///
/// Either way, with a slot table (`table` not null), a pair longer than
/// `long` is not walked by its warp but listed in the table and cut into
/// slots of `slot` elements, which [`segmented_ranges_slots`] shares out
/// among all the warps and joins (a warp walking 2^16 elements alone takes
/// 256 rounds of a memory latency each).
///
/// ```text
/// few:   warp w: segment w, w + warps, ...;  lane l: x[b+l], x[b+l+32], ...
/// many:  warp w: segments 32w .. 32w+31;     lane l: segment 32w+l if short
///        then, for each long one k of the 32: the warp walks it together
/// ```
/// Segments are independent, so they may overlap and come in any order;
/// the price is that a segment's length is walked by one warp (a segment of
/// 2^20 elements takes one warp about as long as 2^15 per lane). Sorted
/// segments are faster through the flat kernel
/// ([`super::flat::segmented_reduce`]) except at a few hundred elements
/// each, where the host routes them here. On an H200 at 2^28 `i32`, given
/// as pairs: segments of 512, 259 µs (99% of copy); segments of 16,
/// 331 µs (91%; 544 µs with a lane reading each pair, 2826 µs with a warp
/// each).
///
/// **Checked**: a pair with `begin > end` or `end > n` increments the
/// `u32` at byte 4 of `temp` and gets the identity (nothing is read).
///
/// **Fixed lengths** (`begins` null): segment `s` is `[s * seg_len,
/// min((s + 1) * seg_len, n))`, read from nothing (`ends` unused).
///
/// **Routed** (`route` not null): CSR offsets whose segments
/// [`segmented_route`] counted; the launch does nothing unless the counts
/// send them here ([`policy::route_to_ranges`]), and the flat kernels
/// launched after it do nothing if they do.
///
/// # Safety
/// `input` holds `n` elements, `begins` and `ends` `segments` each (or
/// `begins` null, `seg_len > 0` and `segments = ceil(n / seg_len)`), `out`
/// `segments`; `temp` holds 16 zeroed bytes; `spare`/`spare_words` as in
/// [`super::flat::segmented_reduce`]; `route` null or the counts of
/// [`segmented_route`] from a launch before this one; `table` null, or
/// storage of [`policy::ranges_table_layout`]`(cap, size of R::Acc)`
/// bytes, 16-byte aligned, its first two words zeroed, `1 <= cap <= 2^22`,
/// `long >= 1`, `slot` a power of two; `window` a multiple of 32, at least
/// 32 (a warp's window, in elements), and the launch gives each block
/// [`policy::ranges_smem_bytes`]`(B, size of R::In, window)` bytes of
/// dynamic shared memory (the warps' windows).
#[allow(clippy::too_many_arguments)]
pub unsafe fn segmented_ranges<R: SegmentedReduction, const B: u32, const V: usize>(
    input: *const R::In,
    n: u64,
    begins: *const u64,
    ends: *const u64,
    seg_len: u64,
    segments: u64,
    out: *mut R::Out,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
    route: *const u32,
    table: *mut u64,
    cap: u64,
    long: u64,
    slot: u64,
    window: u64,
) {
    // SAFETY: the caller's contract on `spare`.
    unsafe { clear_words::<B>(spare, spare_words) };
    // SAFETY: the caller's contract on `route`.
    if unsafe { routed_to_ranges(route, segments) } == Some(false) {
        return;
    }
    // SAFETY: the caller's contract on `table`, `cap`, `long`, `slot`.
    let slots = unsafe { Slots::<R::Acc>::new(table, cap, long, slot) };
    let errors = policy::error_count(temp);
    let lane = gpu::lane() as u64;
    let w = WARP_SIZE as u64;
    let warps = gpu::grid_dim() as u64 * (B / WARP_SIZE) as u64;
    let warp_id = (gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64) / w;
    // The warp's window of short pairs' elements in the block's dynamic
    // shared memory (`policy::ranges_smem_bytes`).
    let win_len = window;
    let window = Shared::<R::In>::dynamic()
        .after::<R::In>((gpu::thread_idx() / WARP_SIZE) as usize * policy::ranges_window_slots(win_len));
    // SAFETY (both): the caller's contract; every call below has
    // s < segments, and bounds within `n`.
    let bounds = |s: u64| unsafe { bounds_of(begins, ends, seg_len, n, s) };
    let walk = |b: u64, e: u64| unsafe { walk::<R, V>(input, b, e) };
    let mut bad = false;
    if segments < w * warps {
        // Few segments for the grid: one a warp, so that long ones keep a
        // warp each.
        let mut s = warp_id;
        while s < segments {
            let (b, e, ok) = bounds(s);
            bad |= !ok;
            if !slots.skips(s, b, e) {
                let total = walk(b, e);
                if lane == 0 {
                    // SAFETY: s < segments.
                    unsafe { global::store(out.add(s as usize), R::out(total, b, b == e)) };
                }
            }
            s += warps;
        }
    } else {
        // At least 32 segments a warp anyway: a warp takes 32 consecutive
        // ones, a lane each (their bounds in one coalesced load). A lane
        // sums a short segment itself, in order, four loads in flight, and
        // the warp walks the long ones together, one after another.
        let groups = segments.div_ceil(w);
        let mut g = warp_id;
        while g < groups {
            let s = g * w + lane;
            let live = s < segments;
            let (b, e, ok) = if live { bounds(s) } else { (0, 0, true) };
            bad |= !ok;
            let short = e - b <= policy::RANGES_SHORT;
            // Where the short pairs' elements lie in one window (the
            // smallest begin to the largest end of those that read
            // anything), the warp reads the window once, coalesced, into
            // its shared memory, and each lane sums its pair from there.
            let filled = short && b < e;
            let lo = warp::reduce_all::<u64, Min>(if filled { b } else { u64::MAX });
            let hi = warp::reduce_all::<u64, Max>(if filled { e } else { 0 });
            let staged = lo < hi && hi - lo <= win_len;
            if staged {
                // SAFETY: every filled pair has e <= n, so [lo, hi) lies in
                // the input; the window holds `win_len` elements; the
                // condition is the same in every lane.
                unsafe { stage_window::<R>(input, lo, hi - lo, window) };
            }
            if short {
                let acc = if staged {
                    // SAFETY: a filled pair lies in [lo, hi), staged above;
                    // an empty one reads nothing.
                    unsafe { sum_window::<R>(window, lo, b, e) }
                } else {
                    // SAFETY: elements below e <= n.
                    unsafe { sum_pair::<R>(input, b, e) }
                };
                if live {
                    // SAFETY: s < segments.
                    unsafe { global::store(out.add(s as usize), R::out(acc, b, b == e)) };
                }
            }
            let long = gpu::warp::ballot(!short);
            let mut rest = long;
            for _ in 0..long.count_ones() {
                let k = rest.trailing_zeros();
                let (bk, ek) = (gpu::warp::shfl_idx(b, k), gpu::warp::shfl_idx(e, k));
                let sk = g * w + k as u64;
                if !slots.skips(sk, bk, ek) {
                    let total = walk(bk, ek);
                    if lane == 0 {
                        // SAFETY: sk < segments.
                        unsafe { global::store(out.add(sk as usize), R::out(total, bk, bk == ek)) };
                    }
                }
                rest &= rest - 1;
            }
            g += warps;
        }
    }
    if bad {
        // SAFETY: inside temp's 16 bytes.
        unsafe { atomic::add(errors, 1u32) };
    }
}

/// The slot table of long begin/end pairs, at `table` in the status: a
/// `u64` counter (entries listed in the high 24 bits, slots taken in the
/// low 40) and a `u64` count of the slots handed out to warps (32 bytes
/// in all), then `cap` list entries (`[pair, first slot]`), `cap` `u32`
/// arrival counters (one an entry) and `cap` accumulators (one a slot;
/// [`policy::ranges_table_layout`]).
///
/// A warp that meets a pair longer than `long` elements ([`Slots::skips`])
/// does not walk it: lane 0 takes one list entry and `ceil(len / slot)`
/// consecutive slots together (one atomic add of the counter, so that
/// entries are listed in the order of their first slots and neither count
/// is used past `cap`), writes the entry and zeroes its arrival counter.
/// [`segmented_ranges_slots`] then walks the slots and joins each pair's.
/// A pair that does not fit is walked by its warp as before.
struct Slots<A> {
    table: *mut u64,
    cap: u64,
    long: u64,
    slot: u64,
    _acc: core::marker::PhantomData<A>,
}

impl<A: Copy> Slots<A> {
    /// # Safety
    /// `table` null (no table: every pair walked by its warp), or storage
    /// of [`policy::ranges_table_layout`]`(cap, size_of::<A>())` bytes, 16-byte
    /// aligned, its two counters zeroed, that only this launch writes, with
    /// `1 <= cap <= 2^22`, `long >= 1` and `slot` a power of two.
    #[inline(always)]
    unsafe fn new(table: *mut u64, cap: u64, long: u64, slot: u64) -> Self {
        Slots { table, cap, long, slot, _acc: core::marker::PhantomData }
    }

    /// The list entries, arrival counters and accumulators.
    #[inline(always)]
    fn parts(&self) -> (*mut [u64; 2], *mut u32, *mut A) {
        table_parts::<A>(self.table, self.cap)
    }

    /// Whether pair `s`, `[b, e)` (checked; the same on every lane), is
    /// long and now listed in the table, left to [`segmented_ranges_slots`].
    #[inline(always)]
    fn skips(&self, s: u64, b: u64, e: u64) -> bool {
        if self.table.is_null() || e - b <= self.long {
            return false;
        }
        let listed = if gpu::lane() == 0 {
            // SAFETY: the table (Self::new's contract).
            unsafe { self.take(s, (e - b + self.slot - 1) >> self.slot.trailing_zeros()) }
        } else {
            0
        };
        gpu::warp::shfl_idx(listed, 0) != 0
    }

    /// Take a list entry and `k` slots for pair `s` (lane 0), when both
    /// fit: the entry written, its arrival counter zeroed; 1 if taken.
    ///
    /// One atomic add of the counter takes both, so entries are listed in
    /// the order of their first slots. Once either count has reached
    /// `cap` no warp adds any more (a load first), and each add is at most
    /// `cap + 1` slots, so with `cap <= 2^22` and fewer than 2^17 warps
    /// adding at once neither field overflows.
    ///
    /// # Safety
    /// As [`Self::new`], table not null.
    #[inline(always)]
    unsafe fn take(&self, s: u64, k: u64) -> u32 {
        // SAFETY (all): the counter and the entry's words (the layout).
        let seen = unsafe { atomic::load_relaxed_u64(self.table) };
        if seen >> ENTRY_SHIFT >= self.cap || seen & SLOTS_MASK >= self.cap {
            return 0;
        }
        let add = (1 << ENTRY_SHIFT) + Ord::min(k, self.cap + 1);
        let cur = unsafe { atomic::add(self.table, add) };
        let (entry, first) = (cur >> ENTRY_SHIFT, cur & SLOTS_MASK);
        if entry >= self.cap {
            return 0;
        }
        let (list, arrive, _) = self.parts();
        // An entry whose slots do not fit is listed as no pair, so that
        // the entries' first slots still rise.
        let fits = first < self.cap && k <= self.cap - first;
        unsafe {
            global::store(list.add(entry as usize), [if fits { s } else { NO_PAIR }, first]);
            global::store(arrive.add(entry as usize), 0u32);
        }
        fits as u32
    }
}

/// The list entries, arrival counters and accumulators (`A` each) of the
/// slot table at `table` of `cap` entries and slots
/// ([`policy::ranges_table_layout`]).
#[inline(always)]
fn table_parts<A>(table: *mut u64, cap: u64) -> (*mut [u64; 2], *mut u32, *mut A) {
    let at = policy::ranges_table_layout(cap, core::mem::size_of::<A>());
    let base = table.cast::<u8>();
    (base.wrapping_add(at[0]).cast(), base.wrapping_add(at[1]).cast(), base.wrapping_add(at[2]).cast())
}

/// The slot table's counter: entries listed above this bit, slots taken
/// below it.
const ENTRY_SHIFT: u32 = 40;
const SLOTS_MASK: u64 = (1 << ENTRY_SHIFT) - 1;

/// The pair of a list entry whose slots did not fit (its warp walked it).
const NO_PAIR: u64 = u64::MAX;

/// The long pairs that [`segmented_ranges`] listed in the slot table (its
/// counter says how many; the launch returns at once when none), in one
/// launch after it: a warp takes a run of consecutive slots at a time
/// ([`policy::ranges_run`]; its first run its own, the next ones from a
/// second counter), finds
/// the run's first entry (a 32-way search over the entries' first slots,
/// which rise with the entries), and for each slot walks it, stores its
/// accumulator and counts it in at its entry; the warp that counts a
/// pair's last slot in combines that pair's accumulators in order and
/// writes the pair's result. A slot is walked in 16-byte vectors, eight
/// in flight a lane (`V` elements a vector). H200, pairs of 1 to 2^16
/// `i32` (`segmented_ranges/mixed`): 34.5 µs at 2^24 and 308 µs at 2^28
/// for the whole call (CUB 3.0.1: 30.1 and 257.7).
///
/// ```text
/// warp w: slots w run .. (w + 1) run, then j0 = W run + next.fetch_add(run):
///        slots j0 .. j0 + run, while below the T taken (W warps)
/// slot j of entry [s, first]: elements b_s + (j - first) * slot .. + slot
///        -> acc[j]; arrive[entry] += 1; the last one: out[s] = acc[first..first + k]
/// ```
///
/// # Safety
/// As [`segmented_ranges`], whose launch over the same pairs with the same
/// `table`, `cap` and `slot` came just before.
#[allow(clippy::too_many_arguments)]
pub unsafe fn segmented_ranges_slots<R: SegmentedReduction, const B: u32, const V: usize>(
    input: *const R::In,
    n: u64,
    begins: *const u64,
    ends: *const u64,
    out: *mut R::Out,
    table: *mut u64,
    cap: u64,
    slot: u64,
) {
    let w = WARP_SIZE as u64;
    let lane = gpu::lane() as u64;
    if table.is_null() {
        return;
    }
    // SAFETY: the counter, written by the ranges kernel's launch.
    let counter = unsafe { global::load(table) };
    let (entries, taken) = (Ord::min(counter >> ENTRY_SHIFT, cap), Ord::min(counter & SLOTS_MASK, cap));
    if entries == 0 {
        return;
    }
    let (list, arrive, partials) = table_parts::<R::Acc>(table, cap);
    // SAFETY (all loads of entries): below `entries` <= cap, written by
    // the ranges kernel.
    let first_of = |i: u64| unsafe { global::load(list.add(i as usize))[1] };
    // Runs of slots: each warp's first run is its own (warp w: slots
    // w run ..), the slots past all of those are taken from a counter (the
    // table's second word), so that warps that start late (a grid larger
    // than fits at once) or walk short slots take fewer. (Every run from
    // the counter, every warp at once on one address: mixed pairs at 2^24
    // in slots of 2048 took 80 us a call, against 37 with runs fixed in
    // advance.)
    let warps = gpu::grid_dim() as u64 * (B / WARP_SIZE) as u64;
    let run = policy::ranges_run(taken, warps, slot);
    let statics = warps * run;
    let warp_id = (gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64) / w;
    let mut j = warp_id * run;
    loop {
        if j >= taken {
            if statics >= taken {
                return;
            }
            let taken_at = if lane == 0 {
                // SAFETY: the table's second word, zeroed with the counter.
                unsafe { atomic::add(table.add(1), run) }
            } else {
                0
            };
            j = statics + gpu::warp::shfl_idx(taken_at, 0);
            if j >= taken {
                return;
            }
        }
        let stop = Ord::min(j + run, taken);
        // The last entry whose first slot is at most j (entry 0's is slot
        // 0; the first slots rise with the entries): narrow [lo, hi) 32
        // ways a round, the lanes probing evenly spaced entries, then one
        // a lane.
        let (mut lo, mut hi) = (0u64, entries);
        while hi - lo > w {
            let span = hi - lo;
            let below = gpu::warp::ballot(first_of(lo + span * lane / w) <= j);
            let top = 31 - below.leading_zeros() as u64;
            hi = if top + 1 < w { lo + span * (top + 1) / w } else { hi };
            lo += span * top / w;
        }
        let below = gpu::warp::ballot(lo + lane < hi && first_of(lo + lane) <= j);
        let mut entry = lo + (31 - below.leading_zeros()) as u64;
        while j < stop {
            while entry + 1 < entries && first_of(entry + 1) <= j {
                entry += 1;
            }
            // SAFETY: the slot and its entry (below `taken` and `entries`).
            unsafe { walk_slot::<R, V>(input, n, begins, ends, out, list, arrive, partials, entry, j, slot) };
            j += 1;
        }
        // Next: a run from the counter.
        j = u64::MAX;
    }
}

/// Slot `j` of list entry `entry`: walk it (16-byte vectors, as the
/// chunked path's chunks), store its accumulator, count it in; the warp
/// that counts the pair's last slot in combines them all, in order, and
/// writes the pair's result.
///
/// # Safety
/// `entry` below the entries listed, `j` below the slots taken, the slot
/// `entry`'s (or `entry` listed as [`NO_PAIR`]); the table's parts as
/// [`table_parts`] gives them; the pairs as [`segmented_ranges`] checked.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn walk_slot<R: SegmentedReduction, const V: usize>(
    input: *const R::In,
    n: u64,
    begins: *const u64,
    ends: *const u64,
    out: *mut R::Out,
    list: *mut [u64; 2],
    arrive: *mut u32,
    partials: *mut R::Acc,
    entry: u64,
    j: u64,
    slot: u64,
) {
    let lane = gpu::lane() as u64;
    // SAFETY: entry below the entries listed.
    let [s, first] = unsafe { global::load(list.add(entry as usize)) };
    if s == NO_PAIR {
        // A slot taken by a pair that did not fit (past `cap`). Every
        // entry takes a slot at least, so one past `cap` has no slot
        // under it either, and every slot below `taken` is its entry's.
        return;
    }
    // SAFETY: s was checked by the ranges kernel.
    let (b, e, _) = unsafe { bounds_of(begins, ends, 0, n, s) };
    let k = (e - b + slot - 1) >> slot.trailing_zeros();
    let from = b + (j - first) * slot;
    // In 16-byte vectors, eight in flight a lane (4 KiB a warp a round):
    // a slot of 8192 `i32` in 8 rounds, where the element walk of the
    // pairs ([`walk`], 1 KiB a round) takes 32. Valid in lane 0.
    // SAFETY: from < e <= n, a slot at most 2^31 elements (`ranges_slot`);
    // the warp's lanes share j.
    let run = unsafe { stream::<R, V, false>(input, from, Ord::min(from + slot, e), lane, WARP_SIZE as u64) };
    let acc = warp_total::<R>(run, from);
    let last = if lane == 0 {
        // SAFETY: j below the slots taken; entry below the entries. The
        // fence orders the accumulator before the count (as the chunked
        // path's join).
        unsafe {
            global::store(partials.add(j as usize), acc);
            atomic::fence_device();
            atomic::add(arrive.add(entry as usize), 1u32) == (k - 1) as u32
        }
    } else {
        false
    };
    if gpu::warp::shfl_idx(last as u32, 0) != 0 {
        // Every slot of the pair is in: combine them in order.
        atomic::fence_device();
        // SAFETY: first + i < first + k <= the slots taken.
        let total = warp_join::<R>(k, |i| unsafe { global::load_volatile(partials.add((first + i) as usize)) });
        if lane == 0 {
            // SAFETY: s < segments (listed by the ranges kernel).
            unsafe { global::store(out.add(s as usize), R::out(total, b, b == e)) };
        }
    }
}

/// Few long pairs, in two launches: each segment cut into `parts` equal
/// parts (multiples of 32 elements; the last ones may be short or empty),
/// every part a unit of work for a warp, so that 16 segments of 2^20 keep
/// the whole GPU busy rather than 16 warps of it: on an H200 at 2^24
/// `i32`, 25.5 µs (87% of copy; 3.2 ms a warp a pair), 256 of them at
/// 2^28 255 µs (100.6%; CUB's block a segment 286 in the same session).
///
/// ```text
/// join = 0:  unit u = s * parts + k (warps grid-stride over the units):
///            the warp walks part k of segment s -> partials[u]
/// join = 1:  warp per segment s: lane l combines partials[s * parts + l],
///            [.. + l + 32], ...; shuffles; lane 0 writes out[s]
/// ```
/// The host picks `parts` ([`policy::ranges_parts`]) from the pairs'
/// count, the input's length and the grid, and takes this path only for
/// `parts >= 2`; the bounds are read twice (once a unit, once a segment),
/// which costs little where segments are few.
///
/// **Checked** as [`segmented_ranges`]: the join counts the bad pairs at
/// byte 4 of `temp`, and their units read nothing.
///
/// # Safety
/// `input` holds `n` elements, `begins` and `ends` `segments` each, `out`
/// `segments`, `partials` `segments * parts` (written by the launch with
/// `join = 0`, read by the one with `join = 1` after it); `temp` holds 16
/// zeroed bytes; `spare`/`spare_words` as in
/// [`super::flat::segmented_reduce`] (cleared by the first launch).
#[allow(clippy::too_many_arguments)]
pub unsafe fn segmented_ranges_parts<R: SegmentedReduction, const B: u32>(
    input: *const R::In,
    n: u64,
    begins: *const u64,
    ends: *const u64,
    segments: u64,
    parts: u64,
    partials: *mut R::Acc,
    out: *mut R::Out,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
    join: u32,
) {
    let lane = gpu::lane() as u64;
    let w = WARP_SIZE as u64;
    let warps = gpu::grid_dim() as u64 * (B / WARP_SIZE) as u64;
    let warp_id = (gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64) / w;
    let parts = Ord::max(parts, 1);
    if join == 0 {
        // SAFETY: the caller's contract on `spare`.
        unsafe { clear_words::<B>(spare, spare_words) };
        let units = segments * parts;
        let mut u = warp_id;
        while u < units {
            let s = u / parts;
            let k = u - s * parts;
            // SAFETY: s < segments.
            let (b, e, _) = unsafe { bounds_of(begins, ends, 0, n, s) };
            let step = (e - b).div_ceil(parts).next_multiple_of(w);
            let lo = Ord::min(b + k * step, e);
            let hi = Ord::min(lo + step, e);
            // SAFETY: hi <= e <= n; the warp's lanes share u.
            let acc = unsafe { walk_elements::<R>(input, lo, hi) };
            if lane == 0 {
                // SAFETY: u < segments * parts.
                unsafe { global::store(partials.add(u as usize), acc) };
            }
            u += warps;
        }
    } else {
        let errors = policy::error_count(temp);
        let mut bad = false;
        let mut s = warp_id;
        while s < segments {
            // SAFETY: s < segments.
            let (b, e, ok) = unsafe { bounds_of(begins, ends, 0, n, s) };
            bad |= !ok;
            // SAFETY: s * parts + k < segments * parts, written by the
            // launch before.
            let total = warp_join::<R>(parts, |k| unsafe { global::load(partials.add((s * parts + k) as usize)) });
            if lane == 0 {
                // SAFETY: s < segments.
                unsafe { global::store(out.add(s as usize), R::out(total, b, b == e)) };
            }
            s += warps;
        }
        if bad {
            // SAFETY: inside temp's 16 bytes.
            unsafe { atomic::add(errors, 1u32) };
        }
    }
}

/// Elements `[b, e)` combined by one lane, in order, four loads in flight.
///
/// # Safety
/// `input` holds at least `e` elements.
#[inline(always)]
unsafe fn sum_pair<R: SegmentedReduction>(input: *const R::In, b: u64, e: u64) -> R::Acc {
    let mut acc = R::identity();
    let mut i = b;
    // SAFETY (loads): elements below e (the caller's contract).
    while i + 4 <= e {
        let x = unsafe {
            [
                R::load(input, input, i),
                R::load(input, input, i + 1),
                R::load(input, input, i + 2),
                R::load(input, input, i + 3),
            ]
        };
        acc = R::combine(R::combine(R::combine(R::combine(acc, x[0]), x[1]), x[2]), x[3]);
        i += 4;
    }
    while i < e {
        acc = R::combine(acc, unsafe { R::load(input, input, i) });
        i += 1;
    }
    acc
}

/// The window slot of element `q` of a staged span: one spare slot after
/// every 32, so that lanes reading pairs of 16 (or any multiple of 16)
/// elements apart meet in different banks.
#[inline(always)]
fn window_slot(q: u64) -> usize {
    (q + q / WARP_SIZE as u64) as usize
}

/// Loads a lane keeps in flight while it stages a window.
const STAGED: usize = 8;

/// Elements `[lo, lo + len)` into the warp's `window`, element `q` at
/// [`window_slot`]`(q)`: lane `l` loads `l, l + 32, ..` (coalesced), eight
/// loads in flight. A warp barrier before (the lanes that read the window
/// for the last group are done) and after (each lane then sees all of it).
///
/// # Safety
/// `input` holds at least `lo + len` elements, `window` at least
/// [`window_slot`]`(len)` slots; every lane of the warp calls it with the
/// same `lo` and `len`.
#[inline(always)]
unsafe fn stage_window<R: SegmentedReduction>(input: *const R::In, lo: u64, len: u64, window: Shared<R::In>) {
    gpu::warp::sync(FULL_MASK);
    let w = WARP_SIZE as u64;
    let mut q = gpu::lane() as u64;
    // SAFETY (loads and stores): below lo + len and window_slot(len).
    while q + (STAGED - 1) as u64 * w < len {
        // SAFETY: lo + q + (STAGED - 1) * w < lo + len.
        let src = unsafe { input.add((lo + q) as usize) };
        let mut x = [unsafe { global::load(src) }; STAGED];
        unrolled!(STAGED, |k| x[k] = unsafe { global::load(src.add(k * WARP_SIZE as usize)) });
        let at = window_slot(q);
        unrolled!(STAGED, |k| unsafe { window.store(at + k * (WARP_SIZE as usize + 1), x[k]) });
        q += STAGED as u64 * w;
    }
    while q < len {
        unsafe { window.store(window_slot(q), global::load(input.add((lo + q) as usize))) };
        q += w;
    }
    gpu::warp::sync(FULL_MASK);
}

/// Elements `[b, e)` combined by one lane, in order, from the window
/// [`stage_window`] filled with the span from `lo`.
///
/// # Safety
/// `b == e`, or `lo <= b < e` and the window holds the span up to `e`.
#[inline(always)]
unsafe fn sum_window<R: SegmentedReduction>(window: Shared<R::In>, lo: u64, b: u64, e: u64) -> R::Acc {
    let lift = |x: R::In, i: u64| R::lift::<1>(&Raw { a: [x], b: [x] }, 0, i);
    let mut acc = R::identity();
    let mut i = b;
    // SAFETY (loads): staged (the caller's contract).
    while i + 4 <= e {
        let q = i.wrapping_sub(lo);
        let x = unsafe {
            [
                window.load(window_slot(q)),
                window.load(window_slot(q + 1)),
                window.load(window_slot(q + 2)),
                window.load(window_slot(q + 3)),
            ]
        };
        acc = R::combine(
            R::combine(R::combine(R::combine(acc, lift(x[0], i)), lift(x[1], i + 1)), lift(x[2], i + 2)),
            lift(x[3], i + 3),
        );
        i += 4;
    }
    while i < e {
        acc = R::combine(acc, lift(unsafe { window.load(window_slot(i.wrapping_sub(lo))) }, i));
        i += 1;
    }
    acc
}

/// Segment `s`'s bounds, checked: `(b, e, true)`, or `(0, 0, false)` for a
/// bad pair (`b > e` or `e > n`), which then reads nothing. Fixed lengths
/// where `begins` is null.
///
/// # Safety
/// `begins` null, or `begins` and `ends` hold more than `s` elements.
#[inline(always)]
unsafe fn bounds_of(begins: *const u64, ends: *const u64, seg_len: u64, n: u64, s: u64) -> (u64, u64, bool) {
    let (b, e) = if begins.is_null() {
        let b = s * seg_len;
        (b, Ord::min(b + seg_len, n))
    } else {
        // SAFETY: the caller's contract.
        unsafe { (global::load(begins.add(s as usize)), global::load(ends.add(s as usize))) }
    };
    let ok = b <= e && e <= n;
    if ok { (b, e, true) } else { (0, 0, false) }
}

/// Elements `[b, e)` combined by the whole warp, the result in every
/// lane: pairs of [`policy::RANGES_VEC_MIN`] or more on a 16-byte aligned
/// input in 16-byte vectors of `V` elements, four in flight a lane (the
/// head and tail, fewer than `V` each, an element a lane); shorter ones
/// by [`walk_elements`].
///
/// # Safety
/// `input` holds at least `e` elements; every lane of the warp calls it
/// with the same `b` and `e`.
#[inline(always)]
unsafe fn walk<R: SegmentedReduction, const V: usize>(input: *const R::In, b: u64, e: u64) -> R::Acc {
    let v = V as u64;
    if !(input as usize).is_multiple_of(16) || e - b < policy::RANGES_VEC_MIN {
        // SAFETY: the caller's contract.
        return unsafe { walk_elements::<R>(input, b, e) };
    }
    let w = WARP_SIZE as u64;
    let lane = gpu::lane() as u64;
    // The body [a, z) in whole 16-byte vectors; the head [b, a) and the
    // tail [z, e), fewer than `v` elements each, a lane an element.
    let a = b.next_multiple_of(v);
    let z = e - e % v;
    let mut acc = R::identity();
    // SAFETY (all loads): elements below e (the caller's contract); the
    // vectors 16-byte aligned and below z.
    if b + lane < a {
        acc = R::combine(acc, unsafe { R::load(input, input, b + lane) });
    }
    if z + lane < e {
        acc = R::combine(acc, unsafe { R::load(input, input, z + lane) });
    }
    let mut i = a + lane * v;
    while i + 3 * w * v < z {
        let x = unsafe {
            [
                R::load_raw::<V>(input, input, i),
                R::load_raw::<V>(input, input, i + w * v),
                R::load_raw::<V>(input, input, i + 2 * w * v),
                R::load_raw::<V>(input, input, i + 3 * w * v),
            ]
        };
        unrolled!(4, |k| {
            let at = i + k as u64 * w * v;
            unrolled!(V, |j| acc = R::combine(acc, R::lift::<V>(&x[k], j, at)));
        });
        i += 4 * w * v;
    }
    while i < z {
        let x = unsafe { R::load_raw::<V>(input, input, i) };
        unrolled!(V, |j| acc = R::combine(acc, R::lift::<V>(&x, j, i)));
        i += w * v;
    }
    warp::reduce_all::<R::Acc, Accumulators<R>>(acc)
}

/// Elements `[b, e)` combined by the whole warp, 32 elements apart
/// (coalesced), eight loads in flight a lane (then a round of four, then
/// single loads); the result in every lane. Eight rather than four: pairs
/// of mixed lengths 1.5x faster on an H200 (a warp walking a long pair
/// alone waits a memory latency a round), segments of 2^20 in parts 1%.
///
/// # Safety
/// As [`walk`].
#[inline(always)]
unsafe fn walk_elements<R: SegmentedReduction>(input: *const R::In, b: u64, e: u64) -> R::Acc {
    let w = WARP_SIZE as u64;
    let mut acc = R::identity();
    let mut i = b + gpu::lane() as u64;
    // SAFETY (loads): elements below e (the caller's contract).
    while i + 7 * w < e {
        let x = unsafe {
            [
                R::load(input, input, i),
                R::load(input, input, i + w),
                R::load(input, input, i + 2 * w),
                R::load(input, input, i + 3 * w),
                R::load(input, input, i + 4 * w),
                R::load(input, input, i + 5 * w),
                R::load(input, input, i + 6 * w),
                R::load(input, input, i + 7 * w),
            ]
        };
        let lo = R::combine(R::combine(x[0], x[1]), R::combine(x[2], x[3]));
        let hi = R::combine(R::combine(x[4], x[5]), R::combine(x[6], x[7]));
        acc = R::combine(acc, R::combine(lo, hi));
        i += 8 * w;
    }
    if i + 3 * w < e {
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
    while i < e {
        acc = R::combine(acc, unsafe { R::load(input, input, i) });
        i += w;
    }
    warp::reduce_all::<R::Acc, Accumulators<R>>(acc)
}

/// The combine of a segment's `count` accumulators `at(0..count)` (its
/// slots' or parts'), in every lane of the warp: lane `l` combines
/// `l, l + 32, ..`, then the warp reduces.
#[inline(always)]
fn warp_join<R: SegmentedReduction>(count: u64, at: impl Fn(u64) -> R::Acc) -> R::Acc {
    let mut acc = R::identity();
    let mut i = gpu::lane() as u64;
    while i < count {
        acc = R::combine(acc, at(i));
        i += WARP_SIZE as u64;
    }
    warp::reduce_all::<R::Acc, Accumulators<R>>(acc)
}

/// Counts, for routing CSR offsets between the ranges kernel and the flat
/// one, the segments longer than [`policy::ROUTE_LONGEST`] (or whose
/// offsets are out of order) and those shorter than
/// [`policy::ROUTE_SHORT`], into the two `u32` at `route` (zeroed before).
/// One pass over the offsets, grid-stride, one atomic add per warp and
/// count where it found any.
///
/// # Safety
/// `offsets` holds `segments + 1` elements; `route` two zeroed `u32`.
pub unsafe fn segmented_route<const B: u32>(offsets: *const u64, segments: u64, route: *mut u32) {
    let stride = gpu::grid_dim() as u64 * B as u64;
    let mut k = gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64;
    let (mut long, mut short) = (0u32, 0u32);
    while k < segments {
        // SAFETY: k + 1 <= segments.
        let (a, b) = unsafe { (global::load(offsets.add(k as usize)), global::load(offsets.add(k as usize + 1))) };
        let len = b.wrapping_sub(a);
        long += (b < a || len > policy::ROUTE_LONGEST) as u32;
        short += (b >= a && len < policy::ROUTE_SHORT) as u32;
        k += stride;
    }
    let long = warp::reduce_all::<u32, crate::ops::Sum>(long);
    let short = warp::reduce_all::<u32, crate::ops::Sum>(short);
    if gpu::lane() == 0 {
        // SAFETY: the caller's two counts.
        unsafe {
            if long != 0 {
                atomic::add(route, long);
            }
            if short != 0 {
                atomic::add(route.add(1), short);
            }
        }
    }
}
