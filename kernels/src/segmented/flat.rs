//! The flat segmented reduction: fixed tiles over the elements, whatever
//! the segments.

use super::{SegmentedReduction, policy};
use crate::block::reduce as block_reduce;
use crate::block::tile::{first_items, from_last, pad_every, stage_tile_unsynced};
use crate::gpu::{self, Shared, WARP_SIZE, atomic, global, warp as gpu_warp};
use crate::ops::{Element, Item, Monoid, Sum};
use crate::reduce::finish::Accumulators;
use crate::reduce::reduction::Raw;
use crate::single_pass::clear_words;
use crate::warp;
use core::marker::PhantomData;
use core::mem::size_of;

/// No boundary: past the last one; as a tile's *first*, a tile without a
/// boundary.
pub(super) const NONE: u64 = u64::MAX;

/// A tile's *first* when its first segment is already written (tile 0,
/// which nothing precedes).
pub(super) const WRITTEN: u64 = u64::MAX - 1;

/// The segment boundaries: `at(k)` for `k` in `0..=segments` is the start
/// of segment `k` and the end of segment `k - 1`. From an offsets array,
/// or (`offsets` null) every `seg_len` elements, the last at `n`.
#[derive(Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) offsets: *const u64,
    pub(crate) segments: u64,
    pub(crate) seg_len: u64,
    pub(crate) n: u64,
}

impl Bounds {
    #[inline(always)]
    fn fixed(&self) -> bool {
        self.offsets.is_null()
    }

    /// Boundary `k`, `k <= segments`.
    #[inline(always)]
    #[track_caller]
    pub(super) unsafe fn at(&self, k: u64) -> u64 {
        if self.fixed() {
            let e = k.saturating_mul(self.seg_len);
            if e < self.n { e } else { self.n }
        } else {
            // SAFETY: k <= segments: inside the offsets (caller).
            unsafe { global::load(self.offsets.add(k as usize)) }
        }
    }

    /// Boundary `k`, or [`NONE`] past the last.
    #[inline(always)]
    #[track_caller]
    unsafe fn next(&self, k: u64) -> u64 {
        // SAFETY: k <= segments.
        if k <= self.segments { unsafe { self.at(k) } } else { NONE }
    }

