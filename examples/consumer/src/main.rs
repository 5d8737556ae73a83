//! gpuprim as a dependency: this crate sits outside the repository's
//! workspace, uses only the public API and checks every result against a
//! CPU reference, on fresh pseudo-random inputs each run (the seed is
//! printed; `GPUPRIM_CONSUMER_SEED=<n>` repeats a run).
//!
//! It prints the backend and the device, then checks a sum (i32 exactly,
//! f32 within a bound), an inclusive scan, a sum and a scan over borrowed
//! views, and 8 threads sharing clones of one `Context`. It exits non-zero,
//! saying what differed, on any mismatch or error. With
//! `GPUPRIM_REQUIRE_GPU=1` it also fails when it runs on the emulator.

use std::process::ExitCode;
use std::thread;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use gpuprim::{BackendKind, Context};

/// Threads sharing one context in the threads check.
const THREADS: usize = 8;

fn main() -> ExitCode {
    let seed = match std::env::var("GPUPRIM_CONSUMER_SEED") {
        Ok(s) => match s.parse::<u64>() {
            Ok(seed) => seed,
            Err(_) => {
                eprintln!("consumer: GPUPRIM_CONSUMER_SEED={s:?} is not a number");
                return ExitCode::FAILURE;
            }
        },
        Err(_) => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
    };
    let ctx = match Context::new() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("consumer: FAILED: Context::new(): {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("consumer: backend: {}", ctx.backend());
    println!("consumer: device: {}", ctx.device_name());
    println!("consumer: seed: {seed}");
    if std::env::var("GPUPRIM_REQUIRE_GPU").as_deref() == Ok("1") && ctx.backend() != BackendKind::Cuda {
        eprintln!("consumer: FAILED: GPUPRIM_REQUIRE_GPU=1 but Context::new() chose the CPU emulator");
        return ExitCode::FAILURE;
    }
    assert_shareable::<Context>();

    let mut rng = Rng::new(seed);
    // The emulator runs every GPU thread as a coroutine: keep it quick there.
    let (n, per_thread) = match ctx.backend() {
        BackendKind::Cuda => ((1 << 22) + rng.below(1 << 16), (1 << 20) + rng.below(1 << 12)),
        BackendKind::Emulator => (10_000 + rng.below(1_000), 2_000 + rng.below(500)),
    };

    let start = Instant::now();
    let checks: [(&str, Check); 5] = [
        ("sum i32", sum_i32(&ctx, &mut rng, n)),
        ("sum f32", sum_f32(&ctx, &mut rng, n)),
        ("inclusive scan i32", scan_i32(&ctx, &mut rng, n)),
        ("views", views(&ctx, &mut rng, n)),
        ("threads", threads(&ctx, rng.next_u64(), per_thread)),
    ];
    let mut failed = 0;
    for (name, result) in &checks {
        match result {
            Ok(what) => println!("consumer: ok     {name}: {what}"),
            Err(why) => {
                failed += 1;
                println!("consumer: FAILED {name}: {why}");
            }
        }
    }
    let took = start.elapsed().as_secs_f64();
    if failed > 0 {
        eprintln!(
            "consumer: FAILED: {failed} of {} checks on {} (seed {seed}; GPUPRIM_CONSUMER_SEED={seed} repeats it)",
            checks.len(),
            ctx.backend()
        );
        return ExitCode::FAILURE;
    }
    println!("consumer: all {} checks passed on {} ({}) in {took:.2}s", checks.len(), ctx.backend(), ctx.device_name());
    ExitCode::SUCCESS
}

/// A check's outcome: what was checked, or what differed.
type Check = Result<String, String>;

/// gpuprim's errors, as a check's failure.
fn g<T>(what: &str, r: gpuprim::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// `Context` is meant to be cloned into threads: a compile-time check.
fn assert_shareable<T: Clone + Send + Sync + 'static>() {}

fn sum_i32(ctx: &Context, rng: &mut Rng, n: usize) -> Check {
    let x = rng.i32s(n, 1000);
    let got = g("sum", ctx.sum(&g("upload", ctx.upload(&x))?))?;
    let want = x.iter().fold(0i32, |a, &b| a.wrapping_add(b));
    if got != want {
        return Err(format!("n = {n}: gpuprim says {got}, the CPU {want}"));
    }
    Ok(format!("n = {n}, {got}"))
}

fn sum_f32(ctx: &Context, rng: &mut Rng, n: usize) -> Check {
    let x = rng.f32s(n);
    let got = g("sum", ctx.sum(&g("upload", ctx.upload(&x))?))?;
    let want: f64 = x.iter().map(|&v| v as f64).sum();
    let abs: f64 = x.iter().map(|&v| v.abs() as f64).sum();
    // Any order of summation of n terms in f32 stays within n * eps * sum|x|
    // of the exact sum (the bound gpuprim's own tests use).
    let bound = n as f64 * f32::EPSILON as f64 * abs;
    let err = (got as f64 - want).abs();
    if err.is_nan() || err > bound {
        return Err(format!("n = {n}: gpuprim says {got}, the CPU (f64) {want}: off by {err:e}, bound {bound:e}"));
    }
    Ok(format!("n = {n}, {got} (f64 reference {want:.3}, off by {err:.1e}, bound {bound:.1e})"))
}

fn scan_i32(ctx: &Context, rng: &mut Rng, n: usize) -> Check {
    let x = rng.i32s(n, 100);
    let input = g("upload", ctx.upload(&x))?;
    let mut out = g("alloc", ctx.alloc::<i32>(n))?;
    g("inclusive_scan", ctx.inclusive_scan(&input, &mut out))?;
    let got = g("to_vec", out.to_vec())?;
    compare(&got, &inclusive(&x), "inclusive scan")?;
    Ok(format!("n = {n}, last {}", got[n - 1]))
}

/// A sum over `buf.slice(a..b)` and a scan from one view into another
/// (`slice_mut`), which must leave the rest of the output alone.
fn views(ctx: &Context, rng: &mut Rng, n: usize) -> Check {
    let x = rng.i32s(n, 1000);
    let a = rng.below(n / 2);
    let b = n / 2 + rng.below(n - n / 2) + 1;
    let buf = g("upload", ctx.upload(&x))?;

    let got = g("sum of a view", ctx.sum(g("slice", buf.slice(a..b))?))?;
    let want = x[a..b].iter().fold(0i32, |s, &v| s.wrapping_add(v));
    if got != want {
        return Err(format!("sum of buf.slice({a}..{b}) of {n}: gpuprim says {got}, the CPU {want}"));
    }

    const UNTOUCHED: i32 = 0x5eed;
    let mut out = g("upload", ctx.upload(&vec![UNTOUCHED; n]))?;
    let view = g("slice", buf.slice(a..b))?;
    g("inclusive_scan of a view", ctx.inclusive_scan(&view, &mut g("slice_mut", out.slice_mut(a..b))?))?;
    let out = g("to_vec", out.to_vec())?;
    compare(&out[a..b], &inclusive(&x[a..b]), &format!("scan of buf.slice({a}..{b})"))?;
    if let Some(i) = (0..a).chain(b..n).find(|&i| out[i] != UNTOUCHED) {
        return Err(format!("scan into out.slice_mut({a}..{b}) wrote out[{i}] = {} outside the view", out[i]));
    }
    Ok(format!("{a}..{b} of {n}: sum {got}, scan into a view leaves the rest alone"))
}

/// `THREADS` threads, each with a clone of `ctx`, each checking sums and
/// scans of its own inputs at the same time as the others.
fn threads(ctx: &Context, seed: u64, n: usize) -> Check {
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let ctx = ctx.clone();
            thread::spawn(move || -> Check {
                let mut rng = Rng::new(seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                type CheckFn = fn(&Context, &mut Rng, usize) -> Check;
                let checks: [(&str, CheckFn); 3] =
                    [("sum i32", sum_i32), ("sum f32", sum_f32), ("inclusive scan i32", scan_i32)];
                for round in 0..3 {
                    let m = n + rng.below(n / 4 + 1);
                    for (name, check) in checks {
                        check(&ctx, &mut rng, m).map_err(|e| format!("thread {t}, round {round}, {name}: {e}"))?;
                    }
                }
                Ok(String::new())
            })
        })
        .collect();
    let mut errors = Vec::new();
    for (t, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => errors.push(e),
            Err(_) => errors.push(format!("thread {t} panicked")),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    Ok(format!("{THREADS} threads sharing one context, 3 rounds of sum i32, sum f32, scan i32 each, n ~ {n}"))
}

fn inclusive(x: &[i32]) -> Vec<i32> {
    x.iter()
        .scan(0i32, |acc, &v| {
            *acc = acc.wrapping_add(v);
            Some(*acc)
        })
        .collect()
}

fn compare(got: &[i32], want: &[i32], what: &str) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} outputs, expected {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => {
            let wrong = got.iter().zip(want).filter(|(a, b)| a != b).count();
            Err(format!(
                "{what} of {}: first difference at {i}: gpuprim says {}, the CPU {} ({wrong} elements differ)",
                want.len(),
                got[i],
                want[i]
            ))
        }
    }
}

/// SplitMix64: a small, good-enough generator for test inputs.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is irrelevant here).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// `n` integers in `-r..=r`.
    fn i32s(&mut self, n: usize, r: i32) -> Vec<i32> {
        (0..n).map(|_| self.below(2 * r as usize + 1) as i32 - r).collect()
    }

    /// `n` floats in `[0, 1)`, 24 random bits each. Non-negative, so that
    /// the bound on the sum's error is relative to the sum itself.
    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32).collect()
    }
}
