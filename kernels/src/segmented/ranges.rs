//! Segments given as begin/end pairs: any order, any overlap.

use super::SegmentedReduction;
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
/// flat kernel ([`super::flat::segmented_reduce`]).
///
/// **Checked**: a pair with `begin > end` or `end > n` increments the
/// `u32` at byte 4 of `temp` and gets the identity (nothing is read).
///
/// # Safety
/// `input` holds `n` elements, `begins` and `ends` `segments` each, `out`
/// `segments`; `temp` holds 16 zeroed bytes; `spare`/`spare_words` as in
/// [`super::flat::segmented_reduce`].
pub unsafe fn segmented_ranges<R: SegmentedReduction, const B: u32>(
    input: *const R::In,
    n: u64,
    begins: *const u64,
    ends: *const u64,
    segments: u64,
    out: *mut R::Out,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    // SAFETY: the caller's contract on `spare`.
    unsafe { clear_words::<B>(spare, spare_words) };
    let errors = (temp as *mut u32).wrapping_add(1);
    let lane = gpu::lane() as u64;
    let w = WARP_SIZE as u64;
    let warps = gpu::grid_dim() as u64 * (B / WARP_SIZE) as u64;
    let mut s = (gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64) / w;
    let mut bad = false;
    // SAFETY (all loads and stores): s < segments; elements below e <= n.
    while s < segments {
        let (b, e) = unsafe { (global::load(begins.add(s as usize)), global::load(ends.add(s as usize))) };
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
