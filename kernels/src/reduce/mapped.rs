//! Transform-reduce: the default reduction with a [`Map`] applied as each
//! element is loaded, so the input is read once; and reductions over any
//! [`Item`] (your own element types, through [`Fold`](crate::ops::Fold)).
//!
//! One kernel, [`reduce_map`], does every pass: the first maps the input,
//! and the passes over block partials (the relaunch finish) read values
//! that are already mapped (`mode` bit [`PARTIALS_INPUT`]). A map or
//! element type therefore needs a single instance per block size.
//!
//! Built in: [`MinMax`] (smallest and largest value in one pass) and
//! [`ArgMinMax`] (both with their first indices; 32-byte accumulators).

use super::finish::{block_reduce, finish};
use super::reduction::{Indexed, Largest, Raw, Reduction, Smallest, pick};
use super::vectorized::{UNROLL, grid_stride};
use crate::gpu::warp::Shuffle;
use crate::gpu::{self, Shared, global};
use crate::ops::{Element, Item, Map, Monoid, Named, WideElement};
use core::marker::PhantomData;

/// `mode` bit of [`reduce_map`]: the input is a previous pass's partials
/// (values of `Map::Out`), combined as they are, not mapped. The low bits
/// are the finish ([`super::finish::mode`]).
pub const PARTIALS_INPUT: u32 = 4;

/// Values of `Acc` combined by `Op`: the reduction of partials, and the
/// accumulators of [`reduce_map`]'s block and finishing layers.
#[derive(Clone, Copy)]
pub struct Combine<Acc, Op>(PhantomData<(Acc, Op)>);

impl<Acc: Item, Op: Monoid<Acc>> Reduction for Combine<Acc, Op> {
    type In = Acc;
    type Acc = Acc;
    #[inline(always)]
    fn identity() -> Acc {
        Op::identity()
    }
    #[inline(always)]
    fn combine(a: Acc, b: Acc) -> Acc {
        Op::combine(a, b)
    }
    #[inline(always)]
    #[track_caller]
    unsafe fn load(a: *const Acc, _b: *const Acc, i: u64) -> Acc {
        // SAFETY: i < n (caller).
        unsafe { global::load(a.add(i as usize)) }
    }
    #[inline(always)]
    fn lift<const W: usize>(raw: &Raw<Acc, W>, k: usize, _i: u64) -> Acc {
        raw.a[k]
    }
}

/// The map a launch was given: its bytes, passed as two 8-byte kernel
/// parameters (a map is at most 16 bytes of plain data; the host copied
/// them from a value of `M`).
#[inline(always)]
pub fn state<M: Copy>(s0: u64, s1: u64) -> M {
    const { assert!(core::mem::size_of::<M>() <= 16, "a map is at most 16 bytes (two kernel parameters)") };
    let words = [s0, s1];
    // SAFETY: the words hold the bytes of a value of `M` (the launcher's
    // contract), and `M` fits in them (checked above).
    unsafe { core::ptr::read_unaligned(words.as_ptr() as *const M) }
}

