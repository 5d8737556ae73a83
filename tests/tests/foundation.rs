//! The first kernel end to end: the shuffle reduction against a CPU
//! reference on every backend, and the emulator catching the lectures'
//! lockstep-only warp tail.

use gpuprim::{Error, FaultKind, LaunchConfig};
use gpuprim_tests::{backend_test, cases, check, edge_sizes, float_sum_bound};
use proptest::prelude::*;

fn int_input(max: usize) -> impl Strategy<Value = Vec<i32>> {
    (0..=max).prop_flat_map(|n| proptest::collection::vec(any::<i32>(), n))
}

backend_test!(sum_i32_matches_wrapping_cpu_sum, |ctx| {
    let max = if ctx.backend() == gpuprim::BackendKind::Cuda { 1 << 22 } else { 1 << 16 };
    check(cases(ctx, 24, 64), int_input(max), |data| {
        let buf = ctx.upload(&data).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = ctx.sum(&buf).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want = data.iter().fold(0i32, |a, &b| a.wrapping_add(b));
        prop_assert_eq!(got, want, "n = {}", data.len());
        Ok(())
    });
});

backend_test!(sum_f32_is_within_the_rounding_bound_at_tile_edges, |ctx| {
    let max = if ctx.backend() == gpuprim::BackendKind::Cuda { (1 << 24) + 3 } else { 1 << 17 };
    for n in edge_sizes(256, max) {
        let data: Vec<f32> = gpuprim_tests::draw(proptest::collection::vec(-1.0e3f32..1.0e3, n));
        let buf = ctx.upload(&data).unwrap();
        let got = ctx.sum(&buf).unwrap() as f64;
        let want: f64 = data.iter().map(|&x| x as f64).sum();
        let abs: f64 = data.iter().map(|&x| (x as f64).abs()).sum();
        let bound = float_sum_bound(n, f32::EPSILON as f64, abs);
        assert!((got - want).abs() <= bound, "n = {n}: got {got}, want {want}, bound {bound}");
    }
});

backend_test!(sum_of_empty_input_is_zero, |ctx| {
    let buf = ctx.upload::<f32>(&[]).unwrap();
    assert_eq!(ctx.sum(&buf).unwrap(), 0.0);
    let buf = ctx.upload::<i32>(&[]).unwrap();
    assert_eq!(ctx.sum(&buf).unwrap(), 0);
});

/// The lectures' `volatile` warp tail is a data race without lockstep
/// warps; the emulator must say so, with the racing threads.
#[test]
fn emulator_reports_the_unsynchronised_volatile_warp_tail() {
    let ctx = gpuprim::Context::emulator();
    let data: Vec<i32> = gpuprim_tests::draw(proptest::collection::vec(-1000i32..1000, 4096));
    let input = ctx.upload(&data).unwrap();
    let mut out = ctx.alloc::<i32>(8).unwrap();
    out.poison().unwrap();
    // SAFETY: 8 blocks of 2 * 256 elements cover the 4096 inputs.
    let r = unsafe {
        ctx.launch(
            "reduce_volatile_tail_sum_i32_b256",
            LaunchConfig { grid: 8, block: 256, shared_bytes: 256 * 4 },
            &[input.arg(), (data.len() as u64).into(), out.arg()],
        )
    };
    match r {
        Err(Error::Emulator { fault, .. }) => {
            assert!(matches!(fault.kind, FaultKind::DataRace { .. }), "expected a data race, got {fault}");
            assert!(fault.thread < 32, "the race is inside the last warp: {fault}");
        }
        other => panic!("the racy warp tail went unnoticed: {other:?}"),
    }
}

backend_test!(time_held_measures_queued_launches, |ctx| {
    let data: Vec<f32> = (0..1 << 16).map(|i| (i % 7) as f32).collect();
    let input = ctx.upload(&data).unwrap();
    let mut total = ctx.alloc::<f32>(1).unwrap();
    // Kernels load on first use, and loading waits for the GPU, which a held
    // stream keeps busy: warm up first, as the bench does.
    ctx.sum_into(&input, &mut total).unwrap();
    total.poison().unwrap();
    let ((), t) = ctx.time_held(|| ctx.sum_into(&input, &mut total)).unwrap();
    assert!(t > std::time::Duration::ZERO, "time_held measured {t:?}");
    assert_eq!(total.to_vec().unwrap(), [data.iter().sum::<f32>()]);
    // The flag words are reused: a second call works the same.
    let ((), t) = ctx.time_held(|| ctx.sum_into(&input, &mut total)).unwrap();
    assert!(t > std::time::Duration::ZERO, "second time_held measured {t:?}");
});

backend_test!(time_held_reports_a_closure_that_waits_for_the_gpu, |ctx| {
    let input = ctx.upload(&[1i32, 2, 3]).unwrap();
    // `sum` downloads its result: on CUDA it waits behind the held stream
    // until the hold kernel gives up, which must be an error, not a hang or
    // a time. The emulator has no stream to hold.
    let r = ctx.time_held(|| ctx.sum(&input));
    match ctx.backend() {
        gpuprim::BackendKind::Cuda => {
            assert!(matches!(r, Err(Error::HoldTimedOut { .. })), "expected HoldTimedOut, got {r:?}")
        }
        gpuprim::BackendKind::Emulator => assert_eq!(r.unwrap().0, 6),
    }
    // Nor may an error from the closure leave the stream held: the next
    // wait for the GPU returns at once, not after the hold kernel's timeout.
    let mut total = ctx.alloc::<i32>(1).unwrap();
    let failed = ctx.time_held(|| -> gpuprim::Result<()> {
        ctx.sum_into(&input, &mut total)?;
        Err(Error::Unsupported { what: "test".into(), reason: "the closure fails".into() })
    });
    assert!(matches!(failed, Err(Error::Unsupported { .. })), "{failed:?}");
    let t = std::time::Instant::now();
    ctx.synchronize().unwrap();
    assert!(t.elapsed() < std::time::Duration::from_millis(500), "the stream stayed held for {:?}", t.elapsed());
    assert_eq!(total.to_vec().unwrap(), [6]);
    let ((), t) = ctx.time_held(|| ctx.sum_into(&input, &mut total)).unwrap();
    assert!(t > std::time::Duration::ZERO);
});
