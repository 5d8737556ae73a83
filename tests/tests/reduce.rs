//! Reductions against CPU references: every variant x finishing strategy x
//! block size x element type for sums, every operator x type at the
//! operators' block size, edge sizes, bad inputs, and (on the GPU) large
//! inputs and one of more than 2^32 elements.

use gpuprim::reduce::{Finish, ReduceAlgorithm, Reducer};
use gpuprim::{BackendKind, Context, Error, Scalar};
use gpuprim_kernels::util::hash_value;
use gpuprim_tests::{backend_test, cases, check, draw, edge_sizes, float_sum_bound};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Element types with what the tests need: random values, the CPU
/// reference arithmetic and the comparison.
trait TestScalar: Scalar + PartialEq {
    const FLOAT: bool;
    const EPS: f64;
    fn strategy() -> BoxedStrategy<Self>;
    fn to_f64(self) -> f64;
}
macro_rules! int_scalar {
    ($($t:ty),*) => {$(
        impl TestScalar for $t {
            const FLOAT: bool = false;
            const EPS: f64 = 0.0;
            fn strategy() -> BoxedStrategy<Self> { any::<$t>().boxed() }
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
int_scalar!(i32, u32, i64, u64);
impl TestScalar for f32 {
    const FLOAT: bool = true;
    const EPS: f64 = f32::EPSILON as f64;
    fn strategy() -> BoxedStrategy<Self> {
        (-1.0e3f32..1.0e3).boxed()
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl TestScalar for f64 {
    const FLOAT: bool = true;
    const EPS: f64 = f64::EPSILON;
    fn strategy() -> BoxedStrategy<Self> {
        (-1.0e6f64..1.0e6).boxed()
    }
    fn to_f64(self) -> f64 {
        self
    }
}

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// Compare a sum-like result: integers exactly (wrapping), floats against
/// the f64 sum of `terms` within the rounding bound.
fn check_sum<T: TestScalar>(got: T, exact: T, terms: &[f64], what: &str) -> Result<(), TestCaseError> {
    if T::FLOAT {
        let want: f64 = terms.iter().sum();
        let abs: f64 = terms.iter().map(|x| x.abs()).sum();
        let bound = float_sum_bound(terms.len(), T::EPS, abs) * 2.0;
        prop_assert!((got.to_f64() - want).abs() <= bound, "{what}: got {:?}, want {want}, bound {bound}", got);
    } else {
        prop_assert!(got == exact, "{what}: got {:?}, want {:?}", got, exact);
    }
    Ok(())
}

fn wrapping_sum<T: TestScalar>(x: &[T]) -> T {
    x.iter().fold(T::ZERO, |a, &b| gpuprim_kernels::ops::Element::add(a, b))
}

/// Sum through `r` on `n`-element random inputs of type `T`.
fn sum_case<T: TestScalar>(ctx: &Context, r: &Reducer<'_>, data: &[T], what: &str) -> Result<(), TestCaseError> {
    let buf = ctx.upload(data).map_err(fail)?;
    let got = r.sum(&buf).map_err(fail)?;
    let terms: Vec<f64> = data.iter().map(|x| x.to_f64()).collect();
    check_sum(got, wrapping_sum(data), &terms, &format!("{what}, n = {}", data.len()))
}

fn vec_of<T: TestScalar>(max: usize) -> impl Strategy<Value = Vec<T>> {
    (0..=max).prop_flat_map(|n| proptest::collection::vec(T::strategy(), n))
}

fn finishes_for<T: TestScalar>() -> Vec<Finish> {
    Finish::ALL.to_vec()
}

fn sweep_sum<T: TestScalar>(ctx: &Context) {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 1 << 14 };
    for alg in ReduceAlgorithm::ALL {
        for fin in finishes_for::<T>() {
            for b in gpuprim::reduce::BLOCK_SIZES {
                let r = ctx.reducer().algorithm(alg).finish(fin).block_size(b).deterministic(false);
                let what = format!("{alg:?}/{fin:?}/b{b}/{}", T::NAME);
                check(cases(ctx, 3, 3), vec_of::<T>(max), |data| sum_case(ctx, &r, &data, &what));
            }
        }
    }
}

backend_test!(every_variant_finish_and_block_size_sums_i32_like_the_cpu, |ctx| { sweep_sum::<i32>(ctx) });
backend_test!(every_variant_finish_and_block_size_sums_u32_like_the_cpu, |ctx| { sweep_sum::<u32>(ctx) });
backend_test!(every_variant_finish_and_block_size_sums_i64_like_the_cpu, |ctx| { sweep_sum::<i64>(ctx) });
backend_test!(every_variant_finish_and_block_size_sums_u64_like_the_cpu, |ctx| { sweep_sum::<u64>(ctx) });
backend_test!(every_variant_finish_and_block_size_sums_f32_within_rounding, |ctx| { sweep_sum::<f32>(ctx) });
backend_test!(every_variant_finish_and_block_size_sums_f64_within_rounding, |ctx| { sweep_sum::<f64>(ctx) });

/// Every operator at its block size, for every variant, against the CPU.
fn sweep_ops<T: TestScalar>(ctx: &Context) {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 1 << 13 };
    for alg in ReduceAlgorithm::ALL {
        for fin in [Finish::LastBlock, Finish::Relaunch] {
            let r = ctx.reducer().algorithm(alg).finish(fin);
            let what = format!("{alg:?}/{fin:?}/{}", T::NAME);
            // Small values give ties for min/max/argmin/argmax.
            let small = (0..=max).prop_flat_map(|n| proptest::collection::vec(0u8..16, n));
            check(cases(ctx, 3, 3), (vec_of::<T>(max), small), |(data, small)| {
                let buf = ctx.upload(&data).map_err(fail)?;
                let n = data.len();
                // min / max
                let mn = r.min(&buf).map_err(fail)?;
                let mx = r.max(&buf).map_err(fail)?;
                let want_mn = data.iter().copied().fold(T::HIGHEST, |a, b| if b < a { b } else { a });
                let want_mx = data.iter().copied().fold(T::LOWEST, |a, b| if b > a { b } else { a });
                prop_assert!(mn == want_mn && mx == want_mx, "{what} min/max n={n}: {mn:?} {mx:?}");
                // dot with itself shifted by one, sum of squares, product
                let other: Vec<T> = data.iter().rev().copied().collect();
                let ob = ctx.upload(&other).map_err(fail)?;
                let d = r.dot(&buf, &ob).map_err(fail)?;
                let exact = data.iter().zip(&other).fold(T::ZERO, |a, (&x, &y)| a.add(x.mul(y)));
                let terms: Vec<f64> = data.iter().zip(&other).map(|(x, y)| x.to_f64() * y.to_f64()).collect();
                check_sum(d, exact, &terms, &format!("{what} dot n={n}"))?;
                let sq = r.sum_squares(&buf).map_err(fail)?;
                let exact = data.iter().fold(T::ZERO, |a, &x| a.add(x.mul(x)));
                let terms: Vec<f64> = data.iter().map(|x| x.to_f64() * x.to_f64()).collect();
                check_sum(sq, exact, &terms, &format!("{what} sumsq n={n}"))?;
                // argmin / argmax on a tie-rich input of this type
                let tied: Vec<T> = small.iter().map(|&v| T::from_u64(v as u64)).collect();
                let tb = ctx.upload(&tied).map_err(fail)?;
                let amin = r.argmin(&tb).map_err(fail)?;
                let amax = r.argmax(&tb).map_err(fail)?;
                let first = |better: fn(&T, &T) -> bool| -> Option<(usize, T)> {
                    let mut best: Option<(usize, T)> = None;
                    for (i, &v) in tied.iter().enumerate() {
                        if best.is_none_or(|(_, b)| better(&v, &b)) {
                            best = Some((i, v));
                        }
                    }
                    best
                };
                prop_assert_eq!(amin, first(|a, b| a < b), "{} argmin n={}", what, n);
                prop_assert_eq!(amax, first(|a, b| a > b), "{} argmax n={}", what, n);
                Ok(())
            });
        }
    }
}

backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_i32, |ctx| { sweep_ops::<i32>(ctx) });
backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_u32, |ctx| { sweep_ops::<u32>(ctx) });
backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_i64, |ctx| { sweep_ops::<i64>(ctx) });
backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_u64, |ctx| { sweep_ops::<u64>(ctx) });
backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_f32, |ctx| { sweep_ops::<f32>(ctx) });
backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_f64, |ctx| { sweep_ops::<f64>(ctx) });

