//! Welford's running statistics as a transform-reduce: every `f32` becomes
//! a one-element statistic ([`ToStats`]), and statistics combine by
//! Chan, Golub and LeVeque's pairwise update ([`Merge`]), which is
//! associative and (up to rounding) commutative, and does not lose the
//! variance to cancellation the way `sum(x^2) - n mean^2` does.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use gpuprim_kernels::gpu::div_approx;
use gpuprim_kernels::ops::{Map, Monoid, Named};
use gpuprim_kernels::reduce::mapped::reduce_map;

/// Count, mean and sum of squared deviations from the mean (`m2`) of the
/// values seen so far: 12 bytes of plain data. The count is an `f32`
/// (exact below 2^24 per partial; the mean and variance only need it to
/// within `f32` rounding), so that merging needs no integer conversion.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Stats {
    pub count: f32,
    pub mean: f32,
    pub m2: f32,
}
gpuprim_kernels::device_type!(Stats);

impl Stats {
    /// The population variance (`m2 / count`); NaN for no values.
    pub fn variance(&self) -> f32 {
        self.m2 / self.count
    }
}

/// Two statistics as one: the pairwise update.
#[derive(Clone, Copy, Debug, Default)]
pub struct Merge;

impl Monoid<Stats> for Merge {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> Stats {
        Stats { count: 0.0, mean: 0.0, m2: 0.0 }
    }
    #[inline(always)]
    fn combine(a: Stats, b: Stats) -> Stats {
        let count = a.count + b.count;
        // b's share of the merged count, by the GPU's fast division (the
        // kernel merges every element: an IEEE division each would cost a
        // quarter of the bandwidth); 0 when both are empty.
        let share = if count > 0.0 { div_approx(b.count, count) } else { 0.0 };
        let delta = b.mean - a.mean;
        Stats { count, mean: a.mean + delta * share, m2: a.m2 + b.m2 + delta * delta * a.count * share }
    }
}

impl Named for Merge {
    const NAME: &'static str = "welford_merge";
}

/// Each value as the statistic of itself alone.
#[derive(Clone, Copy, Debug, Default, bytemuck::NoUninit)]
#[repr(C)]
pub struct ToStats;

impl Map<f32> for ToStats {
    type Out = Stats;
    type Op = Merge;
    #[inline(always)]
    fn map(&self, x: f32, _index: u64) -> Stats {
        Stats { count: 1.0, mean: x, m2: 0.0 }
    }
}

impl Named for ToStats {
    const NAME: &'static str = "welford";
}

// gpuprim-kernels' `reduce_map` line (`reduce/mod.rs`) with this crate's
// map, at the host's default block size.
gpuprim_kernels::entries! {
    reduce_map(a: *const T, s0: u64, s1: u64, n: u64, partials: *mut <Op as Map<T>>::Out,
         out: *mut <Op as Map<T>>::Out, counter: *mut u32, mode: u32) => reduce_map::<T, Op, {B}>;
        ops [welford = ToStats] types [f32] blocks [256];
}
