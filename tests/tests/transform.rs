//! Transform-reduce: the built-in one-pass min-max and argmin-argmax for
//! every element type and finish against CPU references (tie-rich inputs,
//! views that start off a vector boundary, edge sizes, empty input,
//! poisoned outputs), the stream-ordered and temp forms, every refusal,
//! and on the GPU an argmin-argmax past 2^32.

use gpuprim::half::{bf16, f16};
use gpuprim::reduce::{ArgExtremes, ArgMinMax, Extremes, Finish, MinMax, ReduceAlgorithm, Reducer};
use gpuprim::{BackendKind, Context, DeviceRepr, Error, Scalar};
use gpuprim_kernels::util::hash_value;
use gpuprim_tests::{backend_test, cases, check, draw, edge_sizes};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(format!("{e}"))
}

/// The CPU's answer: first index of the smallest and of the largest value
/// (NaNs lose to every number), with `Element`'s own comparisons.
fn reference<T: Scalar>(x: &[T]) -> Option<((usize, T), (usize, T))> {
    let mut it = x.iter().copied().enumerate();
    let first = it.next()?;
    let (mut lo, mut hi) = (first, first);
    for (i, v) in it {
        if v.total_lt(lo.1) || (lo.1.is_nan() && !v.is_nan()) {
            lo = (i, v);
        }
        if !v.is_nan() && (hi.1.is_nan() || hi.1.total_lt(v)) {
            hi = (i, v);
        }
    }
    Some((lo, hi))
}

/// Bitwise equality (NaN == NaN, -0 != +0 would be too strict: the min of
/// -0 and +0 may be either), through f64 for the value check.
fn same<T: Scalar>(a: T, b: T) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// Inputs: any values (NaNs and infinities among the floats'), or values
/// 0..16 (many ties).
fn input<T: Scalar + Arbitrary>(max: usize) -> impl Strategy<Value = Vec<T>> {
    prop_oneof![
        proptest::collection::vec(any::<T>(), 0..=max),
        proptest::collection::vec(0u64..16, 0..=max).prop_map(|v| v.into_iter().map(T::from_u64).collect()),
    ]
}

