//! Scans against CPU references: every algorithm x operator x type,
//! inclusive and exclusive, in place and out of place, at tile edges; the
//! non-commutative affine maps through every device-level variant; the
//! recurrence; errors for invalid choices. GPU-only: thousands of runs of
//! the single-pass scans, and inputs beyond 2^32 elements.
//!
//! Inputs come from a seeded generator (the seed is part of each proptest
//! case, so failures shrink and reproduce). Integer scans, min/max, the
//! integer affine maps and float sums of small dyadic values are exact, and
//! compared bit for bit; float products, float affine maps and sums of
//! arbitrary floats are compared with an f64 reference within a bound that
//! grows with the depth of the combine tree.

// `!(err <= bound)` on purpose: a NaN result must fail the comparison.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use gpuprim::scan::{
    Affine, BitAnd, BitOr, BitXor, Compose, Max, Min, Monoid, Product, Scan, ScanAlgorithm, ScanItem, ScanOp, ScanTemp,
    Sum,
};
use gpuprim::{BackendKind, Context, EmuConfig, Error};
use gpuprim_tests::{backend_test, cases, check};
use proptest::prelude::*;

// ---------------------------------------------------------------- inputs

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
    /// Uniform in [lo, hi).
    fn float(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, k: u64) -> u64 {
        self.next() % k.max(1)
    }
}

/// An operator on a type, with inputs that exercise it and a check of a
/// scan's output.
trait TestOp<T: ScanItem + PartialEq>: ScanOp<T> + Default {
    /// Element `i` of an input of length `n` (never all zeros, never
    /// degenerate: the prefixes keep changing along the input).
    fn input(rng: &mut Rng, i: usize, n: usize) -> T;
    /// Compare `got` with the scan of `data`.
    fn verify(data: &[T], init: T, exclusive: bool, got: &[T]) -> Result<(), String> {
        let want = cpu_scan::<T, Self>(data, init, exclusive);
        match want.iter().zip(got).position(|(w, g)| w != g) {
            None => Ok(()),
            Some(i) => Err(format!(
                "first difference at {i} of {}: got {:?}, want {:?} (input there {:?})",
                data.len(),
                got[i],
                want[i],
                data[i]
            )),
        }
    }
}

/// The scan on the CPU, with the operator the kernels use.
fn cpu_scan<T: Copy, Op: Monoid<T>>(data: &[T], init: T, exclusive: bool) -> Vec<T> {
    let mut run = init;
    data.iter()
        .map(|&x| {
            let next = Op::combine(run, x);
            let out = if exclusive { run } else { next };
            run = next;
            out
        })
        .collect()
}

/// Integers from random bits.
trait RandInt: Copy {
    const BITS: u32;
    fn bits(v: u64) -> Self;
    fn int(v: i64) -> Self;
}
macro_rules! rand_int {
    ($($t:ty),*) => {$(
        impl RandInt for $t {
            const BITS: u32 = <$t>::BITS;
            fn bits(v: u64) -> Self { v as $t }
            fn int(v: i64) -> Self { v as $t }
        }
    )*};
}
rand_int!(i32, u32, i64, u64, u16);

/// Trend plus noise: the running min (max) changes all along the input.
fn trend(rng: &mut Rng, i: usize, n: usize, down: bool) -> i64 {
    let base = if down { (n - i) as i64 } else { i as i64 };
    base * 8 + rng.below(16) as i64 - 8 + 8
}

/// Clear (set) one random bit about 64 times along the input.
fn rare_bit<T: RandInt>(rng: &mut Rng, n: usize) -> Option<T> {
    if rng.below((n / 64) as u64) == 0 { Some(T::bits(1u64 << rng.below(T::BITS as u64))) } else { None }
}

macro_rules! int_ops {
    ($($t:ty),*) => {$(
        impl TestOp<$t> for Sum {
            fn input(rng: &mut Rng, _: usize, _: usize) -> $t { <$t>::bits(rng.next()) }
        }
        impl TestOp<$t> for Product {
            // Odd numbers: a product of evens soon wraps to zero for good.
            fn input(rng: &mut Rng, _: usize, _: usize) -> $t { <$t>::bits(rng.next() | 1) }
        }
        impl TestOp<$t> for Min {
            fn input(rng: &mut Rng, i: usize, n: usize) -> $t { <$t>::int(trend(rng, i, n, true)) }
        }
        impl TestOp<$t> for Max {
            fn input(rng: &mut Rng, i: usize, n: usize) -> $t { <$t>::int(trend(rng, i, n, false)) }
        }
        impl TestOp<$t> for BitAnd {
            fn input(rng: &mut Rng, _: usize, n: usize) -> $t {
                rare_bit::<$t>(rng, n).map(|b: $t| !b).unwrap_or(!0)
            }
        }
        impl TestOp<$t> for BitOr {
            fn input(rng: &mut Rng, _: usize, n: usize) -> $t { rare_bit::<$t>(rng, n).unwrap_or(1) }
        }
        impl TestOp<$t> for BitXor {
            fn input(rng: &mut Rng, _: usize, _: usize) -> $t { <$t>::bits(rng.next()) }
        }
    )*};
}
int_ops!(i32, u32, i64, u64);

