//! Kernels that misbehave on purpose, so tests can show the emulator
//! catches each kind of misuse a GPU would not survive, and a few correct
//! but subtle ones it must accept.
//!
//! | kernel                         | what it does                               | emulator |
//! |--------------------------------|--------------------------------------------|----------|
//! | [`barrier_in_branch`]          | `sync_threads` only warp 0 reaches         | `BarrierDivergence` |
//! | [`barrier_per_branch`]         | one `sync_threads` per arm of an `if`      | `BarrierMismatch` |
//! | [`shared_overrun`]             | two tiles in shared memory sized for one   | `SharedOutOfBounds` |
//! | [`missing_tail_guard`]         | loads past `n` (no tail check)             | `GlobalOutOfBounds` |
//! | [`return_before_shuffle`]      | lanes return, then a `FULL_MASK` shuffle   | `WarpCollective` |
//! | [`wait_for_unset_flag`]        | spins on a flag nobody sets                | `Stuck` |
//! | [`tree_without_barrier`]       | shared tree with no barrier between steps  | `DataRace` |
//! | [`lookup_past_table`]          | indexes a slice out of bounds              | `Panic` |
//! | [`misaligned`]                 | vector, scalar and shared misaligned        | `Misaligned` |
//! | [`chained_by_block_index`]     | waits on block `b - 1` without tickets     | `Stuck` when blocks start out of order |
//! | [`synced_warp_tail`]           | warp tail with `warp::sync` between steps  | correct |
//! | [`running_carry`]              | shared carry read by all, updated by one   | correct |
//! | [`chained_tickets`]            | blocks chained in ticket order             | correct |
//! | [`shuffle_lanes`]              | every shuffle mode, scalars and pairs      | correct (compared to a lane model) |
//!
//! The faulty kernels are valid PTX (they assemble); they are only wrong
//! programs. Tests run them on the emulator only.

use crate::gpu::{self, FULL_MASK, Shared, atomic, global, warp};
use crate::ops::*;

entries! {
    testing_barrier_in_branch(input: *const T, n: u64, out: *mut T) => barrier_in_branch::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_barrier_per_branch(input: *const T, n: u64, out: *mut T) => barrier_per_branch::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_shared_overrun(input: *const T, n: u64, read: u32, out: *mut T) => shared_overrun::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_missing_tail_guard(input: *const T, n: u64, out: *mut T) => missing_tail_guard::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_return_before_shuffle(input: *const T, n: u64, out: *mut T) => return_before_shuffle::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_wait_for_unset_flag(flag: *const u32, out: *mut T) => wait_for_unset_flag::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_tree_without_barrier(input: *const T, n: u64, out: *mut T) => tree_without_barrier::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [256];
    testing_lookup_past_table(input: *const T, n: u64, out: *mut T) => lookup_past_table::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_misaligned(input: *const T, n: u64, which: u32, out: *mut T) => misaligned::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_chained_by_block_index(input: *const T, n: u64, flags: *mut u32, out: *mut T)
        => chained_by_block_index::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_synced_warp_tail(input: *const T, n: u64, out: *mut T) => synced_warp_tail::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [256];
    testing_running_carry(input: *const T, n: u64, out: *mut T, total: *mut T) => running_carry::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_chained_tickets(input: *const T, n: u64, counter: *mut u32, flags: *mut u32, out: *mut T)
        => chained_tickets::<T, Op, {B}>;
        ops [sum = Sum] types [i32] blocks [64];
    testing_shuffle(input: *const T, out: *mut T) => shuffle_lanes::<T, {B}>;
        types [i32, f32, i64, f64] blocks [64];
}

