//! Single-pass scan with in-order block tickets (the lectures' second
//! alternative to the three-phase scan; a "chained scan").

use crate::block::scan::exclusive_scan as block_exclusive_scan;
use crate::block::tile::{load_tile, store_tile, thread_reduce, thread_scan};
use crate::gpu;
use crate::ops::{Item, Monoid};
use crate::scan::{EXCLUSIVE, SinglePassSmem};
use crate::single_pass::{PREFIX, TileStatus, clear_words, from_words};

/// Single pass, tiles in ticket order: each block takes the next tile
/// index from an atomic counter, scans its tile, then waits for its
/// predecessor's running total, adds its own and publishes that for its
/// successor.
///
/// ```text
/// block  ticket  tile scan   wait for P[t-1]       publish P[t] = P[t-1].agg
///   A      0     ........    -                     P[0] ------------.
///   C      1     ........    spin ... P[0] <-------------------------'
///   B      2     ........    spin ........ P[1] <- ...
/// ```
/// Memory traffic `2n` and one launch, but the publications form a chain:
/// tile `t` cannot publish before tile `t-1` has, so the scan moves at one
/// tile per global-memory round trip (about a microsecond) however many
/// blocks run. Fine for a few hundred tiles, slow beyond.
///
/// Tickets, not `block_idx`, decide the order. Blocks may be scheduled in
/// any order, and only some are resident at once: if block 5 waited for
/// block 4 that the hardware has not started yet, and block 5 occupied
/// the last slot, the launch would hang. A block that holds ticket `t` is
/// running, and so is (or has finished) every block holding an earlier
/// ticket, so the chain always moves.
///
/// Memory ordering: the predecessor's total travels with its flag as
/// described in [`crate::single_pass::status`] (each 32-bit chunk in one 64-bit word
/// with the flag; relaxed atomic writes, acquire loads).
///
/// Parameters as the phase-1 kernels of [`super::three_phase`], with
/// `temp`: [`status_bytes`](crate::single_pass::status_bytes) of zeroed
/// storage, and `spare`: `spare_words` words this launch zeroes for the
/// next one (the other half of double-buffered storage; may be none).
/// Grid: one block per tile; shared memory
/// [`single_pass_smem_bytes`](crate::scan::single_pass_smem_bytes).
///
/// # Safety
/// `input`/`output` hold `n` elements (they may be the same buffer);
/// `temp` is zeroed and large enough for `ceil(n / (B*ITEMS))` tiles; the
/// grid has exactly that many blocks; `spare` holds `spare_words` words
/// disjoint from everything else the launch touches.
pub unsafe fn scan_tickets<T: Item, Op: Monoid<T>, const B: u32, const ITEMS: usize>(
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
    // SAFETY (shared accesses): inside the carved slots.
    let tile = unsafe { status.take_ticket(smem.look.ticket) };
    let start = tile as u64 * tile_len;
    // SAFETY: the tile overlaps 0..n (tickets stop at the grid size).
    let mut items = unsafe { load_tile::<T, Op, B, ITEMS>(input, n, start, smem.tile) };
    let (prefix, aggregate) = block_exclusive_scan::<T, Op, B>(thread_reduce::<T, Op, ITEMS>(&items), smem.warps);
    if tid == 0 {
        // SAFETY: tiles below the tile count; each published once.
        let before = if tile == 0 {
            Op::identity()
        } else {
            // Only PREFIX is ever published here, so the first flag seen
            // is the predecessor's running total.
            let (_flag, v) = unsafe { status.wait::<0>(tile - 1) };
            v
        };
        unsafe {
            status.publish(tile, PREFIX, Op::combine(before, aggregate), None);
            smem.look.prefix.store(0, before);
        }
    }
    gpu::sync_threads();
    let before = unsafe { smem.look.prefix.load(0) };
    let init: T = from_words([init_lo, init_hi]);
    let start_value = Op::combine(Op::combine(init, before), prefix);
    thread_scan::<T, Op, ITEMS>(&mut items, start_value, mode & EXCLUSIVE != 0);
    unsafe { store_tile::<T, B, ITEMS>(output, n, start, smem.tile, &items) };
}
