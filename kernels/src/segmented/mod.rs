//! Segmented reductions: one result per segment of the input, for
//! segments given by offsets, by begin/end pairs, or of a fixed length.
//!
//! | kernel | segments | technique |
//! |---|---|---|
//! | [`flat::segmented_reduce`] + [`flat::segmented_spine`] | sorted offsets, or fixed length | fixed tiles over the *elements*, independent; a second launch (one block, or several chained by flags) joins the parts of segments that span tiles |
//! | [`short::segmented_short`] + [`flat::segmented_spine`] | short segments (offsets or fixed length) under sum, product, min, max | the flat kernel's tiles; a segment's value left where it ends, written out from the boundaries |
//! | [`ranges::segmented_ranges`] | any begin/end pairs | one warp per segment, or a lane each for short ones where there are many |
//! | [`ranges::segmented_ranges_parts`] (twice) | few long begin/end pairs | each pair in equal parts, a warp a part; a second launch combines the parts |
//! | [`ranges::segmented_ranges_slots`] (after the ranges kernel) | the long ones among many begin/end pairs | the ranges kernel lists them in a table of slots; the warps share the slots, and the last one in of a pair joins its slots |
//! | [`chunks::segmented_plan`] + [`chunks::segmented_chunks`] | offsets or begin/end pairs, long on average | long segments in chunks of a block each, short ones a warp each; tickets over a resident grid (two builds of the work kernel: `segmented_chunks_spread` from 256 MiB of input spreads the short batches among the chunks) |
//!
//! The flat kernel does the same work per element whatever the segment
//! lengths: many tiny segments, a few huge ones and any mix run at one
//! speed (CUB's one-block-per-segment `DeviceSegmentedReduce` idles most
//! of each block on tiny segments). What a segment combines to is a
//! [`Reduction`] (sum, product, min, max over [`Plain`], argmin/argmax
//! over [`Arg`]); [`SegmentedReduction::out`] turns a segment's
//! accumulator into what is written.
//!
//! Entry names: `segmented_reduce_{op}_{type}_b256`, `segmented_short_{op}_{type}_b256`,
//! `segmented_spine_{op}_{type}_b1024`, `segmented_bounds_b256`, `segmented_bounds_search_b256`,
//! `segmented_ranges_{op}_{type}_b256`, `segmented_ranges_parts_{op}_{type}_b256`, `segmented_ranges_slots_{op}_{type}_b256`.

pub mod chunks;
pub mod flat;
pub mod policy;
pub mod ranges;
pub mod short;

