//! nvptx64 implementation of the device API: PTX instructions.

use super::warp::ShflMode;
use core::arch::asm;
use core::arch::nvptx;

#[allow(improper_ctypes)]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn shfl_down_i32(mask: u32, v: i32, delta: u32, c: u32) -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
    fn shfl_up_i32(mask: u32, v: i32, delta: u32, c: u32) -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
    fn shfl_bfly_i32(mask: u32, v: i32, lane_mask: u32, c: u32) -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn shfl_idx_i32(mask: u32, v: i32, src: u32, c: u32) -> i32;
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn bar_warp_sync(mask: u32);
}

#[inline(always)]
pub fn thread_idx() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_thread_idx_x() as u32 }
}
#[inline(always)]
pub fn block_idx() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_idx_x() as u32 }
}
#[inline(always)]
pub fn block_dim() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_dim_x() as u32 }
}
#[inline(always)]
pub fn grid_dim() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_grid_dim_x() as u32 }
}
#[inline(always)]
pub fn timer_ns() -> u64 {
    let t: u64;
    // SAFETY: reads a special register. Not `pure`: each read is a new value.
    unsafe { asm!("mov.u64 {0}, %globaltimer;", out(reg64) t, options(nomem, nostack, preserves_flags)) };
    t
}
#[inline(always)]
pub unsafe fn prefetch_l2(p: *const u8) {
    // SAFETY: a hint; the caller passes an address inside an allocation.
    unsafe { asm!("prefetch.global.L2 [{0}];", in(reg64) p, options(nostack, preserves_flags)) };
}
#[inline(always)]
pub fn nanosleep(ns: u32) {
    // SAFETY: a hint that suspends the thread for about `ns` nanoseconds.
    unsafe { asm!("nanosleep.u32 {0};", in(reg32) ns, options(nomem, nostack, preserves_flags)) };
}
#[inline(always)]
pub fn max_registers<const N: u32>() {
    // SAFETY: a comment, no instruction: `gpuprim_builder::REGISTER_CAP_MARKER`
    // and the number (asm! takes a literal, so the text is repeated here).
    unsafe { asm!("// gpuprim: .maxnreg {n}", n = const N, options(nomem, nostack, preserves_flags)) };
}
#[inline(always)]
pub fn grid_dependency_wait() {
    // SAFETY: a comment, no instruction, in this PTX (`.target sm_70`);
    // `cargo xtask artifact` makes it `griddepcontrol.wait` in the sm_90
    // machine code. Not `nomem`: no memory access moves above it.
    unsafe { asm!("// gpuprim: griddepcontrol.wait", options(nostack, preserves_flags)) };
}
#[inline(always)]
pub fn launch_dependents() {
    // SAFETY: a comment, no instruction, as above
    // (`griddepcontrol.launch_dependents` in the sm_90 machine code).
    unsafe { asm!("// gpuprim: griddepcontrol.launch_dependents", options(nostack, preserves_flags)) };
}
#[inline(always)]
pub fn min_blocks_per_sm<const B: u32, const N: u32>() {
    // SAFETY: a comment, no instruction: `gpuprim_builder::LAUNCH_BOUNDS_MARKER`,
    // the threads and the blocks.
    unsafe {
        asm!("// gpuprim: .minnctapersm {b} {n}", b = const B, n = const N, options(nomem, nostack, preserves_flags))
    };
}
#[inline(always)]
pub fn div_approx(a: f32, b: f32) -> f32 {
    let q: f32;
    // SAFETY: a register-to-register operation.
    unsafe {
        asm!("div.approx.f32 {0}, {1}, {2};", out(reg32) q, in(reg32) a, in(reg32) b, options(pure, nomem, nostack))
    };
    q
}
#[inline(always)]
pub fn f16_to_f32(bits: u16) -> f32 {
    let f: f32;
    // SAFETY: a register-to-register conversion.
    unsafe { asm!("cvt.f32.f16 {0}, {1};", out(reg32) f, in(reg16) bits, options(pure, nomem, nostack)) };
    f
}
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: bar.sync 0; the caller's contract is that all threads reach it.
    unsafe { nvptx::_syncthreads() }
}
#[inline(always)]
pub fn sync_warp(mask: u32) {
    // SAFETY: bar.warp.sync over the named lanes.
    unsafe { bar_warp_sync(mask) }
}

