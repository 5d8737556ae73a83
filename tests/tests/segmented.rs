//! Segmented reductions against CPU references: offsets (random lengths
//! with empty segments and gaps, runs of 1, one segment of everything),
//! fixed lengths at tile edges, begin/end ranges in any order; every
//! operator on every type; invalid offsets, lengths and block sizes as
//! typed errors. Outputs are poisoned before each call; integers, min/max,
//! argmin/argmax and float sums of multiples of 1/4 are exact and
//! compared bit for bit; float products against an f64 reference.

// `!(err <= bound)` on purpose: a NaN result must fail the comparison.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use gpuprim::segmented::{ArgMax, ArgMin, Max, Min, Product, SegmentedOp, Sum};
use gpuprim::{BackendKind, Context, DeviceRepr, Error, Scalar, Segmented};
use gpuprim_kernels::segmented::policy;
use gpuprim_tests::{backend_test, cases, check};
use proptest::prelude::*;

/// splitmix64: fast, seeded, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, k: u64) -> u64 {
        self.next() % k.max(1)
    }
}

/// An element type with test inputs and CPU references.
trait TestType: Scalar + PartialOrd {
    /// Random element: integers from all their bits (small ones for
    /// products, so they do not all wrap to zero), floats multiples of 1/4
    /// (few distinct values, so argmin/argmax see ties).
    fn draw(rng: &mut Rng, small: bool) -> Self;
    /// Whether the reference sum is exact (not for float products).
    fn close(got: Self::Acc, want: f64, terms: usize) -> bool;
    fn wide(self) -> f64;
    fn sum(a: Self::Acc, b: Self) -> Self::Acc;
    fn mul(a: Self::Acc, b: Self) -> Self::Acc;
    fn zero() -> Self::Acc;
    fn one() -> Self::Acc;
}

macro_rules! int_type {
    ($($t:ty),*) => {$(
        impl TestType for $t {
            fn draw(rng: &mut Rng, small: bool) -> Self {
                if small { (rng.below(5) as $t) | 1 } else { rng.next() as $t }
            }
            fn close(_: $t, _: f64, _: usize) -> bool { unreachable!() }
            fn wide(self) -> f64 { self as f64 }
            fn sum(a: $t, b: $t) -> $t { a.wrapping_add(b) }
            fn mul(a: $t, b: $t) -> $t { a.wrapping_mul(b) }
            fn zero() -> $t { 0 }
            fn one() -> $t { 1 }
        }
    )*};
}
int_type!(i32, u32, i64, u64);

macro_rules! float_type {
    ($($t:ty),*) => {$(
        impl TestType for $t {
            fn draw(rng: &mut Rng, small: bool) -> Self {
                if small {
                    // Near 1, so products of thousands stay finite.
                    1.0 + (rng.below(64) as $t - 32.0) / 4096.0
                } else {
                    (rng.below(64) as $t - 32.0) / 4.0
                }
            }
            fn close(got: $t, want: f64, terms: usize) -> bool {
                // Relative to the result, plus the type's smallest normal:
                // a product that underflows (f32 products of 800k factors
                // near 1 reach 1e-49 in f64) is 0 or subnormal in the type.
                let bound = 2.0 * (terms as f64 + 2.0) * <$t>::EPSILON as f64 * want.abs() + <$t>::MIN_POSITIVE as f64;
                (got as f64 - want).abs() <= bound
            }
            fn wide(self) -> f64 { self as f64 }
            fn sum(a: $t, b: $t) -> $t { a + b }
            fn mul(a: $t, b: $t) -> $t { a * b }
            fn zero() -> $t { 0.0 }
            fn one() -> $t { 1.0 }
        }
    )*};
}
float_type!(f32, f64);

/// An operator with its CPU reference for one segment `x[start..end]`.
trait TestOp<T: TestType>: SegmentedOp<T, Out: PartialEq> + Default {
    const SMALL: bool = false;
    /// Whether the result of segment `x[start..]` is right.
    fn verify(x: &[T], start: usize, got: Self::Out) -> Result<(), String>;
}

fn exact<O: PartialEq + std::fmt::Debug>(got: O, want: O) -> Result<(), String> {
    if got == want { Ok(()) } else { Err(format!("got {got:?}, want {want:?}")) }
}

impl<T: TestType> TestOp<T> for Sum
where
    Sum: SegmentedOp<T, Out = T::Acc>,
    T::Acc: PartialEq,
{
    fn verify(x: &[T], _: usize, got: T::Acc) -> Result<(), String> {
        exact(got, x.iter().fold(T::zero(), |a, &b| T::sum(a, b)))
    }
}
impl<T: TestType> TestOp<T> for Product
where
    Product: SegmentedOp<T, Out = T::Acc>,
    T::Acc: PartialEq,
{
    const SMALL: bool = true;
    fn verify(x: &[T], _: usize, got: T::Acc) -> Result<(), String> {
        let want = x.iter().fold(T::one(), |a, &b| <T as TestType>::mul(a, b));
        if T::NAME.starts_with('f') {
            let wide: f64 = x.iter().map(|v| v.wide()).product();
            if T::close(got, wide, x.len()) { Ok(()) } else { Err(format!("got {got:?}, want {wide}")) }
        } else {
            exact(got, want)
        }
    }
}
impl<T: TestType> TestOp<T> for Min
where
    Min: SegmentedOp<T, Out = T>,
{
    fn verify(x: &[T], _: usize, got: T) -> Result<(), String> {
        exact(got, x.iter().fold(T::HIGHEST, |a, &b| if b < a { b } else { a }))
    }
}
impl<T: TestType> TestOp<T> for Max
where
    Max: SegmentedOp<T, Out = T>,
{
    fn verify(x: &[T], _: usize, got: T) -> Result<(), String> {
        exact(got, x.iter().fold(T::LOWEST, |a, &b| if b > a { b } else { a }))
    }
}
/// Index (global) of the first extreme element, NaNs ignored; the
/// segment's first index when every element is a NaN; `u64::MAX` when
/// empty.
#[allow(clippy::eq_op)]
fn first_extreme<T: TestType>(x: &[T], start: usize, better: impl Fn(T, T) -> bool) -> u64 {
    if x.is_empty() {
        return u64::MAX;
    }
    let mut best: Option<usize> = None;
    for (i, &v) in x.iter().enumerate() {
        if v == v && best.is_none_or(|b| better(v, x[b])) {
            best = Some(i);
        }
    }
    (start + best.unwrap_or(0)) as u64
}
impl<T: TestType> TestOp<T> for ArgMin
where
    ArgMin: SegmentedOp<T, Out = u64>,
{
    fn verify(x: &[T], start: usize, got: u64) -> Result<(), String> {
        exact(got, first_extreme(x, start, |a, b| a < b))
    }
}
impl<T: TestType> TestOp<T> for ArgMax
where
    ArgMax: SegmentedOp<T, Out = u64>,
{
    fn verify(x: &[T], start: usize, got: u64) -> Result<(), String> {
        exact(got, first_extreme(x, start, |a, b| a > b))
    }
}

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn data<T: TestType, Op: TestOp<T>>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = Rng(seed);
    (0..n).map(|_| T::draw(&mut rng, Op::SMALL)).collect()
}

/// Check every segment `[begin, end)` of `got`.
fn verify_all<T: TestType, Op: TestOp<T>>(x: &[T], segs: &[(usize, usize)], got: &[Op::Out]) -> Result<(), String> {
    assert_eq!(segs.len(), got.len());
    for (s, (&(b, e), &g)) in segs.iter().zip(got).enumerate() {
        Op::verify(&x[b..e], b, g).map_err(|m| {
            format!("`{}` on {}, segment {s} of {} ([{b}, {e}) of {}): {m}", Op::NAME, T::NAME, segs.len(), x.len())
        })?;
    }
    Ok(())
}

/// Reduce `x` over `offsets` on the device (output poisoned first) and
/// check it.
fn run_offsets<T: TestType, Op: TestOp<T>>(
    ctx: &Context,
    seg: &Segmented,
    x: &[T],
    offsets: &[u64],
) -> Result<(), TestCaseError> {
    run_offsets_after::<T, Op>(ctx, seg, x, offsets, 0)
}

/// [`run_offsets`] on a view that starts `lead` elements into its buffer
/// (1: not aligned for the kernels' 16-byte loads).
fn run_offsets_after<T: TestType, Op: TestOp<T>>(
    ctx: &Context,
    seg: &Segmented,
    x: &[T],
    offsets: &[u64],
    lead: usize,
) -> Result<(), TestCaseError> {
    let mut padded = data::<T, Op>(lead, 99);
    padded.extend_from_slice(x);
    let buf = ctx.upload(&padded).map_err(fail)?;
    let input = buf.slice(lead..).map_err(fail)?;
    let offs = ctx.upload(offsets).map_err(fail)?;
    let mut out = ctx.alloc::<Op::Out>(offsets.len() - 1).map_err(fail)?;
    out.poison().map_err(fail)?;
    seg.reduce(&input, &offs, &mut out, Op::default()).map_err(fail)?;
    let segs: Vec<(usize, usize)> = offsets.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect();
    verify_all::<T, Op>(x, &segs, &out.to_vec().map_err(fail)?).map_err(TestCaseError::fail)
}

/// Offsets over `n` elements from random lengths: mostly around `mean`,
/// some empty, with a gap before the first and after the last.
fn random_offsets(n: usize, mean: usize, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed ^ 0x5EED);
    let mut at = rng.below((n / 8 + 1) as u64) as usize;
    let end = n - rng.below((n / 8 + 1) as u64) as usize;
    let mut offsets = vec![at as u64];
    while at < end {
        let len = match rng.below(8) {
            0 => 0,
            1 => 1,
            2 => rng.below(4 * mean as u64 + 1) as usize,
            _ => rng.below(2 * mean as u64 + 1) as usize,
        };
        at = (at + len).min(end);
        offsets.push(at as u64);
    }
    offsets
}