    /// The first `k` in `lo..hi` with `at(k) >= v`, else `hi` (`hi <=
    /// segments + 1`), by one thread. On offsets that are not sorted the
    /// answer is some `k` in `lo..=hi`.
    #[inline(always)]
    #[track_caller]
    pub(super) unsafe fn lower_bound(&self, mut lo: u64, mut hi: u64, v: u64) -> u64 {
        if self.fixed() {
            let k = if v > self.n { self.segments + 1 } else { v.div_ceil(self.seg_len) };
            return k.clamp(lo, hi);
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // SAFETY: mid < hi <= segments + 1.
            if unsafe { self.at(mid) } < v {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The first round of [`Self::warp_lower_bound`] (for offsets, over
    /// more than 32 boundaries): each lane loads one of the 32 consecutive
    /// boundaries around where evenly spread segments would put the
    /// answer. Issued on its own so that the load can be in flight while
    /// the warp does other work; [`Self::warp_lower_bound`] compares.
    #[inline(always)]
    #[track_caller]
    unsafe fn warp_probe(&self, lo: u64, hi: u64, v: u64) -> Option<Probe> {
        let w = WARP_SIZE as u64;
        if self.fixed() || hi - lo <= w {
            return None;
        }
        let guess = (v as f64 / Ord::max(self.n, 1) as f64 * self.segments as f64) as u64;
        let g = guess.saturating_sub(w / 2).clamp(lo, hi - w);
        // SAFETY: g + lane < hi <= segments + 1.
        Some(Probe { g, at: unsafe { self.at(g + gpu::lane() as u64) } })
    }

    /// [`Self::lower_bound`] by a whole warp (all 32 lanes call it with the
    /// same arguments; every lane gets the answer), from the warp's
    /// `probe` ([`Self::warp_probe`] with the same arguments): the probe
    /// settles segments of one length in one round trip, or narrows the
    /// range; then each round the lanes read 32 boundaries spread over the
    /// range at once and keep the 32nd of it where the answer lies, so
    /// `log32` dependent round trips instead of `log2`.
    #[inline(always)]
    #[track_caller]
    unsafe fn warp_lower_bound(&self, mut lo: u64, mut hi: u64, v: u64, probe: Option<Probe>) -> u64 {
        if self.fixed() {
            // SAFETY: forwarded.
            return unsafe { self.lower_bound(lo, hi, v) };
        }
        let lane = gpu::lane() as u64;
        let w = WARP_SIZE as u64;
        if let Some(Probe { g, at }) = probe {
            let c = warp::reduce_all::<u32, Sum>((at < v) as u32) as u64;
            if c == w {
                lo = g + w;
            } else if c == 0 {
                hi = g;
            } else {
                return g + c;
            }
        }
        while hi - lo > w {
            let m = hi - lo;
            // Probes lo = k_0 < k_1 < ... < k_31 < hi (m > 32).
            // SAFETY: k < hi <= segments + 1.
            let below = unsafe { self.at(lo + lane * m / w) } < v;
            let c = warp::reduce_all::<u32, Sum>(below as u32) as u64;
            if c == 0 {
                return lo;
            }
            // The answer lies after k_{c-1} and at or before k_c.
            let new_hi = if c == w { hi } else { lo + c * m / w };
            lo += (c - 1) * m / w + 1;
            hi = new_hi;
        }
        // SAFETY: lo + lane < hi.
        let below = lane < hi - lo && unsafe { self.at(lo + lane) } < v;
        lo + warp::reduce_all::<u32, Sum>(below as u32) as u64
    }

    /// The first round of [`Self::edge`]'s search for tile edge `q` (of
    /// `tiles` tiles of `tile_len`), or `None` where the edge needs none.
    ///
    /// # Safety
    /// As [`Self::warp_probe`].
    #[inline(always)]
    #[track_caller]
    unsafe fn edge_probe(&self, q: u64, tiles: u64, tile_len: u64) -> Option<Probe> {
        if q == 0 || q >= tiles {
            return None;
        }
        // SAFETY: forwarded; boundary indices below segments + 1.
        unsafe { self.warp_probe(0, self.segments + 1, q * tile_len) }
    }

    /// The first boundary of the tile that starts at edge `q`: 0 for the
    /// first tile, `segments + 1` past the last (`q == tiles`), else the
    /// first boundary at or after `q * tile_len`, by a whole warp (as
    /// [`Self::warp_lower_bound`], from [`Self::edge_probe`]'s `probe`
    /// with the same arguments).
    ///
    /// # Safety
    /// As [`Self::warp_lower_bound`].
    #[inline(always)]
    #[track_caller]
    unsafe fn edge(&self, q: u64, tiles: u64, tile_len: u64, probe: Option<Probe>) -> u64 {
        if q == 0 {
            0
        } else if q >= tiles {
            self.segments + 1
        } else {
            // SAFETY: forwarded.
            unsafe { self.warp_lower_bound(0, self.segments + 1, q * tile_len, probe) }
        }
    }
}

/// A lane's part of the first round of a warp's search: the boundary
/// `at(g + lane)`.
#[derive(Clone, Copy)]
struct Probe {
    g: u64,
    at: u64,
}

/// Fill for the part of a tile past the input (never combined: the walk
/// stops at `n`).
#[derive(Clone, Copy)]
struct Fill;
impl<T: Element> Monoid<T> for Fill {
    #[inline(always)]
    fn identity() -> T {
        T::ZERO
    }
    #[inline(always)]
    fn combine(a: T, _b: T) -> T {
        a
    }
}

/// Stage the tile at `a` into shared memory (no barrier): as
/// [`stage_tile_unsynced`], but a whole tile of 4-byte elements goes with
/// 16-byte loads written out one by one (`unrolled!`), so that all of a
/// thread's loads are in flight before its first shared store and its 32
/// items stay in registers (the shared staging's loops stay rolled at 32
/// items in this kernel, and its items went to a 128-byte stack frame).
///
/// # Safety
/// As [`stage_tile_unsynced`].
#[inline(always)]
#[track_caller]
unsafe fn stage<T: Element, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    a: u64,
    s: Shared<T>,
    slim: bool,
) {
    const V: usize = 4;
    if !(size_of::<T>() == 4 && ITEMS.is_multiple_of(V) && ITEMS / V <= 16) {
        // SAFETY: forwarded.
        unsafe { stage_tile_unsynced::<T, Fill, B, ITEMS>(input, n, a, s) };
        return;
    }
    let len = B as u64 * ITEMS as u64;
    let tid = gpu::thread_idx() as usize;
    let at = |i: usize| i + i / pad_every::<T>(ITEMS);
    // SAFETY: the caller's contract; a + len <= n on the vector path.
    let base = unsafe { input.add(Ord::min(a, n) as usize) };
    if a + len > n || !(base as usize).is_multiple_of(16) {
        // A partial tile, or an input not aligned for 16 bytes (a view):
        // one element per load.
        for k in 0..ITEMS {
            let i = k * B as usize + tid;
            let g = a + i as u64;
            // SAFETY: g < n; below tile_slots.
            let x = if g < n { unsafe { global::load(input.add(g as usize)) } } else { T::ZERO };
            unsafe { s.store(at(i), x) };
        }
        return;
    }
    let mut v = [[T::ZERO; V]; 16];
    // SAFETY: chunk k*B + tid of the tile lies inside it.
    unrolled!(ITEMS / V, |k| v[k] = unsafe { global::load_vec_coherent::<T, V>(base.add((k * B as usize + tid) * V)) });
    // A vector's four elements share their pad (the pad comes every 32),
    // so its slot is found once, in 32 bits (per element in 64 bits it
    // took five instructions a shared store, ptxas sm_90).
    const { assert!(pad_every::<T>(ITEMS).is_multiple_of(V) && B as usize * ITEMS < u32::MAX as usize) };
    // Where `slim` is false (argmin and argmax, whose 40 registers then
    // spilled 12 bytes), the slots as before.
    unrolled!(ITEMS / V, |k| {
        let (q, qw) = ((k * B as usize + tid) * V, ((k * B as usize + tid) * V) as u32);
        let slot = (qw + qw / pad_every::<T>(ITEMS) as u32) as usize;
        for (j, x) in v[k].iter().enumerate() {
            let i = if slim { slot + j } else { at(q + j) };
            // SAFETY: below tile_slots (padded as the shared staging).
            unsafe { s.store(i, *x) };
        }
    });
}

/// The element staged at `i` of the tile.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn staged<T: Element, const ITEMS: usize>(tile: Shared<T>, i: usize) -> T {
    // SAFETY: inside the staged tile (caller).
    unsafe { tile.load(i + i / pad_every::<T>(ITEMS)) }
}

/// Element `p` of the input (staged at `i` of the tile) as an accumulator.
#[inline(always)]
#[track_caller]
unsafe fn item<R: SegmentedReduction, const ITEMS: usize>(tile: Shared<R::In>, i: usize, p: u64) -> R::Acc {
    // SAFETY: inside the staged tile (caller).
    let x = unsafe { staged::<R::In, ITEMS>(tile, i) };
    R::lift::<1>(&Raw { a: [x], b: [x] }, 0, p)
}

/// Where the thread that holds a tile's first boundary leaves the tile's
/// part of the segment that ends there (its *head*) and that boundary's
/// index, for [`segmented_spine`] to finish.
#[derive(Clone, Copy)]
struct Head<A> {
    head: *mut A,
    first: *mut u64,
}

impl<A: Copy> Head<A> {
    /// # Safety
    /// Both pointers are the tile's own record slots.
    #[inline(always)]
    unsafe fn record(&self, run: A, k: u64) {
        unsafe {
            global::store(self.head, run);
            global::store(self.first, k);
        }
    }
}

/// Finish segment `k - 1` at its end with `acc`: into the tile's head
/// record when `head` is still there (the tile's first boundary, which the
/// spine completes), else into `out[k - 1]` (`k = 0`, the boundary before
/// the first segment, ends none).
///
/// # Safety
/// `k <= segments`; `head`'s pointers are the tile's own record slots.
#[inline(always)]
#[track_caller]
unsafe fn finish_segment<R: SegmentedReduction>(
    b: &Bounds,
    out: *mut R::Out,
    head: &mut Option<Head<R::Acc>>,
    acc: R::Acc,
    k: u64,
) {
    if let Some(h) = head.take() {
        // SAFETY: the caller's record slots.
        unsafe { h.record(acc, k) };
    } else if k >= 1 {
        // SAFETY: k - 1 < segments: an offset and an output slot.
        let start = if R::NEEDS_START { unsafe { b.at(k - 1) } } else { 0 };
        unsafe { global::store(out.add((k - 1) as usize), R::out(acc, start, false)) };
    }
}

/// Walk a thread's `ITEMS` positions from `p0` (staged from `local0` on),
/// `k` the first boundary at or after `p0`, combining into `run`. At each
/// boundary the segment that ends there is finished (written when `WRITE`:
/// with `run`, and every empty segment at the same place with the
/// identity; the first one to `head` instead when given) and `run`
/// restarts. Returns whether any boundary was met and
/// `run` after the last element.
#[inline(always)]
#[track_caller]
unsafe fn walk<R: SegmentedReduction, const ITEMS: usize, const WRITE: bool>(
    b: &Bounds,
    tile: Shared<R::In>,
    local0: usize,
    p0: u64,
    mut k: u64,
    mut run: R::Acc,
    out: *mut R::Out,
    mut head: Option<Head<R::Acc>>,
) -> (bool, R::Acc) {
    // SAFETY (boundaries, outputs): k <= segments + 1 throughout, and
    // writes go to segments k - 1 < segments; (tile) inside the staged tile.
    let mut next = unsafe { b.next(k) };
    let mut reset = false;
    for j in 0..ITEMS {
        let p = p0 + j as u64;
        if next == p {
            reset = true;
            if WRITE {
                unsafe { finish_segment::<R>(b, out, &mut head, run, k) };
            }
            k += 1;
            next = unsafe { b.next(k) };
            while next == p {
                // Segment k - 1 starts and ends here: empty.
                if WRITE {
                    unsafe { global::store(out.add((k - 1) as usize), R::out(R::identity(), p, true)) };
                }
                k += 1;
                next = unsafe { b.next(k) };
            }
            run = R::identity();
        }
        if p < b.n {
            run = R::combine(run, unsafe { item::<R, ITEMS>(tile, local0 + j, p) });
        }
    }
    (reset, run)
}

/// `R`'s tile parts under their combine in order (not commutative for
/// argmin and argmax: ties keep the earlier): a tile's scan and total.
#[derive(Clone, Copy)]
pub(super) struct Parts<R>(PhantomData<R>);
impl<R: SegmentedReduction + 'static> Monoid<R::Part> for Parts<R> {
    #[inline(always)]
    fn identity() -> R::Part {
        R::part_identity()
    }
    #[inline(always)]
    fn combine(a: R::Part, b: R::Part) -> R::Part {
        R::part_combine(a, b)
    }
}

/// Inclusive segmented scan across a warp of `(reset, value)` pairs:
/// `(f1, x1) . (f2, x2) = (f1 | f2, if f2 { x2 } else { x1 + x2 })`, the
/// flag and the value shuffled apart (the value may be 16 bytes).
#[inline(always)]
#[track_caller]
fn warp_seg_scan<X: Item, S: Monoid<X>>(mut f: u32, mut x: X) -> (u32, X) {
    let lane = gpu::lane();
    let mut off = 1;
    while off < WARP_SIZE {
        let uf = gpu_warp::shfl_up(f, off);
        let ux = gpu_warp::shfl_up(x, off);
        if lane >= off {
            if f == 0 {
                x = S::combine(ux, x);
            }
            f |= uf;
        }
        off *= 2;
    }
    (f, x)
}

/// Exclusive segmented scan of one `(reset, value)` pair per thread across
/// the block (as [`crate::block::scan::exclusive_scan`]: warps, then the
/// warp totals). Returns the thread's exclusive pair and the block's total
/// pair. One barrier; `vslots` and `fslots` hold 32 each.
#[inline(always)]
#[track_caller]
pub(super) fn block_seg_scan<X: Item, S: Monoid<X>, const B: u32>(
    reset: bool,
    v: X,
    vslots: Shared<X>,
    fslots: Shared<u32>,
) -> (bool, X, bool, X) {
    let (lane, w) = (gpu::lane(), gpu::warp_idx());
    let (f, x) = warp_seg_scan::<X, S>(reset as u32, v);
    let (uf, ux) = (gpu_warp::shfl_up(f, 1), gpu_warp::shfl_up(x, 1));
    let (ef, ex) = if lane == 0 { (0, S::identity()) } else { (uf, ux) };
    let warps = B / WARP_SIZE;
    if warps == 1 {
        let (tf, tx) = (gpu_warp::shfl_idx(f, WARP_SIZE - 1), gpu_warp::shfl_idx(x, WARP_SIZE - 1));
        return (ef != 0, ex, tf != 0, tx);
    }
    if lane == WARP_SIZE - 1 {
        // SAFETY: w < 32 slots.
        unsafe {
            vslots.store(w as usize, x);
            fslots.store(w as usize, f);
        }
    }
    gpu::sync_threads();
    // SAFETY: lane < warps, written before the barrier.
    let (tf, tx) = if lane < warps {
        unsafe { (fslots.load(lane as usize), vslots.load(lane as usize)) }
    } else {
        (0, S::identity())
    };
    let (sf, sx) = warp_seg_scan::<X, S>(tf, tx);
    let before = if w == 0 { 0 } else { w - 1 };
    let (pf, px) = (gpu_warp::shfl_idx(sf, before), gpu_warp::shfl_idx(sx, before));
    let (wf, wx) = if w == 0 { (0, S::identity()) } else { (pf, px) };
    let (totf, totx) = (gpu_warp::shfl_idx(sf, warps - 1), gpu_warp::shfl_idx(sx, warps - 1));
    let x = if ef != 0 { ex } else { S::combine(wx, ex) };
    ((wf | ef) != 0, x, totf != 0, totx)
}

/// One result per segment, flat over the elements: tiles of `B x ITEMS`
/// positions, whatever the segment lengths, one block per tile, every
/// tile independent of the others; a second launch
/// ([`segmented_spine`]) then joins the parts of segments that span
/// tiles.
///
/// ```text
/// positions   a ............................................. a+B*ITEMS
/// boundaries  |      |  |         |                |             (at(k))
/// thread t    [ items p0 .. p0+ITEMS )  walks them, meets boundaries
///
/// pass 1  each thread: (met a boundary?, combine since its last one)
/// scan    block-wide exclusive scan of those pairs (a boundary resets)
/// pass 3  threads that met a boundary walk again from their exclusive
///         value; at boundary k they write segment k-1 (the identity for
///         empty segments), except the tile's first boundary
/// record  the tile's tail (combine since its last boundary, or of the
///         whole tile), head (its start up to its first boundary) and
///         the index of that first boundary
/// spine   one block scans the records in tile order and writes each
///         tile's first segment: (everything before the tile) . head
/// ```
/// Segment `s` is finished at the position `end(s)` (`offsets[s+1]`):
/// by the thread that holds it when the segment starts in the same tile,
/// by the spine when the segment starts in an earlier one, so every
/// segment is written once; the grid has `n / (B*ITEMS) + 1` tiles so
/// that position `n` has a thread. Tile 0 has nothing before it and
/// writes its first segment itself (a one-tile input needs no spine).
/// Elements before `offsets[0]` or from `offsets[S]` on belong to no
/// segment: they only ever flow into a combine that is never written.
///
/// No tile waits for another (no ticket, no look-back): the tile is the
/// block index, so its loads go out at once. The tile's range of
/// boundaries comes from `bounds` when [`segmented_bounds`] ran (large
/// inputs: each thread reads two indices, in flight with its loads; at
/// 2^28 `i32` with mixed lengths that took the kernel from 354 to 309 us
/// on an H200, 83% of copy), else two warps find it (a 32-way search of
/// the offsets, whose first round, a guess, is in flight with their
/// loads). Every
/// tile's parts are joined in tile order by the spine, so results,
/// floating-point ones included, are the same from run to run. The block
/// then copies the tile's boundaries into a shared window of `u16` tile
/// positions in one coalesced pass, and each thread finds its first
/// boundary and turns the boundaries among its positions into bits
/// (`window_bits`) from shared memory. Both passes are then loops over
/// its items that restart at a set bit; a warp with no boundary in any
/// lane (inside a long segment) runs pass 1 as a plain loop without the
/// bit tests, and threads without a boundary skip pass 3. Only a thread
/// with two boundaries at one position (empty segments) walks its
/// boundaries one by one, and a tile with more boundaries than its window holds
/// searches the offsets in global memory (`boundary_bits`).
///
/// The block scan carries *parts* ([`SegmentedReduction::Part`]): for
/// argmin and argmax the best element and its `u32` tile position (8
/// bytes for 4-byte types) instead of the 16-byte accumulator with its
/// 64-bit index, widened once per thread where pass 3 or the record needs
/// it. A tile with no boundary at all (inside one segment) needs only its
/// total: an ordered block reduction replaces the scan there. With the
/// three-instruction argmin item ([`SegmentedReduction::run_push`] for
/// `Arg`), `f32` argmin at 2^28 on an H200 went from 831 to 600 us at
/// segments of 512 (1.30x CUB) and from 410 to 307 at 2^20 (1.15x).
///
/// **Offsets are checked** in the same pass: each tile checks the pairs
/// `offsets[k] <= offsets[k+1]` for the `k` of its own range (the ranges
/// of consecutive tiles chain, so together they cover every pair even
/// when the offsets are not sorted), and the last tile `offsets[S] <= n`.
/// A violation increments the `u32` at byte 4 of `temp`; the results are
/// then unspecified, but every access stays in bounds and every loop ends.
///
/// Parameters: `input` of `n` elements; `offsets` of `segments + 1`
/// (null: segments of `seg_len` > 0, `segments = ceil(n / seg_len)`);
/// `out` of `segments`; `temp` the header and the tiles' records
/// ([`policy::records_layout`]), its error count zeroed;
/// `spare`/`spare_words` the other half of double-buffered storage, zeroed
/// here for the next launch; `bounds` null, or the `tiles + 1` boundary
/// indices of the tiles' edges that [`segmented_bounds`] found (for
/// offsets only: each tile then reads its range instead of searching,
/// which on mixed lengths took several dependent round trips while the
/// block waited at a barrier). Shared memory:
/// [`policy::smem_bytes`]`::<In, Acc>(B)`.
///
/// # Safety
/// As described: buffers of those sizes, one block per tile, the grid as
/// above, the error count zeroed, `temp` disjoint from `spare`, `bounds`
/// null for fixed lengths and written by [`segmented_bounds`] with the
/// same offsets and tile length in a launch before this one otherwise;
/// `route` null, or the counts of [`super::ranges::segmented_route`] from
/// a launch before this one (the launch then does nothing but clear
/// `spare` when they send the segments to the ranges kernel).
pub unsafe fn segmented_reduce<R: SegmentedReduction, const B: u32, const ITEMS: usize>(
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
    // Argmin and argmax (16-byte accumulators) fit 40 registers without a
    // spill, so six blocks a multiprocessor with their smaller window; the
    // sums would spill and keep five ([`policy::ARG_REGISTERS`]).
    if size_of::<R::Acc>() > 8 {
        gpu::max_registers::<{ policy::ARG_REGISTERS }>();
    }
    // SAFETY: the caller's contract on `spare`.
    unsafe { clear_words::<B>(spare, spare_words) };
    // SAFETY: the caller's contract on `route`.
    if unsafe { super::routed_to_ranges(route, segments) } == Some(true) {
        return;
    }
    let (tid, lane, w) = (gpu::thread_idx(), gpu::lane(), gpu::warp_idx());
    let tile_len = B as u64 * ITEMS as u64;
    let tiles = gpu::grid_dim();
    let errors = policy::error_count(temp);
    let records = Records::<R::Acc>::new(temp, tiles as u64);
    const { assert!(B as usize * ITEMS <= u16::MAX as usize, "window positions are u16") };
    let [values_at, flags_at, bounds_at, window_at] = policy::smem_layout::<R::In, R::Acc>(B);
    let base = Shared::<u8>::dynamic();
    let tile_s = base.after::<R::In>(0);
    // The parts are no larger than the accumulators the layout sizes for.
    const { assert!(size_of::<R::Part>() <= size_of::<R::Acc>()) };
    let vslots = base.after::<R::Part>(values_at);
    let fslots = base.after::<u32>(flags_at);
    let kbounds = base.after::<u64>(bounds_at);
    let window = base.after::<u16>(window_at);
    let b = Bounds { offsets, segments, seg_len, n };
    let tile = gpu::block_idx();
    let last = tile == tiles - 1;
    let a = tile as u64 * tile_len;
    // The tile's boundaries: klo..khi, the first at or after a and
    // a + tile_len. Given `bounds` ([`segmented_bounds`] ran before),
    // every thread reads them, in flight with its loads. Else (fixed
    // lengths, or small inputs) two warps search them: the first round of
    // each search goes out before the warp's loads; the rest waits until
    // they are staged (holding the loaded items through a search took 56
    // registers instead of 40, ptxas sm_90).
    let searched = bounds.is_null();
    let warps = B / WARP_SIZE;
    let (q, tiles_u) = (tile as u64, tiles as u64);
    // SAFETY: tile edges q <= tiles.
    let lo_probe = if searched && w == 0 { unsafe { b.edge_probe(q, tiles_u, tile_len) } } else { None };
    let hi_probe = if searched && w == warps - 1 { unsafe { b.edge_probe(q + 1, tiles_u, tile_len) } } else { None };
    // SAFETY: tile + 1 <= tiles: inside the caller's `tiles + 1` bounds.
    let given = if searched {
        (0, 0)
    } else {
        // Clamped: offsets that are not sorted can leave an edge unwritten
        // (its zero) or written twice ([`segmented_bounds`]).
        let (lo, hi) =
            unsafe { (global::load(bounds.add(tile as usize)), global::load(bounds.add(tile as usize + 1))) };
        (Ord::min(lo, segments + 1), Ord::min(hi, segments + 1))
    };
    // SAFETY (from here on): shared accesses inside the carved parts,
    // boundary indices <= segments + 1, record slots of this tile.
    unsafe { stage::<R::In, B, ITEMS>(input, n, a, tile_s, false) };
    let (klo, khi) = if searched {
        if w == 0 {
            let lo = unsafe { b.edge(q, tiles_u, tile_len, lo_probe) };
            if lane == 0 {
                unsafe { kbounds.store(0, lo) };
            }
        }
        if w == warps - 1 {
            let hi = unsafe { b.edge(q + 1, tiles_u, tile_len, hi_probe) };
            if lane == 0 {
                unsafe { kbounds.store(1, hi) };
            }
        }
        gpu::sync_threads();
        unsafe { (kbounds.load(0), kbounds.load(1)) }
    } else {
        given
    };
    // The tile's boundaries klo..khi, as tile positions, go to a shared
    // window in one coalesced pass (which also checks the offsets' order),
    // so each thread finds its own in shared memory rather than by a
    // chain of dependent global reads. A tile with more boundaries than
    // the window holds (segments of 1 or 2 elements on average, or many
    // empty ones) searches the offsets directly.
    let windowed = klo <= khi && khi - klo <= policy::window_len::<R::Acc>(B) as u64;
    let fill_end = if windowed { khi } else { klo };
    let check_end = if b.fixed() { klo } else { Ord::min(Ord::max(khi, klo), segments) };
    let mut bad = !b.fixed() && klo > khi;
    let mut k = klo + tid as u64;
    while k < Ord::max(fill_end, check_end) {
        // k < khi <= segments + 1 (fill) or k < segments (check).
        let at = unsafe { b.at(k) };
        if k < fill_end {
            // Sorted offsets put it below the tile's end; others may land
            // anywhere (clamped: the results are unspecified then).
            let rel = Ord::min(at.wrapping_sub(a), tile_len) as u16;
            unsafe { window.store((k - klo) as usize, rel) };
        }
        if k < check_end {
            bad |= at > unsafe { b.at(k + 1) };
        }
        k += B as u64;
    }
    if !b.fixed() {
        if last && tid == 0 {
            bad |= unsafe { b.at(segments) } > n;
        }
        if bad {
            unsafe { atomic::add(errors, 1u32) };
        }
    }
    // Only a written window needs a barrier (the condition is the same in
    // every thread): a tile inside one long segment skips it; the staged
    // tile needs one where no search had it.
    if fill_end > klo || !searched {
        gpu::sync_threads();
    }
    let local0 = tid as usize * ITEMS;
    let p0 = a + local0 as u64;
    // The thread's first boundary, and its boundaries as bits of its
    // positions when they are distinct (no empty segment among them) and
    // in order: then both passes are straight, unrolled loops over the
    // items. Otherwise the thread walks the boundaries one by one
    // ([`walk`]).
    let (k0, bits) = if windowed {
        unsafe { window_bits::<ITEMS>(window, (khi - klo) as u32, local0 as u32, klo) }
    } else {
        let k0 = unsafe { b.lower_bound(klo, if khi > klo { khi } else { klo }, p0) };
        (k0, unsafe { boundary_bits::<ITEMS>(&b, k0, p0) })
    };
    let valid = if p0 >= n { 0 } else { first_items(Ord::min(n - p0, ITEMS as u64) as u32) };
    // Pass 1.
    // No boundary and every item in the input, in every lane of the
    // warp (a warp inside a segment longer than its items): a straight
    // loop without the per-item bit tests (about 9 instructions an item
    // with them, ptxas sm_90). Per warp, not per thread: with segments of
    // 512 a warp whose other lanes took it ran both loops (2^28 `i32`
    // 444 -> 460 us).
    // A whole tile inside one segment (no boundary: the same in every
    // thread) is straight everywhere without the vote.
    let quiet = klo == khi;
    let mut straight = (bits == Some(0) && valid == first_items(ITEMS as u32)) as u32;
    if !(quiet && a + tile_len <= n) {
        let mut off = WARP_SIZE / 2;
        while off > 0 {
            straight &= gpu_warp::shfl_xor(straight, off);
            off /= 2;
        }
    }
    let (reset, tail) = match bits {
        Some(_) if straight != 0 => {
            let mut run = R::run_from(R::identity());
            for j in 0..ITEMS {
                run = R::run_push(run, unsafe { staged::<R::In, ITEMS>(tile_s, local0 + j) }, j as u32);
            }
            (false, R::run_part(run, local0 as u32))
        }
        Some(mask) => {
            let mut run = R::run_from(R::identity());
            if size_of::<R::Acc>() > 8 {
                // Argmin and argmax (16-byte accumulators): pass 1 needs
                // only the items from the thread's last boundary on (all
                // of them without one), so a straight loop takes an item
                // where its position is at or past that boundary and in
                // the input, rather than restarting at each boundary's
                // bit (H200, 2^28 `i32` argmin: 4-6% faster at segments of
                // 16 and 512; the sums ran within 2% either way, and
                // their 8-byte kernels went from 48 registers to 56).
                let take = valid & from_last(mask);
                for j in 0..ITEMS {
                    let x = unsafe { staged::<R::In, ITEMS>(tile_s, local0 + j) };
                    run = core::hint::select_unpredictable((take >> j) & 1 != 0, R::run_push(run, x, j as u32), run);
                }
            } else {
                for j in 0..ITEMS {
                    if (mask >> j) & 1 != 0 {
                        run = R::run_from(R::identity());
                    }
                    if (valid >> j) & 1 != 0 {
                        run = R::run_push(run, unsafe { staged::<R::In, ITEMS>(tile_s, local0 + j) }, j as u32);
                    }
                }
            }
            (mask != 0, R::run_part(run, local0 as u32))
        }
        None => {
            let (reset, acc) = unsafe { walk::<R, ITEMS, false>(&b, tile_s, local0, p0, k0, R::identity(), out, None) };
            (reset, R::part_of(acc, a))
        }
    };
    if quiet {
        // No thread resets or writes a segment: the tile's record is its
        // total alone, so an ordered block reduction replaces the scan (no
        // flags, no exclusive values, one warp's steps after the barrier).
        let (tails, firsts, heads) = (records.tails, records.firsts, records.heads);
        // SAFETY: all threads take this branch; this tile's records.
        if size_of::<R::Acc>() > 8 {
            unsafe { quiet_record_apart::<R, B>(tail, vslots, tails, firsts, heads, tile, a) };
        } else {
            unsafe { quiet_record::<R, B>(tail, vslots, tails, firsts, heads, tile, a) };
        }
        return;
    }
    let (ex_reset, ex_value, tile_reset, tile_value) =
        block_seg_scan::<R::Part, Parts<R>, B>(reset, tail, vslots, fslots);
    if tid == 0 {
        unsafe {
            global::store(records.tails.add(tile as usize), R::part_acc(tile_value, a));
            // The spine reads every head: the identity where no thread
            // leaves one.
            if !tile_reset || tile == 0 {
                global::store(records.firsts.add(tile as usize), if tile_reset { WRITTEN } else { NONE });
                global::store(records.heads.add(tile as usize), R::identity());
            }
        }
    }
    // Pass 3: only threads that met a boundary write anything; the first
    // of them (no boundary before it in the tile) leaves the tile's first
    // segment to the spine, except in tile 0.
    if reset {
        let start = R::part_acc(ex_value, a);
        let head = (!ex_reset && tile != 0).then(|| Head {
            head: unsafe { records.heads.add(tile as usize) },
            first: unsafe { records.firsts.add(tile as usize) },
        });
        match bits {
            Some(mask) => {
                // Boundary k at bit j ends segment k - 1 there. The items
                // go in chunks of eight whose shared loads are issued
                // together before the chunk's walk: the walk branches at
                // each bit, and one item at a time it was a chain of
                // dependent shared loads (H200, 2^28 `i32` mixed lengths:
                // the most stall samples after the staging's).
                // 32 bytes of items a chunk: eight of 4 bytes, four of 8
                // (eight of 8 took those kernels from 48 registers to 56).
                const fn chunk<T>() -> usize {
                    32 / size_of::<T>()
                }
                const { assert!(ITEMS.is_multiple_of(chunk::<R::In>()) && chunk::<R::In>() <= 8) };
                let (mut run, mut k, mut head) = (R::run_from(start), k0, head);
                for c in 0..ITEMS / chunk::<R::In>() {
                    let c0 = c * chunk::<R::In>();
                    let mut xs = [R::In::ZERO; 16];
                    unrolled!(chunk::<R::In>(), |i| xs[i] = unsafe { staged::<R::In, ITEMS>(tile_s, local0 + c0 + i) });
                    unrolled!(chunk::<R::In>(), |i| {
                        let j = c0 + i;
                        if (mask >> j) & 1 != 0 {
                            let acc = R::run_end(run, p0);
                            unsafe { finish_segment::<R>(&b, out, &mut head, acc, k) };
                            k += 1;
                            run = R::run_from(R::identity());
                        }
                        if (valid >> j) & 1 != 0 {
                            run = R::run_push(run, xs[i], j as u32);
                        }
                    });
                }
            }
            None => {
                unsafe { walk::<R, ITEMS, true>(&b, tile_s, local0, p0, k0, start, out, head) };
            }
        }
    }
}

/// Offsets in a 128-byte line: the prologue's prefetch of the window's
/// offsets takes a line a thread (256 threads: 4,096 offsets, the most a
/// window holds).
const PASS_LINE: u64 = 128 / 8;

/// What a tile of the flat kernels knows once its prologue
/// ([`prologue`]) is done: its index and first position, its boundaries
/// `klo..khi`, and whether they are in the shared window (as tile
/// positions) rather than only in the offsets.
#[derive(Clone, Copy)]
pub(super) struct Prologue {
    pub(super) tile: u32,
    pub(super) a: u64,
    pub(super) klo: u64,
    pub(super) khi: u64,
    pub(super) windowed: bool,
    /// In warp 0, where the segment that ends at the tile's first
    /// boundary begins (boundary `klo - 1`, before the tile when the
    /// offsets are sorted), when the tile is not the first and has a
    /// boundary `klo >= 1`; [`NONE`] otherwise (and elsewhere). Loaded in
    /// the window's round and first used after the prologue's barrier.
    pub(super) lead: u64,
}

/// The start of a tile of [`super::short::segmented_short`]: the tile
/// staged in shared memory (at 0 of the layout of
/// [`policy::smem_layout`]`::<T, A>`), its range of boundaries found (read
/// from `bounds`, or searched), copied to the shared window as tile
/// positions when it fits (a window of `window_cap` positions), and the
/// offsets of that range checked (a bad pair counts in the `u32` at byte
/// 4 of `temp`); ends after a barrier wherever the threads need one to
/// read the tile and the window. The same steps as the start of
/// [`segmented_reduce`], which keeps its own copy: called from there, the
/// leaner staging and pass below cost argmin and argmax (40 registers)
/// 12-28 bytes of spills, and the call itself 8 for their 8-byte types.
///
/// # Safety
/// As [`segmented_reduce`]; every thread of the block calls it.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn prologue<T: Element, A, const B: u32, const ITEMS: usize>(
    input: *const T,
    b: &Bounds,
    temp: *mut u64,
    bounds: *const u64,
    window_cap: u64,
) -> Prologue {
    let (tid, lane, w) = (gpu::thread_idx(), gpu::lane(), gpu::warp_idx());
    let (n, segments) = (b.n, b.segments);
    let tile_len = B as u64 * ITEMS as u64;
    let tiles = gpu::grid_dim();
    let errors = policy::error_count(temp);
    const { assert!(B as usize * ITEMS <= u16::MAX as usize, "window positions are u16") };
    let [_, _, bounds_at, window_at] = policy::smem_layout::<T, A>(B);
    let base = Shared::<u8>::dynamic();
    let (tile_s, window) = (base.after::<T>(0), base.after::<u16>(window_at));
    let kbounds = base.after::<u64>(bounds_at);
    let tile = gpu::block_idx();
    let last = tile == tiles - 1;
    let a = tile as u64 * tile_len;
    // The tile's boundaries: klo..khi, the first at or after a and
    // a + tile_len. Given `bounds` ([`segmented_bounds`] ran before),
    // every thread reads them, in flight with its loads. Else (fixed
    // lengths, or small inputs) two warps search them: the first round of
    // each search goes out before the warp's loads; the rest waits until
    // they are staged (holding the loaded items through a search took 56
    // registers instead of 40, ptxas sm_90).
    let searched = bounds.is_null();
    let warps = B / WARP_SIZE;
    let (q, tiles_u) = (tile as u64, tiles as u64);
    // SAFETY: tile edges q <= tiles.
    let lo_probe = if searched && w == 0 { unsafe { b.edge_probe(q, tiles_u, tile_len) } } else { None };
    let hi_probe = if searched && w == warps - 1 { unsafe { b.edge_probe(q + 1, tiles_u, tile_len) } } else { None };
    // SAFETY: tile + 1 <= tiles: inside the caller's `tiles + 1` bounds.
    let given = if searched {
        (0, 0)
    } else {
        // Clamped: offsets that are not sorted can leave an edge unwritten
        // (its zero) or written twice ([`segmented_bounds`]).
        let (lo, hi) =
            unsafe { (global::load(bounds.add(tile as usize)), global::load(bounds.add(tile as usize + 1))) };
        (Ord::min(lo, segments + 1), Ord::min(hi, segments + 1))
    };
    // Given the bounds, L2 is asked for the offsets of the window's pass
    // below (a thread a 128-byte line) before the tile's loads go out: the
    // pass's loads wait for the tile's shared stores, and each of its
    // rounds was a trip to memory.
    if !searched && !b.fixed() {
        let k = given.0 + PASS_LINE * tid as u64;
        if k <= Ord::min(given.1, segments) {
            // SAFETY: k <= segments: inside the offsets.
            unsafe { gpu::prefetch_l2(b.offsets.add(k as usize) as *const u8) };
        }
    }
    // SAFETY (from here on): shared accesses inside the carved parts,
    // boundary indices <= segments + 1, record slots of this tile.
    unsafe { stage::<T, B, ITEMS>(input, n, a, tile_s, true) };
    let (klo, khi) = if searched {
        if w == 0 {
            let lo = unsafe { b.edge(q, tiles_u, tile_len, lo_probe) };
            if lane == 0 {
                unsafe { kbounds.store(0, lo) };
            }
        }
        if w == warps - 1 {
            let hi = unsafe { b.edge(q + 1, tiles_u, tile_len, hi_probe) };
            if lane == 0 {
                unsafe { kbounds.store(1, hi) };
            }
        }
        gpu::sync_threads();
        unsafe { (kbounds.load(0), kbounds.load(1)) }
    } else {
        given
    };
    // Warp 0's `lead`: boundary klo - 1, its load in flight with the
    // window's (that segment's part before the tile is what the tile's
    // first output lacks: [`super::short`]).
    let lead = if policy::lead_max::<T>() > 0 && w == 0 && tile != 0 && klo >= 1 && klo < khi {
        // SAFETY: 1 <= klo <= segments + 1: boundary klo - 1 <= segments.
        unsafe { b.at(klo - 1) }
    } else {
        NONE
    };
    // The tile's boundaries klo..khi, as tile positions, go to a shared
    // window in one coalesced pass (which also checks the offsets' order),
    // so each thread finds its own in shared memory rather than by a
    // chain of dependent global reads. A tile with more boundaries than
    // the window holds (segments of 1 or 2 elements on average, or many
    // empty ones) searches the offsets directly.
    let windowed = klo <= khi && khi - klo <= window_cap;
    let fill_end = if windowed { khi } else { klo };
    let check_end = if b.fixed() { klo } else { Ord::min(Ord::max(khi, klo), segments) };
    let mut bad = !b.fixed() && klo > khi;
    // Fixed lengths and offsets each get a loop of their own: with the
    // test inside, every boundary of offsets also issued the fixed
    // length's saturating 64-bit product (about 30 instructions a
    // boundary, ptxas sm_90).
    let mut k = klo + tid as u64;
    let store = |k: u64, at: u64| {
        // Sorted offsets put it below the tile's end; others may land
        // anywhere (clamped: the results are unspecified then).
        let rel = Ord::min(at.wrapping_sub(a), tile_len) as u16;
        unsafe { window.store((k - klo) as usize, rel) };
    };
    if b.fixed() {
        // Nothing to check: only the window.
        while k < fill_end {
            store(k, unsafe { b.at(k) });
            k += B as u64;
        }
    } else {
        while k < Ord::max(fill_end, check_end) {
            // k < khi <= segments + 1 (fill) or k < segments (check).
            let at = unsafe { global::load(b.offsets.add(k as usize)) };
            if k < fill_end {
                store(k, at);
            }
            if k < check_end {
                bad |= at > unsafe { global::load(b.offsets.add(k as usize + 1)) };
            }
            k += B as u64;
        }
    }
    if !b.fixed() {
        if last && tid == 0 {
            bad |= unsafe { b.at(segments) } > n;
        }
        if bad {
            unsafe { atomic::add(errors, 1u32) };
        }
    }
    // Only a written window needs a barrier (the condition is the same in
    // every thread): a tile inside one long segment skips it; the staged
    // tile needs one where no search had it.
    if fill_end > klo || !searched {
        gpu::sync_threads();
    }
    Prologue { tile, a, klo, khi, windowed, lead }
}

