//! gpuprim in one page: make real data, reduce it on the GPU (or on the CPU
//! emulator where there is none), and check every result against the CPU.
//!
//! ```text
//! cargo run --release -p gpuprim --example demo            # 2^24 elements on a GPU, 2^18 on the emulator
//! cargo run --release -p gpuprim --example demo -- --small # 2^16 (for compute-sanitizer)
//! ```
//!
//! Exits with status 1 if a result is further from the CPU reference than
//! its bound (integers: not equal; floats: the rounding bound below).
//!
//! To show another operation, add one line to [`ops`].

use gpuprim::{BackendKind, Context, DeviceBuffer, DeviceRepr, Scalar};
use std::process::ExitCode;
use std::time::Duration;

/// Untimed and timed runs of each operation's throughput measurement.
const WARMUP: usize = 2;
const RUNS: usize = 10;

// ---------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------

/// splitmix64 (Steele, Lea, Flood 2014).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uniform in [0, 1) from a hash.
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A sampled signal: two tones, a slow drift, a DC offset and noise
/// (a sum of four uniforms: roughly Gaussian, sigma 0.05).
fn signal(n: usize, seed: u64) -> Vec<f32> {
    use std::f64::consts::TAU;
    (0..n)
        .map(|i| {
            let t = i as f64;
            let h = splitmix64(seed ^ i as u64);
            let noise = (0..4).map(|k| unit(splitmix64(h.wrapping_add(k))) - 0.5).sum::<f64>() * 0.05 * 3f64.sqrt();
            (0.8 * (TAU * t / 1000.0).sin()
                + 0.3 * (TAU * t / 37.3 + 1.0).sin()
                + 0.2 * (TAU * t * 1.3e-7).sin()
                + 0.1
                + noise) as f32
        })
        .collect()
}

/// A hashed integer sequence in -1000..=1000.
fn hashed(n: usize, seed: u64) -> Vec<i32> {
    (0..n).map(|i| (splitmix64(seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D)) % 2001) as i32 - 1000).collect()
}

// ---------------------------------------------------------------------------
// Element types and references
// ---------------------------------------------------------------------------

/// What the demo needs of an element type: how to compare results.
// `Acc = Self`: the types here reduce in themselves, so sums come back as `Self`.
trait Elem: Scalar<Acc = Self> + PartialEq + PartialOrd + std::fmt::Display {
    /// Integers compare exactly (wrapping arithmetic), floats within a
    /// rounding bound of an f64 reference.
    const EXACT: bool;
    const EPS: f64;
    fn to_f64(self) -> f64;
    fn wrapping_sum(xs: &[Self]) -> Self;
}

impl Elem for i32 {
    const EXACT: bool = true;
    const EPS: f64 = 0.0;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn wrapping_sum(xs: &[Self]) -> Self {
        xs.iter().fold(0i32, |a, &b| a.wrapping_add(b))
    }
}

impl Elem for f32 {
    const EXACT: bool = false;
    const EPS: f64 = f32::EPSILON as f64;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn wrapping_sum(xs: &[Self]) -> Self {
        xs.iter().sum()
    }
}

/// A result: one value, or an index with its value (argmin, argmax).
#[derive(Clone, Copy, PartialEq)]
enum Val<T> {
    One(T),
    At(Option<(usize, T)>),
}

impl<T: Elem> std::fmt::Display for Val<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Val::One(v) => write!(f, "{v}"),
            Val::At(Some((i, v))) => write!(f, "x[{i}] = {v}"),
            Val::At(None) => write!(f, "none (empty)"),
        }
    }
}

/// The CPU's answer: exact, or an f64 value with a rounding bound.
enum Reference<T> {
    Exact(Val<T>),
    Within { value: f64, bound: f64 },
}

/// Rounding allowance of a float sum of `n` terms, in units of
/// `eps * sum |terms|`, for summation trees in which no term passes through
/// more than `2 sqrt(n) + log2(n) + 16` additions (the library's launch
/// shapes). The worst case over all orders, `n`, says nothing at large n.
fn depth(n: usize) -> f64 {
    let n = n.max(1) as f64;
    2.0 * n.sqrt() + n.log2() + 16.0
}

