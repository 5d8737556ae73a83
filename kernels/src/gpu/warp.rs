//! Warp scope: shuffles and the warp barrier.
//!
//! Since Volta the 32 lanes of a warp are not guaranteed to execute in
//! lockstep, so warp-level communication goes through `shfl.sync` (which both
//! exchanges and synchronises the named lanes) or through shared memory with
//! [`sync`] between the steps. The emulator runs lanes in a seeded,
//! non-lockstep order and reports shuffles whose named lanes do not all
//! take part.

use super::{FULL_MASK, imp};

/// How a shuffle picks its source lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    /// From `lane + delta`; lanes past 31 keep their own value.
    Down,
    /// From `lane - delta`; lanes below 0 keep their own value.
    Up,
    /// From `lane ^ mask` (butterfly).
    Xor,
    /// From lane `src` (broadcast).
    Idx,
}

/// A value that can cross a shuffle: plain data of 1, 2 or a multiple of 4
/// bytes up to 32, moved as 32-bit words (a 1- or 2-byte value in the low
/// bytes of one word). Values over 16 bytes (a reduction's 24- or 32-byte
/// accumulators) take more shuffles; the scans and the single-pass layer
/// keep to 16.
///
/// # Safety
/// The type must be `Copy` plain data of size 1, 2, 4, 8, 12, 16, 20, 24,
/// 28 or 32 with no padding, valid for any bit pattern that another lane's
/// value of the type has.
pub unsafe trait Shuffle: Copy {}

// SAFETY: plain numbers of 1 or 2 bytes.
unsafe impl Shuffle for i8 {}
// SAFETY: as above.
unsafe impl Shuffle for u8 {}
// SAFETY: as above.
unsafe impl Shuffle for i16 {}
// SAFETY: as above.
unsafe impl Shuffle for u16 {}
// SAFETY: as above (IEEE half and bfloat16 bits).
unsafe impl Shuffle for half::f16 {}
// SAFETY: as above.
unsafe impl Shuffle for half::bf16 {}

// SAFETY: plain numbers of 4 or 8 bytes.
unsafe impl Shuffle for i32 {}
// SAFETY: as above.
unsafe impl Shuffle for u32 {}
// SAFETY: as above.
unsafe impl Shuffle for f32 {}
// SAFETY: as above.
unsafe impl Shuffle for i64 {}
// SAFETY: as above.
unsafe impl Shuffle for u64 {}
// SAFETY: as above.
unsafe impl Shuffle for f64 {}
// SAFETY: pairs of shuffleable words without padding (both halves equal size).
unsafe impl<A: Shuffle> Shuffle for (A, A) {}

/// Shuffle `v` among the lanes of `mask`; every lane named in `mask` must
/// make the same call.
#[inline(always)]
#[track_caller]
pub fn shfl_sync<T: Shuffle>(mask: u32, mode: ShflMode, v: T, arg: u32) -> T {
    const { assert!(matches!(core::mem::size_of::<T>(), 1 | 2 | 4 | 8 | 12 | 16 | 20 | 24 | 28 | 32)) };
    // Sized at compile time: up to 16 bytes in four words, as always.
    if core::mem::size_of::<T>() <= 16 {
        shfl_words::<T, 4>(mask, mode, v, arg)
    } else {
        shfl_words::<T, 8>(mask, mode, v, arg)
    }
}

/// [`shfl_sync`] through `N` words (at least the value's size).
#[inline(always)]
#[track_caller]
fn shfl_words<T: Shuffle, const N: usize>(mask: u32, mode: ShflMode, v: T, arg: u32) -> T {
    let size = core::mem::size_of::<T>();
    // Never taken: `shfl_sync` picks N for the size (a constant, so the
    // branch it does not take is compiled away).
    if size > 4 * N {
        return v;
    }
    let n = size.div_ceil(4);
    let mut words = [0u32; N];
    // SAFETY: T is `size` bytes of plain data (trait contract); the words
    // hold 4 N >= size.
    unsafe { core::ptr::copy_nonoverlapping(&v as *const T as *const u8, words.as_mut_ptr() as *mut u8, size) };
    imp::shuffle(mask, mode, arg, &mut words[..n]);
    // SAFETY: the words are another lane's value of T.
    unsafe { core::ptr::read_unaligned(words.as_ptr() as *const T) }
}

/// `__shfl_down_sync(FULL_MASK, v, delta)`.
#[inline(always)]
#[track_caller]
pub fn shfl_down<T: Shuffle>(v: T, delta: u32) -> T {
    shfl_sync(FULL_MASK, ShflMode::Down, v, delta)
}
/// `__shfl_up_sync(FULL_MASK, v, delta)`.
#[inline(always)]
#[track_caller]
pub fn shfl_up<T: Shuffle>(v: T, delta: u32) -> T {
    shfl_sync(FULL_MASK, ShflMode::Up, v, delta)
}
/// `__shfl_xor_sync(FULL_MASK, v, lane_mask)`.
#[inline(always)]
#[track_caller]
pub fn shfl_xor<T: Shuffle>(v: T, lane_mask: u32) -> T {
    shfl_sync(FULL_MASK, ShflMode::Xor, v, lane_mask)
}
/// `__shfl_sync(FULL_MASK, v, src)`.
#[inline(always)]
#[track_caller]
pub fn shfl_idx<T: Shuffle>(v: T, src: u32) -> T {
    shfl_sync(FULL_MASK, ShflMode::Idx, v, src)
}

/// `__ballot_sync(FULL_MASK, pred)`: bit `l` set where lane `l`'s `pred`
/// holds; every lane of the warp must make the call.
#[inline(always)]
#[track_caller]
pub fn ballot(pred: bool) -> u32 {
    imp::ballot(FULL_MASK, pred)
}

/// Warp barrier (`__syncwarp(mask)`, PTX `bar.warp.sync`): orders memory
/// accesses of the named lanes before it against those after it.
#[inline(always)]
#[track_caller]
pub fn sync(mask: u32) {
    imp::sync_warp(mask)
}