fn sweep_bitwise<T: TestScalar + gpuprim_kernels::ops::Integer>(ctx: &Context) {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 1 << 14 };
    for alg in ReduceAlgorithm::ALL {
        let r = ctx.reducer().algorithm(alg);
        check(cases(ctx, 3, 3), vec_of::<T>(max), |data| {
            let buf = ctx.upload(&data).map_err(fail)?;
            let and = data.iter().fold(T::ALL_ONES, |a, &b| a.and(b));
            let or = data.iter().fold(T::ZERO, |a, &b| a.or(b));
            let xor = data.iter().fold(T::ZERO, |a, &b| a.xor(b));
            prop_assert!(r.and(&buf).map_err(fail)? == and, "{alg:?} and");
            prop_assert!(r.or(&buf).map_err(fail)? == or, "{alg:?} or");
            prop_assert!(r.xor(&buf).map_err(fail)? == xor, "{alg:?} xor");
            // The product wraps like the CPU's.
            let prod = data.iter().fold(T::ONE, |a, &b| a.mul(b));
            prop_assert!(r.product(&buf).map_err(fail)? == prod, "{alg:?} product");
            Ok(())
        });
    }
}

backend_test!(every_variant_computes_bitwise_reductions_and_products_for_i32, |ctx| { sweep_bitwise::<i32>(ctx) });
backend_test!(every_variant_computes_bitwise_reductions_and_products_for_u32, |ctx| { sweep_bitwise::<u32>(ctx) });
backend_test!(every_variant_computes_bitwise_reductions_and_products_for_i64, |ctx| { sweep_bitwise::<i64>(ctx) });
backend_test!(every_variant_computes_bitwise_reductions_and_products_for_u64, |ctx| { sweep_bitwise::<u64>(ctx) });