fn one_case<T: Scalar>(ctx: &Context, r: &Reducer<'_>, x: &[T], what: &str) -> Result<(), TestCaseError>
where
    Extremes<T>: DeviceRepr,
    ArgExtremes<T::Wide>: DeviceRepr,
{
    let want = reference(x);
    let buf = ctx.upload(x).map_err(fail)?;
    // A view that starts one element in: not 16-byte aligned, so the
    // scalar loop reads it.
    let views: [(&str, gpuprim::DeviceSlice<'_, T>, &[T]); 2] =
        [("whole", buf.as_slice(), x), ("from 1", buf.slice(x.len().min(1)..).map_err(fail)?, &x[x.len().min(1)..])];
    for (view, v, host) in views {
        let want = if view == "whole" { want } else { reference(host) };
        let got = r.argmin_argmax(v).map_err(fail)?;
        match (got, want) {
            (None, None) => {}
            (Some(((i, a), (j, b))), Some(((wi, wa), (wj, wb)))) => {
                prop_assert!(
                    i == wi && j == wj,
                    "{what} {view} argmin_argmax n={}: ({i}, {j}), want ({wi}, {wj})",
                    host.len()
                );
                prop_assert!(same(a, wa) && same(b, wb), "{what} {view}: values {a:?} {b:?}, want {wa:?} {wb:?}");
            }
            (g, w) => prop_assert!(false, "{what} {view} argmin_argmax n={}: {g:?}, want {w:?}", host.len()),
        }
        let got = r.min_max(v).map_err(fail)?;
        match (got, want) {
            (None, None) => {}
            (Some((a, b)), Some(((_, wa), (_, wb)))) => {
                prop_assert!(
                    (same(a, wa) || a == wa) && same(b, wb),
                    "{what} {view} min_max n={}: {a:?} {b:?}, want {wa:?} {wb:?}",
                    host.len()
                );
            }
            (g, w) => prop_assert!(false, "{what} {view} min_max n={}: {g:?}, want {w:?}", host.len()),
        }
        // The stream-ordered form, into a poisoned output: the identity
        // for empty input.
        let mut out = ctx.alloc::<Extremes<T>>(1).map_err(fail)?;
        out.poison().map_err(fail)?;
        r.transform_reduce_into(&v, MinMax, &mut out).map_err(fail)?;
        let e = out.to_vec().map_err(fail)?[0];
        match want {
            Some(((_, wa), (_, wb))) => prop_assert!(same(e.min, wa) && same(e.max, wb), "{what} {view} into: {e:?}"),
            None => prop_assert!(e.min == T::HIGHEST && e.max == T::LOWEST, "{what} {view} empty into: {e:?}"),
        }
    }
    Ok(())
}

fn sweep<T: Scalar + Arbitrary>(ctx: &Context)
where
    Extremes<T>: DeviceRepr,
    ArgExtremes<T::Wide>: DeviceRepr,
{
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 1 << 13 };
    for fin in Finish::ALL {
        // The atomic finish needs a 4- or 8-byte accumulator: the
        // min-max of 2- and 4-byte types (argmin-argmax's is 32 bytes).
        if fin == Finish::Atomic && !matches!(std::mem::size_of::<T>(), 2 | 4) {
            continue;
        }
        let r = ctx.reducer().finish(fin);
        let what = format!("{fin:?}/{}", T::NAME);
        check(cases(ctx, 3, 6), input::<T>(max), |x| {
            if fin == Finish::Atomic {
                // min_max only: argmin_argmax has no atomic finish.
                let buf = ctx.upload(&x).map_err(fail)?;
                let got = r.min_max(&buf).map_err(fail)?;
                let want = reference(&x).map(|((_, a), (_, b))| (a, b));
                prop_assert!(
                    match (got, want) {
                        (Some((a, b)), Some((c, d))) => same(a, c) && same(b, d),
                        (g, w) => g.is_none() && w.is_none(),
                    },
                    "{what}: {got:?}, want {want:?}"
                );
                return Ok(());
            }
            one_case(ctx, &r, &x, &what)
        });
    }
}

macro_rules! every_type {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        backend_test!($name, |ctx| { sweep::<$t>(ctx) });
    )*};
}
every_type! {
    min_max_and_argmin_argmax_of_i8_match_the_cpu: i8,
    min_max_and_argmin_argmax_of_u8_match_the_cpu: u8,
    min_max_and_argmin_argmax_of_i16_match_the_cpu: i16,
    min_max_and_argmin_argmax_of_u16_match_the_cpu: u16,
    min_max_and_argmin_argmax_of_i32_match_the_cpu: i32,
    min_max_and_argmin_argmax_of_u32_match_the_cpu: u32,
    min_max_and_argmin_argmax_of_i64_match_the_cpu: i64,
    min_max_and_argmin_argmax_of_u64_match_the_cpu: u64,
    min_max_and_argmin_argmax_of_f32_match_the_cpu: f32,
    min_max_and_argmin_argmax_of_f64_match_the_cpu: f64,
}

// The half types have no proptest strategy: values through the hash.
backend_test!(min_max_and_argmin_argmax_of_half_types_match_the_cpu, |ctx| {
    for n in [0usize, 1, 31, 1000, 4097] {
        let seed: u64 = draw(any::<u64>());
        let h: Vec<f16> = (0..n as u64).map(|i| hash_value::<f16>(i, seed)).collect();
        let b: Vec<bf16> = (0..n as u64).map(|i| hash_value::<bf16>(i, seed)).collect();
        for fin in [Finish::LastBlock, Finish::Relaunch, Finish::Host] {
            let r = ctx.reducer().finish(fin);
            one_case(ctx, &r, &h, &format!("{fin:?}/f16")).unwrap();
            one_case(ctx, &r, &b, &format!("{fin:?}/bf16")).unwrap();
        }
    }
});

backend_test!(min_max_is_right_at_tile_edges, |ctx| {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 24 } else { 1 << 15 };
    for n in edge_sizes(256 * 16, max).into_iter().chain([max - 1]) {
        let seed: u64 = draw(any::<u64>());
        let mut buf = ctx.alloc::<i32>(n).unwrap();
        ctx.fill_hash(&mut buf, seed).unwrap();
        let x: Vec<i32> = (0..n as u64).map(|i| hash_value::<i32>(i, seed)).collect();
        let want = reference(&x);
        assert_eq!(ctx.argmin_argmax(&buf).unwrap(), want, "n = {n}");
        assert_eq!(ctx.min_max(&buf).unwrap(), want.map(|((_, a), (_, b))| (a, b)), "n = {n}");
    }
});

