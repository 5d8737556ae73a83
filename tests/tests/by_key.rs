//! By-key and segmented operations against CPU references: reduce-by-key
//! and scans by key for every key type x value type x operator, run-length
//! encoding and non-trivial runs for every type and count type, segmented
//! scans with empty segments; runs of 1, of n and of random lengths, tile
//! edges, many tiles under any residency, temporary storage reused,
//! outputs too short, invalid choices. GPU-only: large inputs.
//!
//! Integers and min/max compare exactly. Float sums use multiples of 1/4,
//! which add exactly (in any grouping) while the sums stay below 2^22 in
//! magnitude, so they compare exactly on the emulator's sizes; the large
//! GPU inputs compare floats within a bound that grows with the run.

// `!(err <= bound)` on purpose: a NaN result must fail the comparison.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use gpuprim::by_key::{ByKey, DEFAULT_BLOCK, RunCount};
use gpuprim::scan::{Max, Min, Monoid, Product, ScanOp, Sum};
use gpuprim::{BackendKind, Context, EmuConfig, Error, Scalar};
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
    fn below(&mut self, k: u64) -> u64 {
        self.next() % k.max(1)
    }
}

/// Key types: a key from a small number (so equal keys recur, but not
/// next to each other: see [`keys`]).
trait Key: Scalar + PartialEq {
    fn of(v: u64) -> Self;
}
macro_rules! keys {
    ($($t:ty),*) => {$( impl Key for $t { fn of(v: u64) -> Self { (v as i64 - 2) as $t } } )*};
}
keys!(u32, u64, i32, i64, f32, f64);

/// Value types: random inputs, exact or bounded comparison.
trait Val: Scalar + PartialEq {
    const EPS: f64;
    fn draw(rng: &mut Rng) -> Self;
    fn f64(self) -> f64;
}
macro_rules! int_vals {
    ($($t:ty),*) => {$(
        impl Val for $t {
            const EPS: f64 = 0.0;
            fn draw(rng: &mut Rng) -> Self { rng.next() as $t }
            fn f64(self) -> f64 { self as f64 }
        }
    )*};
}
int_vals!(i32, u32, i64, u64);
macro_rules! float_vals {
    ($($t:ty),*) => {$(
        impl Val for $t {
            const EPS: f64 = <$t>::EPSILON as f64;
            // Multiples of 1/4 in [-8, 8], never zero.
            fn draw(rng: &mut Rng) -> Self {
                let k = rng.below(64) as i64 - 32;
                (if k >= 0 { k + 1 } else { k }) as $t / 4.0
            }
            fn f64(self) -> f64 { self as f64 }
        }
    )*};
}
float_vals!(f32, f64);

/// How the keys fall into runs.
#[derive(Clone, Copy, Debug)]
enum Runs {
    /// Every key differs from the one before.
    Ones,
    /// One run of n.
    One,
    /// Random lengths, 1 ..= 2 * mean - 1.
    Mean(u64),
    /// Runs of one, and about one run in 40 of 17 ..= 48: warps that
    /// write many runs, with threads among them that write none.
    Gaps,
}

/// `n` keys in runs as `runs` says; neighbouring runs have different keys
/// from an alphabet of 5, so equal keys recur apart.
fn keys<K: Key>(rng: &mut Rng, n: usize, runs: Runs) -> Vec<K> {
    let mut out = Vec::with_capacity(n);
    let mut key = rng.below(5);
    while out.len() < n {
        let len = match runs {
            Runs::Ones => 1,
            Runs::One => n,
            Runs::Mean(m) => 1 + rng.below(2 * m - 1) as usize,
            Runs::Gaps => gap_len(rng),
        };
        out.extend(std::iter::repeat_n(K::of(key), len.min(n - out.len())));
        key = (key + 1 + rng.below(4)) % 5;
    }
    out
}

/// A run length of [`Runs::Gaps`].
fn gap_len(rng: &mut Rng) -> usize {
    if rng.below(40) == 0 { 17 + rng.below(32) as usize } else { 1 }
}

/// `(start, length)` of every run of equal consecutive keys.
fn runs_of<K: PartialEq>(keys: &[K]) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        match runs.last_mut() {
            Some((s, len)) if keys[*s] == *k => *len += 1,
            _ => runs.push((i, 1)),
        }
    }
    runs
}

/// Compare values: integers exactly, floats within `64 * eps * sum |x|`
/// of the exact result (the CPU's, in f64).
fn same<V: Val>(got: V, want: V, abs: f64) -> bool {
    if V::EPS == 0.0 { got == want } else { (got.f64() - want.f64()).abs() <= 64.0 * V::EPS * abs }
}

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

// --------------------------------------------------------- references

/// Scan of `values` restarting at each `head`: inclusive, or exclusive
/// from `init`; with `sum |x|` since the head, for the float bound.
fn cpu_segmented_scan<V: Val, Op: Monoid<V>>(heads: &[bool], values: &[V], init: V, exclusive: bool) -> Vec<(V, f64)> {
    let (mut run, mut abs) = (Op::identity(), 0.0);
    let mut out = Vec::with_capacity(values.len());
    for (i, (&h, &v)) in heads.iter().zip(values).enumerate() {
        if h || i == 0 {
            run = Op::identity();
            abs = 0.0;
        }
        let before = run;
        run = Op::combine(run, v);
        abs += v.f64().abs();
        out.push(if exclusive { (Op::combine(init, before), abs + init.f64().abs()) } else { (run, abs) });
    }
    out
}

