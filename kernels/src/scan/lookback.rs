//! Single-pass scan with decoupled look-back (Merrill and Garland,
//! "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016),
//! with the look-back spread over the whole block.

use super::block::{block_exclusive_scan, warp_inclusive_scan};
use super::status::{AGGREGATE, PREFIX, TileStatus, clear_words};
use super::tile::{reduce_staged, scan_staged, stage_tile_unsynced, unstage_tile};
use super::{EXCLUSIVE, Item, SinglePassSmem, from_words};
use crate::gpu::{self, Shared, WARP_SIZE, warp};
use crate::ops::Monoid;

/// Single pass with decoupled look-back: like the ticket scan
/// ([`super::tickets::scan_tickets`]), but a tile does not wait for its
/// predecessor's running total. It publishes its own total (AGGREGATE) as
/// soon as it has it, then looks back over the status of its
/// predecessors, combining aggregates until it meets a tile whose
/// inclusive PREFIX is known, and publishes its own PREFIX.
///
/// ```text
/// tile:    ... t-6   t-5   t-4   t-3   t-2   t-1  | t
/// status:      P     A     A     P     A     A    | (A published)
///                                ^ nearest P: stop
/// prefix(t) = P[t-3] . A[t-2] . A[t-1]            -> publish P[t]
/// ```
///
/// **Block-wide look-back.** Thread `i` of the `B` reads the status of
/// tile `top - (B-1) + i` (thread order is tile order), spinning while it
/// is INVALID, so one global-memory round trip inspects `B` predecessors.
/// Each warp finds its nearest PREFIX with a shuffle max and combines its
/// part in order with a warp scan; after one barrier every thread combines
/// the warp totals from the nearest warp holding a PREFIX. With no PREFIX
/// in the window the next `B` predecessors follow. (The paper looks back
/// with one warp, 32 tiles per round trip. With a thousand tiles in
/// flight, all started together, the nearest PREFIX is often much further
/// back than that — a tile near the end of the first wave would walk back
/// some 30 windows — and the other warps idle at a barrier meanwhile
/// anyway.) Everything
/// combines in tile order, so the operator need not commute.
///
/// **Early aggregate.** For a commutative operator ([`Monoid::COMMUTATIVE`]:
/// sums, products, min, max, bitwise) each thread combines the elements it
/// loaded as they go to shared memory, each warp combines its threads'
/// with shuffles, and thread 0 publishes the tile's AGGREGATE right after
/// the staging barrier, before the tile's own scan. That total is grouped
/// differently from the scan's, so for floats it may differ from the
/// tile's last output in the last bits (as look-back float results may
/// anyway); integers are exact. Other operators publish the total the
/// block scan produces, in order.
///
/// **Tiles** are `B x ITEMS` elements, 128 bytes per thread (32 items of 4
/// bytes at up to 256 threads), staged in shared memory and scanned there
/// ([`super::tile`]): a whole tile is loaded with 16-byte loads all in
/// flight at once (48 registers, 5 blocks of 256 per multiprocessor, so
/// about 160 KiB of loads in flight per multiprocessor), and the scan
/// itself runs in shared memory. The fixed costs of a tile — the ticket's
/// and the look-back's round trips — are paid once per 32 KiB.
///
/// On an H200 at 2^28 this kernel reaches 92.5% / 92.6% of copy for
/// `i32` / `f32` and 87.2% for `f64`.
/// Measurements and rejected variants: `docs/tuning/scan.md`.
///
/// Cost: `2n` memory traffic, one launch (plus clearing the status); a
/// tile waits only for its predecessors' *aggregates*, which they publish
/// as soon as they have them, not for the whole chain.
///
/// **Progress.** The tile index comes from an atomic ticket, not
/// `block_idx`. A block holding ticket `t` is running, and every earlier
/// ticket was taken by a block that is running or done and that publishes
/// its aggregate without waiting on anyone; so every look-back ends,
/// whatever order the hardware starts blocks in and however few are
/// resident.
///
/// **Memory ordering**: see [`super::status`] — every 32-bit chunk of a
/// published value shares a 64-bit word with its flag, written by a
/// relaxed atomic compare-and-swap and read by relaxed strong loads; no fence,
/// so publishing never waits for the block's other memory traffic. The
/// input may be the output (in place): a tile's elements are read only by
/// the block that later writes them.
///
/// Parameters as [`super::tickets::scan_tickets`]; one block per tile.
/// Shared memory:
/// [`single_pass_smem_bytes`](super::single_pass_smem_bytes)`(B, ITEMS)`.
///
/// # Safety
/// As [`super::tickets::scan_tickets`].
pub unsafe fn scan_lookback<T: Item, Op: Monoid<T>, const B: u32, const ITEMS: usize>(
    input: *const T,
    output: *mut T,
    n: u64,
    init_lo: u64,
    init_hi: u64,
    mode: u32,
    temp: *mut u64,
    spare: *mut u64,
    spare_words: u64,
) {
    // Clear the other half of double-buffered temporary storage for the
    // next launch (`spare_words` is 0 when there is none).
    // SAFETY: the caller's contract on `spare`.
    unsafe { clear_words::<B>(spare, spare_words) };
    let tid = gpu::thread_idx();
    let tile_len = B as u64 * ITEMS as u64;
    let status = TileStatus::<T>::new(temp);
    let smem = SinglePassSmem::<T>::carve(B, ITEMS);
    // SAFETY (shared accesses): inside the carved slots; (global) the tile
    // overlaps 0..n, tickets stop at the grid size; (status) tiles below
    // the tile count, each (tile, flag) published once, by thread 0.
    let tile = unsafe { status.take_ticket(smem.ticket) };
    let start = tile as u64 * tile_len;
    let loaded = unsafe { stage_tile_unsynced::<T, Op, B, ITEMS>(input, n, start, smem.tile) };
    // For a commutative operator the tile's total is combined in the order
    // the tile was loaded (shuffles, then one slot per warp: the look-back's
    // slots, unused until after the barrier in `block_exclusive_scan`) and
    // published at once, before the tile is even scanned: successors
    // waiting on this tile see its AGGREGATE about a microsecond sooner.
    if Op::COMMUTATIVE {
        let warp_total = warp_combine_any_order::<T, Op>(loaded);
        if gpu::lane() == 0 {
            unsafe { smem.look.store(gpu::warp_idx() as usize, warp_total) };
        }
    }
    gpu::sync_threads();
    let early = if Op::COMMUTATIVE && tid == 0 {
        let mut total = unsafe { smem.look.load(0) };
        for k in 1..(B / WARP_SIZE) as usize {
            total = Op::combine(total, unsafe { smem.look.load(k) });
        }
        unsafe { status.publish(tile, if tile == 0 { PREFIX } else { AGGREGATE }, total, None) };
        total
    } else {
        Op::identity()
    };
    let mine = unsafe { reduce_staged::<T, Op, ITEMS>(smem.tile) };
    let (prefix, scanned) = block_exclusive_scan::<T, Op, B>(mine, smem.warps);
    // The total this tile published (only thread 0's copy is used).
    let aggregate = if Op::COMMUTATIVE { early } else { scanned };
    if !Op::COMMUTATIVE && tid == 0 {
        let (flag, v) = if tile == 0 { (PREFIX, aggregate) } else { (AGGREGATE, aggregate) };
        unsafe { status.publish(tile, flag, v, None) };
    }
    let before = if tile == 0 {
        Op::identity()
    } else {
        let before = unsafe { block_look_back::<T, Op, B>(&status, tile, smem.look, smem.look_flags, smem.look_near) };
        if tid == 0 {
            unsafe { status.publish(tile, PREFIX, Op::combine(before, aggregate), Some(aggregate)) };
        }
        before
    };
    let init: T = from_words([init_lo, init_hi]);
    let start_value = Op::combine(Op::combine(init, before), prefix);
    unsafe {
        scan_staged::<T, Op, ITEMS>(smem.tile, start_value, mode & EXCLUSIVE != 0);
        unstage_tile::<T, B, ITEMS>(output, n, start, smem.tile);
    }
}