backend_test!(float_products_norms_and_rms_match_the_f64_reference, |ctx| {
    let max: usize = if ctx.backend() == BackendKind::Cuda { 1 << 22 } else { 4000 };
    check(cases(ctx, 6, 12), (0..=max).prop_flat_map(|n| proptest::collection::vec(0.999f64..1.001, n)), |data| {
        let x32: Vec<f32> = data.iter().map(|&v| v as f32).collect();
        let b32 = ctx.upload(&x32).map_err(fail)?;
        let b64 = ctx.upload(&data).map_err(fail)?;
        let n = data.len();
        let p64 = ctx.product(&b64).map_err(fail)?;
        let want: f64 = data.iter().product();
        prop_assert!((p64 - want).abs() <= want * (n as f64 + 1.0) * f64::EPSILON * 2.0, "f64 product {p64} vs {want}");
        let p32 = ctx.product(&b32).map_err(fail)? as f64;
        let want32: f64 = x32.iter().map(|&v| v as f64).product();
        prop_assert!((p32 - want32).abs() <= want32 * (n as f64 + 1.0) * f32::EPSILON as f64 * 2.0, "f32 product");
        let n2 = ctx.norm2(&b64).map_err(fail)?;
        let want = data.iter().map(|v| v * v).sum::<f64>().sqrt();
        prop_assert!((n2 - want).abs() <= (n as f64 + 1.0) * f64::EPSILON * want + 1e-300, "norm2 {n2} vs {want}");
        let n1 = ctx.norm1(&b32).map_err(fail)? as f64;
        let want: f64 = x32.iter().map(|&v| (v as f64).abs()).sum();
        prop_assert!((n1 - want).abs() <= float_sum_bound(n, f32::EPSILON as f64, want), "norm1");
        let rms = ctx.rms(&b64).map_err(fail)?;
        let want = if n == 0 { 0.0 } else { (data.iter().map(|v| v * v).sum::<f64>() / n as f64).sqrt() };
        prop_assert!((rms - want).abs() <= (n as f64 + 2.0) * f64::EPSILON * want.max(1e-300), "rms {rms} vs {want}");
        Ok(())
    });
});

