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

use gpuprim::reduce::{BLOCK_SIZES, Finish, Float, ReduceAlgorithm, Reducer};
use gpuprim::{BackendKind, Context, DeviceRepr, Scalar};
use gpuprim_kernels::ops::{Element, Integer};
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
        op!("dot", check_dot, [i32, u32, i64, u64, f32, f64]),
        op!("sum_squares", check_sum_squares, [i32, u32, i64, u64, f32, f64]),
        op!("and/or/xor", check_bits, [i32, u32, i64, u64]),
        op!("norm1/norm2/rms", check_norms, [f32, f64]),
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
/// `GPUPRIM_REQUIRE_GPU=1` fails rather than fall back to the emulator.
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
    let ops = ops();
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
    if let Err(err) = ctx.synchronize() {
        println!("FAILED  final synchronize: {err}");
        failed.push("final synchronize".into());
    }
    let on = if ctx.backend() == BackendKind::Cuda { ctx.device_name() } else { "the CPU emulator".into() };
    if failed.is_empty() {
        println!("sanitize: all {passed} checks passed on {on}");
        ExitCode::SUCCESS
    } else {
        println!(
            "sanitize: {} of {} checks FAILED on {on}: {}",
            failed.len(),
            passed + failed.len(),
            failed.join("; ")
        );
        ExitCode::FAILURE
    }
}
