//! The decoupled look-back (Merrill and Garland, "Single-pass Parallel
//! Prefix Scan with Decoupled Look-back", 2016), spread over the whole
//! block, and the two steps every single-pass kernel takes around it.
//!
//! A single-pass kernel (the scan, select, reduce-by-key, run-length
//! encode) reduces its tile to an *aggregate* of some monoid (the tile's
//! sum, its count of selected items, its (segments, carry) pair), then:
//!
//! 1. [`publish_aggregate`]: thread 0 publishes it (tile 0 publishes it as
//!    its inclusive PREFIX at once);
//! 2. [`exclusive_prefix`]: the whole block looks back over its
//!    predecessors for the combine of everything before the tile, and
//!    thread 0 publishes the tile's inclusive PREFIX.
//!
//! ```text
//! tile:    ... t-6   t-5   t-4   t-3   t-2   t-1  | t
//! status:      P     A     A     P     A     A    | (A published)
//!                                ^ nearest P: stop
//! prefix(t) = P[t-3] . A[t-2] . A[t-1]            -> publish P[t]
//! ```
//! Everything combines in tile order, so the operator need not commute.

use super::status::{AGGREGATE, PREFIX, SLEEP_MIN_BLOCKS, TileStatus};
use crate::gpu::{self, Shared, WARP_SIZE, warp as gpu_warp};
use crate::ops::{Item, Monoid};
use crate::warp;

/// Thread 0 publishes `aggregate` (its tile's total; the other threads'
/// values are ignored) as `tile`'s AGGREGATE, or as its PREFIX for tile 0.
///
/// # Safety
/// `tile` is below the launch's tile count; called once per tile.
#[inline(always)]
#[track_caller]
pub unsafe fn publish_aggregate<T: Item>(status: &TileStatus<T>, tile: u32, aggregate: T) {
    if gpu::thread_idx() == 0 {
        let flag = if tile == 0 { PREFIX } else { AGGREGATE };
        // SAFETY: the caller's contract.
        unsafe { status.publish(tile, flag, aggregate, None) };
    }
}

/// The combine of every tile before `tile` (the identity for tile 0), in
/// every thread, after [`publish_aggregate`] published `aggregate` (thread
/// 0's value counts). Thread 0 then publishes the tile's inclusive PREFIX,
/// `prefix . aggregate`, for its successors. Uses the look-back slots of
/// `smem`. In a launch of at least [`SLEEP_MIN_BLOCKS`] blocks the block
/// first sleeps `DELAY_NS` nanoseconds (0: not at all), so that its first
/// read finds its youngest predecessors published (CUB's look-back does
/// the same); a thread that reads a predecessor still INVALID sleeps
/// `POLL_NS` between reads ([`TileStatus::wait`]).
///
/// # Safety
/// As [`look_back`]; [`publish_aggregate`] ran for this tile with the same
/// `aggregate`; all threads of the block call it.
#[inline(always)]
#[track_caller]
pub unsafe fn exclusive_prefix<T: Item, Op: Monoid<T>, const B: u32, const DELAY_NS: u32, const POLL_NS: u32>(
    status: &TileStatus<T>,
    tile: u32,
    aggregate: T,
    smem: &super::LookBackSmem<T>,
) -> T {
    if tile == 0 {
        return Op::identity();
    }
    if DELAY_NS > 0 && gpu::grid_dim() >= SLEEP_MIN_BLOCKS {
        gpu::nanosleep(DELAY_NS);
    }
    // SAFETY: forwarded.
    let before = unsafe { look_back::<T, Op, B, POLL_NS>(status, tile, smem.slots, smem.flags, smem.near) };
    if gpu::thread_idx() == 0 {
        // SAFETY: each (tile, PREFIX) once; the words hold the aggregate.
        unsafe { status.publish(tile, PREFIX, Op::combine(before, aggregate), Some(aggregate)) };
    }
    before
}

/// [`exclusive_prefix`] with the look-back done by warp 0 alone, 32
/// predecessors a round, while the other warps wait at one barrier; the
/// result reaches them through `smem.prefix`. In a launch of at least
/// [`SLEEP_MIN_BLOCKS`] blocks the warp first sleeps `DELAY_NS`
/// nanoseconds (as CUB's look-back does), so that its first read finds
/// its youngest predecessors published.
///
/// The block-wide [`look_back`] reads a window of `B` tiles with every
/// thread and scans it with every warp, which hides the latency of a slow
/// predecessor best and suits the scan's cheap 8-byte carries. For wide
/// carries (the by-key kernels' 16-byte pairs, 32 bytes of status a
/// tile) that window costs every warp a status decode and a warp scan of
/// pairs per tile; here one warp pays it.
///
/// # Safety
/// As [`exclusive_prefix`].
#[inline(always)]
#[track_caller]
pub unsafe fn exclusive_prefix_by_warp<T: Item, Op: Monoid<T>, const DELAY_NS: u32>(
    status: &TileStatus<T>,
    tile: u32,
    aggregate: T,
    smem: &super::LookBackSmem<T>,
) -> T {
    if tile == 0 {
        return Op::identity();
    }
    // SAFETY: forwarded.
    unsafe { look_back_by_warp::<T, Op, DELAY_NS>(status, tile, aggregate, smem) };
    gpu::sync_threads();
    // SAFETY: written before the barrier above.
    unsafe { smem.prefix.load(0) }
}

