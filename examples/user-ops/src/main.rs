//! Operators of a user's own, on the GPU and on the emulator: this crate
//! sits outside the repository's workspace, like a user's, and has a
//! kernels crate (`kernels/`) that instantiates gpuprim's generic
//! reduction and scan for its `MaxAbs` and `FillForward`; `build.rs`
//! compiles that crate to PTX with gpuprim-builder.
//!
//! It checks, against CPU references on fresh pseudo-random inputs (the
//! seed is printed; `GPUPRIM_USER_OPS_SEED=<n>` repeats a run), that:
//! before loading, the operators are refused with a typed error; after
//! [`Context::load_kernels`], `reduce_by::<i32, MaxAbs>`, the inclusive
//! and exclusive `FillForward` scans, the product of its own Gaussian
//! integers `Gauss` by `reduce_with`, and the sums of the first three
//! powers by its map `Powers` (a 24-byte result) are exact at several
//! sizes, and so are its maps into built-in operators (squared differences
//! from a run-time centre, within rounding; the L-infinity norm); a forked
//! context on the same device sees them; a context of its own (the
//! emulator) does not until it loads them too. It runs these on the
//! backend `Context::new()` picks and, when that is CUDA, on the emulator
//! as well. It exits non-zero, saying what differed, on any mismatch; with
//! `GPUPRIM_REQUIRE_GPU=1` it also fails when no GPU is used.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use gpuprim::reduce::Finish;
use gpuprim::{BackendKind, Context, Error};
use user_ops_kernels::{FillForward, Gauss, GaussMul, Magnitude, MaxAbs, PowerSums, Powers, SquaredDiff};

type Check = Result<String, String>;