/// Tile length of the flat kernel for `T`.
fn tile<T>() -> usize {
    policy::tile_len::<T>(policy::BLOCK) as usize
}

/// Random offsets over inputs around the tile edges, every mean length
/// from runs of 1 to segments spanning tiles.
fn offsets_property<T: TestType, Op: TestOp<T>>(ctx: &Context, cases_n: u32) {
    let t = tile::<T>();
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 22 } else { 3 * t + 5 };
    let sizes = prop_oneof![
        1 => proptest::sample::select(vec![0, 1, 31, 32, 33, t - 1, t, t + 1, 2 * t + 3]),
        1 => 0..=max,
    ];
    let means = proptest::sample::select(vec![1usize, 3, 16, 100, 512, t, 3 * t]);
    // Each tile searches its own boundaries, or (every tile count here is
    // below the default threshold) a launch of their own finds them, by a
    // search per edge or a stream over the offsets.
    // Or the offsets are counted first and routed (to the ranges kernel
    // where their lengths suit it, else to the flat one). Plain operators'
    // tiles go through the kernel for short segments by default at short
    // means; the general tile kernel, and the short one at every mean, are
    // asked for too.
    let segs = [
        ctx.segmented(),
        ctx.segmented().bounds_from(0),
        ctx.segmented().bounds_from(0).bounds_by_stream(true),
        ctx.segmented().route_to_ranges(true),
        ctx.segmented().short_path(false),
        ctx.segmented().chunked(false).short_path(true),
        ctx.segmented().chunked(false).short_path(true).bounds_from(0),
    ];
    check(cases_n, (sizes, means, any::<u64>()), |(n, mean, seed)| {
        let x = data::<T, Op>(n, seed);
        let seg = &segs[(seed % segs.len() as u64) as usize];
        run_offsets::<T, Op>(ctx, seg, &x, &random_offsets(n, mean, seed))
    });
}

backend_test!(offsets_every_operator_and_type, |ctx| {
    let k = cases(ctx, 3, 12);
    macro_rules! all {
        ($($op:ty => [$($t:ty),*];)*) => {$($( offsets_property::<$t, $op>(ctx, k); )*)*};
    }
    all! {
        Sum => [i32, u32, i64, u64, f32, f64];
        Product => [i32, u64, f32, f64];
        Min => [i32, u32, i64, u64, f32, f64];
        Max => [i32, u32, i64, u64, f32, f64];
        ArgMin => [i32, u32, i64, u64, f32, f64];
        ArgMax => [i32, u32, i64, u64, f32, f64];
    }
});

backend_test!(headline_sum_many_cases, |ctx| {
    offsets_property::<i32, Sum>(ctx, cases(ctx, 12, 64));
    offsets_property::<f32, Sum>(ctx, cases(ctx, 12, 64));
});

backend_test!(edge_segmentations, |ctx| {
    let seg = ctx.segmented();
    let t = tile::<i32>() as u64;
    let n = (2 * t + 77) as usize;
    let x = data::<i32, Sum>(n, 7);
    let lead = policy::lead_max::<i32>();
    let cases: Vec<(&str, Vec<u64>)> = vec![
        ("all one segment", vec![0, n as u64]),
        ("runs of 1", (0..=n as u64).collect()),
        ("empty segments everywhere", (0..=n as u64).flat_map(|i| [i, i]).collect()),
        ("only empty segments", vec![5; 40]),
        ("empty at the very end", vec![0, 100, n as u64, n as u64, n as u64]),
        ("empty at the start", vec![0, 0, 0, 17, n as u64]),
        ("gaps before and after", vec![100, 200, n as u64 - 300]),
        ("boundaries on tile edges", vec![0, t - 1, t, t + 1, 2 * t, n as u64]),
        ("a segment from tile 0 into tile 2", vec![3, 2 * t + 5, n as u64]),
        // The short kernel reads a tile's first segment's part before the
        // tile itself up to `lead_max` elements, else leaves it to the spine.
        ("first segments from lead_max before the tiles", vec![0, t - lead, t + 9, 2 * t - lead, 2 * t + 1, n as u64]),
        ("first segments from lead_max + 1 before the tiles", vec![0, t - lead - 1, t, 2 * t - lead - 1, n as u64]),
        (
            "one from lead_max before, one from lead_max + 1",
            vec![1, t - lead, t + 1, 2 * t - lead - 1, 2 * t, n as u64],
        ),
        ("no segments", vec![10]),
    ];
    let first = ctx.segmented().bounds_from(0);
    let stream = ctx.segmented().bounds_from(0).bounds_by_stream(true);
    let (general, short) = (ctx.segmented().short_path(false), ctx.segmented().chunked(false).short_path(true));
    let short_first = ctx.segmented().chunked(false).short_path(true).bounds_from(0);
    for (what, offsets) in cases {
        for_ops(ctx, &seg, &x, &offsets).unwrap_or_else(|e| panic!("{what}: {e}"));
        for_ops(ctx, &first, &x, &offsets).unwrap_or_else(|e| panic!("{what}, bounds first: {e}"));
        for_ops(ctx, &stream, &x, &offsets).unwrap_or_else(|e| panic!("{what}, bounds streamed: {e}"));
        for_ops(ctx, &general, &x, &offsets).unwrap_or_else(|e| panic!("{what}, general tiles: {e}"));
        for_ops(ctx, &short, &x, &offsets).unwrap_or_else(|e| panic!("{what}, short tiles: {e}"));
        for_ops(ctx, &short_first, &x, &offsets).unwrap_or_else(|e| panic!("{what}, short tiles, bounds first: {e}"));
    }
    // No input at all: every segment empty.
    for_ops(ctx, &seg, &[], &[0, 0, 0]).unwrap();
    for_ops(ctx, &seg, &[], &[0]).unwrap();
});

// Offsets counted and routed: to the ranges kernel where every segment is
// at most `policy::ROUTE_LONGEST` and at most a quarter are shorter than
// `policy::ROUTE_SHORT`, else to the flat kernels (one long segment, too
// many short ones, offsets out of order), every operator and type; the
// default plan routes means of a few hundred by itself.
fn routed_property<T: TestType, Op: TestOp<T>>(ctx: &Context, cases_n: u32) {
    let t = tile::<T>();
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 21 } else { 2 * t + 5 };
    let routed = ctx.segmented().route_to_ranges(true);
    check(cases_n, (0..=max, 0u32..4, any::<u64>()), |(n, kind, seed)| {
        let mut rng = Rng(seed);
        let x = data::<T, Op>(n, seed);
        let long = policy::ROUTE_LONGEST;
        let mut offsets = vec![Ord::min(rng.below(64), n as u64)];
        while *offsets.last().unwrap() < n as u64 {
            let len = match kind {
                // Ranges: lengths from the shortest that counts as long
                // enough to the longest the ranges kernel takes.
                0 | 1 => policy::ROUTE_SHORT + rng.below(long - policy::ROUTE_SHORT + 1),
                // Flat: mostly short segments.
                2 => rng.below(policy::ROUTE_SHORT),
                // Flat: ranges-sized, and one too long near the middle.
                _ => 100 + rng.below(400),
            };
            let at = Ord::min(offsets.last().unwrap() + len, n as u64);
            offsets.push(at);
        }
        if kind == 3 && offsets.len() > 2 {
            let mid = offsets.len() / 2;
            offsets.insert(mid, offsets[mid - 1]);
            let longer = Ord::min(offsets[mid] + long + 1, n as u64);
            for o in &mut offsets[mid..] {
                *o = Ord::max(*o, longer);
            }
        }
        run_offsets::<T, Op>(ctx, &routed, &x, &offsets)?;
        run_offsets::<T, Op>(ctx, &ctx.segmented(), &x, &offsets)
    });
}

backend_test!(routed_every_operator_and_type, |ctx| {
    let k = cases(ctx, 3, 8);
    macro_rules! all {
        ($($op:ty => [$($t:ty),*];)*) => {$($( routed_property::<$t, $op>(ctx, k); )*)*};
    }
    all! {
        Sum => [i32, u32, i64, u64, f32, f64];
        Product => [i32, f64];
        Min => [i32, f32];
        Max => [u64, f64];
        ArgMin => [i32, u32, i64, u64, f32, f64];
        ArgMax => [i32, f32];
    }
});

// The chunked path (long segments in chunks of a block each, short ones a
// warp each), forced, with chunks and the long/short threshold from one
// element up, so that small inputs reach segments of many chunks (their
// partials combined by whichever block comes last), empty segments and
// gaps before the first offset and after the last.
fn chunked_property<T: TestType, Op: TestOp<T>>(ctx: &Context, cases_n: u32) {
    let t = tile::<T>();
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 22 } else { 2 * t + 5 };
    let means = proptest::sample::select(vec![1usize, 7, 100, 700, t, 4 * t]);
    // (10_000, 3_000): chunks and warp-path segments long enough for whole
    // rounds of loads (8,192 or 1,024 four-byte elements) at these sizes.
    let lens = proptest::sample::select(vec![(1u64, 1u64), (3, 2), (64, 50), (1000, 16), (10_000, 3_000), (0, 0)]);
    check(cases_n, (0..=max, means, lens, any::<u64>()), |(n, mean, (chunk, short), seed)| {
        let x = data::<T, Op>(n, seed);
        let seg = ctx.segmented().chunked(true);
        // (0, 0): the defaults.
        let seg = if chunk == 0 { seg } else { seg.chunk_lens(chunk, short) };
        run_offsets::<T, Op>(ctx, &seg, &x, &random_offsets(n, mean, seed))
    });
}

