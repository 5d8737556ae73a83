//! The flat segmented reduction for short segments under plain operators:
//! the tiles and records of [`super::flat`], with a pass over each
//! thread's items that leaves every segment's value where the segment
//! ends, and a pass over the boundaries that writes them out.

use super::flat::{
    Bounds, NONE, Parts, Prologue, Records, WRITTEN, block_seg_scan, prologue, quiet_record, staged, window_first,
};
use super::{SegmentedReduction, policy};
use crate::block::tile::{first_items, pad_every};
use crate::gpu::{self, Shared, global, warp as gpu_warp};
use crate::reduce::finish::Accumulators;
use crate::reduce::reduction::Raw;
use crate::single_pass::clear_words;
use crate::warp;
use core::mem::size_of;

/// One result per segment, for short segments (a mean under
/// [`policy::ROUTE_MEAN`]`[0]`) under sum, product, min and max: the
/// tiles, records and spine of [`super::flat::segmented_reduce`] (same
/// arguments, grid and shared memory), and a different way through the
/// tile.
///
/// ```text
/// positions  a ....................................... a+B*ITEMS
/// thread t   [ p0 .. p0+ITEMS )   starts: bit j where a segment begins
///                                 ends:   bit j where one ends (j+1 starts)
/// pass 1     run = start ? x : run + x; at an end, run -> ends[j]
///            (in shared memory, over the item just read: in place)
/// scan       block-wide exclusive scan of (met a start?, run) pairs
/// fix-up     the thread's first end, where its segment began before the
///            thread: ends[j] = carry + ends[j]
/// lead       warp 0 reads the part of the tile's first segment that lies
///            before the tile, [a - L, a), when L <= lead_max (loads in
///            flight through pass 1 and the scan, reduced at the end)
/// out        boundary k (a thread each, strided): out[k - 1] =
///            ends[at(k) - 1], the identity when empty; the tile's first
///            boundary writes lead + its value when warp 0 read the lead,
///            else leaves its value to the spine as the tile's head and
///            raises the spine's flag
/// ```
///
/// So where every segment is shorter than [`policy::lead_max`] (64
/// four-byte elements), no tile leaves the spine work: its launch returns
/// at once ([`policy::SPINE_IF_NEEDED`]), and for fixed lengths the host
/// does not launch it.
///
/// The flat kernel's third pass walked every item again and branched at
/// each boundary to write its segment (43 instructions an item in all at
/// segments of 16, ncu on an H200); here pass 1 does a select and a
/// combine an item, stores where a segment ends, and the outputs go out
/// from the boundaries, coalesced and in order, empty segments included.
/// A warp with no boundary anywhere in its items folds them straight.
///
/// On an H200 (2026-11-29), `sum` over 2^28 `i32` in segments of 16: 371
/// µs for the call (bounds, this kernel, a spine that returns at once),
/// 82% of copy, against 489 with the general tile kernel and about 52x
/// faster than CUB; the kernel alone 360 µs (346 before the lead part,
/// whose 17 µs spine it saves). At 2^24: 37 µs, was 42.
/// `docs/tuning/segmented.md`, "A tile kernel for short segments" and
/// "The short kernel writes its tiles' first segments".
///
/// # Safety
/// As [`super::flat::segmented_reduce`]; `R::Acc` and `R::Part` are
/// `R::In`'s size (the segments' values overwrite the staged items), and
/// its parts the accumulators themselves (plain operators); the `u32` at
/// [`policy::SPINE_NEEDED_AT`] of `temp` zero when the launch starts.
#[allow(clippy::too_many_arguments)]
pub unsafe fn segmented_short<R: SegmentedReduction, const B: u32, const ITEMS: usize>(
    input: *const R::In,
    n: u64,
    offsets: *const u64,
    segments: u64,
    seg_len: u64,
    out: *mut R::Out,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
    bounds: *const u64,
    route: *const u32,
) {
    const {
        assert!(
            size_of::<R::Acc>() == size_of::<R::In>() && size_of::<R::Part>() <= size_of::<R::Acc>() && ITEMS <= 32,
            "values over the staged items; boundary bits in a u32"
        )
    };
    // Five blocks a multiprocessor with the lead part (4-byte types).
    if policy::lead_items::<R::In>() > 0 {
        gpu::max_registers::<{ policy::SHORT_REGISTERS }>();
    }
    // SAFETY: the caller's contract on `spare`.
    unsafe { clear_words::<B>(spare, spare_words) };
    // SAFETY: the caller's contract on `route`.
    if unsafe { super::routed_to_ranges(route, segments) } == Some(true) {
        return;
    }
    let tid = gpu::thread_idx();
    let tile_len = B as u64 * ITEMS as u64;
    let [values_at, flags_at, _, window_at] = policy::smem_layout::<R::In, R::Acc>(B);
    let base = Shared::<u8>::dynamic();
    let tile_s = base.after::<R::In>(0);
    // The segments' values, over the staged items they were folded from.
    let ends_s = base.after::<R::Acc>(0);
    let vslots = base.after::<R::Part>(values_at);
    let fslots = base.after::<u32>(flags_at);
    let window = base.after::<u16>(window_at);
    let b = Bounds { offsets, segments, seg_len, n };
    // SAFETY: the caller's contract.
    let Prologue { tile, a, klo, khi, windowed, lead } =
        unsafe { prologue::<R::In, R::Acc, B, ITEMS>(input, &b, temp, bounds, policy::window_len::<R::Acc>(B) as u64) };
    let records = Records::<R::Acc>::new(temp, gpu::grid_dim() as u64);
    let local0 = tid as usize * ITEMS;
    let p0 = a + local0 as u64;
    let all = first_items(ITEMS as u32);
    let valid = if a + tile_len <= n {
        all
    } else if p0 >= n {
        0
    } else {
        first_items(Ord::min(n - p0, ITEMS as u64) as u32)
    };
    let slot = |i: usize| i + i / pad_every::<R::In>(ITEMS);
    // SAFETY (from here on): shared accesses inside the staged tile and
    // the window, boundary indices below khi <= segments + 1.
    let lift = |j: usize| {
        let x = unsafe { staged::<R::In, ITEMS>(tile_s, local0 + j) };
        R::lift::<1>(&Raw { a: [x], b: [x] }, 0, p0 + j as u64)
    };
    if klo >= khi {
        // No boundary (klo > khi only for offsets out of order): the
        // tile's record is its total.
        let mut run = R::identity();
        for j in 0..ITEMS {
            if (valid >> j) & 1 != 0 {
                run = R::combine(run, lift(j));
            }
        }
        // SAFETY: every thread takes this branch; this tile's records.
        unsafe {
            quiet_record::<R, B>(R::part_of(run, a), vslots, records.tails, records.firsts, records.heads, tile, a)
        };
        return;
    }
    let cnt = khi - klo;
    // Bit j: a boundary at p0 + j; `next`: one at p0 + ITEMS (the tile's
    // last thread never sees one there: its last segment is the tail).
    let (starts, next) = if windowed {
        unsafe { window_mask::<ITEMS>(window, cnt as u32, local0 as u32, tile_len as u32) }
    } else {
        unsafe { offsets_mask::<ITEMS>(&b, klo, khi, p0) }
    };
    let ends = (starts >> 1) | ((next as u32) << (ITEMS - 1));
    let quiet_warp = gpu_warp::ballot(starts | ends != 0 || valid != all) == 0;
    // The part of the tile's first segment that lies before the tile, when
    // it is short: warp 0 reads it (`lead_items` consecutive elements a
    // lane), its loads in flight through pass 1 and the block scan, and
    // the tile writes that segment itself. `lead` is the same in all of
    // warp 0 (NONE elsewhere), so `direct` is too.
    let lead_len = a.wrapping_sub(lead);
    let direct = lead != NONE && (1..=policy::lead_max::<R::In>()).contains(&lead_len);
    // At most two a lane (`lead_items`), a constant of the type.
    const L: usize = 2;
    const { assert!(policy::lead_items::<R::In>() as usize <= L, "lead_xs holds lead_items a lane") };
    let l = policy::lead_items::<R::In>();
    let mut lead_xs = [R::identity(); L];
    if direct {
        let lane = gpu::lane() as u64;
        unrolled!(L, |i| {
            let p = lead + lane * l + i as u64;
            if (i as u64) < l && p < a {
                // SAFETY: a - lead_max <= p < a <= n: inside the input.
                let x = unsafe { global::load(input.add(p as usize)) };
                lead_xs[i] = R::lift::<1>(&Raw { a: [x], b: [x] }, 0, p);
            }
        });
    }
    let mut run = R::identity();
    if quiet_warp {
        for j in 0..ITEMS {
            run = R::combine(run, lift(j));
        }
    } else if valid == all {
        run = unsafe { fold::<R, ITEMS, true>(tile_s, ends_s, local0, p0, starts, ends, all) };
    } else {
        run = unsafe { fold::<R, ITEMS, false>(tile_s, ends_s, local0, p0, starts, ends, valid) };
    }
    let (_, carry, _, total) = block_seg_scan::<R::Part, Parts<R>, B>(starts != 0, R::part_of(run, a), vslots, fslots);
    let (carry, total) = (R::part_acc(carry, a), R::part_acc(total, a));
    // The thread's first segment end, where that segment began before the
    // thread, still lacks what came before: the carry.
    if ends != 0 {
        let e0 = ends.trailing_zeros();
        if starts & first_items(e0 + 1) == 0 {
            let i = slot(local0 + e0 as usize);
            unsafe { ends_s.store(i, R::combine(carry, ends_s.load(i))) };
        }
    }
    if tid == 0 {
        unsafe {
            global::store(records.tails.add(tile as usize), total);
            if tile == 0 {
                // Boundary 0 ends no segment; nothing precedes tile 0.
                global::store(records.firsts, WRITTEN);
                global::store(records.heads, R::identity());
            }
        }
    }
    gpu::sync_threads();
    // Warp 0's lanes in order: the lead part, complete in lane 0. After
    // the tile's last barrier, so that only warp 0 waits for it.
    let lead_acc = if direct {
        let mut v = R::identity();
        unrolled!(L, |i| v = R::combine(v, lead_xs[i]));
        warp::reduce_in_order::<R::Acc, Accumulators<R>>(v)
    } else {
        R::identity()
    };
    // Boundary k ends segment k - 1 at tile position rel(k) - 1.
    let rel = |k: u64| -> u64 {
        if windowed {
            unsafe { window.load((k - klo) as usize) as u64 }
        } else {
            Ord::min(unsafe { b.at(k) }.wrapping_sub(a), tile_len)
        }
    };
    let value = |r: u64| if r == 0 { R::identity() } else { unsafe { ends_s.load(slot(r as usize - 1)) } };
    let mut k = klo + tid as u64;
    while k < khi {
        let r = rel(k);
        if k == klo {
            // Thread 0 (warp 0's `direct` and `lead_acc`).
            if direct {
                // The segment whole: its part before the tile, then the
                // tile's up to its first boundary (klo >= 1).
                unsafe {
                    let acc = R::combine(lead_acc, value(r));
                    global::store(out.add((klo - 1) as usize), R::out(acc, 0, false));
                    global::store(records.firsts.add(tile as usize), WRITTEN);
                }
            } else if tile != 0 {
                // The tile's part of the segment that ends at its first
                // boundary: the spine puts what came before in front, and
                // is told it has work (boundary 0 ends no segment).
                unsafe {
                    global::store(records.heads.add(tile as usize), value(r));
                    global::store(records.firsts.add(tile as usize), klo);
                    if klo >= 1 {
                        global::store(policy::spine_needed(temp), 1u32);
                    }
                }
            }
        } else {
            let empty = rel(k - 1) == r;
            let acc = if empty { R::identity() } else { value(r) };
            unsafe { global::store(out.add((k - 1) as usize), R::out(acc, 0, empty)) };
        }
        k += B as u64;
    }
}