use crate::gpu::warp::Shuffle;
#[allow(unused_imports)]
use crate::ops::*;
use crate::reduce::reduction::{Arg, Extreme, Indexed, Plain, Raw, Reduction, pick};
#[allow(unused_imports)]
use crate::reduce::reduction::{Largest, Smallest};
use chunks::{segmented_chunks, segmented_plan};
use core::mem::size_of;
use flat::{segmented_bounds, segmented_bounds_search, segmented_reduce, segmented_spine};
use ranges::{segmented_ranges, segmented_ranges_parts, segmented_ranges_slots, segmented_route};
use short::segmented_short;

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
    /// A run that goes on from `lead` and whose items, if any, are pushed
    /// with [`Self::run_push_started`], the first at offset `first`
    /// (`u32::MAX`: none will be). Knowing where the first item lies saves
    /// argmin and argmax of integers a test an item: the run starts there,
    /// at the worst value, which a later item takes over only by beating.
    #[inline(always)]
    fn run_started(lead: Self::Acc, _first: u32) -> Self::Run {
        Self::run_from(lead)
    }
    /// [`Self::run_push`] for a run from [`Self::run_started`].
    #[inline(always)]
    fn run_push_started(run: Self::Run, x: Self::In, j: u32) -> Self::Run {
        Self::run_push(run, x, j)
    }
    /// `run` followed by the `V` items of one vector, at offsets `j..j +
    /// V` ([`Self::run_push_started`] where `STARTED`, else
    /// [`Self::run_push`]). By default one at a time, in order; [`Plain`]
    /// combines the vector's items among themselves first.
    #[inline(always)]
    fn run_push_vec<const V: usize, const STARTED: bool>(run: Self::Run, x: [Self::In; V], j: u32) -> Self::Run {
        push_in_order::<Self, V, STARTED>(run, x, j)
    }
    /// What the tile's block scan carries for a thread: the accumulator
    /// itself for [`Plain`]; for [`Arg`] the best element and its position
    /// in the tile ([`ArgPart`]: 8 bytes for 4-byte types instead of 16,
    /// compared in 32 bits), widened once per thread where a segment's
    /// result or the tile's record needs the accumulator.
    type Part: Shuffle;
    /// The part of no element.
    fn part_identity() -> Self::Part;
    /// `a` followed by `b` (`b`'s elements at later positions of the tile).
    fn part_combine(a: Self::Part, b: Self::Part) -> Self::Part;
    /// A run that began at the identity, its offset 0 at tile position
    /// `local0`.
    fn run_part(run: Self::Run, local0: u32) -> Self::Part;
    /// An accumulator of elements of the tile that starts at element `a`.
    fn part_of(acc: Self::Acc, a: u64) -> Self::Part;
    /// The part as an accumulator (the tile starts at element `a`).
    fn part_acc(p: Self::Part, a: u64) -> Self::Acc;
    /// Whether warp and block reductions of runs combine [`Self::run_key`]s
    /// (a `u64` minimum: two shuffles and a 64-bit compare a step) instead
    /// of accumulators: argmin and argmax of 4-byte elements, whose
    /// accumulator (a widened value and a 64-bit index, compared with NaN
    /// tests) took four shuffles and a dozen instructions a step.
    const KEYED: bool = false;
    /// Where [`Self::KEYED`]: the run, its lead included, as a key whose
    /// minimum over runs is their combine. Every index the run holds lies
    /// in `p0..p0 + 2^32`.
    #[inline(always)]
    fn run_key(_run: Self::Run, _p0: u64) -> u64 {
        u64::MAX
    }
    /// Where [`Self::KEYED`]: the minimum of [`Self::run_key`]s, offsets
    /// from `p0`, as an accumulator.
    #[inline(always)]
    fn key_acc(_k: u64, _p0: u64) -> Self::Acc {
        Self::identity()
    }
}

/// `run` followed by the `V` items of `x` one at a time, in order, at
/// offsets `j..j + V`: the default [`SegmentedReduction::run_push_vec`],
/// and [`Plain`]'s for integers.
#[inline(always)]
fn push_in_order<R: SegmentedReduction, const V: usize, const STARTED: bool>(
    run: R::Run,
    x: [R::In; V],
    j: u32,
) -> R::Run {
    let mut run = run;
    unrolled!(V, |k| {
        let at = j + k as u32;
        run = if STARTED { R::run_push_started(run, x[k], at) } else { R::run_push(run, x[k], at) };
    });
    run
}

/// The order key of a 4-byte element for [`Arg`]`<T, E>`: the better
/// element has the smaller key, equal elements equal keys (`-0.0` that of
/// `0.0`). Integers map by their order (the sign bit flipped for signed
/// ones), floats by the sign-magnitude trick; [`Largest`] complements it.
/// NaNs are never keyed (they are no candidates).
#[inline(always)]
fn order_key<T: Element, E: Extreme>(x: T) -> u32 {
    let bits = bits_pos(x);
    let k = if T::NAN.is_some() {
        let b = if bits == 1 << 31 { 0 } else { bits };
        if b >> 31 != 0 { !b } else { b | 1 << 31 }
    } else if T::LOWEST.total_lt(T::ZERO) {
        bits ^ 1 << 31
    } else {
        bits
    };
    if E::LARGEST { !k } else { k }
}

