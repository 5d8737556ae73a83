//! A map that carries state: the threshold a count compares against is a
//! field of the map, so it is chosen at run time (the map's bytes are
//! kernel parameters), not compiled in.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use gpuprim_kernels::ops::{Map, Named, Sum};
use gpuprim_kernels::reduce::mapped::reduce_map;

/// 1 for an element above `threshold`, else 0; summed in `u64` (no
/// overflow at any length). NaNs are never above.
#[derive(Clone, Copy, Debug, Default, bytemuck::NoUninit)]
#[repr(C)]
pub struct CountAbove {
    pub threshold: f32,
}

impl Map<f32> for CountAbove {
    type Out = u64;
    type Op = Sum;
    #[inline(always)]
    fn map(&self, x: f32, _index: u64) -> u64 {
        (x > self.threshold) as u64
    }
}

impl Named for CountAbove {
    const NAME: &'static str = "count_above";
}

gpuprim_kernels::entries! {
    reduce_map(a: *const T, s0: u64, s1: u64, n: u64, partials: *mut <Op as Map<T>>::Out,
         out: *mut <Op as Map<T>>::Out, counter: *mut u32, mode: u32) => reduce_map::<T, Op, {B}>;
        ops [count_above = CountAbove] types [f32] blocks [256];
}