/// Compensated (Neumaier) f64 sum of `f` over `xs`, and the sum of magnitudes.
fn f64_sum<T: Elem>(xs: &[T], f: impl Fn(f64) -> f64) -> (f64, f64) {
    let (mut sum, mut comp, mut abs) = (0.0f64, 0.0f64, 0.0f64);
    for &x in xs {
        let x = f(x.to_f64());
        let t = sum + x;
        comp += if sum.abs() >= x.abs() { (sum - t) + x } else { (x - t) + sum };
        sum = t;
        abs += x.abs();
    }
    (sum + comp, abs)
}

/// Sum: wrapping for integers; compensated f64 for floats.
fn sum_reference<T: Elem>(xs: &[T]) -> Reference<T> {
    if T::EXACT {
        return Reference::Exact(Val::One(T::wrapping_sum(xs)));
    }
    let (value, abs) = f64_sum(xs, |x| x);
    Reference::Within { value, bound: T::EPS * abs * depth(xs.len()) }
}

/// First index of the smallest (`largest = false`) or largest value.
fn extreme<T: Elem>(xs: &[T], largest: bool) -> Option<(usize, T)> {
    let mut best: Option<(usize, T)> = None;
    for (i, &x) in xs.iter().enumerate() {
        if best.is_none_or(|(_, b)| if largest { x > b } else { x < b }) {
            best = Some((i, x));
        }
    }
    best
}

/// Root mean square, with a relative bound (a sum of squares is well
/// conditioned).
fn rms_reference<T: Elem>(xs: &[T]) -> Reference<T> {
    let (sq, _) = f64_sum(xs, |x| x * x);
    let value = (sq / xs.len().max(1) as f64).sqrt();
    Reference::Within { value, bound: value * T::EPS * (depth(xs.len()) + 2.0) }
}

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

/// An operation the demo runs: the call (timed as a whole, including
/// reading the result back), and its CPU reference.
struct Op<T: Elem> {
    name: &'static str,
    call: fn(&Context, &DeviceBuffer<T>) -> gpuprim::Result<Val<T>>,
    reference: fn(&[T]) -> Reference<T>,
}

/// The operations of every element type: one line each.
fn ops<T: Elem>() -> Vec<Op<T>> {
    vec![
        Op { name: "sum", call: |ctx, x| Ok(Val::One(ctx.sum(x)?)), reference: sum_reference },
        Op {
            name: "min",
            call: |ctx, x| Ok(Val::One(ctx.min(x)?)),
            reference: |xs| Reference::Exact(Val::One(extreme(xs, false).map(|p| p.1).unwrap_or_default())),
        },
        Op {
            name: "max",
            call: |ctx, x| Ok(Val::One(ctx.max(x)?)),
            reference: |xs| Reference::Exact(Val::One(extreme(xs, true).map(|p| p.1).unwrap_or_default())),
        },
        Op {
            name: "argmin",
            call: |ctx, x| Ok(Val::At(ctx.argmin(x)?)),
            reference: |xs| Reference::Exact(Val::At(extreme(xs, false))),
        },
        Op {
            name: "argmax",
            call: |ctx, x| Ok(Val::At(ctx.argmax(x)?)),
            reference: |xs| Reference::Exact(Val::At(extreme(xs, true))),
        },
    ]
}

/// More operations for floats.
fn float_ops() -> Vec<Op<f32>> {
    vec![Op { name: "rms", call: |ctx, x| Ok(Val::One(ctx.rms(x)?)), reference: rms_reference }]
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

/// CUDA where present, else the emulator with why (see the environment
/// variables in `main`'s doc).
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
        Err(e) if require || backend == "cuda" => Err(format!("CUDA is required here but unavailable: {e}")),
        Err(e) => Ok((Context::emulator(), Some(e.to_string()))),
    }
}

