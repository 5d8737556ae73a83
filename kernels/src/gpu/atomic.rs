//! Atomic operations on global memory, and memory fences.
//!
//! Integer operations use `core::sync::atomic`, which rustc lowers to
//! `atom.*` on nvptx64; float addition, acquire loads and release stores
//! are written as the PTX instructions themselves (`atom.add.f32`,
//! `ld.acquire.gpu`, `st.release.gpu`), since the device scope (`.gpu`)
//! is the one multi-block algorithms need. On the host they are the
//! corresponding `std` atomics, and each is a point where the emulator may
//! switch threads.

use super::imp;
use core::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};

/// Types with a native atomic add on the device.
pub trait AtomicAdd: Copy {
    /// `old = *p; *p = old + v; old` as one atomic step (integers wrap).
    ///
    /// # Safety
    /// `p` must point into a live device allocation, aligned for `Self`.
    unsafe fn atomic_add(p: *mut Self, v: Self) -> Self;
}

macro_rules! int_add {
    ($t:ty, $atomic:ty) => {
        impl AtomicAdd for $t {
            #[inline(always)]
            #[track_caller]
            unsafe fn atomic_add(p: *mut Self, v: Self) -> Self {
                imp::global_check(p as *const u8, core::mem::size_of::<Self>(), true);
                // SAFETY: aligned, live (caller); same size as the atomic.
                let a = unsafe { <$atomic>::from_ptr(p as *mut _) };
                let old = a.fetch_add(v as _, Ordering::Relaxed) as $t;
                imp::atomic_point();
                old
            }
        }
    };
}
int_add!(u32, AtomicU32);
int_add!(i32, AtomicU32);
int_add!(u64, AtomicU64);
int_add!(i64, AtomicU64);

/// 1- and 2-byte types have no native atomic add: a compare-and-swap loop
/// on the value's own bytes (LLVM widens it to the aligned 32-bit word on
/// nvptx64). The reductions never take this path (their atomic finish
/// needs a 4- or 8-byte accumulator); it makes every element type atomic.
macro_rules! narrow_add {
    ($($t:ty => $atomic:ty, $from:expr, $to:expr, |$a:ident, $b:ident| $add:expr;)*) => {$(
        impl AtomicAdd for $t {
            #[inline(always)]
            #[track_caller]
            unsafe fn atomic_add(p: *mut Self, v: Self) -> Self {
                imp::global_check(p as *const u8, core::mem::size_of::<Self>(), true);
                // SAFETY: aligned, live (caller); same size as the atomic.
                let a = unsafe { <$atomic>::from_ptr(p as *mut _) };
                let (from, to) = ($from, $to);
                let mut old = a.load(Ordering::Relaxed);
                loop {
                    let ($a, $b): ($t, $t) = (from(old), v);
                    match a.compare_exchange_weak(old, to($add), Ordering::Relaxed, Ordering::Relaxed) {
                        Ok(_) => break,
                        Err(cur) => old = cur,
                    }
                }
                imp::atomic_point();
                from(old)
            }
        }
    )*};
}
narrow_add! {
    i8 => AtomicU8, |b: u8| b as i8, |x: i8| x as u8, |a, b| a.wrapping_add(b);
    u8 => AtomicU8, |b: u8| b, |x: u8| x, |a, b| a.wrapping_add(b);
    i16 => AtomicU16, |b: u16| b as i16, |x: i16| x as u16, |a, b| a.wrapping_add(b);
    u16 => AtomicU16, |b: u16| b, |x: u16| x, |a, b| a.wrapping_add(b);
    half::f16 => AtomicU16, half::f16::from_bits, half::f16::to_bits,
        |a, b| half::f16::from_f32(a.to_f32() + b.to_f32());
    half::bf16 => AtomicU16, half::bf16::from_bits, half::bf16::to_bits,
        |a, b| half::bf16::from_f32(a.to_f32() + b.to_f32());
}

impl AtomicAdd for f32 {
    #[inline(always)]
    #[track_caller]
    unsafe fn atomic_add(p: *mut Self, v: Self) -> Self {
        imp::global_check(p as *const u8, 4, true);
        // SAFETY: caller's contract.
        let old = unsafe { imp::atomic_add_f32(p, v) };
        imp::atomic_point();
        old
    }
}
impl AtomicAdd for f64 {
    #[inline(always)]
    #[track_caller]
    unsafe fn atomic_add(p: *mut Self, v: Self) -> Self {
        imp::global_check(p as *const u8, 8, true);
        // SAFETY: caller's contract.
        let old = unsafe { imp::atomic_add_f64(p, v) };
        imp::atomic_point();
        old
    }
}

/// Atomic add; see [`AtomicAdd`].
///
/// # Safety
/// `p` must point into a live device allocation, aligned for `T`.
#[inline(always)]
#[track_caller]
pub unsafe fn add<T: AtomicAdd>(p: *mut T, v: T) -> T {
    // SAFETY: forwarded contract.
    unsafe { T::atomic_add(p, v) }
}

