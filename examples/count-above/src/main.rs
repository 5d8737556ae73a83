//! The number of elements above a threshold, counted in one pass on the
//! GPU (and the emulator) with a map of this crate's own whose threshold
//! is chosen at run time.
//!
//! On fresh pseudo-random data (the seed is printed;
//! `GPUPRIM_COUNT_ABOVE_SEED=<n>` repeats a run) it checks, against a
//! count on the CPU, several thresholds over the same buffer (below every
//! element, above every element, and random ones), with every finishing
//! strategy, through the value-returning and the stream-ordered forms,
//! and on a view that starts inside the buffer. Exits non-zero on any
//! difference.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use count_above_kernels::CountAbove;
use gpuprim::reduce::Finish;
use gpuprim::{BackendKind, Context};

fn main() -> ExitCode {
    let seed = std::env::var("GPUPRIM_COUNT_ABOVE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64));
    match run(seed) {
        Ok(()) => {
            println!("count-above: PASS");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("count-above: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(seed: u64) -> Result<(), String> {
    let ctx = Context::new().map_err(|e| format!("Context::new(): {e}"))?;
    println!("count-above: backend: {}", ctx.backend());
    println!("count-above: device: {}, seed: {seed}", ctx.device_name());
    if std::env::var("GPUPRIM_REQUIRE_GPU").as_deref() == Ok("1") && ctx.backend() != BackendKind::Cuda {
        return Err("GPUPRIM_REQUIRE_GPU=1 but Context::new() chose the CPU emulator".into());
    }
    let mut contexts = vec![ctx.clone()];
    if ctx.backend() == BackendKind::Cuda {
        contexts.push(Context::emulator());
    }
    let mut rng = Rng(seed);
    for c in &contexts {
        let before = c.transform_reduce(&[1.0f32][..], CountAbove { threshold: 0.0 });
        if before.is_ok() {
            return Err(format!("counted on {} before its kernels were loaded", c.backend()));
        }
        c.load_kernels(&gpuprim::user_kernels!(count_above_kernels)).map_err(|e| format!("load_kernels: {e}"))?;
        let n = if c.backend() == BackendKind::Cuda { 50_000_017 } else { 30_011 };
        let x: Vec<f32> = (0..n).map(|_| (rng.unit() * 200.0 - 100.0) as f32).collect();
        let buf = c.upload(&x).map_err(|e| e.to_string())?;
        let mut thresholds = vec![-1000.0f32, 1000.0, 0.0];
        thresholds.extend((0..4).map(|_| (rng.unit() * 200.0 - 100.0) as f32));
        let mut out = c.alloc::<u64>(1).map_err(|e| e.to_string())?;
        for &t in &thresholds {
            let want = x.iter().filter(|&&v| v > t).count() as u64;
            for fin in Finish::ALL {
                let r = c.reducer().finish(fin);
                let got = r.transform_reduce(&buf, CountAbove { threshold: t }).map_err(|e| format!("{fin:?}: {e}"))?;
                out.poison().map_err(|e| e.to_string())?;
                r.transform_reduce_into(&buf, CountAbove { threshold: t }, &mut out).map_err(|e| e.to_string())?;
                let into = out.to_vec().map_err(|e| e.to_string())?[0];
                if got != want || into != want {
                    return Err(format!(
                        "threshold {t}, {fin:?} on {}: {got} (into: {into}), want {want} of {n}",
                        c.backend()
                    ));
                }
            }
            // A view from element 3 on (not 16-byte aligned).
            let view = buf.slice(3..).map_err(|e| e.to_string())?;
            let got = c.transform_reduce(view, CountAbove { threshold: t }).map_err(|e| e.to_string())?;
            let want_view = x[3..].iter().filter(|&&v| v > t).count() as u64;
            if got != want_view {
                return Err(format!("threshold {t}, view 3.. on {}: {got}, want {want_view}", c.backend()));
            }
            println!("count-above: ok     {want} of {n} above {t} on {} (every finish, into, a view)", c.backend());
        }
    }
    Ok(())
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
