//! Test support: run a test on every backend that is present, log which
//! ran, draw inputs, compare against CPU references.
//!
//! Each backend test is two `#[test]` functions, `NAME::emu` and
//! `NAME::cuda` (see [`backend_test!`]). The emulator always runs. The CUDA
//! one runs where a driver and device are present; elsewhere it prints and
//! logs a skip — unless `GPUPRIM_REQUIRE_GPU=1`, when it fails instead (the
//! GPU bundle sets that, so no GPU test is silently skipped there).
//!
//! `GPUPRIM_TEST_LOG` names a file that gets one line per backend test:
//! `ran <backend> <test>` or `skip <backend> <test> <reason>`; `cargo xtask
//! test` sums it up per backend.

use gpuprim::{BackendKind, Context};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use std::io::Write;

pub use gpuprim;
pub use proptest;

/// The test-only kernels' PTX, as `cargo xtask artifact` writes it.
pub const TESTING_PTX: &[u8] = include_bytes!("../kernels/testing.ptx.zst");
const TESTING_PTX_FILE: &str = "tests/kernels/testing.ptx.zst";

/// Append one line to the backend log, if one is configured.
pub fn log(line: &str) {
    if let Ok(path) = std::env::var("GPUPRIM_TEST_LOG")
        && let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path)
    {
        // One write per line: parallel test processes append to the same
        // file, and O_APPEND keeps a single write whole.
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// The context for `kind`, or `None` (with the skip printed and logged)
/// where that backend is absent.
pub fn context(kind: BackendKind, test: &str) -> Option<Context> {
    match kind {
        BackendKind::Emulator => {
            log(&format!("ran emu {test}"));
            Some(Context::emulator())
        }
        BackendKind::Cuda => match Context::cuda() {
            Ok(ctx) => {
                // The deliberately faulty and other test-only kernels do not
                // ship with the library; the tests bring their own PTX.
                ctx.register_ptx_container(TESTING_PTX_FILE, TESTING_PTX).expect("the tests' PTX container decodes");
                log(&format!("ran cuda {test}"));
                Some(ctx)
            }
            Err(e) => {
                if std::env::var("GPUPRIM_REQUIRE_GPU").as_deref() == Ok("1") {
                    panic!("GPUPRIM_REQUIRE_GPU=1 but CUDA is unavailable: {e}");
                }
                let reason = format!("no CUDA driver or device ({e})");
                println!("SKIPPED on cuda: {test}: {reason}");
                log(&format!("skip cuda {test} {reason}"));
                None
            }
        },
    }
}

/// Define a test that runs once per backend: `NAME::emu` and `NAME::cuda`.
///
/// ```ignore
/// backend_test!(sum_matches_cpu, |ctx| { ... });
/// ```
#[macro_export]
macro_rules! backend_test {
    ($(#[$m:meta])* $name:ident, |$ctx:ident| $body:block) => {
        $(#[$m])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            fn body($ctx: &$crate::gpuprim::Context) $body
            #[test]
            fn emu() {
                if let Some(ctx) = $crate::context($crate::gpuprim::BackendKind::Emulator, concat!(module_path!(), "::emu")) {
                    body(&ctx)
                }
            }
            #[test]
            fn cuda() {
                if let Some(ctx) = $crate::context($crate::gpuprim::BackendKind::Cuda, concat!(module_path!(), "::cuda")) {
                    body(&ctx)
                }
            }
        }
    };
}

/// Property-test cases for this backend: `emu` on the emulator, `gpu` on
/// CUDA, both scaled by `GPUPRIM_CASES_SCALE` (a float, default 1).
pub fn cases(ctx: &Context, emu: u32, gpu: u32) -> u32 {
    let scale: f64 = std::env::var("GPUPRIM_CASES_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let base = match ctx.backend() {
        BackendKind::Emulator => emu,
        BackendKind::Cuda => gpu,
    };
    ((base as f64 * scale).round() as u32).max(1)
}

/// Run a property: `cases` inputs drawn from `strategy`, each checked by
/// `test`; panics with the (shrunk) failing input. Seeds come from the
/// environment like any proptest (`PROPTEST_RNG_SEED`), else are fresh.
pub fn check<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    match runner.run(&strategy, test) {
        Ok(()) => {}
        Err(TestError::Fail(why, input)) => panic!("property failed: {why}\ninput: {}", short(&input)),
        Err(TestError::Abort(why)) => panic!("property aborted: {why}"),
    }
}

/// Draw one value (for tests that want a single random input).
pub fn draw<S: Strategy>(strategy: S) -> S::Value {
    let mut runner = TestRunner::default();
    strategy.new_tree(&mut runner).expect("strategy produced a value").current()
}

fn short<T: std::fmt::Debug>(v: &T) -> String {
    let s = format!("{v:?}");
    if s.len() > 2000 { format!("{}... ({} chars)", &s[..2000], s.len()) } else { s }
}

/// Sizes worth testing around a tile of `tile` elements: 1, 31, 32, 33,
/// tile-1, tile, tile+1, and a few multiples and odd sizes below `max`.
pub fn edge_sizes(tile: usize, max: usize) -> Vec<usize> {
    let mut v = vec![1, 2, 31, 32, 33, 63, 64, 65, tile - 1, tile, tile + 1, 2 * tile - 1, 2 * tile + 1];
    let mut k = 4 * tile + 7;
    while k <= max {
        v.push(k);
        k = k * 5 + 3;
    }
    v.retain(|&n| n <= max);
    v.sort_unstable();
    v.dedup();
    v
}

/// Relative bound for a float sum of `n` terms whose absolute values add up
/// to `abs_sum`, in precision with unit roundoff `eps`: the classic
/// `n * eps * sum |x|` worst case for any summation order, with a floor.
pub fn float_sum_bound(n: usize, eps: f64, abs_sum: f64) -> f64 {
    (n.max(1) as f64) * eps * abs_sum + f64::MIN_POSITIVE
}

/// Offsets for the GPU-only tests beyond 32-bit indexing, drawn with
/// `below(k)` (a value in `0..k`): `[0, a)`, a segment of more than 2^31
/// items, a filler up to near 2^32, then short random segments (a tenth
/// empty) until just past `2^32 + 2000`. The input must hold more than
/// `2^32 + 2700` items.
pub fn offsets_beyond_2_32(mut below: impl FnMut(u64) -> u64) -> Vec<u64> {
    let a = 1 + below(3000);
    let mut offsets = vec![0, a, a + (1 << 31) + 1 + below(1 << 20), (1 << 32) - 40_000 - below(10_000)];
    while *offsets.last().unwrap() < (1u64 << 32) + 2000 {
        let len = if below(10) == 0 { 0 } else { below(700) };
        offsets.push(offsets.last().unwrap() + len);
    }
    offsets
}
