//! Every public operation once, at moderate sizes, for every element type
//! it supports, each result checked against the CPU. Meant to run under
//! NVIDIA's compute-sanitizer:
//!
//! ```text
//! compute-sanitizer --tool memcheck  --error-exitcode 1 ./sanitize
//! compute-sanitizer --tool racecheck --error-exitcode 1 ./sanitize
//! compute-sanitizer --tool synccheck --error-exitcode 1 ./sanitize
//! ```
//!
//! (`cargo xtask gpu-bundle` ships it; `run.sh sanitize` runs all three.)
//! Without a GPU it runs on the CPU emulator, which has its own race and
//! bounds checks. Exits with status 1 if any check fails.
//!
//! To cover a new operation: write a `fn check_x<T: Elem>(ctx, n, seed)`
//! and add one `op!` line to [`ops`] listing the types it supports.
//!
//! Scans: every [`ScanAlgorithm`] at every block size its kernels are
//! instantiated for (read from the kernel table), for every operator and
//! element type in [`scan_kinds`], at one tile and at several, each result
//! checked. A scan kernel in the table that no check launches is a failure,
//! so a new operator, type or block size cannot go uncovered: add it to
//! [`scan_kinds`] (a `scan_op!` line, and a [`ScanCheck`] impl if the
//! operator is new).
//!
//! On an H200 the whole program takes about 1 s, 2 minutes under racecheck
//! and seconds under memcheck and synccheck; on the emulator about a minute.

use gpuprim::reduce::{BLOCK_SIZES, Finish, Float, ReduceAlgorithm, Reducer};
use gpuprim::scan::{Affine, BitAnd, BitOr, BitXor, Compose, Max, Min, Monoid, Product, Ring, ScanItem, ScanOp, Sum};
use gpuprim::segmented::{ArgMin as SegArgMin, Segmented, SegmentedOp, Sum as SegSum};
use gpuprim::{BackendKind, Context, DeviceBuffer, DeviceRepr, Predicate, Scalar, Scan, ScanAlgorithm, ScanTemp};
use gpuprim_kernels::ops::{Element, Integer};
use std::collections::BTreeSet;
use std::process::ExitCode;

/// Input sizes: not a multiple of any block or tile size, and a smaller one.
const SIZES: [usize; 2] = [(1 << 16) + 3, 1000];

// ---------------------------------------------------------------------------
// Element types
// ---------------------------------------------------------------------------

/// What the checks need of an element type.
// `Acc = Self`: the types here reduce in themselves, so sums come back as `Self`.
trait Elem: Scalar<Acc = Self> + PartialEq + PartialOrd {
    /// Integers compare exactly (wrapping arithmetic), floats within a
    /// rounding bound of an f64 reference.
    const EXACT: bool;
    const EPS: f64;
    /// A value made from 64 random bits (floats: in [-1, 1)).
    fn from_bits64(h: u64) -> Self;
    /// The value nearest `v` (integers: truncated).
    fn from_f64(v: f64) -> Self;
    /// A value for products: odd integers (the wrapping product stays
    /// non-zero), floats within 1/256 of 1 (no underflow).
    fn for_product(h: u64) -> Self;
    fn to_f64(self) -> f64;
    /// The value's bits, zero-extended.
    fn bits(self) -> u64;
    /// Wrapping for integers.
    fn wadd(self, other: Self) -> Self;
    /// Wrapping for integers.
    fn wmul(self, other: Self) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const EXACT: bool = true;
            const EPS: f64 = 0.0;
            fn from_bits64(h: u64) -> Self {
                h as $t
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn for_product(h: u64) -> Self {
                (h | 1) as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn bits(self) -> u64 {
                self as u64 & (u64::MAX >> (64 - 8 * std::mem::size_of::<$t>()))
            }
            fn wadd(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            fn wmul(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
        }
    )*};
}
int_elem!(i32, u32, i64, u64);

macro_rules! float_elem {
    ($($t:ty, $bits:ty);*) => {$(
        impl Elem for $t {
            const EXACT: bool = false;
            const EPS: f64 = <$t>::EPSILON as f64;
            fn from_bits64(h: u64) -> Self {
                ((h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as $t
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn for_product(h: u64) -> Self {
                (1.0 + ((h >> 11) as f64 / (1u64 << 53) as f64 - 0.5) / 128.0) as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            fn wadd(self, other: Self) -> Self {
                self + other
            }
            fn wmul(self, other: Self) -> Self {
                self * other
            }
        }
    )*};
}
float_elem!(f32, u32; f64, u64);

/// splitmix64 (Steele, Lea, Flood 2014).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn draw<T>(n: usize, seed: u64, f: fn(u64) -> T) -> Vec<T> {
    (0..n as u64).map(|i| f(splitmix64(seed.wrapping_mul(0x1_0000_0001) ^ i))).collect()
}

fn data<T: Elem>(n: usize, seed: u64) -> Vec<T> {
    draw(n, seed, T::from_bits64)
}

// ---------------------------------------------------------------------------
// References
// ---------------------------------------------------------------------------

type Res = Result<(), String>;

fn e(err: gpuprim::Error) -> String {
    err.to_string()
}

/// Rounding allowance of a float sum of `n` terms, in units of
/// `eps * sum |terms|`, for summation trees in which no term passes through
/// more than `2 sqrt(n) + log2(n) + 16` additions.
fn depth(n: usize) -> f64 {
    let n = n.max(1) as f64;
    2.0 * n.sqrt() + n.log2() + 16.0
}

fn near(got: f64, want: f64, bound: f64) -> Res {
    let off = (got - want).abs();
    if off <= bound + 1e-300 {
        Ok(())
    } else {
        Err(format!("got {got:e}, want {want:e} ± {bound:.2e} (off by {off:.2e})"))
    }
}

fn exact<T: Elem>(got: T, want: T) -> Res {
    if got == want { Ok(()) } else { Err(format!("got {got:?}, want {want:?}")) }
}

/// `got` against the sum of `terms`: wrapping-exact for integers; within
/// the rounding bound for floats (`extra_eps`: relative error already in
/// each term, e.g. 1 for rounded products).
fn check_total<T: Elem>(got: T, terms: impl Iterator<Item = (T, f64)>, extra_eps: f64) -> Res {
    if T::EXACT {
        return exact(got, terms.fold(T::default(), |a, (t, _)| a.wadd(t)));
    }
    let (mut want, mut abs) = (0.0, 0.0);
    let mut n = 0;
    for (_, t) in terms {
        want += t;
        abs += t.abs();
        n += 1;
    }
    near(got.to_f64(), want, T::EPS * abs * (depth(n) + extra_eps))
}

fn same_bits<T: Elem>(what: &str, got: &[T], want: impl Fn(usize) -> u64) -> Res {
    match got.iter().enumerate().find(|&(i, g)| g.bits() != want(i)) {
        None => Ok(()),
        Some((i, g)) => Err(format!("{what}: element {i} has bits {:#x}, want {:#x}", g.bits(), want(i))),
    }
}

/// First index of the smallest (`largest = false`) or largest value.
fn arg_reference<T: Elem>(xs: &[T], largest: bool) -> Option<(usize, T)> {
    let mut best: Option<(usize, T)> = None;
    for (i, &x) in xs.iter().enumerate() {
        let better = match best {
            None => true,
            Some((_, b)) => (largest && x > b) || (!largest && x < b),
        };
        if better {
            best = Some((i, x));
        }
    }
    best
}

// ---------------------------------------------------------------------------
// Checks: one function per operation
// ---------------------------------------------------------------------------

/// `upload` then `to_vec` gives the data back.
fn check_roundtrip<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    let buf = ctx.upload(&xs).map_err(e)?;
    same_bits("download", &buf.to_vec().map_err(e)?, |i| xs[i].bits())
}

/// `copy` between device buffers.
fn check_copy<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    let src = ctx.upload(&xs).map_err(e)?;
    let mut dst = ctx.alloc::<T>(n).map_err(e)?;
    dst.poison().map_err(e)?;
    ctx.copy(&src, &mut dst).map_err(e)?;
    same_bits("copy", &dst.to_vec().map_err(e)?, |i| xs[i].bits())
}

/// `poison` sets every bit, `zero` clears every bit.
fn check_fill<T: Elem>(ctx: &Context, n: usize, _seed: u64) -> Res {
    let mut buf = ctx.alloc::<T>(n).map_err(e)?;
    buf.poison().map_err(e)?;
    let ones = u64::MAX >> (64 - 8 * std::mem::size_of::<T>());
    same_bits("poison", &buf.to_vec().map_err(e)?, |_| ones)?;
    buf.zero().map_err(e)?;
    same_bits("zero", &buf.to_vec().map_err(e)?, |_| 0)
}

fn sum_terms<T: Elem>(xs: &[T]) -> impl Iterator<Item = (T, f64)> + '_ {
    xs.iter().map(|&x| (x, x.to_f64()))
}

/// `Context::sum` of a device buffer.
fn check_sum<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    let buf = ctx.upload(&xs).map_err(e)?;
    check_total(ctx.sum(&buf).map_err(e)?, sum_terms(&xs), 0.0)
}

