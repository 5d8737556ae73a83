//! The default reduction's tuning policy, as data: block size, how many
//! elements a thread takes in its first iteration, and the grid rule. The
//! kernel reads [`UNROLL`]; the host planner (`gpuprim::reduce`) reads the
//! rest. What was measured and tried: `docs/tuning/reduce.md`.

/// Threads per block when none is set (H200, `sum_into` of 2^28 i32: 4563
/// GB/s, 108% of the copy's rate counted read + write; `max` of 2^26 f32 at
/// 128..1024 threads within 3%).
pub const DEFAULT_BLOCK: u32 = 256;

/// 16-byte vector loads in flight per thread per iteration of the
/// vectorised kernel: 64 bytes per thread, enough to cover HBM3e's latency
/// with a full grid.
pub const UNROLL: usize = 4;

/// Elements of `elem_bytes` bytes a thread loads in its first iteration:
/// [`UNROLL`] 16-byte vectors (16 four-byte elements, 64 one-byte ones).
pub const fn items_per_thread(elem_bytes: usize) -> u64 {
    let per = (UNROLL * 16) / if elem_bytes == 0 { 1 } else { elem_bytes };
    if per < 16 { 16 } else { per as u64 }
}

/// Resident threads per multiprocessor the grid fills (2048 on every GPU
/// from Volta to Hopper).
pub const THREADS_PER_SM: u64 = 2048;

/// Above this many elements the grid is two waves of full multiprocessors:
/// 0.25% faster at 2^30 on an H200, 0.2% slower at 2^28.
pub const TWO_WAVES_ABOVE: u64 = 1 << 28;

/// The grid of the grid-stride kernels: every multiprocessor full (one
/// wave, two above [`TWO_WAVES_ABOVE`]), but no more blocks than have work
/// for their first iteration (`per_thread` elements per thread).
pub const fn grid(n: u64, block: u32, multiprocessors: u32, per_thread: u64) -> u64 {
    let waves = if n > TWO_WAVES_ABOVE { 2 } else { 1 };
    let full = multiprocessors as u64 * (THREADS_PER_SM / block as u64) * waves;
    let full = if full == 0 { 1 } else { full };
    let wanted = n.div_ceil(block as u64 * per_thread);
    if wanted < 1 {
        1
    } else if wanted > full {
        full
    } else {
        wanted
    }
}