backend_test!(chunked_every_operator_and_type, |ctx| {
    let k = cases(ctx, 3, 8);
    macro_rules! all {
        ($($op:ty => [$($t:ty),*];)*) => {$($( chunked_property::<$t, $op>(ctx, k); )*)*};
    }
    all! {
        Sum => [i32, u32, i64, u64, f32, f64];
        Product => [i32, f64];
        Min => [i32, f32, u64];
        Max => [u64, f64, i32];
        ArgMin => [i32, u32, i64, u64, f32, f64];
        ArgMax => [i32, f32, f64];
    }
});

/// Offsets out of order, or past the input's end, are refused by `seg`
/// with `InvalidInput`; good ones are reduced (against the CPU).
fn refuses_bad_offsets(ctx: &Context, seg: &Segmented<'_>, seed: u64) {
    let x = data::<i32, Sum>(5000, seed);
    let mut out = ctx.alloc::<i32>(4).unwrap();
    let input = ctx.upload(&x).unwrap();
    for offsets in [[0u64, 1000, 900, 2000, 3000], [0, 100, 200, 300, 5001], [0, 1000, 2000, 3000, 4000]] {
        let offs = ctx.upload(&offsets[..]).unwrap();
        out.poison().unwrap();
        let got = seg.reduce(&input, &offs, &mut out, Sum);
        if offsets == [0, 1000, 2000, 3000, 4000] {
            got.unwrap();
            let want: Vec<i32> = offsets
                .windows(2)
                .map(|w| x[w[0] as usize..w[1] as usize].iter().fold(0i32, |a, &b| a.wrapping_add(b)))
                .collect();
            assert_eq!(out.to_vec().unwrap(), want);
        } else {
            assert!(matches!(got, Err(Error::InvalidInput { .. })), "{offsets:?}: {got:?}");
        }
    }
}

// Argmin and argmax on the chunked path where whole rounds of loads run:
// chunks of 10,000 elements (a block's eight vectors a thread per round
// cover 8,192 four-byte or 4,096 eight-byte elements) and warp-path
// segments of up to 3,000 (a warp's round: 1,024 or 512), starting at
// every residue of a 16-byte vector, the extreme drawn anywhere (all
// bits: few ties) and, in every other case, planted in a round's middle.
backend_test!(chunked_argmin_in_whole_rounds, |ctx| {
    let seg = ctx.segmented().chunked(true).chunk_lens(10_000, 3_000);
    check(cases(ctx, 6, 12), (0usize..4, 0usize..4, any::<u64>()), |(head, gap, seed)| {
        let mut rng = Rng(seed);
        // Long segments of 2-4 chunks, then short ones of 1,100-2,999.
        let mut offsets = vec![head as u64];
        for _ in 0..3 {
            let len = 20_000 + rng.below(20_000);
            offsets.push(offsets.last().unwrap() + len);
        }
        for _ in 0..4 {
            let len = 1_100 + rng.below(1_900);
            offsets.push(offsets.last().unwrap() + len);
        }
        let n = *offsets.last().unwrap() as usize + gap;
        let mut ints = data::<i32, ArgMin>(n, seed);
        let mut floats = data::<f64, ArgMax>(n, seed ^ 7);
        if seed & 1 == 0 {
            // The segment's extreme in its middle, off any vector boundary.
            for w in offsets.windows(2) {
                let at = ((w[0] + w[1]) / 2) as usize | 1;
                ints[at] = i32::MIN;
                floats[at] = f64::INFINITY;
            }
        }
        run_offsets::<i32, ArgMin>(ctx, &seg, &ints, &offsets)?;
        run_offsets::<f64, ArgMax>(ctx, &seg, &floats, &offsets)?;
        run_offsets::<i32, ArgMax>(ctx, &seg, &ints, &offsets)
    });
});

// Integer argmin and argmax on the chunked path where elements tie at the
// operator's worst value (`MAX` for argmin, `MIN` for argmax), which a
// thread's run starts from: segments of nothing else (the first index
// wins), or with a few better elements planted, chunked and warp-path
// segments at every residue of a 16-byte vector and one aligned to it.
backend_test!(chunked_integer_ties_at_the_worst_value, |ctx| {
    let seg = ctx.segmented().chunked(true).chunk_lens(10_000, 3_000);
    check(cases(ctx, 4, 8), (0usize..4, any::<u64>()), |(head, seed)| {
        let mut rng = Rng(seed);
        let mut offsets = vec![head as u64];
        for len in [20_000 + rng.below(20_000), 1 + rng.below(40), 1_100 + rng.below(1_900), 200 + rng.below(300)] {
            offsets.push(offsets.last().unwrap() + len);
        }
        // A chunked segment whose start is 16-byte aligned (no head
        // elements before its first vector), then one more at any residue.
        let to_vector = 8 - offsets.last().unwrap() % 8;
        offsets.push(offsets.last().unwrap() + to_vector);
        for len in [20_000 + rng.below(20_000), 20_000 + rng.below(20_000)] {
            offsets.push(offsets.last().unwrap() + len);
        }
        let n = *offsets.last().unwrap() as usize + 3;
        // Six better elements where the seed is odd.
        fn plant<T: Copy>(worst: T, better: T, n: usize, rng: &mut Rng, seed: u64) -> Vec<T> {
            let mut v = vec![worst; n];
            for _ in 0..(seed & 1) * 6 {
                v[rng.below(n as u64) as usize] = better;
            }
            v
        }
        run_offsets::<i32, ArgMin>(ctx, &seg, &plant(i32::MAX, 7, n, &mut rng, seed), &offsets)?;
        run_offsets::<i32, ArgMax>(ctx, &seg, &plant(i32::MIN, -7, n, &mut rng, seed), &offsets)?;
        run_offsets::<u32, ArgMin>(ctx, &seg, &plant(u32::MAX, 7, n, &mut rng, seed), &offsets)?;
        run_offsets::<u32, ArgMax>(ctx, &seg, &plant(0u32, 7, n, &mut rng, seed), &offsets)?;
        run_offsets::<i64, ArgMin>(ctx, &seg, &plant(i64::MAX, 7, n, &mut rng, seed), &offsets)
    });
});

// The chunked path refuses offsets out of order or past the input, and
// reduces good ones, with one-element chunks and with the defaults.
backend_test!(chunked_bad_offsets_are_refused, |ctx| {
    for seg in [ctx.segmented().chunked(true), ctx.segmented().chunked(true).chunk_lens(1, 1)] {
        refuses_bad_offsets(ctx, &seg, 9);
    }
});

// Routed offsets out of order or past the input are refused like the flat
// kernel's, whichever path the counts pick.
backend_test!(routed_bad_offsets_are_refused, |ctx| {
    refuses_bad_offsets(ctx, &ctx.segmented().route_to_ranges(true), 5);
});