/// The element of order key `k` ([`order_key`]; `-0.0` comes back as
/// `0.0`, which compares equal).
#[inline(always)]
fn from_order_key<T: Element, E: Extreme>(k: u32) -> T {
    let k = if E::LARGEST { !k } else { k };
    let bits = if T::NAN.is_some() {
        if k >> 31 != 0 { k & !(1 << 31) } else { !k }
    } else if T::LOWEST.total_lt(T::ZERO) {
        k ^ 1 << 31
    } else {
        k
    };
    pos_bits(bits)
}

/// An argmin/argmax [`SegmentedReduction::Part`]: the best element of a
/// stretch of a tile and its tile position (`u32::MAX`: none, `best` then
/// the starting value). The position is kept as the bits of a `T`
/// (`pos_bits`), so that the pair is two `T`s: no padding, 8 bytes for
/// 4-byte types (two shuffles), and an 8-byte `T` stays 8-byte aligned.
/// (A `u32` beside an `f64`, packed to 12 bytes, had LLVM split the
/// `f64`'s shared stores into 32-bit halves, and ptxas 13.0 for sm_90
/// then stored the low half as a conversion of the value to an integer
/// (`F2I.U32.F64.TRUNC`): wrong argmax results on the GPU only.)
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ArgPart<T> {
    best: T,
    at: T,
}

// SAFETY: two elements of one type (plain numbers, any bit pattern
// another lane has), no padding: 2 to 16 bytes.
unsafe impl<T: Element> Shuffle for ArgPart<T> {}

/// Tile position `p` as the bits of a 4- or 8-byte `T` (zero-extended,
/// little-endian), never used as a number.
#[inline(always)]
fn pos_bits<T: Copy>(p: u32) -> T {
    const { assert!(size_of::<T>() == 4 || size_of::<T>() == 8, "positions as the bits of 4- or 8-byte elements") };
    let w = p as u64;
    // SAFETY: T is 4 or 8 bytes of plain data (an `Element`), read from
    // the low bytes of `w`.
    unsafe { core::ptr::read_unaligned(&w as *const u64 as *const T) }
}

/// The tile position kept by [`pos_bits`].
#[inline(always)]
fn bits_pos<T: Copy>(t: T) -> u32 {
    let mut w = 0u64;
    // SAFETY: 4 or 8 bytes (as `pos_bits` asserts) into the low bytes.
    unsafe {
        core::ptr::copy_nonoverlapping(&t as *const T as *const u8, &mut w as *mut u64 as *mut u8, size_of::<T>())
    };
    w as u32
}