/// The first half of [`exclusive_prefix_by_warp`], without its barrier:
/// warp 0 looks back (after the same delay), leaves the prefix in
/// `smem.prefix` and publishes the tile's inclusive PREFIX; the other
/// warps return at once. A kernel that needs the prefix only late in its
/// tile (the by-key kernels that write runs) calls this, goes on with
/// its tile-local work, and reads the prefix with [`deferred_prefix`]
/// after a barrier of its own: the look-back then overlaps that work
/// instead of holding the block at a barrier.
///
/// # Safety
/// As [`exclusive_prefix`], except that only warp 0 need call it (every
/// thread may); `smem.prefix` is read only after a barrier that follows.
#[inline(always)]
#[track_caller]
pub unsafe fn look_back_by_warp<T: Item, Op: Monoid<T>, const DELAY_NS: u32>(
    status: &TileStatus<T>,
    tile: u32,
    aggregate: T,
    smem: &super::LookBackSmem<T>,
) {
    if tile == 0 || gpu::warp_idx() != 0 {
        return;
    }
    if DELAY_NS > 0 && gpu::grid_dim() >= SLEEP_MIN_BLOCKS {
        gpu::nanosleep(DELAY_NS);
    }
    let lane = gpu::lane();
    let mut carried = Op::identity();
    // The nearest predecessor this round covers (lane 31's tile).
    let mut top = tile as i64 - 1;
    loop {
        let mine = top - (WARP_SIZE - 1 - lane) as i64;
        // Tiles before 0 count as an identity PREFIX (see look_back).
        // SAFETY (status): 0 <= mine < tile, whose block runs or is done.
        let (flag, value) = if mine >= 0 { unsafe { status.wait::<0>(mine as u32) } } else { (PREFIX, Op::identity()) };
        // The highest lane holding a PREFIX, or -1: the window from it
        // on, in order, is what this round adds.
        let stop = warp::max_i32(if flag == PREFIX { lane as i32 } else { -1 });
        let part = if lane as i32 >= stop { value } else { Op::identity() };
        let window = gpu_warp::shfl_idx(warp::inclusive_scan::<T, Op>(part), WARP_SIZE - 1);
        carried = Op::combine(window, carried);
        if stop >= 0 {
            break;
        }
        top -= WARP_SIZE as i64;
    }
    if lane == 0 {
        // SAFETY: one slot, read by the block after the caller's barrier;
        // each (tile, PREFIX) published once.
        unsafe {
            smem.prefix.store(0, carried);
            status.publish(tile, PREFIX, Op::combine(carried, aggregate), Some(aggregate));
        }
    }
}

/// What [`look_back_by_warp`] left for the block: the combine of every
/// tile before `tile` (the identity for tile 0).
///
/// # Safety
/// After a barrier that follows [`look_back_by_warp`] for this tile.
#[inline(always)]
#[track_caller]
pub unsafe fn deferred_prefix<T: Item, Op: Monoid<T>>(tile: u32, smem: &super::LookBackSmem<T>) -> T {
    // SAFETY: the caller's contract.
    if tile == 0 { Op::identity() } else { unsafe { smem.prefix.load(0) } }
}

/// The combine of every tile before `tile` (its exclusive prefix), by all
/// `B` threads of the block, `B` predecessors per round; every thread
/// returns it. `slots`, `flags` and `near` hold two sets of 32 (one per
/// round parity, so no round waits for the previous one's readers). A
/// thread whose predecessor is still INVALID sleeps `POLL_NS` between
/// reads of it.
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
pub unsafe fn look_back<T: Item, Op: Monoid<T>, const B: u32, const POLL_NS: u32>(
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
        let first = warp::max_i32(if matches!(got, Some((PREFIX, _))) { tid as i32 } else { -1 });
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
            got = Some(unsafe { status.wait::<POLL_NS>(mine as u32) });
        }
        let (flag, value) = got.unwrap_or((AGGREGATE, Op::identity()));
        // This warp's highest lane holding a PREFIX now (a tile may have
        // moved on to PREFIX since the first read), or -1.
        let stop = warp::max_i32(if flag == PREFIX { lane as i32 } else { -1 });
        let part = if lane as i32 >= stop { value } else { Op::identity() };
        let total = gpu_warp::shfl_idx(warp::inclusive_scan::<T, Op>(part), WARP_SIZE - 1);
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
