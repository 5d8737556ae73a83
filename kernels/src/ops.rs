//! Associative operators as monoids: an identity and a combine.
//!
//! Kernels never branch on the tail of their input: out-of-range slots are
//! filled with [`Monoid::identity`], which leaves every result unchanged.
//! Integer arithmetic wraps on overflow (two's complement), on the GPU and
//! in the CPU references alike.
//!
//! # Element types and where they accumulate
//!
//! | element | sum, product, dot, sum of squares, norms | min, max, bitwise | argmin/argmax value |
//! |---|---|---|---|
//! | `i8`, `i16` | `i64` | element type | `i64` |
//! | `u8`, `u16` | `u64` | element type | `u64` |
//! | `f16`, `bf16` | `f32` | element type | `f64` |
//! | `i32`, `u32`, `i64`, `u64`, `f32`, `f64` | element type | element type | 8 bytes ([`Element::Wide`]) |
//!
//! The first column is [`Element::Acc`]: the narrow types are widened as
//! they are loaded, so their sums do not wrap at 8 or 16 bits (an `i64`
//! sum of `i8` is exact below 2^56 elements) and half-precision sums keep
//! `f32` precision; the result is returned in that wider type. Integer
//! accumulators still wrap at 64 bits.

use crate::gpu::atomic::AtomicAdd;
use crate::gpu::warp::Shuffle;
use core::marker::PhantomData;
pub use half::{bf16, f16};

/// Values the warp, block and single-pass layers move and combine: plain
/// data that can cross a shuffle (1 to 32 bytes; the scans' single-pass
/// layer takes up to 16), the `T` of a
/// [`Monoid<T>`]. Every [`Element`] is one; so are pairs such as
/// [`Affine`](crate::scan::affine::Affine) maps.
pub trait Item: Shuffle + Copy + 'static {}
impl<T: Shuffle + Copy + 'static> Item for T {}

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
    /// A NaN for the floating-point types; `None` for integers.
    const NAN: Option<Self>;
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
    /// `i32` -> `i64`, `u8` -> `u64`), exactly. Always 8 bytes, so that
    /// [`Indexed`](crate::reduce::reduction::Indexed)`<Wide>` has no padding.
    type Wide: WideElement;
    fn widen(self) -> Self::Wide;
    /// Back from [`Element::Wide`]: exact for what [`Element::widen`] gave.
    fn narrow(w: Self::Wide) -> Self;
    /// The type sums, products, dot products and sums of squares of this
    /// type accumulate in and return: `i64` / `u64` for the 8- and 16-bit
    /// integers, `f32` for `f16` and `bf16`, the type itself otherwise (see
    /// the [module docs](self)).
    type Acc: Element;
    /// The same value as an [`Element::Acc`], exactly.
    fn to_acc(self) -> Self::Acc;
    /// `|x|` (wrapping for `MIN` of signed integers; the identity for
    /// unsigned ones).
    fn abs(self) -> Self;
    /// Strict "less than" in a total order where NaN is above every number
    /// (so argmin and argmax ignore NaNs unless all inputs are NaN).
    fn total_lt(self, o: Self) -> bool;
    /// Whether the value is a NaN (never, for integers).
    fn is_nan(self) -> bool;
}

/// The 8-byte element types (`i64`, `u64`, `f64`): what [`Element::Wide`]
/// may be. A pair of one of these and a `u64` index has no padding.
///
/// # Safety
/// Implement only for types of exactly 8 bytes with no padding.
pub unsafe trait WideElement: Element {
    /// The type's name in kernel entry names (`"i64"`).
    const NAME: &'static str;
}
// SAFETY: 8-byte numbers.
unsafe impl WideElement for i64 {
    const NAME: &'static str = "i64";
}
// SAFETY: 8-byte numbers.
unsafe impl WideElement for u64 {
    const NAME: &'static str = "u64";
}
// SAFETY: 8-byte numbers.
unsafe impl WideElement for f64 {
    const NAME: &'static str = "f64";
}

/// Integer element types: the bitwise operators apply.
pub trait Integer: Element {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    const ALL_ONES: Self;
}