backend_test!(argmin_and_argmax_ignore_nans_and_prefer_the_first_index, |ctx| {
    let n = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 5000 };
    let mut x: Vec<f32> = draw(proptest::collection::vec(-100.0f32..100.0, n));
    let nan_at: Vec<usize> = draw(proptest::collection::vec(0..n, 1..20));
    for &i in &nan_at {
        x[i] = f32::NAN;
    }
    let (lo, hi) = draw((0..n / 2, n / 2..n));
    x[lo] = -1000.0;
    x[hi] = -1000.0;
    x[hi - 1] = 1000.0;
    x[lo + 1] = 1000.0;
    let buf = ctx.upload(&x).unwrap();
    assert_eq!(ctx.argmin(&buf).unwrap(), Some((lo, -1000.0)));
    assert_eq!(ctx.argmax(&buf).unwrap(), Some((lo + 1, 1000.0)));
    assert_eq!(ctx.min(&buf).unwrap(), -1000.0);
    assert_eq!(ctx.max(&buf).unwrap(), 1000.0);
    let all_nan = ctx.upload(&[f32::NAN; 7]).unwrap();
    let (i, v) = ctx.argmin(&all_nan).unwrap().unwrap();
    assert!(i == 0 && v.is_nan(), "all-NaN input gives the first element");
});

backend_test!(empty_input_gives_each_operators_identity, |ctx| {
    let e = ctx.alloc::<i32>(0).unwrap();
    let f = ctx.alloc::<f64>(0).unwrap();
    for alg in ReduceAlgorithm::ALL {
        for fin in Finish::ALL {
            let r = ctx.reducer().algorithm(alg).finish(fin).deterministic(false);
            assert_eq!(r.sum(&e).unwrap(), 0);
            assert_eq!(r.product(&e).unwrap(), 1);
            assert_eq!(r.min(&e).unwrap(), i32::MAX);
            assert_eq!(r.max(&e).unwrap(), i32::MIN);
            assert_eq!(r.and(&e).unwrap(), -1);
            assert_eq!(r.min(&f).unwrap(), f64::INFINITY);
            assert_eq!(r.max(&f).unwrap(), f64::NEG_INFINITY);
            assert_eq!(r.argmin(&f).unwrap(), None);
            assert_eq!(r.rms(&f).unwrap(), 0.0);
        }
    }
});

backend_test!(float_sums_are_the_same_run_to_run, |ctx| {
    let n = if ctx.backend() == BackendKind::Cuda { (1 << 24) + 77 } else { 20_000 };
    let x: Vec<f32> = draw(proptest::collection::vec(-1.0f32..1.0, n));
    let buf = ctx.upload(&x).unwrap();
    for alg in ReduceAlgorithm::ALL {
        for fin in [Finish::LastBlock, Finish::Relaunch, Finish::Host] {
            let r = ctx.reducer().algorithm(alg).finish(fin);
            let first = r.sum(&buf).unwrap();
            for _ in 0..3 {
                assert_eq!(r.sum(&buf).unwrap().to_bits(), first.to_bits(), "{alg:?}/{fin:?} changed between runs");
            }
        }
    }
});