/// Transform-reduce (and reduce of any [`Item`] through [`Fold`](crate::ops::Fold)): each
/// element `x[i]` becomes `map.map(x[i], i)`, and the values combine by
/// `M::Op`. The map's bytes are `s0`, `s1` ([`state`]).
///
/// The first pass reads the input as the default reduction does
/// ([`super::reduce_vectorized`]): [`UNROLL`] 16-byte vector loads in
/// flight per thread for 1- to 8-byte elements, mapped lane by lane into
/// independent accumulators; other sizes, and inputs that are not 16-byte
/// aligned, by a scalar grid-stride loop. With [`PARTIALS_INPUT`] in
/// `mode`, `a` holds `n` values of `M::Out` (a relaunch over partials).
/// Then the block reduction and the finish of `mode & 3`, as every
/// reduction.
///
/// # Safety
/// As [`super::reduce_vectorized`]; `s0`, `s1` are the bytes of an `M`;
/// `partials` and `out` hold values of `M::Out`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce_map<T: Copy, M: Map<T>, const B: u32>(
    a: *const T,
    s0: u64,
    s1: u64,
    n: u64,
    partials: *mut M::Out,
    out: *mut M::Out,
    counter: *mut u32,
    mode: u32,
) {
    let s = Shared::<M::Out>::dynamic();
    let acc = if mode & PARTIALS_INPUT != 0 {
        let p = a as *const M::Out;
        // SAFETY: `a` holds n partials (caller).
        unsafe { grid_stride::<Combine<M::Out, M::Op>, B>(p, p, n) }
    } else {
        let map = state::<M>(s0, s1);
        let aligned = (a as usize).is_multiple_of(16);
        // SAFETY (every arm): forwarded; W elements of `T` are 16 bytes.
        match core::mem::size_of::<T>() {
            _ if !aligned => unsafe { mapped_scalar::<T, M, B>(&map, a, n) },
            1 => unsafe { mapped_vector::<T, M, B, 16, 4>(&map, a, n) },
            2 => unsafe { mapped_vector::<T, M, B, 8, 4>(&map, a, n) },
            4 => unsafe { mapped_vector::<T, M, B, 4, 4>(&map, a, n) },
            8 => unsafe { mapped_vector::<T, M, B, 2, 2>(&map, a, n) },
            _ => unsafe { mapped_scalar::<T, M, B>(&map, a, n) },
        }
    };
    let total = block_reduce::<Combine<M::Out, M::Op>, B>(acc, s);
    // SAFETY: forwarded.
    unsafe { finish::<Combine<M::Out, M::Op>, B>(total, s, partials, out, counter, mode & 3) };
}

/// The scalar grid-stride loop, mapping each element.
#[inline(always)]
#[track_caller]
unsafe fn mapped_scalar<T: Copy, M: Map<T>, const B: u32>(map: &M, a: *const T, n: u64) -> M::Out {
    let stride = B as u64 * gpu::grid_dim() as u64;
    let mut i = gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64;
    let mut acc = M::Op::identity();
    while i < n {
        // SAFETY: i < n.
        acc = M::Op::combine(acc, map.map(unsafe { global::load(a.add(i as usize)) }, i));
        i += stride;
    }
    acc
}

/// The vectorised grid-stride loop of [`super::reduce_vectorized`], with
/// each lane mapped: `W` elements per 16-byte vector, lane `k` into
/// accumulator `k % A`.
#[inline(always)]
#[track_caller]
unsafe fn mapped_vector<T: Copy, M: Map<T>, const B: u32, const W: usize, const A: usize>(
    map: &M,
    a: *const T,
    n: u64,
) -> M::Out {
    const { assert!(UNROLL == 4) };
    let vectors = n / W as u64;
    let tid = gpu::thread_idx() as u64;
    let chunk = B as u64 * UNROLL as u64;
    let stride = chunk * gpu::grid_dim() as u64;
    let mut base = gpu::block_idx() as u64 * chunk;
    let mut acc = [M::Op::identity(); A];
    let take = |acc: &mut [M::Out; A], raw: &[T; W], i: u64| {
        unrolled!(W, |k| acc[k % A] = M::Op::combine(acc[k % A], map.map(raw[k], i + k as u64)));
    };
    // Whole chunks: U loads issued back to back, then mapped and combined.
    while base + chunk <= vectors {
        let at = |u: u64| (base + u * B as u64 + tid) * W as u64;
        // SAFETY: vector base + u*B + tid < vectors, so its W elements are < n.
        let raw: [[T; W]; UNROLL] = unsafe {
            [
                global::load_vec::<T, W>(a.add(at(0) as usize)),
                global::load_vec::<T, W>(a.add(at(1) as usize)),
                global::load_vec::<T, W>(a.add(at(2) as usize)),
                global::load_vec::<T, W>(a.add(at(3) as usize)),
            ]
        };
        unrolled!(UNROLL, |u| take(&mut acc, &raw[u], at(u as u64)));
        base += stride;
    }
    // The last partial chunk, one vector at a time.
    if base < vectors {
        let mut u = 0;
        while u < UNROLL {
            let j = base + u as u64 * B as u64 + tid;
            if j < vectors {
                // SAFETY: j < vectors.
                let raw = unsafe { global::load_vec::<T, W>(a.add((j * W as u64) as usize)) };
                take(&mut acc, &raw, j * W as u64);
            }
            u += 1;
        }
    }
    // Elements past the last whole vector (fewer than W <= B).
    if gpu::block_idx() == 0 {
        let i = vectors * W as u64 + tid;
        if i < n {
            // SAFETY: i < n.
            acc[0] = M::Op::combine(acc[0], map.map(unsafe { global::load(a.add(i as usize)) }, i));
        }
    }
    let mut total = acc[0];
    let mut k = 1;
    while k < A {
        total = M::Op::combine(total, acc[k]);
        k += 1;
    }
    total
}