/// Atomic add with acquire-release semantics at device scope
/// (`atom.acq_rel.gpu.add.u32`): writes before it are visible to whoever
/// observes its result, and it sees every write released before the values
/// it observes. The "last block" ticket of a reduction.
///
/// # Safety
/// `p` must point into a live device allocation, 4-byte aligned.
#[inline(always)]
#[track_caller]
pub unsafe fn add_acq_rel_u32(p: *mut u32, v: u32) -> u32 {
    imp::global_check(p as *const u8, 4, true);
    // SAFETY: caller's contract.
    let old = unsafe { imp::add_acq_rel_u32(p, v) };
    imp::atomic_point();
    old
}

/// Compare-and-swap on 32 bits: if `*p == current` store `new`; returns the
/// old value.
///
/// # Safety
/// `p` must point into a live device allocation, 4-byte aligned.
#[inline(always)]
#[track_caller]
pub unsafe fn cas_u32(p: *mut u32, current: u32, new: u32) -> u32 {
    imp::global_check(p as *const u8, 4, true);
    // SAFETY: caller's contract.
    let a = unsafe { AtomicU32::from_ptr(p) };
    let old = match a.compare_exchange(current, new, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(v) | Err(v) => v,
    };
    imp::atomic_point();
    old
}

/// Compare-and-swap on 64 bits; see [`cas_u32`].
///
/// # Safety
/// `p` must point into a live device allocation, 8-byte aligned.
#[inline(always)]
#[track_caller]
pub unsafe fn cas_u64(p: *mut u64, current: u64, new: u64) -> u64 {
    imp::global_check(p as *const u8, 8, true);
    // SAFETY: caller's contract.
    let old = unsafe { imp::cas_u64(p, current, new) };
    imp::atomic_point();
    old
}

/// Relaxed strong load at device scope (`ld.relaxed.gpu`): the current
/// value as this GPU's L2 holds it (never a stale L1 line), single-copy
/// atomic, but ordering nothing around it. Unlike
/// [`load_acquire_u64`] it does not invalidate the multiprocessor's L1
/// (an acquire load on sm_90 is followed by `CCTL.IVALL`), so it is the
/// load to spin with when the value read is itself the message.
/// A spin loop must read through this function or the acquire loads (the
/// emulator switches threads here).
///
/// # Safety
/// `p` must point into a live device allocation, 8-byte aligned.
#[inline(always)]
#[track_caller]
pub unsafe fn load_relaxed_u64(p: *const u64) -> u64 {
    imp::global_check(p as *const u8, 8, false);
    imp::spin_point();
    // SAFETY: caller's contract.
    unsafe { imp::load_relaxed_u64(p) }
}

/// Two adjacent words in one relaxed strong load at device scope
/// (`ld.relaxed.gpu.v2.u64`): one 16-byte request instead of two 8-byte
/// ones. Each word is single-copy atomic; the pair is not (a reader may see
/// one word's old and the other's new content, as with two loads).
///
/// # Safety
/// `p` must point into a live device allocation, 16-byte aligned, with 16
/// readable bytes.
#[inline(always)]
#[track_caller]
pub unsafe fn load_relaxed_u64x2(p: *const u64) -> [u64; 2] {
    imp::global_check(p as *const u8, 16, false);
    imp::spin_point();
    // SAFETY: caller's contract.
    unsafe { imp::load_relaxed_u64x2(p) }
}

/// Load with acquire semantics at device scope (`ld.acquire.gpu`): reads
/// after it see every write that preceded the matching release store.
/// A spin loop must read its flag through this function (the emulator
/// switches threads here and reports a loop that can never end).
///
/// # Safety
/// `p` must point into a live device allocation, 4-byte aligned.
#[inline(always)]
#[track_caller]
pub unsafe fn load_acquire_u32(p: *const u32) -> u32 {
    imp::global_check(p as *const u8, 4, false);
    imp::spin_point();
    // SAFETY: caller's contract.
    unsafe { imp::load_acquire_u32(p) }
}

/// 64-bit [`load_acquire_u32`].
///
/// # Safety
/// `p` must point into a live device allocation, 8-byte aligned.
#[inline(always)]
#[track_caller]
pub unsafe fn load_acquire_u64(p: *const u64) -> u64 {
    imp::global_check(p as *const u8, 8, false);
    imp::spin_point();
    // SAFETY: caller's contract.
    unsafe { imp::load_acquire_u64(p) }
}

/// Store with release semantics at device scope (`st.release.gpu`): every
/// write before it is visible to a thread whose acquire load sees this one.
///
/// # Safety
/// `p` must point into a live device allocation, 4-byte aligned.
#[inline(always)]
#[track_caller]
pub unsafe fn store_release_u32(p: *mut u32, v: u32) {
    imp::global_check(p as *const u8, 4, true);
    // SAFETY: caller's contract.
    unsafe { imp::store_release_u32(p, v) };
    imp::atomic_point();
}

/// 64-bit [`store_release_u32`].
///
/// # Safety
/// `p` must point into a live device allocation, 8-byte aligned.
#[inline(always)]
#[track_caller]
pub unsafe fn store_release_u64(p: *mut u64, v: u64) {
    imp::global_check(p as *const u8, 8, true);
    // SAFETY: caller's contract.
    unsafe { imp::store_release_u64(p, v) };
    imp::atomic_point();
}

/// Device-scope fence (`__threadfence()`, PTX `fence.acq_rel.gpu`).
#[inline(always)]
pub fn fence_device() {
    imp::fence_device()
}