fn heads_of<K: PartialEq>(keys: &[K]) -> Vec<bool> {
    (0..keys.len()).map(|i| i == 0 || keys[i] != keys[i - 1]).collect()
}

// ------------------------------------------------------------- one case

#[derive(Clone, Copy, Debug)]
struct Case {
    n: usize,
    seed: u64,
    runs: Runs,
}

fn runs_strategy() -> impl Strategy<Value = Runs> {
    prop_oneof![
        1 => Just(Runs::Ones),
        1 => Just(Runs::One),
        1 => Just(Runs::Gaps),
        4 => proptest::sample::select(vec![2u64, 3, 7, 40, 600, 5000]).prop_map(Runs::Mean),
    ]
}

/// Sizes around tiles of `tile`: edges and up to a few tiles on the
/// emulator; on the GPU also log-uniform up to 2^25.
fn sizes(ctx: &Context, tile: usize) -> BoxedStrategy<usize> {
    let edges = vec![1, 2, 31, 32, 33, 255, 256, 257, tile - 1, tile, tile + 1, 2 * tile + 1, 3 * tile + 7];
    if ctx.backend() == BackendKind::Cuda {
        prop_oneof![
            2 => proptest::sample::select(edges),
            3 => (0u32..25).prop_flat_map(|e| (1usize << e)..(2usize << e)),
        ]
        .boxed()
    } else {
        prop_oneof![1 => proptest::sample::select(edges), 1 => 1..=3 * tile + 9].boxed()
    }
}

fn case_strategy(ctx: &Context, tile: usize) -> impl Strategy<Value = Case> {
    (sizes(ctx, tile), any::<u64>(), runs_strategy()).prop_map(|(n, seed, runs)| Case { n, seed, runs })
}

/// Reduce-by-key of one case, checked; outputs as long as the input, so
/// every run fits.
fn reduce_case<K: Key, V: Val, Op: ScanOp<V> + Default>(
    ctx: &Context,
    by: &ByKey,
    c: Case,
) -> Result<(), TestCaseError> {
    let mut rng = Rng(c.seed);
    let k: Vec<K> = keys(&mut rng, c.n, c.runs);
    let v: Vec<V> = (0..c.n).map(|_| V::draw(&mut rng)).collect();
    let (kb, vb) = (ctx.upload(&k).map_err(fail)?, ctx.upload(&v).map_err(fail)?);
    let (mut uk, mut agg) = (ctx.alloc::<K>(c.n).map_err(fail)?, ctx.alloc::<V>(c.n).map_err(fail)?);
    uk.poison().map_err(fail)?;
    agg.poison().map_err(fail)?;
    let got = by.reduce_by_key(&kb, &vb, &mut uk, &mut agg, Op::default()).map_err(fail)?;
    let runs = runs_of(&k);
    let what = format!("reduce_by_key `{}` {} keys {} values, {c:?}", Op::NAME, K::NAME, V::NAME);
    prop_assert_eq!(got, runs.len(), "{}: run count", what);
    let (uk, agg) = (uk.to_vec().map_err(fail)?, agg.to_vec().map_err(fail)?);
    for (r, &(s, len)) in runs.iter().enumerate() {
        let want = v[s..s + len].iter().fold(Op::identity(), |a, &x| Op::combine(a, x));
        let abs: f64 = v[s..s + len].iter().map(|x| x.f64().abs()).sum();
        prop_assert!(uk[r] == k[s], "{}: key of run {} at {}: {:?} vs {:?}", what, r, s, uk[r], k[s]);
        prop_assert!(
            same(agg[r], want, abs),
            "{}: run {} ({}, {}): got {:?}, want {:?}",
            what,
            r,
            s,
            len,
            agg[r],
            want
        );
    }
    Ok(())
}

/// Inclusive or exclusive scan by key of one case, checked.
fn scan_case<K: Key, V: Val, Op: ScanOp<V> + Default>(
    ctx: &Context,
    by: &ByKey,
    c: Case,
    exclusive: bool,
) -> Result<(), TestCaseError> {
    let mut rng = Rng(c.seed);
    let k: Vec<K> = keys(&mut rng, c.n, c.runs);
    let v: Vec<V> = (0..c.n).map(|_| V::draw(&mut rng)).collect();
    let init = V::draw(&mut rng);
    let (kb, vb) = (ctx.upload(&k).map_err(fail)?, ctx.upload(&v).map_err(fail)?);
    let mut out = ctx.alloc::<V>(c.n).map_err(fail)?;
    out.poison().map_err(fail)?;
    if exclusive {
        by.exclusive_scan_by_key(&kb, &vb, &mut out, init, Op::default(), None)
    } else {
        by.inclusive_scan_by_key(&kb, &vb, &mut out, Op::default(), None)
    }
    .map_err(fail)?;
    let got = out.to_vec().map_err(fail)?;
    let want = cpu_segmented_scan::<V, Op>(&heads_of(&k), &v, init, exclusive);
    if let Some(i) = (0..c.n).find(|&i| !same(got[i], want[i].0, want[i].1)) {
        return Err(TestCaseError::fail(format!(
            "{} scan_by_key `{}` {} keys {} values, {c:?}: at {i} got {:?}, want {:?}",
            if exclusive { "exclusive" } else { "inclusive" },
            Op::NAME,
            K::NAME,
            V::NAME,
            got[i],
            want[i].0
        )));
    }
    Ok(())
}