/// Reduce one value per thread across the block (shuffles within each
/// warp, a shared slot per warp, warp 0 reduces the slots); the total is
/// valid in thread 0. Contains a barrier; needs `B / 32` slots.
///
/// Kept here rather than shared with `reduce`, so these tests pin the
/// emulator's behaviour independently of the library's kernels.
#[inline(always)]
fn block_total<T: Element, Op: Monoid<T>, const B: u32>(v: T, slots: Shared<T>) -> T {
    const { assert!(B.is_power_of_two() && B >= 64 && B <= 1024, "block size must be a power of two in 64..=1024") };
    let warp_total = |mut v: T| {
        let mut offset = 16;
        while offset > 0 {
            v = Op::combine(v, warp::shfl_down(v, offset));
            offset /= 2;
        }
        v
    };
    let v = warp_total(v);
    let (lane, w) = (gpu::lane(), gpu::warp_idx());
    if lane == 0 {
        // SAFETY: w < B / 32 slots (caller's contract).
        unsafe { slots.store(w as usize, v) };
    }
    gpu::sync_threads();
    let mut total = Op::identity();
    if w == 0 {
        // SAFETY: lane < B / 32 is inside the slots.
        let mine = if lane < B / 32 { unsafe { slots.load(lane as usize) } } else { Op::identity() };
        total = warp_total(mine);
    }
    total
}

/// `block_idx * B + thread_idx`.
#[inline(always)]
fn global_index<const B: u32>() -> u64 {
    gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64
}

/// `input[i]`, or the identity past `n`.
///
/// # Safety
/// `input` holds `n` elements of device memory.
#[inline(always)]
unsafe fn load_or_identity<T: Element, Op: Monoid<T>>(input: *const T, n: u64, i: u64) -> T {
    // SAFETY: i < n (caller's contract covers n elements).
    if i < n { unsafe { global::load(input.add(i as usize)) } } else { Op::identity() }
}

/// Sum `count` shared slots in thread 0 and write it to `out[block_idx]`.
///
/// # Safety
/// The slots exist and were written before a barrier; `out` has a slot per
/// block.
#[inline(always)]
unsafe fn thread0_sums<T: Element, Op: Monoid<T>>(s: Shared<T>, count: usize, out: *mut T) {
    if gpu::thread_idx() == 0 {
        let mut acc = Op::identity();
        for k in 0..count {
            // SAFETY: caller's contract.
            acc = Op::combine(acc, unsafe { s.load(k) });
        }
        // SAFETY: caller's contract.
        unsafe { global::store(out.add(gpu::block_idx() as usize), acc) };
    }
}

/// Wrong: a barrier inside a branch that only the first warp takes.
///
/// Warp 0 stages its values in shared memory and waits at `sync_threads`,
/// which the other warps exit without reaching. CUDA allows
/// `__syncthreads` in conditional code only where the condition is the same
/// across the block; otherwise it may hang or misbehave. (An H200 happens
/// to release the barrier here, since the other warps have exited, and
/// `compute-sanitizer --tool synccheck` stays silent; with the other warps
/// still running it would not.) The emulator is stricter than that
/// hardware and reports `BarrierDivergence` with 32 threads waiting and
/// `B - 32` exited.
///
/// # Safety
/// `input` holds `n` elements, `out` one per block; `B * size_of::<T>()`
/// bytes of shared memory.
pub unsafe fn barrier_in_branch<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, out: *mut T) {
    let s = Shared::<T>::dynamic();
    let tid = gpu::thread_idx() as usize;
    // SAFETY: the caller's contract covers n elements.
    let v = unsafe { load_or_identity::<T, Op>(input, n, global_index::<B>()) };
    if tid < 32 {
        // SAFETY (block): tid < 32 <= B slots.
        unsafe {
            s.store(tid, v);
            gpu::sync_threads(); // BUG(barrier-in-branch): the other warps never get here
            thread0_sums::<T, Op>(s, 32, out);
        }
    }
}

