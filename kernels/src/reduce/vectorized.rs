//! The default reduction (variant 9): variant 8's warp shuffles with the
//! 16-byte loads Hopper needs to reach the memory's speed.

use super::finish::{block_reduce, finish};
use super::reduction::{Raw, Reduction};
use crate::gpu::{self, Shared};

/// Fold a grid-stride slice of the input into one register per thread.
#[inline(always)]
#[track_caller]
pub(crate) unsafe fn grid_stride<R: Reduction, const B: u32>(a: *const R::In, b: *const R::In, n: u64) -> R::Acc {
    let stride = B as u64 * gpu::grid_dim() as u64;
    let mut i = gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64;
    let mut acc = R::identity();
    while i < n {
        // SAFETY: i < n.
        acc = R::combine(acc, unsafe { R::load(a, b, i) });
        i += stride;
    }
    acc
}

/// Vector loads in flight per thread per iteration of [`reduce_vectorized`]
/// (the tuning policy's).
pub use super::policy::UNROLL;

/// Ours, the default: variant 8 with the loads Hopper needs to reach the
/// memory's speed. Each iteration issues `UNROLL` independent 16-byte
/// vector loads (`ld.global.nc.v4`) per thread before using any of them,
/// so every thread has 64 bytes in flight; accumulators stay in registers
/// (one per vector lane for 4- and 8-byte elements, four for the 16 or 8
/// lanes of a vector of 1- or 2-byte elements; combined at the end). The
/// tail that does not fill a whole vector is read with scalar loads by
/// block 0.
///
/// ```text
/// thread t of block k, iteration j: vectors  (j * G + k) * B * U + t + u * B,  u < U
/// ```
/// (`G` blocks, `U = UNROLL`): each of the `U` loads of a warp reads 512
/// contiguous bytes.
///
/// Launch: as variant 7. Inputs that are not 16-byte aligned (views that
/// start inside an allocation) are read by the scalar grid-stride loop of
/// variant 8 instead.
///
/// # Safety
/// As [`crate::lectures::reduce::interleaved::reduce_interleaved`].
pub unsafe fn reduce_vectorized<R: Reduction, const B: u32>(
    a: *const R::In,
    b: *const R::In,
    n: u64,
    partials: *mut R::Acc,
    out: *mut R::Acc,
    counter: *mut u32,
    mode: u32,
) {
    let s = Shared::<R::Acc>::dynamic();
    // A view may start anywhere its element type allows; 16-byte loads need
    // 16-byte alignment (of both inputs), else the scalar loop reads it.
    let aligned = (a as usize).is_multiple_of(16) && (b as usize).is_multiple_of(16);
    // SAFETY (every arm): forwarded; W elements of `In` are 16 bytes.
    let acc = match core::mem::size_of::<R::In>() {
        _ if !aligned => unsafe { grid_stride::<R, B>(a, b, n) },
        1 => unsafe { vector_pass::<R, B, 16, 4>(a, b, n) },
        2 => unsafe { vector_pass::<R, B, 8, 4>(a, b, n) },
        4 => unsafe { vector_pass::<R, B, 4, 4>(a, b, n) },
        8 => unsafe { vector_pass::<R, B, 2, 2>(a, b, n) },
        _ => unsafe { grid_stride::<R, B>(a, b, n) },
    };
    let total = block_reduce::<R, B>(acc, s);
    // SAFETY: forwarded.
    unsafe { finish::<R, B>(total, s, partials, out, counter, mode) };
}

/// The vectorised grid-stride loop: `W` elements per 16-byte vector, each
/// vector combined into the `A` accumulators by
/// [`Reduction::combine_vector`].
#[inline(always)]
#[track_caller]
unsafe fn vector_pass<R: Reduction, const B: u32, const W: usize, const A: usize>(
    a: *const R::In,
    b: *const R::In,
    n: u64,
) -> R::Acc {
    const { assert!(UNROLL == 4) };
    let vectors = n / W as u64;
    let tid = gpu::thread_idx() as u64;
    let chunk = B as u64 * UNROLL as u64;
    let stride = chunk * gpu::grid_dim() as u64;
    let mut base = gpu::block_idx() as u64 * chunk;
    let mut acc = [R::identity(); A];
    // Whole chunks: U loads issued back to back, then combined.
    while base + chunk <= vectors {
        let at = |u: u64| (base + u * B as u64 + tid) * W as u64;
        // SAFETY: vector base + u*B + tid < vectors, so its W elements are < n.
        let raw: [Raw<R::In, W>; UNROLL] = unsafe {
            [
                R::load_raw::<W>(a, b, at(0)),
                R::load_raw::<W>(a, b, at(1)),
                R::load_raw::<W>(a, b, at(2)),
                R::load_raw::<W>(a, b, at(3)),
            ]
        };
        unrolled!(UNROLL, |u| R::combine_vector::<W, A>(&mut acc, &raw[u], at(u as u64), u));
        base += stride;
    }
    // The last partial chunk, one vector at a time.
    if base < vectors {
        let mut u = 0;
        while u < UNROLL {
            let j = base + u as u64 * B as u64 + tid;
            if j < vectors {
                // SAFETY: j < vectors.
                let raw = unsafe { R::load_raw::<W>(a, b, j * W as u64) };
                // Slot 0: a slot counted by this (rolled) loop would index
                // the accumulators at run time, in local memory.
                R::combine_vector::<W, A>(&mut acc, &raw, j * W as u64, 0);
            }
            u += 1;
        }
    }
    // Elements past the last whole vector (fewer than W <= B).
    if gpu::block_idx() == 0 {
        let i = vectors * W as u64 + tid;
        if i < n {
            // SAFETY: i < n.
            acc[0] = R::combine(acc[0], unsafe { R::load(a, b, i) });
        }
    }
    let mut total = acc[0];
    let mut k = 1;
    while k < A {
        total = R::combine(total, acc[k]);
        k += 1;
    }
    total
}