/// `Context::sum` of a host slice (uploaded by the call).
fn check_sum_host<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    check_total(ctx.sum(&xs[..]).map_err(e)?, sum_terms(&xs), 0.0)
}

/// Reducer settings of the per-kernel checks.
#[derive(Clone, Copy)]
struct Settings {
    algorithm: ReduceAlgorithm,
    finish: Finish,
    block: u32,
}

impl Settings {
    fn reducer(self, ctx: &Context) -> Reducer<'_> {
        ctx.reducer()
            .algorithm(self.algorithm)
            .finish(self.finish)
            .block_size(self.block)
            // Atomic float combines are accepted (not deterministic).
            .deterministic(self.finish != Finish::Atomic)
    }
}

/// `sum_into` with the given reducer settings, into a poisoned output.
fn sum_into_with<T: Elem>(ctx: &Context, n: usize, seed: u64, settings: Settings) -> Res {
    let r = settings.reducer(ctx);
    let xs = data::<T>(n, seed);
    let buf = ctx.upload(&xs).map_err(e)?;
    let mut out = ctx.alloc::<T>(1).map_err(e)?;
    out.poison().map_err(e)?;
    r.sum_into(&buf, &mut out).map_err(e)?;
    ctx.synchronize().map_err(e)?;
    check_total(out.to_vec().map_err(e)?[0], sum_terms(&xs), 0.0)
}

/// `Context::sum_into` (the default reducer).
fn check_sum_into<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    let buf = ctx.upload(&xs).map_err(e)?;
    let mut out = ctx.alloc::<T>(1).map_err(e)?;
    out.poison().map_err(e)?;
    ctx.sum_into(&buf, &mut out).map_err(e)?;
    ctx.synchronize().map_err(e)?;
    check_total(out.to_vec().map_err(e)?[0], sum_terms(&xs), 0.0)
}

/// `Reducer::sum_with_temp`, twice with the same temporary storage.
fn check_sum_with_temp<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let r = ctx.reducer();
    let mut temp = r.temp::<T>(n).map_err(e)?;
    let mut out = ctx.alloc::<T>(1).map_err(e)?;
    for k in 0..2 {
        let xs = data::<T>(n, seed + k);
        let buf = ctx.upload(&xs).map_err(e)?;
        out.poison().map_err(e)?;
        r.sum_with_temp(&buf, &mut out, &mut temp).map_err(e)?;
        check_total(out.to_vec().map_err(e)?[0], sum_terms(&xs), 0.0).map_err(|m| format!("call {k}: {m}"))?;
    }
    Ok(())
}

fn check_product<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = draw(n, seed, T::for_product);
    let got = ctx.product(&xs[..]).map_err(e)?;
    if T::EXACT {
        return exact(got, xs.iter().fold(<T as Element>::ONE, |a, &b| a.wmul(b)));
    }
    // Each of the n - 1 multiplications rounds once (relative eps).
    let want: f64 = xs.iter().map(|&x| x.to_f64()).product();
    near(got.to_f64(), want, want.abs() * T::EPS * (n as f64 + 2.0))
}

fn check_min<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    let want = arg_reference(&xs, false).map(|p| p.1).unwrap_or_default();
    exact(ctx.min(&xs[..]).map_err(e)?, want)
}

fn check_max<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    let want = arg_reference(&xs, true).map(|p| p.1).unwrap_or_default();
    exact(ctx.max(&xs[..]).map_err(e)?, want)
}

/// Few distinct values, so that ties (first index wins) are exercised.
fn tie_data<T: Elem>(n: usize, seed: u64) -> Vec<T> {
    draw(n, seed, |h| T::from_bits64(h % 7 * 0x0123_4567_89ab_cdef))
}

fn check_arg<T: Elem>(ctx: &Context, n: usize, seed: u64, largest: bool) -> Res {
    for xs in [data::<T>(n, seed), tie_data::<T>(n, seed)] {
        let got = if largest { ctx.argmax(&xs[..]) } else { ctx.argmin(&xs[..]) }.map_err(e)?;
        let want = arg_reference(&xs, largest);
        if got.map(|(i, v)| (i, v.bits())) != want.map(|(i, v)| (i, v.bits())) {
            return Err(format!("got {got:?}, want {want:?}"));
        }
    }
    Ok(())
}

fn check_argmin<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    check_arg::<T>(ctx, n, seed, false)
}

fn check_argmax<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    check_arg::<T>(ctx, n, seed, true)
}

/// Argmin and argmax in one pass (`reduce_map`, 32-byte accumulators),
/// with every finish that has partials, and min-max.
fn check_argmin_argmax<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res
where
    gpuprim::reduce::Extremes<T>: DeviceRepr,
    gpuprim::reduce::ArgExtremes<T::Wide>: DeviceRepr,
{
    for xs in [data::<T>(n, seed), tie_data::<T>(n, seed)] {
        let want = arg_reference(&xs, false).zip(arg_reference(&xs, true));
        for fin in [Finish::LastBlock, Finish::Relaunch, Finish::Host] {
            let r = ctx.reducer().finish(fin);
            let got = r.argmin_argmax(&xs[..]).map_err(e)?;
            let bits = |v: Option<((usize, T), (usize, T))>| v.map(|((i, a), (j, b))| (i, a.bits(), j, b.bits()));
            if bits(got) != bits(want) {
                return Err(format!("{fin:?}: got {got:?}, want {want:?}"));
            }
            let mm = r.min_max(&xs[..]).map_err(e)?;
            if mm.map(|(a, b)| (a.bits(), b.bits())) != want.map(|((_, a), (_, b))| (a.bits(), b.bits())) {
                return Err(format!("min_max {fin:?}: got {mm:?}, want {want:?}"));
            }
        }
    }
    Ok(())
}

fn check_dot<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let (x, y) = (data::<T>(n, seed), data::<T>(n, seed ^ 0xd07));
    let (dx, dy) = (ctx.upload(&x).map_err(e)?, ctx.upload(&y).map_err(e)?);
    let terms = x.iter().zip(&y).map(|(&a, &b)| (a.wmul(b), a.to_f64() * b.to_f64()));
    check_total(ctx.dot(&dx, &dy).map_err(e)?, terms, 1.0)
}

fn check_sum_squares<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    let terms = xs.iter().map(|&a| (a.wmul(a), a.to_f64() * a.to_f64()));
    check_total(ctx.reducer().sum_squares(&xs[..]).map_err(e)?, terms, 1.0)
}

fn check_bits<T: Elem + Integer>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    let (mut and, mut or, mut xor) = (u64::MAX >> (64 - 8 * std::mem::size_of::<T>()), 0u64, 0u64);
    for &x in &xs {
        (and, or, xor) = (and & x.bits(), or | x.bits(), xor ^ x.bits());
    }
    let r = ctx.reducer();
    for (name, got, want) in [
        ("and", r.and(&xs[..]).map_err(e)?, and),
        ("or", r.or(&xs[..]).map_err(e)?, or),
        ("xor", r.xor(&xs[..]).map_err(e)?, xor),
    ] {
        if got.bits() != want {
            return Err(format!("{name}: got {:#x}, want {want:#x}", got.bits()));
        }
    }
    Ok(())
}

/// norm1, norm2 and rms (each well conditioned: relative bounds).
fn check_norms<T: Elem + Float>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    let abs: f64 = xs.iter().map(|&x| x.to_f64().abs()).sum();
    let sq: f64 = xs.iter().map(|&x| x.to_f64() * x.to_f64()).sum();
    let rel = T::EPS * (depth(n) + 2.0);
    let rms = (sq / n.max(1) as f64).sqrt();
    near(ctx.norm1(&xs[..]).map_err(e)?.to_f64(), abs, abs * rel).map_err(|m| format!("norm1: {m}"))?;
    near(ctx.norm2(&xs[..]).map_err(e)?.to_f64(), sq.sqrt(), sq.sqrt() * rel).map_err(|m| format!("norm2: {m}"))?;
    near(ctx.rms(&xs[..]).map_err(e)?.to_f64(), rms, rms * rel).map_err(|m| format!("rms: {m}"))
}

// ---------------------------------------------------------------------------
// Select, by key, segmented
// ---------------------------------------------------------------------------

