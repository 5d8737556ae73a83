//! Utility kernels: data generated on the device (for inputs too large to
//! build on the host and upload quickly), and the small steps that finish
//! a reduction whose result stays on the device.

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

/// `sqrt(x)`, correctly rounded (`sqrt.rn` on the GPU, as `f32::sqrt`
/// on the host).
pub trait Sqrt: Element {
    fn sqrt(self) -> Self;
    fn div(self, o: Self) -> Self;
}
macro_rules! sqrt {
    ($($t:ty => $insn:literal, $reg:ident);*) => {$(
        impl Sqrt for $t {
            #[inline(always)]
            fn sqrt(self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    let r: $t;
                    // SAFETY: a register-to-register instruction.
                    unsafe { core::arch::asm!($insn, out($reg) r, in($reg) self, options(pure, nomem, nostack)) };
                    r
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    <$t>::sqrt(self)
                }
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
        }
    )*};
}
sqrt!(f32 => "sqrt.rn.f32 {0}, {1};", reg32; f64 => "sqrt.rn.f64 {0}, {1};", reg64);

/// `*p = sqrt(*p / divisor)`, or `0` when `divisor` is 0: the last step of
/// the L2 norm (`divisor` 1) and of the root mean square (`divisor` n) when
/// the sum of squares stays on the device. `divisor` converts to `T` as
/// `divisor as T` does (round to nearest). Launch one block of `B` threads.
///
/// # Safety
/// `p` holds one `T`.
pub unsafe fn sqrt_mean<T: Sqrt, const B: u32>(p: *mut T, divisor: u64) {
    if gpu::block_idx() == 0 && gpu::thread_idx() == 0 {
        // SAFETY: one T at p (caller).
        unsafe {
            let v = if divisor == 0 { T::ZERO } else { global::load(p).div(T::from_u64(divisor)).sqrt() };
            global::store(p, v);
        }
    }
}

/// `*out = *index` when it is below `n`; otherwise (no element beat the
/// reduction's identity: the input is empty, or every element is NaN)
/// `u64::MAX` for empty input and `0` (the first NaN) else. The last step
/// of argmin and argmax when the index stays on the device. `index` and
/// `out` may be the same. Launch one block of `B` threads.
///
/// # Safety
/// `index` and `out` each hold one `u64`.
pub unsafe fn arg_index<const B: u32>(index: *const u64, n: u64, out: *mut u64) {
    if gpu::block_idx() == 0 && gpu::thread_idx() == 0 {
        // SAFETY: one u64 at each (caller).
        unsafe {
            let i = global::load(index);
            global::store(
                out,
                if i < n {
                    i
                } else if n == 0 {
                    u64::MAX
                } else {
                    0
                },
            );
        }
    }
}

entries! {
    util_fill_hash(out: *mut T, n: u64, seed: u64) => fill_hash::<T, {B}>;
        types [i32, u32, i64, u64, f32, f64] blocks [256];
    util_set_words(dst: *mut u32, lo: u64, hi: u64, words: u32) => set_words::<{B}>;
        blocks [32];
    util_sqrt_mean(p: *mut T, divisor: u64) => sqrt_mean::<T, {B}>;
        types [f32, f64] blocks [32];
    util_arg_index(index: *const u64, n: u64, out: *mut u64) => arg_index::<{B}>;
        blocks [32];
}