/// [`quiet_record`] as a function of its own, for the 16-byte
/// accumulators (argmin, argmax): inlined, it took their kernels from 48
/// registers to 56 (ptxas sm_90), and at 56 `i32` argmin at 2^28 on an
/// H200 ran 695 / 613 / 279 us at segments of 16 / 512 / 2^20 against
/// 734 / 633 / 304. The sums keep it inline: called, their segments of 16
/// and 512 ran 2-3% slower.
///
/// # Safety
/// As [`quiet_record`].
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn quiet_record_apart<R: SegmentedReduction, const B: u32>(
    tail: R::Part,
    vslots: Shared<R::Part>,
    tails: *mut R::Acc,
    firsts: *mut u64,
    heads: *mut R::Acc,
    tile: u32,
    a: u64,
) {
    // SAFETY: forwarded.
    unsafe { quiet_record::<R, B>(tail, vslots, tails, firsts, heads, tile, a) }
}

/// The record of a tile with no boundary: the ordered block reduction of
/// its threads' parts as its tail, no first boundary, an identity head.
///
/// # Safety
/// All threads of the block call it; `tails`, `firsts` and `heads` are
/// the launch's records ([`Records`]), `tile` one of its tiles.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn quiet_record<R: SegmentedReduction, const B: u32>(
    tail: R::Part,
    vslots: Shared<R::Part>,
    tails: *mut R::Acc,
    firsts: *mut u64,
    heads: *mut R::Acc,
    tile: u32,
    a: u64,
) {
    let total = block_reduce::reduce_in_order::<R::Part, Parts<R>, B>(tail, vslots);
    if gpu::thread_idx() == 0 {
        // SAFETY: this tile's record slots (caller).
        unsafe {
            global::store(tails.add(tile as usize), R::part_acc(total, a));
            global::store(firsts.add(tile as usize), NONE);
            global::store(heads.add(tile as usize), R::identity());
        }
    }
}