backend_test!(transform_reduce_reuses_temporary_storage_and_refuses_bad_calls, |ctx| {
    let x: Vec<f32> = draw(proptest::collection::vec(-1e6f32..1e6, 1..5000));
    let buf = ctx.upload(&x).unwrap();
    let r = ctx.reducer().finish(Finish::Relaunch);
    let mut temp = r.temp::<f32>(x.len()).unwrap();
    let mut out = ctx.alloc::<ArgExtremes<f64>>(1).unwrap();
    let want = reference(&x).unwrap();
    for _ in 0..3 {
        out.poison().unwrap();
        r.transform_reduce_with_temp(&buf, ArgMinMax, &mut out, &mut temp).unwrap();
        let e = out.to_vec().unwrap()[0];
        assert_eq!((e.min.index as usize, e.max.index as usize), (want.0.0, want.1.0));
        assert_eq!((e.min.value, e.max.value), (want.0.1 as f64, want.1.1 as f64));
    }
    // Refusals, before anything is written.
    out.poison().unwrap();
    let mut none = ctx.alloc::<ArgExtremes<f64>>(0).unwrap();
    let res = ctx.transform_reduce_into(&buf, ArgMinMax, &mut none);
    assert!(matches!(res, Err(Error::LengthMismatch { expected: 1, got: 0, .. })), "{res:?}");
    let res = ctx.reducer().algorithm(ReduceAlgorithm::Sequential).transform_reduce(&buf, MinMax);
    assert!(matches!(res, Err(Error::Unsupported { .. })), "{res:?}");
    let res = ctx.reducer().block_size(512).transform_reduce(&buf, MinMax);
    assert!(matches!(res, Err(Error::UnsupportedBlockSize { block: 512, .. })), "{res:?}");
    let res = ctx.reducer().block_size(100).transform_reduce(&buf, MinMax);
    assert!(matches!(res, Err(Error::UnsupportedBlockSize { block: 100, .. })), "{res:?}");
    let res = ctx.reducer().finish(Finish::Atomic).transform_reduce_into(&buf, ArgMinMax, &mut out);
    assert!(matches!(res, Err(Error::Unsupported { .. })), "32 bytes have no atomic update: {res:?}");
    let mut tiny = ctx.reducer().temp::<f32>(1).unwrap();
    let big = ctx.upload(&vec![1.0f32; 1 << 20]).unwrap();
    let res = r.transform_reduce_with_temp(&big, ArgMinMax, &mut out, &mut tiny);
    assert!(matches!(res, Err(Error::LengthMismatch { what: "temporary storage (bytes)", .. })), "{res:?}");
    let e = out.to_vec().unwrap()[0];
    let words = [e.min.value.to_bits(), e.min.index, e.max.value.to_bits(), e.max.index];
    assert!(words.iter().all(|&w| w == u64::MAX), "a refused call wrote its output: {e:?}");
    // An operator with no kernels names what would instantiate it.
    let res = ctx.reduce_with(&buf, Nowhere);
    match res {
        Err(Error::Unsupported { reason, .. }) => assert!(reason.contains("load_kernels"), "{reason}"),
        other => panic!("{other:?}"),
    }
});

/// An operator no kernels crate instantiates.
#[derive(Clone, Copy)]
struct Nowhere;
impl gpuprim::reduce::Monoid<f32> for Nowhere {
    fn identity() -> f32 {
        0.0
    }
    fn combine(a: f32, b: f32) -> f32 {
        a.max(b)
    }
}
impl gpuprim::reduce::Named for Nowhere {
    const NAME: &'static str = "nowhere";
}

/// More than 2^32 elements on the GPU: both extremes planted past 2^32
/// (indices need 64 bits). Skipped with a note where there is no driver.
#[test]
fn argmin_argmax_beyond_32_bit_indexing_on_the_gpu() {
    let Some(ctx) = gpuprim_tests::context(BackendKind::Cuda, "transform::argmin_argmax_beyond_32_bit::cuda") else {
        return;
    };
    let n: usize = (1usize << 32) + 5000;
    let seed: u64 = draw(any::<u64>());
    // Values 0..=2000, then one below and one above them all, past 2^32.
    let mut buf = ctx.alloc::<i32>(n).unwrap();
    ctx.fill_hash(&mut buf, seed).unwrap();
    let lo_at = (1usize << 32) + draw(0usize..2000);
    let hi_at = (1usize << 32) + 2500 + draw(0usize..2000);
    buf.copy_from_host_at(lo_at, &[-5]).unwrap();
    buf.copy_from_host_at(hi_at, &[5000]).unwrap();
    for fin in [Finish::LastBlock, Finish::Relaunch, Finish::Host] {
        let got = ctx.reducer().finish(fin).argmin_argmax(&buf).unwrap();
        assert_eq!(got, Some(((lo_at, -5), (hi_at, 5000))), "{fin:?}");
        assert_eq!(ctx.reducer().finish(fin).min_max(&buf).unwrap(), Some((-5, 5000)), "{fin:?}");
    }
}
