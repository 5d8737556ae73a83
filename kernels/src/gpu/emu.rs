//! Host implementation of the device API: calls into the CPU emulator.
//!
//! The emulator (in the `gpuprim` crate) runs each kernel thread as a
//! coroutine. Before it resumes a thread it installs that thread's ids and
//! its [`Hooks`] object with [`enter`]; the device API below reads them.
//! Calling a kernel outside the emulator panics with a clear message.

use super::warp::ShflMode;
use core::cell::Cell;
use core::panic::Location;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The ids of the running thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ids {
    pub thread: u32,
    pub block: u32,
    pub block_dim: u32,
    pub grid_dim: u32,
}

/// What the emulator does when kernel code synchronises or touches memory.
/// Implementations report misuse by unwinding with their own fault payload.
pub trait Hooks {
    /// `__syncthreads()` reached at `site`.
    fn sync_threads(&self, site: &'static Location<'static>);
    /// `__syncwarp(mask)` reached at `site`.
    fn sync_warp(&self, mask: u32, site: &'static Location<'static>);
    /// A shuffle: `words` holds this lane's value on entry and the source
    /// lane's value on return.
    fn shuffle(&self, mask: u32, mode: ShflMode, arg: u32, words: &mut [u32], site: &'static Location<'static>);
    /// Base of this block's dynamic shared memory.
    fn shared_base(&self) -> *mut u8;
    /// A shared-memory access of `bytes` at `addr`.
    fn shared_access(&self, addr: *const u8, bytes: usize, write: bool, site: &'static Location<'static>);
    /// A global-memory access of `bytes` at `addr`.
    fn global_access(&self, addr: *const u8, bytes: usize, write: bool, site: &'static Location<'static>);
    /// After an atomic read-modify-write or release store.
    fn atomic_point(&self);
    /// Before an acquire load (a possible spin-wait).
    fn spin_point(&self);
}