/// Where each tile of [`segmented_reduce`] starts among the boundaries,
/// for offsets: `bounds[t]` is the first boundary `k` with `offsets[k] >=
/// t * tile_len` for `0 < t < tiles`, `bounds[0] = 0` and `bounds[tiles] =
/// segments + 1`, so tile `t` holds boundaries `bounds[t] ..
/// bounds[t + 1]`.
///
/// A stream over the offsets, not a search per edge: boundary `k` (one
/// thread each, `0..=segments + 1`, grid-stride) *owns* the tile edges it
/// is the answer for, those with `at(k - 1) < q * tile_len <= at(k)`
/// (`at(-1)` below everything, `at(segments + 1)` above), and writes
/// `bounds[q] = k` for each. Every offset is read once, coalesced, the
/// one before it from the lane before (a shuffle); a boundary owns no
/// edge unless a tile edge falls in its segment, so most threads write
/// nothing. A boundary that owns more than `BOUNDS_SHORT` (4) edges (a
/// segment longer than that many tiles) hands them to its whole warp,
/// which writes 32 a round.
///
/// ```text
/// offsets   0      5000     9000        30000    (tile_len 8192)
/// edges            8192 -> k=2   16384, 24576 -> k=3
/// ```
///
/// At 2^28 `i32` with mixed lengths (32,769 edges over 70 k offsets) it
/// takes 4.3 µs on an H100 and 3.6 on an H200, where a search per edge
/// ([`segmented_bounds_search`]: a warp each, a guess, then 32-way rounds
/// of dependent loads, four waves of warps) took 14.8 on the H100. The
/// host runs it around one segment a tile ([`policy::bounds_by_stream`]).
///
/// **Checks the offsets**: a pair `offsets[k - 1] > offsets[k]`, or
/// `offsets[segments] > n`, increments the `u32` at byte 4 of `temp`.
/// With offsets not sorted some edges get no owner and keep the zero the
/// storage held (or get two), so [`segmented_reduce`] clamps what it
/// reads; its results are then unspecified, but every access stays in
/// bounds.
///
/// # Safety
/// `offsets` holds `segments + 1` elements, `bounds` `tiles + 1` (zeroed),
/// `temp` 16 bytes; `tile_len > 0`, `tiles > 0`.
pub unsafe fn segmented_bounds<const B: u32>(
    offsets: *const u64,
    segments: u64,
    n: u64,
    tile_len: u64,
    tiles: u64,
    bounds: *mut u64,
    temp: *mut u64,
) {
    let b = Bounds { offsets, segments, seg_len: 0, n };
    let errors = policy::error_count(temp);
    let (lane, w) = (gpu::lane(), WARP_SIZE as u64);
    let warps = (B / WARP_SIZE) as u64;
    let mut first = (gpu::block_idx() as u64 * warps + gpu::warp_idx() as u64) * w;
    let stride = gpu::grid_dim() as u64 * warps * w;
    let owners = segments + 2;
    if gpu::block_idx() == 0 && gpu::thread_idx() == 0 {
        // SAFETY: tiles + 1 slots.
        unsafe {
            global::store(bounds, 0);
            global::store(bounds.add(tiles as usize), segments + 1);
        }
    }
    let mut bad = false;
    // Warp-uniform: `first` is the same in every lane of a warp.
    while first < owners {
        let k = first + lane as u64;
        // SAFETY (offsets): k <= segments, and k - 1 < segments below.
        let cur = if k <= segments { unsafe { b.at(k) } } else { u64::MAX };
        let up = gpu_warp::shfl_up(cur, 1);
        let prev = if lane != 0 {
            up
        } else if k == 0 {
            0
        } else {
            unsafe { b.at(k - 1) }
        };
        bad |= (k >= 1 && k <= segments && prev > cur) | (k == segments && cur > n);
        // Edges q in lo..=hi, 0 < q < tiles.
        let lo = if k == 0 { 1 } else { prev / tile_len + 1 };
        let hi = if cur == u64::MAX { tiles - 1 } else { Ord::min(cur / tile_len, tiles - 1) };
        let count = if k < owners && lo <= hi { hi - lo + 1 } else { 0 };
        let long = count > BOUNDS_SHORT;
        if !long {
            for q in lo..lo + count {
                // SAFETY: 0 < q < tiles.
                unsafe { global::store(bounds.add(q as usize), k) };
            }
        }
        let mut longs = gpu_warp::ballot(long);
        while longs != 0 {
            let src = longs.trailing_zeros();
            longs &= longs - 1;
            let (l, c, owner) =
                (gpu_warp::shfl_idx(lo, src), gpu_warp::shfl_idx(count, src), gpu_warp::shfl_idx(k, src));
            let mut j = lane as u64;
            while j < c {
                // SAFETY: l + j <= hi < tiles of that lane.
                unsafe { global::store(bounds.add((l + j) as usize), owner) };
                j += w;
            }
        }
        first += stride;
    }
    if bad {
        // SAFETY: inside temp's 16 bytes.
        unsafe { atomic::add(errors, 1u32) };
    }
}

