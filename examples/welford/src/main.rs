//! Mean and variance in one pass over `f32` data, with a map and an
//! accumulator type of this crate's own (`kernels/`: Welford's statistic
//! and its pairwise merge), on the GPU and on the emulator.
//!
//! It checks the mean and the variance against an `f64` two-pass
//! reference on fresh pseudo-random data (an offset of 1000 and a spread
//! of about 1: what the naive `sum(x^2)` formula gets badly wrong in
//! `f32`), at several sizes up to 2^28 on the GPU; the empty input gives
//! the identity. On the GPU it then times the pass beside `sum_into` of
//! the same data (CUDA events, medians of 30 alternating runs) and prints
//! both bandwidths: a statistic of three values per element costs next to
//! nothing over a plain sum when the input is read once. It exits
//! non-zero, saying what differed, on a wrong result.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use gpuprim::{BackendKind, Context};
use welford_kernels::{Stats, ToStats};

fn main() -> ExitCode {
    let seed = std::env::var("GPUPRIM_WELFORD_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64));
    match run(seed) {
        Ok(()) => {
            println!("welford: PASS");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("welford: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(seed: u64) -> Result<(), String> {
    let ctx = Context::new().map_err(|e| format!("Context::new(): {e}"))?;
    println!("welford: backend: {}", ctx.backend());
    println!("welford: device: {}, seed: {seed}", ctx.device_name());
    if std::env::var("GPUPRIM_REQUIRE_GPU").as_deref() == Ok("1") && ctx.backend() != BackendKind::Cuda {
        return Err("GPUPRIM_REQUIRE_GPU=1 but Context::new() chose the CPU emulator".into());
    }
    let mut contexts = vec![ctx.clone()];
    if ctx.backend() == BackendKind::Cuda {
        contexts.push(Context::emulator());
    }
    let mut rng = Rng(seed);
    for c in &contexts {
        c.load_kernels(&gpuprim::user_kernels!(welford_kernels)).map_err(|e| format!("load_kernels: {e}"))?;
        let sizes: &[usize] =
            if c.backend() == BackendKind::Cuda { &[1, 1000, 3_000_017, 1 << 28] } else { &[1, 1000, 70_001] };
        let empty = c.transform_reduce(&[][..], ToStats).map_err(|e| format!("empty input: {e}"))?;
        if empty != (Stats { count: 0.0, mean: 0.0, m2: 0.0 }) {
            return Err(format!("empty input ({}): {empty:?}, want the identity", c.backend()));
        }
        for &n in sizes {
            let x: Vec<f32> = (0..n).map(|_| 1000.0 + rng.unit() as f32 * 3.5).collect();
            let (mean, var) = reference(&x);
            let buf = c.upload(&x).map_err(|e| format!("upload: {e}"))?;
            let s = c.transform_reduce(&buf, ToStats).map_err(|e| format!("transform_reduce n={n}: {e}"))?;
            let (got_mean, got_var) = (s.mean as f64, s.variance() as f64);
            let ok = (s.count as f64 - n as f64).abs() <= n as f64 * 1e-6
                && (got_mean - mean).abs() <= 1e-5 * mean.abs()
                && (got_var - var).abs() <= 1e-3 * var;
            let line = format!(
                "n = {n}: mean {got_mean:.6} (f64 {mean:.6}), variance {got_var:.6} (f64 {var:.6}) on {}",
                c.backend()
            );
            if !ok {
                return Err(line);
            }
            println!("welford: ok     {line}");
            if c.backend() == BackendKind::Cuda && n == 1 << 28 {
                bench(c, &buf)?;
            }
        }
    }
    Ok(())
}

/// GPU time of the Welford pass and of `sum_into` over the same data,
/// alternating, medians of 30 each.
fn bench(ctx: &Context, x: &gpuprim::DeviceBuffer<f32>) -> Result<(), String> {
    let e = |e: gpuprim::Error| e.to_string();
    let mut stats = ctx.alloc::<Stats>(1).map_err(e)?;
    let mut sum = ctx.alloc::<f32>(1).map_err(e)?;
    let mut temp = ctx.reducer().temp::<f32>(x.len()).map_err(e)?;
    let r = ctx.reducer();
    let (mut t_welford, mut t_sum) = (Vec::new(), Vec::new());
    for rep in 0..33 {
        let a = ctx.record_timed_event().map_err(e)?;
        r.transform_reduce_with_temp(x, ToStats, &mut stats, &mut temp).map_err(e)?;
        let b = ctx.record_timed_event().map_err(e)?;
        r.sum_with_temp(x, &mut sum, &mut temp).map_err(e)?;
        let c = ctx.record_timed_event().map_err(e)?;
        if rep >= 3 {
            t_welford.push(a.elapsed_ms(&b).map_err(e)?.unwrap_or(f32::NAN) as f64);
            t_sum.push(b.elapsed_ms(&c).map_err(e)?.unwrap_or(f32::NAN) as f64);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (w, s) = (median(&mut t_welford), median(&mut t_sum));
    let gbs = |ms: f64| x.len() as f64 * 4.0 / (ms * 1e-3) / 1e9;
    println!(
        "welford: bench  n = 2^28 f32 on {}: welford {:.1} us, {:.0} GB/s; sum_into {:.1} us, {:.0} GB/s; \
         welford / sum_into bandwidth = {:.3}",
        ctx.device_name(),
        w * 1e3,
        gbs(w),
        s * 1e3,
        gbs(s),
        s / w
    );
    Ok(())
}

/// Mean and population variance in `f64`, two passes.
fn reference(x: &[f32]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean, var)
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