// Tile edges owned by boundaries that span more than four tiles, which the
// bounds launch writes by whole warps: a long leading gap, segments of 5
// and 6 tiles next to short ones in one warp, and a long tail past the
// last offset.
backend_test!(bounds_of_segments_over_many_tiles, |ctx| {
    let t = tile::<i32>() as u64;
    let n = 12 * t + 77;
    let x = data::<i32, Sum>(n as usize, 11);
    let cases: Vec<(&str, Vec<u64>)> = vec![
        ("long segments beside short ones", vec![0, 1, 2, 5 * t + 1, 5 * t + 1, 11 * t, n]),
        ("long gap before the first offset", vec![7 * t + 3, 7 * t + 10, n]),
        ("long tail after the last offset", vec![0, 10, 20]),
        ("two long segments on tile edges", vec![0, 5 * t, 10 * t, n]),
    ];
    for seg in [
        ctx.segmented().bounds_from(0).bounds_by_stream(true),
        ctx.segmented().bounds_from(0).bounds_by_stream(false),
        ctx.segmented(),
        ctx.segmented().chunked(false).short_path(true).bounds_from(0),
    ] {
        for (what, offsets) in &cases {
            for_ops(ctx, &seg, &x, offsets).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
});

backend_test!(unaligned_views_of_whole_tiles, |ctx| {
    let seg = ctx.segmented();
    fn go<T: TestType, Op: TestOp<T>>(ctx: &Context, seg: &Segmented, seed: u64) {
        let t = tile::<T>();
        for (n, mean) in [(3 * t, 100), (3 * t + 5, 3 * t), (t, 1)] {
            let x = data::<T, Op>(n, seed ^ n as u64);
            run_offsets_after::<T, Op>(ctx, seg, &x, &random_offsets(n, mean, seed), 1)
                .unwrap_or_else(|e| panic!("n {n}, mean {mean}: {e}"));
        }
    }
    let seed = Rng(0xA11E).next() ^ std::process::id() as u64;
    go::<i32, Sum>(ctx, &seg, seed);
    go::<f32, ArgMin>(ctx, &seg, seed);
    go::<u32, Max>(ctx, &seg, seed);
    go::<f64, Sum>(ctx, &seg, seed);
    go::<i64, ArgMax>(ctx, &seg, seed);
});

/// Sum, min and argmax of `x` over `offsets`.
fn for_ops(ctx: &Context, seg: &Segmented, x: &[i32], offsets: &[u64]) -> Result<(), TestCaseError> {
    run_offsets::<i32, Sum>(ctx, seg, x, offsets)?;
    run_offsets::<i32, Min>(ctx, seg, x, offsets)?;
    run_offsets::<i32, ArgMax>(ctx, seg, x, offsets)
}

/// Fixed lengths at tile edges, on `T`: through the flat kernel, and
/// through the ranges kernel (by default from 128 to 4096 and, for 4-byte
/// elements, at 16; forced below).
fn fixed_lengths<T: TestType, Op: TestOp<T>>(ctx: &Context) {
    let t = tile::<T>();
    let route = policy::ROUTE_LONGEST as usize;
    let segs = [
        ctx.segmented(),
        ctx.segmented().route_to_ranges(true),
        ctx.segmented().route_to_ranges(false),
        ctx.segmented().route_to_ranges(false).short_path(true),
        ctx.segmented().short_path(false),
    ];
    for seg in segs {
        for n in [0, 1, 31, 33, t - 1, t, t + 1, 2 * t + 3] {
            for len in [1, 2, 16, 31, 32, 33, 128, 511, route, route + 1, t - 1, t, t + 1, 3 * t] {
                let x = data::<T, Op>(n, (n * 31 + len) as u64);
                let s = n.div_ceil(len);
                let input = ctx.upload(&x).unwrap();
                let mut out = ctx.alloc::<Op::Out>(s).unwrap();
                out.poison().unwrap();
                seg.reduce_fixed(&input, len, &mut out, Op::default()).unwrap();
                let segs: Vec<(usize, usize)> = (0..s).map(|k| (k * len, ((k + 1) * len).min(n))).collect();
                verify_all::<T, Op>(&x, &segs, &out.to_vec().unwrap())
                    .unwrap_or_else(|e| panic!("n {n}, length {len}: {e}"));
            }
        }
    }
}

backend_test!(fixed_lengths_at_tile_edges, |ctx| {
    fixed_lengths::<i32, Sum>(ctx);
    fixed_lengths::<f64, Max>(ctx);
    fixed_lengths::<u32, ArgMin>(ctx);
});

/// Random begin/end pairs, overlapping and in any order.
fn ranges_property<T: TestType, Op: TestOp<T>>(ctx: &Context, cases_n: u32) {
    let max: usize = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 5000 };
    let seg = ctx.segmented();
    check(cases_n, (0..=max, 0usize..300, any::<u64>()), |(n, s, seed)| {
        let x = data::<T, Op>(n, seed);
        let mut rng = Rng(seed ^ 77);
        let segs: Vec<(usize, usize)> = (0..s)
            .map(|_| {
                let b = rng.below(n as u64 + 1) as usize;
                let len = if rng.below(4) == 0 { 0 } else { rng.below((n - b) as u64 + 1) as usize };
                (b, b + len)
            })
            .collect();
        let begins: Vec<u64> = segs.iter().map(|s| s.0 as u64).collect();
        let ends: Vec<u64> = segs.iter().map(|s| s.1 as u64).collect();
        let mut out = ctx.alloc::<Op::Out>(s).map_err(fail)?;
        out.poison().map_err(fail)?;
        // Every other draw, a view one element into its buffer: not
        // 16-byte aligned.
        let skip = (seed % 2) as usize;
        let lead = x.first().copied().unwrap_or_default();
        let padded: Vec<T> = std::iter::repeat_n(lead, skip).chain(x.iter().copied()).collect();
        let buffer = ctx.upload(&padded).map_err(fail)?;
        let input = buffer.slice(skip..).map_err(fail)?;
        seg.reduce_ranges(&input, &begins, &ends, &mut out, Op::default()).map_err(fail)?;
        verify_all::<T, Op>(&x, &segs, &out.to_vec().map_err(fail)?).map_err(TestCaseError::fail)?;
        // The same pairs cut into 2 to 40 parts (a warp a part, then a
        // launch that joins them), every other draw in caller storage.
        let parts = 2 + rng.below(39);
        out.poison().map_err(fail)?;
        let cut = ctx.segmented().ranges_parts(parts);
        if seed % 3 == 0 {
            let mut temp = cut.temp::<T, Op>(n).map_err(fail)?;
            cut.reduce_ranges_with_temp(&input, &begins, &ends, &mut out, Op::default(), &mut temp).map_err(fail)?;
        } else {
            cut.reduce_ranges(&input, &begins, &ends, &mut out, Op::default()).map_err(fail)?;
        }
        verify_all::<T, Op>(&x, &segs, &out.to_vec().map_err(fail)?)
            .map_err(|e| TestCaseError::fail(format!("in {parts} parts: {e}")))?;
        // Pairs longer than `long` in slots of `slot` elements, in a table
        // of `cap` slots (small ones fill up: the rest walked by a warp).
        let (long, slot) = (rng.below(64), 1 + rng.below(50));
        let cap = [1, 3, 40, 100_000][rng.below(4) as usize];
        out.poison().map_err(fail)?;
        let slotted = ctx.segmented().ranges_long(long, slot).ranges_table_cap(cap);
        slotted.reduce_ranges(&input, &begins, &ends, &mut out, Op::default()).map_err(fail)?;
        verify_all::<T, Op>(&x, &segs, &out.to_vec().map_err(fail)?)
            .map_err(|e| TestCaseError::fail(format!("long {long}, slots of {slot}, {cap} of them: {e}")))?;
        // The chunked path, with short chunks: overlapping pairs may need
        // more chunk items than it plans room for, and then take a warp
        // each.
        let (chunk, short) = (1 + rng.below(200), 1 + rng.below(300));
        out.poison().map_err(fail)?;
        let chunked = ctx.segmented().chunked(true).chunk_lens(chunk, short);
        chunked.reduce_ranges(&input, &begins, &ends, &mut out, Op::default()).map_err(fail)?;
        verify_all::<T, Op>(&x, &segs, &out.to_vec().map_err(fail)?)
            .map_err(|e| TestCaseError::fail(format!("chunked, chunks of {chunk}, from {short}: {e}")))
    });
}

/// Begin/end pairs through the chunked path: the segments of random CSR
/// offsets as pairs in a shuffled order (their chunks fit the plan's
/// room), the same pairs each repeated three times, and the whole input
/// 50 times (more items than the room: every pair then a warp); a bad
/// pair refused.
fn chunked_ranges<T: TestType, Op: TestOp<T>>(ctx: &Context, seed: u64) {
    let n: usize = if ctx.backend() == BackendKind::Cuda { 1 << 22 } else { 40_000 };
    let x = data::<T, Op>(n, seed);
    let mut rng = Rng(seed ^ 991);
    let mut segs: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while at < n {
        let len = [0, 1, 7, 300, 2_000, 9_000][rng.below(6) as usize].min(n - at);
        segs.push((at, at + len));
        at += len.max(1);
    }
    for i in (1..segs.len()).rev() {
        segs.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let input = ctx.upload(&x).unwrap();
    // The last set: the whole input 50 times, more items than the room
    // at either chunk length (at chunks of 1000: 2000 against 91).
    for (repeat, whole) in [(1, false), (3, false), (50, true)] {
        let pairs: Vec<(usize, usize)> = if whole {
            vec![(0, n); repeat]
        } else {
            segs.iter().flat_map(|&p| std::iter::repeat_n(p, repeat)).collect()
        };
        let begins: Vec<u64> = pairs.iter().map(|s| s.0 as u64).collect();
        let ends: Vec<u64> = pairs.iter().map(|s| s.1 as u64).collect();
        let mut out = ctx.alloc::<Op::Out>(pairs.len()).unwrap();
        // (Every short batch run before the plan's end, the last: where the
        // room overflows, those batches' long pairs get their warps after.)
        for seg in [
            ctx.segmented().chunked(true),
            ctx.segmented().chunked(true).chunk_lens(1000, 500),
            ctx.segmented().chunked(true).early_batches(u64::MAX),
        ] {
            out.poison().unwrap();
            seg.reduce_ranges(&input, &begins, &ends, &mut out, Op::default()).unwrap();
            verify_all::<T, Op>(&x, &pairs, &out.to_vec().unwrap())
                .unwrap_or_else(|e| panic!("each pair {repeat} times: {e}"));
        }
    }
    let (begins, ends) = (vec![0u64, 5, 3], vec![n as u64, 4, 9]);
    let mut out = ctx.alloc::<Op::Out>(3).unwrap();
    let r = ctx.segmented().chunked(true).reduce_ranges(&input, &begins, &ends, &mut out, Op::default());
    assert!(matches!(r, Err(Error::InvalidInput { .. })), "{r:?}");
}

backend_test!(ranges_through_the_chunked_path, |ctx| {
    chunked_ranges::<i32, Sum>(ctx, 21);
    chunked_ranges::<f32, Max>(ctx, 22);
    chunked_ranges::<u64, ArgMin>(ctx, 23);
    chunked_ranges::<f64, ArgMax>(ctx, 24);
});

/// A few long begin/end pairs (overlapping, one empty, one the whole
/// input), through the default plan (the chunked path: they are long on
/// average) and through explicit parts; the storage reused from call to
/// call.
fn few_long_ranges<T: TestType, Op: TestOp<T>>(ctx: &Context, seed: u64) {
    let n: usize = if ctx.backend() == BackendKind::Cuda { 1 << 23 } else { 1 << 15 };
    let x = data::<T, Op>(n, seed);
    let mut rng = Rng(seed ^ 4242);
    let mut segs: Vec<(usize, usize)> = (0..13)
        .map(|_| {
            let len = n / 16 + rng.below((n / 8) as u64) as usize;
            let b = rng.below((n - len) as u64 + 1) as usize;
            (b, b + len)
        })
        .collect();
    segs.extend([(n / 3, n / 3), (0, n), (n - 1, n)]);
    let begins: Vec<u64> = segs.iter().map(|s| s.0 as u64).collect();
    let ends: Vec<u64> = segs.iter().map(|s| s.1 as u64).collect();
    let input = ctx.upload(&x).unwrap();
    let mut out = ctx.alloc::<Op::Out>(segs.len()).unwrap();
    let mut temp = ctx.segmented().temp::<T, Op>(n).unwrap();
    for parts in [None, Some(1), Some(2), Some(5), Some(64), None] {
        out.poison().unwrap();
        let seg = match parts {
            Some(p) => ctx.segmented().ranges_parts(p),
            None => ctx.segmented(),
        };
        seg.reduce_ranges_with_temp(&input, &begins, &ends, &mut out, Op::default(), &mut temp).unwrap();
        verify_all::<T, Op>(&x, &segs, &out.to_vec().unwrap()).unwrap_or_else(|e| panic!("parts {parts:?}: {e}"));
    }
    // Not in parts: the long ones in slots (the table as large as the
    // storage allows, then one that holds a few pairs only).
    for cap in [None, Some(2 * n as u64 / 1000)] {
        out.poison().unwrap();
        let mut seg = ctx.segmented().ranges_parts(1).ranges_long(1000, 1000);
        if let Some(c) = cap {
            seg = seg.ranges_table_cap(c);
        }
        seg.reduce_ranges_with_temp(&input, &begins, &ends, &mut out, Op::default(), &mut temp).unwrap();
        verify_all::<T, Op>(&x, &segs, &out.to_vec().unwrap()).unwrap_or_else(|e| panic!("slots, cap {cap:?}: {e}"));
    }
}

backend_test!(few_long_ranges_in_parts, |ctx| {
    few_long_ranges::<i32, Sum>(ctx, 11);
    few_long_ranges::<f32, Sum>(ctx, 12);
    few_long_ranges::<u32, ArgMin>(ctx, 13);
    few_long_ranges::<f64, ArgMax>(ctx, 14);
    few_long_ranges::<i64, Min>(ctx, 15);
});

backend_test!(ranges_in_any_order, |ctx| {
    let k = cases(ctx, 4, 16);
    ranges_property::<i32, Sum>(ctx, k);
    ranges_property::<f32, Sum>(ctx, k);
    ranges_property::<i64, Min>(ctx, k);
    ranges_property::<f64, ArgMin>(ctx, k);
    ranges_property::<u32, ArgMax>(ctx, k);
    ranges_property::<f32, Product>(ctx, k);
});

/// Warps of the ranges kernel's largest grid: with 32 pairs a warp or
/// more, its warps take a lane a pair.
fn ranges_warps(ctx: &Context) -> usize {
    ctx.multiprocessors() as usize
        * policy::RANGES_BLOCKS_PER_SM as usize
        * (policy::RANGES_BLOCK / gpuprim_kernels::gpu::WARP_SIZE) as usize
}

/// More begin/end pairs than 32 a warp of the ranges kernel's grid (a
/// layout that batches segments by 32 must handle them): mostly short
/// segments, some empty, some exactly 32 and 33 long, a few long ones, and
/// a stretch of 64 long ones in a row; in any order, overlapping, the last
/// 32 part-filled.
fn many_ranges<T: TestType, Op: TestOp<T>>(ctx: &Context, seed: u64) {
    let warps = ranges_warps(ctx);
    let s = 32 * warps + 45;
    let n: usize = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 1 << 14 };
    let short = 32;
    let x = data::<T, Op>(n, seed);
    let mut rng = Rng(seed ^ 991);
    let segs: Vec<(usize, usize)> = (0..s)
        .map(|k| {
            let len = if (96..160).contains(&k) {
                short + 1 + rng.below(3000) as usize
            } else {
                match rng.below(40) {
                    0..=3 => 0,
                    4 => short,
                    5 => short + 1,
                    6 => short + 1 + rng.below(2000) as usize,
                    _ => 1 + rng.below(short as u64) as usize,
                }
            };
            let b = rng.below((n - len) as u64 + 1) as usize;
            (b, b + len)
        })
        .collect();
    let begins: Vec<u64> = segs.iter().map(|s| s.0 as u64).collect();
    let ends: Vec<u64> = segs.iter().map(|s| s.1 as u64).collect();
    let input = ctx.upload(&x).unwrap();
    let mut out = ctx.alloc::<Op::Out>(s).unwrap();
    out.poison().unwrap();
    ctx.segmented().reduce_ranges(&input, &begins, &ends, &mut out, Op::default()).unwrap();
    verify_all::<T, Op>(&x, &segs, &out.to_vec().unwrap()).unwrap_or_else(|e| panic!("{s} ranges: {e}"));
    // The long ones (here those over 40) in slots of 64: the warp's 32
    // pairs hand several to the table.
    out.poison().unwrap();
    ctx.segmented().ranges_long(40, 64).reduce_ranges(&input, &begins, &ends, &mut out, Op::default()).unwrap();
    verify_all::<T, Op>(&x, &segs, &out.to_vec().unwrap()).unwrap_or_else(|e| panic!("{s} ranges in slots: {e}"));
    // In slots of 2: more slots than the table holds (the rest walked by
    // their warps), taken by the warps in runs of several.
    out.poison().unwrap();
    ctx.segmented().ranges_long(40, 2).reduce_ranges(&input, &begins, &ends, &mut out, Op::default()).unwrap();
    verify_all::<T, Op>(&x, &segs, &out.to_vec().unwrap()).unwrap_or_else(|e| panic!("{s} ranges in slots of 2: {e}"));
}

backend_test!(many_ranges_of_mixed_lengths, |ctx| {
    many_ranges::<i32, Sum>(ctx, 1);
    many_ranges::<f32, Sum>(ctx, 2);
    many_ranges::<u32, ArgMin>(ctx, 3);
    many_ranges::<f64, Max>(ctx, 4);
});

/// Many short pairs side by side, as CSR offsets give them, so that a
/// warp's 32 pairs mostly lie in one window of its shared memory (the
/// ranges kernel then stages the window with coalesced loads and each lane
/// sums its pair from it): lengths 0 to 16, now and then a gap, a pair
/// that overlaps the one before, a run of pairs in falling order, pairs
/// of up to 32, now and then a gap of 1000 or more (the warp's span passes
/// its window: each lane reads its own) and one long pair (walked by the
/// warp after its short ones).
fn short_ranges_side_by_side<T: TestType, Op: TestOp<T>>(ctx: &Context, seed: u64) {
    let warps = ranges_warps(ctx);
    let s = 32 * warps + 77;
    let mut rng = Rng(seed ^ 5151);
    let mut segs: Vec<(usize, usize)> = Vec::with_capacity(s);
    let mut at = 0usize;
    for k in 0..s {
        let len = if k % 997 == 500 {
            3000
        } else if rng.below(60) == 0 {
            17 + rng.below(16) as usize
        } else {
            rng.below(17) as usize
        };
        if rng.below(40) == 0 {
            at += rng.below(100) as usize;
        } else if rng.below(150) == 0 {
            at += 1000 + rng.below(1000) as usize;
        }
        let b = if rng.below(30) == 0 { at.saturating_sub(rng.below(8) as usize) } else { at };
        segs.push((b, b + len));
        at = b + len;
    }
    // Every 7th group of 32 in falling order.
    for g in (0..s / 32).step_by(7) {
        segs[32 * g..32 * g + 32].reverse();
    }
    let n = segs.iter().map(|p| p.1).max().unwrap_or(0) + 5;
    let x = data::<T, Op>(n, seed);
    let begins: Vec<u64> = segs.iter().map(|p| p.0 as u64).collect();
    let ends: Vec<u64> = segs.iter().map(|p| p.1 as u64).collect();
    let input = ctx.upload(&x).unwrap();
    let mut out = ctx.alloc::<Op::Out>(s).unwrap();
    out.poison().unwrap();
    for seg in [ctx.segmented(), ctx.segmented().ranges_window(policy::RANGES_WINDOW_MAX_BYTES as u64)] {
        out.poison().unwrap();
        seg.reduce_ranges(&input, &begins, &ends, &mut out, Op::default()).unwrap();
        verify_all::<T, Op>(&x, &segs, &out.to_vec().unwrap()).unwrap_or_else(|e| panic!("{s} short ranges: {e}"));
    }
    // The same through fixed lengths of 1 to 32 (the ranges kernel's
    // window sized to hold a warp's 32 segments, up to its most bytes).
    let len = 1 + (seed * 7 % 32) as usize;
    let segments = n.div_ceil(len);
    let mut fixed = ctx.alloc::<Op::Out>(segments).unwrap();
    fixed.poison().unwrap();
    ctx.segmented().route_to_ranges(true).reduce_fixed(&input, len, &mut fixed, Op::default()).unwrap();
    let segs: Vec<(usize, usize)> = (0..segments).map(|k| (k * len, (k * len + len).min(n))).collect();
    verify_all::<T, Op>(&x, &segs, &fixed.to_vec().unwrap()).unwrap_or_else(|e| panic!("fixed length {len}: {e}"));
}

backend_test!(short_ranges_side_by_side_in_windows, |ctx| {
    short_ranges_side_by_side::<i32, Sum>(ctx, 1);
    short_ranges_side_by_side::<f32, Sum>(ctx, 2);
    short_ranges_side_by_side::<u32, ArgMin>(ctx, 3);
    short_ranges_side_by_side::<f64, Max>(ctx, 4);
    short_ranges_side_by_side::<i64, Sum>(ctx, 16);
});

/// CSR offsets short on average, which the default plan sends to the
/// ranges kernel as begin/end pairs under argmin and argmax (`offsets`,
/// `offsets + 1`; a warp's 32 segments staged in its window of shared
/// memory): lengths around
/// `mean`, some empty, a stretch of longer ones whose warps' spans pass
/// the window (each lane reads its own), a few of 3000 (walked by the
/// warp, or listed in the slot table) and, where `seed` is odd, an input
/// view that starts one element into its buffer. Checked against the CPU,
/// and the same offsets through the tile kernels.
fn offsets_in_windows<T: TestType, Op: TestOp<T>>(ctx: &Context, mean: u64, seed: u64) {
    let mut rng = Rng(seed ^ 0xC5A);
    let segments = 32 * ranges_warps(ctx) + 3001;
    let mut offsets = vec![rng.below(40)];
    for k in 0..segments {
        let len = if k % 1499 == 700 {
            3000
        } else if (1000..1100).contains(&k) {
            2 * mean + rng.below(2 * mean)
        } else if rng.below(10) == 0 {
            0
        } else {
            rng.below(2 * mean + 1)
        };
        offsets.push(offsets.last().unwrap() + len);
    }
    let n = *offsets.last().unwrap() as usize + rng.below(8) as usize;
    assert!(
        policy::offsets_to_ranges(n as u64, segments as u64, true),
        "mean {} is not routed to the window",
        n / segments
    );
    let x = data::<T, Op>(n, seed);
    let lead = (seed % 2) as usize;
    run_offsets_after::<T, Op>(ctx, &ctx.segmented(), &x, &offsets, lead)
        .unwrap_or_else(|e| panic!("mean {mean}, through the window: {e}"));
    run_offsets_after::<T, Op>(ctx, &ctx.segmented().route_to_ranges(false), &x, &offsets, lead)
        .unwrap_or_else(|e| panic!("mean {mean}, through the tiles: {e}"));
    // Windows of 32 elements (most warps' spans pass them) and of the most
    // bytes.
    for bytes in [32 * size_of::<T>() as u64, policy::RANGES_WINDOW_MAX_BYTES as u64] {
        run_offsets_after::<T, Op>(ctx, &ctx.segmented().ranges_window(bytes), &x, &offsets, lead)
            .unwrap_or_else(|e| panic!("mean {mean}, windows of {bytes} bytes: {e}"));
    }
}

backend_test!(offsets_short_on_average_through_windows, |ctx| {
    offsets_in_windows::<i32, ArgMin>(ctx, 16, 1);
    offsets_in_windows::<f32, ArgMax>(ctx, 24, 2);
    offsets_in_windows::<u64, ArgMax>(ctx, 6, 3);
    offsets_in_windows::<i32, ArgMin>(ctx, 20, 5);
    offsets_in_windows::<u32, ArgMin>(ctx, 4, 6);
    offsets_in_windows::<f64, ArgMax>(ctx, 9, 7);
    offsets_in_windows::<i64, ArgMin>(ctx, 16, 8);
    offsets_in_windows::<f32, ArgMin>(ctx, 28, 9);
    offsets_in_windows::<i32, ArgMax>(ctx, 12, 10);
});

// Offsets short on average under argmin (the ranges kernel's route) out
// of order or past the input are refused with the offsets' error;
// unchecked, the call returns and good segments still come out right.
backend_test!(offsets_in_windows_bad_ones_are_refused, |ctx| {
    let segments = 32 * ranges_warps(ctx) + 100;
    let mut rng = Rng(77);
    let mut good = vec![0u64];
    for _ in 0..segments {
        good.push(good.last().unwrap() + 16 + rng.below(9));
    }
    let n = *good.last().unwrap() as usize;
    let x = data::<i32, ArgMin>(n, 12);
    let input = ctx.upload(&x).unwrap();
    let mut out = ctx.alloc::<u64>(segments).unwrap();
    assert!(policy::offsets_to_ranges(n as u64, segments as u64, true));
    let mut falling = good.clone();
    falling[segments / 2] = falling[segments / 2 + 1] + 1;
    let mut past = good.clone();
    past[segments - 7] = n as u64 + 1;
    for (what, offsets) in [("falling", &falling), ("past the end", &past)] {
        let offs = ctx.upload(&offsets[..]).unwrap();
        match ctx.segmented().reduce(&input, &offs, &mut out, ArgMin) {
            Err(Error::InvalidInput { what: w, .. }) => assert_eq!(w, "segment offsets", "{what}"),
            other => panic!("{what}: {other:?}"),
        }
        // Unchecked: no wait, no error, and the segments away from the bad
        // offset are right.
        out.poison().unwrap();
        ctx.segmented().check(false).reduce(&input, &offs, &mut out, ArgMin).unwrap();
        let got = out.to_vec().unwrap();
        let bad = if what == "falling" { segments / 2 - 1..segments / 2 + 1 } else { segments - 8..segments - 6 };
        for s in (0..segments).filter(|s| !bad.contains(s)) {
            let start = offsets[s] as usize;
            let r = start..offsets[s + 1] as usize;
            <ArgMin as TestOp<i32>>::verify(&x[r], start, got[s])
                .unwrap_or_else(|e| panic!("{what}: segment {s}: {e}"));
        }
    }
});

backend_test!(temp_storage_reused_and_unchecked_calls, |ctx| {
    let seg = ctx.segmented().check(false);
    let t = tile::<f32>();
    let mut temp = seg.temp::<f32, Sum>(3 * t).unwrap();
    // Growing and shrinking inputs on one temp: each launch clears what the
    // one before left in the other half.
    for (k, n) in [3 * t, 10, 2 * t + 1, 1, 3 * t].into_iter().enumerate() {
        let x = data::<f32, Sum>(n, k as u64);
        let offsets = random_offsets(n, 40, k as u64);
        let input = ctx.upload(&x).unwrap();
        let offs = ctx.upload(&offsets).unwrap();
        let mut out = ctx.alloc::<f32>(offsets.len() - 1).unwrap();
        out.poison().unwrap();
        seg.reduce_with_temp(&input, &offs, &mut out, Sum, &mut temp).unwrap();
        let segs: Vec<(usize, usize)> = offsets.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect();
        verify_all::<f32, Sum>(&x, &segs, &out.to_vec().unwrap()).unwrap();
        let mut fixed = ctx.alloc::<f32>(n.div_ceil(7)).unwrap();
        seg.reduce_fixed_with_temp(&input, 7, &mut fixed, Sum, &mut temp).unwrap();
        let segs: Vec<(usize, usize)> = (0..n.div_ceil(7)).map(|s| (7 * s, (7 * s + 7).min(n))).collect();
        verify_all::<f32, Sum>(&x, &segs, &fixed.to_vec().unwrap()).unwrap();
    }
    let small = ctx.segmented().temp::<f32, Sum>(10).unwrap();
    assert!(small.bytes() < temp.bytes());
    let mut small = small;
    // Segments of 7 go through the flat kernel, whose records grow with
    // the input: over 16 tiles they need more than a temp for 10 elements
    // holds (that one is sized by its fixed headers). (One long segment
    // would not need more than `small`: the chunked path's storage grows
    // with its chunks.)
    let big = 16 * t;
    let x = ctx.upload(&vec![1.0f32; big]).unwrap();
    let mut out = ctx.alloc::<f32>(big.div_ceil(7)).unwrap();
    let too_small = seg.reduce_fixed_with_temp(&x, 7, &mut out, Sum, &mut small);
    assert!(matches!(too_small, Err(Error::LengthMismatch { .. })), "{too_small:?}");
    let offsets: Vec<u64> = (0..=big as u64).step_by(7).chain([big as u64]).collect();
    let offs = ctx.upload(&offsets).unwrap();
    let mut out = ctx.alloc::<f32>(offsets.len() - 1).unwrap();
    let too_small = seg.reduce_with_temp(&x, &offs, &mut out, Sum, &mut small);
    assert!(matches!(too_small, Err(Error::LengthMismatch { .. })), "{too_small:?}");
});

backend_test!(bad_segments_are_typed_errors, |ctx| {
    let x = ctx.upload(&(0..5000).collect::<Vec<i32>>()).unwrap();
    let mut out = ctx.alloc::<i32>(3).unwrap();
    let invalid = |r: Result<(), Error>, what: &str| {
        assert!(matches!(r, Err(Error::InvalidInput { .. })), "{what}: {r:?}");
    };
    // Decreasing, anywhere (also far from where the binary searches look).
    for offsets in [[0u64, 10, 5, 20], [0, 4000, 100, 4500], [30, 0, 40, 50], [0, 1, 4999, 4998]] {
        invalid(ctx.segmented_reduce(&x, &offsets[..], &mut out, Sum), &format!("{offsets:?}"));
    }
    // Past the end.
    invalid(ctx.segmented_reduce(&x, &[0u64, 10, 20, 5001][..], &mut out, Sum), "past the end");
    invalid(ctx.segmented_reduce(&x, &[0u64, 10, 6000, 7000][..], &mut out, Sum), "past the end");
    invalid(ctx.segmented_reduce(&x, &[u64::MAX, 0, 0, 0][..], &mut out, Sum), "huge first offset");
    // The same, and unsorted offsets over several tiles, when a launch of
    // their own finds the tiles' boundaries first.
    for first in [ctx.segmented().bounds_from(0), ctx.segmented().bounds_from(0).bounds_by_stream(true)] {
        for offsets in [[0u64, 10, 5, 20], [30, 0, 40, 50], [0, 10, 20, 5001], [u64::MAX, 0, 0, 0]] {
            invalid(first.reduce(&x, &offsets[..], &mut out, Sum), &format!("bounds first: {offsets:?}"));
        }
    }
    let long = ctx.upload(&vec![1i32; 3 * tile::<i32>() + 9]).unwrap();
    let t = tile::<i32>() as u64;
    for offsets in [[0u64, 2 * t + 5, t - 3, 3 * t], [0, 3 * t + 9, 5, 3 * t + 9], [t, 0, 2 * t, 3 * t + 10]] {
        for seg in [
            ctx.segmented(),
            ctx.segmented().bounds_from(0),
            ctx.segmented().bounds_from(0).bounds_by_stream(true),
            ctx.segmented().chunked(false).short_path(false),
            ctx.segmented().chunked(false).short_path(true),
            ctx.segmented().chunked(false).short_path(true).bounds_from(0),
        ] {
            invalid(seg.reduce(&long, &offsets[..], &mut out, Sum), &format!("several tiles: {offsets:?}"));
            seg.check(false).reduce(&long, &offsets[..], &mut out, Sum).unwrap();
        }
    }
    // Short segments over several tiles with one pair out of order, or
    // one offset far past the end, in the middle tile: refused by both
    // tile kernels; unchecked, they end and stay in bounds.
    let short_offs = random_offsets(3 * t as usize + 9, 16, 77);
    let mid = short_offs.len() / 2;
    let mut many = ctx.alloc::<i32>(short_offs.len() - 1).unwrap();
    for bad in 0..2 {
        let mut offs = short_offs.clone();
        if bad == 0 {
            offs[mid] = offs[mid + 5] + 3;
        } else {
            offs[mid] = u64::MAX / 2;
        }
        for seg in [
            ctx.segmented().short_path(false),
            ctx.segmented().short_path(true),
            ctx.segmented().short_path(true).bounds_from(0),
            ctx.segmented().short_path(true).bounds_from(0).bounds_by_stream(true),
        ] {
            invalid(seg.reduce(&long, &offs[..], &mut many, Sum), &format!("short segments, case {bad}"));
            seg.check(false).reduce(&long, &offs[..], &mut many, Sum).unwrap();
        }
    }
    // After an error the stream's status storage still works.
    ctx.segmented_reduce(&x, &[0u64, 10, 20, 5000][..], &mut out, Sum).unwrap();
    assert_eq!(out.to_vec().unwrap(), [45, 145, (20..5000).sum::<i32>()]);
    // Wrong lengths.
    let r = ctx.segmented_reduce(&x, &[0u64, 10, 20][..], &mut out, Sum);
    assert!(matches!(r, Err(Error::LengthMismatch { expected: 4, got: 3, .. })), "{r:?}");
    let r = ctx.segmented_reduce(&x, &[0u64; 0][..], &mut out, Sum);
    assert!(matches!(r, Err(Error::LengthMismatch { .. })), "{r:?}");
    let r = ctx.segmented_reduce_fixed(&x, 1000, &mut out, Sum);
    assert!(matches!(r, Err(Error::LengthMismatch { expected: 5, got: 3, .. })), "{r:?}");
    let r = ctx.segmented_reduce_fixed(&x, 0, &mut out, Sum);
    assert!(matches!(r, Err(Error::InvalidInput { .. })), "{r:?}");
    let r = ctx.segmented_reduce_ranges(&x, &[0u64, 1][..], &[1u64, 2, 3][..], &mut out, Sum);
    assert!(matches!(r, Err(Error::LengthMismatch { .. })), "{r:?}");
    // Bad ranges.
    invalid(ctx.segmented_reduce_ranges(&x, &[0u64, 5, 3][..], &[1u64, 4, 3][..], &mut out, Sum), "begin > end");
    invalid(ctx.segmented_reduce_ranges(&x, &[0u64, 5, 3][..], &[1u64, 5001, 3][..], &mut out, Sum), "end > n");
    // The same through parts (a warp a part, then the join, which counts).
    let cut = ctx.segmented().ranges_parts(3);
    invalid(cut.reduce_ranges(&x, &[0u64, 5, 3][..], &[1u64, 4, 3][..], &mut out, Sum), "begin > end, in parts");
    invalid(cut.reduce_ranges(&x, &[0u64, 5, 3][..], &[1u64, 5001, 3][..], &mut out, Sum), "end > n, in parts");
    cut.reduce_ranges(&x, &[0u64, 5, 3][..], &[1u64, 5000, 3][..], &mut out, Sum).unwrap();
    assert_eq!(out.to_vec().unwrap(), [0, (5..5000).sum::<i32>(), 0]);
    // Unchecked, bad offsets still end and stay in bounds (the emulator
    // would report an access outside the buffers).
    ctx.segmented().check(false).reduce(&x, &[0u64, 4000, 100, 6000][..], &mut out, Sum).unwrap();
    // Block sizes.
    let r = ctx.segmented().block_size(128).reduce(&x, &[0u64, 1, 2, 3][..], &mut out, Sum);
    assert!(matches!(r, Err(Error::UnsupportedBlockSize { block: 128, .. })), "{r:?}");
});

backend_test!(argmin_of_nan_and_empty_segments, |ctx| {
    let x = ctx.upload(&[f64::NAN, f64::NAN, 2.0, f64::NAN, 1.0, 1.0]).unwrap();
    let mut out = ctx.alloc::<u64>(4).unwrap();
    ctx.segmented_reduce(&x, &[0u64, 2, 2, 4, 6][..], &mut out, ArgMin).unwrap();
    assert_eq!(out.to_vec().unwrap(), [0, u64::MAX, 2, 4]);
    ctx.segmented_reduce(&x, &[0u64, 2, 2, 4, 6][..], &mut out, ArgMax).unwrap();
    assert_eq!(out.to_vec().unwrap(), [0, u64::MAX, 2, 4]);
});

// Argmin and argmax of floats among NaNs, zeros of both signs and
// infinities, at every density of NaNs (none, some, most, all), over
// segments from runs of 1 to several tiles, through the flat kernel and
// the chunked path: NaNs are ignored, a segment of NaNs alone gives its
// first index, `-0.0` and `0.0` tie (the first wins).
backend_test!(float_argmin_argmax_among_nans, |ctx| {
    let t = tile::<f32>();
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 3 * t + 5 };
    let (own, first) = (ctx.segmented(), ctx.segmented().bounds_from(0));
    // The chunked path too, with its defaults and with short chunks (a
    // segment's chunks' partials meet; runs start at every chunk).
    let chunked = [ctx.segmented().chunked(true), ctx.segmented().chunked(true).chunk_lens(64, 50)];
    macro_rules! go {
        ($t:ty, $op:ty) => {{
            let sizes = prop_oneof![1 => proptest::sample::select(vec![1, 33, t, t + 1, 2 * t + 3]), 1 => 1..=max];
            let means = proptest::sample::select(vec![1usize, 3, 16, 100, 512, t, 3 * t]);
            let nans = proptest::sample::select(vec![0u64, 10, 60, 97, 100]);
            check(cases(ctx, 4, 16), (sizes, means, nans, any::<u64>()), |(n, mean, nans, seed)| {
                let mut rng = Rng(seed);
                let special = [<$t>::NAN, -0.0, 0.0, <$t>::INFINITY, <$t>::NEG_INFINITY];
                let x: Vec<$t> = (0..n)
                    .map(|_| {
                        if rng.below(100) < nans {
                            <$t>::NAN
                        } else if rng.below(4) == 0 {
                            special[1 + rng.below(4) as usize]
                        } else {
                            (rng.below(16) as $t - 8.0) / 4.0
                        }
                    })
                    .collect();
                let seg = match seed % 4 {
                    0 => &own,
                    1 => &first,
                    k => &chunked[k as usize - 2],
                };
                run_offsets::<$t, $op>(ctx, seg, &x, &random_offsets(n, mean, seed))
            });
        }};
    }
    go!(f32, ArgMin);
    go!(f32, ArgMax);
    go!(f64, ArgMin);
    go!(f64, ArgMax);
});