/// [`segmented_bounds`] by a search per tile edge rather than a stream
/// over the offsets, where [`policy::bounds_by_stream`] says so: many
/// segments a tile (a stream would read them all, 8 bytes each: at
/// segments of 16, 12% more traffic than the tiles themselves; 2^28 `i32`
/// on an H100, 537 µs in all against 639 streamed) or many tiles a
/// segment (a boundary of the stream would write its edges a warp at a
/// time). One warp per edge (grid-stride), a 32-way search whose
/// first round is a guess from evenly spread segments: the same search
/// the tile kernel runs for itself on small inputs, but here no block
/// waits on it. On offsets that are not sorted every answer is still in
/// `0..=segments + 1` (the tile kernel then reports them).
///
/// # Safety
/// `offsets` holds `segments + 1` elements, `bounds` `tiles + 1`.
pub unsafe fn segmented_bounds_search<const B: u32>(
    offsets: *const u64,
    segments: u64,
    n: u64,
    tile_len: u64,
    tiles: u64,
    bounds: *mut u64,
) {
    let b = Bounds { offsets, segments, seg_len: 0, n };
    let warps = (B / WARP_SIZE) as u64;
    let mut q = gpu::block_idx() as u64 * warps + gpu::warp_idx() as u64;
    let stride = gpu::grid_dim() as u64 * warps;
    // Warp-uniform: every lane of a warp has the same q.
    while q <= tiles {
        // SAFETY: q <= tiles.
        let k = unsafe { b.edge(q, tiles, tile_len, b.edge_probe(q, tiles, tile_len)) };
        if gpu::lane() == 0 {
            // SAFETY: q <= tiles.
            unsafe { global::store(bounds.add(q as usize), k) };
        }
        q += stride;
    }
}

