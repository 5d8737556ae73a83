//! Operators, element types and a map of this crate's own, and gpuprim's
//! generic kernels instantiated for them: a reduction to the element of
//! largest magnitude, a scan that carries the last non-zero value
//! forward, a product of Gaussian integers modulo 2^32 (a reduction over a
//! type of its own), the sums of the first three powers in one pass
//! (a map to a 24-byte type), squared differences from a run-time centre
//! and the L-infinity norm (maps into the built-in `Sum` and `Max`).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

// The host half of `entries!` (the kernels' records for the emulator)
// uses `std`.
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use gpuprim_kernels::ops::{Accumulate, Fold, Map, Max, Monoid, Named, Sum};
use gpuprim_kernels::reduce::mapped::reduce_map;
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

/// A Gaussian integer modulo 2^32, `re + im i`: 8 bytes of plain data, an
/// element type of this crate's own for reductions.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Gauss {
    pub re: u32,
    pub im: u32,
}
gpuprim_kernels::device_type!(Gauss);

/// The product of Gaussian integers, wrapping: associative and
/// commutative exactly, so a reduction in any order gives the same bits.
#[derive(Clone, Copy, Debug, Default)]
pub struct GaussMul;

impl GaussMul {
    /// The operator on the host, for references.
    #[inline(always)]
    pub fn apply(x: Gauss, y: Gauss) -> Gauss {
        Gauss {
            re: x.re.wrapping_mul(y.re).wrapping_sub(x.im.wrapping_mul(y.im)),
            im: x.re.wrapping_mul(y.im).wrapping_add(x.im.wrapping_mul(y.re)),
        }
    }
}

impl Monoid<Gauss> for GaussMul {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> Gauss {
        Gauss { re: 1, im: 0 }
    }
    #[inline(always)]
    fn combine(x: Gauss, y: Gauss) -> Gauss {
        Self::apply(x, y)
    }
}

impl Named for GaussMul {
    const NAME: &'static str = "gauss_mul";
}

/// The sums of `x`, `x^2` and `x^3` (wrapping `u64`): 24 bytes, more than
/// one shuffle word group, and exact, so any combine order gives the same.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PowerSums {
    pub s1: u64,
    pub s2: u64,
    pub s3: u64,
}
gpuprim_kernels::device_type!(PowerSums);

/// Componentwise wrapping sum of [`PowerSums`].
#[derive(Clone, Copy, Debug, Default)]
pub struct AddSums;

impl Monoid<PowerSums> for AddSums {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> PowerSums {
        PowerSums { s1: 0, s2: 0, s3: 0 }
    }
    #[inline(always)]
    fn combine(a: PowerSums, b: PowerSums) -> PowerSums {
        PowerSums { s1: a.s1.wrapping_add(b.s1), s2: a.s2.wrapping_add(b.s2), s3: a.s3.wrapping_add(b.s3) }
    }
}

/// Each `i32` as its first three powers (a map: the input is read once).
#[derive(Clone, Copy, Debug, Default, bytemuck::NoUninit)]
#[repr(C)]
pub struct Powers;

impl Powers {
    /// The map on the host, for references.
    pub fn apply(x: i32) -> PowerSums {
        let v = x as i64 as u64;
        PowerSums { s1: v, s2: v.wrapping_mul(v), s3: v.wrapping_mul(v).wrapping_mul(v) }
    }
}

impl Map<i32> for Powers {
    type Out = PowerSums;
    type Op = AddSums;
    #[inline(always)]
    fn map(&self, x: i32, _index: u64) -> PowerSums {
        Self::apply(x)
    }
}

impl Named for Powers {
    const NAME: &'static str = "powers";
}

/// `(x - centre)^2`, summed: squared differences from a centre chosen at
/// run time (the map carries it), in one pass.
#[derive(Clone, Copy, Debug, Default, bytemuck::NoUninit)]
#[repr(C)]
pub struct SquaredDiff {
    pub centre: f64,
}

impl Map<f64> for SquaredDiff {
    type Out = f64;
    type Op = Sum;
    #[inline(always)]
    fn map(&self, x: f64, _index: u64) -> f64 {
        let d = x - self.centre;
        d * d
    }
}

impl Named for SquaredDiff {
    const NAME: &'static str = "squared_diff";
}

/// `|x|`, combined by the built-in `Max`: the L-infinity norm.
#[derive(Clone, Copy, Debug, Default, bytemuck::NoUninit)]
#[repr(C)]
pub struct Magnitude;

impl Map<f32> for Magnitude {
    type Out = f32;
    type Op = Max;
    #[inline(always)]
    fn map(&self, x: f32, _index: u64) -> f32 {
        f32::from_bits(x.to_bits() & 0x7fff_ffff)
    }
}

impl Named for Magnitude {
    const NAME: &'static str = "magnitude";
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
    reduce_map(a: *const T, s0: u64, s1: u64, n: u64, partials: *mut <Op as Map<T>>::Out,
         out: *mut <Op as Map<T>>::Out, counter: *mut u32, mode: u32) => reduce_map::<T, Op, {B}>;
        ops [gauss_mul = Fold<GaussMul>] types [Gauss] blocks [256];
    reduce_map(a: *const T, s0: u64, s1: u64, n: u64, partials: *mut <Op as Map<T>>::Out,
         out: *mut <Op as Map<T>>::Out, counter: *mut u32, mode: u32) => reduce_map::<T, Op, {B}>;
        ops [powers = Powers] types [i32] blocks [256];
    reduce_map(a: *const T, s0: u64, s1: u64, n: u64, partials: *mut <Op as Map<T>>::Out,
         out: *mut <Op as Map<T>>::Out, counter: *mut u32, mode: u32) => reduce_map::<T, Op, {B}>;
        ops [squared_diff = SquaredDiff] types [f64] blocks [256];
    reduce_map(a: *const T, s0: u64, s1: u64, n: u64, partials: *mut <Op as Map<T>>::Out,
         out: *mut <Op as Map<T>>::Out, counter: *mut u32, mode: u32) => reduce_map::<T, Op, {B}>;
        ops [magnitude = Magnitude] types [f32] blocks [256];
}
