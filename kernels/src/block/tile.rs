//! Tiles of `B x ITEMS` elements: the unit of work of the three-phase and
//! single-pass scans.
//!
//! A block loads its tile *striped* (element `k*B + t` to thread `t`:
//! every load instruction of a warp reads 32 consecutive elements, fully
//! coalesced) into shared memory, then each thread takes `ITEMS`
//! *consecutive* elements (a blocked arrangement) and scans them
//! sequentially in registers. Only the `B` thread totals go through the
//! block-wide scan ([`exclusive_scan`](crate::block::scan::exclusive_scan)),
//! so the tree part costs `O(B log B)` for `B*ITEMS` elements. Results go
//! back through shared memory and out striped again.
//!
//! ```text
//! global  |t0 t1 .. tB-1|t0 t1 .. tB-1| ...   (striped, coalesced)
//!               | shared memory (padded)
//! thread t:  x[t*ITEMS .. t*ITEMS+ITEMS)      (blocked, sequential scan)
//! ```
//! Shared memory is padded with one slot every [`pad_every`] elements so
//! that both the striped and the blocked accesses hit distinct banks.
//! Kernels may keep a thread's items in registers ([`load_tile`],
//! [`store_tile`]) or, for larger tiles and fewer registers, leave them in
//! shared memory ([`stage_tile`], [`reduce_staged`], [`scan_staged`],
//! [`unstage_tile`]).

use crate::gpu::{self, Shared, global};
use crate::ops::Item;
use crate::ops::Monoid;
use core::mem::size_of;

/// One pad slot after every this many elements. 4-byte elements: every
/// 32, so a warp's striped access (32 consecutive elements) stays in one
/// padded run, and its blocked access (lane `t` at `ITEMS*t + j`, `ITEMS` a
/// multiple of 16) spreads over all 32 banks. Wider elements: every
/// `ITEMS`, giving each thread's run an odd stride of `ITEMS + 1`
/// elements.
pub const fn pad_every<T>(items: usize) -> usize {
    if size_of::<T>() <= 4 { 32 } else { items }
}

#[inline(always)]
fn pad<T, const ITEMS: usize>(i: usize) -> usize {
    i + i / pad_every::<T>(ITEMS)
}

/// The mask of a thread's first `k` items (bit `j` for item `j`; `k <=
/// 32`): the items below the input's end, where per-item flags are bits.
#[inline(always)]
pub fn first_items(k: u32) -> u32 {
    if k >= 32 { u32::MAX } else { (1u32 << k) - 1 }
}

/// The mask of a thread's items from its last flagged one on (bit `j`
/// for item `j`): the item at `flags`' highest set bit and every later
/// one; all of them where no item is flagged.
#[inline(always)]
pub fn from_last(flags: u32) -> u32 {
    let last = if flags == 0 { 0 } else { u32::BITS - 1 - flags.leading_zeros() };
    !first_items(last)
}

/// Shared-memory elements of a tile of `b x items`, with padding.
pub const fn tile_slots<T>(b: u32, items: usize) -> usize {
    let t = b as usize * items;
    t + t / pad_every::<T>(items)
}

/// Ask L2 for the tile starting at `start` (its part below `n`), one
/// 128-byte line per thread and round: for a tile the block is about to
/// load once it knows which (the single-pass kernels' ticket), so that its
/// loads find the lines there.
///
/// # Safety
/// `input` holds `n` elements; `start` is below `n`.
#[inline(always)]
pub unsafe fn prefetch_tile<T, const B: u32, const ITEMS: usize>(input: *const T, n: u64, start: u64) {
    let len = Ord::min(n - start, B as u64 * ITEMS as u64) as usize;
    let bytes = len * size_of::<T>();
    // SAFETY: every line's first byte lies inside the tile's part below n.
    let base = unsafe { input.add(start as usize) } as *const u8;
    let mut at = gpu::thread_idx() as usize * 128;
    while at < bytes {
        unsafe { gpu::prefetch_l2(base.add(at)) };
        at += B as usize * 128;
    }
}