/// Tile edges a boundary of [`segmented_bounds`] writes by itself; more go
/// to its whole warp.
const BOUNDS_SHORT: u64 = 4;

/// The flat kernel's per-tile records in its temporary storage
/// ([`policy::records_layout`]).
pub(super) struct Records<A> {
    pub(super) tails: *mut A,
    pub(super) heads: *mut A,
    pub(super) firsts: *mut u64,
}

impl<A> Records<A> {
    #[inline(always)]
    pub(super) fn new(temp: *mut u64, tiles: u64) -> Self {
        let [tails, heads, firsts, _, _] = policy::records_layout::<A>(tiles);
        let base = temp as *mut u8;
        Records {
            tails: base.wrapping_add(tails) as *mut A,
            heads: base.wrapping_add(heads) as *mut A,
            firsts: base.wrapping_add(firsts) as *mut u64,
        }
    }
}

/// Elements `s..s + len` of `p` (`len <= k <= MAX`) into the first `len`
/// slots, the rest `fill`. A whole, 16-byte aligned chunk whose `k`
/// elements fill whole 16-byte words goes in 16-byte loads (through the
/// read-only path: nothing writes `p` during the kernel), anything else
/// one element at a time.
///
/// # Safety
/// `p.add(s..s + len)` is readable and not written during the kernel.
#[inline(always)]
#[track_caller]
unsafe fn load_chunk<T: Copy, const MAX: usize>(p: *const T, s: u64, len: u64, k: usize, fill: T) -> [T; MAX] {
    let mut v = [fill; MAX];
    let size = size_of::<T>();
    // SAFETY: s + len is inside the array (caller); nothing is read when len is 0.
    let at = unsafe { p.add(if len == 0 { 0 } else { s as usize }) };
    let whole = size > 0 && 16 % size == 0 && (k * size).is_multiple_of(16);
    if len == k as u64 && whole && (at as usize).is_multiple_of(16) {
        let per = 16 / size;
        unrolled!(MAX, |q| if q * per < k {
            // SAFETY: the 16 bytes from element q * per lie inside the chunk.
            let w = unsafe { global::load_vec::<u32, 4>(at.add(q * per) as *const u32) };
            let bytes = w.as_ptr() as *const u8;
            unrolled!(MAX, |i| if i < per {
                // SAFETY: element i of the word (per * size == 16).
                v[q * per + i] = unsafe { (bytes.add(i * size) as *const T).read_unaligned() };
            });
        });
    } else {
        unrolled!(MAX, |j| if (j as u64) < len {
            // SAFETY: j < len.
            v[j] = unsafe { global::load(at.add(j)) };
        });
    }
    v
}

