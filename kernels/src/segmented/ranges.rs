//! Segments given as begin/end pairs: any order, any overlap.
//!
//! Three forms, by how many pairs there are for the grid: a lane a short
//! pair and a warp a long one ([`segmented_ranges`], at least 32 pairs a
//! warp), a warp a pair (the same kernel, fewer), or each pair cut into
//! parts, a warp a part, and a second launch joining them
//! ([`segmented_ranges_parts`], few long pairs).

use super::{SegmentedReduction, policy, routed_to_ranges};
use crate::gpu::{self, WARP_SIZE, atomic, global};
use crate::reduce::finish::Accumulators;
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
///   most [`policy::RANGES_SHORT`] elements by itself, in order, four loads
///   in flight; the longer ones of the 32 (a ballot) are walked by the
///   whole warp as above, one after another.
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
/// as pairs: segments of 512, 257 µs (100% of copy); segments of 16,
/// 544 µs (56%; 2826 µs, 11%, with a warp each).
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
/// [`segmented_route`] from a launch before this one.
#[allow(clippy::too_many_arguments)]
pub unsafe fn segmented_ranges<R: SegmentedReduction, const B: u32>(
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
) {
    // SAFETY: the caller's contract on `spare`.
    unsafe { clear_words::<B>(spare, spare_words) };
    // SAFETY: the caller's contract on `route`.
    if unsafe { routed_to_ranges(route, segments) } == Some(false) {
        return;
    }
    let errors = policy::error_count(temp);
    let lane = gpu::lane() as u64;
    let w = WARP_SIZE as u64;
    let warps = gpu::grid_dim() as u64 * (B / WARP_SIZE) as u64;
    let warp_id = (gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64) / w;
    // SAFETY (both): the caller's contract; every call below has
    // s < segments, and bounds within `n`.
    let bounds = |s: u64| unsafe { bounds_of(begins, ends, seg_len, n, s) };
    let walk = |b: u64, e: u64| unsafe { walk::<R>(input, b, e) };
    let mut bad = false;
    if segments < w * warps {
        // Few segments for the grid: one a warp, so that long ones keep a
        // warp each.
        let mut s = warp_id;
        while s < segments {
            let (b, e, ok) = bounds(s);
            bad |= !ok;
            let total = walk(b, e);
            if lane == 0 {
                // SAFETY: s < segments.
                unsafe { global::store(out.add(s as usize), R::out(total, b, b == e)) };
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
            if short {
                let mut acc = R::identity();
                let mut i = b;
                // SAFETY (loads): elements below e <= n.
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
                let total = walk(bk, ek);
                if lane == 0 {
                    // SAFETY: segment g * w + k is live (a long one).
                    unsafe { global::store(out.add((g * w + k as u64) as usize), R::out(total, bk, bk == ek)) };
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
            let acc = unsafe { walk::<R>(input, lo, hi) };
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
            let mut acc = R::identity();
            let mut k = lane;
            while k < parts {
                // SAFETY: s * parts + k < segments * parts, written by the
                // launch before.
                acc = R::combine(acc, unsafe { global::load(partials.add((s * parts + k) as usize)) });
                k += w;
            }
            let total = warp::reduce_all::<R::Acc, Accumulators<R>>(acc);
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

/// Elements `[b, e)` combined by the whole warp, 32 elements apart
/// (coalesced), eight loads in flight a lane (then a round of four, then
/// single loads); the result in every lane. Eight rather than four: pairs
/// of mixed lengths 1.5x faster on an H200 (a warp walking a long pair
/// alone waits a memory latency a round), segments of 2^20 in parts 1%.
///
/// # Safety
/// `input` holds at least `e` elements; every lane of the warp calls it
/// with the same `b` and `e`.
#[inline(always)]
unsafe fn walk<R: SegmentedReduction>(input: *const R::In, b: u64, e: u64) -> R::Acc {
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