/// Copy the tile starting at `start` from global memory to shared memory,
/// striped (coalesced), padding the part beyond `n` with the identity.
/// Ends with a barrier, after which any thread may read any element.
///
/// # Safety
/// `input` holds `n` elements; `s` has [`tile_slots`] elements; every thread
/// of the block calls it with the same arguments.
#[inline(always)]
#[track_caller]
pub unsafe fn stage_tile<T: Item, Op: Monoid<T>, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    start: u64,
    s: Shared<T>,
) {
    // SAFETY: the caller's contract.
    unsafe { stage_tile_unsynced::<T, Op, B, ITEMS>(input, n, start, s) };
    gpu::sync_threads();
}

/// [`stage_tile`] without its closing barrier; returns the combine of the
/// elements this thread loaded, in the order it loaded them (striped, so
/// not a contiguous run: meaningful for a commutative operator only, and
/// left for the compiler to drop where unused).
///
/// # Safety
/// As [`stage_tile`]; the caller puts a barrier before anyone reads the
/// staged tile.
#[inline(always)]
#[track_caller]
pub unsafe fn stage_tile_unsynced<T: Item, Op: Monoid<T>, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    start: u64,
    s: Shared<T>,
) -> T {
    // SAFETY: forwarded.
    unsafe { stage_tile_inner::<T, Op, B, ITEMS>(input, n, start, s) }.0
}

/// Elements of `T` in one load of a whole tile of `items` a thread (an
/// input aligned for it): 16 bytes where `items` is a multiple of 4 (4-byte
/// types) or 2 (8-byte types), 8 bytes for 4-byte types where it is a
/// multiple of 2, else 1. A thread's loaded chunk `k` holds tile elements
/// `(k * B + tid) * width ..` ([`stage_tile_loaded`]).
pub const fn vec_width<T>(items: usize) -> usize {
    match size_of::<T>() {
        4 if items.is_multiple_of(4) => 4,
        4 | 8 if items.is_multiple_of(2) => 2,
        _ => 1,
    }
}

/// [`stage_tile_unsynced`] that hands back, for a whole tile (`start +
/// B * ITEMS <= n`) loaded in vectors (an input aligned for them), what
/// this thread loaded: its `ITEMS` elements in the order it loaded them
/// (chunk `k` of [`vec_width`] elements, tile elements `(k * B + tid) *
/// width ..`, at `k * width ..`; not the tile's order). A commutative summary of the
/// tile, such as how many items a predicate takes, can then be had from
/// registers before the staging barrier. `None` for a partial tile or
/// one loaded element by element: those loops stay rolled, and an array
/// they filled would be a stack frame. The same in every thread.
///
/// # Safety
/// As [`stage_tile_unsynced`].
#[inline(always)]
#[track_caller]
pub unsafe fn stage_tile_loaded<T: Item, Op: Monoid<T>, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    start: u64,
    s: Shared<T>,
) -> Option<[T; ITEMS]> {
    // SAFETY: forwarded.
    unsafe { stage_tile_inner::<T, Op, B, ITEMS>(input, n, start, s) }.1
}