fn same_list<T: Elem>(what: &str, got: &[T], want: &[T]) -> Res {
    if got.len() != want.len() {
        return Err(format!("{what}: {} items, want {}", got.len(), want.len()));
    }
    same_bits(what, got, |i| want[i].bits())
}

/// `select_if`, `select_flagged` and `partition` with one comparison,
/// `partition_three_way` with two, `unique` of runs, and `unique_by_key` with keys in runs and all
/// distinct (its two ways of writing out: a warp's ring of sparse kept
/// items, and whole columns).
fn check_select<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    // One of the items as the threshold: some fraction selected, any type.
    let t = xs[n / 2];
    let input = ctx.upload(&xs).map_err(e)?;
    let mut out = ctx.alloc::<T>(n).map_err(e)?;
    let kept = ctx.select_if(&input, &mut out, Predicate::Less(t)).map_err(e)?;
    let want: Vec<T> = xs.iter().copied().filter(|&x| Predicate::Less(t).holds(x)).collect();
    same_list("select_if", &out.to_vec().map_err(e)?[..kept], &want)?;
    let flags: Vec<u8> = xs.iter().map(|&x| Predicate::Less(t).holds(x) as u8).collect();
    let flags = ctx.upload(&flags).map_err(e)?;
    let flagged = ctx.select_flagged(&input, &flags, &mut out).map_err(e)?;
    same_list("select_flagged", &out.to_vec().map_err(e)?[..flagged], &want)?;
    for keys in [run_keys(n, seed), (0..n as u64).map(|i| 3 * i).collect()] {
        let starts: Vec<usize> = (0..n).filter(|&i| i == 0 || keys[i] != keys[i - 1]).collect();
        let dk = ctx.upload(&keys).map_err(e)?;
        let (mut ko, mut vo) = (ctx.alloc::<u64>(n).map_err(e)?, ctx.alloc::<T>(n).map_err(e)?);
        let got = ctx.unique_by_key(&dk, &input, &mut ko, &mut vo).map_err(e)?;
        if got != starts.len() {
            return Err(format!("unique_by_key: {got} runs, want {}", starts.len()));
        }
        let ko = ko.to_vec().map_err(e)?;
        if starts.iter().zip(&ko).any(|(&i, &k)| keys[i] != k) {
            return Err("unique_by_key: keys differ from the CPU's".into());
        }
        let want_v: Vec<T> = starts.iter().map(|&i| xs[i]).collect();
        same_list("unique_by_key values", &vo.to_vec().map_err(e)?[..got], &want_v)?;
    }
    let front = ctx.partition(&input, &mut out, Predicate::Less(t)).map_err(e)?;
    let mut want_all = want;
    want_all.extend(xs.iter().rev().copied().filter(|&x| !Predicate::Less(t).holds(x)));
    if front != kept {
        return Err(format!("partition: {front} in front, want {kept}"));
    }
    same_list("partition", &out.to_vec().map_err(e)?, &want_all)?;
    // Three ways: below the lower of two items, below the higher, the rest.
    let (lo, hi) = if xs[n / 3] < t { (xs[n / 3], t) } else { (t, xs[n / 3]) };
    let (p1, p2) = (Predicate::Less(lo), Predicate::Less(hi));
    let (mut o2, mut o3) = (ctx.alloc::<T>(n).map_err(e)?, ctx.alloc::<T>(n).map_err(e)?);
    let (a, b) = ctx.partition_three_way(&input, &mut out, &mut o2, &mut o3, p1, p2).map_err(e)?;
    let class = |x: T| {
        if p1.holds(x) {
            0
        } else if p2.holds(x) {
            1
        } else {
            2
        }
    };
    let ways: Vec<Vec<T>> = (0..3).map(|c| xs.iter().copied().filter(|&x| class(x) == c).collect()).collect();
    if (a, b) != (ways[0].len(), ways[1].len()) {
        return Err(format!("partition_three_way: {a} and {b}, want {} and {}", ways[0].len(), ways[1].len()));
    }
    same_list("partition_three_way first", &out.to_vec().map_err(e)?[..a], &ways[0])?;
    same_list("partition_three_way second", &o2.to_vec().map_err(e)?[..b], &ways[1])?;
    same_list("partition_three_way rest", &o3.to_vec().map_err(e)?[..n - a - b], &ways[2])?;
    // Runs of 1 to 8 equal items.
    let runs: Vec<T> = (0..n).map(|i| xs[i - i % (1 + (splitmix64(i as u64 / 8) % 8) as usize)]).collect();
    let input = ctx.upload(&runs).map_err(e)?;
    let distinct = ctx.unique(&input, &mut out).map_err(e)?;
    let mut want: Vec<T> = runs.clone();
    want.dedup_by(|a, b| a.bits() == b.bits());
    same_list("unique", &out.to_vec().map_err(e)?[..distinct], &want)
}

/// Keys with runs of 1 to 16 (`u64`), and their run starts.
fn run_keys(n: usize, seed: u64) -> Vec<u64> {
    let (mut key, mut left) = (seed % 1000, 0u64);
    (0..n as u64)
        .map(|i| {
            if left == 0 {
                key += 1 + splitmix64(seed ^ i) % 3;
                left = 1 + splitmix64(seed.wrapping_add(i)) % 16;
            }
            left -= 1;
            key
        })
        .collect()
}

/// `reduce_by_key` (sum), `run_length_encode`, `non_trivial_runs` and the
/// inclusive sum scan by key, against the CPU.
fn check_by_key<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let keys = run_keys(n, seed);
    let xs = data::<T>(n, seed ^ 0xB1);
    let (dk, dv) = (ctx.upload(&keys).map_err(e)?, ctx.upload(&xs).map_err(e)?);
    let starts: Vec<usize> = (0..n).filter(|&i| i == 0 || keys[i] != keys[i - 1]).chain([n]).collect();
    let runs = starts.len() - 1;
    let (mut unique, mut sums) = (ctx.alloc::<u64>(n).map_err(e)?, ctx.alloc::<T>(n).map_err(e)?);
    let got = ctx.reduce_by_key(&dk, &dv, &mut unique, &mut sums, Sum).map_err(e)?;
    if got != runs {
        return Err(format!("reduce_by_key: {got} runs, want {runs}"));
    }
    let (u, v) = (unique.to_vec().map_err(e)?, sums.to_vec().map_err(e)?);
    for r in 0..runs {
        let run = &xs[starts[r]..starts[r + 1]];
        if u[r] != keys[starts[r]] {
            return Err(format!("reduce_by_key: run {r} has key {}, want {}", u[r], keys[starts[r]]));
        }
        check_total(v[r], sum_terms(run), 0.0).map_err(|m| format!("reduce_by_key run {r}: {m}"))?;
    }
    let mut lengths = ctx.alloc::<u32>(n).map_err(e)?;
    let got = ctx.run_length_encode(&dk, &mut unique, &mut lengths).map_err(e)?;
    let l = lengths.to_vec().map_err(e)?;
    if got != runs || (0..runs).any(|r| l[r] as usize != starts[r + 1] - starts[r]) {
        return Err(format!("run_length_encode: {got} runs or their lengths differ from the CPU's {runs}"));
    }
    let (mut offsets, mut lens) = (ctx.alloc::<u32>(n).map_err(e)?, ctx.alloc::<u32>(n).map_err(e)?);
    let got = ctx.non_trivial_runs(&dk, &mut offsets, &mut lens).map_err(e)?;
    let want: Vec<(u32, u32)> = (0..runs)
        .filter(|&r| starts[r + 1] - starts[r] > 1)
        .map(|r| (starts[r] as u32, (starts[r + 1] - starts[r]) as u32))
        .collect();
    let (o, l) = (offsets.to_vec().map_err(e)?, lens.to_vec().map_err(e)?);
    if got != want.len() || (0..got).any(|k| (o[k], l[k]) != want[k]) {
        return Err(format!(
            "non_trivial_runs: {got} runs or their offsets/lengths differ from the CPU's {}",
            want.len()
        ));
    }
    let mut scanned = ctx.alloc::<T>(n).map_err(e)?;
    ctx.inclusive_scan_by_key(&dk, &dv, &mut scanned, Sum).map_err(e)?;
    let got = scanned.to_vec().map_err(e)?;
    for r in 0..runs {
        for i in starts[r]..starts[r + 1] {
            check_total(got[i], sum_terms(&xs[starts[r]..=i]), 0.0).map_err(|m| format!("scan_by_key at {i}: {m}"))?;
        }
    }
    Ok(())
}