/// Depth of the combine tree behind output `i` of a scan of `n`, bounded
/// for every algorithm here: a thread's items and the block scans (< 64
/// levels), two per level of the three-phase recursion, and at most two
/// per tile along the single-pass chains (tiles have >= 512 elements).
fn depth(i: usize, n: usize) -> f64 {
    64.0 + 2.0 * (n.max(2) as f64).log2().ceil() + (i / 256) as f64
}

macro_rules! float_ops {
    ($($t:ty),*) => {$(
        impl TestOp<$t> for Sum {
            // Multiples of 1/4 in [-8, 8]: every partial sum of a few
            // million of them is exact in f32, so any order gives the
            // same bits and the comparison is exact.
            fn input(rng: &mut Rng, _: usize, _: usize) -> $t {
                let k = rng.below(64) as i64 - 32;
                (if k >= 0 { k + 1 } else { k }) as $t / 4.0
            }
        }
        impl TestOp<$t> for Product {
            // Near 1, spread shrinking with n so no prefix overflows.
            fn input(rng: &mut Rng, _: usize, n: usize) -> $t {
                let s = (10.0 / (n.max(1) as f64).sqrt()).min(0.5);
                rng.float(1.0 - s, 1.0 + s) as $t
            }
            fn verify(data: &[$t], init: $t, exclusive: bool, got: &[$t]) -> Result<(), String> {
                let eps = <$t>::EPSILON as f64;
                let mut run = init as f64;
                for (i, (&x, &g)) in data.iter().zip(got).enumerate() {
                    let next = run * x as f64;
                    let want = if exclusive { run } else { next };
                    // Every multiplication under an output rounds once, and
                    // prefix i has i of them in any tree shape: relative
                    // error at most (i + 1) * eps / 2 (not the tree depth).
                    let ops = (i as f64 + 2.0).max(2.0 * depth(i, data.len()));
                    let bound = ops * eps * want.abs() + <$t>::MIN_POSITIVE as f64;
                    if !((g as f64 - want).abs() <= bound) {
                        return Err(format!("at {i}: got {g}, want {want}, bound {bound}"));
                    }
                    run = next;
                }
                Ok(())
            }
        }
        impl TestOp<$t> for Min {
            fn input(rng: &mut Rng, i: usize, n: usize) -> $t { trend(rng, i, n, true) as $t * 0.5 - 1e3 }
        }
        impl TestOp<$t> for Max {
            fn input(rng: &mut Rng, i: usize, n: usize) -> $t { trend(rng, i, n, false) as $t * 0.5 - 1e3 }
        }
        impl TestOp<Affine<$t>> for Compose {
            fn input(rng: &mut Rng, _: usize, _: usize) -> Affine<$t> {
                Affine::new(rng.float(0.5, 1.0) as $t, rng.float(-1.0, 1.0) as $t)
            }
            fn verify(data: &[Affine<$t>], init: Affine<$t>, exclusive: bool, got: &[Affine<$t>]) -> Result<(), String> {
                // f64 reference of (a, b), and of (a, |b|-weighted) for the bound:
                // b = sum_j (prod_{k>j} a_k) b_j, all a_k > 0.
                let eps = <$t>::EPSILON as f64;
                let (mut a, mut b, mut babs) = (init.a as f64, init.b as f64, (init.b as f64).abs());
                for (i, (x, g)) in data.iter().zip(got).enumerate() {
                    let (xa, xb) = (x.a as f64, x.b as f64);
                    let (na, nb, nabs) = (a * xa, xa * b + xb, xa * babs + xb.abs());
                    let (wa, wb, wabs) = if exclusive { (a, b, babs) } else { (na, nb, nabs) };
                    let d = depth(i, data.len());
                    let tiny = d * <$t>::MIN_POSITIVE as f64;
                    // `a` is a product of i + 1 factors (one rounding each, in
                    // any tree shape); each term of `b` adds its additions.
                    let ops = i as f64 + 2.0 + d;
                    let (ba, bb) = (2.0 * ops * eps * wa.abs() + tiny, 3.0 * ops * eps * wabs + tiny);
                    if !((g.a as f64 - wa).abs() <= ba && (g.b as f64 - wb).abs() <= bb) {
                        return Err(format!("at {i}: got {g:?}, want ({wa}, {wb}), bounds ({ba}, {bb})"));
                    }
                    (a, b, babs) = (na, nb, nabs);
                }
                Ok(())
            }
        }
    )*};
}
float_ops!(f32, f64);

