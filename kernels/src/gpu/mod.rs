//! The device API: what kernel code may use, on both targets.
//!
//! Scopes follow CUDA's: [thread ids](thread_idx), the [block](sync_threads)
//! (barrier, [`Shared`] memory), the [`warp`] (shuffles, warp barrier),
//! [`global`] memory and [`atomic`] operations. Launches are one-dimensional.
//!
//! On nvptx64 every function here is a single PTX instruction or a few. On the
//! host they call the CPU emulator through [`emu`], which checks what the
//! hardware would not: barriers reached by all threads at the same call site,
//! shuffles whose lanes all take part, shared-memory accesses inside the
//! launch size and free of data races, global accesses inside allocations.

#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;
#[cfg(not(target_arch = "nvptx64"))]
use emu as imp;
#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
use nvptx as imp;

pub mod atomic;
pub mod global;
pub mod warp;

use core::marker::PhantomData;

/// Threads in a warp.
pub const WARP_SIZE: u32 = 32;
/// A shuffle or warp-barrier mask naming all 32 lanes.
pub const FULL_MASK: u32 = u32::MAX;

/// Cap the registers of the kernel that calls this at `N` a thread, so
/// that more blocks fit on a multiprocessor; ptxas spills what does not
/// fit. The call leaves a comment in the kernel's PTX body
/// (`gpuprim_builder::REGISTER_CAP_MARKER` and the number) that
/// `gpuprim-builder` and `cargo xtask artifact` turn into the entry's
/// `.maxnreg N`. Call it from the kernel body (inlined into the entry,
/// directly or through `#[inline(always)]` functions): in a function of its
/// own the marker is refused at build time. Nothing on the host.
#[inline(always)]
pub fn max_registers<const N: u32>() {
    imp::max_registers::<N>()
}

/// Launch bounds for the kernel that calls this: at most `B` threads a
/// block, at least `N` blocks a multiprocessor. ptxas then keeps the
/// registers within `65536 / (B N)` and schedules for that budget (where
/// a kernel left unbounded may settle on fewer registers than the blocks
/// it gets allow, and keep fewer loads in flight). The call leaves a
/// comment (`gpuprim_builder::LAUNCH_BOUNDS_MARKER`, `B` and `N`) that
/// `gpuprim-builder` and `cargo xtask artifact` turn into the entry's
/// `.maxntid B, 1, 1` and `.minnctapersm N`; call it as
/// [`max_registers`]. Nothing on the host.
#[inline(always)]
pub fn min_blocks_per_sm<const B: u32, const N: u32>() {
    imp::min_blocks_per_sm::<B, N>()
}

/// Index of this thread in its block (`threadIdx.x`).
#[inline(always)]
pub fn thread_idx() -> u32 {
    imp::thread_idx()
}
/// Index of this block in the grid (`blockIdx.x`).
#[inline(always)]
pub fn block_idx() -> u32 {
    imp::block_idx()
}
/// Threads per block (`blockDim.x`).
#[inline(always)]
pub fn block_dim() -> u32 {
    imp::block_dim()
}
/// Blocks in the grid (`gridDim.x`).
#[inline(always)]
pub fn grid_dim() -> u32 {
    imp::grid_dim()
}
/// This thread's lane in its warp.
#[inline(always)]
pub fn lane() -> u32 {
    thread_idx() % WARP_SIZE
}
/// This thread's warp in its block.
#[inline(always)]
pub fn warp_idx() -> u32 {
    thread_idx() / WARP_SIZE
}

/// The GPU's global nanosecond timer (PTX `%globaltimer`); on the host, the
/// nanoseconds since the process first asked for it.
///
/// It is coarse: some GPUs update it only about once a microsecond, and in
/// steps of that size. Use it for timeouts (give up a spin-wait after so
/// long), not for measuring kernels; CUDA events on the host do that.
#[inline(always)]
pub fn timer_ns() -> u64 {
    imp::timer_ns()
}

/// The `f32` value of the IEEE half-precision number with these bits
/// (exact: every `f16` is an `f32`). One `cvt.f32.f16` on the GPU; the
/// `half` crate's conversion on the host.
#[inline(always)]
pub fn f16_to_f32(bits: u16) -> f32 {
    imp::f16_to_f32(bits)
}

/// The `f32` value of the bfloat16 number with these bits: its bits are
/// the top half of the `f32`'s (exact, a shift on both targets).
#[inline(always)]
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// `a / b` computed fast: PTX `div.approx.f32` on the GPU (`a` times an
/// approximate reciprocal of `b`: within 2 ulp for `|b|` in
/// `[2^-126, 2^126]`, two instructions instead of the IEEE division's
/// dozen), `a / b` exactly on the host (so the emulator may differ from
/// the GPU in the last bits). For maps and operators where a division per
/// element would bound the speed, such as a running mean.
#[inline(always)]
pub fn div_approx(a: f32, b: f32) -> f32 {
    imp::div_approx(a, b)
}