/// Wrong: one `sync_threads` call in each arm of an `if`.
///
/// Even and odd threads wait at different barriers. `bar.sync 0` is one
/// hardware barrier, but CUDA leaves `__syncthreads` in divergent code
/// undefined (`compute-sanitizer --tool synccheck` reports "divergent
/// threads in warp" on an H200); the emulator requires every thread at the
/// same call and reports `BarrierMismatch` naming both call sites.
///
/// # Safety
/// As [`barrier_in_branch`].
pub unsafe fn barrier_per_branch<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, out: *mut T) {
    let s = Shared::<T>::dynamic();
    let tid = gpu::thread_idx() as usize;
    // SAFETY: the caller's contract covers n elements.
    let v = unsafe { load_or_identity::<T, Op>(input, n, global_index::<B>()) };
    // SAFETY (block): tid < B slots.
    unsafe {
        if tid.is_multiple_of(2) {
            s.store(tid, v);
            gpu::sync_threads(); // BUG(barrier-even): even threads wait here ...
        } else {
            s.store(tid, Op::combine(Op::identity(), v));
            gpu::sync_threads(); // BUG(barrier-odd): ... and odd threads here
        }
        thread0_sums::<T, Op>(s, B as usize, out);
    }
}

/// Wrong: assumes shared memory for two tiles (`2 B` elements) where the
/// launch gives one (`B`).
///
/// With `read == 0` it writes the second tile (a store past the launch's
/// dynamic size), otherwise it writes one tile and reads the missing second
/// one. On a GPU that silently touches other blocks' shared memory or
/// faults; the emulator reports `SharedOutOfBounds` at element `tid + B`.
///
/// # Safety
/// `input` holds `n` elements, `out` one per block.
pub unsafe fn shared_overrun<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, read: u32, out: *mut T) {
    let s = Shared::<T>::dynamic();
    let tid = gpu::thread_idx() as usize;
    let i = gpu::block_idx() as u64 * 2 * B as u64 + tid as u64;
    // SAFETY: the caller's contract covers n elements.
    let (a, b) = unsafe { (load_or_identity::<T, Op>(input, n, i), load_or_identity::<T, Op>(input, n, i + B as u64)) };
    // SAFETY: none; the second tile is the bug.
    unsafe {
        if read == 0 {
            s.store(tid, a);
            s.store(tid + B as usize, b); // BUG(shared-write): past the launch's B elements
            gpu::sync_threads();
            thread0_sums::<T, Op>(s, 2 * B as usize, out);
        } else {
            s.store(tid, Op::combine(a, b));
            gpu::sync_threads();
            let other = s.load(tid + B as usize); // BUG(shared-read): there is no second tile
            s.store(tid, Op::combine(s.load(tid), other));
            gpu::sync_threads();
            thread0_sums::<T, Op>(s, B as usize, out);
        }
    }
}

/// Wrong: loads `input[block * B + tid]` with no check against `n`.
///
/// The last block reads past the end of the buffer; on a GPU that reads
/// whatever lies there (or faults), the emulator reports
/// `GlobalOutOfBounds` with the address.
///
/// # Safety
/// None: reading past `n` is the bug. `out` has one slot per block, and
/// the launch gives `B / 32 * size_of::<T>()` bytes of shared memory.
pub unsafe fn missing_tail_guard<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, out: *mut T) {
    let _ = n; // never compared with the index below
    // SAFETY: none; see above.
    let v = unsafe { global::load(input.add(global_index::<B>() as usize)) }; // BUG(global-read): may be >= n
    let total = block_total::<T, Op, B>(v, Shared::dynamic());
    if gpu::thread_idx() == 0 {
        // SAFETY: one slot per block.
        unsafe { global::store(out.add(gpu::block_idx() as usize), total) };
    }
}

/// Wrong: lanes past `n` return, then the rest shuffle with `FULL_MASK`.
///
/// Lanes that read from a lane that has exited get an undefined value (an
/// H200 neither hangs nor complains: CUDA requires only the non-exited
/// lanes named in the mask to take part). The emulator is stricter: every
/// lane a mask names must take part, so it reports `WarpCollective`,
/// naming a lane that exited. Writes one sum per warp to
/// `out[global warp index]`.
///
/// # Safety
/// `input` holds `n` elements, `out` one per warp of the grid.
pub unsafe fn return_before_shuffle<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, out: *mut T) {
    let i = global_index::<B>();
    if i >= n {
        return; // these lanes skip the shuffles the others wait in
    }
    // SAFETY: i < n.
    let mut v = unsafe { global::load(input.add(i as usize)) };
    let mut offset = 16;
    while offset > 0 {
        v = Op::combine(v, warp::shfl_down(v, offset)); // BUG(shuffle): names lanes that returned
        offset /= 2;
    }
    if gpu::lane() == 0 {
        // SAFETY: one slot per warp.
        unsafe { global::store(out.add((i / 32) as usize), v) };
    }
}

