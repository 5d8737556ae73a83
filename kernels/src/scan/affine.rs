//! Affine maps `v -> a*v + b` under composition: the non-commutative
//! operator of the scan family, and the linear recurrence it solves.
//!
//! [`Compose`]`::combine(x, y)` is "x, then y": the map `v -> y(x(v))`.
//! Every scan in this crate combines in input order, `combine(earlier,
//! later)`, so an inclusive scan of maps `f0, f1, f2, ...` yields
//! `f0`, `f1 . f0`, `f2 . f1 . f0`, ...: applied to `v0` the `i`-th result
//! is the state after step `i`.
//!
//! ```text
//!   x = (a1, b1), y = (a2, b2)
//!   y(x(v)) = a2*(a1*v + b1) + b2 = (a1*a2)*v + (a2*b1 + b2)
//!   combine(x, y) = (a1*a2, a2*b1 + b2)        identity = (1, 0)
//! ```
//!
//! The recurrence `v[k+1] = (1 - l[k]) * v[k] + l[k] * u[k]` (an
//! exponential moving average with per-step weights, the lectures'
//! example) is the scan of the maps `(1 - l[k], l[k] * u[k])` started from
//! the constant map `(0, v0)`: the `b` of the `k`-th result is `v[k+1]`.
//! [`recurrence_maps`] builds the maps, [`recurrence_values`] extracts the
//! values.
//!
//! Integer maps (`u16`, `u32`) compose with wrapping arithmetic, so their
//! scans are exact: the tests use them to check the combine order bit for
//! bit, through both tile-status layouts (`Affine<u16>` is 4 bytes and
//! packs with its flag into one 64-bit word; `Affine<u32>` does not).

use crate::gpu::warp::Shuffle;
use crate::gpu::{self, global};
use crate::ops::Monoid;

/// Numbers an affine map can have as coefficients: a ring (floats
/// round; integers wrap).
pub trait Ring: Copy + 'static {
    const ZERO: Self;
    const ONE: Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}

macro_rules! int_ring {
    ($($t:ty),*) => {$(
        impl Ring for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
        }
    )*};
}
int_ring!(u16, u32, u64, i32, i64);

macro_rules! float_ring {
    ($($t:ty),*) => {$(
        impl Ring for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn sub(self, o: Self) -> Self { self - o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
        }
    )*};
}
float_ring!(f32, f64);

/// The affine map `v -> a*v + b`, stored as the pair `(a, b)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Affine<T> {
    pub a: T,
    pub b: T,
}

impl<T: Ring> Affine<T> {
    /// The map `v -> a*v + b`.
    pub const fn new(a: T, b: T) -> Self {
        Affine { a, b }
    }
    /// `a*v + b`.
    #[inline(always)]
    pub fn apply(self, v: T) -> T {
        self.a.mul(v).add(self.b)
    }
}

// SAFETY: `#[repr(C)]` pairs of two equal plain numbers: 4 bytes (u16),
// 8 bytes (32-bit fields) or 16 bytes (64-bit fields), no padding, every
// bit pattern valid.
unsafe impl Shuffle for Affine<u16> {}
// SAFETY: as above.
unsafe impl Shuffle for Affine<u32> {}
// SAFETY: as above.
unsafe impl Shuffle for Affine<i32> {}
// SAFETY: as above.
unsafe impl Shuffle for Affine<f32> {}
// SAFETY: as above.
unsafe impl Shuffle for Affine<u64> {}
// SAFETY: as above.
unsafe impl Shuffle for Affine<i64> {}
// SAFETY: as above.
unsafe impl Shuffle for Affine<f64> {}

/// Composition of affine maps in order: `combine(x, y)` applies `x` first,
/// then `y`. Associative, not commutative.
#[derive(Clone, Copy, Debug, Default)]
pub struct Compose;

impl crate::ops::Named for Compose {
    const NAME: &'static str = "compose";
}

impl<T: Ring> Monoid<Affine<T>> for Compose {
    #[inline(always)]
    fn identity() -> Affine<T> {
        Affine { a: T::ONE, b: T::ZERO }
    }
    #[inline(always)]
    fn combine(x: Affine<T>, y: Affine<T>) -> Affine<T> {
        Affine { a: x.a.mul(y.a), b: y.a.mul(x.b).add(y.b) }
    }
}

/// Entry-name aliases (`entries!` wants identifiers for types).
#[allow(non_camel_case_types)]
pub type affine_u16 = Affine<u16>;
#[allow(non_camel_case_types)]
pub type affine_u32 = Affine<u32>;
#[allow(non_camel_case_types)]
pub type affine_f32 = Affine<f32>;
#[allow(non_camel_case_types)]
pub type affine_f64 = Affine<f64>;

/// Step maps of the recurrence: `maps[k] = (1 - l[k], l[k] * u[k])`,
/// grid-stride, one element per thread per step.
///
/// # Safety
/// `l`, `u` and `maps` hold `n` elements each, device memory.
pub unsafe fn recurrence_maps<T: Ring, const B: u32>(l: *const T, u: *const T, maps: *mut Affine<T>, n: u64) {
    let stride = B as u64 * gpu::grid_dim() as u64;
    let mut i = gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64;
    while i < n {
        // SAFETY: i < n.
        unsafe {
            let (lk, uk) = (global::load(l.add(i as usize)), global::load(u.add(i as usize)));
            global::store(maps.add(i as usize), Affine { a: T::ONE.sub(lk), b: lk.mul(uk) });
        }
        i += stride;
    }
}

/// The recurrence's values from the scanned maps: `out[k] = maps[k].b`
/// (each scanned map is constant, `a = 0`, having started from `(0, v0)`).
///
/// # Safety
/// `maps` and `out` hold `n` elements each, device memory.
pub unsafe fn recurrence_values<T: Ring, const B: u32>(maps: *const Affine<T>, out: *mut T, n: u64) {
    let stride = B as u64 * gpu::grid_dim() as u64;
    let mut i = gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64;
    while i < n {
        // SAFETY: i < n.
        unsafe { global::store(out.add(i as usize), global::load(maps.add(i as usize)).b) };
        i += stride;
    }
}