/// `segmented_reduce` (sum) over CSR offsets: empty segments, segments
/// inside one tile and across many.
fn check_segmented<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs = data::<T>(n, seed);
    let input = ctx.upload(&xs).map_err(e)?;
    for (offsets, how, seg) in segmented_cases(ctx, n, seed) {
        offsets_sums(ctx, &seg, &input, &xs, &offsets, how)?;
    }
    // Fixed lengths: 7 through the flat kernel, 512 through the ranges
    // kernel.
    for len in [7usize, 512] {
        let segments = n.div_ceil(len);
        let mut out = ctx.alloc::<T>(segments).map_err(e)?;
        ctx.segmented_reduce_fixed(&input, len, &mut out, SegSum).map_err(e)?;
        let got = out.to_vec().map_err(e)?;
        for s in 0..segments {
            let part = &xs[s * len..Ord::min((s + 1) * len, n)];
            check_total(got[s], sum_terms(part), 0.0)
                .map_err(|m| format!("segmented_reduce_fixed({len}) segment {s}: {m}"))?;
        }
    }
    // Fixed lengths of 16 through the ranges kernel, enough of them that
    // its warps take 32 a lane each: a warp's 32 segments lie in one
    // window of its shared memory, staged there with coalesced loads.
    {
        let (big, len) = (1usize << 22, 16usize);
        let xs = data::<T>(big, seed ^ 16);
        let input = ctx.upload(&xs).map_err(e)?;
        let segments = big.div_ceil(len);
        let mut out = ctx.alloc::<T>(segments).map_err(e)?;
        ctx.segmented().route_to_ranges(true).reduce_fixed(&input, len, &mut out, SegSum).map_err(e)?;
        let got = out.to_vec().map_err(e)?;
        for s in 0..segments {
            check_total(got[s], sum_terms(&xs[s * len..(s + 1) * len]), 0.0)
                .map_err(|m| format!("segmented_reduce_fixed({len}) through the ranges kernel, segment {s}: {m}"))?;
        }
    }
    // CSR offsets short on average (argmin takes them to the ranges
    // kernel's windows below; sums stay on the short tile kernel).
    let (short_xs, short_offsets) = window_case::<T>(seed);
    let short_input = ctx.upload(&short_xs).map_err(e)?;
    offsets_sums(ctx, &ctx.segmented(), &short_input, &short_xs, &short_offsets, ", short on average,")?;
    // Begin/end pairs (mixed segments, in reverse order): a warp or a lane
    // a pair, each pair cut into parts joined by a second launch, and the
    // pairs longer than 64 listed in a slot table (slots of 32, shared by
    // all the warps of a second launch; a table of 40 slots fills up), and
    // the chunked path (chunks of 64).
    let offsets = segment_offsets(n, seed);
    let segments = offsets.len() - 1;
    let begins: Vec<u64> = (0..segments).rev().map(|s| offsets[s]).collect();
    let ends: Vec<u64> = (0..segments).rev().map(|s| offsets[s + 1]).collect();
    let slotted = ctx.segmented().ranges_long(64, 32);
    for (how, seg) in [
        ("", ctx.segmented()),
        (" in parts", ctx.segmented().ranges_parts(6)),
        (" in slots", slotted.clone()),
        (" in a full table of slots", slotted.ranges_table_cap(40)),
        (" through the chunked path", ctx.segmented().chunked(true).chunk_lens(64, 16)),
    ] {
        let mut out = ctx.alloc::<T>(segments).map_err(e)?;
        seg.reduce_ranges(&input, &begins[..], &ends[..], &mut out, SegSum).map_err(e)?;
        let got = out.to_vec().map_err(e)?;
        for k in 0..segments {
            let part = &xs[begins[k] as usize..ends[k] as usize];
            check_total(got[k], sum_terms(part), 0.0)
                .map_err(|m| format!("segmented_reduce_ranges{how} pair {k}: {m}"))?;
        }
    }
    Ok(())
}

/// Segmented argmin over the same kind of offsets (its kernels run at 40
/// registers with a smaller boundary window, so tiles of segments shorter
/// than 8 search the offsets), on data with repeated values so that ties
/// keep the first index.
fn check_segmented_argmin<T: Elem>(ctx: &Context, n: usize, seed: u64) -> Res {
    let xs: Vec<T> = (0..n).map(|i| T::from_f64((splitmix64(seed ^ i as u64) % 64) as f64)).collect();
    let input = ctx.upload(&xs).map_err(e)?;
    for (offsets, how, seg) in segmented_cases(ctx, n, seed) {
        offsets_argmins(ctx, &seg, &input, &xs, &offsets, how)?;
    }
    // Short on average: the ranges kernel's windows by default.
    let (xs, offsets) = window_case::<T>(seed);
    let xs: Vec<T> = xs.iter().map(|x| T::from_f64((x.bits() % 64) as f64)).collect();
    let input = ctx.upload(&xs).map_err(e)?;
    offsets_argmins(ctx, &ctx.segmented(), &input, &xs, &offsets, ", short on average,")
}

/// `seg`'s reduction with `op` of `input` over CSR `offsets` (uploaded
/// here), read back: one result a segment.
fn reduce_offsets<T: Elem, Op: SegmentedOp<T>>(
    ctx: &Context,
    seg: &Segmented<'_>,
    input: &DeviceBuffer<T>,
    offsets: &[u64],
    op: Op,
) -> Result<Vec<Op::Out>, String> {
    let offs = ctx.upload(offsets).map_err(e)?;
    let mut out = ctx.alloc::<Op::Out>(offsets.len() - 1).map_err(e)?;
    seg.reduce(input, &offs, &mut out, op).map_err(e)?;
    out.to_vec().map_err(e)
}

/// `seg`'s sums of `xs` (on the device as `input`) over CSR `offsets`,
/// each checked against the CPU; `how` names the case in an error.
fn offsets_sums<T: Elem>(
    ctx: &Context,
    seg: &Segmented<'_>,
    input: &DeviceBuffer<T>,
    xs: &[T],
    offsets: &[u64],
    how: &str,
) -> Res {
    let got = reduce_offsets(ctx, seg, input, offsets, SegSum)?;
    for s in 0..got.len() {
        let part = &xs[offsets[s] as usize..offsets[s + 1] as usize];
        check_total(got[s], sum_terms(part), 0.0).map_err(|m| format!("segmented_reduce{how} segment {s}: {m}"))?;
    }
    Ok(())
}

/// `seg`'s argmin of `xs` (on the device as `input`) over CSR `offsets`:
/// each the first smallest element's index, `u64::MAX` for an empty
/// segment; `how` names the case in an error.
fn offsets_argmins<T: Elem>(
    ctx: &Context,
    seg: &Segmented<'_>,
    input: &DeviceBuffer<T>,
    xs: &[T],
    offsets: &[u64],
    how: &str,
) -> Res {
    let got = reduce_offsets(ctx, seg, input, offsets, SegArgMin)?;
    for s in 0..got.len() {
        let (a, b) = (offsets[s] as usize, offsets[s + 1] as usize);
        let want = (a..b).fold(None, |best: Option<usize>, i| match best {
            Some(j) if xs[j] <= xs[i] => Some(j),
            _ => Some(i),
        });
        let want = want.map_or(u64::MAX, |i| i as u64);
        if got[s] != want {
            return Err(format!("segmented argmin{how} segment {s} ({a}..{b}): {} != {want}", got[s]));
        }
    }
    Ok(())
}

/// An input of 2^22 elements and CSR offsets over it in segments of 0 to
/// 34 elements (mean 17: argmin's route to the ranges kernel's windows, a
/// warp's 32 segments staged in its shared memory, enough of them that
/// its warps take 32 a lane each).
fn window_case<T: Elem>(seed: u64) -> (Vec<T>, Vec<u64>) {
    let big = 1usize << 22;
    let mut offsets = vec![0u64];
    for k in 0.. {
        let at = offsets.last().unwrap() + splitmix64(seed ^ 0x5151 ^ k) % 35;
        if at >= big as u64 {
            break;
        }
        offsets.push(at);
    }
    offsets.push(big as u64);
    (data::<T>(big, seed ^ 17), offsets)
}