/// Wrong: thread 0 of each block spins on `*flag`, which nobody sets.
///
/// On a GPU the kernel never ends; the emulator reports `Stuck` after
/// `EmuConfig::spin_limit` spins with no other progress.
///
/// # Safety
/// `flag` is one `u32` of device memory, `out` one slot per block.
pub unsafe fn wait_for_unset_flag<T: Element, Op: Monoid<T>, const B: u32>(flag: *const u32, out: *mut T) {
    if gpu::thread_idx() == 0 {
        // SAFETY: caller's contract.
        while unsafe { atomic::load_acquire_u32(flag) } == 0 {} // BUG(spin): nobody sets it
    }
    gpu::sync_threads();
    if gpu::thread_idx() == 0 {
        // SAFETY: one slot per block.
        unsafe { global::store(out.add(gpu::block_idx() as usize), Op::identity()) };
    }
}

/// Wrong: the classic shared-memory tree (sequential addressing) with the
/// barrier between steps left out.
///
/// ```text
/// s: [a0 a1 ... a127 | a128 ... a255]   step 128: s[t] += s[t + 128]
///                                        (no barrier)
///                                        step 64:  s[t] += s[t + 64]  <- may read
///                                        s[t + 64] before thread t + 64 wrote it
/// ```
/// Threads of different warps run in no fixed order, so a step can read a
/// slot before the previous step wrote it; the emulator reports the
/// `DataRace` with both threads.
///
/// # Safety
/// `input` holds `n` elements, `out` one per block; `B * size_of::<T>()`
/// bytes of shared memory.
pub unsafe fn tree_without_barrier<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, out: *mut T) {
    let s = Shared::<T>::dynamic();
    let tid = gpu::thread_idx() as usize;
    // SAFETY (block): indices below B; input covers n elements.
    unsafe {
        s.store(tid, load_or_identity::<T, Op>(input, n, global_index::<B>()));
        gpu::sync_threads();
        let mut stride = B as usize / 2;
        while stride > 0 {
            if tid < stride {
                s.store(tid, Op::combine(s.load(tid), s.load(tid + stride))); // BUG(race)
            }
            // the bug: gpu::sync_threads() belongs here
            stride /= 2;
        }
        if tid == 0 {
            global::store(out.add(gpu::block_idx() as usize), s.load(0));
        }
    }
}

/// Per-quarter-warp weights, sized for one warp (the bug in
/// [`lookup_past_table`]).
const QUARTER_WEIGHTS: [u32; 4] = [1, 3, 5, 7];

/// Wrong: scales each element by a weight looked up per quarter-warp in a
/// table sized for one warp, so threads 32 and up index past its end.
///
/// On the GPU the bounds check traps (`panic = "immediate-abort"`); the
/// emulator reports `Panic` with the index message.
///
/// # Safety
/// `input` holds `n` elements, `out` as many as the grid has threads.
pub unsafe fn lookup_past_table<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, out: *mut T) {
    let i = global_index::<B>();
    // SAFETY: the caller's contract covers n elements.
    let v = unsafe { load_or_identity::<T, Op>(input, n, i) };
    let w = QUARTER_WEIGHTS[(gpu::thread_idx() / 8) as usize]; // BUG(table): only 4 quarters
    // SAFETY: one slot per thread of the grid.
    unsafe { global::store(out.add(i as usize), Op::combine(v, T::from_u64(w as u64))) };
}