macro_rules! int_element {
    ($($t:ty => $w:ty, $acc:ty, $abs:expr);*) => {$(
        impl Element for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            const NAN: Option<Self> = None;
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn min(self, o: Self) -> Self { if o < self { o } else { self } }
            #[inline(always)] fn max(self, o: Self) -> Self { if o > self { o } else { self } }
            #[inline(always)] fn from_u64(v: u64) -> Self { v as $t }
            type Wide = $w;
            #[inline(always)] fn widen(self) -> $w { self as $w }
            #[inline(always)] fn narrow(w: $w) -> Self { w as $t }
            type Acc = $acc;
            #[inline(always)] fn to_acc(self) -> $acc { self as $acc }
            #[inline(always)] fn abs(self) -> Self { $abs(self) }
            #[inline(always)] fn total_lt(self, o: Self) -> bool { self < o }
            #[inline(always)] fn is_nan(self) -> bool { false }
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
    i8 => i64, i64, |x: i8| x.wrapping_abs();
    u8 => u64, u64, |x: u8| x;
    i16 => i64, i64, |x: i16| x.wrapping_abs();
    u16 => u64, u64, |x: u16| x;
    i32 => i64, i32, |x: i32| x.wrapping_abs();
    u32 => u64, u32, |x: u32| x;
    i64 => i64, i64, |x: i64| x.wrapping_abs();
    u64 => u64, u64, |x: u64| x
);

macro_rules! float_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            const NAN: Option<Self> = Some(<$t>::NAN);
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn min(self, o: Self) -> Self { <$t>::min(self, o) }
            #[inline(always)] fn max(self, o: Self) -> Self { <$t>::max(self, o) }
            #[inline(always)] fn from_u64(v: u64) -> Self { v as $t }
            type Wide = f64;
            #[inline(always)] fn widen(self) -> f64 { self as f64 }
            #[inline(always)] fn narrow(w: f64) -> Self { w as $t }
            type Acc = $t;
            #[inline(always)] fn to_acc(self) -> $t { self }
            #[inline(always)] fn abs(self) -> Self { if self < 0.0 { -self } else { self } }
            #[inline(always)] fn total_lt(self, o: Self) -> bool {
                self < o || (o != o && self == self)
            }
            #[allow(clippy::eq_op)]
            #[inline(always)] fn is_nan(self) -> bool { self != self }
        }
    )*};
}
float_element!(f32, f64);

/// `f16` and `bf16`: compared and accumulated as `f32` (every value of
/// either converts to `f32` exactly); results in the element type itself
/// (min, max) are one of the inputs, never rounded. `add` and `mul` round
/// the `f32` result once to the element type (the reductions accumulate
/// in `f32` instead, see [`Element::Acc`]).
macro_rules! half_element {
    ($($t:ident => $to_f32:path),*) => {$(
        impl Element for $t {
            const ZERO: Self = $t::ZERO;
            const ONE: Self = $t::ONE;
            const LOWEST: Self = $t::NEG_INFINITY;
            const HIGHEST: Self = $t::INFINITY;
            const NAN: Option<Self> = Some($t::NAN);
            #[inline(always)] fn add(self, o: Self) -> Self { $t::from_f32(self.to_acc() + o.to_acc()) }
            #[inline(always)] fn mul(self, o: Self) -> Self { $t::from_f32(self.to_acc() * o.to_acc()) }
            #[inline(always)] fn min(self, o: Self) -> Self {
                let (a, b) = (self.to_acc(), o.to_acc());
                if b < a || a != a { o } else { self }
            }
            #[inline(always)] fn max(self, o: Self) -> Self {
                let (a, b) = (self.to_acc(), o.to_acc());
                if b > a || a != a { o } else { self }
            }
            #[inline(always)] fn from_u64(v: u64) -> Self { $t::from_f32(v as f32) }
            type Wide = f64;
            #[inline(always)] fn widen(self) -> f64 { self.to_acc() as f64 }
            #[inline(always)] fn narrow(w: f64) -> Self { $t::from_f32(w as f32) }
            type Acc = f32;
            #[inline(always)] fn to_acc(self) -> f32 { $to_f32(self.to_bits()) }
            #[inline(always)] fn abs(self) -> Self { $t::from_bits(self.to_bits() & 0x7fff) }
            #[inline(always)] fn total_lt(self, o: Self) -> bool { self.to_acc().total_lt(o.to_acc()) }
            /// From the bits: every exponent bit set and a non-zero fraction.
            #[inline(always)] fn is_nan(self) -> bool { self.to_bits() & 0x7fff > $t::INFINITY.to_bits() }
        }
    )*};
}
half_element!(f16 => crate::gpu::f16_to_f32, bf16 => crate::gpu::bf16_to_f32);

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

/// The name an operator's kernels carry, and the host finds them by: the
/// `name` of its `ops [name = ..]` entry in
/// [`entries!`](crate::entries) (`reduce_vectorized_<NAME>_i32_b256`).
/// Implement it next to the operator, in the crate that defines it: the
/// host's `gpuprim::reduce::ReduceOp` and `gpuprim::scan::ScanOp` hold for
/// every [`Named`] operator with the right [`Monoid`] or [`Accumulate`].
///
/// ```
/// use gpuprim_kernels::ops::{Monoid, Named};
/// #[derive(Clone, Copy)]
/// struct MaxAbs;
/// impl Monoid<i32> for MaxAbs {
///     fn identity() -> i32 { 0 }
///     // The larger magnitude; of equal ones the larger value (commutative).
///     fn combine(a: i32, b: i32) -> i32 { if (b.unsigned_abs(), b) > (a.unsigned_abs(), a) { b } else { a } }
/// }
/// impl Named for MaxAbs {
///     const NAME: &'static str = "maxabs";
/// }
/// ```
pub trait Named {
    /// Lower-case letters, digits and `_`, unique among the operators a
    /// program loads kernels for.
    const NAME: &'static str;
}