/// The offsets and plans the segmented checks run: over
/// [`segment_offsets`], the default plan (plain operators' tiles through
/// the kernel for short segments), the general tile kernel, segments of
/// 0 to 2 elements, then the launches large inputs
/// take (the tiles' boundaries found first, by a search or a stream, the
/// spine over several blocks) at the sanitizer's sizes; over
/// [`ranged_offsets`], the offsets counted and routed to the ranges kernel
/// (and the same counted with one segment too long for it, so routed to
/// the flat kernels); both again through the chunked path (small chunks,
/// so that segments span many, then the defaults).
fn segmented_cases(
    ctx: &Context,
    n: usize,
    seed: u64,
) -> Vec<(Vec<u64>, &'static str, gpuprim::segmented::Segmented<'_>)> {
    let large = ctx.segmented().bounds_from(0).spine_share(2);
    let streamed = large.clone().bounds_by_stream(true);
    let routed = large.clone().route_to_ranges(true);
    let mixed = segment_offsets(n, seed);
    let ranged = ranged_offsets(n, seed);
    let mut too_long = ranged.clone();
    while too_long.len() > 3 && too_long[1] - too_long[0] <= 4096 {
        too_long.remove(1);
    }
    // Segments of 0 to 2 elements: more boundaries a tile than the window
    // holds, so the kernel for short segments finds a thread's in the
    // offsets.
    let tiny: Vec<u64> = std::iter::once(0)
        .chain((0..).scan(0u64, |at, k| {
            *at = Ord::min(*at + splitmix64(seed ^ k) % 3, n as u64);
            Some(*at)
        }))
        .take_while(|&at| at < n as u64)
        .chain(std::iter::once(n as u64))
        .collect();
    vec![
        (mixed.clone(), "", ctx.segmented()),
        (mixed.clone(), " (general tiles)", ctx.segmented().short_path(false)),
        // Tiles whose first segment began up to `lead_max` elements before
        // them write it themselves; the others leave it to the spine.
        (mixed.clone(), " (short tiles)", ctx.segmented().chunked(false).short_path(true)),
        (tiny, " (segments of 0 to 2)", ctx.segmented()),
        (mixed.clone(), " (bounds searched first, spine in blocks)", large.bounds_by_stream(false)),
        (mixed, " (bounds streamed first, spine in blocks)", streamed),
        (ranged.clone(), " (routed to ranges)", routed.clone()),
        (too_long, " (routed, one segment too long)", routed),
        (segment_offsets(n, seed ^ 1), " (chunked, chunks of 64)", ctx.segmented().chunked(true).chunk_lens(64, 16)),
        (ranged, " (chunked)", ctx.segmented().chunked(true)),
    ]
}

/// CSR offsets over `n` elements in segments of 32 to 4096 (routed to the
/// ranges kernel).
fn ranged_offsets(n: usize, seed: u64) -> Vec<u64> {
    let mut offsets = vec![0u64];
    let mut k = 0;
    while *offsets.last().unwrap() < n as u64 {
        k += 1;
        let len = 32 + splitmix64(seed ^ k) % 4065;
        offsets.push(Ord::min(offsets.last().unwrap() + len, n as u64));
    }
    offsets
}

/// CSR offsets over `n` elements: a quarter in segments shorter than 8,
/// then empty segments, segments inside one tile and across many.
fn segment_offsets(n: usize, seed: u64) -> Vec<u64> {
    let mut offsets = vec![0u64];
    let mut at = 0u64;
    for k in 0.. {
        // The first quarter in segments of 0 to 7 (tiles of more
        // boundaries than a window holds), then a mix.
        let len = match splitmix64(seed ^ k) % 4 {
            _ if at < n as u64 / 4 => splitmix64(k) % 8,
            0 => 0,
            1 => splitmix64(k) % 16,
            2 => splitmix64(k) % 600,
            _ => splitmix64(k) % 20_000,
        };
        at = Ord::min(at + len, n as u64);
        offsets.push(at);
        if at == n as u64 {
            break;
        }
    }
    offsets
}

// ---------------------------------------------------------------------------
// Scans
// ---------------------------------------------------------------------------

/// Depth of the combine tree behind output `i` of a scan of `n`, bounded
/// for every algorithm: a thread's items and the block scans (< 64
/// levels), two per level of the three-phase recursion, and at most two
/// per tile along the single-pass chains (their float tiles hold at least
/// 512 elements; this allows 256).
fn scan_depth(i: usize, n: usize) -> f64 {
    64.0 + 2.0 * (n.max(2) as f64).log2().ceil() + (i / 128) as f64
}

/// An operator on an element type as the scan checks use it: inputs that
/// keep the prefixes changing all along, a start for exclusive scans that
/// is not the identity, and the comparison with the CPU.
trait ScanCheck<T: ScanItem + PartialEq>: ScanOp<T> + Default {
    /// Element `i` of `n`, from 64 random bits.
    fn input(h: u64, i: usize, n: usize) -> T;
    /// The `init` of exclusive scans.
    fn init(h: u64, n: usize) -> T {
        Self::input(h, n / 2, n)
    }
    /// `got` against the scan of `data` from `init` (exact unless
    /// overridden).
    fn verify(data: &[T], init: T, exclusive: bool, got: &[T]) -> Res {
        exact_scan::<T, Self>(data, init, exclusive, got)
    }
}

/// `got` is exactly the scan of `data` from `init`, combined in input
/// order as the kernels combine (integers wrap).
fn exact_scan<T: ScanItem + PartialEq, Op: Monoid<T>>(data: &[T], init: T, exclusive: bool, got: &[T]) -> Res {
    let mut run = init;
    for (i, (&x, g)) in data.iter().zip(got).enumerate() {
        let next = Op::combine(run, x);
        let want = if exclusive { run } else { next };
        if *g != want {
            return Err(format!("element {i} of {}: got {g:?}, want {want:?}", data.len()));
        }
        run = next;
    }
    Ok(())
}

impl<T: Elem> ScanCheck<T> for Sum {
    fn input(h: u64, _: usize, _: usize) -> T {
        T::from_bits64(h)
    }
    /// Floats: within `scan_depth * eps * sum |terms|` of a compensated
    /// f64 sum (Neumaier), `init` included.
    fn verify(data: &[T], init: T, exclusive: bool, got: &[T]) -> Res {
        if T::EXACT {
            return exact_scan::<T, Self>(data, init, exclusive, got);
        }
        let n = data.len();
        let (mut s, mut c, mut abs) = (init.to_f64(), 0.0, init.to_f64().abs());
        for (i, (&x, &g)) in data.iter().zip(got).enumerate() {
            let before = (s + c, abs);
            let x = x.to_f64();
            let t = s + x;
            c += if s.abs() >= x.abs() { (s - t) + x } else { (x - t) + s };
            (s, abs) = (t, abs + x.abs());
            let (want, terms) = if exclusive { before } else { (s + c, abs) };
            near(g.to_f64(), want, T::EPS * scan_depth(i, n) * terms)
                .map_err(|m| format!("element {i} of {n}: {m}"))?;
        }
        Ok(())
    }
}

impl<T: Elem> ScanCheck<T> for Product {
    fn input(h: u64, _: usize, _: usize) -> T {
        T::for_product(h)
    }
    /// Floats: each of the `i + 1` multiplications under output `i`
    /// (`init` included) rounds once, whatever the tree: relative error
    /// below `(i + 1) eps / 2`, and as much again in the f64 reference of
    /// the f64 scans. Allowed: `2 (i + 8) eps`.
    fn verify(data: &[T], init: T, exclusive: bool, got: &[T]) -> Res {
        if T::EXACT {
            return exact_scan::<T, Self>(data, init, exclusive, got);
        }
        let n = data.len();
        let mut run = init.to_f64();
        for (i, (&x, &g)) in data.iter().zip(got).enumerate() {
            let next = run * x.to_f64();
            let want = if exclusive { run } else { next };
            let bound = T::EPS * 2.0 * (i as f64 + 8.0) * want.abs();
            near(g.to_f64(), want, bound).map_err(|m| format!("element {i} of {n}: {m}"))?;
            run = next;
        }
        Ok(())
    }
}

/// Trend plus noise, so that the running minimum (`down`) or maximum
/// changes all along the input: small non-negative integers, exact in
/// every type.
fn trend(h: u64, i: usize, n: usize, down: bool) -> u64 {
    let base = if down { n - i } else { i };
    base as u64 * 8 + h % 16
}

impl<T: Elem> ScanCheck<T> for Min {
    fn input(h: u64, i: usize, n: usize) -> T {
        T::from_u64(trend(h, i, n, true))
    }
}

impl<T: Elem> ScanCheck<T> for Max {
    fn input(h: u64, i: usize, n: usize) -> T {
        T::from_u64(trend(h, i, n, false))
    }
}

/// `base` with one random bit flipped about 64 times along the input, so
/// that the running and (or) keeps changing.
fn rare_flip<T: Elem>(h: u64, n: usize, base: u64) -> T {
    let bits = 8 * std::mem::size_of::<T>() as u64;
    let flip = if h.is_multiple_of(Ord::max(n as u64 / 64, 1)) { 1 << ((h >> 32) % bits) } else { 0 };
    T::from_bits64(base ^ flip)
}