/// Three significant digits (more for small numbers).
fn sig(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Run `ops` on `data`, print a table; `Ok(false)` if a result is out of
/// bounds.
fn show<T: Elem>(ctx: &Context, label: &str, data: &[T], ops: Vec<Op<T>>) -> Result<bool, gpuprim::Error> {
    let input = ctx.upload(data)?;
    let bytes = std::mem::size_of_val(data) as f64;
    println!("{label} ({}, {} elements):", T::NAME, data.len());
    println!(
        "  {:<7} {:<24} {:<30} {:<28} {:>10} {:>9}",
        "op", "GPU", "CPU reference", "difference", "time µs", "GB/s"
    );
    let mut all_ok = true;
    for op in ops {
        let got = (op.call)(ctx, &input)?;
        let (want, diff, ok) = match (op.reference)(data) {
            Reference::Exact(want) => {
                let ok = got == want;
                (want.to_string(), if ok { "none (exact)".to_string() } else { "NOT EQUAL".to_string() }, ok)
            }
            Reference::Within { value, bound } => {
                let g = match got {
                    Val::One(v) => v.to_f64(),
                    Val::At(_) => f64::NAN,
                };
                let diff = (g - value).abs();
                let ok = diff <= bound;
                let verdict = if ok { "<=" } else { "EXCEEDS" };
                (format!("{value:.7} (f64)"), format!("{diff:.1e} {verdict} bound {bound:.1e}"), ok)
            }
        };
        let mut times = Vec::with_capacity(RUNS);
        for run in 0..WARMUP + RUNS {
            let (_, t) = ctx.time(|| (op.call)(ctx, &input))?;
            if run >= WARMUP {
                times.push(t);
            }
        }
        let t = median(times).as_secs_f64();
        println!(
            "  {:<7} {:<24} {:<30} {:<28} {:>10} {:>9}",
            op.name,
            got.to_string(),
            want,
            diff,
            sig(t * 1e6),
            sig(bytes / t / 1e9)
        );
        if !ok {
            println!("  MISMATCH: {} of {label} disagrees with the CPU reference", op.name);
        }
        all_ok &= ok;
    }
    Ok(all_ok)
}

/// The median time of `call` writing `out` (after warm-up runs); then
/// `out` is poisoned, written once more, untimed, and read back for the
/// check.
fn timed_output<T: DeviceRepr>(
    ctx: &Context,
    out: &mut DeviceBuffer<T>,
    call: impl Fn(&mut DeviceBuffer<T>) -> Result<(), gpuprim::Error>,
) -> Result<(Duration, Vec<T>), gpuprim::Error> {
    let mut times = Vec::with_capacity(RUNS);
    for run in 0..WARMUP + RUNS {
        let ((), t) = ctx.time(|| call(out))?;
        if run >= WARMUP {
            times.push(t);
        }
    }
    out.poison()?;
    call(out)?;
    Ok((median(times), out.to_vec()?))
}

/// Scans of the same data: a running total of the hashed integers
/// (exact, wrapping), an exclusive running sum of the signal (f64
/// reference, rounding bound), and the signal smoothed by the recurrence
/// `v[k+1] = (1 - a) v[k] + a x[k]` (an exponential moving average, solved
/// as a scan of affine maps).
// `!(err <= bound)` on purpose: a NaN must fail the comparison.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn show_scans(ctx: &Context, sig: &[f32], ints: &[i32]) -> Result<bool, gpuprim::Error> {
    let n = sig.len();
    // One table row: the call, its check, its median time and the rate for
    // the bytes it must move.
    let row = |name: &str, check: &str, t: Duration, bytes: usize| {
        println!(
            "  {:<34} {:<44} {:>10} {:>9}",
            name,
            check,
            crate::sig(t.as_secs_f64() * 1e6),
            crate::sig(bytes as f64 / t.as_secs_f64() / 1e9)
        )
    };
    let mut ok = true;
    println!("scans ({n} elements):");
    println!("  {:<34} {:<44} {:>10} {:>9}", "op", "check against the CPU", "time µs", "GB/s");

    // Running total of the integers: exact.
    let x = ctx.upload(ints)?;
    let mut y = ctx.alloc::<i32>(n)?;
    let (t, got) = timed_output(ctx, &mut y, |y| ctx.inclusive_scan(&x, y))?;
    let mut run = 0i32;
    let bad = ints.iter().zip(&got).position(|(&v, &g)| {
        run = run.wrapping_add(v);
        g != run
    });
    let check = match bad {
        None => format!("exact; last = {}", got.last().copied().unwrap_or(0)),
        Some(i) => {
            ok = false;
            format!("MISMATCH at {i}")
        }
    };
    row("inclusive_scan (i32, sum)", &check, t, 8 * n);

    // Exclusive running sum of the signal: within the rounding bound.
    let xs = ctx.upload(sig)?;
    let mut ys = ctx.alloc::<f32>(n)?;
    let (t, got) = timed_output(ctx, &mut ys, |ys| ctx.exclusive_scan(&xs, ys, 0.0))?;
    let (mut want, mut abs, mut worst) = (0.0f64, 0.0f64, 0.0f64);
    let depth = 64.0 + 2.0 * (n.max(2) as f64).log2();
    for (i, (&v, &g)) in sig.iter().zip(&got).enumerate() {
        let bound = (depth + (i / 256) as f64) * f32::EPSILON as f64 * abs + f64::MIN_POSITIVE;
        let err = (g as f64 - want).abs();
        if !(err <= bound) {
            ok = false;
        }
        worst = worst.max(err / bound.max(f64::MIN_POSITIVE));
        want += v as f64;
        abs += (v as f64).abs();
    }
    let check =
        format!("{} (worst error {:.2} of its bound)", if worst <= 1.0 { "within bound" } else { "MISMATCH" }, worst);
    row("exclusive_scan (f32, sum)", &check, t, 8 * n);

    // Exponential moving average of the signal through the recurrence.
    let a = 0.01f32;
    let l = ctx.upload(&vec![a; n])?;
    let mut v = ctx.alloc::<f32>(n)?;
    let (t, got) = timed_output(ctx, &mut v, |v| ctx.linear_recurrence(&l, &xs, 0.0, v))?;
    let (mut cur, mut worst) = (0.0f64, 0.0f64);
    for (&x, &g) in sig.iter().zip(&got) {
        cur = (1.0 - a as f64) * cur + a as f64 * x as f64;
        worst = worst.max((g as f64 - cur).abs());
    }
    // Each step contracts earlier errors by (1 - a): rounding stays within
    // a few hundred ulps of the signal's scale.
    let bound = 1e-4;
    if !(worst <= bound) {
        ok = false;
    }
    let check =
        format!("max |error| {worst:.1e} (bound {bound:.0e}); last = {:.4}", got.last().copied().unwrap_or(0.0));
    row("linear_recurrence (f32, EMA 0.01)", &check, t, 12 * n);
    Ok(ok)
}

