//! Select, partition and unique against CPU references: every operation
//! on every element type (and every key and value type of unique_by_key),
//! at tile edges and random sizes, with every predicate and selections from
//! none to all; NaNs; hundreds of tiles under any residency; counts left on
//! the device with reused temporary storage; errors for invalid calls.
//! GPU-only: large inputs and more than 2^32 items.
//!
//! Inputs come from a seeded generator (the seed is part of each proptest
//! case). Outputs are poisoned before each call and compared bit for bit,
//! including the part past the count, which must be left as it was.

use gpuprim::select::{Predicate, Select};
use gpuprim::{BackendKind, Context, DeviceBuffer, EmuConfig, Error, Scalar};
use gpuprim_tests::{backend_test, cases, check};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

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

/// The element types under test: made from small integers, compared by
/// their bits (so that NaNs compare, and poison is recognised).
trait Item: Scalar + PartialOrd {
    fn of(v: i64) -> Self;
    /// A NaN, for the float types.
    fn nan() -> Option<Self>;
    fn bits(self) -> u64;
    fn neg(self) -> Self;
}
macro_rules! int_item {
    ($($t:ty),*) => {$(
        impl Item for $t {
            fn of(v: i64) -> Self { v as $t }
            fn nan() -> Option<Self> { None }
            fn bits(self) -> u64 { self as u64 }
            fn neg(self) -> Self { self.wrapping_neg() }
        }
    )*};
}
int_item!(i32, u32, i64, u64);
impl Item for f32 {
    fn of(v: i64) -> Self {
        v as f32 * 0.5
    }
    fn nan() -> Option<Self> {
        Some(f32::NAN)
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn neg(self) -> Self {
        -self
    }
}
impl Item for f64 {
    fn of(v: i64) -> Self {
        v as f64 * 0.5
    }
    fn nan() -> Option<Self> {
        Some(f64::NAN)
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn neg(self) -> Self {
        -self
    }
}

/// One property-test input.
#[derive(Clone, Debug)]
struct Case {
    n: usize,
    seed: u64,
    /// Values are `of(0 .. range)`.
    range: i64,
    /// Predicate codes (0..6) and thresholds (`of(at)`).
    code: (usize, usize),
    at: (i64, i64),
    /// One item in this many is a NaN (floats; 0: none).
    nan_one_in: u64,
    /// Output elements beyond the input's length.
    extra: usize,
    /// Mean run length for unique (1: every item differs from the last
    /// one unless the range is tiny).
    run: u64,
}

impl Case {
    /// Items with values in `of(0..range)`, in runs of about `run`, with
    /// the NaNs asked for.
    fn data<T: Item>(&self) -> Vec<T> {
        let mut rng = Rng(self.seed);
        let mut v = rng.below(self.range as u64) as i64;
        (0..self.n)
            .map(|_| {
                if rng.below(self.run) == 0 {
                    v = rng.below(self.range as u64) as i64;
                }
                match T::nan() {
                    Some(nan) if self.nan_one_in > 0 && rng.below(self.nan_one_in) == 0 => nan,
                    _ => T::of(v),
                }
            })
            .collect()
    }
    fn predicates<T: Item>(&self) -> (Predicate<T>, Predicate<T>) {
        (predicate(self.code.0, T::of(self.at.0)), predicate(self.code.1, T::of(self.at.1)))
    }
}

fn predicate<T>(code: usize, t: T) -> Predicate<T> {
    match code % 6 {
        0 => Predicate::Less(t),
        1 => Predicate::LessEqual(t),
        2 => Predicate::Greater(t),
        3 => Predicate::GreaterEqual(t),
        4 => Predicate::Equal(t),
        _ => Predicate::NotEqual(t),
    }
}

/// Sizes around tiles of `tile` items: edges and up to a few tiles on the
/// emulator; on the GPU also large ones.
fn sizes(ctx: &Context, tile: usize) -> BoxedStrategy<usize> {
    let edges =
        vec![1, 2, 31, 32, 33, 255, 256, 257, tile - 1, tile, tile + 1, 2 * tile - 1, 2 * tile + 1, 3 * tile + 7];
    if ctx.backend() == BackendKind::Cuda {
        let big = vec![tile * tile - 1, tile * tile + 1, (1 << 24) + 3, (1 << 26) - 1];
        prop_oneof![
            3 => proptest::sample::select(edges),
            1 => proptest::sample::select(big),
            2 => 1usize..=(1 << 22),
        ]
        .boxed()
    } else {
        prop_oneof![1 => proptest::sample::select(edges), 1 => 1usize..=4 * tile + 9].boxed()
    }
}

fn case_strategy(ctx: &Context, tile: usize) -> impl Strategy<Value = Case> {
    let range = proptest::sample::select(vec![1i64, 2, 3, 10, 1000, 1 << 20]);
    (sizes(ctx, tile), any::<u64>(), range, (0usize..6, 0usize..6), (0.0f64..=1.0, 0.0f64..=1.0))
        .prop_flat_map(|(n, seed, range, code, at)| {
            let nan = proptest::sample::select(vec![0u64, 0, 64, 3]);
            let run = proptest::sample::select(vec![1u64, 1, 2, 8, 1000, u64::MAX]);
            (Just(n), Just(seed), Just(range), Just(code), Just(at), nan, 0usize..=3, run)
        })
        .prop_map(|(n, seed, range, code, at, nan_one_in, extra, run)| Case {
            n,
            seed,
            range,
            code,
            // Thresholds from below the smallest value to above the largest.
            at: ((at.0 * (range + 1) as f64) as i64 - 1, (at.1 * (range + 1) as f64) as i64 - 1),
            nan_one_in,
            extra,
            run,
        })
}

// ------------------------------------------------------------ references

/// The predicate, independently of the library: Rust's IEEE operators.
fn holds<T: Item>(p: Predicate<T>, x: T) -> bool {
    match p {
        Predicate::Less(t) => x < t,
        Predicate::LessEqual(t) => x <= t,
        Predicate::Greater(t) => x > t,
        Predicate::GreaterEqual(t) => x >= t,
        Predicate::Equal(t) => x == t,
        Predicate::NotEqual(t) => x != t,
    }
}

/// Indices of the first item of every run of equal (`==`) items.
fn run_starts<T: Item>(x: &[T]) -> Vec<usize> {
    (0..x.len()).filter(|&i| i == 0 || x[i] != x[i - 1]).collect()
}

/// What each operation should write.
fn cpu_select<T: Item>(x: &[T], p: Predicate<T>) -> Vec<T> {
    x.iter().copied().filter(|&v| holds(p, v)).collect()
}
fn cpu_partition<T: Item>(x: &[T], p: Predicate<T>) -> (Vec<T>, usize) {
    let mut out = cpu_select(x, p);
    let k = out.len();
    out.extend(x.iter().rev().copied().filter(|&v| !holds(p, v)));
    (out, k)
}
fn cpu_three_way<T: Item>(x: &[T], p: Predicate<T>, q: Predicate<T>) -> [Vec<T>; 3] {
    let a = cpu_select(x, p);
    let b = x.iter().copied().filter(|&v| !holds(p, v) && holds(q, v)).collect();
    let c = x.iter().copied().filter(|&v| !holds(p, v) && !holds(q, v)).collect();
    [a, b, c]
}

// ---------------------------------------------------------------- checks

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(format!("call failed: {e}"))
}

/// `got[..want.len()]` equals `want` bit for bit, and the rest of `got` is
/// still `before` (poison).
fn same<T: Item>(what: &str, got: &[T], want: &[T], before: &[T]) -> Result<(), TestCaseError> {
    let k = want.len();
    if got.len() < k {
        return Err(TestCaseError::fail(format!("{what}: {} outputs for {k} results", got.len())));
    }
    if let Some(i) = got[..k].iter().zip(want).position(|(g, w)| g.bits() != w.bits()) {
        return Err(TestCaseError::fail(format!(
            "{what}: first difference at {i} of {k}: got {:?}, want {:?}",
            got[i], want[i]
        )));
    }
    if let Some(i) = got[k..].iter().zip(&before[k..]).position(|(g, b)| g.bits() != b.bits()) {
        return Err(TestCaseError::fail(format!("{what}: wrote past the count, at {}: {:?}", k + i, got[k + i])));
    }
    Ok(())
}

/// A poisoned output of `len` items, and its contents.
fn poisoned<T: Item>(ctx: &Context, len: usize) -> Result<(DeviceBuffer<T>, Vec<T>), TestCaseError> {
    let mut y = ctx.alloc::<T>(len).map_err(fail)?;
    y.poison().map_err(fail)?;
    let before = y.to_vec().map_err(fail)?;
    Ok((y, before))
}

fn count_is(what: &str, got: usize, want: usize) -> Result<(), TestCaseError> {
    if got == want { Ok(()) } else { Err(TestCaseError::fail(format!("{what}: count {got}, want {want}"))) }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    If,
    Flagged,
    Partition,
    ThreeWay,
    Unique,
}

fn run_case<T: Item>(ctx: &Context, sel: &Select, op: Op, c: &Case) -> Result<(), TestCaseError> {
    let data = c.data::<T>();
    let x = ctx.upload(&data).map_err(fail)?;
    let len = c.n + c.extra;
    let (p, q) = c.predicates::<T>();
    let (mut y, before) = poisoned::<T>(ctx, len)?;
    match op {
        Op::If => {
            let want = cpu_select(&data, p);
            let k = sel.select_if(&x, &mut y, p).map_err(fail)?;
            count_is("select_if", k, want.len())?;
            same("select_if", &y.to_vec().map_err(fail)?, &want, &before)
        }
        Op::Flagged => {
            let mut rng = Rng(c.seed ^ 0xF1A9);
            // Selected with probability 0, 1/2, 1 or 1/16 (by the first code).
            let flags: Vec<u8> = (0..c.n)
                .map(|_| {
                    let on = match c.code.0 % 4 {
                        0 => false,
                        1 => rng.below(2) == 0,
                        2 => true,
                        _ => rng.below(16) == 0,
                    };
                    if on { 1 + rng.below(255) as u8 } else { 0 }
                })
                .collect();
            let want: Vec<T> = data.iter().zip(&flags).filter(|&(_, &f)| f != 0).map(|(&v, _)| v).collect();
            let f = ctx.upload(&flags).map_err(fail)?;
            let k = sel.select_flagged(&x, &f, &mut y).map_err(fail)?;
            count_is("select_flagged", k, want.len())?;
            same("select_flagged", &y.to_vec().map_err(fail)?, &want, &before)
        }
        Op::Partition => {
            let (want, selected) = cpu_partition(&data, p);
            let k = sel.partition(&x, &mut y, p).map_err(fail)?;
            count_is("partition", k, selected)?;
            same("partition", &y.to_vec().map_err(fail)?, &want, &before)
        }
        Op::ThreeWay => {
            let want = cpu_three_way(&data, p, q);
            let (mut b, before_b) = poisoned::<T>(ctx, len)?;
            let (mut r, before_r) = poisoned::<T>(ctx, len)?;
            let (ka, kb) = sel.partition_three_way(&x, &mut y, &mut b, &mut r, p, q).map_err(fail)?;
            count_is("three-way first", ka, want[0].len())?;
            count_is("three-way second", kb, want[1].len())?;
            same("three-way first", &y.to_vec().map_err(fail)?, &want[0], &before)?;
            same("three-way second", &b.to_vec().map_err(fail)?, &want[1], &before_b)?;
            same("three-way rest", &r.to_vec().map_err(fail)?, &want[2], &before_r)
        }
        Op::Unique => {
            let want: Vec<T> = run_starts(&data).into_iter().map(|i| data[i]).collect();
            let k = sel.unique(&x, &mut y).map_err(fail)?;
            count_is("unique", k, want.len())?;
            same("unique", &y.to_vec().map_err(fail)?, &want, &before)
        }
    }
}

fn property<T: Item>(ctx: &Context, op: Op, cases: u32) {
    let sel = ctx.select();
    let tile = match op {
        Op::Partition | Op::ThreeWay => sel.partition_tile_len::<T>(),
        _ => sel.tile_len::<T>(),
    } as usize;
    check(cases, case_strategy(ctx, tile), |c| run_case::<T>(ctx, &sel, op, &c));
}

fn every_type(ctx: &Context, op: Op) {
    let n = cases(ctx, 6, 40);
    property::<i32>(ctx, op, n);
    property::<u32>(ctx, op, n);
    property::<i64>(ctx, op, n);
    property::<u64>(ctx, op, n);
    property::<f32>(ctx, op, n);
    property::<f64>(ctx, op, n);
}

backend_test!(select_if_matches_the_cpu_for_every_type_and_predicate, |ctx| { every_type(ctx, Op::If) });
backend_test!(select_flagged_matches_the_cpu_for_every_type, |ctx| { every_type(ctx, Op::Flagged) });
backend_test!(partition_puts_the_rejected_last_in_reverse_order_for_every_type, |ctx| {
    every_type(ctx, Op::Partition)
});
backend_test!(three_way_partition_matches_the_cpu_for_every_type, |ctx| { every_type(ctx, Op::ThreeWay) });
backend_test!(unique_keeps_the_first_of_every_run_for_every_type, |ctx| { every_type(ctx, Op::Unique) });

fn by_key_case<K: Item, V: Item>(ctx: &Context, sel: &Select, c: &Case) -> Result<(), TestCaseError> {
    let keys = c.data::<K>();
    let mut rng = Rng(c.seed ^ 0xBEEF);
    let values: Vec<V> = (0..c.n).map(|_| V::of(rng.below(1 << 20) as i64)).collect();
    let starts = run_starts(&keys);
    let want_k: Vec<K> = starts.iter().map(|&i| keys[i]).collect();
    let want_v: Vec<V> = starts.iter().map(|&i| values[i]).collect();
    let (kx, vx) = (ctx.upload(&keys).map_err(fail)?, ctx.upload(&values).map_err(fail)?);
    let (mut ko, before_k) = poisoned::<K>(ctx, c.n + c.extra)?;
    let (mut vo, before_v) = poisoned::<V>(ctx, c.n + c.extra)?;
    let k = sel.unique_by_key(&kx, &vx, &mut ko, &mut vo).map_err(fail)?;
    count_is("unique_by_key", k, starts.len())?;
    same("unique_by_key keys", &ko.to_vec().map_err(fail)?, &want_k, &before_k)?;
    same("unique_by_key values", &vo.to_vec().map_err(fail)?, &want_v, &before_v)
}

fn by_key_property<K: Item, V: Item>(ctx: &Context, cases: u32) {
    let sel = ctx.select();
    let tile = sel.tile_len::<K>() as usize;
    check(cases, case_strategy(ctx, tile), |c| by_key_case::<K, V>(ctx, &sel, &c));
}

fn by_key_values<K: Item>(ctx: &Context, cases: u32) {
    by_key_property::<K, i32>(ctx, cases);
    by_key_property::<K, u32>(ctx, cases);
    by_key_property::<K, i64>(ctx, cases);
    by_key_property::<K, u64>(ctx, cases);
    by_key_property::<K, f32>(ctx, cases);
    by_key_property::<K, f64>(ctx, cases);
}

backend_test!(unique_by_key_matches_the_cpu_for_every_key_and_value_type, |ctx| {
    let n = cases(ctx, 2, 12);
    by_key_values::<u32>(ctx, n);
    by_key_values::<u64>(ctx, n);
    by_key_values::<i64>(ctx, n);
});

// ------------------------------------------------------------ edge cases

/// A case with everything fixed but the size and what is selected.
fn fixed(n: usize, seed: u64, range: i64, code: usize, at: i64, run: u64) -> Case {
    Case { n, seed, range, code: (code, code), at: (at, at), nan_one_in: 0, extra: 1, run }
}

backend_test!(all_and_none_selected_and_runs_of_one_and_of_n_at_tile_edges, |ctx| {
    let sel = ctx.select();
    fn each<T: Item>(ctx: &Context, sel: &Select) {
        // The edges of both tile sizes: the selections' and the partitions'.
        let (tile, part) = (sel.tile_len::<T>() as usize, sel.partition_tile_len::<T>() as usize);
        for n in [1, 31, 32, 33, 255, 256, 257, part - 1, part, part + 1, tile - 1, tile, tile + 1, 3 * tile + 1] {
            for (code, at) in [(0, 1 << 21), (0, 0), (5, -1), (4, -1)] {
                // code 0 = Less: everything below 2^21 (all), nothing below 0;
                // NotEqual(-1/2) all, Equal(-1/2) none.
                let c = fixed(n, n as u64, 1 << 20, code, at, 1);
                for op in [Op::If, Op::Partition, Op::ThreeWay] {
                    run_case::<T>(ctx, sel, op, &c).unwrap_or_else(|e| panic!("{op:?} n = {n} code {code}: {e}"));
                }
            }
            // Unique: every item its own run (distinct), and one run of n.
            let distinct: Vec<T> = (0..n as i64).map(|i| T::of(3 * i + 1)).collect();
            let x = ctx.upload(&distinct).unwrap();
            let mut y = ctx.alloc::<T>(n).unwrap();
            y.poison().unwrap();
            assert_eq!(sel.unique(&x, &mut y).unwrap(), n);
            assert!(y.to_vec().unwrap().iter().zip(&distinct).all(|(a, b)| a.bits() == b.bits()), "n = {n}");
            let one = ctx.upload(&vec![T::of(7); n]).unwrap();
            y.poison().unwrap();
            assert_eq!(sel.unique(&one, &mut y).unwrap(), 1, "n = {n}");
            assert_eq!(y.to_vec().unwrap()[0].bits(), T::of(7).bits());
        }
    }
    each::<i32>(ctx, &sel);
    each::<f64>(ctx, &sel);
});

backend_test!(nans_satisfy_only_not_equal_and_each_starts_a_run, |ctx| {
    fn each<T: Item>(ctx: &Context) {
        let nan = T::nan().unwrap();
        let (one, two) = (T::of(2), T::of(4));
        let data = vec![nan, nan, one, nan, one, one, two, nan, T::of(0), T::of(0)];
        let x = ctx.upload(&data).unwrap();
        let mut y = ctx.alloc::<T>(data.len()).unwrap();
        for p in [
            Predicate::Less(two),
            Predicate::LessEqual(two),
            Predicate::Greater(one),
            Predicate::GreaterEqual(one),
            Predicate::Equal(one),
            Predicate::NotEqual(one),
            Predicate::Less(nan),
            Predicate::NotEqual(nan),
            Predicate::Equal(nan),
        ] {
            let k = ctx.select_if(&x, &mut y, p).unwrap();
            let want = cpu_select(&data, p);
            assert_eq!(k, want.len(), "{p:?}");
            let got: Vec<u64> = y.to_vec().unwrap()[..k].iter().map(|v| v.bits()).collect();
            assert_eq!(got, want.iter().map(|v| v.bits()).collect::<Vec<_>>(), "{p:?}");
        }
        assert_eq!(cpu_select(&data, Predicate::NotEqual(nan)).len(), data.len());
        // Runs: NaN, NaN (a new run: NaN != NaN), 2, NaN, 2 2, 4, NaN, 0 0.
        let k = ctx.unique(&x, &mut y).unwrap();
        assert_eq!(k, 8);
        let got: Vec<u64> = y.to_vec().unwrap()[..k].iter().map(|v| v.bits()).collect();
        let want: Vec<u64> = [nan, nan, one, nan, one, two, nan, T::of(0)].iter().map(|v| v.bits()).collect();
        assert_eq!(got, want);
        // -0.0 == 0.0: one run, its first item kept.
        let zeros = ctx.upload(&[T::of(0), T::of(0).neg(), T::of(0)]).unwrap();
        assert_eq!(ctx.unique(&zeros, &mut y).unwrap(), 1);
    }
    each::<f32>(ctx);
    each::<f64>(ctx);
});

backend_test!(outputs_may_be_views_into_larger_buffers, |ctx| {
    let data: Vec<u32> = (0..5000u32).map(|i| i.wrapping_mul(2_654_435_761) % 100).collect();
    let x = ctx.upload(&data).unwrap();
    let mut big = ctx.alloc::<u32>(12_000).unwrap();
    big.poison().unwrap();
    let p = Predicate::Less(30);
    let k = {
        let mut view = big.slice_mut(3..6000).unwrap();
        ctx.select_if(&x.slice(100..).unwrap(), &mut view, p).unwrap()
    };
    let want = cpu_select(&data[100..], p);
    assert_eq!(k, want.len());
    let got = big.to_vec().unwrap();
    assert!(got[..3].iter().all(|&v| v == u32::MAX));
    assert_eq!(&got[3..3 + k], &want[..]);
    assert!(got[3 + k..].iter().all(|&v| v == u32::MAX));
});

// ------------------------------------------------- scheduling, temp, API

/// Hundreds of tiles of blocks of 32 threads (a look-back window of 32
/// tiles), with few blocks resident and many, so the look-back crosses
/// many windows of unfinished predecessors; the three-way partition's
/// aggregate is a pair of counts (four status words per tile), and
/// unique_by_key gathers values.
#[test]
fn many_tiles_are_right_under_any_residency_and_schedule() {
    for (resident, seed) in [(1, 1u64), (3, 6), (8, 7), (48, 3), (96, 5)] {
        let ctx = Context::emulator_with(EmuConfig { resident_blocks: resident, seed, ..EmuConfig::default() });
        let sel = ctx.select().block_size(32);
        let tile = sel.tile_len::<i32>() as usize;
        let c = Case {
            n: 100 * tile - 5,
            seed,
            range: 1000,
            code: (seed as usize, seed as usize + 2),
            at: (500, 700),
            nan_one_in: 0,
            extra: 2,
            run: 3,
        };
        for op in [Op::If, Op::Partition, Op::ThreeWay, Op::Unique, Op::Flagged] {
            run_case::<i32>(&ctx, &sel, op, &c).unwrap_or_else(|e| panic!("{op:?} resident {resident}: {e}"));
        }
        let c = Case { n: 60 * sel.partition_tile_len::<f64>() as usize + 3, ..c };
        run_case::<f64>(&ctx, &sel, Op::ThreeWay, &c).unwrap_or_else(|e| panic!("f64 resident {resident}: {e}"));
        by_key_case::<u64, f64>(&ctx, &sel, &c).unwrap_or_else(|e| panic!("by key resident {resident}: {e}"));
    }
}

// Counts in device memory, one caller's temp for calls of sizes that grow
// and shrink and for every operation (each launch zeroes what the one
// before left in the other half), the one-liners and scans sharing the
// stream's status storage in between.
backend_test!(counts_stay_on_the_device_and_temp_storage_is_reused, |ctx| {
    let sel = ctx.select();
    let tile = sel.tile_len::<i32>() as usize;
    let max = 5 * tile + 7;
    let mut temp = sel.temp::<i32>(max).unwrap();
    assert!(temp.bytes() >= sel.temp_bytes::<i32>(max).unwrap());
    let mut count = ctx.alloc::<u64>(2).unwrap();
    let mut rng = Rng(0xC0DE);
    for (step, n) in [max, 1, tile, 7, 2 * tile + 1, max, 33].into_iter().enumerate() {
        let data: Vec<i32> = (0..n).map(|_| rng.below(100) as i32).collect();
        let x = ctx.upload(&data).unwrap();
        let (mut y, mut z, mut w) = (ctx.alloc(n).unwrap(), ctx.alloc(n).unwrap(), ctx.alloc(n).unwrap());
        let p = Predicate::GreaterEqual(40 + step as i32);
        count.poison().unwrap();
        sel.select_if_into(&x, &mut y, p, &mut count, Some(&mut temp)).unwrap();
        let want = cpu_select(&data, p);
        assert_eq!(count.to_vec().unwrap()[0], want.len() as u64, "select_if n = {n}");
        assert_eq!(&y.to_vec().unwrap()[..want.len()], &want[..]);

        let q = Predicate::Less(20);
        count.poison().unwrap();
        sel.partition_three_way_into(&x, &mut y, &mut z, &mut w, q, p, &mut count, Some(&mut temp)).unwrap();
        let want = cpu_three_way(&data, q, p);
        assert_eq!(count.to_vec().unwrap(), [want[0].len() as u64, want[1].len() as u64], "three-way n = {n}");
        assert_eq!(&w.to_vec().unwrap()[..want[2].len()], &want[2][..]);

        // The stream's storage: a scan, then the one-liners.
        let mut s = ctx.alloc::<i32>(n).unwrap();
        ctx.inclusive_scan(&x, &mut s).unwrap();
        assert_eq!(s.to_vec().unwrap()[n - 1], data.iter().sum::<i32>());
        assert_eq!(ctx.partition(&x, &mut y, p).unwrap(), cpu_select(&data, p).len());
        assert_eq!(y.to_vec().unwrap(), cpu_partition(&data, p).0);

        count.poison().unwrap();
        sel.unique_into(&x, &mut y, &mut count, Some(&mut temp)).unwrap();
        assert_eq!(count.to_vec().unwrap()[0], run_starts(&data).len() as u64, "unique n = {n}");
        let flags: Vec<u8> = data.iter().map(|&v| (v % 3 == 0) as u8).collect();
        count.poison().unwrap();
        sel.select_flagged_into(&x, &flags, &mut y, &mut count, Some(&mut temp)).unwrap();
        assert_eq!(count.to_vec().unwrap()[0], flags.iter().filter(|&&f| f != 0).count() as u64);
        let keys = ctx.upload(&data.iter().map(|&v| v as u32).collect::<Vec<_>>()).unwrap();
        let vals: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let (mut ko, mut vo) = (ctx.alloc::<u32>(n).unwrap(), ctx.alloc::<f32>(n).unwrap());
        count.poison().unwrap();
        sel.unique_by_key_into(&keys.slice(..).unwrap(), &vals, &mut ko, &mut vo, &mut count, Some(&mut temp)).unwrap();
        let starts = run_starts(&data);
        assert_eq!(count.to_vec().unwrap()[0], starts.len() as u64);
        assert_eq!(vo.to_vec().unwrap()[..starts.len()], starts.iter().map(|&i| i as f32).collect::<Vec<_>>());
    }
});

backend_test!(empty_input_selects_nothing_and_writes_zero_counts, |ctx| {
    let x = ctx.alloc::<f32>(0).unwrap();
    let mut y = ctx.alloc::<f32>(0).unwrap();
    assert_eq!(ctx.select_if(&x, &mut y, Predicate::Less(1.0)).unwrap(), 0);
    assert_eq!(ctx.partition(&x, &mut y, Predicate::Less(1.0)).unwrap(), 0);
    assert_eq!(ctx.unique(&x, &mut y).unwrap(), 0);
    let (mut b, mut c) = (ctx.alloc::<f32>(0).unwrap(), ctx.alloc::<f32>(0).unwrap());
    let p = Predicate::Less(1.0);
    assert_eq!(ctx.partition_three_way(&x, &mut y, &mut b, &mut c, p, p).unwrap(), (0, 0));
    let mut count = ctx.alloc::<u64>(2).unwrap();
    count.poison().unwrap();
    let sel = ctx.select();
    sel.partition_three_way_into(&x, &mut y, &mut b, &mut c, p, p, &mut count, None).unwrap();
    assert_eq!(count.to_vec().unwrap(), [0, 0]);
    count.poison().unwrap();
    sel.select_flagged_into(&x, &ctx.alloc::<u8>(0).unwrap(), &mut y, &mut count, None).unwrap();
    assert_eq!(count.to_vec().unwrap(), [0, u64::MAX]);
});

backend_test!(invalid_calls_are_typed_errors, |ctx| {
    let x = ctx.upload(&[1i32, 2, 3, 4]).unwrap();
    let mut short = ctx.alloc::<i32>(3).unwrap();
    let mut ok = ctx.alloc::<i32>(4).unwrap();
    let p = Predicate::Less(3);
    let mismatch = |r: gpuprim::Result<usize>| matches!(r, Err(Error::LengthMismatch { .. }));
    assert!(mismatch(ctx.select_if(&x, &mut short, p)));
    assert!(mismatch(ctx.partition(&x, &mut short, p)));
    assert!(mismatch(ctx.unique(&x, &mut short)));
    assert!(mismatch(ctx.select_flagged(&x, &[1u8, 0, 1], &mut ok)));
    assert!(mismatch(ctx.select_flagged(&x, &[1u8, 0, 1, 1, 1], &mut ok)));
    let mut ok2 = ctx.alloc::<i32>(4).unwrap();
    assert!(matches!(
        ctx.partition_three_way(&x, &mut ok, &mut ok2, &mut short, p, p),
        Err(Error::LengthMismatch { .. })
    ));
    let mut vo = ctx.alloc::<f32>(4).unwrap();
    assert!(mismatch(ctx.unique_by_key(&x, &[1.0f32, 2.0], &mut ok, &mut vo)));
    let mut vshort = ctx.alloc::<f32>(2).unwrap();
    assert!(mismatch(ctx.unique_by_key(&x, &[1.0f32; 4], &mut ok, &mut vshort)));
    // Counts: one word, two for three-way.
    let sel = ctx.select();
    let mut one = ctx.alloc::<u64>(1).unwrap();
    let mut none = ctx.alloc::<u64>(0).unwrap();
    let (mut b, mut c) = (ctx.alloc::<i32>(4).unwrap(), ctx.alloc::<i32>(4).unwrap());
    assert!(matches!(sel.select_if_into(&x, &mut ok, p, &mut none, None), Err(Error::LengthMismatch { .. })));
    assert!(matches!(
        sel.partition_three_way_into(&x, &mut ok, &mut b, &mut c, p, p, &mut one, None),
        Err(Error::LengthMismatch { .. })
    ));
    // Block sizes and types without kernels.
    assert!(matches!(sel.clone().block_size(48).select_if(&x, &mut ok, p), Err(Error::UnsupportedBlockSize { .. })));
    assert!(matches!(sel.clone().block_size(512).unique(&x, &mut ok), Err(Error::UnsupportedBlockSize { .. })));
    let h = ctx.upload(&[1i8, 2]).unwrap();
    let mut ho = ctx.alloc::<i8>(2).unwrap();
    assert!(matches!(ctx.select_if(&h, &mut ho, Predicate::Less(1)), Err(Error::Unsupported { .. })));
    let (mut ku, mut vi) = (ctx.alloc::<u32>(4).unwrap(), ctx.alloc::<i8>(4).unwrap());
    assert!(matches!(ctx.unique_by_key(&[1u32, 2, 3, 4], &[1i8; 4], &mut ku, &mut vi), Err(Error::Unsupported { .. })));
    // Temporary storage too small for the input.
    let mut temp = sel.temp::<i32>(10).unwrap();
    let big = ctx.alloc::<i32>(100_000).unwrap();
    let mut big_out = ctx.alloc::<i32>(100_000).unwrap();
    assert!(matches!(
        sel.select_if_into(&big, &mut big_out, p, &mut one, Some(&mut temp)),
        Err(Error::LengthMismatch { what: "select temporary storage (bytes)", .. })
    ));
    // Nothing was broken by the failed calls.
    assert_eq!(ctx.select_if(&x, &mut ok, p).unwrap(), 2);
    assert_eq!(ok.to_vec().unwrap()[..2], [1, 2]);
});

// ------------------------------------------------------------- GPU only

fn gpu(test: &str) -> Option<Context> {
    gpuprim_tests::context(BackendKind::Cuda, test)
}

/// More than 2^32 items (64-bit counts and offsets): a periodic i32 input,
/// so that what every operation writes has a closed form per period.
#[test]
fn more_than_2_32_items_are_selected_and_partitioned_exactly() {
    let Some(ctx) = gpu("select::more_than_2_32_items_are_selected_and_partitioned_exactly") else { return };
    let n: usize = (1 << 32) + (1 << 25) + 4099;
    const PERIOD: usize = 1009;
    let mut rng = Rng(0x5E1);
    // Values below 990 but for four per period: 1005 of 1009 selected, so
    // the count passes 2^32.
    let mut pattern: Vec<i32> = (0..PERIOD).map(|_| rng.below(990) as i32).collect();
    for i in [100, 500, 777, 1000] {
        pattern[i] = 995;
    }
    let host: Vec<i32> = (0..n).map(|i| pattern[i % PERIOD]).collect();
    let x = ctx.upload(&host).unwrap();
    drop(host);
    let mut y = ctx.alloc::<i32>(n).unwrap();
    // Selecting nearly everything: the count passes 2^32.
    let p = Predicate::Less(990);
    let sel_pattern: Vec<usize> = (0..PERIOD).filter(|&i| pattern[i] < 990).collect();
    let periods = n / PERIOD;
    let tail = (0..n % PERIOD).filter(|&i| pattern[i] < 990).count();
    let want = periods * sel_pattern.len() + tail;
    assert!(want > 1 << 32);
    let k = ctx.select_if(&x, &mut y, p).unwrap();
    assert_eq!(k, want);
    let mut got = vec![0i32; n];
    y.copy_to_host(&mut got).unwrap();
    for (j, &g) in got[..k].iter().enumerate() {
        let i = sel_pattern[j % sel_pattern.len()];
        assert_eq!(g, pattern[i], "select_if at {j}");
    }
    // Partition: the rejected at the end, reversed.
    let k = ctx.partition(&x, &mut y, p).unwrap();
    assert_eq!(k, want);
    y.copy_to_host(&mut got).unwrap();
    let rejected: Vec<i32> = (0..n).rev().map(|i| pattern[i % PERIOD]).filter(|&v| v >= 990).take(5000).collect();
    assert_eq!(&got[k..k + rejected.len().min(n - k)], &rejected[..rejected.len().min(n - k)]);
    assert!(got[k..].iter().all(|&v| v >= 990));
    // Unique of runs of one: every item differs from its neighbour unless
    // the pattern repeats a value.
    let k = ctx.unique(&x, &mut y).unwrap();
    // Item i starts a run where its residue r = i % PERIOD differs from
    // r - 1's (r > 0), or, for r = 0 and i > 0, where the pattern's first
    // and last values differ.
    let of_residue = |r: usize| periods + (r < n % PERIOD) as usize;
    let mut want = 1 + (of_residue(0) - 1) * (pattern[0] != pattern[PERIOD - 1]) as usize;
    for r in 1..PERIOD {
        want += of_residue(r) * (pattern[r] != pattern[r - 1]) as usize;
    }
    assert_eq!(k, want);
}

/// A hundred look-back runs at sizes where thousands of blocks wait on
/// each other, checked exactly every time.
#[test]
fn three_way_partitions_never_fail_in_a_hundred_large_runs() {
    let Some(ctx) = gpu("select::three_way_partitions_never_fail_in_a_hundred_large_runs") else { return };
    let n = (1 << 24) + 77;
    let mut rng = Rng(0xA11);
    let data: Vec<i32> = (0..n).map(|_| rng.below(1000) as i32).collect();
    let x = ctx.upload(&data).unwrap();
    let mut y = ctx.alloc::<i32>(n).unwrap();
    let sel = ctx.select();
    let mut temp = sel.temp::<i32>(n).unwrap();
    let mut count = ctx.alloc::<u64>(2).unwrap();
    let (mut b, mut r) = (ctx.alloc::<i32>(n).unwrap(), ctx.alloc::<i32>(n).unwrap());
    let runs: usize = std::env::var("GPUPRIM_SELECT_STRESS_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(100);
    for run in 0..runs {
        let p = Predicate::Less((run * 5) as i32 % 1001);
        let q = Predicate::Less(500);
        sel.partition_three_way_into(&x, &mut y, &mut b, &mut r, p, q, &mut count, Some(&mut temp)).unwrap();
        let want = cpu_three_way(&data, p, q);
        assert_eq!(count.to_vec().unwrap(), [want[0].len() as u64, want[1].len() as u64], "run {run}");
        assert!(y.to_vec().unwrap()[..want[0].len()] == want[0][..], "run {run}");
        assert!(r.to_vec().unwrap()[..want[2].len()] == want[2][..], "run {run}");
    }
}
