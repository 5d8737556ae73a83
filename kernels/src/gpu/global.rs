//! Global memory accesses.
//!
//! Plain loads and stores through these functions are ordinary `ld.global` /
//! `st.global` on the GPU; on the host the emulator checks each one against
//! the live device allocations, so an out-of-bounds access is an error, not
//! a read of whatever lies beyond.

use super::imp;

/// Read `*p`.
///
/// # Safety
/// `p` must point into a live device allocation, aligned for `T`.
#[inline(always)]
#[track_caller]
pub unsafe fn load<T: Copy>(p: *const T) -> T {
    imp::global_check(p as *const u8, core::mem::size_of::<T>(), false);
    // SAFETY: caller's contract; checked on the host.
    unsafe { p.read() }
}

/// Read `*p` with a `volatile` load (`ld.volatile.global`): served from L2,
/// never from a stale L1 line or a register, for data other blocks wrote
/// during this kernel (after an acquire that orders it).
///
/// # Safety
/// As [`load`].
#[inline(always)]
#[track_caller]
pub unsafe fn load_volatile<T: Copy>(p: *const T) -> T {
    imp::global_check(p as *const u8, core::mem::size_of::<T>(), false);
    // SAFETY: caller's contract; checked on the host.
    unsafe { p.read_volatile() }
}

/// Write `*p = v`.
///
/// # Safety
/// `p` must point into a live device allocation, aligned for `T`, that no
/// other thread accesses concurrently.
#[inline(always)]
#[track_caller]
pub unsafe fn store<T: Copy>(p: *mut T, v: T) {
    imp::global_check(p as *const u8, core::mem::size_of::<T>(), true);
    // SAFETY: caller's contract; checked on the host.
    unsafe { p.write(v) }
}

/// Write `v` to `*p` where `pred`, as one predicated store on the GPU
/// (no branch around it); `p` is not touched, and need not be valid,
/// where `pred` is false.
///
/// # Safety
/// As [`store`] where `pred`.
#[inline(always)]
#[track_caller]
pub unsafe fn store_if<T: Copy>(pred: bool, p: *mut T, v: T) {
    if pred {
        imp::global_check(p as *const u8, core::mem::size_of::<T>(), true);
    }
    // SAFETY: caller's contract.
    unsafe { imp::store_if(pred, p, v) }
}

/// Read `N` consecutive elements at once: one 16-byte vector load on the
/// GPU when `size_of::<[T; N]>() == 16` and `p` is 16-byte aligned, through
/// the read-only data path (`ld.global.nc`), so the input must not be
/// written during the kernel.
///
/// # Safety
/// As [`load`], for all `N` elements; `p` aligned to `size_of::<[T; N]>()`.
#[inline(always)]
#[track_caller]
pub unsafe fn load_vec<T: Copy, const N: usize>(p: *const T) -> [T; N] {
    imp::global_check(p as *const u8, core::mem::size_of::<[T; N]>(), false);
    // SAFETY: caller's contract.
    unsafe { imp::load_vec::<T, N>(p) }
}

/// Read `N` consecutive elements at once, like [`load_vec`] but through the
/// ordinary, coherent data path (`ld.global.v4`, no `.nc`): for data the
/// kernel itself writes later, such as the input of an in-place scan.
///
/// # Safety
/// As [`load_vec`].
#[inline(always)]
#[track_caller]
pub unsafe fn load_vec_coherent<T: Copy, const N: usize>(p: *const T) -> [T; N] {
    imp::global_check(p as *const u8, core::mem::size_of::<[T; N]>(), false);
    // SAFETY: caller's contract.
    unsafe { imp::load_vec_coherent::<T, N>(p) }
}

/// Write `N` consecutive elements at once: one 16-byte vector store on the
/// GPU when `size_of::<[T; N]>() == 16` and `p` is 16-byte aligned.
///
/// # Safety
/// As [`store`], for all `N` elements; `p` aligned to `size_of::<[T; N]>()`.
#[inline(always)]
#[track_caller]
pub unsafe fn store_vec<T: Copy, const N: usize>(p: *mut T, v: [T; N]) {
    imp::global_check(p as *const u8, core::mem::size_of::<[T; N]>(), true);
    // SAFETY: caller's contract.
    unsafe { imp::store_vec::<T, N>(p, v) }
}