/// The second launch of the flat segmented reduction: joins the parts of
/// the segments that span tiles. `tiles` records of [`segmented_reduce`]
/// go in tile order; each block takes a share of them, each warp a run of
/// its block's share, a *chunk* of up to [`policy::spine_items`]
/// consecutive records per lane and round (eight of 4-byte accumulators),
/// read with 16-byte loads:
///
/// ```text
/// round     lane 0 [c .. c+K) lane 1 [c+K .. c+2K) ... lane 31 [.. c+32K)
/// pass A    each lane folds its chunk (boundary?, tails since the last),
///           a warp segmented scan joins the lanes, and the warp folds the
///           rounds' totals: (any boundary in my run?, tails since the last)
/// carry     an exclusive segmented scan of the warps' pairs (a boundary
///           resets): what comes before each warp's run
/// pass B    the rounds again: a lane's carry is the round's carry and the
///           lanes before it; walking its chunk, a tile with a boundary
///           finishes the segment that ends there, out[first-1] = carry .
///           head, and the carry starts over from its tail; a tile without
///           one adds its tail (the whole tile)
/// ```
/// `phase` ([`policy::SPINE_WHOLE`] or [`policy::SPINE_CHAINED`]) says
/// how the launch is split; with [`policy::SPINE_IF_NEEDED`] added, the
/// launch does nothing unless a tile raised the header's flag (the short
/// kernel's tiles write their first segment themselves where it began
/// at most [`policy::lead_max`] elements before them). Up to [`policy::spine_share`] records (2^26
/// 4-byte elements) one block does all three (`SPINE_WHOLE`). Beyond, the
/// records go to `G` = [`policy::spine_blocks`] blocks of about
/// `tiles / G` records each, one round per pass, in one launch
/// (`SPINE_CHAINED`): each block takes a ticket (its share, so that the
/// blocks it waits for started before it), runs pass A, writes each
/// warp's pair after the records ([`policy::SpinePair`]) and raises its
/// flag; then, once the blocks before it have raised theirs, scans the
/// pairs of the warps up to its own across the block (`32 (g + 1)` pairs
/// for block `g`) and runs pass B. The records' work is a chain of
/// dependent steps per warp, so spreading it over multiprocessors is
/// what shortens it. H200 (ncu, bench clocks), 2^28 len512 `i32`: 50.4
/// us in one block of four rounds per pass, 5 + 13 us in two launches of
/// five blocks (pass A, then the rest) before they became one.
///
/// A warp scan per round of 32 x 8 records, and a serial fold of one
/// select and one combine per record. Small inputs give each lane fewer
/// records (two per lane up to 2048 tiles), so a few tiles still spread
/// over lanes and warps.
///
/// # Safety
/// `temp` holds the records of `tiles` tiles written by
/// [`segmented_reduce`] with the same other arguments, in a launch before
/// this one, followed by room for the pairs of the grid's blocks
/// ([`policy::spine_pairs_bytes`]); blocks of `B` threads; shared memory
/// [`policy::spine_smem_bytes`]`::<Acc>()`; `SPINE_WHOLE` in one block,
/// `SPINE_CHAINED` in more, the pairs' room zeroed; `route` as for
/// [`segmented_reduce`] (nothing to do when the segments went to the
/// ranges kernel).
#[allow(clippy::too_many_arguments)]
pub unsafe fn segmented_spine<R: SegmentedReduction, const B: u32>(
    temp: *mut u64,
    tiles: u64,
    offsets: *const u64,
    segments: u64,
    seg_len: u64,
    n: u64,
    out: *mut R::Out,
    phase: u32,
    route: *const u32,
) {
    // SAFETY: the caller's contract on `route`.
    if unsafe { super::routed_to_ranges(route, segments) } == Some(true) {
        return;
    }
    if phase & policy::SPINE_IF_NEEDED != 0 {
        // SAFETY: the header's flag (the caller's temp), written by the
        // launch before if at all.
        let needed = unsafe { global::load(policy::spine_needed(temp) as *const u32) };
        if needed == 0 {
            return;
        }
    }
    // As many slots as the largest chunk (the chunk is below).
    const MAX: usize = 8;
    let k = policy::spine_items::<R::Acc>();
    const { assert!(policy::spine_items::<R::Acc>() <= MAX) };
    let (lane, w) = (gpu::lane(), gpu::warp_idx());
    let warps = (B / WARP_SIZE) as u64;
    let records = Records::<R::Acc>::new(temp, tiles);
    let chained = phase & !policy::SPINE_IF_NEEDED == policy::SPINE_CHAINED;
    let after = (temp as *mut u8).wrapping_add(policy::records_layout::<R::Acc>(tiles)[4]);
    let [_, flags_at_g, ticket_at, _] = policy::spine_pairs_layout::<R::Acc>(gpu::grid_dim() as u64);
    let pairs = after as *mut policy::SpinePair<R::Acc>;
    let (done, ticket) = (after.wrapping_add(flags_at_g) as *mut u32, after.wrapping_add(ticket_at) as *mut u32);
    let b = Bounds { offsets, segments, seg_len, n };
    let base = Shared::<u8>::dynamic();
    let [values_at, carries_at, flags_at] = policy::spine_smem_layout::<R::Acc>();
    let vslots = base.after::<R::Acc>(values_at);
    let cslots = base.after::<R::Acc>(carries_at);
    let fslots = base.after::<u32>(flags_at);
    // The block's share, in whole chunks (so their 16-byte alignment
    // holds), and the warp's run of it.
    let blocks = gpu::grid_dim() as u64;
    let g = if chained {
        // The block's ticket, in the order blocks start: block g waits
        // only for blocks that took 0..g, which started before it.
        if gpu::thread_idx() == 0 {
            // SAFETY: the ticket counter after the pairs (the caller's
            // zeroed room); flag slot 0 of shared memory.
            unsafe { fslots.store(0, atomic::add(ticket, 1u32)) };
        }
        gpu::sync_threads();
        // SAFETY: written before the barrier; read before the block scan
        // below writes the slots again (behind its own barrier).
        let t = unsafe { fslots.load(0) } as u64;
        gpu::sync_threads();
        t
    } else {
        gpu::block_idx() as u64
    };
    let share = tiles.div_ceil(blocks).next_multiple_of(k as u64);
    let lo = Ord::min(g * share, tiles);
    let hi = Ord::min(lo + share, tiles);
    // Each lane's share of a round: `k` records once the run has more
    // than 16 x k, fewer below that, but two at least (so that a few
    // tiles still walk a chunk). Whole chunks go in 16-byte loads: runs
    // are then multiples of `k`.
    let per0 = (hi - lo).div_ceil(warps);
    let u = Ord::min(k as u64, Ord::max(2, per0.div_ceil(WARP_SIZE as u64)));
    let u = if 2 * u > k as u64 { k as u64 } else { u };
    let per = if u == k as u64 { per0.next_multiple_of(u) } else { per0 };
    let c0 = lo + Ord::min(w as u64 * per, hi - lo);
    let c1 = Ord::min(c0 + per, hi);
    let span = WARP_SIZE as u64 * u;
    let rounds = (c1 - c0).div_ceil(span);
    // The lane's chunk of round `r`: its start and length.
    let chunk = |r: u64| {
        let s = c0 + r * span + lane as u64 * u;
        (s, Ord::min(c1.saturating_sub(s), u))
    };
    // `carry . (f, x)`: what follows a boundary starts over.
    let join = |carry: R::Acc, f: bool, x: R::Acc| if f { x } else { R::combine(carry, x) };
    // SAFETY (records): every chunk lies below c1 <= tiles; every tile
    // writes all three, in the launch before.
    let load = |(s, len): (u64, u64), with_heads: bool| unsafe {
        let firsts = load_chunk::<u64, MAX>(records.firsts, s, len, k, NONE);
        let tails = load_chunk::<R::Acc, MAX>(records.tails, s, len, k, R::identity());
        let heads = if with_heads {
            load_chunk::<R::Acc, MAX>(records.heads, s, len, k, R::identity())
        } else {
            [R::identity(); MAX]
        };
        (firsts, tails, heads)
    };
    // A round's lanes: each folds its chunk to (any boundary, tails since
    // the last), a warp segmented scan joins them. Returns the lane's
    // inclusive pair and the round's total (lane 31's). Round counts are
    // the same in every lane, so the shuffles see the whole warp.
    let round = |firsts: &[u64; MAX], tails: &[R::Acc; MAX]| {
        let (mut f, mut x) = (false, R::identity());
        unrolled!(MAX, |j| if j < k {
            x = join(x, firsts[j] != NONE, tails[j]);
            f |= firsts[j] != NONE;
        });
        let (f, x) = warp_seg_scan::<R::Acc, Accumulators<R>>(f as u32, x);
        let total = (gpu_warp::shfl_idx(f, WARP_SIZE - 1) != 0, gpu_warp::shfl_idx(x, WARP_SIZE - 1));
        ((f, x), total)
    };
    // Pass A: the warp's (any boundary, combine of the tails since the
    // last one), round by round.
    let (mut af, mut ax) = (false, R::identity());
    for r in 0..rounds {
        let (firsts, tails, _) = load(chunk(r), false);
        let (_, (tf, tx)) = round(&firsts, &tails);
        ax = join(ax, tf, tx);
        af |= tf;
    }
    let mut carry = if chained {
        if lane == 0 {
            // SAFETY: one pair per warp of the grid, after the records
            // (the caller's room).
            unsafe {
                global::store(
                    pairs.add((g * warps + w as u64) as usize),
                    policy::SpinePair { value: ax, reset: af as u32 },
                )
            };
        }
        gpu::sync_threads();
        let tid = gpu::thread_idx() as u64;
        // SAFETY (flags): one per block, after the pairs.
        if tid == 0 {
            atomic::fence_device();
            unsafe { atomic::store_release_u32(done.add(g as usize), 1) };
        }
        // The blocks before this one (tickets 0..g, all started): one
        // thread waits for each flag.
        let mut t = tid;
        while t < g {
            while unsafe { atomic::load_acquire_u32(done.add(t as usize)) } == 0 {}
            t += B as u64;
        }
        gpu::sync_threads();
        // SAFETY: the pairs of blocks 0..=g are written (flags above).
        unsafe { carry_in::<R, B>(pairs, g, vslots, fslots, cslots) }
    } else {
        // Lane 0 carries its warp's pair, so lane 0's exclusive pair is
        // what the warps before this one leave.
        let (ef, ex) = if lane == 0 { (af, ax) } else { (false, R::identity()) };
        let (_, before, _, _) = block_seg_scan::<R::Acc, Accumulators<R>, B>(ef, ex, vslots, fslots);
        gpu_warp::shfl_idx(before, 0)
    };
    // Pass B: finish each tile's first segment, carry on.
    for r in 0..rounds {
        let (firsts, tails, heads) = load(chunk(r), true);
        let ((f, x), (tf, tx)) = round(&firsts, &tails);
        let (uf, ux) = (gpu_warp::shfl_up(f, 1), gpu_warp::shfl_up(x, 1));
        let mut mine = if lane == 0 { carry } else { join(carry, uf != 0, ux) };
        unrolled!(MAX, |j| if j < k {
            let first = firsts[j];
            // WRITTEN and NONE lie far above any segment count.
            if (1..=segments).contains(&first) {
                let s = first - 1;
                // SAFETY: s < segments.
                let start = if R::NEEDS_START { unsafe { b.at(s) } } else { 0 };
                unsafe { global::store(out.add(s as usize), R::out(R::combine(mine, heads[j]), start, false)) };
            }
            mine = join(mine, first != NONE, tails[j]);
        });
        carry = join(carry, tf, tx);
    }
}