/// Run-length encoding and non-trivial runs of one case, checked.
fn runs_case<T: Key, C: RunCount + TryFrom<usize>>(ctx: &Context, by: &ByKey, c: Case) -> Result<(), TestCaseError>
where
    <C as TryFrom<usize>>::Error: std::fmt::Debug,
{
    let mut rng = Rng(c.seed);
    let x: Vec<T> = keys(&mut rng, c.n, c.runs);
    let xb = ctx.upload(&x).map_err(fail)?;
    let runs = runs_of(&x);
    let what = format!("{} input, {} counts, {c:?}", T::NAME, C::NAME);
    let cv = |v: usize| C::try_from(v).unwrap();

    let (mut unique, mut counts) = (ctx.alloc::<T>(c.n).map_err(fail)?, ctx.alloc::<C>(c.n).map_err(fail)?);
    unique.poison().map_err(fail)?;
    counts.poison().map_err(fail)?;
    let got = by.run_length_encode(&xb, &mut unique, &mut counts).map_err(fail)?;
    prop_assert_eq!(got, runs.len(), "run_length_encode {}: run count", what);
    let (unique, counts) = (unique.to_vec().map_err(fail)?, counts.to_vec().map_err(fail)?);
    for (r, &(s, len)) in runs.iter().enumerate() {
        prop_assert!(
            unique[r] == x[s] && counts[r] == cv(len),
            "run_length_encode {}: run {} ({}, {})",
            what,
            r,
            s,
            len
        );
    }

    let long: Vec<(usize, usize)> = runs.iter().copied().filter(|&(_, len)| len > 1).collect();
    let (mut offsets, mut lengths) = (ctx.alloc::<C>(c.n).map_err(fail)?, ctx.alloc::<C>(c.n).map_err(fail)?);
    offsets.poison().map_err(fail)?;
    lengths.poison().map_err(fail)?;
    let got = by.non_trivial_runs(&xb, &mut offsets, &mut lengths).map_err(fail)?;
    prop_assert_eq!(got, long.len(), "non_trivial_runs {}: count", what);
    let (offsets, lengths) = (offsets.to_vec().map_err(fail)?, lengths.to_vec().map_err(fail)?);
    for (r, &(s, len)) in long.iter().enumerate() {
        prop_assert!(
            offsets[r] == cv(s) && lengths[r] == cv(len),
            "non_trivial_runs {}: run {} is ({}, {}), got ({:?}, {:?})",
            what,
            r,
            s,
            len,
            offsets[r],
            lengths[r]
        );
    }
    Ok(())
}

/// CSR offsets for `n` items: segments of random lengths (a quarter of
/// them empty), then `n`.
fn offsets(rng: &mut Rng, n: usize, runs: Runs) -> Vec<u64> {
    let mut out = vec![0u64];
    let mut at = 0;
    while at < n {
        let len = match runs {
            Runs::Ones => 1,
            Runs::One => n,
            Runs::Gaps => gap_len(rng),
            Runs::Mean(m) => {
                if rng.below(4) == 0 {
                    0
                } else {
                    1 + rng.below(2 * m - 1) as usize
                }
            }
        };
        at = (at + len).min(n);
        out.push(at as u64);
    }
    out
}

/// Segmented scan of one case, checked.
fn segmented_case<V: Val, Op: ScanOp<V> + Default>(
    ctx: &Context,
    by: &ByKey,
    c: Case,
    exclusive: bool,
) -> Result<(), TestCaseError> {
    let mut rng = Rng(c.seed);
    let offs = offsets(&mut rng, c.n, c.runs);
    let v: Vec<V> = (0..c.n).map(|_| V::draw(&mut rng)).collect();
    let init = V::draw(&mut rng);
    let (ob, vb) = (ctx.upload(&offs).map_err(fail)?, ctx.upload(&v).map_err(fail)?);
    let mut out = ctx.alloc::<V>(c.n).map_err(fail)?;
    out.poison().map_err(fail)?;
    if exclusive {
        by.exclusive_segmented_scan(&vb, &ob, &mut out, init, Op::default(), None)
    } else {
        by.inclusive_segmented_scan(&vb, &ob, &mut out, Op::default(), None)
    }
    .map_err(fail)?;
    let got = out.to_vec().map_err(fail)?;
    let mut heads = vec![false; c.n];
    for &o in &offs {
        if (o as usize) < c.n {
            heads[o as usize] = true;
        }
    }
    let want = cpu_segmented_scan::<V, Op>(&heads, &v, init, exclusive);
    if let Some(i) = (0..c.n).find(|&i| !same(got[i], want[i].0, want[i].1)) {
        return Err(TestCaseError::fail(format!(
            "{} segmented scan `{}` {}, {c:?}: at {i} got {:?}, want {:?}",
            if exclusive { "exclusive" } else { "inclusive" },
            Op::NAME,
            V::NAME,
            got[i],
            want[i].0
        )));
    }
    Ok(())
}

// --------------------------------------------------- every combination