#[inline(always)]
pub fn shuffle(mask: u32, mode: ShflMode, arg: u32, words: &mut [u32]) {
    for w in words.iter_mut() {
        let v = *w as i32;
        // SAFETY: shfl.sync over the named lanes; the clamp values are the
        // ones CUDA uses for a full 32-lane width.
        let r = unsafe {
            match mode {
                ShflMode::Down => shfl_down_i32(mask, v, arg, 0x1f),
                ShflMode::Up => shfl_up_i32(mask, v, arg, 0),
                ShflMode::Xor => shfl_bfly_i32(mask, v, arg, 0x1f),
                ShflMode::Idx => shfl_idx_i32(mask, v, arg, 0x1f),
            }
        };
        *w = r as u32;
    }
}

#[inline(always)]
pub fn ballot(mask: u32, pred: bool) -> u32 {
    let votes: u32;
    // SAFETY: vote.sync over the named lanes (the caller's contract: all of
    // them make this call).
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.u32 p, {1}, 0; vote.sync.ballot.b32 {0}, p, {2}; }}",
            out(reg32) votes,
            in(reg32) pred as u32,
            in(reg32) mask,
            options(nomem, nostack)
        )
    };
    votes
}

#[repr(C, align(16))]
struct Align16([u8; 16]);

#[inline(always)]
pub fn shared_base() -> *mut u8 {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<Align16>() as *mut u8
}

#[inline(always)]
pub fn shared_check(_p: *const u8, _bytes: usize, _write: bool) {}
#[inline(always)]
pub fn global_check(_p: *const u8, _bytes: usize, _write: bool) {}
#[inline(always)]
pub fn atomic_point() {}
#[inline(always)]
pub fn spin_point() {}

/// A 16-byte vector load with the given instruction when `[T; N]` is 16
/// bytes (of any element size: the caller's contract aligns `p` to 16),
/// else a plain read.
macro_rules! load_v4 {
    ($name:ident, $insn:literal) => {
        #[inline(always)]
        pub unsafe fn $name<T: Copy, const N: usize>(p: *const T) -> [T; N] {
            let bytes = core::mem::size_of::<[T; N]>();
            if bytes == 16 {
                let (a, b, c, d): (u32, u32, u32, u32);
                // SAFETY: 16 readable bytes at a 16-byte aligned address (caller).
                unsafe {
                    asm!(
                        concat!($insn, " {{{0}, {1}, {2}, {3}}}, [{4}];"),
                        out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d,
                        in(reg64) p,
                        options(readonly, nostack, preserves_flags)
                    );
                    core::mem::transmute_copy(&[a, b, c, d])
                }
            } else {
                // SAFETY: caller's contract.
                unsafe { (p as *const [T; N]).read() }
            }
        }
    };
}
// Through the read-only (non-coherent) data path.
load_v4!(load_vec, "ld.global.nc.v4.u32");
// Coherent: for data the kernel itself writes later.
load_v4!(load_vec_coherent, "ld.global.v4.u32");