impl<T: Elem + Integer> ScanCheck<T> for BitAnd {
    fn input(h: u64, _: usize, n: usize) -> T {
        rare_flip(h, n, u64::MAX)
    }
    fn init(h: u64, _: usize) -> T {
        T::from_bits64(!(1 << (h % (8 * std::mem::size_of::<T>() as u64))))
    }
}

impl<T: Elem + Integer> ScanCheck<T> for BitOr {
    fn input(h: u64, _: usize, n: usize) -> T {
        rare_flip(h, n, 0)
    }
    fn init(h: u64, _: usize) -> T {
        T::from_bits64(1 << (h % (8 * std::mem::size_of::<T>() as u64)))
    }
}

impl<T: Elem + Integer> ScanCheck<T> for BitXor {
    fn input(h: u64, _: usize, _: usize) -> T {
        T::from_bits64(h)
    }
}

macro_rules! affine_int_check {
    ($($t:ty),*) => {$(
        /// Maps with wrapping integer coefficients compose exactly, so the
        /// order of every combine is checked bit for bit.
        impl ScanCheck<Affine<$t>> for Compose {
            fn input(h: u64, _: usize, _: usize) -> Affine<$t> {
                Affine::new(h as $t, (h >> 32) as $t)
            }
        }
    )*};
}
affine_int_check!(u16, u32);

macro_rules! affine_float_check {
    ($($t:ty),*) => {$(
        /// Maps `v -> a v + b`, `a` in [0.5, 1) and `b` in [-1, 1), against
        /// an f64 reference.
        impl ScanCheck<Affine<$t>> for Compose {
            fn input(h: u64, _: usize, _: usize) -> Affine<$t> {
                let (a, b) = (<f64 as Elem>::from_bits64(h), <f64 as Elem>::from_bits64(splitmix64(h)));
                Affine::new((0.75 + 0.25 * a) as $t, b as $t)
            }
            /// `a` is a product of at most `i + 2` factors (one rounding
            /// each, whatever the tree); `b = sum_j (prod_{k>j} a_k) b_j`
            /// with every `a_k > 0`, so its bound scales with the same sum
            /// of `|b_j|`.
            fn verify(data: &[Affine<$t>], init: Affine<$t>, exclusive: bool, got: &[Affine<$t>]) -> Res {
                let n = data.len();
                let eps = <$t>::EPSILON as f64;
                let (mut a, mut b, mut babs) = (init.a as f64, init.b as f64, (init.b as f64).abs());
                for (i, (x, g)) in data.iter().zip(got).enumerate() {
                    let (xa, xb) = (x.a as f64, x.b as f64);
                    let (na, nb, nabs) = (a * xa, xa * b + xb, xa * babs + xb.abs());
                    let (wa, wb, wabs) = if exclusive { (a, b, babs) } else { (na, nb, nabs) };
                    let d = scan_depth(i, n);
                    let tiny = d * <$t>::MIN_POSITIVE as f64;
                    let ops = i as f64 + 2.0 + d;
                    near(g.a as f64, wa, 2.0 * ops * eps * wa.abs() + tiny)
                        .map_err(|m| format!("element {i} of {n}, a: {m}"))?;
                    near(g.b as f64, wb, 3.0 * ops * eps * wabs + tiny)
                        .map_err(|m| format!("element {i} of {n}, b: {m}"))?;
                    (a, b, babs) = (na, nb, nabs);
                }
                Ok(())
            }
        }
    )*};
}
affine_float_check!(f32, f64);

fn scan_data<T: ScanItem + PartialEq, Op: ScanCheck<T>>(n: usize, seed: u64) -> Vec<T> {
    (0..n).map(|i| Op::input(splitmix64(seed.wrapping_mul(0x1_0000_0001) ^ i as u64), i, n)).collect()
}

/// One scan of `data`: inclusive or exclusive from `init`; in place, or
/// out of place into a poisoned output (the input checked untouched);
/// with the context's scratch storage or with `temp`.
fn scan_once<T: ScanItem + PartialEq, Op: ScanCheck<T>>(
    ctx: &Context,
    scan: &Scan,
    data: &[T],
    init: T,
    exclusive: bool,
    in_place: bool,
    temp: Option<&mut ScanTemp>,
) -> Result<Vec<T>, String> {
    let op = Op::default();
    if in_place {
        let mut buf = ctx.upload(data).map_err(e)?;
        match (exclusive, temp) {
            (false, None) => scan.inclusive_in_place(&mut buf, op),
            (true, None) => scan.exclusive_in_place(&mut buf, init, op),
            (false, Some(t)) => scan.inclusive_in_place_with_temp(&mut buf, op, t),
            (true, Some(t)) => scan.exclusive_in_place_with_temp(&mut buf, init, op, t),
        }
        .map_err(e)?;
        return buf.to_vec().map_err(e);
    }
    let input = ctx.upload(data).map_err(e)?;
    let mut out = ctx.alloc::<T>(data.len()).map_err(e)?;
    out.poison().map_err(e)?;
    match (exclusive, temp) {
        (false, None) => scan.inclusive(&input, &mut out, op),
        (true, None) => scan.exclusive(&input, &mut out, init, op),
        (false, Some(t)) => scan.inclusive_with_temp(&input, &mut out, op, t),
        (true, Some(t)) => scan.exclusive_with_temp(&input, &mut out, init, op, t),
    }
    .map_err(e)?;
    if input.to_vec().map_err(e)? != data {
        return Err("the scan wrote to its input".into());
    }
    out.to_vec().map_err(e)
}

/// Every variant of `Op` on `T` with `scan` at length `n`, each on its own
/// data: inclusive and exclusive (from a non-identity `init`), out of
/// place and in place; first with the context's storage, then the four in
/// a row on one [`Scan::temp`] (the single-pass scans alternate its halves,
/// each call clearing the other for the next). A single-pass `scan` then
/// takes the storage back after a three-phase scan used it (and clears it
/// first, with a launch of its own). Returns the number of results checked.
fn check_scan<T: ScanItem + PartialEq, Op: ScanCheck<T>>(
    ctx: &Context,
    scan: &Scan,
    n: usize,
    seed: u64,
) -> Result<usize, String> {
    let three = ctx.scan().algorithm(ScanAlgorithm::ThreePhase);
    let switch = scan.chosen_algorithm().is_single_pass();
    // (scan, exclusive, in place, with temp, note)
    let mut steps = Vec::new();
    for with_temp in [false, true] {
        for (exclusive, in_place) in [(false, false), (true, false), (false, true), (true, true)] {
            steps.push((scan, exclusive, in_place, with_temp, ""));
        }
    }
    if switch {
        steps.push((&three, true, false, true, " (three_phase on the same temp)"));
        steps.push((scan, false, true, true, " (after three_phase on it)"));
    }
    let sizing = if switch && three.temp_bytes::<T>(n).map_err(e)? > scan.temp_bytes::<T>(n).map_err(e)? {
        &three
    } else {
        scan
    };
    let mut temp = sizing.temp::<T>(n).map_err(e)?;
    for (k, &(scan, exclusive, in_place, with_temp, note)) in steps.iter().enumerate() {
        let seed = seed ^ ((k as u64) << 24);
        let data = scan_data::<T, Op>(n, seed);
        let init = if exclusive { Op::init(splitmix64(!seed), n) } else { Op::identity() };
        let temp = if with_temp { Some(&mut temp) } else { None };
        let what = format!(
            "{} {}{}{note}",
            if exclusive { "exclusive" } else { "inclusive" },
            if in_place { "in place" } else { "out of place" },
            if with_temp { " with temp" } else { "" },
        );
        let got = scan_once::<T, Op>(ctx, scan, &data, init, exclusive, in_place, temp)
            .map_err(|m| format!("{what}: {m}"))?;
        if got.len() != n {
            return Err(format!("{what}: {} elements came back, want {n}", got.len()));
        }
        Op::verify(&data, init, exclusive, &got).map_err(|m| format!("{what}: {m}"))?;
    }
    Ok(steps.len())
}

/// `Scan::linear_recurrence` against the sequential loop in f64, from the
/// same inputs: `l` in [0.01, 0.99), `u` in [-10, 10), so `|v| <= 10` and
/// each step's rounding is damped by the later `1 - l` factors.
fn check_recurrence<T: Elem + Ring>(ctx: &Context, scan: &Scan, n: usize, seed: u64) -> Result<usize, String>
where
    Affine<T>: ScanItem,
{
    let l = draw(n, seed, |h| T::from_f64(0.5 + 0.49 * <f64 as Elem>::from_bits64(h)));
    let u = draw(n, seed ^ 0x7ec, |h| T::from_f64(10.0 * <f64 as Elem>::from_bits64(h)));
    let v0 = T::from_f64(3.25);
    let (lb, ub) = (ctx.upload(&l).map_err(e)?, ctx.upload(&u).map_err(e)?);
    let mut out = ctx.alloc::<T>(n).map_err(e)?;
    out.poison().map_err(e)?;
    scan.linear_recurrence(&lb, &ub, v0, &mut out).map_err(e)?;
    let mut v = v0.to_f64();
    for (k, (g, (&lk, &uk))) in out.to_vec().map_err(e)?.into_iter().zip(l.iter().zip(&u)).enumerate() {
        v = (1.0 - lk.to_f64()) * v + lk.to_f64() * uk.to_f64();
        near(g.to_f64(), v, scan_depth(k, n) * T::EPS * 40.0).map_err(|m| format!("v[{}] of {n}: {m}", k + 1))?;
    }
    Ok(1)
}