backend_test!(reduce_by_key_matches_the_cpu_for_every_key_value_and_operator, |ctx| {
    let by = ctx.by_key();
    let tile = by.tile_len::<u32, i32>() as usize;
    let n = cases(ctx, 2, 4);
    let each = |f: &dyn Fn(Case) -> Result<(), TestCaseError>| check(n, case_strategy(ctx, tile), f);
    macro_rules! one {
        ($k:ty, $v:ty, $op:ty) => {
            each(&|c| reduce_case::<$k, $v, $op>(ctx, &by, c))
        };
    }
    macro_rules! all {
        ($($k:ty),*) => {$( all!(@v $k; i32, u32, f32, i64, u64, f64); )*};
        (@v $k:ty; $($v:ty),*) => {$( one!($k, $v, Sum); one!($k, $v, Min); one!($k, $v, Max); )*};
    }
    all!(u32, u64, i32, i64);
});

backend_test!(scans_by_key_match_the_cpu_for_every_key_value_and_operator, |ctx| {
    let by = ctx.by_key();
    let tile = by.tile_len::<u32, i32>() as usize;
    let n = cases(ctx, 2, 4);
    let each = |f: &dyn Fn(Case) -> Result<(), TestCaseError>| check(n, case_strategy(ctx, tile), f);
    macro_rules! one {
        ($k:ty, $v:ty, $op:ty) => {
            each(&|c| {
                scan_case::<$k, $v, $op>(ctx, &by, c, c.seed % 2 == 0)?;
                scan_case::<$k, $v, $op>(ctx, &by, Case { seed: c.seed ^ 1, ..c }, c.seed % 2 == 1)
            })
        };
    }
    macro_rules! all {
        ($($k:ty),*) => {$( all!(@v $k; i32, u32, f32, i64, u64, f64); )*};
        (@v $k:ty; $($v:ty),*) => {$( one!($k, $v, Sum); one!($k, $v, Min); one!($k, $v, Max); )*};
    }
    all!(u32, u64, i32, i64);
});

backend_test!(run_length_encoding_matches_the_cpu_for_every_type_and_count_type, |ctx| {
    let by = ctx.by_key();
    let tile = by.tile_len::<u32, i32>() as usize;
    let n = cases(ctx, 4, 8);
    macro_rules! all {
        ($($t:ty),*) => {$(
            check(n, case_strategy(ctx, tile), |c| runs_case::<$t, u32>(ctx, &by, c));
            check(n, case_strategy(ctx, tile), |c| runs_case::<$t, u64>(ctx, &by, c));
        )*};
    }
    all!(i32, u32, i64, u64, f32, f64);
});

backend_test!(segmented_scans_match_the_cpu_for_every_type_and_operator, |ctx| {
    let by = ctx.by_key();
    let tile = by.tile_len::<u32, i32>() as usize;
    let n = cases(ctx, 4, 8);
    macro_rules! all {
        ($($v:ty),*) => {$(
            check(n, case_strategy(ctx, tile), |c| {
                segmented_case::<$v, Sum>(ctx, &by, c, c.seed % 2 == 0)?;
                segmented_case::<$v, Min>(ctx, &by, c, c.seed % 3 == 0)?;
                segmented_case::<$v, Max>(ctx, &by, c, c.seed % 5 != 0)
            });
        )*};
    }
    all!(i32, u32, f32, i64, u64, f64);
});

// ------------------------------------------------------- tile edges

// Every operation at every tile edge, runs of 1, of n and in between,
// at 256 threads and at 32 (tiles of 512 items for 4-byte keys and values).
backend_test!(every_operation_is_exact_at_tile_edges_for_runs_of_one_of_n_and_between, |ctx| {
    for block in [DEFAULT_BLOCK, 32] {
        let by = ctx.by_key().block_size(block);
        let tile = by.tile_len::<u32, i32>() as usize;
        for n in [1, 2, 31, 32, 33, tile - 1, tile, tile + 1, 2 * tile - 1, 2 * tile + 1, 5 * tile + 3] {
            for runs in [Runs::Ones, Runs::One, Runs::Gaps, Runs::Mean(3), Runs::Mean(tile as u64 / 2 + 1)] {
                let c = Case { n, seed: n as u64 * 31 + block as u64, runs };
                reduce_case::<u32, i32, Sum>(ctx, &by, c).unwrap();
                scan_case::<u32, i32, Sum>(ctx, &by, c, false).unwrap();
                scan_case::<u32, i32, Sum>(ctx, &by, c, true).unwrap();
                runs_case::<u32, u32>(ctx, &by, c).unwrap();
                segmented_case::<i32, Sum>(ctx, &by, c, n % 2 == 0).unwrap();
            }
        }
        // The run kernels' own tiles (keys alone: 24 and 28 four-byte
        // items a thread, 12 and 14 eight-byte).
        for tile in
            [by.run_length_tile_len::<u32>(), by.non_trivial_tile_len::<u32>(), by.non_trivial_tile_len::<u64>()]
        {
            let tile = tile as usize;
            for n in [tile - 1, tile, tile + 1, 2 * tile - 1, 2 * tile + 1, 5 * tile + 3] {
                for runs in [Runs::Ones, Runs::One, Runs::Mean(2), Runs::Mean(3), Runs::Mean(tile as u64 / 2 + 1)] {
                    let c = Case { n, seed: n as u64 * 37 + block as u64, runs };
                    runs_case::<u32, u32>(ctx, &by, c).unwrap();
                    if block == DEFAULT_BLOCK {
                        // (Eight-byte keys are instantiated at 256 threads.)
                        runs_case::<u64, u64>(ctx, &by, c).unwrap();
                    }
                }
            }
        }
        // The benchmarked shapes: `u64` keys with 4-byte values, whose
        // tiles take 16 items a thread for reduce-by-key and 14 for the
        // scans; each at the other's tile edges too.
        if block == DEFAULT_BLOCK {
            let tiles = [by.reduce_tile_len::<u64, i32>() as usize, by.tile_len::<u64, i32>() as usize];
            for n in tiles.into_iter().flat_map(|tile| [tile - 1, tile, tile + 1, 2 * tile + 1, 5 * tile + 3]) {
                let tile = tiles[0];
                for runs in [Runs::Ones, Runs::One, Runs::Gaps, Runs::Mean(3), Runs::Mean(tile as u64 / 2 + 1)] {
                    let c = Case { n, seed: n as u64 * 41 + 7, runs };
                    reduce_case::<u64, i32, Sum>(ctx, &by, c).unwrap();
                    reduce_case::<u64, f32, Max>(ctx, &by, c).unwrap();
                    scan_case::<u64, i32, Sum>(ctx, &by, c, n % 2 == 0).unwrap();
                    scan_case::<u64, f32, Min>(ctx, &by, c, n % 2 == 1).unwrap();
                }
            }
        }
    }
});