/// Pass 1 of [`segmented_short`] over a thread's items (from `local0` of
/// the staged tile, positions from `p0`): a run that restarts at each bit
/// of `starts` and is stored over the staged item at each bit of `ends`;
/// returns the run after the last item. Items outside `valid` (past the
/// input) count as the identity, tested only where `FULL` is false.
/// Eight items' shared loads go out together before their folds and
/// stores (a store may be in place of a later load otherwise).
///
/// # Safety
/// The thread's items are staged; `ends_s` is the staged tile's region.
#[inline(always)]
#[track_caller]
unsafe fn fold<R: SegmentedReduction, const ITEMS: usize, const FULL: bool>(
    tile_s: Shared<R::In>,
    ends_s: Shared<R::Acc>,
    local0: usize,
    p0: u64,
    starts: u32,
    ends: u32,
    valid: u32,
) -> R::Acc {
    const C: usize = 8;
    const { assert!(ITEMS.is_multiple_of(C)) };
    let slot = |i: usize| i + i / pad_every::<R::In>(ITEMS);
    let mut run = R::identity();
    for c in 0..ITEMS / C {
        let mut xs = [R::identity(); C];
        unrolled!(C, |i| {
            let j = c * C + i;
            if FULL || (valid >> j) & 1 != 0 {
                // SAFETY: the thread's staged items.
                let x = unsafe { staged::<R::In, ITEMS>(tile_s, local0 + j) };
                xs[i] = R::lift::<1>(&Raw { a: [x], b: [x] }, 0, p0 + j as u64);
            }
        });
        unrolled!(C, |i| {
            let j = c * C + i;
            run = if (starts >> j) & 1 != 0 { xs[i] } else { R::combine(run, xs[i]) };
            if (ends >> j) & 1 != 0 {
                // SAFETY: the thread's own slot, its item already read.
                unsafe { ends_s.store(slot(local0 + j), run) };
            }
        });
    }
    run
}