/// Wrong: three misaligned accesses, chosen by `which`:
///
/// * `0`: a 16-byte vector load ([`global::load_vec`]) one element (4
///   bytes) past a 16-byte boundary;
/// * `1`: a 4-byte load through a pointer 2 bytes into an element;
/// * `2`: 8-byte shared stores placed 4 bytes into shared memory.
///
/// Each is a "misaligned address" error on a GPU; the emulator reports
/// `Misaligned` with the address and width.
///
/// # Safety
/// None: the misalignment is the bug. `input` holds `n >= 5 * B * grid`
/// elements, `out` one per thread of the grid; `8 * B + 8` bytes of shared
/// memory.
pub unsafe fn misaligned<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, which: u32, out: *mut T) {
    let _ = n;
    let i = global_index::<B>() as usize;
    let tid = gpu::thread_idx() as usize;
    // SAFETY: none; see above.
    let v = unsafe {
        match which {
            0 => {
                // 4 bytes past a 16-byte boundary:
                let q = global::load_vec::<T, 4>(input.wrapping_add(4 * i + 1)); // BUG(vector)
                Op::combine(Op::combine(q[0], q[1]), Op::combine(q[2], q[3]))
            }
            1 => global::load((input as *const u8).wrapping_add(4 * i + 2) as *const T), // BUG(scalar)
            _ => {
                let wide = Shared::<u32>::dynamic().after::<u64>(1); // u64s at byte 4:
                wide.store(tid, i as u64); // BUG(shared-u64)
                T::from_u64(wide.load(tid))
            }
        }
    };
    // SAFETY: one slot per thread of the grid.
    unsafe { global::store(out.add(i), v) };
}

/// Reduce tile `tile` (elements `tile * B ..`) and chain the block totals:
/// `out[tile] = out[tile - 1] + total`, after waiting for `flags[tile - 1]`;
/// then set `flags[tile]`.
///
/// # Safety
/// `input` holds `n` elements, `flags` and `out` one per tile; the flags
/// start at zero; `B / 32 * size_of::<T>()` bytes of shared memory at
/// `slots`.
#[inline(always)]
unsafe fn chain_tile<T: Element, Op: Monoid<T>, const B: u32>(
    input: *const T,
    n: u64,
    flags: *mut u32,
    out: *mut T,
    tile: u32,
    slots: Shared<T>,
) {
    let i = tile as u64 * B as u64 + gpu::thread_idx() as u64;
    // SAFETY: the caller's contract covers n elements.
    let v = unsafe { load_or_identity::<T, Op>(input, n, i) };
    let total = block_total::<T, Op, B>(v, slots);
    if gpu::thread_idx() == 0 {
        let t = tile as usize;
        // SAFETY (block): t and t - 1 are tiles of the grid.
        unsafe {
            let mut prefix = total;
            if t > 0 {
                while atomic::load_acquire_u32(flags.add(t - 1)) == 0 {}
                prefix = Op::combine(global::load(out.add(t - 1)), total);
            }
            global::store(out.add(t), prefix);
            atomic::store_release_u32(flags.add(t), 1);
        }
    }
}

/// Wrong under limited residency: block `b` chains after block `b - 1`,
/// waiting for its flag, assuming blocks start in index order.
///
/// Nothing guarantees that order. If block `b` is resident and spinning
/// while block `b - 1` has not started and cannot (no free slot), the grid
/// deadlocks. The emulator starts blocks in a seeded order and, with
/// `resident_blocks: 1`, reports `Stuck`. [`chained_tickets`] is the fix.
///
/// Writes the inclusive prefix of the block totals to `out`.
///
/// # Safety
/// As [`chained_tickets`], without the counter.
pub unsafe fn chained_by_block_index<T: Element, Op: Monoid<T>, const B: u32>(
    input: *const T,
    n: u64,
    flags: *mut u32,
    out: *mut T,
) {
    // SAFETY: forwarded contract.
    unsafe { chain_tile::<T, Op, B>(input, n, flags, out, gpu::block_idx(), Shared::dynamic()) }
}