backend_test!(bad_options_and_inputs_give_the_documented_errors, |ctx| {
    let x = ctx.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let y = ctx.upload(&[1.0f32, 2.0]).unwrap();
    assert!(matches!(ctx.dot(&x, &y), Err(Error::LengthMismatch { expected: 3, got: 2, .. })));
    for b in [0u32, 16, 48, 100, 2048] {
        assert!(
            matches!(ctx.reducer().block_size(b).sum(&x), Err(Error::UnsupportedBlockSize { block, .. }) if block == b),
            "block {b}"
        );
    }
    assert!(matches!(ctx.reducer().block_size(512).min(&x), Err(Error::UnsupportedBlockSize { block: 512, .. })));
    assert!(matches!(ctx.reducer().finish(Finish::Atomic).sum(&x), Err(Error::Unsupported { .. })));
    assert!(ctx.reducer().finish(Finish::Atomic).deterministic(false).sum(&x).is_ok());
    let i = ctx.upload(&[3i32, 1, 2]).unwrap();
    assert!(matches!(ctx.reducer().finish(Finish::Atomic).argmin(&i), Err(Error::Unsupported { .. })));
    assert_eq!(ctx.reducer().finish(Finish::Atomic).sum(&i).unwrap(), 6);
    let mut out = ctx.alloc::<f32>(0).unwrap();
    assert!(matches!(ctx.sum_into(&x, &mut out), Err(Error::LengthMismatch { .. })));
    let r = ctx.reducer();
    let mut small = r.temp::<f32>(10).unwrap();
    let big = ctx.upload(&vec![1.0f32; 1 << 16]).unwrap();
    let mut out = ctx.alloc::<f32>(1).unwrap();
    assert!(matches!(
        r.algorithm(ReduceAlgorithm::Sequential).sum_with_temp(&big, &mut out, &mut small),
        Err(Error::LengthMismatch { .. })
    ));
});

backend_test!(reused_temporary_storage_gives_fresh_results, |ctx| {
    for alg in ReduceAlgorithm::ALL {
        let r = ctx.reducer().algorithm(alg);
        let n = 3000;
        let mut temp = r.temp::<i64>(n).unwrap();
        let mut out = ctx.alloc::<i64>(1).unwrap();
        for _ in 0..4 {
            let x: Vec<i64> = draw(proptest::collection::vec(-1000i64..1000, 1..n));
            let buf = ctx.upload(&x).unwrap();
            out.poison().unwrap();
            r.sum_with_temp(&buf, &mut out, &mut temp).unwrap();
            assert_eq!(out.to_vec().unwrap()[0], x.iter().sum::<i64>(), "{alg:?}");
        }
    }
});

backend_test!(default_sum_is_right_at_tile_edges_and_large_sizes, |ctx| {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 27 } else { 1 << 16 };
    for n in edge_sizes(256 * 16, max).into_iter().chain([max, max - 1]) {
        let seed: u64 = draw(any::<u64>());
        let mut buf = ctx.alloc::<i64>(n).unwrap();
        ctx.fill_hash(&mut buf, seed).unwrap();
        let want: i64 = (0..n as u64).map(|i| hash_value::<i64>(i, seed)).sum();
        assert_eq!(ctx.sum(&buf).unwrap(), want, "n = {n}");
        let mut f = ctx.alloc::<f32>(n).unwrap();
        ctx.fill_hash(&mut f, seed).unwrap();
        let got = ctx.sum(&f).unwrap() as f64;
        let want = want as f64;
        assert!((got - want).abs() <= float_sum_bound(n, f32::EPSILON as f64, want), "f32 n = {n}: {got} vs {want}");
    }
});