/// The staging of [`stage_tile_unsynced`] and [`stage_tile_loaded`]: the
/// combine of the loaded elements and, for a whole tile loaded in
/// vectors, the elements (each caller's unused part dropped by the
/// compiler).
///
/// # Safety
/// As [`stage_tile_unsynced`].
#[inline(always)]
#[track_caller]
unsafe fn stage_tile_inner<T: Item, Op: Monoid<T>, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    start: u64,
    s: Shared<T>,
) -> (T, Option<[T; ITEMS]>) {
    let tid = gpu::thread_idx() as usize;
    let len = B as usize * ITEMS;
    // SAFETY (all accesses): global indices below n (checked unless the
    // whole tile is in range), shared indices below tile_slots.
    if start + len as u64 <= n {
        let base = unsafe { input.add(start as usize) };
        // 16-byte loads when the input is aligned for them (a tile spans a
        // multiple of 16 bytes, so every tile then is).
        let aligned = (base as usize).is_multiple_of(16);
        // (Element by element, the items are not handed back: that loop
        // stays rolled, and an array it filled would be a stack frame.)
        let vec = |(acc, items)| (acc, Some(items));
        match vec_width::<T>(ITEMS) {
            4 if aligned => vec(unsafe { stage_full_vec::<T, Op, B, ITEMS, 4>(base, s) }),
            2 if aligned => vec(unsafe { stage_full_vec::<T, Op, B, ITEMS, 2>(base, s) }),
            _ => (unsafe { stage_full_vec::<T, Op, B, ITEMS, 1>(base, s) }.0, None),
        }
    } else {
        let mut acc = Op::identity();
        for k in 0..ITEMS {
            let i = k * B as usize + tid;
            let g = start + i as u64;
            let v = if g < n { unsafe { global::load(input.add(g as usize)) } } else { Op::identity() };
            unsafe { s.store(pad::<T, ITEMS>(i), v) };
            acc = Op::combine(acc, v);
        }
        (acc, None)
    }
}

/// Write the staged tile back to global memory, striped (coalesced),
/// skipping the part beyond `n`. Starts with a barrier: every thread's
/// blocked results must be in shared memory first.
///
/// # Safety
/// As [`stage_tile`], for `output`.
#[inline(always)]
#[track_caller]
pub unsafe fn unstage_tile<T: Item, const B: u32, const ITEMS: usize>(
    output: *mut T,
    n: u64,
    start: u64,
    s: Shared<T>,
) {
    let tid = gpu::thread_idx() as usize;
    let len = B as usize * ITEMS;
    gpu::sync_threads();
    // SAFETY (all accesses): as in `stage_tile`.
    if start + len as u64 <= n {
        let base = unsafe { output.add(start as usize) };
        let aligned = (base as usize).is_multiple_of(16);
        match size_of::<T>() {
            4 if aligned && ITEMS.is_multiple_of(4) => unsafe { unstage_full_vec::<T, B, ITEMS, 4>(base, s) },
            4 if aligned && ITEMS.is_multiple_of(2) => unsafe { unstage_full_vec::<T, B, ITEMS, 2>(base, s) },
            8 if aligned && ITEMS.is_multiple_of(2) => unsafe { unstage_full_vec::<T, B, ITEMS, 2>(base, s) },
            _ => unsafe { unstage_full_vec::<T, B, ITEMS, 1>(base, s) },
        }
    } else {
        for k in 0..ITEMS {
            let i = k * B as usize + tid;
            let g = start + i as u64;
            if g < n {
                unsafe { global::store(output.add(g as usize), s.load(pad::<T, ITEMS>(i))) };
            }
        }
    }
}

