//! What a reduction computes, apart from how: where each element comes from
//! (one input, two inputs, a transformed input, a value with its index) and
//! the monoid that combines them.

use crate::gpu::global;
use crate::gpu::warp::Shuffle;
use crate::ops::{Accumulate, Element, WideElement};
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
    /// loop on the accumulator's bits (see [`super::finish::cas_combine`]).
    ///
    /// # Safety
    /// `p` is a live, aligned accumulator and `ATOMIC_BYTES` is 4 or 8.
    #[inline(always)]
    unsafe fn atomic_combine(p: *mut Self::Acc, v: Self::Acc) {
        // SAFETY: forwarded.
        unsafe { super::finish::cas_combine::<Self>(p, v) }
    }
    /// Element `i` from the inputs `a` (and `b` for two-input reductions).
    ///
    /// # Safety
    /// `i` is below the inputs' length.
    unsafe fn load(a: *const Self::In, b: *const Self::In, i: u64) -> Self::Acc;
    /// The `W` elements at `i` of `a` (and of `b` for two-input
    /// reductions), as loaded: one 16-byte vector load per input where `W`
    /// elements of `In` are 16 bytes. [`Reduction::lift`] turns each into
    /// an accumulator: kept apart, a thread's loads stay 16 bytes of raw
    /// registers each until they are combined.
    ///
    /// # Safety
    /// `i + W` is at most the inputs' length; `a` (and `b`) + `i` are
    /// 16-byte aligned.
    #[inline(always)]
    #[track_caller]
    unsafe fn load_raw<const W: usize>(a: *const Self::In, _b: *const Self::In, i: u64) -> Raw<Self::In, W> {
        // SAFETY: aligned and in bounds (caller).
        let x = unsafe { global::load_vec::<Self::In, W>(a.add(i as usize)) };
        Raw { a: x, b: x }
    }
    /// Element `k` of `raw`, loaded from index `i + k`, as an accumulator.
    fn lift<const W: usize>(raw: &Raw<Self::In, W>, k: usize, i: u64) -> Self::Acc;
    /// Combine the `W` elements of `raw`, loaded from index `i`, into the
    /// `A` accumulators of a thread; `slot` counts the vectors a thread
    /// combines at once (0, 1, 2, ...). By default lane `k` goes to
    /// accumulator `k % A`, lifted first; a reduction may instead combine
    /// the lanes more cheaply among themselves first.
    #[inline(always)]
    fn combine_vector<const W: usize, const A: usize>(
        acc: &mut [Self::Acc; A],
        raw: &Raw<Self::In, W>,
        i: u64,
        _slot: usize,
    ) {
        unrolled!(W, |k| acc[k % A] = Self::combine(acc[k % A], Self::lift::<W>(raw, k, i)));
    }
}

/// What [`Reduction::load_raw`] read: `W` elements of each input (`b` is a
/// copy of `a` for one-input reductions, and unused).
#[derive(Clone, Copy)]
pub struct Raw<T, const W: usize> {
    pub a: [T; W],
    pub b: [T; W],
}

/// `x[i]` lifted into `Op`'s accumulator and combined with `Op`: sum,
/// product, min, max, and, or, xor. Sums and products of the 8- and 16-bit
/// types accumulate in a wider type ([`Accumulate`]).
#[derive(Clone, Copy)]
pub struct Plain<T, Op>(PhantomData<(T, Op)>);