/// An argmin/argmax run: what came before it (`lead`) and its own best
/// element at offset `at` (`u32::MAX`: none yet; `best` is then the
/// starting value, a NaN for floats; see [`SegmentedReduction::run_push`]
/// for [`Arg`]).
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
    /// Floats: the vector's items as a tree (`(x0 + x2) + (x1 + x3)` for
    /// four), then into the run, so that a thread's dependent chain is one
    /// combine a vector, not one an item: the compiler may not reassociate
    /// floating-point operations, and the chunked kernel's round was a
    /// chain of 32 `FADD`s a thread (ptxas sm_90). H100, `f32` mixed
    /// lengths: 2^24 36.3 -> 34.9-35.0 us, 2^28 363-364 -> 359-360.
    /// Integers in order, as the compiler then reassociates them itself
    /// (the tree measured 1% slower for `i32` at 2^28).
    #[inline(always)]
    fn run_push_vec<const V: usize, const STARTED: bool>(run: Op::Acc, x: [T; V], j: u32) -> Op::Acc {
        if T::NAN.is_none() {
            return push_in_order::<Self, V, STARTED>(run, x, j);
        }
        let mut t: [Op::Acc; V] = core::array::from_fn(|k| Op::lift(x[k]));
        let mut w = V;
        while w > 1 {
            w /= 2;
            for k in 0..w {
                t[k] = Op::combine(t[k], t[k + w]);
            }
        }
        Op::combine(run, t[0])
    }
    #[inline(always)]
    fn run_end(run: Op::Acc, _p0: u64) -> Op::Acc {
        run
    }
    type Part = Op::Acc;
    #[inline(always)]
    fn part_identity() -> Op::Acc {
        Self::identity()
    }
    #[inline(always)]
    fn part_combine(a: Op::Acc, b: Op::Acc) -> Op::Acc {
        Self::combine(a, b)
    }
    #[inline(always)]
    fn run_part(run: Op::Acc, _local0: u32) -> Op::Acc {
        run
    }
    #[inline(always)]
    fn part_of(acc: Op::Acc, _a: u64) -> Op::Acc {
        acc
    }
    #[inline(always)]
    fn part_acc(p: Op::Acc, _a: u64) -> Op::Acc {
        p
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
    /// The run starts from a NaN for floats, from the worst value for
    /// integers.
    #[inline(always)]
    fn run_from(lead: Indexed<T::Wide>) -> Self::Run {
        ArgRun { lead, best: T::NAN.unwrap_or(E::worst::<T>()), at: u32::MAX }
    }
    /// Items come in rising order, so a tie keeps the earlier one: `best`
    /// becomes the better of it and `x` ([`Extreme::keep`], which ignores
    /// NaNs), and `x` is taken where that changed it (for integers, also
    /// where it is the first). Floats start from a NaN, so the first
    /// number changes `best`; NaNs before it are taken too (a NaN differs
    /// from a NaN) and leave `best` a NaN. A run of NaNs alone so ends
    /// with a NaN candidate, which `pick` drops against its lead (every
    /// accumulator, the identity included, beats a NaN), as before.
    /// `-0.0` and `0.0` compare equal: neither takes over from the other.
    ///
    /// A min or max, a compare and a select an item, for every type
    /// ([`Extreme::beats`] with its NaN tests took `f32` five, and ptxas
    /// sm_90 kept the loops rolled around branches). Testing for the NaN
    /// in `run_end` instead let ptxas move a straight loop's selects
    /// behind that branch in some kernels, with every running best kept
    /// live (56 registers instead of 48).
    #[inline(always)]
    fn run_push(run: Self::Run, x: T, j: u32) -> Self::Run {
        let new = E::keep(run.best, x);
        let take = (new != run.best) | (T::NAN.is_none() & (run.at == u32::MAX));
        ArgRun { lead: run.lead, best: new, at: core::hint::select_unpredictable(take, j, run.at) }
    }
    /// 4-byte integers start at `first` with the worst value (if every
    /// item ties it, the first is the answer); floats, and 8-byte integers
    /// (which this way took 56 registers instead of 48, ptxas sm_90), as
    /// [`Self::run_from`].
    #[inline(always)]
    fn run_started(lead: Indexed<T::Wide>, first: u32) -> Self::Run {
        let at = if T::NAN.is_none() && Self::KEYED { first } else { u32::MAX };
        ArgRun { lead, best: T::NAN.unwrap_or(E::worst::<T>()), at }
    }
    /// An item is taken where it changed `best`: for 4-byte integers the
    /// run's start already holds the first item's offset, so they pay no
    /// test of `at` an item (`docs/tuning/segmented.md`); the others as
    /// [`Self::run_push`].
    #[inline(always)]
    fn run_push_started(run: Self::Run, x: T, j: u32) -> Self::Run {
        if !Self::KEYED {
            return Self::run_push(run, x, j);
        }
        let new = E::keep(run.best, x);
        ArgRun { lead: run.lead, best: new, at: core::hint::select_unpredictable(new != run.best, j, run.at) }
    }
    #[inline(always)]
    fn run_end(run: Self::Run, p0: u64) -> Indexed<T::Wide> {
        if run.at == u32::MAX {
            run.lead
        } else {
            pick::<T::Wide, E>(run.lead, Indexed { value: run.best.widen(), index: p0 + run.at as u64 })
        }
    }
    type Part = ArgPart<T>;
    #[inline(always)]
    fn part_identity() -> ArgPart<T> {
        ArgPart { best: T::NAN.unwrap_or(E::worst::<T>()), at: pos_bits(u32::MAX) }
    }
    /// `b` takes over where it has an element and `a` has none or a worse
    /// one (both are numbers where they have one: [`Self::run_part`]).
    #[inline(always)]
    fn part_combine(a: ArgPart<T>, b: ArgPart<T>) -> ArgPart<T> {
        let (ab, bb) = (a.best, b.best);
        let take = (bits_pos(b.at) != u32::MAX) & ((bits_pos(a.at) == u32::MAX) | (E::keep(ab, bb) != ab));
        core::hint::select_unpredictable(take, b, a)
    }
    /// A run of NaNs alone (its `best` a NaN) is a part of none.
    #[inline(always)]
    fn run_part(run: Self::Run, local0: u32) -> ArgPart<T> {
        if run.at == u32::MAX || run.best.is_nan() {
            Self::part_identity()
        } else {
            ArgPart { best: run.best, at: pos_bits(local0 + run.at) }
        }
    }
    #[inline(always)]
    fn part_of(acc: Indexed<T::Wide>, a: u64) -> ArgPart<T> {
        if acc.index == u64::MAX {
            Self::part_identity()
        } else {
            ArgPart { best: T::narrow(acc.value), at: pos_bits((acc.index - a) as u32) }
        }
    }
    #[inline(always)]
    fn part_acc(p: ArgPart<T>, a: u64) -> Indexed<T::Wide> {
        let at = bits_pos(p.at);
        if at == u32::MAX { Self::identity() } else { Indexed { value: p.best.widen(), index: a + at as u64 } }
    }
    const KEYED: bool = size_of::<T>() == 4;
    /// The key of an element at offset `at`: its [`order_key`] above the
    /// offset, so that the minimum is the best element and, among equal
    /// ones, the first; `u64::MAX` (no candidate) for none or a NaN. The
    /// run's own best and its lead each give one; the smaller is the run's.
    #[inline(always)]
    fn run_key(run: Self::Run, p0: u64) -> u64 {
        let key = |x: T, at: u32| (order_key::<T, E>(x) as u64) << 32 | at as u64;
        let own = if run.at == u32::MAX || run.best.is_nan() { u64::MAX } else { key(run.best, run.at) };
        let lead = run.lead;
        let led = if lead.index == u64::MAX || lead.value.is_nan() {
            u64::MAX
        } else {
            key(T::narrow(lead.value), (lead.index - p0) as u32)
        };
        Ord::min(own, led)
    }
    #[inline(always)]
    fn key_acc(k: u64, p0: u64) -> Indexed<T::Wide> {
        if k == u64::MAX {
            Self::identity()
        } else {
            Indexed { value: from_order_key::<T, E>((k >> 32) as u32).widen(), index: p0 + (k as u32) as u64 }
        }
    }
}