/// A whole tile from global to shared memory in chunks of `V` consecutive
/// elements (16 bytes when `V * size_of::<T>() == 16`): chunk `k*B + t` to
/// thread `t`, so a warp still reads one contiguous run per instruction,
/// now of 512 bytes. All `ITEMS / V` loads of a thread are issued before
/// its first shared store (the items wait in registers), so a block has
/// its whole tile in flight at once, at the price of occupancy (48
/// registers: 5 blocks of 256 per multiprocessor instead of 6). The
/// chunk's elements go to shared memory one by one; with the padding of
/// [`pad_every`] those stores are free of bank conflicts (lane `L` of a
/// warp writes element `j` of its chunk to word `V*L + j + V*L/32` for
/// 4-byte types: 32 distinct banks). Measurements and rejected variants:
/// `docs/tuning/scan.md`.
///
/// # Safety
/// `base` holds a whole tile, aligned to `V * size_of::<T>()`; `s` as in
/// [`stage_tile`]; `ITEMS` is a multiple of `V`.
#[inline(always)]
#[track_caller]
unsafe fn stage_full_vec<T: Item, Op: Monoid<T>, const B: u32, const ITEMS: usize, const V: usize>(
    base: *const T,
    s: Shared<T>,
) -> (T, [T; ITEMS]) {
    let tid = gpu::thread_idx() as usize;
    let mut items = [Op::identity(); ITEMS];
    let mut acc = Op::identity();
    for k in 0..ITEMS / V {
        let q = k * B as usize + tid;
        // SAFETY: chunk q lies inside the tile (caller).
        let v: [T; V] = unsafe { global::load_vec_coherent::<T, V>(base.add(q * V)) };
        for j in 0..V {
            items[k * V + j] = v[j];
        }
    }
    for k in 0..ITEMS / V {
        let q = k * B as usize + tid;
        for j in 0..V {
            // SAFETY: shared slots below tile_slots.
            unsafe { s.store(pad::<T, ITEMS>(q * V + j), items[k * V + j]) };
            // Combined here, not in the load loop: there it made LLVM stop
            // unrolling this loop, and `items` went to local memory.
            acc = Op::combine(acc, items[k * V + j]);
        }
    }
    (acc, items)
}

/// The reverse of [`stage_full_vec`]: a whole tile from shared to global
/// memory, `V` elements per store.
///
/// # Safety
/// As [`stage_full_vec`], for writing.
#[inline(always)]
#[track_caller]
unsafe fn unstage_full_vec<T: Item, const B: u32, const ITEMS: usize, const V: usize>(base: *mut T, s: Shared<T>) {
    let tid = gpu::thread_idx() as usize;
    let chunks = ITEMS / V;
    let mut k = 0;
    while k < chunks {
        let q = k * B as usize + tid;
        let mut v = [unsafe { s.load(pad::<T, ITEMS>(q * V)) }; V];
        for (j, x) in v.iter_mut().enumerate().skip(1) {
            // SAFETY: as in `stage_full_vec`.
            *x = unsafe { s.load(pad::<T, ITEMS>(q * V + j)) };
        }
        unsafe { global::store_vec::<T, V>(base.add(q * V), v) };
        k += 1;
    }
}

/// This thread's `ITEMS` consecutive elements of the staged tile.
///
/// # Safety
/// After [`stage_tile`] on `s`.
#[inline(always)]
#[track_caller]
pub unsafe fn read_items<T: Item, Op: Monoid<T>, const ITEMS: usize>(s: Shared<T>) -> [T; ITEMS] {
    let mut items = [Op::identity(); ITEMS];
    for (j, item) in items.iter_mut().enumerate() {
        // SAFETY: inside the tile.
        *item = unsafe { s.load(thread_slot::<T, ITEMS>(j)) };
    }
    items
}

/// The padded shared slot of this thread's item `j` (tile element
/// `tid * ITEMS + j`), in 32-bit arithmetic. Where `ITEMS` divides
/// [`pad_every`], a thread's run never straddles a pad, so all its items
/// share one base and differ by constants. (Computed per item with 64-bit
/// indices, each slot cost a division: about 100 of the 357 warp
/// instructions per tile between `reduce_by_key`'s staging barrier and its
/// block scan, ncu at 2^24.)
#[inline(always)]
fn thread_slot<T, const ITEMS: usize>(j: usize) -> usize {
    let every = pad_every::<T>(ITEMS) as u32;
    let first = gpu::thread_idx() * ITEMS as u32;
    if every.is_multiple_of(ITEMS as u32) {
        (first + first / every + j as u32) as usize
    } else {
        let i = first + j as u32;
        (i + i / every) as usize
    }
}