// The chunked path's two builds of the work launch, each forced: the one
// that spreads the short batches among the chunk items (on a launch of
// enough tickets a block that it does: short chunks over an input of many
// of them) and the one that does not, over mixed lengths (short segments
// a warp each, long ones in several chunks), for a sum, argmin and a
// float sum, on fresh draws; with no short batch run before the plan's
// end, a few, and every one.
backend_test!(chunks_spread_and_plain_builds, |ctx| {
    let seed = gpuprim_tests::draw(any::<u64>());
    // Tickets a block: the work grid is at most a resident one, so
    // SPREAD_FROM tickets for each of its blocks (chunks of 64 elements).
    let full = ctx.multiprocessors() as usize * policy::CHUNKS_BLOCKS_PER_SM as usize;
    let n = (2 * policy::SPREAD_FROM as usize * full * 64).max(20_000) + (seed % 4096) as usize;
    for (spread, early) in [(true, 0), (true, 5), (true, u64::MAX), (false, 0), (false, 5), (false, u64::MAX)] {
        let seg = ctx.segmented().chunked(true).chunk_lens(64, 50).spread_tickets(spread).early_batches(early);
        for (i, mean) in [30usize, 200, 1000].into_iter().enumerate() {
            let k = seed ^ (i as u64) << 8 ^ spread as u64 ^ early.min(7) << 4;
            let offsets = random_offsets(n, mean, k);
            run_offsets::<i32, Sum>(ctx, &seg, &data::<i32, Sum>(n, k), &offsets).unwrap();
            run_offsets::<i32, ArgMin>(ctx, &seg, &data::<i32, ArgMin>(n, k ^ 1), &offsets).unwrap();
            run_offsets::<f32, Sum>(ctx, &seg, &data::<f32, Sum>(n, k ^ 2), &offsets).unwrap();
        }
    }
});