impl<T: Element, Op: Accumulate<T>> Reduction for Plain<T, Op> {
    type In = T;
    type Acc = Op::Acc;
    #[inline(always)]
    unsafe fn atomic_combine(p: *mut Op::Acc, v: Op::Acc) {
        if Op::IS_ADD {
            // One native atomic add instead of a CAS loop that every block
            // retries under contention.
            // SAFETY: forwarded.
            unsafe { crate::gpu::atomic::add(p, v) };
        } else {
            // SAFETY: forwarded.
            unsafe { super::finish::cas_combine::<Self>(p, v) }
        }
    }
    #[inline(always)]
    fn identity() -> Op::Acc {
        Op::identity()
    }
    #[inline(always)]
    fn combine(a: Op::Acc, b: Op::Acc) -> Op::Acc {
        Op::combine(a, b)
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load(a: *const T, _b: *const T, i: u64) -> Op::Acc {
        // SAFETY: i < n (caller).
        Op::lift(unsafe { global::load(a.add(i as usize)) })
    }
    #[inline(always)]
    fn lift<const W: usize>(raw: &Raw<T, W>, k: usize, _i: u64) -> Op::Acc {
        Op::lift(raw.a[k])
    }
}

/// `x[i] * y[i]` summed: the dot product (wrapping for integers), in
/// [`Element::Acc`]: both factors are widened before they are multiplied.
#[derive(Clone, Copy)]
pub struct Dot<T>(PhantomData<T>);

impl<T: Element> Reduction for Dot<T> {
    type In = T;
    type Acc = T::Acc;
    #[inline(always)]
    unsafe fn atomic_combine(p: *mut T::Acc, v: T::Acc) {
        // SAFETY: forwarded; a sum, so a native atomic add.
        unsafe { crate::gpu::atomic::add(p, v) };
    }
    #[inline(always)]
    fn identity() -> T::Acc {
        <T::Acc as Element>::ZERO
    }
    #[inline(always)]
    fn combine(a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load(a: *const T, b: *const T, i: u64) -> T::Acc {
        // SAFETY: i < n (caller).
        unsafe { global::load(a.add(i as usize)).to_acc().mul(global::load(b.add(i as usize)).to_acc()) }
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load_raw<const W: usize>(a: *const T, b: *const T, i: u64) -> Raw<T, W> {
        // SAFETY: aligned and in bounds (caller).
        unsafe {
            Raw { a: global::load_vec::<T, W>(a.add(i as usize)), b: global::load_vec::<T, W>(b.add(i as usize)) }
        }
    }
    #[inline(always)]
    fn lift<const W: usize>(raw: &Raw<T, W>, k: usize, _i: u64) -> T::Acc {
        raw.a[k].to_acc().mul(raw.b[k].to_acc())
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

/// `M(x[i])` summed (wrapping for integers), in [`Element::Acc`]: the map
/// applies to the widened element (so `|i8::MIN|` is 128, and `x^2` of a
/// 16-bit integer is exact).
#[derive(Clone, Copy)]
pub struct MapSum<T, M>(PhantomData<(T, M)>);

/// `|x[i]|` summed: the L1 norm.
pub type SumAbs<T> = MapSum<T, Abs>;
/// `x[i]^2` summed: the squared L2 norm (and, over n, the mean square).
pub type SumSquares<T> = MapSum<T, Square>;

impl<T: Element, M: ElementMap> Reduction for MapSum<T, M> {
    type In = T;
    type Acc = T::Acc;
    #[inline(always)]
    unsafe fn atomic_combine(p: *mut T::Acc, v: T::Acc) {
        // SAFETY: forwarded; a sum, so a native atomic add.
        unsafe { crate::gpu::atomic::add(p, v) };
    }
    #[inline(always)]
    fn identity() -> T::Acc {
        <T::Acc as Element>::ZERO
    }
    #[inline(always)]
    fn combine(a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load(a: *const T, _b: *const T, i: u64) -> T::Acc {
        // SAFETY: i < n (caller).
        M::map(unsafe { global::load(a.add(i as usize)) }.to_acc())
    }
    #[inline(always)]
    fn lift<const W: usize>(raw: &Raw<T, W>, k: usize, _i: u64) -> T::Acc {
        M::map(raw.a[k].to_acc())
    }
}

/// A value with the index it came from, for argmin and argmax.
///
/// The value is held widened to an 8-byte type ([`Element::Wide`], always
/// a [`WideElement`]): with a 4-byte `W` the pair would have 4 bytes of
/// padding after the value, which a shuffle or a copy to the host would
/// read as uninitialised memory. With 8 bytes it is 16 bytes of plain
/// data, and its layout is the same on every target: `value` at offset 0,
/// `index` at offset 8. Only `Indexed<W: WideElement>` is `Shuffle`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Indexed<W> {
    pub value: W,
    pub index: u64,
}

// SAFETY: two 8-byte fields (`WideElement` is 8 bytes by contract), no
// padding, plain data.
unsafe impl<W: WideElement> Shuffle for Indexed<W> {}

const _: () = {
    assert!(core::mem::size_of::<Indexed<i64>>() == 16);
    assert!(core::mem::size_of::<Indexed<u64>>() == 16);
    assert!(core::mem::size_of::<Indexed<f64>>() == 16);
    assert!(core::mem::offset_of!(Indexed<f64>, index) == 8);
};

/// Which extreme an [`Arg`] reduction keeps.
pub trait Extreme: Copy + 'static {
    /// Whether `a` beats `b` (ties go to the smaller index elsewhere).
    fn beats<W: Element>(a: W, b: W) -> bool;
    /// The better of `a` and `b` ([`Element::min`] or [`Element::max`]:
    /// a NaN loses to a number).
    fn keep<W: Element>(a: W, b: W) -> W;
    /// The value every element beats or ties.
    fn worst<W: Element>() -> W;
    /// Whether the larger value wins ([`Largest`]).
    const LARGEST: bool;
}
/// Keep the smallest value.
#[derive(Clone, Copy)]
pub struct Smallest;
/// Keep the largest value.
#[derive(Clone, Copy)]
pub struct Largest;
impl Extreme for Smallest {
    const LARGEST: bool = false;
    #[inline(always)]
    fn beats<W: Element>(a: W, b: W) -> bool {
        a.total_lt(b)
    }
    #[inline(always)]
    fn keep<W: Element>(a: W, b: W) -> W {
        a.min(b)
    }
    #[inline(always)]
    fn worst<W: Element>() -> W {
        W::HIGHEST
    }
}
impl Extreme for Largest {
    const LARGEST: bool = true;
    #[inline(always)]
    fn beats<W: Element>(a: W, b: W) -> bool {
        // A NaN never beats anything, and any number beats a NaN. (With
        // neither a NaN, `total_lt` is `<`; through `Element` the half
        // types compare as f32, not with `half`'s software `PartialOrd`.)
        !a.is_nan() && (b.is_nan() || b.total_lt(a))
    }
    #[inline(always)]
    fn keep<W: Element>(a: W, b: W) -> W {
        a.max(b)
    }
    #[inline(always)]
    fn worst<W: Element>() -> W {
        W::LOWEST
    }
}

#[inline(always)]
pub(crate) fn pick<W: Element, E: Extreme>(a: Indexed<W>, b: Indexed<W>) -> Indexed<W> {
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
    #[inline(always)]
    fn lift<const W: usize>(raw: &Raw<T, W>, k: usize, i: u64) -> Self::Acc {
        Indexed { value: raw.a[k].widen(), index: i + k as u64 }
    }
    /// The vector's first extreme lane, found by comparing the elements
    /// themselves, then one combine of its widened value and 64-bit index
    /// (instead of `W`): what keeps argmin and argmax of the narrow types
    /// from being bound by arithmetic. Vector `slot` goes to accumulator
    /// `slot % A`.
    #[inline(always)]
    fn combine_vector<const W: usize, const A: usize>(acc: &mut [Self::Acc; A], raw: &Raw<T, W>, i: u64, slot: usize) {
        let (mut best, mut at) = (raw.a[0], 0u64);
        unrolled!(W, |k| if k > 0 {
            // Selects of values: a branch, or a select of the lanes'
            // addresses, would keep the vectors in local memory.
            let (v, take) = (raw.a[k], E::beats(raw.a[k], best));
            best = core::hint::select_unpredictable(take, v, best);
            at = core::hint::select_unpredictable(take, k as u64, at);
        });
        let s = slot % A;
        acc[s] = pick::<T::Wide, E>(acc[s], Indexed { value: best.widen(), index: i + at });
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
    #[inline(always)]
    fn lift<const W: usize>(raw: &Raw<Self::In, W>, k: usize, _i: u64) -> Self::Acc {
        raw.a[k]
    }
}