/// Put this thread's `ITEMS` results back in its own slots of the staged
/// tile (no barrier needed: only this thread has touched them since the
/// staging barrier).
///
/// # Safety
/// After [`stage_tile`] on `s`.
#[inline(always)]
#[track_caller]
pub unsafe fn write_items<T: Item, const ITEMS: usize>(s: Shared<T>, items: &[T; ITEMS]) {
    for (j, item) in items.iter().enumerate() {
        // SAFETY: inside the tile.
        unsafe { s.store(thread_slot::<T, ITEMS>(j), *item) };
    }
}

/// [`stage_tile`], then this thread's items in registers.
///
/// # Safety
/// As [`stage_tile`].
#[inline(always)]
#[track_caller]
pub unsafe fn load_tile<T: Item, Op: Monoid<T>, const B: u32, const ITEMS: usize>(
    input: *const T,
    n: u64,
    start: u64,
    s: Shared<T>,
) -> [T; ITEMS] {
    unsafe {
        stage_tile::<T, Op, B, ITEMS>(input, n, start, s);
        read_items::<T, Op, ITEMS>(s)
    }
}

/// [`write_items`], then [`unstage_tile`].
///
/// # Safety
/// As [`stage_tile`], for `output`.
#[inline(always)]
#[track_caller]
pub unsafe fn store_tile<T: Item, const B: u32, const ITEMS: usize>(
    output: *mut T,
    n: u64,
    start: u64,
    s: Shared<T>,
    items: &[T; ITEMS],
) {
    unsafe {
        write_items::<T, ITEMS>(s, items);
        unstage_tile::<T, B, ITEMS>(output, n, start, s);
    }
}

/// The combine of this thread's staged items, in order, read from shared
/// memory (for tiles too large to keep in registers).
///
/// # Safety
/// After [`stage_tile`] on `s`.
#[inline(always)]
#[track_caller]
pub unsafe fn reduce_staged<T: Item, Op: Monoid<T>, const ITEMS: usize>(s: Shared<T>) -> T {
    let base = gpu::thread_idx() as usize * ITEMS;
    // SAFETY: inside the tile.
    let mut acc = unsafe { s.load(pad::<T, ITEMS>(base)) };
    for j in 1..ITEMS {
        acc = Op::combine(acc, unsafe { s.load(pad::<T, ITEMS>(base + j)) });
    }
    acc
}

/// Scan this thread's staged items in place in shared memory, starting
/// from `prefix`.
///
/// # Safety
/// After [`stage_tile`] on `s`.
#[inline(always)]
#[track_caller]
pub unsafe fn scan_staged<T: Item, Op: Monoid<T>, const ITEMS: usize>(s: Shared<T>, prefix: T, exclusive: bool) {
    let base = gpu::thread_idx() as usize * ITEMS;
    let mut run = prefix;
    for j in 0..ITEMS {
        let at = pad::<T, ITEMS>(base + j);
        // SAFETY: inside the tile; this thread's own slot.
        let x = unsafe { s.load(at) };
        let next = Op::combine(run, x);
        unsafe { s.store(at, if exclusive { run } else { next }) };
        run = next;
    }
}

/// The combine of a thread's items, in order.
#[inline(always)]
pub fn thread_reduce<T: Item, Op: Monoid<T>, const ITEMS: usize>(items: &[T; ITEMS]) -> T {
    let mut acc = items[0];
    for &x in &items[1..] {
        acc = Op::combine(acc, x);
    }
    acc
}

/// Scan a thread's items in place, starting from `prefix` (everything
/// before the thread's first item): inclusive or exclusive.
#[inline(always)]
pub fn thread_scan<T: Item, Op: Monoid<T>, const ITEMS: usize>(items: &mut [T; ITEMS], prefix: T, exclusive: bool) {
    let mut run = prefix;
    for item in items.iter_mut() {
        let next = Op::combine(run, *item);
        *item = if exclusive { run } else { next };
        run = next;
    }
}