/// More than 2^32 elements, generated on the device: 64-bit indexing in
/// the sum, and an argmax whose index is past 2^32. CUDA only (the
/// emulator would take hours); skipped with a note elsewhere.
#[test]
fn inputs_beyond_32_bit_indexing_reduce_correctly_on_the_gpu() {
    let Some(ctx) = gpuprim_tests::context(BackendKind::Cuda, "reduce::inputs_beyond_32_bit_indexing::cuda") else {
        return;
    };
    let n: usize = (1usize << 32) + 4099;
    let seed: u64 = draw(any::<u64>());
    let mut buf = ctx.alloc::<i32>(n).unwrap();
    ctx.fill_hash(&mut buf, seed).unwrap();
    let peak_at = (1usize << 32) + draw(0usize..4000);
    buf.copy_from_host_at(peak_at, &[5000]).unwrap();
    // CPU reference over 4.3e9 elements, on all cores.
    let threads = std::thread::available_parallelism().map(|t| t.get()).unwrap_or(4);
    let chunk = n.div_ceil(threads);
    let want: i32 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let (lo, hi) = (t * chunk, ((t + 1) * chunk).min(n));
                    (lo..hi).fold(0i32, |a, i| {
                        a.wrapping_add(if i == peak_at { 5000 } else { hash_value::<i32>(i as u64, seed) })
                    })
                })
            })
            .collect();
        hs.into_iter().fold(0i32, |a, h| a.wrapping_add(h.join().unwrap()))
    });
    for alg in [ReduceAlgorithm::Vectorized, ReduceAlgorithm::Sequential, ReduceAlgorithm::Cascaded] {
        assert_eq!(ctx.reducer().algorithm(alg).sum(&buf).unwrap(), want, "{alg:?}");
        assert_eq!(ctx.reducer().algorithm(alg).argmax(&buf).unwrap(), Some((peak_at, 5000)), "{alg:?}");
    }
}

/// An operator with no kernels: the host side alone cannot run it.
#[derive(Clone, Copy)]
struct Nowhere;
impl gpuprim::reduce::Monoid<i32> for Nowhere {
    fn identity() -> i32 {
        0
    }
    fn combine(a: i32, b: i32) -> i32 {
        a.wrapping_sub(b)
    }
}
impl gpuprim::reduce::ReduceOp<i32> for Nowhere {
    const NAME: &'static str = "nowhere";
}

backend_test!(reduce_by_names_operators_by_type_and_refuses_ones_without_kernels, |ctx| {
    use gpuprim::reduce::{BitXor, Max, Min, Product, Sum};
    let x: Vec<i32> = draw(proptest::collection::vec(any::<i32>(), 1..5000));
    let buf = ctx.upload(&x).unwrap();
    let r = ctx.reducer();
    assert_eq!(r.reduce_by::<i32, Sum>(&buf).unwrap(), r.sum(&buf).unwrap());
    assert_eq!(r.reduce_by::<i32, Product>(&buf).unwrap(), x.iter().fold(1i32, |a, &b| a.wrapping_mul(b)));
    assert_eq!(r.reduce_by::<i32, Min>(&buf).unwrap(), *x.iter().min().unwrap());
    assert_eq!(r.reduce_by::<i32, Max>(&buf).unwrap(), *x.iter().max().unwrap());
    assert_eq!(r.reduce_by::<i32, BitXor>(&buf).unwrap(), x.iter().fold(0, |a, &b| a ^ b));
    assert!(matches!(r.reduce_by::<i32, Nowhere>(&buf), Err(Error::UnknownKernel { .. })));
});

// Every finishing strategy but `Host` only queues work: it must run with the
// stream held (on CUDA a call that waited for the GPU, such as a synchronous
// copy of the identity before atomic combines, would time out instead).
backend_test!(every_finish_but_host_queues_without_waiting_for_the_gpu, |ctx| {
    let data: Vec<i64> = draw(proptest::collection::vec(-1000i64..=1000, 300_000));
    let want: i64 = data.iter().sum();
    let input = ctx.upload(&data).unwrap();
    for fin in [Finish::Relaunch, Finish::Atomic, Finish::LastBlock] {
        let r = ctx.reducer().finish(fin);
        let mut temp = r.temp::<i64>(data.len()).unwrap();
        let mut out = ctx.alloc::<i64>(1).unwrap();
        out.poison().unwrap();
        let held = ctx.time_held(|| r.sum_with_temp(&input, &mut out, &mut temp));
        assert!(held.is_ok(), "{fin:?} waited for the GPU: {held:?}");
        assert_eq!(out.to_vec().unwrap(), [want], "{fin:?}");
    }
});