/// Whether this launch's segments go to the ranges kernel, from the
/// counts that [`ranges::segmented_route`] left at `route`; `None` where
/// the host did not route (`route` null). The same in every thread.
///
/// # Safety
/// `route` null, or the two counts written by a launch before this one.
#[inline(always)]
unsafe fn routed_to_ranges(route: *const u32, segments: u64) -> Option<bool> {
    if route.is_null() {
        return None;
    }
    // SAFETY: the caller's two counts.
    let (long, short) = unsafe { (crate::gpu::global::load(route), crate::gpu::global::load(route.add(1))) };
    Some(policy::route_to_ranges(long, short, segments))
}

const _: () = assert!(
    policy::BLOCK == 256
        && policy::RANGES_BLOCK == 256
        && policy::SPINE_BLOCK == 1024
        && policy::OFFSETS_BLOCK == 256
        && policy::CHUNKS_BLOCK == 256,
    "the entries! lists below say 256 and 1024"
);

entries! {
    segmented_reduce(input: *const T, n: u64, offsets: *const u64, segments: u64, seg_len: u64,
         out: *mut <Op as SegmentedReduction>::Out, temp: *mut u64, spare: *mut u64, spare_words: u64,
         bounds: *const u64, route: *const u32)
        => segmented_reduce::<Op, {B}, { policy::items::<T>() }>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [256];
    segmented_short(input: *const T, n: u64, offsets: *const u64, segments: u64, seg_len: u64,
         out: *mut <Op as SegmentedReduction>::Out, temp: *mut u64, spare: *mut u64, spare_words: u64,
         bounds: *const u64, route: *const u32)
        => segmented_short::<Op, {B}, { policy::items::<T>() }>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [256];
    segmented_spine(temp: *mut u64, tiles: u64, offsets: *const u64, segments: u64, seg_len: u64, n: u64,
         out: *mut <Op as SegmentedReduction>::Out, phase: u32, route: *const u32)
        => segmented_spine::<Op, {B}>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [1024];
    segmented_bounds(offsets: *const u64, segments: u64, n: u64, tile_len: u64, tiles: u64, bounds: *mut u64,
         temp: *mut u64)
        => segmented_bounds::<{B}>; blocks [256];
    segmented_bounds_search(offsets: *const u64, segments: u64, n: u64, tile_len: u64, tiles: u64, bounds: *mut u64)
        => segmented_bounds_search::<{B}>; blocks [256];
    segmented_plan(begins: *const u64, ends: *const u64, segments: u64, n: u64, chunk_len: u64, short_len: u64,
         cap: u64, temp: *mut u64, spare: *mut u64, spare_words: u64)
        => segmented_plan::<{B}>; blocks [256];
    segmented_chunks(input: *const T, n: u64, begins: *const u64, ends: *const u64, segments: u64,
         out: *mut <Op as SegmentedReduction>::Out, chunk_len: u64, short_len: u64, cap: u64, temp: *mut u64,
         early: u64)
        => segmented_chunks::<Op, {B}, { 16 / core::mem::size_of::<T>() }, false>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [256];
    segmented_chunks_spread(input: *const T, n: u64, begins: *const u64, ends: *const u64, segments: u64,
         out: *mut <Op as SegmentedReduction>::Out, chunk_len: u64, short_len: u64, cap: u64, temp: *mut u64,
         early: u64)
        => segmented_chunks::<Op, {B}, { 16 / core::mem::size_of::<T>() }, true>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [256];
    segmented_route(offsets: *const u64, segments: u64, route: *mut u32)
        => segmented_route::<{B}>; blocks [256];
    segmented_ranges(input: *const T, n: u64, begins: *const u64, ends: *const u64, seg_len: u64, segments: u64,
         out: *mut <Op as SegmentedReduction>::Out, temp: *mut u64, spare: *mut u64, spare_words: u64,
         route: *const u32, table: *mut u64, cap: u64, long: u64, slot: u64, window: u64)
        => segmented_ranges::<Op, {B}, { 16 / core::mem::size_of::<T>() }>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [256];
    segmented_ranges_parts(input: *const T, n: u64, begins: *const u64, ends: *const u64, segments: u64, parts: u64,
         partials: *mut <Op as Reduction>::Acc, out: *mut <Op as SegmentedReduction>::Out, temp: *mut u64,
         spare: *mut u64, spare_words: u64, join: u32)
        => segmented_ranges_parts::<Op, {B}>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [256];
    segmented_ranges_slots(input: *const T, n: u64, begins: *const u64, ends: *const u64,
         out: *mut <Op as SegmentedReduction>::Out, table: *mut u64, cap: u64, slot: u64)
        => segmented_ranges_slots::<Op, {B}, { 16 / core::mem::size_of::<T>() }>;
        ops [sum = Plain<T, Sum>, product = Plain<T, Product>, min = Plain<T, Min>, max = Plain<T, Max>,
             argmin = Arg<T, Smallest>, argmax = Arg<T, Largest>]
        types [i32, u32, i64, u64, f32, f64]
        blocks [256];
}