/// Many blocks resident at once and few, in any start order: every
/// look-back must cross windows of unfinished tiles. Blocks of 32 threads,
/// 40 tiles.
#[test]
fn by_key_passes_are_right_under_any_residency_and_schedule() {
    for (resident, seed) in [(1, 1u64), (2, 2), (3, 6), (8, 7), (48, 3), (96, 5)] {
        let ctx = Context::emulator_with(EmuConfig { resident_blocks: resident, seed, ..EmuConfig::default() });
        let by = ctx.by_key().block_size(32);
        let n = 40 * by.tile_len::<u32, i32>() as usize - 5;
        for runs in [Runs::Mean(3), Runs::Mean(700)] {
            let c = Case { n, seed, runs };
            reduce_case::<u32, i32, Sum>(&ctx, &by, c).unwrap();
            scan_case::<u32, i32, Sum>(&ctx, &by, c, seed % 2 == 0).unwrap();
            runs_case::<u32, u32>(&ctx, &by, c).unwrap();
            segmented_case::<i32, Sum>(&ctx, &by, c, seed % 2 == 1).unwrap();
        }
    }
}

// ------------------------------------------------------ segments

backend_test!(segmented_scans_handle_empty_segments_single_items_and_odd_offsets, |ctx| {
    let v: Vec<i32> = (1..=10).collect();
    let vb = ctx.upload(&v).unwrap();
    let mut out = ctx.alloc::<i32>(10).unwrap();
    let mut scan = |offs: &[u64], exclusive: bool| -> Vec<i32> {
        out.poison().unwrap();
        let ob = ctx.upload(offs).unwrap();
        if exclusive {
            ctx.exclusive_segmented_scan(&vb, &ob, &mut out, 100, Sum).unwrap();
        } else {
            ctx.inclusive_segmented_scan(&vb, &ob, &mut out, Sum).unwrap();
        }
        out.to_vec().unwrap()
    };
    // Empty segments at the start, middle and end; segments of one.
    let offs = [0, 0, 0, 3, 3, 4, 5, 5, 10, 10, 10];
    assert_eq!(scan(&offs, false), [1, 3, 6, 4, 5, 6, 13, 21, 30, 40]);
    assert_eq!(scan(&offs, true), [100, 101, 103, 100, 100, 100, 106, 113, 121, 130]);
    // Every item its own segment; one segment; no offsets at all.
    assert_eq!(scan(&(0..=10).collect::<Vec<u64>>(), false), v);
    assert_eq!(scan(&[0, 10], false), [1, 3, 6, 10, 15, 21, 28, 36, 45, 55]);
    assert_eq!(scan(&[], false), [1, 3, 6, 10, 15, 21, 28, 36, 45, 55]);
    // Item 0 starts a segment even when the first offset is later;
    // offsets beyond n start nothing.
    assert_eq!(scan(&[4, 12, 99], false), [1, 3, 6, 10, 5, 11, 18, 26, 35, 45]);
    // Many empty segments at one position, across tiles.
    let n = 3 * ctx.by_key().tile_len::<u32, i32>() as usize + 5;
    let mut offs = vec![0u64; 5000];
    offs.extend([n as u64 / 2; 5000]);
    offs.push(n as u64);
    let x = vec![1i32; n];
    let mut y = ctx.alloc::<i32>(n).unwrap();
    ctx.inclusive_segmented_scan(&ctx.upload(&x).unwrap(), &ctx.upload(&offs).unwrap(), &mut y, Sum).unwrap();
    let want: Vec<i32> = (0..n).map(|i| if i < n / 2 { i + 1 } else { i - n / 2 + 1 } as i32).collect();
    assert_eq!(y.to_vec().unwrap(), want);
});

// ------------------------------------------------- temp, counts, API