/// The spine's carry into warp `w` of block `g` when chained: the
/// combine, since the last boundary, of the pairs of the warps before it
/// (those of blocks `0..g`, then its own block's warps before `w`), as a
/// segmented scan across the block of the `32 (g + 1)` pairs through its
/// own warps, `ceil(32 (g + 1) / B)` consecutive pairs a thread. Every
/// thread returns its warp's carry. One barrier besides the scan's.
///
/// # Safety
/// `pairs` holds the pairs of every warp of blocks `0..=g`, written before
/// a flag this block acquired (or its own barrier); all threads of the
/// block call it.
#[inline(always)]
#[track_caller]
unsafe fn carry_in<R: SegmentedReduction, const B: u32>(
    pairs: *const policy::SpinePair<R::Acc>,
    g: u64,
    vslots: Shared<R::Acc>,
    fslots: Shared<u32>,
    cslots: Shared<R::Acc>,
) -> R::Acc {
    let (tid, w) = (gpu::thread_idx() as u64, gpu::warp_idx());
    let warps = (B / WARP_SIZE) as u64;
    let (mine_at, count) = (g * warps, (g + 1) * warps);
    let m = count.div_ceil(B as u64);
    let (p0, p1) = (Ord::min(tid * m, count), Ord::min(tid * m + m, count));
    // SAFETY: p < count, pairs the caller vouches for. Volatile: other
    // blocks wrote them during this launch.
    let read = |p: u64| unsafe { global::load_volatile(pairs.add(p as usize)) };
    let join = |carry: R::Acc, f: bool, x: R::Acc| if f { x } else { R::combine(carry, x) };
    let (mut f, mut x) = (false, R::identity());
    for p in p0..p1 {
        let pair = read(p);
        x = join(x, pair.reset != 0, pair.value);
        f |= pair.reset != 0;
    }
    let (_, mut v, _, _) = block_seg_scan::<R::Acc, Accumulators<R>, B>(f, x, vslots, fslots);
    for p in p0..p1 {
        if p >= mine_at {
            // SAFETY: p - mine_at < warps <= 32 slots.
            unsafe { cslots.store((p - mine_at) as usize, v) };
        }
        let pair = read(p);
        v = join(v, pair.reset != 0, pair.value);
    }
    gpu::sync_threads();
    // SAFETY: written before the barrier above.
    unsafe { cslots.load(w as usize) }
}

/// The first of the window's `cnt` (at least one) sorted tile positions
/// at or after `local0` (`cnt` for none), in a tile of `tile_len`: looked
/// for where evenly spread boundaries would put it, then in steps that
/// double away from that guess, then by a binary search of the last step.
/// Two shared loads at even lengths, where a binary search of the window
/// took nine dependent ones at segments of 16 (512 boundaries a tile).
/// Offsets out of order give some index up to `cnt` (never a read outside
/// the window).
///
/// # Safety
/// `window` holds `cnt >= 1` positions, written before a barrier;
/// `local0 < tile_len`.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn window_first(window: Shared<u16>, cnt: u32, local0: u32, tile_len: u32) -> u32 {
    // SAFETY (window reads): every index below cnt.
    let at = |i: u32| unsafe { window.load(i as usize) } as u32;
    let guess = Ord::min((cnt as u64 * local0 as u64 / tile_len as u64) as u32, cnt - 1);
    // The answer lies in lo..=hi (hi = cnt: none at or after local0).
    let (mut lo, mut hi) = if at(guess) < local0 {
        let (mut lo, mut step) = (guess + 1, 1u32);
        while lo + step - 1 < cnt && at(lo + step - 1) < local0 {
            lo += step;
            step *= 2;
        }
        (lo, Ord::min(lo + step - 1, cnt))
    } else {
        let (mut hi, mut step) = (guess, 1u32);
        while hi >= step && at(hi - step) >= local0 {
            hi -= step;
            step *= 2;
        }
        (if hi >= step { hi - step + 1 } else { 0 }, hi)
    };
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if at(mid) < local0 {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// [`boundary_bits`] from the shared window of the tile's `cnt`
/// boundaries (tile positions, from boundary `klo` on) for the thread
/// whose positions start at tile position `local0`: its first boundary
/// (a binary search of the window) and its bits.
///
/// # Safety
/// `window` holds `cnt` positions, written before a barrier.
#[inline(always)]
#[track_caller]
unsafe fn window_bits<const ITEMS: usize>(window: Shared<u16>, cnt: u32, local0: u32, klo: u64) -> (u64, Option<u32>) {
    const { assert!(ITEMS <= 32, "boundary bits are a u32") };
    let (mut lo, mut hi) = (0u32, cnt);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        // SAFETY (window reads): below cnt.
        if (unsafe { window.load(mid as usize) } as u32) < local0 {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let end = local0 + ITEMS as u32;
    let mut mask = 0u32;
    let mut i = lo;
    while i < cnt {
        let at = unsafe { window.load(i as usize) } as u32;
        if at >= end {
            break;
        }
        if at < local0 {
            return (klo + lo as u64, None);
        }
        let bit = 1u32 << (at - local0);
        if mask & bit != 0 {
            return (klo + lo as u64, None);
        }
        mask |= bit;
        i += 1;
    }
    (klo + lo as u64, Some(mask))
}

/// The boundaries `k0, k0 + 1, ...` that fall in this thread's positions
/// `p0..p0 + ITEMS`, as bit `at(k) - p0` each; `None` when two fall on
/// one position (an empty segment) or one lies before `p0` (offsets not
/// sorted), which [`walk`] handles.
///
/// # Safety
/// `k0 <= segments + 1`.
#[inline(always)]
#[track_caller]
unsafe fn boundary_bits<const ITEMS: usize>(b: &Bounds, k0: u64, p0: u64) -> Option<u32> {
    const { assert!(ITEMS <= 32, "boundary bits are a u32") };
    let end = p0 + ITEMS as u64;
    let mut mask = 0u32;
    let mut k = k0;
    while k <= b.segments {
        // SAFETY: k <= segments.
        let at = unsafe { b.at(k) };
        if at >= end {
            break;
        }
        if at < p0 {
            return None;
        }
        let bit = 1u32 << (at - p0);
        if mask & bit != 0 {
            return None;
        }
        mask |= bit;
        k += 1;
    }
    Some(mask)
}
