//! Segmented reductions: one result per segment of the input, for
//! segments given by offsets, by begin/end pairs, or of a fixed length.
//!
//! | kernel | segments | technique |
//! |---|---|---|
//! | [`flat::segmented_reduce`] + [`flat::segmented_spine`] | sorted offsets, or fixed length | fixed tiles over the *elements*, independent; a second launch (one block, or a third over several) joins the parts of segments that span tiles |
//! | [`ranges::segmented_ranges`] | any begin/end pairs | one warp per segment |
//!
//! The flat kernel does the same work per element whatever the segment
//! lengths: many tiny segments, a few huge ones and any mix run at one
//! speed (CUB's one-block-per-segment `DeviceSegmentedReduce` idles most
//! of each block on tiny segments). What a segment combines to is a
//! [`Reduction`] (sum, product, min, max over [`Plain`], argmin/argmax
//! over [`Arg`]); [`SegmentedReduction::out`] turns a segment's
//! accumulator into what is written.
//!
//! Entry names: `segmented_reduce_{op}_{type}_b256`,
//! `segmented_spine_{op}_{type}_b1024`, `segmented_bounds_b256`,
//! `segmented_ranges_{op}_{type}_b256`.

pub mod flat;
pub mod policy;
pub mod ranges;

#[allow(unused_imports)]
use crate::ops::*;
use crate::reduce::reduction::{Arg, Extreme, Indexed, Plain, Raw, Reduction, pick};
#[allow(unused_imports)]
use crate::reduce::reduction::{Largest, Smallest};
use flat::{segmented_bounds, segmented_reduce, segmented_spine};
use ranges::segmented_ranges;

/// What a segmented kernel writes for a segment.
pub trait SegmentedReduction: Reduction<In: Element> {
    /// The type written per segment.
    type Out: Copy;
    /// Whether [`Self::out`] uses the segment's first index.
    const NEEDS_START: bool = false;
    /// The result for a segment with accumulator `acc`, first index `start`
    /// (when [`Self::NEEDS_START`]), empty or not.
    fn out(acc: Self::Acc, start: u64, empty: bool) -> Self::Out;
    /// What a thread carries while it combines its own items in order
    /// (positions `p0 + j`, `j` rising): the accumulator itself for
    /// [`Plain`]; for [`Arg`] the best element so far and its `u32` offset
    /// `j`, so that each item costs one comparison of elements and the
    /// widened value with its 64-bit index is built once per run.
    type Run: Copy;
    /// A run that goes on from `lead` (everything before it lies at
    /// earlier positions).
    fn run_from(lead: Self::Acc) -> Self::Run;
    /// `run` followed by item `x` at offset `j`.
    fn run_push(run: Self::Run, x: Self::In, j: u32) -> Self::Run;
    /// The run as an accumulator, its offsets counted from `p0`.
    fn run_end(run: Self::Run, p0: u64) -> Self::Acc;
}

/// An argmin/argmax run: what came before it (`lead`) and its own best
/// element at offset `at` (`u32::MAX`: none yet).
#[derive(Clone, Copy)]
pub struct ArgRun<T, W> {
    lead: Indexed<W>,
    best: T,
    at: u32,
}

/// Sum, product, min, max: the accumulator itself (the identity for an
/// empty segment).
impl<T: Element, Op: Accumulate<T>> SegmentedReduction for Plain<T, Op> {
    type Out = Op::Acc;
    #[inline(always)]
    fn out(acc: Op::Acc, _start: u64, _empty: bool) -> Op::Acc {
        acc
    }
    type Run = Op::Acc;
    #[inline(always)]
    fn run_from(lead: Op::Acc) -> Op::Acc {
        lead
    }
    #[inline(always)]
    fn run_push(run: Op::Acc, x: T, _j: u32) -> Op::Acc {
        Self::combine(run, Self::lift::<1>(&Raw { a: [x], b: [x] }, 0, 0))
    }
    #[inline(always)]
    fn run_end(run: Op::Acc, _p0: u64) -> Op::Acc {
        run
    }
}

/// Argmin/argmax: the index (into the whole input) of the segment's first
/// extreme element; `u64::MAX` for an empty segment, the segment's first
/// index when every element is NaN (as the whole-input argmin does).
impl<T: Element, E: Extreme> SegmentedReduction for Arg<T, E> {
    type Out = u64;
    const NEEDS_START: bool = true;
    #[inline(always)]
    fn out(acc: Indexed<T::Wide>, start: u64, empty: bool) -> u64 {
        if empty {
            u64::MAX
        } else if acc.index == u64::MAX {
            start
        } else {
            acc.index
        }
    }
    type Run = ArgRun<T, T::Wide>;
    #[inline(always)]
    fn run_from(lead: Indexed<T::Wide>) -> Self::Run {
        ArgRun { lead, best: T::ZERO, at: u32::MAX }
    }
    /// Items come in rising order, so a tie keeps the earlier one: only
    /// a strictly better element (or the first) takes over.
    #[inline(always)]
    fn run_push(run: Self::Run, x: T, j: u32) -> Self::Run {
        let take = run.at == u32::MAX || E::beats(x, run.best);
        ArgRun {
            lead: run.lead,
            best: core::hint::select_unpredictable(take, x, run.best),
            at: core::hint::select_unpredictable(take, j, run.at),
        }
    }
    #[inline(always)]
    fn run_end(run: Self::Run, p0: u64) -> Indexed<T::Wide> {
        if run.at == u32::MAX {
            run.lead
        } else {
            pick::<T::Wide, E>(run.lead, Indexed { value: run.best.widen(), index: p0 + run.at as u64 })
        }
    }
}

const _: () = assert!(
    policy::BLOCK == 256 && policy::RANGES_BLOCK == 256 && policy::SPINE_BLOCK == 1024,
    "the entries! lists below say 256 and 1024"
);

entries! {
    segmented_reduce(input: *const T, n: u64, offsets: *const u64, segments: u64, seg_len: u64,
         out: *mut <Op as SegmentedReduction>::Out, temp: *mut u64, spare: *mut u64, spare_words: u64,
         bounds: *const u64)
        => segmented_reduce::<Op, {B}, { policy::items::<T>() }>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [256];
    segmented_spine(temp: *mut u64, tiles: u64, offsets: *const u64, segments: u64, seg_len: u64, n: u64,
         out: *mut <Op as SegmentedReduction>::Out, phase: u32)
        => segmented_spine::<Op, {B}>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [1024];
    segmented_bounds(offsets: *const u64, segments: u64, n: u64, tile_len: u64, tiles: u64, bounds: *mut u64)
        => segmented_bounds::<{B}>; blocks [256];
    segmented_ranges(input: *const T, n: u64, begins: *const u64, ends: *const u64, segments: u64,
         out: *mut <Op as SegmentedReduction>::Out, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => segmented_ranges::<Op, {B}>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [256];
}
