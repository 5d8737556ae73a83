//! A 2x2 matrix type of this crate's own and the product that scans it:
//! associative, not commutative, so a scan that combined out of order
//! would be caught.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use gpuprim_kernels::ops::{Monoid, Named};
use gpuprim_kernels::scan::lookback::scan_lookback;
use gpuprim_kernels::scan::lookback_items;

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
    /// `[[1, 1], [1, 0]]`: its `k`-th power is `[[F(k+1), F(k)], [F(k), F(k-1)]]`.
    pub const FIBONACCI: Mat2 = Mat2 { a: 1, b: 1, c: 1, d: 0 };

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
/// gives the running products `m[0] * m[1] * ... * m[i]`.
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

// gpuprim-kernels' look-back scan line (`scan/mod.rs`) for this type and
// operator, at the host's default block size.
gpuprim_kernels::entries! {
    scan_lookback(input: *const T, output: *mut T, n: u64, init_lo: u64, init_hi: u64, mode: u32,
         temp: *mut u64, spare: *mut u64, spare_words: u64)
        => scan_lookback::<T, Op, {B}, { lookback_items::<T>(B) }>;
        ops [mat_mul = MatMul] types [Mat2] blocks [256];
}
