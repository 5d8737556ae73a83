//! What a reduction computes, apart from how: where each element comes from
//! (one input, two inputs, a transformed input, a value with its index) and
//! the monoid that combines them.

use crate::gpu::global;
use crate::gpu::warp::Shuffle;
use crate::ops::{Element, Monoid};
use core::marker::PhantomData;

/// A reduction: element `i` of the input(s) becomes an accumulator value
/// with [`Reduction::load`], and accumulators combine associatively and
/// commutatively.
pub trait Reduction: Copy + 'static {
    /// Input element type.
    type In: Copy;
    /// Accumulator type (what partials hold).
    type Acc: Shuffle;
    /// Accumulator bytes that the atomic finish can update in one step
    /// (4 or 8); 0 when it cannot.
    const ATOMIC_BYTES: usize = {
        let s = core::mem::size_of::<Self::Acc>();
        if s == 4 || s == 8 { s } else { 0 }
    };
    fn identity() -> Self::Acc;
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// `*p = combine(*p, v)` atomically; by default a compare-and-swap
    /// loop on the accumulator's bits (see [`super::block::cas_combine`]).
    ///
    /// # Safety
    /// `p` is a live, aligned accumulator and `ATOMIC_BYTES` is 4 or 8.
    #[inline(always)]
    unsafe fn atomic_combine(p: *mut Self::Acc, v: Self::Acc) {
        // SAFETY: forwarded.
        unsafe { super::block::cas_combine::<Self>(p, v) }
    }
    /// Element `i` from the inputs `a` (and `b` for two-input reductions).
    ///
    /// # Safety
    /// `i` is below the inputs' length.
    unsafe fn load(a: *const Self::In, b: *const Self::In, i: u64) -> Self::Acc;
    /// Elements `i .. i + W` with 16-byte vector loads where `W` elements
    /// of `In` are 16 bytes.
    ///
    /// # Safety
    /// `i + W` is at most the inputs' length; `a` (and `b`) + `i` are
    /// 16-byte aligned.
    #[inline(always)]
    unsafe fn load_vec<const W: usize>(a: *const Self::In, b: *const Self::In, i: u64) -> [Self::Acc; W] {
        let mut out = [Self::identity(); W];
        let mut k = 0;
        while k < W {
            // SAFETY: forwarded.
            out[k] = unsafe { Self::load(a, b, i + k as u64) };
            k += 1;
        }
        out
    }
}

/// `x[i]` combined with `Op`: sum, product, min, max, and, or, xor.
#[derive(Clone, Copy)]
pub struct Plain<T, Op>(PhantomData<(T, Op)>);

