//! Tuning of the by-key kernels (reduce-by-key, scan-by-key, run-length
//! encode, segmented scan): one place, read by the kernels, the `entries!`
//! list and the host plan.

/// Threads per block. Not yet measured on a GPU: the look-back scan's
/// default (`docs/tuning/scan.md`), where 256 threads won at 2^20 and up.
pub const BLOCK: u32 = 256;

/// Items per thread, for every key and value type: a thread keeps its keys
/// and values in registers (up to 8 + 8 bytes each), so 8 items are 128
/// bytes, as the look-back scan stages per thread. Not yet measured on a
/// GPU; a multiple of 4, so full tiles load with 16-byte vectors.
pub const ITEMS: usize = 8;

/// Elements of one tile at block size `b`.
pub const fn tile_len(b: u32) -> u64 {
    b as u64 * ITEMS as u64
}
