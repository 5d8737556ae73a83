//! Associative operators as monoids: an identity and a combine.
//!
//! Kernels never branch on the tail of their input: out-of-range slots are
//! filled with [`Monoid::identity`], which leaves every result unchanged.
//! Integer arithmetic wraps on overflow (two's complement), on the GPU and
//! in the CPU references alike.

use crate::gpu::atomic::AtomicAdd;
use crate::gpu::warp::Shuffle;

/// Element types the kernels are instantiated for.
pub trait Element:
    Shuffle + AtomicAdd + Copy + PartialOrd + Default + core::fmt::Debug + Send + Sync + 'static
{
    const ZERO: Self;
    const ONE: Self;
    /// The smallest value (`-inf` for floats).
    const LOWEST: Self;
    /// The largest value (`+inf` for floats).
    const HIGHEST: Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// The smaller of two values (for floats, `b` when `a` is NaN, as
    /// `fminf` does: NaN inputs are ignored).
    fn min(self, o: Self) -> Self;
    /// The larger of two values (for floats, NaN inputs are ignored).
    fn max(self, o: Self) -> Self;
    /// Convert an index-sized count (for means); exact below 2^24 (f32).
    fn from_u64(v: u64) -> Self;
    /// The same value in an 8-byte type of the same kind (`f32` -> `f64`,
    /// `i32` -> `i64`, `u32` -> `u64`), exactly.
    type Wide: Element;
    fn widen(self) -> Self::Wide;
    /// `|x|` (wrapping for `MIN` of signed integers; the identity for
    /// unsigned ones).
    fn abs(self) -> Self;
    /// Strict "less than" in a total order where NaN is above every number
    /// (so argmin and argmax ignore NaNs unless all inputs are NaN).
    fn total_lt(self, o: Self) -> bool;
}

/// Integer element types: the bitwise operators apply.
pub trait Integer: Element {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    const ALL_ONES: Self;
}

macro_rules! int_element {
    ($($t:ty => $w:ty, $abs:expr);*) => {$(
        impl Element for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn min(self, o: Self) -> Self { if o < self { o } else { self } }
            #[inline(always)] fn max(self, o: Self) -> Self { if o > self { o } else { self } }
            #[inline(always)] fn from_u64(v: u64) -> Self { v as $t }
            type Wide = $w;
            #[inline(always)] fn widen(self) -> $w { self as $w }
            #[inline(always)] fn abs(self) -> Self { $abs(self) }
            #[inline(always)] fn total_lt(self, o: Self) -> bool { self < o }
        }
        impl Integer for $t {
            #[inline(always)] fn and(self, o: Self) -> Self { self & o }
            #[inline(always)] fn or(self, o: Self) -> Self { self | o }
            #[inline(always)] fn xor(self, o: Self) -> Self { self ^ o }
            const ALL_ONES: Self = !0;
        }
    )*};
}
int_element!(
    i32 => i64, |x: i32| x.wrapping_abs();
    u32 => u64, |x: u32| x;
    i64 => i64, |x: i64| x.wrapping_abs();
    u64 => u64, |x: u64| x
);

macro_rules! float_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn min(self, o: Self) -> Self { <$t>::min(self, o) }
            #[inline(always)] fn max(self, o: Self) -> Self { <$t>::max(self, o) }
            #[inline(always)] fn from_u64(v: u64) -> Self { v as $t }
            type Wide = f64;
            #[inline(always)] fn widen(self) -> f64 { self as f64 }
            #[inline(always)] fn abs(self) -> Self { if self < 0.0 { -self } else { self } }
            #[inline(always)] fn total_lt(self, o: Self) -> bool {
                self < o || (o != o && self == self)
            }
        }
    )*};
}
float_element!(f32, f64);

/// An associative operator with an identity: `combine(identity(), x) == x`
/// and `combine(a, combine(b, c)) == combine(combine(a, b), c)`.
///
/// Reductions also assume commutativity (they combine in tree order, not
/// input order); scans only need associativity.
pub trait Monoid<T>: Copy + 'static {
    /// Whether `combine` is `+` on an element type, so a native atomic add
    /// can apply it (`red.add` / `atom.add`) instead of a CAS loop.
    const IS_ADD: bool = false;
    /// Whether `combine(a, b) == combine(b, a)` for all values (for floats,
    /// up to rounding once regrouped and the sign of zero), so that a set
    /// of values may be combined in any order. The look-back scan then
    /// publishes a tile's total from the order it loaded the tile in,
    /// before staging it. Leave `false` when unsure: order is then kept.
    const COMMUTATIVE: bool = false;
    fn identity() -> T;
    fn combine(a: T, b: T) -> T;
}

/// `a + b` (wrapping for integers).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sum;
/// `a * b` (wrapping for integers).
#[derive(Clone, Copy, Debug, Default)]
pub struct Product;
/// The smaller value.
#[derive(Clone, Copy, Debug, Default)]
pub struct Min;
/// The larger value.
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;
/// Bitwise and.
#[derive(Clone, Copy, Debug, Default)]
pub struct BitAnd;
/// Bitwise or.
#[derive(Clone, Copy, Debug, Default)]
pub struct BitOr;
/// Bitwise xor.
#[derive(Clone, Copy, Debug, Default)]
pub struct BitXor;

impl<T: Element> Monoid<T> for Sum {
    const COMMUTATIVE: bool = true;
    const IS_ADD: bool = true;
    #[inline(always)]
    fn identity() -> T {
        T::ZERO
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.add(b)
    }
}
impl<T: Element> Monoid<T> for Product {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> T {
        T::ONE
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.mul(b)
    }
}
impl<T: Element> Monoid<T> for Min {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> T {
        T::HIGHEST
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.min(b)
    }
}
impl<T: Element> Monoid<T> for Max {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> T {
        T::LOWEST
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.max(b)
    }
}
impl<T: Integer> Monoid<T> for BitAnd {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> T {
        T::ALL_ONES
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.and(b)
    }
}
impl<T: Integer> Monoid<T> for BitOr {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> T {
        T::ZERO
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.or(b)
    }
}
impl<T: Integer> Monoid<T> for BitXor {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> T {
        T::ZERO
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.xor(b)
    }
}