std::thread_local! {
    static CURRENT: Cell<Option<(Ids, *const (dyn Hooks + 'static))>> = const { Cell::new(None) };
}

/// Make `hooks` and `ids` the running thread's until [`leave`].
///
/// # Safety
/// `hooks` must stay valid until [`leave`] or the next `enter`.
pub unsafe fn enter(ids: Ids, hooks: *const (dyn Hooks + '_)) {
    // SAFETY: only the lifetime is erased; the caller keeps it valid.
    let hooks: *const (dyn Hooks + 'static) = unsafe { core::mem::transmute(hooks) };
    CURRENT.with(|c| c.set(Some((ids, hooks))));
}

/// No thread is running.
pub fn leave() {
    CURRENT.with(|c| c.set(None));
}

#[inline]
fn current() -> (Ids, *const (dyn Hooks + 'static)) {
    match CURRENT.with(|c| c.get()) {
        Some(cur) => cur,
        None => outside(),
    }
}

#[cold]
#[inline(never)]
fn outside() -> ! {
    panic!("gpuprim kernel code ran outside the emulator: launch kernels through gpuprim")
}

#[inline]
fn with_hooks<R>(f: impl FnOnce(&dyn Hooks) -> R) -> R {
    let (_, h) = current();
    // SAFETY: `enter`'s caller keeps the hooks alive while the thread runs.
    f(unsafe { &*h })
}

pub fn thread_idx() -> u32 {
    current().0.thread
}
pub fn block_idx() -> u32 {
    current().0.block
}
pub fn block_dim() -> u32 {
    current().0.block_dim
}
pub fn grid_dim() -> u32 {
    current().0.grid_dim
}
/// Nanoseconds since the first call in this process (a monotonic clock).
pub fn timer_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}
pub fn max_registers<const N: u32>() {}
/// Launches run one after another here: nothing to wait for.
pub fn grid_dependency_wait() {}
pub fn launch_dependents() {}
pub fn min_blocks_per_sm<const B: u32, const N: u32>() {}

pub fn div_approx(a: f32, b: f32) -> f32 {
    a / b
}
/// A hint with nothing to do on the host.
///
/// # Safety
/// None beyond the GPU version's: `_p` is not read.
pub unsafe fn prefetch_l2(_p: *const u8) {}
pub fn nanosleep(_ns: u32) {}
pub fn f16_to_f32(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}
#[track_caller]
pub fn sync_threads() {
    let site = Location::caller();
    with_hooks(|h| h.sync_threads(site))
}
#[track_caller]
pub fn sync_warp(mask: u32) {
    let site = Location::caller();
    with_hooks(|h| h.sync_warp(mask, site))
}
#[track_caller]
pub fn shuffle(mask: u32, mode: ShflMode, arg: u32, words: &mut [u32]) {
    let site = Location::caller();
    with_hooks(|h| h.shuffle(mask, mode, arg, words, site))
}
/// A vote of the lanes of `mask` (all 32: the only use): each lane's bit,
/// gathered by five butterfly shuffles, so the emulator's shuffle checks
/// (every named lane takes part) apply to it too.
#[track_caller]
pub fn ballot(mask: u32, pred: bool) -> u32 {
    debug_assert_eq!(mask, super::FULL_MASK, "the emulator votes over whole warps only");
    let mut votes = (pred as u32) << super::lane();
    for d in [16, 8, 4, 2, 1] {
        let mut w = [votes];
        shuffle(mask, ShflMode::Xor, d, &mut w);
        votes |= w[0];
    }
    votes
}
pub fn shared_base() -> *mut u8 {
    with_hooks(|h| h.shared_base())
}
#[track_caller]
pub fn shared_check(p: *const u8, bytes: usize, write: bool) {
    let site = Location::caller();
    with_hooks(|h| h.shared_access(p, bytes, write, site))
}
#[track_caller]
pub fn global_check(p: *const u8, bytes: usize, write: bool) {
    let site = Location::caller();
    with_hooks(|h| h.global_access(p, bytes, write, site))
}
pub fn atomic_point() {
    with_hooks(|h| h.atomic_point())
}
pub fn spin_point() {
    with_hooks(|h| h.spin_point())
}

pub(crate) unsafe fn load_vec<T: Copy, const N: usize>(p: *const T) -> [T; N] {
    // SAFETY: caller's contract (and checked by `global_check`).
    unsafe { (p as *const [T; N]).read_unaligned() }
}

pub(crate) unsafe fn load_vec_coherent<T: Copy, const N: usize>(p: *const T) -> [T; N] {
    // SAFETY: as `load_vec`.
    unsafe { load_vec::<T, N>(p) }
}
pub(crate) unsafe fn store_vec<T: Copy, const N: usize>(p: *mut T, v: [T; N]) {
    // SAFETY: caller's contract (and checked by `global_check`).
    unsafe { (p as *mut [T; N]).write_unaligned(v) }
}

pub(crate) unsafe fn store_if<T: Copy>(pred: bool, p: *mut T, v: T) {
    if pred {
        // SAFETY: caller's contract (and checked by `global_check`).
        unsafe { p.write(v) }
    }
}

pub(crate) unsafe fn atomic_add_f32(p: *mut f32, v: f32) -> f32 {
    // SAFETY: aligned, live (caller).
    let a = unsafe { AtomicU32::from_ptr(p as *mut u32) };
    let mut old = a.load(Ordering::Relaxed);
    loop {
        let new = (f32::from_bits(old) + v).to_bits();
        match a.compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return f32::from_bits(old),
            Err(cur) => old = cur,
        }
    }
}
pub(crate) unsafe fn atomic_add_f64(p: *mut f64, v: f64) -> f64 {
    // SAFETY: aligned, live (caller).
    let a = unsafe { AtomicU64::from_ptr(p as *mut u64) };
    let mut old = a.load(Ordering::Relaxed);
    loop {
        let new = (f64::from_bits(old) + v).to_bits();
        match a.compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return f64::from_bits(old),
            Err(cur) => old = cur,
        }
    }
}
pub(crate) unsafe fn add_acq_rel_u32(p: *mut u32, v: u32) -> u32 {
    // SAFETY: aligned, live (caller).
    unsafe { AtomicU32::from_ptr(p) }.fetch_add(v, Ordering::AcqRel)
}
pub(crate) unsafe fn cas_u64(p: *mut u64, current: u64, new: u64) -> u64 {
    // SAFETY: aligned, live (caller).
    match unsafe { AtomicU64::from_ptr(p) }.compare_exchange(current, new, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(v) | Err(v) => v,
    }
}
pub(crate) unsafe fn load_relaxed_u64(p: *const u64) -> u64 {
    // SAFETY: aligned, live (caller).
    unsafe { AtomicU64::from_ptr(p as *mut u64) }.load(Ordering::Relaxed)
}
pub(crate) unsafe fn load_relaxed_u64x2(p: *const u64) -> [u64; 2] {
    assert!((p as usize).is_multiple_of(16), "16-byte load from an address that is not 16-byte aligned: {p:p}");
    // SAFETY: aligned, live, 16 bytes (caller). Two loads: the pair is not
    // promised to be atomic on the GPU either.
    unsafe {
        [
            AtomicU64::from_ptr(p as *mut u64).load(Ordering::Relaxed),
            AtomicU64::from_ptr(p.add(1) as *mut u64).load(Ordering::Relaxed),
        ]
    }
}
pub(crate) unsafe fn load_acquire_u32(p: *const u32) -> u32 {
    // SAFETY: aligned, live (caller).
    unsafe { AtomicU32::from_ptr(p as *mut u32) }.load(Ordering::Acquire)
}
pub(crate) unsafe fn load_acquire_u64(p: *const u64) -> u64 {
    // SAFETY: aligned, live (caller).
    unsafe { AtomicU64::from_ptr(p as *mut u64) }.load(Ordering::Acquire)
}
pub(crate) unsafe fn store_release_u32(p: *mut u32, v: u32) {
    // SAFETY: aligned, live (caller).
    unsafe { AtomicU32::from_ptr(p) }.store(v, Ordering::Release)
}
pub(crate) unsafe fn store_release_u64(p: *mut u64, v: u64) {
    // SAFETY: aligned, live (caller).
    unsafe { AtomicU64::from_ptr(p) }.store(v, Ordering::Release)
}
pub fn fence_device() {
    core::sync::atomic::fence(Ordering::SeqCst)
}
