//! gpuprim's vectorized reduction instantiated for an operator of this
//! crate: the element of largest magnitude (the positive one of equal
//! magnitudes, so that it commutes).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use gpuprim_kernels::ops::{Accumulate, Monoid, Named};
use gpuprim_kernels::reduce::reduction::{Plain, Reduction};
use gpuprim_kernels::reduce::vectorized::reduce_vectorized;

/// The value of largest `|x|`; of two equal magnitudes, the positive one.
#[derive(Clone, Copy, Debug, Default)]
pub struct MaxAbs;

impl Monoid<i32> for MaxAbs {
    const COMMUTATIVE: bool = true;
    fn identity() -> i32 {
        0
    }
    fn combine(a: i32, b: i32) -> i32 {
        if (b.unsigned_abs(), b) > (a.unsigned_abs(), a) { b } else { a }
    }
}

impl Named for MaxAbs {
    const NAME: &'static str = "maxabs";
}

impl Accumulate<i32> for MaxAbs {
    type Acc = i32;
    fn lift(x: i32) -> i32 {
        x
    }
}

gpuprim_kernels::entries! {
    reduce_vectorized(a: *const <Op as Reduction>::In, b: *const <Op as Reduction>::In, n: u64,
         partials: *mut <Op as Reduction>::Acc, out: *mut <Op as Reduction>::Acc,
         counter: *mut u32, mode: u32) => reduce_vectorized::<Op, {B}>;
        ops [maxabs = Plain<T, MaxAbs>] types [i32] blocks [256];
}