backend_test!(the_into_forms_leave_the_count_on_the_device_and_reuse_temp_storage, |ctx| {
    let by = ctx.by_key();
    let max = 3 * by.tile_len::<u32, i32>() as usize + 11;
    let mut temp = by.temp(max).unwrap();
    assert!(temp.bytes() >= by.temp_bytes(max).unwrap());
    let mut count = ctx.alloc::<u64>(1).unwrap();
    for (k, n) in [max, 1, 2048, 777, max, 0].into_iter().enumerate() {
        let mut rng = Rng(k as u64);
        let keys: Vec<u64> = keys(&mut rng, n, Runs::Mean(5));
        let vals: Vec<f32> = (0..n).map(|_| f32::draw(&mut rng)).collect();
        let runs = runs_of(&keys);
        let (kb, vb) = (ctx.upload(&keys).unwrap(), ctx.upload(&vals).unwrap());
        let (mut uk, mut agg) = (ctx.alloc::<u64>(n).unwrap(), ctx.alloc::<f32>(n).unwrap());
        count.poison().unwrap();
        by.reduce_by_key_into(&kb, &vb, &mut uk, &mut agg, &mut count, Sum, Some(&mut temp)).unwrap();
        assert_eq!(count.to_vec().unwrap(), [runs.len() as u64], "n = {n}");
        let agg = agg.to_vec().unwrap();
        for (r, &(s, len)) in runs.iter().enumerate() {
            assert_eq!(agg[r], vals[s..s + len].iter().sum::<f32>(), "n = {n}, run {r}");
        }
        count.poison().unwrap();
        let (mut unique, mut lens) = (ctx.alloc::<u64>(n).unwrap(), ctx.alloc::<u64>(n).unwrap());
        by.run_length_encode_into(&kb, &mut unique, &mut lens, &mut count, Some(&mut temp)).unwrap();
        assert_eq!(count.to_vec().unwrap(), [runs.len() as u64], "n = {n}");
        count.poison().unwrap();
        by.non_trivial_runs_into(&kb, &mut unique, &mut lens, &mut count, Some(&mut temp)).unwrap();
        let long = runs.iter().filter(|r| r.1 > 1).count();
        assert_eq!(count.to_vec().unwrap(), [long as u64], "n = {n}");
        let mut y = ctx.alloc::<f32>(n).unwrap();
        by.inclusive_scan_by_key(&kb, &vb, &mut y, Sum, Some(&mut temp)).unwrap();
        let want = cpu_segmented_scan::<f32, Sum>(&heads_of(&keys), &vals, 0.0, false);
        assert!(y.to_vec().unwrap().iter().zip(&want).all(|(g, w)| *g == w.0), "n = {n}");
    }
    // A scan between calls on the stream's own storage does not disturb it.
    let x = ctx.upload(&[1u32, 1, 2, 2, 2, 3]).unwrap();
    let (mut u, mut c) = (ctx.alloc::<u32>(6).unwrap(), ctx.alloc::<u32>(6).unwrap());
    assert_eq!(ctx.run_length_encode(&x, &mut u, &mut c).unwrap(), 3);
    let mut s = ctx.alloc::<u32>(6).unwrap();
    ctx.inclusive_scan(&x, &mut s).unwrap();
    assert_eq!(ctx.run_length_encode(&x, &mut u, &mut c).unwrap(), 3);
    assert_eq!(c.to_vec().unwrap()[..3], [2, 3, 1]);
});

backend_test!(short_outputs_get_what_fits_and_an_error, |ctx| {
    let keys = ctx.upload(&[1u32, 1, 2, 3, 3, 3, 4]).unwrap();
    let vals = ctx.upload(&[1i64, 2, 3, 4, 5, 6, 7]).unwrap();
    let (mut uk, mut agg) = (ctx.alloc::<u32>(2).unwrap(), ctx.alloc::<i64>(3).unwrap());
    agg.poison().unwrap();
    match ctx.reduce_by_key(&keys, &vals, &mut uk, &mut agg, Sum) {
        Err(Error::LengthMismatch { expected: 4, got: 2, .. }) => {}
        other => panic!("short outputs: {other:?}"),
    }
    assert_eq!(uk.to_vec().unwrap(), [1, 2]);
    assert_eq!(agg.to_vec().unwrap()[..2], [3, 3]);
    // Exactly enough room is fine.
    let (mut uk, mut agg) = (ctx.alloc::<u32>(4).unwrap(), ctx.alloc::<i64>(4).unwrap());
    assert_eq!(ctx.reduce_by_key(&keys, &vals, &mut uk, &mut agg, Max).unwrap(), 4);
    assert_eq!(agg.to_vec().unwrap(), [2, 3, 6, 7]);
    let (mut offs, mut lens) = (ctx.alloc::<u64>(0).unwrap(), ctx.alloc::<u64>(5).unwrap());
    assert!(matches!(
        ctx.non_trivial_runs(&keys, &mut offs, &mut lens),
        Err(Error::LengthMismatch { expected: 2, .. })
    ));
});

backend_test!(empty_inputs_have_no_runs, |ctx| {
    let keys = ctx.upload::<i64>(&[]).unwrap();
    let vals = ctx.upload::<f64>(&[]).unwrap();
    let (mut uk, mut agg) = (ctx.alloc::<i64>(0).unwrap(), ctx.alloc::<f64>(0).unwrap());
    assert_eq!(ctx.reduce_by_key(&keys, &vals, &mut uk, &mut agg, Min).unwrap(), 0);
    let mut c = ctx.alloc::<u32>(0).unwrap();
    assert_eq!(ctx.run_length_encode(&keys, &mut uk, &mut c).unwrap(), 0);
    let mut y = ctx.alloc::<f64>(0).unwrap();
    ctx.inclusive_scan_by_key(&keys, &vals, &mut y, Sum).unwrap();
    ctx.exclusive_segmented_scan(&vals, &ctx.upload(&[0u64]).unwrap(), &mut y, 1.0, Sum).unwrap();
    assert_eq!(ctx.by_key().temp_bytes(0).unwrap(), 0);
});