/// Runs the checks of one operator on one type with a scan at a length
/// and seed; returns the number of results compared.
type ScanRun = fn(&Context, &Scan, usize, u64) -> Result<usize, String>;

/// An operator on an element type: what finding its scan kernels and
/// checking them needs.
struct ScanKind {
    /// The operator and element type as kernel names spell them (for the
    /// recurrence, those of its scan: `compose` on `affine_f32`).
    op: &'static str,
    item: &'static str,
    /// What the output lines call them.
    name: &'static str,
    ty: &'static str,
    /// Elements per tile of an algorithm at a block size.
    tile: fn(ScanAlgorithm, u32) -> u64,
    run: ScanRun,
    /// Kernels the check launches besides the scan's.
    extra: &'static [&'static str],
}

/// `scan_op!(Op, [types])`: one [`ScanKind`] per type.
macro_rules! scan_op {
    ($op:ty, [$($t:ty),+ $(,)?]) => {
        vec![$(ScanKind {
            op: <$op as gpuprim::scan::Named>::NAME,
            item: <$t as DeviceRepr>::NAME,
            name: <$op as gpuprim::scan::Named>::NAME,
            ty: <$t as DeviceRepr>::NAME,
            tile: |alg, block| alg.tile_len::<$t>(block),
            run: check_scan::<$t, $op>,
            extra: &[],
        }),+]
    };
}

/// `recurrence!([types])`: the linear recurrence on each type (a scan of
/// `Affine<T>` with `Compose`, between two kernels of its own).
macro_rules! recurrence {
    ([$($t:ty),+ $(,)?]) => {
        vec![$(ScanKind {
            op: <Compose as gpuprim::scan::Named>::NAME,
            item: <Affine<$t> as DeviceRepr>::NAME,
            name: "linear_recurrence",
            ty: <$t as DeviceRepr>::NAME,
            tile: |alg, block| alg.tile_len::<Affine<$t>>(block),
            run: check_recurrence::<$t>,
            extra: &[
                concat!("recurrence_maps_", stringify!($t), "_b256"),
                concat!("recurrence_values_", stringify!($t), "_b256"),
            ],
        }),+]
    };
}