macro_rules! int_affine {
    ($($t:ty),*) => {$(
        // Maps with wrapping integer coefficients: composition is exact,
        // so the order of every combine is checked bit for bit.
        impl TestOp<Affine<$t>> for Compose {
            fn input(rng: &mut Rng, _: usize, _: usize) -> Affine<$t> {
                Affine::new(<$t>::bits(rng.next()), <$t>::bits(rng.next()))
            }
        }
    )*};
}
int_affine!(u16, u32);

// ------------------------------------------------------------ one case

#[derive(Clone, Copy, Debug)]
struct Case {
    n: usize,
    seed: u64,
    exclusive: bool,
    in_place: bool,
}

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// Run one scan on the device and check it.
fn run_case<T: ScanItem + PartialEq, Op: TestOp<T>>(ctx: &Context, scan: &Scan, c: Case) -> Result<(), TestCaseError> {
    let mut rng = Rng(c.seed);
    let data: Vec<T> = (0..c.n).map(|i| Op::input(&mut rng, i, c.n)).collect();
    let init = if c.exclusive { Op::input(&mut rng, 0, c.n) } else { Op::identity() };
    let got = if c.in_place {
        let mut buf = ctx.upload(&data).map_err(fail)?;
        if c.exclusive {
            scan.exclusive_in_place(&mut buf, init, Op::default())
        } else {
            scan.inclusive_in_place(&mut buf, Op::default())
        }
        .map_err(fail)?;
        buf.to_vec().map_err(fail)?
    } else {
        let input = ctx.upload(&data).map_err(fail)?;
        let mut out = ctx.alloc::<T>(c.n).map_err(fail)?;
        out.poison().map_err(fail)?;
        if c.exclusive {
            scan.exclusive(&input, &mut out, init, Op::default())
        } else {
            scan.inclusive(&input, &mut out, Op::default())
        }
        .map_err(fail)?;
        // The input must be untouched.
        prop_assert!(input.to_vec().map_err(fail)? == data, "the scan wrote to its input");
        out.to_vec().map_err(fail)?
    };
    Op::verify(&data, init, c.exclusive, &got).map_err(|e| {
        TestCaseError::fail(format!(
            "{} {} `{}` on {} (block {}), {}: {e}",
            scan.chosen_algorithm().name(),
            if c.exclusive { "exclusive" } else { "inclusive" },
            Op::NAME,
            T::NAME,
            scan.chosen_block_size(),
            if c.in_place { "in place" } else { "out of place" },
        ))
    })
}

/// Sizes for an algorithm whose tiles hold `tile` elements: on the
/// emulator tile edges and up to a few tiles; on the GPU log-uniform up to
/// 2^27 and the edges of the largest tiles.
fn sizes(ctx: &Context, tile: usize) -> BoxedStrategy<usize> {
    let edges = vec![1, 31, 32, 33, tile - 1, tile, tile + 1, 2 * tile - 1, 3 * tile + 7];
    if ctx.backend() == BackendKind::Cuda {
        let big = vec![tile * tile - 1, tile * tile + 1, (1 << 27) - 1, 1 << 27];
        prop_oneof![
            2 => proptest::sample::select(edges),
            1 => proptest::sample::select(big),
            5 => (0u32..27).prop_flat_map(|e| (1usize << e)..(2usize << e)),
        ]
        .boxed()
    } else {
        prop_oneof![1 => proptest::sample::select(edges), 1 => 0..=4 * tile + 9].boxed()
    }
}

fn case_strategy(ctx: &Context, tile: usize) -> impl Strategy<Value = Case> {
    (sizes(ctx, tile), any::<u64>(), any::<bool>(), any::<bool>()).prop_map(|(n, seed, exclusive, in_place)| Case {
        n,
        seed,
        exclusive,
        in_place,
    })
}

/// `cases` random cases of `Op` on `T` with `scan`.
fn property<T: ScanItem + PartialEq, Op: TestOp<T>>(ctx: &Context, scan: &Scan, cases: u32) {
    let tile = scan.chosen_algorithm().tile_len::<T>(scan.chosen_block_size()) as usize;
    check(cases, case_strategy(ctx, tile), |c| run_case::<T, Op>(ctx, scan, c));
}