fn main() -> ExitCode {
    let seed = match std::env::var("GPUPRIM_USER_OPS_SEED") {
        Ok(s) => match s.parse::<u64>() {
            Ok(seed) => seed,
            Err(_) => {
                eprintln!("user-ops: GPUPRIM_USER_OPS_SEED={s:?} is not a number");
                return ExitCode::FAILURE;
            }
        },
        Err(_) => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
    };
    let ctx = match Context::new() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("user-ops: FAILED: Context::new(): {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("user-ops: backend: {}", ctx.backend());
    println!("user-ops: device: {}", ctx.device_name());
    println!("user-ops: seed: {seed}");
    if std::env::var("GPUPRIM_REQUIRE_GPU").as_deref() == Ok("1") && ctx.backend() != BackendKind::Cuda {
        eprintln!("user-ops: FAILED: GPUPRIM_REQUIRE_GPU=1 but Context::new() chose the CPU emulator");
        return ExitCode::FAILURE;
    }
    let mut rng = Rng(seed);
    let mut contexts = vec![ctx.clone()];
    if ctx.backend() == BackendKind::Cuda {
        contexts.push(Context::emulator());
    }
    let mut checks: Vec<(String, Check)> = Vec::new();
    for c in &contexts {
        let on = c.backend();
        checks.push((format!("refused before loading ({on})"), refused_before_loading(c)));
        checks.push((format!("load_kernels ({on})"), load(c)));
        // The emulator runs every GPU thread as a coroutine: keep it quick.
        let big = match on {
            BackendKind::Cuda => (1 << 24) + rng.below(1 << 16),
            BackendKind::Emulator => 20_000 + rng.below(5_000),
        };
        // Around a block's tile (256 threads), one element, and large.
        let sizes = [1, 255 + rng.below(3), 4096 + rng.below(4096), big];
        checks.push((format!("reduce_by MaxAbs ({on})"), max_abs(c, &mut rng, &sizes)));
        checks.push((format!("FillForward scans ({on})"), fill_forward(c, &mut rng, &sizes)));
        checks.push((format!("reduce_with GaussMul ({on})"), gauss_products(c, &mut rng, &sizes)));
        checks.push((format!("transform_reduce Powers ({on})"), power_sums(c, &mut rng, &sizes)));
        checks.push((format!("SquaredDiff and Magnitude maps ({on})"), centred_and_norm(c, &mut rng, &sizes)));
        checks.push((format!("forked context ({on})"), forked(c, &mut rng)));
    }
    checks.push(("another device's context".into(), other_context(&mut rng)));
    let mut failed = 0;
    for (name, result) in &checks {
        match result {
            Ok(what) => println!("user-ops: ok     {name}: {what}"),
            Err(why) => {
                failed += 1;
                println!("user-ops: FAILED {name}: {why}");
            }
        }
    }
    if failed > 0 {
        eprintln!(
            "user-ops: FAILED: {failed} of {} checks (GPUPRIM_USER_OPS_SEED={seed} repeats the run)",
            checks.len()
        );
        return ExitCode::FAILURE;
    }
    println!("user-ops: all {} checks passed on {}", checks.len(), ctx.device_name());
    ExitCode::SUCCESS
}

fn kernels() -> gpuprim::UserKernels {
    gpuprim::user_kernels!(user_ops_kernels)
}

/// Before `load_kernels`, the user's operators have no kernels here.
fn refused_before_loading(ctx: &Context) -> Check {
    let x = ctx.upload(&[1, -2, 3]).map_err(|e| e.to_string())?;
    match ctx.reduce_by::<i32, MaxAbs>(&x) {
        Err(Error::Unsupported { reason, .. }) if reason.contains("load_kernels") => {
            Ok("Error::Unsupported, naming load_kernels".into())
        }
        other => Err(format!("expected Error::Unsupported naming load_kernels, got {other:?}")),
    }
}

fn load(ctx: &Context) -> Check {
    let k = kernels();
    ctx.load_kernels(&k).map_err(|e| e.to_string())?;
    // Loading again is allowed and changes nothing.
    ctx.load_kernels(&k).map_err(|e| format!("loading a second time: {e}"))?;
    Ok(format!("{} ({} bytes of PTX), twice", k.name(), k.ptx().len()))
}

fn max_abs(ctx: &Context, rng: &mut Rng, sizes: &[usize]) -> Check {
    for &n in sizes {
        let data = rng.i32s(n);
        let want = data.iter().copied().fold(0, MaxAbs::apply);
        let x = ctx.upload(&data).map_err(|e| e.to_string())?;
        let got = ctx.reduce_by::<i32, MaxAbs>(&x).map_err(|e| format!("n = {n}: {e}"))?;
        if got != want {
            return Err(format!("n = {n}: got {got}, expected {want}"));
        }
    }
    Ok(format!("sizes {sizes:?}"))
}

fn fill_forward(ctx: &Context, rng: &mut Rng, sizes: &[usize]) -> Check {
    for &n in sizes {
        // Mostly zeros, so that values are carried over long gaps, some of
        // them across tiles.
        let data: Vec<i32> = (0..n).map(|_| if rng.below(300) == 0 { rng.i32s(1)[0] } else { 0 }).collect();
        let init = rng.i32s(1)[0];
        let mut inclusive = Vec::with_capacity(n);
        let mut exclusive = Vec::with_capacity(n);
        let (mut acc, mut ex) = (0, init);
        for &v in &data {
            exclusive.push(ex);
            acc = FillForward::apply(acc, v);
            ex = FillForward::apply(ex, v);
            inclusive.push(acc);
        }
        let x = ctx.upload(&data).map_err(|e| e.to_string())?;
        let mut y = ctx.upload(&vec![i32::MIN; n]).map_err(|e| e.to_string())?;
        ctx.inclusive_scan_by(&x, &mut y, FillForward).map_err(|e| format!("inclusive, n = {n}: {e}"))?;
        first_difference(&y.to_vec().map_err(|e| e.to_string())?, &inclusive)
            .map_or(Ok(()), |i| Err(format!("inclusive, n = {n}: first difference at {i}")))?;
        y.copy_from_host(&vec![i32::MIN; n]).map_err(|e| e.to_string())?;
        ctx.exclusive_scan_by(&x, &mut y, init, FillForward).map_err(|e| format!("exclusive, n = {n}: {e}"))?;
        first_difference(&y.to_vec().map_err(|e| e.to_string())?, &exclusive)
            .map_or(Ok(()), |i| Err(format!("exclusive, n = {n}: first difference at {i}")))?;
    }
    Ok(format!("inclusive and exclusive, sizes {sizes:?}"))
}

/// Products of random Gaussian integers through `reduce_with` (a type of
/// this crate's own, exact, so any combine order gives the same bits),
/// with every finish.
fn gauss_products(ctx: &Context, rng: &mut Rng, sizes: &[usize]) -> Check {
    for &n in sizes {
        // Odd parts, so that the product does not collapse to zero.
        let data: Vec<Gauss> = (0..n)
            .map(|_| {
                let v = rng.next_u64();
                Gauss { re: v as u32 | 1, im: (v >> 32) as u32 }
            })
            .collect();
        let want = data.iter().copied().fold(Gauss { re: 1, im: 0 }, GaussMul::apply);
        let x = ctx.upload(&data).map_err(|e| e.to_string())?;
        for fin in Finish::ALL {
            let got =
                ctx.reducer().finish(fin).reduce_with(&x, GaussMul).map_err(|e| format!("n = {n}, {fin:?}: {e}"))?;
            if got != want {
                return Err(format!("n = {n}, {fin:?}: got {got:?}, expected {want:?}"));
            }
        }
        // The stream-ordered form with temporary storage of its own.
        let r = ctx.reducer();
        let mut temp = r.temp::<Gauss>(n).map_err(|e| e.to_string())?;
        let mut out = ctx.upload(&[Gauss { re: 7, im: 7 }]).map_err(|e| e.to_string())?;
        r.reduce_with_temp(&x, GaussMul, &mut out, &mut temp).map_err(|e| format!("n = {n}, with temp: {e}"))?;
        let got = out.to_vec().map_err(|e| e.to_string())?[0];
        if got != want {
            return Err(format!("n = {n}, with temp: got {got:?}, expected {want:?}"));
        }
    }
    Ok(format!("every finish, and with temp, sizes {sizes:?}"))
}

/// The sums of x, x^2 and x^3 in one pass (a map to 24 bytes), into a
/// poisoned output.
fn power_sums(ctx: &Context, rng: &mut Rng, sizes: &[usize]) -> Check {
    for &n in sizes {
        let data = rng.i32s(n);
        let want = data.iter().map(|&v| Powers::apply(v)).fold(PowerSums::default(), |a, b| PowerSums {
            s1: a.s1.wrapping_add(b.s1),
            s2: a.s2.wrapping_add(b.s2),
            s3: a.s3.wrapping_add(b.s3),
        });
        let x = ctx.upload(&data).map_err(|e| e.to_string())?;
        let mut out = ctx.upload(&[PowerSums { s1: 7, s2: 7, s3: 7 }]).map_err(|e| e.to_string())?;
        for fin in [Finish::LastBlock, Finish::Relaunch, Finish::Host] {
            ctx.reducer()
                .finish(fin)
                .transform_reduce_into(&x, Powers, &mut out)
                .map_err(|e| format!("n = {n}: {e}"))?;
            let got = out.to_vec().map_err(|e| e.to_string())?[0];
            if got != want {
                return Err(format!("n = {n}, {fin:?}: got {got:?}, expected {want:?}"));
            }
        }
    }
    Ok(format!("every finish with partials, sizes {sizes:?}"))
}

/// Squared differences from a run-time centre (summed in `f64`, within
/// rounding of the CPU's sum) and the L-infinity norm (exact), each in one
/// pass.
fn centred_and_norm(ctx: &Context, rng: &mut Rng, sizes: &[usize]) -> Check {
    for &n in sizes {
        let xs: Vec<f64> = rng.i32s(n).iter().map(|&v| v as f64 / 65536.0).collect();
        let centre = xs.first().copied().unwrap_or(0.0) + 0.25;
        let want: f64 = xs.iter().map(|&x| (x - centre) * (x - centre)).sum();
        let x = ctx.upload(&xs).map_err(|e| e.to_string())?;
        let got = ctx.transform_reduce(&x, SquaredDiff { centre }).map_err(|e| format!("n = {n}: {e}"))?;
        // Sums of n positive terms in any order: within n ulps of the sum.
        if (got - want).abs() > want * n as f64 * f64::EPSILON {
            return Err(format!("squared differences, n = {n}: got {got}, expected {want}"));
        }
        let fs: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
        let want = fs.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v.abs()));
        let f = ctx.upload(&fs).map_err(|e| e.to_string())?;
        let got = ctx.transform_reduce(&f, Magnitude).map_err(|e| format!("n = {n}: {e}"))?;
        if got != want {
            return Err(format!("L-infinity norm, n = {n}: got {got}, expected {want}"));
        }
    }
    Ok(format!("sizes {sizes:?}"))
}

