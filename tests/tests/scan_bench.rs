//! A quick bandwidth table of every scan algorithm against the
//! device-to-device copy, for tuning on a GPU (the project's benchmark
//! harness, `cargo bench -p gpuprim --bench bench -- scan`, is the
//! reference). Ignored by default:
//!
//! ```text
//! scan_bench-<hash> --ignored --nocapture
//!   GPUPRIM_SCAN_BENCH_SIZES=16,20,24,28  GPUPRIM_SCAN_BENCH_TYPES=i32,f32,f64
//!   GPUPRIM_SCAN_BENCH_ALGS=lookback,three_phase  GPUPRIM_SCAN_BENCH_BLOCK=128
//! ```
//! GB/s counts one read and one write per element (`2 n size_of::<T>()`
//! bytes), for the scans and the copy alike. Each entry is the best of
//! three batches of back-to-back runs, timed with CUDA events; temporary
//! storage is allocated once per size (the `*_with_temp` calls), and the
//! single-pass scans' stream-ordered clear of it is part of the time.
//! Every result is checked (i32 exactly, floats with sums of small dyadic
//! values, which are exact too).

use gpuprim::scan::{ScanAlgorithm, ScanItem, Sum};
use gpuprim::{BackendKind, Context, DeviceBuffer, Scalar};
use std::time::Duration;

fn env_list(name: &str) -> Option<Vec<String>> {
    std::env::var(name).ok().map(|s| s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect())
}

/// Seconds per run: the best of three batches of `reps` runs.
fn best_of(ctx: &Context, reps: usize, mut f: impl FnMut() -> gpuprim::Result<()>) -> f64 {
    f().unwrap();
    ctx.synchronize().unwrap();
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let ((), t) = ctx
            .time(|| {
                for _ in 0..reps {
                    f()?;
                }
                Ok(())
            })
            .unwrap();
        best = best.min(t);
    }
    best.as_secs_f64() / reps as f64
}

trait BenchElem: Scalar + ScanItem + PartialEq {
    fn value(i: usize) -> Self;
}
impl BenchElem for i32 {
    fn value(i: usize) -> Self {
        (((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as i32 - (1 << 23)) | 1
    }
}
impl BenchElem for f32 {
    fn value(i: usize) -> Self {
        ((((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as i32 - 32) | 1) as f32 / 4.0
    }
}
impl BenchElem for f64 {
    fn value(i: usize) -> Self {
        ((((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as i32 - 32) | 1) as f64 / 4.0
    }
}

fn table<T: BenchElem>(ctx: &Context, sizes: &[u32], algs: &[ScanAlgorithm]) {
    let size = std::mem::size_of::<T>() as f64;
    print!("{:>4} {:>9}", T::NAME, "copy");
    for a in algs {
        print!(" {:>13}", a.name());
    }
    println!("   (GB/s)");
    for &lg in sizes {
        let n = 1usize << lg;
        let data: Vec<T> = (0..n).map(T::value).collect();
        let mut want = data.clone();
        let mut run = T::ZERO;
        for w in want.iter_mut() {
            run = run.add(*w);
            *w = run;
        }
        let x = ctx.upload(&data).unwrap();
        let mut y: DeviceBuffer<T> = ctx.alloc(n).unwrap();
        let reps = ((1usize << 26) / n).clamp(3, 200);
        let gbs = |t: f64| 2.0 * n as f64 * size / t / 1e9;
        let t_copy = best_of(ctx, reps, || ctx.copy(&x, &mut y));
        print!("2^{lg:<2} {:>9.1}", gbs(t_copy));
        for &alg in algs {
            let block = std::env::var("GPUPRIM_SCAN_BENCH_BLOCK").ok().and_then(|b| b.parse().ok()).unwrap_or(256);
            let scan = ctx.scan().algorithm(alg).block_size(block);
            let mut temp = scan.temp::<T>(n).unwrap();
            // The ticket chain moves one tile per round trip: fewer runs.
            let reps = if alg == ScanAlgorithm::Tickets || alg == ScanAlgorithm::ThreePhaseHostTotals {
                reps.min(20)
            } else {
                reps
            };
            y.poison().unwrap();
            let t = best_of(ctx, reps, || scan.inclusive_with_temp(&x, &mut y, Sum, &mut temp));
            let got = y.to_vec().unwrap();
            let ok = got == want;
            print!(" {:>12.1}{}", gbs(t), if ok { ' ' } else { '!' });
            assert!(ok, "{} 2^{lg} {}: wrong result", alg.name(), T::NAME);
        }
        println!();
    }
}

#[test]
#[ignore = "benchmark: run on a GPU with --ignored --nocapture"]
fn scan_bandwidth_table() {
    let Some(ctx) = gpuprim_tests::context(BackendKind::Cuda, "scan_bench::scan_bandwidth_table") else { return };
    println!("{}", ctx.device_name());
    let sizes: Vec<u32> = env_list("GPUPRIM_SCAN_BENCH_SIZES")
        .map(|v| v.iter().filter_map(|s| s.parse().ok()).collect())
        .unwrap_or_else(|| (10..=28).collect());
    let algs: Vec<ScanAlgorithm> = env_list("GPUPRIM_SCAN_BENCH_ALGS")
        .map(|v| ScanAlgorithm::ALL.into_iter().filter(|a| v.iter().any(|s| s == a.name())).collect())
        .unwrap_or_else(|| ScanAlgorithm::ALL.to_vec());
    let types = env_list("GPUPRIM_SCAN_BENCH_TYPES").unwrap_or_else(|| vec!["i32".into(), "f32".into(), "f64".into()]);
    for t in &types {
        match t.as_str() {
            "i32" => table::<i32>(&ctx, &sizes, &algs),
            "f32" => table::<f32>(&ctx, &sizes, &algs),
            "f64" => table::<f64>(&ctx, &sizes, &algs),
            other => panic!("unknown type {other}"),
        }
    }
}