// GPU only: large inputs of the headline shapes (2^4, 2^9, 2^20 and
// mixed lengths) against the CPU.
backend_test!(large_inputs_gpu_only, |ctx| {
    if ctx.backend() != BackendKind::Cuda {
        return;
    }
    let seg = ctx.segmented();
    let n = (1 << 26) + 12345;
    let x = data::<i32, Sum>(n, 99);
    for mean in [16, 512, 1 << 20] {
        let offsets: Vec<u64> = (0..=n as u64).step_by(mean).chain([n as u64]).collect();
        run_offsets::<i32, Sum>(ctx, &seg, &x, &offsets).unwrap();
    }
    run_offsets::<i32, Max>(ctx, &seg, &x, &random_offsets(n, 3000, 5)).unwrap();
    let y = data::<f32, Sum>(n, 98);
    run_offsets::<f32, Sum>(ctx, &seg, &y, &random_offsets(n, 40, 6)).unwrap();
    // The spine reads chunks of records by accumulator width (eight of 4
    // bytes, four of 8, two of 16), whole ones with 16-byte loads: 8-byte
    // sums and argmin over thousands of tiles, on fresh draws.
    let seed = gpuprim_tests::draw(any::<u64>());
    let z = data::<i64, Sum>(n, seed);
    run_offsets::<i64, Sum>(ctx, &seg, &z, &random_offsets(n, 700, seed)).unwrap();
    let w = data::<i32, ArgMin>(n, seed ^ 1);
    run_offsets::<i32, ArgMin>(ctx, &seg, &w, &random_offsets(n, 200, seed ^ 2)).unwrap();
});