/// The boundaries among a thread's positions `local0..local0 + ITEMS` as
/// bits, and whether one lies at `local0 + ITEMS`, from the window's `cnt`
/// (at least one) sorted tile positions of a tile of `tile_len`: the first
/// at or after `local0` ([`window_first`]), then a step a boundary.
/// Offsets out of order give some bits (never an access outside the
/// window).
///
/// # Safety
/// The window holds `cnt` positions, `cnt >= 1`; `local0 < tile_len`.
#[inline(always)]
#[track_caller]
unsafe fn window_mask<const ITEMS: usize>(window: Shared<u16>, cnt: u32, local0: u32, tile_len: u32) -> (u32, bool) {
    // SAFETY (window reads): every index below cnt.
    let at = |i: u32| unsafe { window.load(i as usize) } as u32;
    let lo = unsafe { window_first(window, cnt, local0, tile_len) };
    let end = local0 + ITEMS as u32;
    let mut mask = 0u32;
    let mut i = lo;
    while i < cnt {
        let p = at(i);
        if p >= end {
            return (mask, p == end);
        }
        if p >= local0 {
            mask |= 1 << (p - local0);
        }
        i += 1;
    }
    (mask, false)
}

/// [`window_mask`] from the offsets in global memory (a tile with more
/// boundaries than the window holds), boundaries `klo..khi`.
///
/// # Safety
/// `khi <= segments + 1`.
#[inline(always)]
#[track_caller]
unsafe fn offsets_mask<const ITEMS: usize>(b: &Bounds, klo: u64, khi: u64, p0: u64) -> (u32, bool) {
    // SAFETY: boundary indices below khi.
    let mut k = unsafe { b.lower_bound(klo, khi, p0) };
    let end = p0 + ITEMS as u64;
    let mut mask = 0u32;
    while k < khi {
        let at = unsafe { b.at(k) };
        if at >= end {
            return (mask, at == end);
        }
        if at >= p0 {
            mask |= 1 << (at - p0);
        }
        k += 1;
    }
    (mask, false)
}