#[inline(always)]
pub unsafe fn atomic_add_f32(p: *mut f32, v: f32) -> f32 {
    let old: f32;
    // SAFETY: aligned, live address (caller).
    unsafe { asm!("atom.add.f32 {0}, [{1}], {2};", out(reg32) old, in(reg64) p, in(reg32) v, options(nostack)) };
    old
}
#[inline(always)]
pub unsafe fn atomic_add_f64(p: *mut f64, v: f64) -> f64 {
    let old: f64;
    // SAFETY: aligned, live address (caller).
    unsafe { asm!("atom.add.f64 {0}, [{1}], {2};", out(reg64) old, in(reg64) p, in(reg64) v, options(nostack)) };
    old
}
#[inline(always)]
pub unsafe fn add_acq_rel_u32(p: *mut u32, v: u32) -> u32 {
    let old: u32;
    // SAFETY: aligned, live address (caller).
    unsafe {
        asm!("atom.acq_rel.gpu.add.u32 {0}, [{1}], {2};", out(reg32) old, in(reg64) p, in(reg32) v, options(nostack))
    };
    old
}
#[inline(always)]
pub unsafe fn cas_u64(p: *mut u64, current: u64, new: u64) -> u64 {
    let old: u64;
    // SAFETY: aligned, live address (caller). Device scope, spelled out:
    // LLVM lowers a Rust compare-exchange to a system-scoped CAS
    // (`ATOMG.E.CAS.64.STRONG.SYS` in the SASS).
    unsafe {
        asm!(
            "atom.relaxed.gpu.global.cas.b64 {0}, [{1}], {2}, {3};",
            out(reg64) old, in(reg64) p, in(reg64) current, in(reg64) new,
            options(nostack)
        )
    };
    old
}
#[inline(always)]
pub unsafe fn load_relaxed_u64(p: *const u64) -> u64 {
    let v: u64;
    // SAFETY: aligned, live address (caller).
    unsafe { asm!("ld.relaxed.gpu.global.u64 {0}, [{1}];", out(reg64) v, in(reg64) p, options(nostack)) };
    v
}
#[inline(always)]
pub unsafe fn load_relaxed_u64x2(p: *const u64) -> [u64; 2] {
    let (a, b): (u64, u64);
    // SAFETY: 16-byte aligned, live address (caller).
    unsafe {
        asm!("ld.relaxed.gpu.global.v2.u64 {{{0}, {1}}}, [{2}];", out(reg64) a, out(reg64) b, in(reg64) p, options(nostack))
    };
    [a, b]
}
#[inline(always)]
pub unsafe fn load_acquire_u32(p: *const u32) -> u32 {
    let v: u32;
    // SAFETY: aligned, live address (caller).
    unsafe { asm!("ld.acquire.gpu.u32 {0}, [{1}];", out(reg32) v, in(reg64) p, options(nostack)) };
    v
}
#[inline(always)]
pub unsafe fn load_acquire_u64(p: *const u64) -> u64 {
    let v: u64;
    // SAFETY: aligned, live address (caller).
    unsafe { asm!("ld.acquire.gpu.u64 {0}, [{1}];", out(reg64) v, in(reg64) p, options(nostack)) };
    v
}
/// `st.global.v4.u32` when 16 bytes (`p` is then 16-byte aligned by the
/// caller's contract), else a plain write.
#[inline(always)]
pub unsafe fn store_vec<T: Copy, const N: usize>(p: *mut T, v: [T; N]) {
    let bytes = core::mem::size_of::<[T; N]>();
    if bytes == 16 {
        // SAFETY: same size (16 bytes).
        let [a, b, c, d]: [u32; 4] = unsafe { core::mem::transmute_copy(&v) };
        // SAFETY: 16 writable bytes at a 16-byte aligned address (caller).
        unsafe {
            asm!(
                "st.global.v4.u32 [{0}], {{{1}, {2}, {3}, {4}}};",
                in(reg64) p,
                in(reg32) a, in(reg32) b, in(reg32) c, in(reg32) d,
                options(nostack, preserves_flags)
            );
        }
    } else {
        // SAFETY: caller's contract.
        unsafe { (p as *mut [T; N]).write(v) }
    }
}
/// `@p st.global` of a 4- or 8-byte value: the store predicated in the
/// PTX itself, so no branch surrounds it whatever unrolls the caller.
#[inline(always)]
pub unsafe fn store_if<T: Copy>(pred: bool, p: *mut T, v: T) {
    macro_rules! predicated {
        ($w:ty, $reg:ident, $insn:literal) => {{
            // SAFETY: same size; the store only where `pred` (caller).
            let w: $w = unsafe { core::mem::transmute_copy(&v) };
            unsafe {
                asm!(
                    concat!("{{ .reg .pred q; setp.ne.u32 q, {0}, 0; @q ", $insn, " [{1}], {2}; }}"),
                    in(reg32) pred as u32, in(reg64) p, in($reg) w,
                    options(nostack, preserves_flags)
                );
            }
        }};
    }
    match core::mem::size_of::<T>() {
        4 => predicated!(u32, reg32, "st.global.u32"),
        8 => predicated!(u64, reg64, "st.global.u64"),
        _ => {
            if pred {
                // SAFETY: caller's contract.
                unsafe { p.write(v) }
            }
        }
    }
}
#[inline(always)]
pub unsafe fn store_release_u32(p: *mut u32, v: u32) {
    // SAFETY: aligned, live address (caller).
    unsafe { asm!("st.release.gpu.u32 [{0}], {1};", in(reg64) p, in(reg32) v, options(nostack)) };
}
#[inline(always)]
pub unsafe fn store_release_u64(p: *mut u64, v: u64) {
    // SAFETY: aligned, live address (caller).
    unsafe { asm!("st.release.gpu.u64 [{0}], {1};", in(reg64) p, in(reg64) v, options(nostack)) };
}
#[inline(always)]
pub fn fence_device() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) };
}