/// Every operator on every type it is instantiated for, with `alg`.
fn every_operator_and_type(ctx: &Context, alg: ScanAlgorithm) {
    let scan = ctx.scan().algorithm(alg);
    let n = cases(ctx, 16, 6);
    macro_rules! all {
        ($($op:ty => [$($t:ty),*];)*) => {$($( property::<$t, $op>(ctx, &scan, n); )*)*};
    }
    all! {
        Sum => [i32, u32, i64, u64, f32, f64];
        Product => [i32, u32, i64, u64, f32, f64];
        Min => [i32, u32, i64, u64, f32, f64];
        Max => [i32, u32, i64, u64, f32, f64];
        BitAnd => [i32, u32, i64, u64];
        BitOr => [i32, u32, i64, u64];
        BitXor => [i32, u32, i64, u64];
        Compose => [Affine<u16>, Affine<u32>, Affine<f32>, Affine<f64>];
    }
}

// --------------------------------------------------- every combination

backend_test!(hillis_steele_matches_the_cpu_for_every_operator_and_type, |ctx| {
    every_operator_and_type(ctx, ScanAlgorithm::HillisSteele);
});
backend_test!(blelloch_matches_the_cpu_for_every_operator_and_type, |ctx| {
    every_operator_and_type(ctx, ScanAlgorithm::Blelloch);
});
backend_test!(warp_shuffle_matches_the_cpu_for_every_operator_and_type, |ctx| {
    every_operator_and_type(ctx, ScanAlgorithm::WarpShuffle);
});
backend_test!(three_phase_matches_the_cpu_for_every_operator_and_type, |ctx| {
    every_operator_and_type(ctx, ScanAlgorithm::ThreePhase);
});
backend_test!(host_totals_matches_the_cpu_for_every_operator_and_type, |ctx| {
    every_operator_and_type(ctx, ScanAlgorithm::ThreePhaseHostTotals);
});
backend_test!(tickets_matches_the_cpu_for_every_operator_and_type, |ctx| {
    every_operator_and_type(ctx, ScanAlgorithm::Tickets);
});
backend_test!(lookback_matches_the_cpu_for_every_operator_and_type, |ctx| {
    every_operator_and_type(ctx, ScanAlgorithm::DecoupledLookBack);
});

/// The block sizes `sum` is instantiated for on `i32` and `f32`.
fn sum_blocks(alg: ScanAlgorithm) -> &'static [u32] {
    match alg {
        ScanAlgorithm::HillisSteele | ScanAlgorithm::Blelloch | ScanAlgorithm::WarpShuffle => {
            &[32, 64, 128, 256, 512, 1024]
        }
        _ => &[32, 64, 128, 256, 512],
    }
}

backend_test!(every_algorithm_and_block_size_sums_exactly_at_tile_edges, |ctx| {
    let gpu = ctx.backend() == BackendKind::Cuda;
    for alg in ScanAlgorithm::ALL {
        for &block in sum_blocks(alg) {
            let scan = ctx.scan().algorithm(alg).block_size(block);
            let tile = alg.tile_len::<i32>(block) as usize;
            let mut ns = vec![1, tile - 1, tile, tile + 1, 2 * tile + 3];
            if gpu {
                ns.extend([tile * tile - 1, tile * tile + 1, 1 << 24, (1 << 24) + 1, 3 * (1 << 22) + 5]);
            }
            for (k, &n) in ns.iter().enumerate() {
                let c = Case { n, seed: 7 * n as u64 + block as u64, exclusive: k % 2 == 1, in_place: k % 3 == 0 };
                run_case::<i32, Sum>(ctx, &scan, c).unwrap();
                run_case::<f32, Sum>(ctx, &scan, Case { exclusive: !c.exclusive, ..c }).unwrap();
            }
        }
    }
});

backend_test!(three_phase_recursion_covers_several_levels, |ctx| {
    // Blocks of 32: tiles of 32 (64 for Blelloch) elements, so 40_000
    // elements need three levels of totals.
    let n = if ctx.backend() == BackendKind::Cuda { (1 << 26) + 12_345 } else { 40_000 };
    for alg in
        [ScanAlgorithm::HillisSteele, ScanAlgorithm::Blelloch, ScanAlgorithm::WarpShuffle, ScanAlgorithm::ThreePhase]
    {
        let scan = ctx.scan().algorithm(alg).block_size(32);
        run_case::<i32, Sum>(ctx, &scan, Case { n, seed: 3, exclusive: true, in_place: false }).unwrap();
        run_case::<f32, Sum>(ctx, &scan, Case { n, seed: 4, exclusive: false, in_place: true }).unwrap();
    }
});

// ------------------------------------------------------ floats, bounded