/// A transform-reduce: each element of the input (with its index) becomes
/// a value of [`Map::Out`], and those values are combined by [`Map::Op`],
/// an associative and commutative [`Monoid`]. The map runs as the input is
/// loaded, so the input is read once (`count_if`, mean and variance, a sum
/// of squared differences, min and max together).
///
/// The map itself is the state the kernel gets: `self` is copied to the
/// device as two 8-byte kernel parameters, so a map is plain data of at
/// most 16 bytes (a threshold, a centre, a scale), and usually a unit
/// struct. Its [`Named::NAME`] names its kernels, as an operator's does
/// (`reduce_map_<NAME>_<type>_b<block>`, from an `entries!` line
/// `ops [<NAME> = YourMap]`). `Out` may be any [`Item`] of up to 32 bytes.
///
/// ```
/// use gpuprim_kernels::ops::{Map, Named, Sum};
/// /// How many elements are above a threshold (counted in `u32`).
/// #[derive(Clone, Copy)]
/// #[repr(C)]
/// pub struct CountAbove {
///     pub threshold: f32,
/// }
/// impl Map<f32> for CountAbove {
///     type Out = u32;
///     type Op = Sum;
///     fn map(&self, x: f32, _index: u64) -> u32 {
///         (x > self.threshold) as u32
///     }
/// }
/// impl Named for CountAbove {
///     const NAME: &'static str = "count_above";
/// }
/// ```
pub trait Map<In>: Named + Copy + 'static {
    /// What each element becomes, and what partials and the result hold.
    type Out: Item;
    /// How values of `Out` combine: associative and commutative (blocks
    /// combine in tree order, not input order).
    type Op: Monoid<Self::Out>;
    /// Element `x`, found at `index` of the input.
    fn map(&self, x: In, index: u64) -> Self::Out;
}

/// The reduction of a plain operator as a [`Map`]: every element is its
/// own value, combined by `Op`. What reduces elements of your own types
/// (`ops [matmul = Fold<MatMul>] types [Mat2]`); named as `Op`. Holds no
/// state (operators are types: [`Monoid`] has no `self`).
#[derive(Debug)]
pub struct Fold<Op>(PhantomData<Op>);

impl<Op> Fold<Op> {
    /// The map of `Op`.
    pub const fn new() -> Self {
        Fold(PhantomData)
    }
}
impl<Op> Default for Fold<Op> {
    fn default() -> Self {
        Fold::new()
    }
}
impl<Op> Clone for Fold<Op> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Op> Copy for Fold<Op> {}
// SAFETY: a zero-sized type: no bytes, so none uninitialised.
unsafe impl<Op: 'static> bytemuck::NoUninit for Fold<Op> {}

impl<T: Item, Op: Monoid<T> + Named> Map<T> for Fold<Op> {
    type Out = T;
    type Op = Op;
    #[inline(always)]
    fn map(&self, x: T, _index: u64) -> T {
        x
    }
}
impl<Op: Named> Named for Fold<Op> {
    const NAME: &'static str = Op::NAME;
}

/// How an operator reduces elements of `T`: the type it accumulates (and
/// returns) in, and how an element enters it. Sums and products accumulate
/// in [`Element::Acc`] (wider than `T` for the 8- and 16-bit types);
/// min, max and the bitwise operators in `T` itself.
///
/// An operator of your own that reduces in its element type needs
/// `type Acc = T` and `lift` the identity:
///
/// ```
/// use gpuprim_kernels::ops::{Accumulate, Monoid};
/// #[derive(Clone, Copy)]
/// struct Gcd;
/// impl Monoid<u32> for Gcd {
///     fn identity() -> u32 { 0 }
///     fn combine(mut a: u32, mut b: u32) -> u32 {
///         while b != 0 { (a, b) = (b, a % b) }
///         a
///     }
/// }
/// impl Accumulate<u32> for Gcd {
///     type Acc = u32;
///     fn lift(x: u32) -> u32 { x }
/// }
/// ```
pub trait Accumulate<T: Element>: Monoid<<Self as Accumulate<T>>::Acc> {
    type Acc: Element;
    fn lift(x: T) -> Self::Acc;
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

macro_rules! accumulate_in {
    ($($op:ident: $bound:ident => $acc:ident;)*) => {$(
        impl<T: $bound> Accumulate<T> for $op {
            accumulate_in!(@body $acc);
        }
    )*};
    (@body wide) => {
        type Acc = T::Acc;
        #[inline(always)]
        fn lift(x: T) -> T::Acc {
            x.to_acc()
        }
    };
    (@body same) => {
        type Acc = T;
        #[inline(always)]
        fn lift(x: T) -> T {
            x
        }
    };
}
macro_rules! named {
    ($($op:ident => $name:literal,)*) => {$(
        impl Named for $op {
            const NAME: &'static str = $name;
        }
    )*};
}
named! {
    Sum => "sum",
    Product => "product",
    Min => "min",
    Max => "max",
    BitAnd => "and",
    BitOr => "or",
    BitXor => "xor",
}

accumulate_in! {
    Sum: Element => wide;
    Product: Element => wide;
    Min: Element => same;
    Max: Element => same;
    BitAnd: Integer => same;
    BitOr: Integer => same;
    BitXor: Integer => same;
}
