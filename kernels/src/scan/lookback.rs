//! Single-pass scan with decoupled look-back (Merrill and Garland,
//! "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016),
//! with the look-back spread over the whole block.

use super::{EXCLUSIVE, SinglePassSmem};
use crate::block::scan::exclusive_scan;
use crate::block::tile::{reduce_staged, scan_staged, stage_tile_unsynced, unstage_tile};
use crate::gpu::{self, WARP_SIZE};
use crate::ops::{Item, Monoid};
use crate::single_pass::{TileStatus, clear_words, exclusive_prefix, from_words, publish_aggregate};
use crate::warp;

/// Single pass with decoupled look-back ([`crate::single_pass`]): like the ticket scan
/// ([`crate::lectures::scan::tickets::scan_tickets`]), but a tile does not wait for its
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
/// ([`crate::block::tile`]): a whole tile is loaded with 16-byte loads all in
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
/// **Memory ordering**: see [`crate::single_pass::status`] — every 32-bit chunk of a
/// published value shares a 64-bit word with its flag, written by a
/// relaxed atomic compare-and-swap and read by relaxed strong loads; no fence,
/// so publishing never waits for the block's other memory traffic. The
/// input may be the output (in place): a tile's elements are read only by
/// the block that later writes them.
///
/// Parameters as [`crate::lectures::scan::tickets::scan_tickets`]; one block per tile.
/// Shared memory:
/// [`single_pass_smem_bytes`](super::single_pass_smem_bytes)`(B, ITEMS)`.
///
/// # Safety
/// As [`crate::lectures::scan::tickets::scan_tickets`].
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
    let tile = unsafe { status.take_ticket(smem.look.ticket) };
    let start = tile as u64 * tile_len;
    let loaded = unsafe { stage_tile_unsynced::<T, Op, B, ITEMS>(input, n, start, smem.tile) };
    // For a commutative operator the tile's total is combined in the order
    // the tile was loaded (shuffles, then one slot per warp: the look-back's
    // slots, unused until after the barrier in `block_exclusive_scan`) and
    // published at once, before the tile is even scanned: successors
    // waiting on this tile see its AGGREGATE about a microsecond sooner.
    if Op::COMMUTATIVE {
        let warp_total = warp::reduce_all::<T, Op>(loaded);
        if gpu::lane() == 0 {
            unsafe { smem.look.slots.store(gpu::warp_idx() as usize, warp_total) };
        }
    }
    gpu::sync_threads();
    let early = if Op::COMMUTATIVE && tid == 0 {
        let mut total = unsafe { smem.look.slots.load(0) };
        for k in 1..(B / WARP_SIZE) as usize {
            total = Op::combine(total, unsafe { smem.look.slots.load(k) });
        }
        unsafe { publish_aggregate(&status, tile, total) };
        total
    } else {
        Op::identity()
    };
    let mine = unsafe { reduce_staged::<T, Op, ITEMS>(smem.tile) };
    let (prefix, scanned) = exclusive_scan::<T, Op, B>(mine, smem.warps);
    // The total this tile published (only thread 0's copy is used).
    let aggregate = if Op::COMMUTATIVE { early } else { scanned };
    if !Op::COMMUTATIVE {
        unsafe { publish_aggregate(&status, tile, aggregate) };
    }
    let before = unsafe {
        exclusive_prefix::<T, Op, B, { super::policy::LOOK_BACK_DELAY_NS }, 0>(&status, tile, aggregate, &smem.look)
    };
    let init: T = from_words([init_lo, init_hi]);
    let start_value = Op::combine(Op::combine(init, before), prefix);
    unsafe {
        scan_staged::<T, Op, ITEMS>(smem.tile, start_value, mode & EXCLUSIVE != 0);
        unstage_tile::<T, B, ITEMS>(output, n, start, smem.tile);
    }
}
