//! The three-phase device scan: the per-block scan kernels (phase 1) and
//! the kernel that adds each block's prefix (phase 3).
//!
//! ```text
//! input    | block 0  | block 1  | block 2  | ...
//! phase 1  scan each block locally, write its total:  totals = [t0 t1 t2 ..]
//! phase 2  exclusive scan of totals (the same three phases, recursively,
//!          until one block holds them; or on the host): p = [init, init.t0, ..]
//! phase 3  out[i] = p[block of i] . out[i]
//! ```
//! Memory traffic `4n` (read and write in phases 1 and 3) plus the totals,
//! against `2n` for the single-pass scans; three or more launches.
//!
//! Every phase-1 kernel has the same parameters: `(input, output, n,
//! init_lo, init_hi, mode, totals)`. Block `b` scans elements `b*TILE ..
//! (b+1)*TILE`, writes `init . local scan` (inclusive, or exclusive when
//! `mode & EXCLUSIVE`) to `output` and the block's total (without `init`)
//! to `totals[b]`. `init` is a value of `T` passed as its bytes in two
//! 64-bit parameters (see [`crate::single_pass::to_words`]). `input` may equal
//! `output` (in place): every block reads its whole tile before writing it.

use super::block::{blelloch, hillis_steele};
use crate::block::scan::exclusive_scan as block_exclusive_scan;
use crate::block::tile::{self, load_tile, store_tile, thread_reduce, thread_scan};
use crate::gpu::{self, Shared, global};
use crate::ops::{Item, Monoid};
use crate::scan::EXCLUSIVE;
use crate::single_pass::from_words;

/// Phase 1 with the Hillis-Steele block scan
/// ([`hillis_steele`]): one element per
/// thread, tiles of `B`. Shared memory:
/// [`hillis_steele_slots`](super::block::hillis_steele_slots)`(B)` elements.
///
/// # Safety
/// `input`/`output` hold `n` elements, `totals` one per block; the grid
/// covers `n` with tiles of `B`.
pub unsafe fn scan_hillis_steele<T: Item, Op: Monoid<T>, const B: u32>(
    input: *const T,
    output: *mut T,
    n: u64,
    init_lo: u64,
    init_hi: u64,
    mode: u32,
    totals: *mut T,
) {
    let tid = gpu::thread_idx();
    let block = gpu::block_idx();
    let i = block as u64 * B as u64 + tid as u64;
    // SAFETY (global accesses): i < n; one total per block.
    let x = if i < n { unsafe { global::load(input.add(i as usize)) } } else { Op::identity() };
    let (inclusive, exclusive, total) = hillis_steele::<T, Op, B>(x, Shared::dynamic());
    let init: T = from_words([init_lo, init_hi]);
    let local = if mode & EXCLUSIVE != 0 { exclusive } else { inclusive };
    if i < n {
        unsafe { global::store(output.add(i as usize), Op::combine(init, local)) };
    }
    if tid == 0 {
        unsafe { global::store(totals.add(block as usize), total) };
    }
}

/// Phase 1 with the Blelloch block scan
/// ([`blelloch`]): two elements per thread
/// (`tid` and `tid + B`, so both loads coalesce), tiles of `2B`. Shared
/// memory: [`blelloch_slots`](super::block::blelloch_slots)`(B)` elements.
///
/// # Safety
/// As [`scan_hillis_steele`], with tiles of `2B`.
pub unsafe fn scan_blelloch<T: Item, Op: Monoid<T>, const B: u32>(
    input: *const T,
    output: *mut T,
    n: u64,
    init_lo: u64,
    init_hi: u64,
    mode: u32,
    totals: *mut T,
) {
    let tid = gpu::thread_idx();
    let block = gpu::block_idx();
    let ia = block as u64 * 2 * B as u64 + tid as u64;
    let ib = ia + B as u64;
    // SAFETY (global accesses): indices below n; one total per block.
    let a = if ia < n { unsafe { global::load(input.add(ia as usize)) } } else { Op::identity() };
    let b = if ib < n { unsafe { global::load(input.add(ib as usize)) } } else { Op::identity() };
    let (ea, eb, total) = blelloch::<T, Op, B>(a, b, Shared::dynamic());
    let init: T = from_words([init_lo, init_hi]);
    let (la, lb) = if mode & EXCLUSIVE != 0 { (ea, eb) } else { (Op::combine(ea, a), Op::combine(eb, b)) };
    if ia < n {
        unsafe { global::store(output.add(ia as usize), Op::combine(init, la)) };
    }
    if ib < n {
        unsafe { global::store(output.add(ib as usize), Op::combine(init, lb)) };
    }
    if tid == 0 {
        unsafe { global::store(totals.add(block as usize), total) };
    }
}