/// Every scan operator with the element types it supports, and the linear
/// recurrence.
fn scan_kinds() -> Vec<ScanKind> {
    [
        scan_op!(Sum, [i32, u32, i64, u64, f32, f64]),
        scan_op!(Product, [i32, u32, i64, u64, f32, f64]),
        scan_op!(Min, [i32, u32, i64, u64, f32, f64]),
        scan_op!(Max, [i32, u32, i64, u64, f32, f64]),
        scan_op!(BitAnd, [i32, u32, i64, u64]),
        scan_op!(BitOr, [i32, u32, i64, u64]),
        scan_op!(BitXor, [i32, u32, i64, u64]),
        scan_op!(Compose, [Affine<u16>, Affine<u32>, Affine<f32>, Affine<f64>]),
        recurrence!([f32, f64]),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The block sizes `alg`'s kernels are instantiated for with operator `op`
/// on element type `item`, from the kernel table (what
/// [`Scan::block_size`] accepts).
fn scan_blocks(alg: ScanAlgorithm, op: &str, item: &str) -> Vec<u32> {
    let prefix = format!("{}_{op}_{item}_b", alg.kernel());
    let mut blocks: Vec<u32> = gpuprim_kernels::host_kernels()
        .iter()
        .filter(|k| k.name.strip_prefix(prefix.as_str()).is_some_and(|b| b.parse::<u32>().is_ok()))
        .map(|k| k.block_size)
        .collect();
    blocks.sort_unstable();
    blocks
}

/// Lengths for `alg` at `block` with tiles of `tile` elements: one tile
/// less 5, and five tiles and a ragged end (two levels of the three-phase
/// recursion; a chain of single-pass tiles). At 32 threads the block-level
/// scans also get `tile + 1` tiles (three levels), and the look-back at 64
/// threads or fewer more than two windows of `block` predecessors (its
/// look-back can cross windows).
fn scan_sizes(alg: ScanAlgorithm, block: u32, tile: u64) -> Vec<usize> {
    let (tile, block) = (tile as usize, block as usize);
    let mut sizes = vec![tile - 5, 5 * tile + 7];
    let block_level = matches!(alg, ScanAlgorithm::HillisSteele | ScanAlgorithm::Blelloch | ScanAlgorithm::WarpShuffle);
    if block_level && block == 32 {
        sizes.push(tile * tile + 7);
    }
    if alg == ScanAlgorithm::DecoupledLookBack && block <= 64 {
        sizes.push((2 * block + 3) * tile + 7);
    }
    sizes
}

/// The kernels a check of `n` elements launches, as the host picks them:
/// the algorithm's kernel; for the three-phase scans of more than one tile
/// the add-prefix kernel; for the single-pass ones the status clearing
/// (when they take back storage that a three-phase scan used, at least).
fn scan_kernels(alg: ScanAlgorithm, block: u32, kind: &ScanKind, n: usize, tile: u64) -> Vec<String> {
    let (op, item) = (kind.op, kind.item);
    let mut names = vec![format!("{}_{op}_{item}_b{block}", alg.kernel())];
    if alg.is_single_pass() {
        names.push("scan_clear_b256".into());
    } else if n as u64 > tile {
        names.push(format!("scan_add_prefix_{op}_{item}_b256"));
    }
    names.extend(kind.extra.iter().map(|k| k.to_string()));
    names
}

/// Every scan check (see the module docs), printed as they run; passes
/// and failures are added to the tallies. Returns a summary.
fn run_scans(ctx: &Context, passed: &mut usize, failed: &mut Vec<String>) -> String {
    let kinds = scan_kinds();
    let width = "scan hillis_steele b256 linear_recurrence".len();
    let (mut checks, mut results) = (0usize, 0usize);
    let mut launched = BTreeSet::new();
    for alg in ScanAlgorithm::ALL {
        for kind in &kinds {
            let blocks = scan_blocks(alg, kind.op, kind.item);
            if blocks.is_empty() {
                let what = format!("scan {} {} {}", alg.name(), kind.name, kind.ty);
                println!("FAILED  {what:<width$}: no `{}` kernel in the table", alg.kernel());
                failed.push(what);
            }
            for block in blocks {
                let scan = ctx.scan().algorithm(alg).block_size(block);
                let tile = (kind.tile)(alg, block);
                let name = format!("scan {} b{block} {}", alg.name(), kind.name);
                for n in scan_sizes(alg, block, tile) {
                    let seed = (1 << 63) | ((checks as u64) << 32) | n as u64;
                    checks += 1;
                    match (kind.run)(ctx, &scan, n, seed) {
                        Ok(k) => {
                            println!("ok      {name:<width$} {:<10} n = {n}", kind.ty);
                            *passed += 1;
                            results += k;
                            launched.extend(scan_kernels(alg, block, kind, n, tile));
                        }
                        Err(err) => {
                            println!("FAILED  {name:<width$} {:<10} n = {n}: {err}", kind.ty);
                            failed.push(format!("{name} {} n = {n}", kind.ty));
                        }
                    }
                }
            }
        }
    }
    // Every scan kernel of the table must have run.
    let table: BTreeSet<&str> = gpuprim_kernels::host_kernels()
        .iter()
        .map(|k| k.name)
        .filter(|k| (k.starts_with("scan_") && !k.starts_with("scan_by_key_")) || k.starts_with("recurrence_"))
        .collect();
    let missed: Vec<&str> = table.iter().copied().filter(|k| !launched.contains(*k)).collect();
    if !missed.is_empty() {
        println!("FAILED  {} scan kernels that no check launched: {}", missed.len(), missed.join(", "));
        failed.push(format!("{} scan kernels not covered", missed.len()));
    }
    // Kernels of each algorithm's family (phase 1, or the whole single pass).
    let mut families: Vec<&str> = ScanAlgorithm::ALL.iter().map(|a| a.kernel()).collect();
    families.dedup();
    let per_family: Vec<(&str, usize)> =
        families.iter().map(|&f| (f, launched.iter().filter(|k| k.starts_with(&format!("{f}_"))).count())).collect();
    let phase1: usize = per_family.iter().map(|p| p.1).sum();
    let per_family: Vec<String> = per_family.iter().map(|(f, k)| format!("{f} {k}")).collect();
    let covered = table.iter().filter(|k| launched.contains(**k)).count();
    format!(
        "{checks} scan checks ({results} scan results compared); {covered} of {} scan kernels launched, \
         {phase1} of them scans proper ({})",
        table.len(),
        per_family.join(", ")
    )
}

// ---------------------------------------------------------------------------
// The list
// ---------------------------------------------------------------------------

type Run = Box<dyn Fn(&Context, usize, u64) -> Res>;

struct Op {
    name: String,
    ty: &'static str,
    run: Run,
}

/// `op!("name", check_fn, [types])`: one [`Op`] per type.
/// `op!("name", |T| closure, [types])`: the same with a closure per type
/// (for settings such as the algorithm).
macro_rules! op {
    ($name:expr, $check:ident, [$($t:ty),+ $(,)?]) => {
        vec![$(Op { name: $name.to_string(), ty: <$t as DeviceRepr>::NAME, run: Box::new($check::<$t>) }),+]
    };
    ($name:expr, |$T:ident| $f:expr, [$($t:ty),+ $(,)?]) => {
        vec![$({
            type $T = $t;
            Op { name: $name.to_string(), ty: <$t as DeviceRepr>::NAME, run: Box::new($f) }
        }),+]
    };
}

/// Every public operation, with the element types it supports.
fn ops() -> Vec<Op> {
    let mut ops = [
        op!("upload/download", check_roundtrip, [i32, u32, i64, u64, f32, f64]),
        op!("copy", check_copy, [i32, u32, i64, u64, f32, f64]),
        op!("poison/zero", check_fill, [i32, u32, i64, u64, f32, f64]),
        op!("sum", check_sum, [i32, u32, i64, u64, f32, f64]),
        op!("sum(host slice)", check_sum_host, [i32, f32]),
        op!("sum_into", check_sum_into, [i32, u32, i64, u64, f32, f64]),
        op!("sum_with_temp", check_sum_with_temp, [i32, u32, i64, u64, f32, f64]),
        op!("product", check_product, [i32, u32, i64, u64, f32, f64]),
        op!("min", check_min, [i32, u32, i64, u64, f32, f64]),
        op!("max", check_max, [i32, u32, i64, u64, f32, f64]),
        op!("argmin", check_argmin, [i32, u32, i64, u64, f32, f64]),
        op!("argmax", check_argmax, [i32, u32, i64, u64, f32, f64]),
        op!("argmin_argmax/min_max", check_argmin_argmax, [i32, u32, i64, u64, f32, f64]),
        op!("dot", check_dot, [i32, u32, i64, u64, f32, f64]),
        op!("sum_squares", check_sum_squares, [i32, u32, i64, u64, f32, f64]),
        op!("and/or/xor", check_bits, [i32, u32, i64, u64]),
        op!("norm1/norm2/rms", check_norms, [f32, f64]),
        op!("select_if/flagged/partition/unique(_by_key)", check_select, [i32, u32, i64, u64, f32, f64]),
        op!("by key (reduce, runs, scan)", check_by_key, [i32, u32, i64, u64, f32, f64]),
        op!("segmented_reduce", check_segmented, [i32, u32, i64, u64, f32, f64]),
        op!("segmented_argmin", check_segmented_argmin, [i32, u32, i64, u64, f32, f64]),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>();
    // Every reduction kernel with every finishing strategy (4- and 8-byte
    // elements), and every block size (the default finish).
    let default = Settings { algorithm: ReduceAlgorithm::Vectorized, finish: Finish::LastBlock, block: 256 };
    for algorithm in ReduceAlgorithm::ALL {
        for finish in Finish::ALL {
            let s = Settings { algorithm, finish, ..default };
            let name = format!("sum {} {finish:?}", algorithm.name());
            ops.extend(op!(name, |T| move |ctx: &Context, n, seed| sum_into_with::<T>(ctx, n, seed, s), [i32, f64]));
        }
        for block in BLOCK_SIZES {
            let s = Settings { algorithm, block, ..default };
            let name = format!("sum {} b{block}", algorithm.name());
            ops.extend(op!(name, |T| move |ctx: &Context, n, seed| sum_into_with::<T>(ctx, n, seed, s), [f32]));
        }
    }
    ops
}

/// CUDA where present, else the emulator with why.
fn open_context() -> Result<(Context, Option<String>), String> {
    let require = std::env::var("GPUPRIM_REQUIRE_GPU").as_deref() == Ok("1");
    let backend = std::env::var("GPUPRIM_BACKEND").unwrap_or_default();
    if backend == "emu" || backend == "emulator" {
        if require {
            return Err("GPUPRIM_REQUIRE_GPU=1 contradicts GPUPRIM_BACKEND=emu".into());
        }
        return Ok((Context::emulator(), Some("GPUPRIM_BACKEND=emu".into())));
    }
    match Context::cuda() {
        Ok(ctx) => Ok((ctx, None)),
        Err(err) if require || backend == "cuda" => Err(format!("CUDA is required here but unavailable: {err}")),
        Err(err) => Ok((Context::emulator(), Some(err.to_string()))),
    }
}

/// Environment: `GPUPRIM_BACKEND=emu|cuda` picks the backend;
/// `GPUPRIM_REQUIRE_GPU=1` fails rather than fall back to the emulator;
/// `GPUPRIM_SANITIZE_ONLY=TEXT` runs only the operations whose name holds
/// `TEXT` (e.g. `segmented`), for a sanitizer run of one family.
fn main() -> ExitCode {
    if let Some(arg) = std::env::args().nth(1) {
        let help = arg == "-h" || arg == "--help";
        println!("usage: sanitize   (runs every operation once; no arguments)");
        return if help { ExitCode::SUCCESS } else { ExitCode::from(2) };
    }
    let (ctx, why_emu) = match open_context() {
        Ok(c) => c,
        Err(err) => {
            eprintln!("sanitize: {err}");
            return ExitCode::FAILURE;
        }
    };
    match &why_emu {
        None => println!("sanitize: running on {}", ctx.device_name()),
        Some(why) => println!("sanitize: no NVIDIA driver found ({why}): running on the CPU emulator"),
    }
    let only = std::env::var("GPUPRIM_SANITIZE_ONLY").unwrap_or_default();
    let ops: Vec<_> = ops().into_iter().filter(|o| o.name.contains(only.as_str())).collect();
    // The scan checks are one family, named `scan ...`.
    let with_scans = "scan".contains(only.as_str()) || only.starts_with("scan");
    if ops.is_empty() && !with_scans {
        eprintln!("sanitize: no operation's name holds `{only}` (GPUPRIM_SANITIZE_ONLY)");
        return ExitCode::FAILURE;
    }
    let width = ops.iter().map(|o| o.name.len()).max().unwrap_or(0);
    let (mut passed, mut failed) = (0, Vec::new());
    for (k, op) in ops.iter().enumerate() {
        for n in SIZES {
            let seed = (k as u64) << 32 | n as u64;
            match (op.run)(&ctx, n, seed) {
                Ok(()) => {
                    println!("ok      {:<width$} {:<4} n = {n}", op.name, op.ty);
                    passed += 1;
                }
                Err(err) => {
                    println!("FAILED  {:<width$} {:<4} n = {n}: {err}", op.name, op.ty);
                    failed.push(format!("{} {} n = {n}", op.name, op.ty));
                }
            }
        }
    }
    let others = passed + failed.len();
    let scans = if with_scans {
        run_scans(&ctx, &mut passed, &mut failed)
    } else {
        format!("no scan checks (GPUPRIM_SANITIZE_ONLY={only})")
    };
    if let Err(err) = ctx.synchronize() {
        println!("FAILED  final synchronize: {err}");
        failed.push("final synchronize".into());
    }
    let on = if ctx.backend() == BackendKind::Cuda { ctx.device_name() } else { "the CPU emulator".into() };
    let counts = format!("{others} reduction and copy checks; {scans}");
    if failed.is_empty() {
        println!("sanitize: all {passed} checks passed on {on}: {counts}");
        ExitCode::SUCCESS
    } else {
        println!(
            "sanitize: {} of {} checks FAILED on {on}: {}\nsanitize: {counts}",
            failed.len(),
            passed + failed.len(),
            failed.join("; ")
        );
        ExitCode::FAILURE
    }
}
