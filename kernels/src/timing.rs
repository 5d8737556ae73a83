//! Kernels that help the host measure GPU time.
//!
//! [`hold`] is the "blocking kernel" of NVIDIA's nvbench: the host queues it
//! first, then the start event, the work to time and the stop event, and only
//! then lets it finish. While it spins, the GPU cannot reach the start event,
//! so the host's cost of submitting each launch falls before the timed
//! interval instead of inside it: the events bracket GPU execution alone.
//! The host side is `Context::time_held` in the `gpuprim` crate.

use crate::gpu::{self, global};

/// The PTX entry name of [`hold`].
pub const HOLD_KERNEL: &str = "timing_hold_b32";

entries! {
    // One warp (`B` = 32), of which thread 0 does the waiting.
    timing_hold(flag: *const u32, timeout_ns: u64, timed_out: *mut u32) => hold::<{B}>;
        blocks [32];
}

/// Hold the stream: thread 0 of block 0 spins until the host sets `*flag`
/// to a nonzero value, or until `timeout_ns` nanoseconds have passed on
/// [`gpu::timer_ns`]; then it writes 1 to `*timed_out` and returns. Every
/// other thread returns at once. Launch it as one block of `B` (32) threads.
///
/// `flag` and `timed_out` are words of page-locked host memory mapped into
/// the device's address space: the host writes the flag while the kernel
/// runs, and reads `timed_out` once the stream is done. A timeout means the
/// host waited for the GPU (a synchronous copy or free, say) before it let
/// this kernel go, which deadlocks until then; the host reports it instead of
/// a timing.
///
/// The loads are `volatile` (`ld.volatile.global`), so each goes to memory
/// rather than a register or a stale cache line.
///
/// # Safety
/// `flag` and `timed_out` point at one live, device-accessible `u32` each.
pub unsafe fn hold<const B: u32>(flag: *const u32, timeout_ns: u64, timed_out: *mut u32) {
    if gpu::block_idx() != 0 || gpu::thread_idx() != 0 {
        return;
    }
    let start = gpu::timer_ns();
    // SAFETY: caller's contract.
    while unsafe { global::load_volatile(flag) } == 0 {
        if gpu::timer_ns().wrapping_sub(start) > timeout_ns {
            // SAFETY: caller's contract; no other thread writes it.
            unsafe { global::store(timed_out, 1) };
            return;
        }
    }
}
