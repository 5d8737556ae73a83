//! Fibonacci numbers modulo 2^32 by an inclusive scan of 2x2 matrix
//! products, with a matrix type and operator of this crate's own
//! (`kernels/`), on the GPU and on the emulator.
//!
//! The `k`-th running product of `[[1, 1], [1, 0]]` is
//! `[[F(k+1), F(k)], [F(k), F(k-1)]]`: every one is checked exactly
//! against the Fibonacci numbers computed by addition (2^24 of them on
//! the GPU). Running products of random matrices, inclusive and exclusive
//! (with an initial matrix), are checked against the CPU too: the product
//! does not commute, so a scan that combined out of order would differ.
//! Random inputs are fresh each run (the seed is printed;
//! `GPUPRIM_FIBONACCI_SEED=<n>` repeats a run). Exits non-zero on any
//! difference.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use fibonacci_kernels::{Mat2, MatMul};
use gpuprim::{BackendKind, Context};

fn main() -> ExitCode {
    let seed = std::env::var("GPUPRIM_FIBONACCI_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64));
    match run(seed) {
        Ok(()) => {
            println!("fibonacci: PASS");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fibonacci: FAILED: {e} (GPUPRIM_FIBONACCI_SEED={seed} repeats the run)");
            ExitCode::FAILURE
        }
    }
}

fn run(seed: u64) -> Result<(), String> {
    let ctx = Context::new().map_err(|e| format!("Context::new(): {e}"))?;
    println!("fibonacci: backend: {}", ctx.backend());
    println!("fibonacci: device: {}, seed: {seed}", ctx.device_name());
    if std::env::var("GPUPRIM_REQUIRE_GPU").as_deref() == Ok("1") && ctx.backend() != BackendKind::Cuda {
        return Err("GPUPRIM_REQUIRE_GPU=1 but Context::new() chose the CPU emulator".into());
    }
    let mut contexts = vec![ctx.clone()];
    if ctx.backend() == BackendKind::Cuda {
        contexts.push(Context::emulator());
    }
    let mut rng = Rng(seed);
    for c in &contexts {
        c.load_kernels(&gpuprim::user_kernels!(fibonacci_kernels)).map_err(|e| format!("load_kernels: {e}"))?;
        let big = if c.backend() == BackendKind::Cuda { (1 << 24) + rng.below(1 << 16) } else { 20_000 };
        let last = fibonacci(c, big)?;
        println!("fibonacci: ok     F(1) ..= F({big}) exact on {}; F({big}) mod 2^32 = {last}", c.backend());
        let sizes = [1, 255 + rng.below(3), 4096 + rng.below(4096), big];
        random_products(c, &mut rng, &sizes)?;
        println!(
            "fibonacci: ok     random matrix products, inclusive and exclusive, sizes {sizes:?} on {}",
            c.backend()
        );
    }
    Ok(())
}

/// The first `n` powers of the Fibonacci matrix by a scan, each checked;
/// returns F(n) mod 2^32.
fn fibonacci(ctx: &Context, n: usize) -> Result<u32, String> {
    let x = ctx.upload(&vec![Mat2::FIBONACCI; n]).map_err(|e| e.to_string())?;
    let mut y = ctx.upload(&vec![Mat2 { a: 7, b: 7, c: 7, d: 7 }; n]).map_err(|e| e.to_string())?;
    ctx.inclusive_scan_by(&x, &mut y, MatMul).map_err(|e| e.to_string())?;
    let powers = y.to_vec().map_err(|e| e.to_string())?;
    let (mut prev, mut cur) = (0u32, 1u32); // F(k-1), F(k) for k = 1
    for (i, p) in powers.iter().enumerate() {
        let next = prev.wrapping_add(cur);
        if (p.a, p.b, p.c, p.d) != (next, cur, cur, prev) {
            return Err(format!("power {}: got {p:?}, expected F = ({next}, {cur}, {cur}, {prev})", i + 1));
        }
        (prev, cur) = (cur, next);
    }
    Ok(prev)
}

/// Running products of random matrices, inclusive and exclusive, against
/// the CPU, into poisoned outputs.
fn random_products(ctx: &Context, rng: &mut Rng, sizes: &[usize]) -> Result<(), String> {
    for &n in sizes {
        let data: Vec<Mat2> = (0..n).map(|_| rng.mat2()).collect();
        let init = rng.mat2();
        let (mut inclusive, mut exclusive) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut acc, mut ex) = (Mat2::IDENTITY, init);
        for &m in &data {
            exclusive.push(ex);
            acc = acc.mul(m);
            ex = ex.mul(m);
            inclusive.push(acc);
        }
        let poison = Mat2 { a: u32::MAX, b: 7, c: u32::MAX, d: 7 };
        let x = ctx.upload(&data).map_err(|e| e.to_string())?;
        let mut y = ctx.upload(&vec![poison; n]).map_err(|e| e.to_string())?;
        ctx.inclusive_scan_by(&x, &mut y, MatMul).map_err(|e| format!("inclusive, n = {n}: {e}"))?;
        if let Some(i) = first_difference(&y.to_vec().map_err(|e| e.to_string())?, &inclusive) {
            return Err(format!("inclusive, n = {n}: first difference at {i}"));
        }
        y.copy_from_host(&vec![poison; n]).map_err(|e| e.to_string())?;
        ctx.exclusive_scan_by(&x, &mut y, init, MatMul).map_err(|e| format!("exclusive, n = {n}: {e}"))?;
        if let Some(i) = first_difference(&y.to_vec().map_err(|e| e.to_string())?, &exclusive) {
            return Err(format!("exclusive, n = {n}: first difference at {i}"));
        }
    }
    Ok(())
}

fn first_difference<T: PartialEq>(got: &[T], want: &[T]) -> Option<usize> {
    (got.len() != want.len())
        .then_some(got.len().min(want.len()))
        .or_else(|| got.iter().zip(want).position(|(a, b)| a != b))
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

    /// Uniform in `0..n` (n > 0; the modulo bias is irrelevant here).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn mat2(&mut self) -> Mat2 {
        let (x, y) = (self.next_u64(), self.next_u64());
        Mat2 { a: x as u32, b: (x >> 32) as u32, c: y as u32, d: (y >> 32) as u32 }
    }
}