/// Environment: `GPUPRIM_BACKEND=emu|cuda` picks the backend;
/// `GPUPRIM_REQUIRE_GPU=1` fails rather than fall back to the emulator.
fn main() -> ExitCode {
    let mut small = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--small" => small = true,
            "-h" | "--help" => {
                println!("usage: demo [--small]   (--small: 2^16 elements, e.g. under compute-sanitizer)");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("demo: unknown argument `{other}` (usage: demo [--small])");
                return ExitCode::from(2);
            }
        }
    }
    let (ctx, why_emu) = match open_context() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("demo: {e}");
            return ExitCode::FAILURE;
        }
    };
    match &why_emu {
        None => println!("running on {} ({} SMs)", ctx.device_name(), ctx.multiprocessors()),
        Some(why) => {
            println!("no NVIDIA driver found ({why}): running on the CPU emulator (times are not GPU numbers)")
        }
    }
    let log2 = match (small, ctx.backend()) {
        (true, _) => 16,
        (false, BackendKind::Cuda) => 24,
        (false, BackendKind::Emulator) => 18,
    };
    let n = 1usize << log2;
    println!("data: 2^{log2} = {n} elements each");
    println!("  signal (f32): 0.8 sin(2 pi i/1000) + 0.3 sin(2 pi i/37.3 + 1) + 0.2 sin(2 pi i 1.3e-7) + 0.1 + noise");
    println!("  hashed (i32): splitmix64(i) mod 2001 - 1000");
    println!(
        "each call is timed whole ({}, median of {RUNS}), including reading its result back; GB/s = input bytes / time",
        if ctx.backend() == BackendKind::Cuda { "CUDA events" } else { "emulator wall clock, not GPU speed" }
    );
    println!();

    let run = || -> Result<bool, gpuprim::Error> {
        let a = show(&ctx, "signal", &signal(n, 1), ops::<f32>().into_iter().chain(float_ops()).collect())?;
        println!();
        let b = show(&ctx, "hashed", &hashed(n, 2), ops::<i32>())?;
        println!();
        let c = show_scans(&ctx, &signal(n, 1), &hashed(n, 2))?;
        Ok(a & b & c)
    };
    match run() {
        Ok(true) => {
            println!("\nall results agree with the CPU");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("\nsome results DISAGREE with the CPU (see MISMATCH above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("demo: error on {}: {e}", ctx.device_name());
            ExitCode::FAILURE
        }
    }
}