impl<T: Element, Op: Monoid<T>> Reduction for Plain<T, Op> {
    type In = T;
    type Acc = T;
    #[inline(always)]
    unsafe fn atomic_combine(p: *mut T, v: T) {
        if Op::IS_ADD {
            // One native atomic add instead of a CAS loop that every block
            // retries under contention.
            // SAFETY: forwarded.
            unsafe { crate::gpu::atomic::add(p, v) };
        } else {
            // SAFETY: forwarded.
            unsafe { super::block::cas_combine::<Self>(p, v) }
        }
    }
    #[inline(always)]
    fn identity() -> T {
        Op::identity()
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        Op::combine(a, b)
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load(a: *const T, _b: *const T, i: u64) -> T {
        // SAFETY: i < n (caller).
        unsafe { global::load(a.add(i as usize)) }
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load_vec<const W: usize>(a: *const T, _b: *const T, i: u64) -> [T; W] {
        // SAFETY: aligned and in bounds (caller).
        unsafe { global::load_vec::<T, W>(a.add(i as usize)) }
    }
}

/// `x[i] * y[i]` summed: the dot product (wrapping for integers).
#[derive(Clone, Copy)]
pub struct Dot<T>(PhantomData<T>);

impl<T: Element> Reduction for Dot<T> {
    type In = T;
    type Acc = T;
    #[inline(always)]
    unsafe fn atomic_combine(p: *mut T, v: T) {
        // SAFETY: forwarded; a sum, so a native atomic add.
        unsafe { crate::gpu::atomic::add(p, v) };
    }
    #[inline(always)]
    fn identity() -> T {
        T::ZERO
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.add(b)
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load(a: *const T, b: *const T, i: u64) -> T {
        // SAFETY: i < n (caller).
        unsafe { global::load(a.add(i as usize)).mul(global::load(b.add(i as usize))) }
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load_vec<const W: usize>(a: *const T, b: *const T, i: u64) -> [T; W] {
        // SAFETY: aligned and in bounds (caller).
        let (x, y) =
            unsafe { (global::load_vec::<T, W>(a.add(i as usize)), global::load_vec::<T, W>(b.add(i as usize))) };
        let mut out = [T::ZERO; W];
        let mut k = 0;
        while k < W {
            out[k] = x[k].mul(y[k]);
            k += 1;
        }
        out
    }
}

/// A map applied to each element before it is summed ([`MapSum`]).
pub trait ElementMap: Copy + 'static {
    fn map<T: Element>(x: T) -> T;
}

/// `|x|`, for the L1 norm.
#[derive(Clone, Copy)]
pub struct Abs;
impl ElementMap for Abs {
    #[inline(always)]
    fn map<T: Element>(x: T) -> T {
        x.abs()
    }
}

/// `x^2`, for the L2 norm and the mean square.
#[derive(Clone, Copy)]
pub struct Square;
impl ElementMap for Square {
    #[inline(always)]
    fn map<T: Element>(x: T) -> T {
        x.mul(x)
    }
}

/// `M(x[i])` summed (wrapping for integers).
#[derive(Clone, Copy)]
pub struct MapSum<T, M>(PhantomData<(T, M)>);

/// `|x[i]|` summed: the L1 norm.
pub type SumAbs<T> = MapSum<T, Abs>;
/// `x[i]^2` summed: the squared L2 norm (and, over n, the mean square).
pub type SumSquares<T> = MapSum<T, Square>;

impl<T: Element, M: ElementMap> Reduction for MapSum<T, M> {
    type In = T;
    type Acc = T;
    #[inline(always)]
    unsafe fn atomic_combine(p: *mut T, v: T) {
        // SAFETY: forwarded; a sum, so a native atomic add.
        unsafe { crate::gpu::atomic::add(p, v) };
    }
    #[inline(always)]
    fn identity() -> T {
        T::ZERO
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.add(b)
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load(a: *const T, _b: *const T, i: u64) -> T {
        // SAFETY: i < n (caller).
        M::map(unsafe { global::load(a.add(i as usize)) })
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load_vec<const W: usize>(a: *const T, _b: *const T, i: u64) -> [T; W] {
        // SAFETY: aligned and in bounds (caller).
        let mut x = unsafe { global::load_vec::<T, W>(a.add(i as usize)) };
        let mut k = 0;
        while k < W {
            x[k] = M::map(x[k]);
            k += 1;
        }
        x
    }
}

/// A value with the index it came from, for argmin and argmax. The value is
/// held widened to 8 bytes so the pair has no padding (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Indexed<W> {
    pub value: W,
    pub index: u64,
}

// SAFETY: two 8-byte fields, no padding, plain data.
unsafe impl<W: Element> Shuffle for Indexed<W> {}

/// Which extreme an [`Arg`] reduction keeps.
pub trait Extreme: Copy + 'static {
    /// Whether `a` beats `b` (ties go to the smaller index elsewhere).
    fn beats<W: Element>(a: W, b: W) -> bool;
    /// The value every element beats or ties.
    fn worst<W: Element>() -> W;
}
/// Keep the smallest value.
#[derive(Clone, Copy)]
pub struct Smallest;
/// Keep the largest value.
#[derive(Clone, Copy)]
pub struct Largest;
impl Extreme for Smallest {
    #[inline(always)]
    fn beats<W: Element>(a: W, b: W) -> bool {
        a.total_lt(b)
    }
    #[inline(always)]
    fn worst<W: Element>() -> W {
        W::HIGHEST
    }
}
impl Extreme for Largest {
    #[inline(always)]
    fn beats<W: Element>(a: W, b: W) -> bool {
        // A NaN never beats anything, and any number beats a NaN.
        #[allow(clippy::eq_op)]
        let a_is_number = a == a;
        #[allow(clippy::eq_op)]
        let b_is_nan = b != b;
        a_is_number && (b_is_nan || b < a)
    }
    #[inline(always)]
    fn worst<W: Element>() -> W {
        W::LOWEST
    }
}

#[inline(always)]
fn pick<W: Element, E: Extreme>(a: Indexed<W>, b: Indexed<W>) -> Indexed<W> {
    if E::beats(b.value, a.value) || (!E::beats(a.value, b.value) && b.index < a.index) { b } else { a }
}

/// The first index holding the smallest (or largest) value of `x`.
///
/// Ties go to the smaller index, so the result does not depend on the
/// combine order. NaNs never win unless every input is NaN; the identity
/// is index `u64::MAX`.
#[derive(Clone, Copy)]
pub struct Arg<T, E>(PhantomData<(T, E)>);

impl<T: Element, E: Extreme> Reduction for Arg<T, E> {
    type In = T;
    type Acc = Indexed<T::Wide>;
    #[inline(always)]
    fn identity() -> Self::Acc {
        Indexed { value: E::worst::<T::Wide>(), index: u64::MAX }
    }
    #[inline(always)]
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc {
        pick::<T::Wide, E>(a, b)
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load(a: *const T, _b: *const T, i: u64) -> Self::Acc {
        // SAFETY: i < n (caller).
        Indexed { value: unsafe { global::load(a.add(i as usize)) }.widen(), index: i }
    }
}

/// Partials of an [`Arg`] reduction, reduced again.
#[derive(Clone, Copy)]
pub struct ArgPartials<T, E>(PhantomData<(T, E)>);

impl<T: Element, E: Extreme> Reduction for ArgPartials<T, E> {
    type In = Indexed<T::Wide>;
    type Acc = Indexed<T::Wide>;
    #[inline(always)]
    fn identity() -> Self::Acc {
        <Arg<T, E> as Reduction>::identity()
    }
    #[inline(always)]
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc {
        pick::<T::Wide, E>(a, b)
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load(a: *const Self::In, _b: *const Self::In, i: u64) -> Self::Acc {
        // SAFETY: i < n (caller).
        unsafe { global::load(a.add(i as usize)) }
    }
}