// The spine's chunks on both backends: enough tiles that each warp's run
// spans lanes and each lane walks a chunk of two (the spine gives a lane
// at least two records), with segments spanning tiles, runs of empty
// segments, tile-sized ones and a sum, a 16-byte accumulator (argmin) and
// an 8-byte one, on fresh draws.
backend_test!(spine_chunks_over_many_tiles, |ctx| {
    let seg = ctx.segmented();
    let seed = gpuprim_tests::draw(any::<u64>());
    let tiles = 32 * 3 + 1 + (seed % 3) as usize;
    let n = tiles * tile::<i32>() - 5;
    let x = data::<i32, Sum>(n, seed);
    for (i, mean) in [40, 3000, tile::<i32>(), 3 * tile::<i32>()].into_iter().enumerate() {
        run_offsets::<i32, Sum>(ctx, &seg, &x, &random_offsets(n, mean, seed ^ i as u64)).unwrap();
    }
    run_offsets::<i32, ArgMin>(ctx, &seg, &x, &random_offsets(n, 5000, seed ^ 7)).unwrap();
    let n = tiles * tile::<f64>() + 3;
    let y = data::<f64, Sum>(n, seed ^ 8);
    run_offsets::<f64, Sum>(ctx, &seg, &y, &random_offsets(n, 2000, seed ^ 9)).unwrap();
});