/// Correct: blocks chained in the order they start, through tickets.
///
/// Thread 0 takes a ticket with `atomic::add` on `counter` and the block
/// works on tile `ticket`, so every block it waits for (ticket - 1) has
/// already started and will finish: forward progress whatever the start
/// order and residency. Writes `out[t]` = total of tiles `0 ..= t`.
///
/// # Safety
/// `input` holds `n` elements; `flags` and `out` hold one per block
/// (`grid = ceil(n / B)`); `counter` and `flags` start at zero;
/// `B / 32 * size_of::<T>() + 4` bytes of shared memory.
pub unsafe fn chained_tickets<T: Element, Op: Monoid<T>, const B: u32>(
    input: *const T,
    n: u64,
    counter: *mut u32,
    flags: *mut u32,
    out: *mut T,
) {
    let slots = Shared::<T>::dynamic();
    let ticket = slots.after::<u32>((B / 32) as usize);
    if gpu::thread_idx() == 0 {
        // SAFETY: counter is device memory; the ticket slot follows the
        // reduction slots.
        unsafe { ticket.store(0, atomic::add(counter, 1u32)) };
    }
    gpu::sync_threads();
    // SAFETY: written before the barrier; forwarded contract.
    unsafe {
        let tile = ticket.load(0);
        chain_tile::<T, Op, B>(input, n, flags, out, tile, slots);
    }
}

/// Correct: the lectures' unrolled last warp done right: every step reads
/// both operands, `warp::sync`, writes, `warp::sync`.
///
/// ```text
/// s[0..B] -> (barriers) -> s[0..64] -> warp 0, offsets 32 16 8 4 2 1:
///     a = s[t]; b = s[t + off]; sync; s[t] = a + b; sync
/// ```
/// All 32 lanes take part (lanes `>= off` compute values nobody reads), so
/// the masks are full; the syncs order each step's reads before its writes
/// and its writes before the next step's reads. Writes one total per block.
///
/// # Safety
/// `input` holds `n` elements, `out` one per block; `B * size_of::<T>()`
/// bytes of shared memory; `B >= 64`.
pub unsafe fn synced_warp_tail<T: Element, Op: Monoid<T>, const B: u32>(input: *const T, n: u64, out: *mut T) {
    const { assert!(B.is_power_of_two() && B >= 64 && B <= 1024, "block size must be a power of two in 64..=1024") };
    let s = Shared::<T>::dynamic();
    let tid = gpu::thread_idx() as usize;
    // SAFETY (block): indices below B; input covers n elements.
    unsafe {
        s.store(tid, load_or_identity::<T, Op>(input, n, global_index::<B>()));
        gpu::sync_threads();
        let mut stride = B as usize / 2;
        while stride >= 64 {
            if tid < stride {
                s.store(tid, Op::combine(s.load(tid), s.load(tid + stride)));
            }
            gpu::sync_threads();
            stride /= 2;
        }
        if tid < 32 {
            let mut off = 32;
            while off > 0 {
                let a = s.load(tid);
                let b = s.load(tid + off);
                warp::sync(FULL_MASK);
                s.store(tid, Op::combine(a, b));
                warp::sync(FULL_MASK);
                off /= 2;
            }
            if tid == 0 {
                global::store(out.add(gpu::block_idx() as usize), s.load(0));
            }
        }
    }
}

/// Correct: one block walks all tiles keeping a running total (carry) in
/// shared memory. Every thread reads the carry to offset its element; the
/// barrier inside the tile's block reduction orders those reads before
/// thread 0 reads and updates the carry; a barrier ends the tile.
///
/// Writes `out[i] = input[i] + (total of the tiles before i's)` and the
/// total of everything to `total[0]`.
///
/// # Safety
/// One block. `input` and `out` hold `n` elements, `total` one;
/// `B / 32 * size_of::<T>() + size_of::<T>()` bytes of shared memory.
pub unsafe fn running_carry<T: Element, Op: Monoid<T>, const B: u32>(
    input: *const T,
    n: u64,
    out: *mut T,
    total: *mut T,
) {
    let slots = Shared::<T>::dynamic();
    let carry = slots.after::<T>((B / 32) as usize);
    let tid = gpu::thread_idx();
    // SAFETY (block): the carry slot follows the reduction slots; indices
    // are checked against n.
    unsafe {
        if tid == 0 {
            carry.store(0, Op::identity());
        }
        gpu::sync_threads();
        let mut base = 0u64;
        while base < n {
            let i = base + tid as u64;
            let v = load_or_identity::<T, Op>(input, n, i);
            let c = carry.load(0); // every thread reads the carry
            if i < n {
                global::store(out.add(i as usize), Op::combine(c, v));
            }
            let t = block_total::<T, Op, B>(v, slots); // its barrier orders the reads above
            if tid == 0 {
                carry.store(0, Op::combine(carry.load(0), t));
            }
            gpu::sync_threads();
            base += B as u64;
        }
        if tid == 0 {
            global::store(total, carry.load(0));
        }
    }
}