/// Arbitrary floats: within `depth * eps * sum |x|` of the f64 scan.
fn float_sums_within_bound<T>(ctx: &Context, alg: ScanAlgorithm, n: usize, seed: u64)
where
    T: ScanItem + gpuprim::Scalar + Into<f64> + FromF64 + std::fmt::Display,
    Sum: ScanOp<T>,
{
    let mut rng = Rng(seed);
    let data: Vec<T> = (0..n).map(|_| T::from_f64(rng.float(-1e3, 1e3))).collect();
    let x = ctx.upload(&data).unwrap();
    let mut y = ctx.alloc::<T>(n).unwrap();
    y.poison().unwrap();
    ctx.scan().algorithm(alg).inclusive(&x, &mut y, Sum).unwrap();
    let got = y.to_vec().unwrap();
    let eps = T::EPS;
    let (mut want, mut abs) = (0.0f64, 0.0f64);
    for (i, (&v, &g)) in data.iter().zip(&got).enumerate() {
        want += v.into();
        abs += v.into().abs();
        let bound = depth(i, n) * eps * abs + f64::MIN_POSITIVE;
        let g: f64 = g.into();
        assert!((g - want).abs() <= bound, "{} n = {n}, at {i}: got {g}, want {want}, bound {bound}", alg.name());
    }
}

