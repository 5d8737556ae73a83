//! Segments given as begin/end pairs: any order, any overlap.

use super::{SegmentedReduction, policy, routed_to_ranges};
use crate::gpu::{self, WARP_SIZE, atomic, global};
use crate::reduce::finish::Accumulators;
use crate::single_pass::clear_words;
use crate::warp;

/// One warp per segment, grid-stride over the segments: the lanes read the
/// segment `[begins[s], ends[s])` 32 elements apart (coalesced), four loads
/// in flight each, then combine across the warp (shuffles) and lane 0
/// writes `out[s]`.
///
/// ```text
/// warp w:  segment w, then w + warps, ...
/// lane l:  x[b+l], x[b+l+32], x[b+l+64], ...  -> shuffle reduce -> out[s]
/// ```
/// Segments are independent, so they may overlap and come in any order;
/// the price is that a segment's length is walked by one warp (a segment of
/// 2^20 elements takes one warp about as long as 2^15 per lane), and that
/// tiny segments leave lanes idle. Sorted segments are faster through the
/// flat kernel ([`super::flat::segmented_reduce`]) except at a few hundred
/// elements each, where the host routes them here: segments of 512 of a
/// fixed length on an H100 at 2^28 `i32`, 354 µs (101% of copy, 1.90x
/// CUB) against 421 through the flat kernel.
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
    let mut s = (gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64) / w;
    let mut bad = false;
    // SAFETY (all loads and stores): s < segments; elements below e <= n.
    while s < segments {
        let (b, e) = if begins.is_null() {
            let b = s * seg_len;
            (b, Ord::min(b + seg_len, n))
        } else {
            unsafe { (global::load(begins.add(s as usize)), global::load(ends.add(s as usize))) }
        };
        let ok = b <= e && e <= n;
        bad |= !ok;
        let (b, e) = if ok { (b, e) } else { (0, 0) };
        let mut acc = R::identity();
        let mut i = b + lane;
        while i + 3 * w < e {
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
        let total = warp::reduce_all::<R::Acc, Accumulators<R>>(acc);
        if lane == 0 {
            unsafe { global::store(out.add(s as usize), R::out(total, b, b == e)) };
        }
        s += warps;
    }
    if bad {
        // SAFETY: inside temp's 16 bytes.
        unsafe { atomic::add(errors, 1u32) };
    }
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