/// Values of one lane for [`shuffle_lanes`]: every shuffle mode, with
/// constant and per-lane arguments, of scalars and of pairs.
///
/// Thread `g` of the grid reads `a = input[2g]`, `b = input[2g + 1]` and
/// writes [`SHUFFLE_RESULTS`] values to `out[g * SHUFFLE_RESULTS ..]`, in
/// this order (arguments as functions of the lane `l`):
///
/// ```text
///  0 down(a, 1)   1 down(a, 3)   2 down(a, 16)  3 down(a, 31)  4 down(a, l % 4)
///  5 up(a, 1)     6 up(a, 5)     7 up(a, 16)    8 up(a, l / 8)
///  9 xor(a, 1)   10 xor(a, 6)   11 xor(a, 31)  12 xor(a, 17)
/// 13 idx(a, 0)   14 idx(a, 17)  15 idx(a, (7l + 3) % 32)
/// 16,17 down((a, b), 2)   18,19 up((a, b), 4)   20,21 xor((a, b), 9)
/// 22,23 idx((a, b), 31 - l)
/// 24 down(a, 33) 25 up(a, 3l)   26 xor(a, 40)  27 idx(a, 32 + (l ^ 5))
/// ```
///
/// The last four pass offsets and lanes of 32 and more: `shfl.sync` uses
/// their low five bits (PTX `bval = b[4:0]`), so `down(a, 33)` reads lane
/// `l + 1`, not the lane's own value.
///
/// # Safety
/// `input` holds `2 * B * grid` elements, `out` `SHUFFLE_RESULTS * B * grid`.
pub unsafe fn shuffle_lanes<T: warp::Shuffle, const B: u32>(input: *const T, out: *mut T) {
    let g = global_index::<B>() as usize;
    let l = gpu::lane();
    // SAFETY: the caller's contract.
    let (a, b) = unsafe { (global::load(input.add(2 * g)), global::load(input.add(2 * g + 1))) };
    let (p0, p1) = warp::shfl_down((a, b), 2);
    let (p2, p3) = warp::shfl_up((a, b), 4);
    let (p4, p5) = warp::shfl_xor((a, b), 9);
    let (p6, p7) = warp::shfl_idx((a, b), 31 - l);
    let r: [T; SHUFFLE_RESULTS] = [
        warp::shfl_down(a, 1),
        warp::shfl_down(a, 3),
        warp::shfl_down(a, 16),
        warp::shfl_down(a, 31),
        warp::shfl_down(a, l % 4),
        warp::shfl_up(a, 1),
        warp::shfl_up(a, 5),
        warp::shfl_up(a, 16),
        warp::shfl_up(a, l / 8),
        warp::shfl_xor(a, 1),
        warp::shfl_xor(a, 6),
        warp::shfl_xor(a, 31),
        warp::shfl_xor(a, 17),
        warp::shfl_idx(a, 0),
        warp::shfl_idx(a, 17),
        warp::shfl_idx(a, (7 * l + 3) % 32),
        p0,
        p1,
        p2,
        p3,
        p4,
        p5,
        p6,
        p7,
        warp::shfl_down(a, 33),
        warp::shfl_up(a, 3 * l),
        warp::shfl_xor(a, 40),
        warp::shfl_idx(a, 32 + (l ^ 5)),
    ];
    for (k, v) in r.into_iter().enumerate() {
        // SAFETY: the caller's contract.
        unsafe { global::store(out.add(g * SHUFFLE_RESULTS + k), v) };
    }
}

/// Values each thread of [`shuffle_lanes`] writes.
pub const SHUFFLE_RESULTS: usize = 28;