/// The combine of every tile before `tile` (its exclusive prefix), by all
/// `B` threads of the block, `B` predecessors per round; every thread
/// returns it. `slots`, `flags` and `near` hold two sets of 32 (one per
/// round parity, so no round waits for the previous one's readers).
///
/// A round reads the status of every tile of its window once, all reads in
/// flight together, and finds the nearest PREFIX among them (a shuffle max
/// per warp, one barrier). Only the tiles after that PREFIX matter, so
/// only their threads wait for an INVALID status to change; a slow tile
/// further back (one whose loads took long) does not hold up every
/// look-back whose window merely contains it.
///
/// # Safety
/// `0 < tile <` the tile count; every earlier tile belongs to a block that
/// is running or done; all threads of the block call it.
#[inline(always)]
#[track_caller]
unsafe fn block_look_back<T: Item, Op: Monoid<T>, const B: u32>(
    status: &TileStatus<T>,
    tile: u32,
    slots: Shared<T>,
    flags: Shared<u32>,
    near: Shared<i32>,
) -> T {
    let (tid, lane, w) = (gpu::thread_idx(), gpu::lane(), gpu::warp_idx() as usize);
    let warps = (B / WARP_SIZE) as usize;
    let mut carried = Op::identity();
    // The nearest predecessor this round covers (the last thread's tile).
    let mut top = tile as i64 - 1;
    let mut set = 0usize;
    loop {
        let mine = top - (B - 1 - tid) as i64;
        // Tiles before 0 count as an identity PREFIX; they only appear in
        // a window that also holds tile 0, which is a PREFIX itself.
        // SAFETY (status reads): 0 <= mine < tile.
        let mut got = if mine >= 0 {
            TileStatus::<T>::decode(unsafe { status.read(mine as u32) })
        } else {
            Some((PREFIX, Op::identity()))
        };
        // The window's nearest PREFIX in this first read: per warp the
        // highest lane holding one (a shuffle max), then across warps.
        let first = warp_max(if matches!(got, Some((PREFIX, _))) { tid as i32 } else { -1 });
        if lane == 0 {
            // SAFETY: set + w < 64 slots.
            unsafe { near.store(set + w, first) };
        }
        gpu::sync_threads();
        let mut nearest = -1;
        for k in 0..warps {
            // SAFETY: written before the barrier above.
            let v = unsafe { near.load(set + k) };
            nearest = if v > nearest { v } else { nearest };
        }
        // Tiles after it must be read until they are no longer INVALID;
        // tiles before it are not needed.
        if tid as i32 > nearest && got.is_none() {
            // SAFETY: as above (`got` is only None for mine >= 0); the
            // tile's block runs or is done.
            got = Some(unsafe { status.wait(mine as u32) });
        }
        let (flag, value) = got.unwrap_or((AGGREGATE, Op::identity()));
        // This warp's highest lane holding a PREFIX now (a tile may have
        // moved on to PREFIX since the first read), or -1.
        let stop = warp_max(if flag == PREFIX { lane as i32 } else { -1 });
        let part = if lane as i32 >= stop { value } else { Op::identity() };
        let total = warp::shfl_idx(warp_inclusive_scan::<T, Op>(part), WARP_SIZE - 1);
        if lane == 0 {
            // SAFETY: set + w < 64 slots.
            unsafe {
                slots.store(set + w, total);
                flags.store(set + w, (stop >= 0) as u32);
            }
        }
        gpu::sync_threads();
        // The warps' totals, from the nearest warp holding a PREFIX (or the
        // first warp) to the last, in order.
        let mut window = Op::identity();
        let mut found = false;
        let mut k = warps;
        while k > 0 {
            k -= 1;
            // SAFETY: written before the barrier above.
            window = Op::combine(unsafe { slots.load(set + k) }, window);
            if unsafe { flags.load(set + k) } != 0 {
                found = true;
                break;
            }
        }
        // The window lies before everything carried so far.
        carried = Op::combine(window, carried);
        if found {
            return carried;
        }
        top -= B as i64;
        set = 32 - set;
    }
}

/// The combine of `v` over the warp in no particular order (five
/// `shfl.xor` steps; every lane gets it): for commutative operators only.
#[inline(always)]
#[track_caller]
fn warp_combine_any_order<T: Item, Op: Monoid<T>>(mut v: T) -> T {
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        v = Op::combine(v, warp::shfl_xor(v, mask));
        mask /= 2;
    }
    v
}

/// The maximum of `v` over the warp (five `shfl.xor` steps).
#[inline(always)]
#[track_caller]
fn warp_max(mut v: i32) -> i32 {
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        let other = warp::shfl_xor(v, mask);
        v = if other > v { other } else { v };
        mask /= 2;
    }
    v
}