/// A context on another stream of the same device shares what was loaded.
fn forked(ctx: &Context, rng: &mut Rng) -> Check {
    let other = ctx.fork().map_err(|e| e.to_string())?;
    let data = rng.i32s(1000);
    let x = other.upload(&data).map_err(|e| e.to_string())?;
    let got = other.reduce_by::<i32, MaxAbs>(&x).map_err(|e| e.to_string())?;
    let want = data.iter().copied().fold(0, MaxAbs::apply);
    if got != want {
        return Err(format!("got {got}, expected {want}"));
    }
    Ok("the fork finds the loaded kernels".into())
}

/// A context of its own needs its own `load_kernels`.
fn other_context(rng: &mut Rng) -> Check {
    let fresh = Context::emulator();
    refused_before_loading(&fresh)?;
    fresh.load_kernels(&kernels()).map_err(|e| e.to_string())?;
    let data = rng.i32s(100);
    let x = fresh.upload(&data).map_err(|e| e.to_string())?;
    let got = fresh.reduce_by::<i32, MaxAbs>(&x).map_err(|e| e.to_string())?;
    let want = data.iter().copied().fold(0, MaxAbs::apply);
    if got != want {
        return Err(format!("got {got}, expected {want}"));
    }
    Ok("refused, then loaded and right".into())
}

fn first_difference<T: PartialEq>(got: &[T], want: &[T]) -> Option<usize> {
    (got.len() != want.len())
        .then_some(got.len().min(want.len()))
        .or_else(|| got.iter().zip(want).position(|(a, b)| a != b))
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
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

    /// A matrix of random words.
    /// `n` integers over the whole range, so that magnitudes and signs vary
    /// (i32::MIN included now and then).
    fn i32s(&mut self, n: usize) -> Vec<i32> {
        (0..n).map(|_| self.next_u64() as i32 >> self.below(31)).collect()
    }
}
