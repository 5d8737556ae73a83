//! Utility kernels: data generated on the device (for inputs too large to
//! build on the host and upload quickly).

use crate::gpu::{self, global};
use crate::ops::Element;

/// The splitmix64 finaliser: a cheap, well-mixed hash of a 64-bit index.
#[inline(always)]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Element `i` of the pattern [`fill_hash`] writes: `mix64(i ^ seed) % 2001`
/// as `T` (so 0 ..= 2000, exact in every element type).
#[inline(always)]
pub fn hash_value<T: Element>(i: u64, seed: u64) -> T {
    T::from_u64(mix64(i ^ seed) % 2001)
}

/// `out[i] = hash_value(i, seed)` for `i < n`, grid-stride.
///
/// # Safety
/// `out` holds `n` elements of device memory.
pub unsafe fn fill_hash<T: Element, const B: u32>(out: *mut T, n: u64, seed: u64) {
    let stride = B as u64 * gpu::grid_dim() as u64;
    let mut i = gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64;
    while i < n {
        // SAFETY: i < n.
        unsafe { global::store(out.add(i as usize), hash_value::<T>(i, seed)) };
        i += stride;
    }
}

#[allow(unused_imports)]
use crate::ops::Sum;

/// Write `words` (at most 4) 32-bit words to `dst`, stream-ordered: word
/// `i` is bits `32*i ..` of `lo` (`i` < 2) or `hi`. For the host to set a
/// small value (a reduction's identity before atomic combines) without a
/// synchronous copy. Launch one block of `B` >= 4 threads.
///
/// # Safety
/// `dst` holds `words` 4-byte aligned words.
pub unsafe fn set_words<const B: u32>(dst: *mut u32, lo: u64, hi: u64, words: u32) {
    let i = gpu::thread_idx();
    if gpu::block_idx() == 0 && i < words && i < 4 {
        let w = if i < 2 { lo } else { hi } >> (32 * (i % 2));
        // SAFETY: i < words (caller).
        unsafe { global::store(dst.add(i as usize), w as u32) };
    }
}

entries! {
    util_fill_hash(out: *mut T, n: u64, seed: u64) => fill_hash::<T, {B}>;
        ops [any = Sum] types [i32, u32, i64, u64, f32, f64] blocks [256];
    // `any` and `u32` only name the instance.
    util_set_words(dst: *mut u32, lo: u64, hi: u64, words: u32) => set_words::<{B}>;
        ops [any = Sum] types [u32] blocks [32];
}