trait FromF64: Copy {
    const EPS: f64;
    fn from_f64(v: f64) -> Self;
}
impl FromF64 for f32 {
    const EPS: f64 = f32::EPSILON as f64;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl FromF64 for f64 {
    const EPS: f64 = f64::EPSILON;
    fn from_f64(v: f64) -> Self {
        v
    }
}

backend_test!(float_sums_of_arbitrary_values_are_within_the_rounding_bound, |ctx| {
    let gpu = ctx.backend() == BackendKind::Cuda;
    for alg in ScanAlgorithm::ALL {
        for n in if gpu { vec![1000, 1 << 20, (1 << 25) + 3] } else { vec![1000, 9001] } {
            float_sums_within_bound::<f32>(ctx, alg, n, n as u64);
            float_sums_within_bound::<f64>(ctx, alg, n, n as u64 + 1);
        }
    }
});

// ------------------------------------------------------------ recurrence

backend_test!(linear_recurrence_matches_the_sequential_loop, |ctx| {
    let gpu = ctx.backend() == BackendKind::Cuda;
    for alg in ScanAlgorithm::ALL {
        for n in if gpu { vec![0, 1, 5000, (1 << 24) + 17] } else { vec![0, 1, 5000] } {
            let mut rng = Rng(n as u64 ^ 0xABCD);
            let l: Vec<f64> = (0..n).map(|_| rng.float(0.01, 0.99)).collect();
            let u: Vec<f64> = (0..n).map(|_| rng.float(-10.0, 10.0)).collect();
            let v0 = 3.25;
            let (lb, ub) = (ctx.upload(&l).unwrap(), ctx.upload(&u).unwrap());
            let mut out = ctx.alloc::<f64>(n).unwrap();
            out.poison().unwrap();
            ctx.scan().algorithm(alg).linear_recurrence(&lb, &ub, v0, &mut out).unwrap();
            let got = out.to_vec().unwrap();
            // f32 too, from the same inputs.
            let (l32, u32_): (Vec<f32>, Vec<f32>) =
                (l.iter().map(|&x| x as f32).collect(), u.iter().map(|&x| x as f32).collect());
            let mut out32 = ctx.alloc::<f32>(n).unwrap();
            out32.poison().unwrap();
            ctx.scan()
                .algorithm(alg)
                .linear_recurrence(&ctx.upload(&l32).unwrap(), &ctx.upload(&u32_).unwrap(), v0 as f32, &mut out32)
                .unwrap();
            let got32 = out32.to_vec().unwrap();
            let mut v = v0;
            for k in 0..n {
                v = (1.0 - l[k]) * v + l[k] * u[k];
                // |v| <= 10 always; errors are damped by the (1 - l) factors.
                let b64 = depth(k, n) * f64::EPSILON * 40.0;
                let b32 = depth(k, n) * f32::EPSILON as f64 * 40.0 + 1e-5;
                assert!((got[k] - v).abs() <= b64, "{} f64 n = {n}, k = {k}: got {}, want {v}", alg.name(), got[k]);
                assert!(
                    ((got32[k] as f64) - v).abs() <= b32,
                    "{} f32 n = {n}, k = {k}: got {}, want {v}",
                    alg.name(),
                    got32[k]
                );
            }
        }
    }
});

// ------------------------------------------------- scheduling, temp, API

/// Many blocks resident at once and few: the look-back must cross windows
/// of predecessors (many tiles still unfinished) and the ticket chain must
/// never wait for a block that has not started. Blocks of 32 threads (a
/// look-back window of 32 tiles, one warp) and 64 (two warps per window),
/// 100 tiles; the affine maps are not commutative and are 8 bytes wide
/// (two status words per tile).
#[test]
fn single_pass_scans_are_right_under_any_residency_and_schedule() {
    for (resident, seed) in [(1, 1u64), (2, 2), (3, 6), (8, 7), (48, 3), (48, 4), (64, 8), (96, 5), (96, 9)] {
        let ctx = Context::emulator_with(EmuConfig { resident_blocks: resident, seed, ..EmuConfig::default() });
        for alg in [ScanAlgorithm::Tickets, ScanAlgorithm::DecoupledLookBack] {
            let scan = ctx.scan().algorithm(alg).block_size(32);
            let tile = alg.tile_len::<i32>(32) as usize;
            let c = Case { n: 100 * tile - 5, seed, exclusive: seed % 2 == 0, in_place: seed % 3 == 0 };
            run_case::<i32, Sum>(&ctx, &scan, c).unwrap();
        }
        for block in [32, 64] {
            let scan = ctx.scan().algorithm(ScanAlgorithm::DecoupledLookBack).block_size(block);
            let tile = ScanAlgorithm::DecoupledLookBack.tile_len::<Affine<u32>>(block) as usize;
            let c = Case { n: 100 * tile + 3, seed, exclusive: seed % 2 == 1, in_place: seed % 3 == 1 };
            run_case::<Affine<u32>, Compose>(&ctx, &scan, c).unwrap();
        }
    }
}

backend_test!(reused_temp_storage_gives_the_same_results, |ctx| {
    for alg in ScanAlgorithm::ALL {
        let scan = ctx.scan().algorithm(alg);
        let max = 3 * 4096 + 11;
        let mut temp = scan.temp::<i32>(max).unwrap();
        assert!(temp.bytes() >= scan.temp_bytes::<i32>(max).unwrap());
        for (k, n) in [max, 1, 4096, 777, max].into_iter().enumerate() {
            let mut rng = Rng(k as u64);
            let data: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
            let x = ctx.upload(&data).unwrap();
            let mut y = ctx.alloc::<i32>(n).unwrap();
            y.poison().unwrap();
            scan.exclusive_with_temp(&x, &mut y, 5, Sum, &mut temp).unwrap();
            assert_eq!(y.to_vec().unwrap(), cpu_scan::<i32, Sum>(&data, 5, true), "{} n = {n}", alg.name());
            let mut z = ctx.upload(&data).unwrap();
            scan.inclusive_in_place_with_temp(&mut z, Sum, &mut temp).unwrap();
            assert_eq!(z.to_vec().unwrap(), cpu_scan::<i32, Sum>(&data, 0, false), "{} n = {n}", alg.name());
        }
    }
});

// The simple calls keep their single-pass status in the stream's own
// double-buffered storage, each launch zeroing what the one before left:
// sizes that grow and shrink (a small call after a large one must clear the
// large one's status), other work on the context's scratch in between, and
// a caller's storage that serves a three-phase scan and then the look-back.
backend_test!(status_storage_stays_zeroed_across_calls_of_any_size, |ctx| {
    let mut rng = Rng(0x5eed);
    let mut check = |scan: &Scan, n: usize, temp: Option<&mut ScanTemp>| {
        let data: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
        let x = ctx.upload(&data).unwrap();
        let mut y = ctx.alloc::<i32>(n).unwrap();
        y.poison().unwrap();
        match temp {
            Some(t) => scan.inclusive_with_temp(&x, &mut y, Sum, t).unwrap(),
            None => scan.inclusive(&x, &mut y, Sum).unwrap(),
        }
        let what = format!("{} b{} n = {n}", scan.chosen_algorithm().name(), scan.chosen_block_size());
        assert_eq!(y.to_vec().unwrap(), cpu_scan::<i32, Sum>(&data, 0, false), "{what}");
        // A reduction and a three-phase scan on the context's scratch in
        // between: they must not disturb the status storage.
        assert_eq!(ctx.sum(&x).unwrap(), data.iter().fold(0i32, |a, &b| a.wrapping_add(b)), "{what}: sum");
        let mut z = ctx.alloc::<i32>(n).unwrap();
        ctx.scan().algorithm(ScanAlgorithm::ThreePhase).exclusive(&x, &mut z, 3, Sum).unwrap();
        assert_eq!(z.to_vec().unwrap(), cpu_scan::<i32, Sum>(&data, 3, true), "{what}: three-phase");
    };
    for alg in [ScanAlgorithm::DecoupledLookBack, ScanAlgorithm::Tickets] {
        // 32 threads: tiles of 1024 elements, so a few thousand give many.
        for block in [32u32, 256] {
            let scan = ctx.scan().algorithm(alg).block_size(block);
            let tile = alg.tile_len::<i32>(block) as usize;
            for n in [5 * tile + 7, 10, 2 * tile, 1, 9 * tile + 1, tile - 1, 3 * tile] {
                check(&scan, n, None);
            }
        }
        // A caller's storage: first a three-phase scan on it, then this.
        let max = 6 * 8192 + 3;
        let three = ctx.scan().algorithm(ScanAlgorithm::ThreePhase);
        let mut temp = ctx.scan().algorithm(alg).temp::<i32>(max).unwrap();
        assert!(temp.bytes() >= three.temp_bytes::<i32>(8192).unwrap());
        for n in [8192, max, 17, max, 8193] {
            check(&three, n.min(8192), Some(&mut temp));
            check(&ctx.scan().algorithm(alg), n, Some(&mut temp));
            check(&ctx.scan().algorithm(alg), n / 2 + 1, Some(&mut temp));
        }
    }
});

backend_test!(empty_input_is_a_no_op, |ctx| {
    for alg in ScanAlgorithm::ALL {
        let x = ctx.upload::<f64>(&[]).unwrap();
        let mut y = ctx.alloc::<f64>(0).unwrap();
        ctx.scan().algorithm(alg).inclusive(&x, &mut y, Sum).unwrap();
        ctx.scan().algorithm(alg).exclusive(&x, &mut y, 1.0, Product).unwrap();
        assert_eq!(ctx.scan().algorithm(alg).temp_bytes::<f64>(0).unwrap(), 0);
    }
});

backend_test!(invalid_choices_are_clear_errors, |ctx| {
    let x = ctx.upload(&[1u64, 2, 3]).unwrap();
    let mut short = ctx.alloc::<u64>(2).unwrap();
    match ctx.inclusive_scan(&x, &mut short) {
        Err(Error::LengthMismatch { expected: 3, got: 2, .. }) => {}
        other => panic!("mismatched lengths: {other:?}"),
    }
    let mut y = ctx.alloc::<u64>(3).unwrap();
    match ctx.scan().block_size(100).inclusive(&x, &mut y, Sum) {
        Err(Error::UnsupportedBlockSize { block: 100, .. }) => {}
        other => panic!("block of 100: {other:?}"),
    }
    // Product on u64 exists at 256 threads only; the error says so.
    match ctx.scan().block_size(512).inclusive(&x, &mut y, Product) {
        Err(e @ Error::UnsupportedBlockSize { block: 512, .. }) => assert!(e.to_string().contains("[256]"), "{e}"),
        other => panic!("product at 512: {other:?}"),
    }
    // Tiles of 1024 threads do not fit in shared memory.
    match ctx.scan().block_size(1024).inclusive(&x, &mut y, Sum) {
        Err(Error::UnsupportedBlockSize { block: 1024, .. }) => {}
        other => panic!("look-back at 1024: {other:?}"),
    }
    // Too little temporary storage.
    let scan = ctx.scan();
    let mut temp = scan.temp::<u64>(1).unwrap();
    let big = ctx.upload(&vec![1u64; 100_000]).unwrap();
    let mut out = ctx.alloc::<u64>(100_000).unwrap();
    match scan.inclusive_with_temp(&big, &mut out, Sum, &mut temp) {
        Err(Error::LengthMismatch { .. }) => {}
        other => panic!("small temp: {other:?}"),
    }
    // Recurrence inputs of different lengths.
    let (l, u) = (ctx.upload(&[0.5f32; 4]).unwrap(), ctx.upload(&[0.5f32; 3]).unwrap());
    let mut v = ctx.alloc::<f32>(4).unwrap();
    assert!(matches!(ctx.linear_recurrence(&l, &u, 0.0, &mut v), Err(Error::LengthMismatch { .. })));
});

// ------------------------------------------------------------- GPU only

/// The CUDA context, or `None` (logged as a skip) without a GPU.
fn gpu(test: &str) -> Option<Context> {
    gpuprim_tests::context(BackendKind::Cuda, test)
}

/// Thousands of single-pass scans at sizes where hundreds to thousands of
/// blocks wait on each other, both status layouts, checked exactly every
/// time: zero failures allowed.
#[test]
fn single_pass_scans_never_fail_in_thousands_of_runs() {
    let Some(ctx) = gpu("scan::single_pass_scans_never_fail_in_thousands_of_runs") else { return };
    let runs: usize = std::env::var("GPUPRIM_SCAN_STRESS_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let max = (1 << 23) + 77;
    let mut rng = Rng(0x5CA7);
    let ints: Vec<i32> = (0..max).map(|_| rng.next() as i32).collect();
    let maps: Vec<Affine<u32>> = (0..max).map(|_| Affine::new(rng.next() as u32, rng.next() as u32)).collect();
    let want_ints = cpu_scan::<i32, Sum>(&ints, 0, false);
    let want_maps = cpu_scan::<Affine<u32>, Compose>(&maps, Compose::identity(), false);
    let (xi, xm) = (ctx.upload(&ints).unwrap(), ctx.upload(&maps).unwrap());
    for alg in [ScanAlgorithm::DecoupledLookBack, ScanAlgorithm::Tickets] {
        let scan = ctx.scan().algorithm(alg);
        let mut temp_i = scan.temp::<i32>(max).unwrap();
        let mut temp_m = scan.temp::<Affine<u32>>(max).unwrap();
        let (mut yi, mut ym) = (ctx.alloc::<i32>(max).unwrap(), ctx.alloc::<Affine<u32>>(max).unwrap());
        let mut got_i = vec![0i32; max];
        let mut got_m = vec![Affine::default(); max];
        let runs = if alg == ScanAlgorithm::Tickets { runs / 4 } else { runs };
        for r in 0..runs {
            // Full size most of the time, sometimes a random shorter prefix.
            let n = if r % 4 == 0 { 1 + rng.below(max as u64) as usize } else { max };
            if n == max {
                yi.poison().unwrap();
                scan.inclusive_with_temp(&xi, &mut yi, Sum, &mut temp_i).unwrap();
                yi.copy_to_host(&mut got_i).unwrap();
                assert!(
                    got_i == want_ints,
                    "{} i32 run {r}: wrong at {:?}",
                    alg.name(),
                    got_i.iter().zip(&want_ints).position(|(a, b)| a != b)
                );
                ym.poison().unwrap();
                scan.inclusive_with_temp(&xm, &mut ym, Compose, &mut temp_m).unwrap();
                ym.copy_to_host(&mut got_m).unwrap();
                assert!(
                    got_m == want_maps,
                    "{} affine run {r}: wrong at {:?}",
                    alg.name(),
                    got_m.iter().zip(&want_maps).position(|(a, b)| a != b)
                );
            } else {
                let x = ctx.upload(&ints[..n]).unwrap();
                let mut y = ctx.alloc::<i32>(n).unwrap();
                scan.inclusive_with_temp(&x, &mut y, Sum, &mut temp_i).unwrap();
                assert!(y.to_vec().unwrap() == want_ints[..n], "{} i32 run {r}, n = {n}", alg.name());
            }
        }
        println!("{}: {runs} runs of {max} elements, no failure", alg.name());
    }
}

/// Inputs longer than 2^32 elements (64-bit indexing): an in-place i32 sum
/// (16 GiB) of a random periodic pattern, whose prefixes have a closed form.
#[test]
fn scans_of_more_than_2_32_elements_are_exact() {
    let Some(ctx) = gpu("scan::scans_of_more_than_2_32_elements_are_exact") else { return };
    let n: usize = (1 << 32) + 4099;
    const PERIOD: usize = 1009;
    let mut rng = Rng(0xB16);
    let pattern: Vec<i32> = (0..PERIOD).map(|_| (rng.next() % 2001) as i32 - 1000).collect();
    let mut pre = vec![0i32; PERIOD + 1];
    for i in 0..PERIOD {
        pre[i + 1] = pre[i].wrapping_add(pattern[i]);
    }
    let period_sum = pre[PERIOD];
    let mut host = vec![0i32; n];
    let mut buf = ctx.alloc::<i32>(n).unwrap();
    for alg in [ScanAlgorithm::DecoupledLookBack, ScanAlgorithm::ThreePhase, ScanAlgorithm::Tickets] {
        for chunk in host.chunks_mut(PERIOD) {
            chunk.copy_from_slice(&pattern[..chunk.len()]);
        }
        buf.copy_from_host(&host).unwrap();
        ctx.scan().algorithm(alg).inclusive_in_place(&mut buf, Sum).unwrap();
        buf.copy_to_host(&mut host).unwrap();
        // Inclusive prefix at q * PERIOD + r: q whole periods, then the
        // partial one.
        let mut whole = 0i32;
        for (q, chunk) in host.chunks(PERIOD).enumerate() {
            if let Some(r) = chunk.iter().zip(&pre[1..]).position(|(&g, &p)| g != whole.wrapping_add(p)) {
                panic!("{} n = {n}: wrong at {}", alg.name(), q * PERIOD + r);
            }
            whole = whole.wrapping_add(period_sum);
        }
        println!("{}: {n} elements exact", alg.name());
    }
}