/// The smallest and the largest value, found in one pass ([`MinMax`]).
/// NaNs are ignored unless every value is one, as by
/// [`Element::min`] and [`Element::max`]; for empty input `min` is the
/// type's largest value and `max` its smallest.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Extremes<T> {
    pub min: T,
    pub max: T,
}

// SAFETY: two fields of the same element type (1 to 8 bytes of plain
// data): no padding, 2 to 16 bytes.
unsafe impl<T: Element> Shuffle for Extremes<T> {}

/// The smallest and the largest value with the first index holding each
/// ([`ArgMinMax`]); values widened to 8 bytes as in
/// [`Indexed`], 32 bytes in all. For empty input both indices are
/// `u64::MAX`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct ArgExtremes<W> {
    pub min: Indexed<W>,
    pub max: Indexed<W>,
}

// SAFETY: two 16-byte `Indexed<W: WideElement>` without padding: 32 bytes.
unsafe impl<W: WideElement> Shuffle for ArgExtremes<W> {}

const _: () = assert!(core::mem::size_of::<ArgExtremes<f64>>() == 32);

/// Min and max together: the [`Monoid`] of [`Extremes`] and
/// [`ArgExtremes`].
#[derive(Clone, Copy, Debug, Default)]
pub struct BothExtremes;

impl<T: Element> Monoid<Extremes<T>> for BothExtremes {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> Extremes<T> {
        Extremes { min: T::HIGHEST, max: T::LOWEST }
    }
    #[inline(always)]
    fn combine(a: Extremes<T>, b: Extremes<T>) -> Extremes<T> {
        Extremes { min: a.min.min(b.min), max: a.max.max(b.max) }
    }
}

impl<W: WideElement> Monoid<ArgExtremes<W>> for BothExtremes {
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> ArgExtremes<W> {
        ArgExtremes {
            min: Indexed { value: W::HIGHEST, index: u64::MAX },
            max: Indexed { value: W::LOWEST, index: u64::MAX },
        }
    }
    #[inline(always)]
    fn combine(a: ArgExtremes<W>, b: ArgExtremes<W>) -> ArgExtremes<W> {
        ArgExtremes { min: pick::<W, Smallest>(a.min, b.min), max: pick::<W, Largest>(a.max, b.max) }
    }
}

/// Each element as both the smallest and the largest so far: min and max
/// in one pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct MinMax;

impl<T: Element> Map<T> for MinMax {
    type Out = Extremes<T>;
    type Op = BothExtremes;
    #[inline(always)]
    fn map(&self, x: T, _index: u64) -> Extremes<T> {
        Extremes { min: x, max: x }
    }
}
// SAFETY: zero-sized.
unsafe impl bytemuck::NoUninit for MinMax {}
impl Named for MinMax {
    const NAME: &'static str = "minmax";
}

/// Each element with its index as both the smallest and the largest so
/// far: argmin and argmax in one pass (ties to the smaller index, NaNs
/// never win unless all are NaN, as [`super::reduction::Arg`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgMinMax;

impl<T: Element> Map<T> for ArgMinMax {
    type Out = ArgExtremes<T::Wide>;
    type Op = BothExtremes;
    #[inline(always)]
    fn map(&self, x: T, index: u64) -> ArgExtremes<T::Wide> {
        let v = Indexed { value: x.widen(), index };
        ArgExtremes { min: v, max: v }
    }
}
// SAFETY: zero-sized.
unsafe impl bytemuck::NoUninit for ArgMinMax {}
impl Named for ArgMinMax {
    const NAME: &'static str = "argminmax";
}