backend_test!(invalid_choices_are_clear_errors, |ctx| {
    let keys = ctx.upload(&[1u64, 2, 3]).unwrap();
    let vals = ctx.upload(&[1.0f32, 2.0]).unwrap();
    let (mut uk, mut agg) = (ctx.alloc::<u64>(3).unwrap(), ctx.alloc::<f32>(3).unwrap());
    assert!(matches!(
        ctx.reduce_by_key(&keys, &vals, &mut uk, &mut agg, Sum),
        Err(Error::LengthMismatch { expected: 3, got: 2, .. })
    ));
    let vals = ctx.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut short = ctx.alloc::<f32>(2).unwrap();
    assert!(matches!(ctx.inclusive_scan_by_key(&keys, &vals, &mut short, Sum), Err(Error::LengthMismatch { .. })));
    assert!(matches!(
        ctx.inclusive_segmented_scan(&vals, &ctx.upload(&[0u64, 3]).unwrap(), &mut short, Sum),
        Err(Error::LengthMismatch { .. })
    ));
    // Operators and block sizes without kernels.
    match ctx.reduce_by_key(&keys, &vals, &mut uk, &mut agg, Product) {
        Err(Error::Unsupported { .. }) => {}
        other => panic!("product: {other:?}"),
    }
    match ctx.by_key().block_size(128).reduce_by_key(&keys, &vals, &mut uk, &mut agg, Sum) {
        Err(e @ Error::UnsupportedBlockSize { block: 128, .. }) => assert!(e.to_string().contains("[256]"), "{e}"),
        other => panic!("block of 128: {other:?}"),
    }
    assert!(matches!(ctx.by_key().block_size(100).temp_bytes(10), Err(Error::UnsupportedBlockSize { block: 100, .. })));
    // No room for the count.
    let mut count = ctx.alloc::<u64>(0).unwrap();
    assert!(matches!(
        ctx.by_key().reduce_by_key_into(&keys, &vals, &mut uk, &mut agg, &mut count, Sum, None),
        Err(Error::LengthMismatch { .. })
    ));
    // Too little temporary storage.
    let by = ctx.by_key();
    let mut temp = by.temp(1).unwrap();
    let big = ctx.upload(&vec![1u64; 10_000]).unwrap();
    let mut out = ctx.alloc::<u64>(10_000).unwrap();
    assert!(matches!(
        by.inclusive_scan_by_key(&big, &big, &mut out, Sum, Some(&mut temp)),
        Err(Error::LengthMismatch { .. })
    ));
});

// ------------------------------------------------------------- GPU only

/// The headline case at sizes the emulator cannot reach: u64 keys, i32
/// and f32 values, runs of every length, 2^26 + 3 items (about 33k tiles).
#[test]
fn large_inputs_are_exact_on_the_gpu() {
    let Some(ctx) = gpuprim_tests::context(BackendKind::Cuda, "by_key::large_inputs_are_exact_on_the_gpu") else {
        return;
    };
    let by = ctx.by_key();
    let n = (1 << 26) + 3;
    for (seed, runs) in [(1, Runs::Ones), (2, Runs::One), (3, Runs::Mean(4)), (4, Runs::Mean(100_000))] {
        let c = Case { n, seed, runs };
        reduce_case::<u64, i32, Sum>(&ctx, &by, c).unwrap();
        reduce_case::<u64, f32, Sum>(&ctx, &by, c).unwrap();
        scan_case::<u64, i32, Sum>(&ctx, &by, c, seed % 2 == 0).unwrap();
        runs_case::<u32, u32>(&ctx, &by, c).unwrap();
        segmented_case::<f64, Sum>(&ctx, &by, c, seed % 2 == 1).unwrap();
    }
}

/// More than 2^32 items, generated on the device, with one segment of more
/// than 2^31 items and short ones (some empty) across 2^32: the segmented
/// scan's 64-bit positions, offsets and carries through many tiles. CUDA
/// only.
#[test]
fn segmented_scan_beyond_32_bit_indexing_on_the_gpu() {
    let Some(ctx) =
        gpuprim_tests::context(BackendKind::Cuda, "by_key::segmented_scan_beyond_32_bit_indexing_on_the_gpu")
    else {
        return;
    };
    let seed = gpuprim_tests::draw(any::<u64>());
    let mut rng = Rng(seed);
    let n: usize = (1 << 32) + 4099 + rng.below(5000) as usize;
    let mut x = ctx.alloc::<i32>(n).unwrap();
    ctx.fill_hash(&mut x, seed).unwrap();
    let offsets = gpuprim_tests::offsets_beyond_2_32(|k| rng.below(k));
    let offs = ctx.upload(&offsets).unwrap();
    let mut out = ctx.alloc::<i32>(n).unwrap();
    out.poison().unwrap();
    ctx.inclusive_segmented_scan(&x, &offs, &mut out, Sum).unwrap();
    let (host, got) = (x.to_vec().unwrap(), out.to_vec().unwrap());
    drop((x, out));
    // A segment starts at every offset below n (as `cpu_segmented_scan`).
    let mut heads = vec![false; n];
    for &o in &offsets {
        if (o as usize) < n {
            heads[o as usize] = true;
        }
    }
    let mut acc = 0i32;
    for i in 0..n {
        acc = if heads[i] { host[i] } else { acc.wrapping_add(host[i]) };
        assert_eq!(got[i], acc, "inclusive segmented scan at {i} of {n}");
    }
}