// The spine over several blocks (one launch: the warps' pairs and a flag
// per block, then each warp's carry from the pairs before it) on both backends, with the
// records per block set small so that a hundred or so tiles need them:
// one record a block (rounded up to a chunk: 13 blocks of eight 4-byte
// records and many empty ones), a few chunks a block, and 35 blocks of
// four 8- or 16-byte records (spread over warps; from block 32 on the
// carry scan gives each thread two pairs); segments spanning tiles and
// blocks, empty ones, sums and argmin, fresh draws.
backend_test!(spine_over_several_blocks, |ctx| {
    let seed = gpuprim_tests::draw(any::<u64>());
    let tiles = 32 * 3 + 1 + (seed % 3) as usize;
    let n = tiles * tile::<i32>() - 3;
    let x = data::<i32, Sum>(n, seed);
    for (i, share) in [1u64, 40].into_iter().enumerate() {
        let seg = ctx.segmented().spine_share(share).bounds_from(i as u64 * 1000).bounds_by_stream(seed & 1 == 0);
        for (j, mean) in [60, 5000, 3 * tile::<i32>()].into_iter().enumerate() {
            run_offsets::<i32, Sum>(ctx, &seg, &x, &random_offsets(n, mean, seed ^ (4 * i + j) as u64)).unwrap();
        }
    }
    let n = 140 * tile::<f64>() - 1 - (seed % 4000) as usize;
    let seg = ctx.segmented().spine_share(4);
    let y = data::<f64, ArgMin>(n, seed ^ 10);
    run_offsets::<f64, ArgMin>(ctx, &seg, &y, &random_offsets(n, 3000, seed ^ 11)).unwrap();
    let y = data::<f64, Sum>(n, seed ^ 12);
    run_offsets::<f64, Sum>(ctx, &seg, &y, &random_offsets(n, 700, seed ^ 13)).unwrap();
});

#[test]
fn names_of_the_operators() {
    fn name<T: Scalar, Op: SegmentedOp<T>>() -> &'static str {
        Op::NAME
    }
    assert_eq!(name::<i32, ArgMin>(), "argmin");
    assert_eq!(<u64 as DeviceRepr>::NAME, "u64");
}

/// More than 2^32 elements, generated on the device, with one segment of
/// more than 2^31 elements and short segments (some empty) across the
/// 2^32 boundary: 64-bit positions in the tiles, the boundary window and
/// the argmin indices. Sum and argmin against a CPU reference over the
/// downloaded input, segments checked on all cores. CUDA only (the
/// emulator would take hours).
#[test]
fn beyond_32_bit_indexing_with_a_segment_past_2_31_on_the_gpu() {
    let Some(ctx) = gpuprim_tests::context(
        BackendKind::Cuda,
        "segmented::beyond_32_bit_indexing_with_a_segment_past_2_31_on_the_gpu",
    ) else {
        return;
    };
    let seed = gpuprim_tests::draw(any::<u64>());
    let mut rng = Rng(seed);
    let n: usize = (1 << 32) + 4099 + rng.below(5000) as usize;
    let mut x = ctx.alloc::<i32>(n).unwrap();
    ctx.fill_hash(&mut x, seed).unwrap();
    // A segment longer than 2^31 and short ones across 2^32, then one
    // more and a gap at the end.
    let mut offsets = gpuprim_tests::offsets_beyond_2_32(|k| rng.below(k));
    offsets.push(n as u64 - 1 - rng.below(1000));
    let offs = ctx.upload(&offsets).unwrap();
    let mut sums = ctx.alloc::<i32>(offsets.len() - 1).unwrap();
    let mut mins = ctx.alloc::<u64>(offsets.len() - 1).unwrap();
    sums.poison().unwrap();
    mins.poison().unwrap();
    let seg = ctx.segmented();
    seg.reduce(&x, &offs, &mut sums, Sum).unwrap();
    seg.reduce(&x, &offs, &mut mins, ArgMin).unwrap();
    let (sums, mins) = (sums.to_vec().unwrap(), mins.to_vec().unwrap());
    let host = x.to_vec().unwrap();
    drop(x);
    let segs: Vec<(usize, usize)> = offsets.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect();
    let threads = std::thread::available_parallelism().map(|t| t.get()).unwrap_or(4);
    let per = segs.len().div_ceil(threads);
    std::thread::scope(|s| {
        for (k, chunk) in segs.chunks(per).enumerate() {
            let (host, sums, mins) = (&host, &sums[k * per..], &mins[k * per..]);
            s.spawn(move || {
                let got_sums = &sums[..chunk.len()];
                let got_mins = &mins[..chunk.len()];
                if let Err(m) = verify_all::<i32, Sum>(host, chunk, got_sums) {
                    panic!("segments from {}: {m}", k * per);
                }
                if let Err(m) = verify_all::<i32, ArgMin>(host, chunk, got_mins) {
                    panic!("segments from {}: {m}", k * per);
                }
            });
        }
    });
}

// Argmin and argmax over segments about a tile long, across several
// tiles: most tiles lie inside one segment (their part of it is a block
// reduction, not the scan) and the segments' ties cross tile edges. An
// 8-byte part packed beside a `u32` (an `f64` at 4-byte alignment) made
// ptxas store wrong halves here on the GPU (135 of 150 `f64` argmax
// cases failed) while the emulator passed.
backend_test!(argmin_argmax_over_whole_tiles, |ctx| {
    let draws = cases(ctx, 4, 40) as u64;
    let seed0 = gpuprim_tests::draw(any::<u64>());
    fn go<T: TestType, Op: TestOp<T>>(ctx: &Context, draws: u64, seed0: u64) {
        let t = tile::<T>();
        for i in 0..draws {
            let seed = seed0 ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let n = 6 * t + (seed % t as u64) as usize;
            let x = data::<T, Op>(n, seed);
            let seg = match seed % 3 {
                0 => ctx.segmented(),
                1 => ctx.segmented().bounds_from(0),
                _ => ctx.segmented().bounds_from(0).bounds_by_stream(true),
            };
            run_offsets::<T, Op>(ctx, &seg, &x, &random_offsets(n, t, seed))
                .unwrap_or_else(|e| panic!("`{}` on {}, seed {seed}: {e}", Op::NAME, T::NAME));
        }
    }
    go::<f64, ArgMax>(ctx, draws, seed0);
    go::<f64, ArgMin>(ctx, draws, seed0);
    go::<f32, ArgMax>(ctx, draws, seed0);
    go::<f32, ArgMin>(ctx, draws, seed0);
    go::<i64, ArgMax>(ctx, draws, seed0);
    go::<u32, ArgMin>(ctx, draws, seed0);
});
