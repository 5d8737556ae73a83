//! Operators and an element type of this crate's own, and gpuprim's
//! generic kernels instantiated for them: a reduction to the element of
//! largest magnitude, a scan that carries the last non-zero value
//! forward, and a scan of 2x2 matrix products (not commutative) over
//! integers modulo 2^32.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

// The host half of `entries!` (the kernels' records for the emulator)
// uses `std`.
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use gpuprim_kernels::ops::{Accumulate, Monoid, Named};
use gpuprim_kernels::reduce::reduction::{Plain, Reduction};
use gpuprim_kernels::reduce::vectorized::reduce_vectorized;
use gpuprim_kernels::scan::lookback::scan_lookback;
use gpuprim_kernels::scan::lookback_items;

/// The element of largest magnitude; of two with equal magnitudes
/// (`x` and `-x`) the positive one, so that the order of combining does
/// not matter (reductions assume a commutative operator).
#[derive(Clone, Copy, Debug, Default)]
pub struct MaxAbs;

impl MaxAbs {
    /// The operator on the host, for references.
    pub fn apply(a: i32, b: i32) -> i32 {
        if (b.unsigned_abs(), b) > (a.unsigned_abs(), a) { b } else { a }
    }
}

impl Monoid<i32> for MaxAbs {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> i32 {
        0
    }
    #[inline(always)]
    fn combine(a: i32, b: i32) -> i32 {
        Self::apply(a, b)
    }
}

impl Accumulate<i32> for MaxAbs {
    type Acc = i32;
    #[inline(always)]
    fn lift(x: i32) -> i32 {
        x
    }
}

impl Named for MaxAbs {
    const NAME: &'static str = "maxabs";
}

/// The last non-zero value so far (zero before the first): fills the
/// gaps of a sparse signal. Associative, not commutative.
#[derive(Clone, Copy, Debug, Default)]
pub struct FillForward;

impl FillForward {
    /// The operator on the host, for references.
    pub fn apply(a: i32, b: i32) -> i32 {
        if b != 0 { b } else { a }
    }
}

impl Monoid<i32> for FillForward {
    #[inline(always)]
    fn identity() -> i32 {
        0
    }
    #[inline(always)]
    fn combine(a: i32, b: i32) -> i32 {
        Self::apply(a, b)
    }
}

impl Named for FillForward {
    const NAME: &'static str = "fill_forward";
}

/// A 2x2 matrix of integers modulo 2^32, row by row: `[[a, b], [c, d]]`.
/// Plain data of 16 bytes: an element type of gpuprim's scans.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Mat2 {
    pub a: u32,
    pub b: u32,
    pub c: u32,
    pub d: u32,
}
gpuprim_kernels::device_type!(Mat2);

impl Mat2 {
    pub const IDENTITY: Mat2 = Mat2 { a: 1, b: 0, c: 0, d: 1 };

    /// `self * o`, wrapping.
    #[inline(always)]
    pub fn mul(self, o: Mat2) -> Mat2 {
        let dot = |x: u32, y: u32, z: u32, w: u32| x.wrapping_mul(y).wrapping_add(z.wrapping_mul(w));
        Mat2 {
            a: dot(self.a, o.a, self.b, o.c),
            b: dot(self.a, o.b, self.b, o.d),
            c: dot(self.c, o.a, self.d, o.c),
            d: dot(self.c, o.b, self.d, o.d),
        }
    }
}

/// Matrix product in order: `combine(x, y) = x * y`, so an inclusive scan
/// gives the running products `m[0] * m[1] * ... * m[i]`. Associative, not
/// commutative.
#[derive(Clone, Copy, Debug, Default)]
pub struct MatMul;

impl Monoid<Mat2> for MatMul {
    #[inline(always)]
    fn identity() -> Mat2 {
        Mat2::IDENTITY
    }
    #[inline(always)]
    fn combine(x: Mat2, y: Mat2) -> Mat2 {
        x.mul(y)
    }
}

impl Named for MatMul {
    const NAME: &'static str = "mat_mul";
}

// The same lines as gpuprim-kernels' own lists (`reduce/mod.rs`,
// `scan/mod.rs`), with this crate's operators: the parameters are the
// families' (the host launches them), the block sizes the host's defaults.
gpuprim_kernels::entries! {
    reduce_vectorized(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
         partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
         counter: *mut u32, mode: u32) => reduce_vectorized::<Op, {B}>;
        ops [maxabs = Plain<T, MaxAbs>] types [i32] blocks [256];
    scan_lookback(input: *const T, output: *mut T, n: u64, init_lo: u64, init_hi: u64, mode: u32,
         temp: *mut u64, spare: *mut u64, spare_words: u64)
        => scan_lookback::<T, Op, {B}, { lookback_items::<T>(B) }>;
        ops [fill_forward = FillForward] types [i32] blocks [256];
    scan_lookback(input: *const T, output: *mut T, n: u64, init_lo: u64, init_hi: u64, mode: u32,
         temp: *mut u64, spare: *mut u64, spare_words: u64)
        => scan_lookback::<T, Op, {B}, { lookback_items::<T>(B) }>;
        ops [mat_mul = MatMul] types [Mat2] blocks [256];
}