/// A hint to bring the 128-byte line holding `p` into L2 (PTX
/// `prefetch.global.L2`); nothing on the host.
///
/// # Safety
/// `p` lies inside a global allocation.
#[inline(always)]
pub unsafe fn prefetch_l2(p: *const u8) {
    // SAFETY: the caller's contract.
    unsafe { imp::prefetch_l2(p) }
}

/// Wait until the launch before this one in the stream has finished and
/// its writes are visible: what a kernel that the host launches as a
/// dependent launch (`Context::launch_dependent`: it may start while the
/// one before drains, on compute capability 9.0) calls before it reads
/// what that launch wrote. `griddepcontrol.wait` in the sm_90 machine code
/// (`cargo xtask artifact` turns this call's PTX comment into it; the PTX
/// for older GPUs keeps the comment, and the host launches those kernels
/// in stream order). Nothing on the host, nor in a launch in stream order.
#[inline(always)]
pub fn grid_dependency_wait() {
    imp::grid_dependency_wait()
}

/// Let the next launch in the stream, if the host launched it as a
/// dependent launch, start before this one ends: its blocks then wait at
/// [`grid_dependency_wait`]. `griddepcontrol.launch_dependents` in the
/// sm_90 machine code, as above; nothing elsewhere.
#[inline(always)]
pub fn launch_dependents() {
    imp::launch_dependents()
}

/// Suspend the calling thread for about `ns` nanoseconds (PTX
/// `nanosleep`, a hint); nothing on the host.
#[inline(always)]
pub fn nanosleep(ns: u32) {
    imp::nanosleep(ns)
}

/// Block-wide barrier (`__syncthreads`, PTX `bar.sync 0`).
///
/// Every thread of the block must reach the same call; the emulator reports
/// a barrier that some threads skip, or threads waiting at different calls.
#[inline(always)]
#[track_caller]
pub fn sync_threads() {
    imp::sync_threads()
}

/// The block's dynamic shared memory (CUDA's `extern __shared__`), sized by
/// the launch, viewed as an array of `T`.
///
/// Accesses are not bounds-checked on the GPU; the emulator checks each
/// against the launch size and against races between threads that no
/// barrier separates.
pub struct Shared<T> {
    base: *mut T,
    _t: PhantomData<T>,
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Shared<T> {}

impl<T: Copy> Shared<T> {
    /// The dynamic shared memory from its start.
    #[inline(always)]
    pub fn dynamic() -> Self {
        Shared { base: imp::shared_base() as *mut T, _t: PhantomData }
    }

    /// A view of the same memory starting `count` elements of `T` further,
    /// as another type (to carve several arrays out of one allocation).
    /// `U` must not need more alignment than that offset has.
    #[inline(always)]
    pub fn after<U>(self, count: usize) -> Shared<U> {
        Shared { base: self.base.wrapping_add(count) as *mut U, _t: PhantomData }
    }

    /// Read element `i`.
    ///
    /// # Safety
    /// `i` must lie inside the dynamic shared memory of the launch.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn load(self, i: usize) -> T {
        let p = self.base.wrapping_add(i);
        imp::shared_check(p as *const u8, core::mem::size_of::<T>(), false);
        // SAFETY: in bounds by the caller's contract (checked on the host).
        unsafe { p.read() }
    }

    /// Write element `i`.
    ///
    /// # Safety
    /// `i` must lie inside the dynamic shared memory of the launch.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn store(self, i: usize, v: T) {
        let p = self.base.wrapping_add(i);
        imp::shared_check(p as *const u8, core::mem::size_of::<T>(), true);
        // SAFETY: in bounds by the caller's contract (checked on the host).
        unsafe { p.write(v) }
    }

    /// `volatile` read, as the lectures' warp-synchronous code uses. Volatile
    /// does not order anything between threads; see [`crate::reduce`].
    ///
    /// # Safety
    /// As [`Shared::load`].
    #[inline(always)]
    #[track_caller]
    pub unsafe fn load_volatile(self, i: usize) -> T {
        let p = self.base.wrapping_add(i);
        imp::shared_check(p as *const u8, core::mem::size_of::<T>(), false);
        // SAFETY: as `load`.
        unsafe { p.read_volatile() }
    }

    /// `volatile` write.
    ///
    /// # Safety
    /// As [`Shared::store`].
    #[inline(always)]
    #[track_caller]
    pub unsafe fn store_volatile(self, i: usize, v: T) {
        let p = self.base.wrapping_add(i);
        imp::shared_check(p as *const u8, core::mem::size_of::<T>(), true);
        // SAFETY: as `store`.
        unsafe { p.write_volatile(v) }
    }
}