/// Reduce-by-key, run-length encoding and the non-trivial runs over more
/// than 2^32 items whose first run is longer than 2^31 (then runs of 3):
/// 64-bit positions, counts and offsets; `u32` counts refused with a typed
/// error. The keys follow a closed form (built on all cores), the values
/// are generated on the device. CUDA only.
#[test]
fn runs_beyond_32_bit_indexing_on_the_gpu() {
    let Some(ctx) = gpuprim_tests::context(BackendKind::Cuda, "by_key::runs_beyond_32_bit_indexing_on_the_gpu") else {
        return;
    };
    let seed = gpuprim_tests::draw(any::<u64>());
    let mut rng = Rng(seed);
    let n: usize = (1 << 32) + 4099 + rng.below(5000) as usize;
    let first = (1usize << 31) + 1 + rng.below(1 << 20) as usize;
    let key = |i: usize| if i < first { u32::MAX } else { ((i - first) / 3) as u32 };
    // Run r: [0, first) for r = 0, else 3 items from first + 3 (r - 1).
    let runs = 1 + (n - first).div_ceil(3);
    let run = |r: usize| if r == 0 { (0, first) } else { (first + 3 * (r - 1), (first + 3 * r).min(n)) };
    let threads = std::thread::available_parallelism().map(|t| t.get()).unwrap_or(4);
    let mut host = vec![0u32; n];
    let per = n.div_ceil(threads);
    std::thread::scope(|s| {
        for (t, chunk) in host.chunks_mut(per).enumerate() {
            s.spawn(move || chunk.iter_mut().enumerate().for_each(|(j, k)| *k = key(t * per + j)));
        }
    });
    let keys = ctx.upload(&host).unwrap();
    drop(host);
    let mut values = ctx.alloc::<i32>(n).unwrap();
    ctx.fill_hash(&mut values, seed).unwrap();
    let v = values.to_vec().unwrap();
    let by = ctx.by_key();
    // Check runs `0..runs` on all cores with `each(r, (start, end))`.
    let every_run = |each: &(dyn Fn(usize, (usize, usize)) + Sync)| {
        let per = runs.div_ceil(threads);
        std::thread::scope(|s| {
            for t in 0..threads {
                s.spawn(move || (t * per..((t + 1) * per).min(runs)).for_each(|r| each(r, run(r))));
            }
        });
    };

    let (mut unique, mut sums) = (ctx.alloc::<u32>(runs).unwrap(), ctx.alloc::<i32>(runs).unwrap());
    unique.poison().unwrap();
    sums.poison().unwrap();
    assert_eq!(by.reduce_by_key(&keys, &values, &mut unique, &mut sums, Sum).unwrap(), runs);
    drop(values);
    let (unique_h, sums_h) = (unique.to_vec().unwrap(), sums.to_vec().unwrap());
    drop((unique, sums));
    every_run(&|r, (s, e)| {
        assert_eq!(unique_h[r], key(s), "reduce_by_key: key of run {r} [{s}, {e})");
        let want = v[s..e].iter().fold(0i32, |a, &x| a.wrapping_add(x));
        assert_eq!(sums_h[r], want, "reduce_by_key: sum of run {r} [{s}, {e})");
    });
    drop((unique_h, sums_h, v));

    let (mut unique, mut counts) = (ctx.alloc::<u32>(runs).unwrap(), ctx.alloc::<u64>(runs).unwrap());
    counts.poison().unwrap();
    assert_eq!(by.run_length_encode(&keys, &mut unique, &mut counts).unwrap(), runs);
    let (unique_h, counts_h) = (unique.to_vec().unwrap(), counts.to_vec().unwrap());
    every_run(&|r, (s, e)| {
        assert_eq!((unique_h[r], counts_h[r]), (key(s), (e - s) as u64), "run_length_encode: run {r}");
    });
    let mut short = ctx.alloc::<u32>(runs).unwrap();
    assert!(matches!(by.run_length_encode(&keys, &mut unique, &mut short), Err(Error::TooLarge { .. })));
    drop((unique, counts, short, unique_h, counts_h));

    // Every run has two or more items but perhaps the last.
    let long = runs - (run(runs - 1).1 - run(runs - 1).0 < 2) as usize;
    let (mut offsets, mut lengths) = (ctx.alloc::<u64>(runs).unwrap(), ctx.alloc::<u64>(runs).unwrap());
    offsets.poison().unwrap();
    assert_eq!(by.non_trivial_runs(&keys, &mut offsets, &mut lengths).unwrap(), long);
    let (offsets_h, lengths_h) = (offsets.to_vec().unwrap(), lengths.to_vec().unwrap());
    every_run(&|r, (s, e)| {
        if r < long {
            assert_eq!((offsets_h[r], lengths_h[r]), (s as u64, (e - s) as u64), "non_trivial_runs: run {r}");
        }
    });
}