/// Phase 1 with the warp-shuffle block scan
/// ([`block_exclusive_scan`]): one
/// element per thread, tiles of `B`. Shared memory:
/// [`WARP_SLOTS`](crate::block::WARP_SLOTS) elements.
///
/// # Safety
/// As [`scan_hillis_steele`].
pub unsafe fn scan_warp_shuffle<T: Item, Op: Monoid<T>, const B: u32>(
    input: *const T,
    output: *mut T,
    n: u64,
    init_lo: u64,
    init_hi: u64,
    mode: u32,
    totals: *mut T,
) {
    let tid = gpu::thread_idx();
    let block = gpu::block_idx();
    let i = block as u64 * B as u64 + tid as u64;
    // SAFETY (global accesses): i < n; one total per block.
    let x = if i < n { unsafe { global::load(input.add(i as usize)) } } else { Op::identity() };
    let (exclusive, total) = block_exclusive_scan::<T, Op, B>(x, Shared::dynamic());
    let init: T = from_words([init_lo, init_hi]);
    let local = if mode & EXCLUSIVE != 0 { exclusive } else { Op::combine(exclusive, x) };
    if i < n {
        unsafe { global::store(output.add(i as usize), Op::combine(init, local)) };
    }
    if tid == 0 {
        unsafe { global::store(totals.add(block as usize), total) };
    }
}

/// Phase 1 on tiles of `B x ITEMS` ([`crate::block::tile`]): striped coalesced
/// loads through shared memory, a sequential scan of `ITEMS` consecutive
/// elements per thread, and the warp-shuffle scan of the `B` thread
/// totals. Shared memory: [`tile_slots`](crate::block::tile::tile_slots)`(B, ITEMS)` +
/// [`WARP_SLOTS`](crate::block::WARP_SLOTS) elements.
///
/// # Safety
/// As [`scan_hillis_steele`], with tiles of `B * ITEMS`.
pub unsafe fn scan_tiles<T: Item, Op: Monoid<T>, const B: u32, const ITEMS: usize>(
    input: *const T,
    output: *mut T,
    n: u64,
    init_lo: u64,
    init_hi: u64,
    mode: u32,
    totals: *mut T,
) {
    let block = gpu::block_idx();
    let start = block as u64 * B as u64 * ITEMS as u64;
    let tile = Shared::<T>::dynamic();
    let slots = tile.after::<T>(tile::tile_slots::<T>(B, ITEMS));
    // SAFETY: the tile lies in input/output where it overlaps 0..n.
    let mut items = unsafe { load_tile::<T, Op, B, ITEMS>(input, n, start, tile) };
    let (prefix, total) = block_exclusive_scan::<T, Op, B>(thread_reduce::<T, Op, ITEMS>(&items), slots);
    let init: T = from_words([init_lo, init_hi]);
    thread_scan::<T, Op, ITEMS>(&mut items, Op::combine(init, prefix), mode & EXCLUSIVE != 0);
    unsafe { store_tile::<T, B, ITEMS>(output, n, start, tile, &items) };
    if gpu::thread_idx() == 0 {
        // SAFETY: one total per block.
        unsafe { global::store(totals.add(block as usize), total) };
    }
}

/// Phase 3: block `b` combines `prefixes[b]` in front of every element of
/// its tile of `tile` elements: `out[i] = prefixes[b] . out[i]`. Grid: one
/// block per tile; `B` threads stride through the tile (coalesced).
///
/// # Safety
/// `output` holds `n` elements, `prefixes` one per tile.
pub unsafe fn add_prefix<T: Item, Op: Monoid<T>, const B: u32>(output: *mut T, n: u64, tile: u64, prefixes: *const T) {
    let block = gpu::block_idx() as u64;
    // SAFETY: one prefix per block; indices below n.
    let p = unsafe { global::load(prefixes.add(block as usize)) };
    let start = block * tile;
    let end = if start + tile < n { start + tile } else { n };
    let mut i = start + gpu::thread_idx() as u64;
    while i < end {
        unsafe {
            let at = output.add(i as usize);
            global::store(at, Op::combine(p, global::load(at)));
        }
        i += B as u64;
    }
}
