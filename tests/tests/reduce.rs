//! Reductions against CPU references: every variant x finishing strategy x
//! block size x element type for sums, every operator x type at the
//! operators' block size, every operator at every block size with the
//! default algorithm, the 8- and 16-bit and half-precision types, the
//! stream-ordered `_into` / `_with_temp` forms, edge sizes, empty inputs,
//! bad inputs, and (on the GPU) large inputs and one of more than 2^32
//! elements.

use gpuprim::half::{bf16, f16};
use gpuprim::reduce::{Finish, NO_INDEX, ReduceAlgorithm, ReduceTemp, Reducer};
use gpuprim::{BackendKind, Context, DeviceBuffer, DeviceRepr, Error, Scalar};
use gpuprim_kernels::ops::Element;
use gpuprim_kernels::util::hash_value;
use gpuprim_tests::{backend_test, cases, check, draw, edge_sizes, float_sum_bound};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Accumulator types (what sums of a [`TestScalar`] come back as).
trait TestAcc: DeviceRepr + Element + PartialEq {
    fn to_f64(self) -> f64;
}
macro_rules! test_acc {
    ($($t:ty),*) => {$(
        impl TestAcc for $t {
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
test_acc!(i32, u32, i64, u64, f32, f64);

/// Element types with what the tests need: random values, the CPU
/// reference arithmetic and the comparison.
trait TestScalar: Scalar<Acc: TestAcc> + PartialEq {
    const FLOAT: bool;
    /// Rounding unit of the accumulator (floats; 0 for integers).
    const EPS: f64;
    fn strategy() -> BoxedStrategy<Self>;
    /// Values near 1, whose long products neither overflow nor vanish.
    fn near_one() -> BoxedStrategy<Self> {
        Self::strategy()
    }
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
int_scalar!(i8, u8, i16, u16, i32, u32, i64, u64);
impl TestScalar for f32 {
    const FLOAT: bool = true;
    const EPS: f64 = f32::EPSILON as f64;
    fn strategy() -> BoxedStrategy<Self> {
        (-1.0e3f32..1.0e3).boxed()
    }
    fn near_one() -> BoxedStrategy<Self> {
        (0.999f32..1.001).boxed()
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
    fn near_one() -> BoxedStrategy<Self> {
        (0.999f64..1.001).boxed()
    }
    fn to_f64(self) -> f64 {
        self
    }
}
macro_rules! half_scalar {
    ($($t:ident),*) => {$(
        /// Accumulates in `f32`: its rounding unit bounds the error.
        impl TestScalar for $t {
            const FLOAT: bool = true;
            const EPS: f64 = f32::EPSILON as f64;
            fn strategy() -> BoxedStrategy<Self> {
                (-1.0e3f32..1.0e3).prop_map($t::from_f32).boxed()
            }
            fn near_one() -> BoxedStrategy<Self> {
                (0.99f32..1.01).prop_map($t::from_f32).boxed()
            }
            fn to_f64(self) -> f64 {
                self.to_f64()
            }
        }
    )*};
}
half_scalar!(f16, bf16);

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// Compare a sum-like result: integers exactly (wrapping at the
/// accumulator's width), floats against the f64 sum of `terms` within the
/// rounding bound.
fn check_sum<A: TestAcc>(
    got: A,
    exact: A,
    terms: &[f64],
    float: bool,
    eps: f64,
    what: &str,
) -> Result<(), TestCaseError> {
    if float {
        let want: f64 = terms.iter().sum();
        let abs: f64 = terms.iter().map(|x| x.abs()).sum();
        let bound = float_sum_bound(terms.len(), eps, abs) * 2.0;
        prop_assert!((got.to_f64() - want).abs() <= bound, "{what}: got {:?}, want {want}, bound {bound}", got);
    } else {
        prop_assert!(got == exact, "{what}: got {:?}, want {:?}", got, exact);
    }
    Ok(())
}

/// The CPU reference of every operator on `x` (and `y` for the dot
/// product), in the types the library returns.
struct Reference<T: TestScalar> {
    n: usize,
    sum: T::Acc,
    sum_terms: Vec<f64>,
    product: T::Acc,
    dot: T::Acc,
    dot_terms: Vec<f64>,
    sumsq: T::Acc,
    sq_terms: Vec<f64>,
    abs_terms: Vec<f64>,
    min: T,
    max: T,
    argmin: Option<usize>,
    argmax: Option<usize>,
}

impl<T: TestScalar> Reference<T> {
    fn of(x: &[T], y: &[T]) -> Self {
        let acc = |v: T| v.to_acc();
        let zero = <T::Acc as Element>::ZERO;
        let mut argmin: Option<usize> = None;
        let mut argmax: Option<usize> = None;
        for (i, v) in x.iter().enumerate() {
            if argmin.is_none_or(|j| *v < x[j]) {
                argmin = Some(i);
            }
            if argmax.is_none_or(|j| *v > x[j]) {
                argmax = Some(i);
            }
        }
        Reference {
            n: x.len(),
            sum: x.iter().fold(zero, |a, &v| a.add(acc(v))),
            sum_terms: x.iter().map(|v| v.to_f64()).collect(),
            product: x.iter().fold(<T::Acc as Element>::ONE, |a, &v| a.mul(acc(v))),
            dot: x.iter().zip(y).fold(zero, |a, (&u, &v)| a.add(acc(u).mul(acc(v)))),
            dot_terms: x.iter().zip(y).map(|(u, v)| u.to_f64() * v.to_f64()).collect(),
            sumsq: x.iter().fold(zero, |a, &v| a.add(acc(v).mul(acc(v)))),
            sq_terms: x.iter().map(|v| v.to_f64() * v.to_f64()).collect(),
            abs_terms: x.iter().map(|v| v.to_f64().abs()).collect(),
            min: x.iter().copied().fold(T::HIGHEST, |a, b| if b < a { b } else { a }),
            max: x.iter().copied().fold(T::LOWEST, |a, b| if b > a { b } else { a }),
            argmin,
            argmax,
        }
    }

    fn sum(&self, got: T::Acc, what: &str) -> Result<(), TestCaseError> {
        check_sum(got, self.sum, &self.sum_terms, T::FLOAT, T::EPS, &format!("{what} sum n={}", self.n))
    }
    fn dot(&self, got: T::Acc, what: &str) -> Result<(), TestCaseError> {
        check_sum(got, self.dot, &self.dot_terms, T::FLOAT, T::EPS, &format!("{what} dot n={}", self.n))
    }
    fn sumsq(&self, got: T::Acc, what: &str) -> Result<(), TestCaseError> {
        check_sum(got, self.sumsq, &self.sq_terms, T::FLOAT, T::EPS, &format!("{what} sumsq n={}", self.n))
    }
    /// Products: integers exactly, floats (inputs near 1) within a relative
    /// bound of `n + 1` roundings.
    fn product(&self, got: T::Acc, what: &str) -> Result<(), TestCaseError> {
        if T::FLOAT {
            let want: f64 = self.sum_terms.iter().product();
            let bound = want.abs() * (self.n as f64 + 1.0) * T::EPS * 2.0;
            prop_assert!((got.to_f64() - want).abs() <= bound, "{what} product n={}: {:?} vs {want}", self.n, got);
        } else {
            prop_assert!(got == self.product, "{what} product n={}: {:?} vs {:?}", self.n, got, self.product);
        }
        Ok(())
    }
    /// L1 norm, L2 norm and root mean square (floats).
    fn norms(&self, n1: T::Acc, n2: T::Acc, rms: T::Acc, what: &str) -> Result<(), TestCaseError> {
        let n = self.n as f64;
        let l1: f64 = self.abs_terms.iter().sum();
        prop_assert!(
            (n1.to_f64() - l1).abs() <= float_sum_bound(self.n, T::EPS, l1) * 2.0,
            "{what} norm1 {n1:?} vs {l1}"
        );
        let sq: f64 = self.sq_terms.iter().sum();
        // sqrt halves the relative error of the sum of squares, and adds one
        // rounding.
        let rel = (n + 2.0) * T::EPS;
        let l2 = sq.sqrt();
        prop_assert!((n2.to_f64() - l2).abs() <= rel * l2 + 1e-300, "{what} norm2 {n2:?} vs {l2}");
        let want = if self.n == 0 { 0.0 } else { (sq / n).sqrt() };
        prop_assert!((rms.to_f64() - want).abs() <= (rel + T::EPS) * want + 1e-300, "{what} rms {rms:?} vs {want}");
        Ok(())
    }
}

/// Inputs of up to `max` elements.
fn vec_of<T: TestScalar>(max: usize) -> impl Strategy<Value = Vec<T>> {
    (0..=max).prop_flat_map(|n| proptest::collection::vec(T::strategy(), n))
}

/// An input and a second one of the same length.
fn pair_of<T: TestScalar>(max: usize) -> impl Strategy<Value = (Vec<T>, Vec<T>)> {
    (0..=max)
        .prop_flat_map(|n| (proptest::collection::vec(T::strategy(), n), proptest::collection::vec(T::strategy(), n)))
}

/// Values from 0 to 15: ties for min, max, argmin and argmax.
fn tied<T: TestScalar>(small: &[u8]) -> Vec<T> {
    small.iter().map(|&v| T::from_u64(v as u64)).collect()
}

/// A one-element output of `A`, poisoned so that an unwritten result shows.
fn poisoned<A: DeviceRepr>(ctx: &Context) -> Result<DeviceBuffer<A>, TestCaseError> {
    let mut out = ctx.alloc::<A>(1).map_err(fail)?;
    out.poison().map_err(fail)?;
    Ok(out)
}

fn first<A: DeviceRepr>(out: &DeviceBuffer<A>) -> Result<A, TestCaseError> {
    Ok(out.to_vec().map_err(fail)?[0])
}

/// Sum through `r` on `n`-element random inputs of type `T`.
fn sum_case<T: TestScalar>(ctx: &Context, r: &Reducer<'_>, data: &[T], what: &str) -> Result<(), TestCaseError> {
    let buf = ctx.upload(data).map_err(fail)?;
    let got = r.sum(&buf).map_err(fail)?;
    Reference::of(data, &[]).sum(got, what)
}

fn sweep_sum<T: TestScalar>(ctx: &Context) {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 1 << 14 };
    for alg in ReduceAlgorithm::ALL {
        for fin in Finish::ALL {
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

/// Every operator through `r` on one random input (and a tie-rich one for
/// min, max, argmin and argmax), against the CPU reference. `values` picks
/// the operators' forms: the value returned, or `_into` a poisoned output.
fn all_ops<T: TestScalar>(
    ctx: &Context,
    r: &Reducer<'_>,
    (x, y, small): (&[T], &[T], &[u8]),
    into: bool,
    what: &str,
) -> Result<(), TestCaseError> {
    let (xb, yb) = (ctx.upload(x).map_err(fail)?, ctx.upload(y).map_err(fail)?);
    let want = Reference::of(x, y);
    let t = tied::<T>(small);
    let tb = ctx.upload(&t).map_err(fail)?;
    let tied_ref = Reference::of(&t, &[]);
    macro_rules! acc {
        ($value:ident, $into:ident $(, $y:expr)?) => {
            if into {
                let mut out = poisoned::<T::Acc>(ctx)?;
                r.$into(&xb, $($y,)? &mut out).map_err(fail)?;
                first(&out)?
            } else {
                r.$value(&xb $(, $y)?).map_err(fail)?
            }
        };
    }
    macro_rules! elem {
        ($value:ident, $into:ident, $buf:expr) => {
            if into {
                let mut out = poisoned::<T>(ctx)?;
                r.$into($buf, &mut out).map_err(fail)?;
                first(&out)?
            } else {
                r.$value($buf).map_err(fail)?
            }
        };
    }
    macro_rules! arg {
        ($value:ident, $into:ident) => {
            if into {
                let mut out = poisoned::<u64>(ctx)?;
                r.$into(&tb, &mut out).map_err(fail)?;
                let i = first(&out)?;
                (i != NO_INDEX).then_some(i as usize)
            } else {
                r.$value(&tb).map_err(fail)?.map(|(i, v)| {
                    assert!(v == t[i], "{what} {}: value {v:?} is not element {i}", stringify!($value));
                    i
                })
            }
        };
    }
    want.sum(acc!(sum, sum_into), what)?;
    want.dot(acc!(dot, dot_into, &yb), what)?;
    want.sumsq(acc!(sum_squares, sum_squares_into), what)?;
    let (mn, mx) = (elem!(min, min_into, &xb), elem!(max, max_into, &xb));
    prop_assert!(mn == want.min && mx == want.max, "{what} min/max n={}: {mn:?} {mx:?}", x.len());
    let (mn, mx) = (elem!(min, min_into, &tb), elem!(max, max_into, &tb));
    prop_assert!(mn == tied_ref.min && mx == tied_ref.max, "{what} tied min/max n={}: {mn:?} {mx:?}", t.len());
    prop_assert_eq!(arg!(argmin, argmin_into), tied_ref.argmin, "{} argmin n={}", what, t.len());
    prop_assert_eq!(arg!(argmax, argmax_into), tied_ref.argmax, "{} argmax n={}", what, t.len());
    Ok(())
}

/// Products (of values near 1 for floats), and for floats the norms.
fn products_and_norms<T: TestScalar + gpuprim::reduce::Float>(
    ctx: &Context,
    r: &Reducer<'_>,
    x: &[T],
    into: bool,
    what: &str,
) -> Result<(), TestCaseError> {
    let xb = ctx.upload(x).map_err(fail)?;
    let want = Reference::of(x, &[]);
    macro_rules! acc {
        ($value:ident, $into:ident) => {
            if into {
                let mut out = poisoned::<T::Acc>(ctx)?;
                r.$into(&xb, &mut out).map_err(fail)?;
                first(&out)?
            } else {
                r.$value(&xb).map_err(fail)?
            }
        };
    }
    want.product(acc!(product, product_into), what)?;
    want.norms(acc!(norm1, norm1_into), acc!(norm2, norm2_into), acc!(rms, rms_into), what)
}

/// Bitwise operators and (wrapping) products of integers.
fn bitwise<T: TestScalar + gpuprim::reduce::Integer>(
    ctx: &Context,
    r: &Reducer<'_>,
    x: &[T],
    into: bool,
    what: &str,
) -> Result<(), TestCaseError> {
    let xb = ctx.upload(x).map_err(fail)?;
    macro_rules! elem {
        ($value:ident, $into:ident) => {
            if into {
                let mut out = poisoned::<T>(ctx)?;
                r.$into(&xb, &mut out).map_err(fail)?;
                first(&out)?
            } else {
                r.$value(&xb).map_err(fail)?
            }
        };
    }
    let and = x.iter().fold(T::ALL_ONES, |a, &b| a.and(b));
    let or = x.iter().fold(T::ZERO, |a, &b| a.or(b));
    let xor = x.iter().fold(T::ZERO, |a, &b| a.xor(b));
    prop_assert!(elem!(and, and_into) == and, "{what} and");
    prop_assert!(elem!(or, or_into) == or, "{what} or");
    prop_assert!(elem!(xor, xor_into) == xor, "{what} xor");
    let product = if into {
        let mut out = poisoned::<T::Acc>(ctx)?;
        r.product_into(&xb, &mut out).map_err(fail)?;
        first(&out)?
    } else {
        r.product(&xb).map_err(fail)?
    };
    Reference::of(x, &[]).product(product, what)
}

/// Inputs for [`all_ops`]: two of one length and a tie-rich one.
fn op_inputs<T: TestScalar>(max: usize) -> impl Strategy<Value = (Vec<T>, Vec<T>, Vec<u8>)> {
    (pair_of::<T>(max), (0..=max).prop_flat_map(|n| proptest::collection::vec(0u8..16, n)))
        .prop_map(|((x, y), s)| (x, y, s))
}

/// Every operator at its block size, for every variant, against the CPU.
fn sweep_ops<T: TestScalar>(ctx: &Context) {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 1 << 13 };
    for alg in ReduceAlgorithm::ALL {
        for fin in [Finish::LastBlock, Finish::Relaunch] {
            let r = ctx.reducer().algorithm(alg).finish(fin);
            let what = format!("{alg:?}/{fin:?}/{}", T::NAME);
            check(cases(ctx, 3, 3), op_inputs::<T>(max), |(x, y, s)| all_ops(ctx, &r, (&x, &y, &s), false, &what));
        }
    }
}

backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_i32, |ctx| { sweep_ops::<i32>(ctx) });
backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_u32, |ctx| { sweep_ops::<u32>(ctx) });
backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_i64, |ctx| { sweep_ops::<i64>(ctx) });
backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_u64, |ctx| { sweep_ops::<u64>(ctx) });
backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_f32, |ctx| { sweep_ops::<f32>(ctx) });
backend_test!(every_variant_computes_min_max_dot_squares_and_args_for_f64, |ctx| { sweep_ops::<f64>(ctx) });

fn sweep_bitwise<T: TestScalar + gpuprim::reduce::Integer>(ctx: &Context) {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 1 << 14 };
    for alg in ReduceAlgorithm::ALL {
        let r = ctx.reducer().algorithm(alg);
        check(cases(ctx, 3, 3), vec_of::<T>(max), |x| bitwise(ctx, &r, &x, false, &format!("{alg:?}")));
    }
}

backend_test!(every_variant_computes_bitwise_reductions_and_products_for_i32, |ctx| { sweep_bitwise::<i32>(ctx) });
backend_test!(every_variant_computes_bitwise_reductions_and_products_for_u32, |ctx| { sweep_bitwise::<u32>(ctx) });
backend_test!(every_variant_computes_bitwise_reductions_and_products_for_i64, |ctx| { sweep_bitwise::<i64>(ctx) });
backend_test!(every_variant_computes_bitwise_reductions_and_products_for_u64, |ctx| { sweep_bitwise::<u64>(ctx) });

/// Every operator of the default algorithm at every block size other than
/// the default, each call once returning its value and once `_into` a
/// poisoned output; `extra` checks the operators only some types have.
fn every_block<T: TestScalar>(
    ctx: &Context,
    extra: impl Fn(&Reducer<'_>, &[T], bool, &str) -> Result<(), TestCaseError>,
) {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 2500 };
    for b in gpuprim::reduce::BLOCK_SIZES.into_iter().filter(|&b| b != gpuprim::reduce::DEFAULT_BLOCK) {
        let r = ctx.reducer().block_size(b);
        let what = format!("b{b}/{}", T::NAME);
        check(cases(ctx, 1, 4), op_inputs::<T>(max), |(x, y, s)| {
            for into in [false, true] {
                let what = format!("{what}/{}", if into { "into" } else { "value" });
                all_ops(ctx, &r, (&x, &y, &s), into, &what)?;
                extra(&r, &x, into, &what)?;
            }
            Ok(())
        });
    }
}

/// [`every_block`] for an integer type: bitwise operators and products too.
fn every_block_int<T: TestScalar + gpuprim::reduce::Integer>(ctx: &Context) {
    every_block::<T>(ctx, |r, x, into, what| bitwise(ctx, r, x, into, what));
}

/// [`every_block`] for a float type: products (of values near 1) and norms.
fn every_block_float<T: TestScalar + gpuprim::reduce::Float>(ctx: &Context) {
    every_block::<T>(ctx, |r, x, into, what| {
        let near: Vec<T> = draw(proptest::collection::vec(T::near_one(), x.len()));
        products_and_norms(ctx, r, &near, into, what)
    });
}

backend_test!(every_operator_runs_at_every_block_size_for_i32, |ctx| { every_block_int::<i32>(ctx) });
backend_test!(every_operator_runs_at_every_block_size_for_u8, |ctx| { every_block_int::<u8>(ctx) });
backend_test!(every_operator_runs_at_every_block_size_for_f16, |ctx| { every_block_float::<f16>(ctx) });
backend_test!(every_operator_runs_at_every_block_size_for_f64, |ctx| { every_block_float::<f64>(ctx) });

/// Sizes around the vectorised kernel's edges for an element of `bytes`:
/// one 16-byte vector, one block's chunk of four vectors per thread, and
/// larger odd sizes on the GPU.
fn vector_edges(ctx: &Context, bytes: usize) -> Vec<usize> {
    let w = 16 / bytes;
    let chunk = 256 * 4 * w;
    let mut v = vec![1, w - 1, w, w + 1, 2 * w + 3, 255, 257, chunk - 1, chunk + w + 1];
    if ctx.backend() == BackendKind::Cuda {
        v.extend([(1 << 20) + 3, (1 << 24) + 7 * w + 5]);
    }
    v.into_iter().filter(|&n| n > 0).collect()
}

/// The 8- and 16-bit and half-precision types through every operator, at
/// the vector and chunk edges, with every way to finish but the atomic one
/// (their min, max and argmin accumulators have no atomic update).
fn narrow_type<T: TestScalar>(
    ctx: &Context,
    extra: impl Fn(&Reducer<'_>, &[T], bool, &str) -> Result<(), TestCaseError>,
) {
    for n in vector_edges(ctx, std::mem::size_of::<T>()) {
        for fin in [Finish::LastBlock, Finish::Relaunch, Finish::Host] {
            let r = ctx.reducer().finish(fin);
            let what = format!("{fin:?}/{}", T::NAME);
            let fixed = (
                proptest::collection::vec(T::strategy(), n),
                proptest::collection::vec(T::strategy(), n),
                proptest::collection::vec(0u8..16, n),
            );
            check(cases(ctx, 1, 2), fixed, |(x, y, s)| {
                all_ops(ctx, &r, (&x, &y, &s), fin == Finish::Relaunch, &what)?;
                extra(&r, &x, fin == Finish::Relaunch, &what)
            });
        }
    }
}

backend_test!(i8_reduces_like_the_cpu_with_sums_in_i64, |ctx| {
    narrow_type::<i8>(ctx, |r, x, into, what| bitwise(ctx, r, x, into, what));
});
backend_test!(u8_reduces_like_the_cpu_with_sums_in_u64, |ctx| {
    narrow_type::<u8>(ctx, |r, x, into, what| bitwise(ctx, r, x, into, what));
});
backend_test!(i16_reduces_like_the_cpu_with_sums_in_i64, |ctx| {
    narrow_type::<i16>(ctx, |r, x, into, what| bitwise(ctx, r, x, into, what));
});
backend_test!(u16_reduces_like_the_cpu_with_sums_in_u64, |ctx| {
    narrow_type::<u16>(ctx, |r, x, into, what| bitwise(ctx, r, x, into, what));
});
backend_test!(f16_reduces_like_the_f64_reference_with_sums_in_f32, |ctx| {
    narrow_type::<f16>(ctx, |r, x, into, what| {
        let near: Vec<f16> = draw(proptest::collection::vec(f16::near_one(), x.len()));
        products_and_norms(ctx, r, &near, into, what)
    });
});
backend_test!(bf16_reduces_like_the_f64_reference_with_sums_in_f32, |ctx| {
    narrow_type::<bf16>(ctx, |r, x, into, what| {
        let near: Vec<bf16> = draw(proptest::collection::vec(bf16::near_one(), x.len()));
        products_and_norms(ctx, r, &near, into, what)
    });
});

backend_test!(narrow_integer_sums_do_not_wrap_at_their_own_width_and_finish_atomically, |ctx| {
    let n = if ctx.backend() == BackendKind::Cuda { 1 << 22 } else { 20_000 };
    let x = ctx.upload(&vec![i8::MIN; n]).unwrap();
    let u = ctx.upload(&vec![u16::MAX; n]).unwrap();
    for fin in Finish::ALL {
        let r = ctx.reducer().finish(fin);
        assert_eq!(r.sum(&x).unwrap(), -128 * n as i64, "{fin:?}");
        assert_eq!(r.sum_squares(&x).unwrap(), 128 * 128 * n as i64, "{fin:?}");
        assert_eq!(r.dot(&x, &x).unwrap(), 128 * 128 * n as i64, "{fin:?}");
        assert_eq!(r.sum(&u).unwrap(), 65535 * n as u64, "{fin:?}");
        let mut out = ctx.alloc::<u64>(1).unwrap();
        out.poison().unwrap();
        r.sum_squares_into(&u, &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), [65535 * 65535 * n as u64], "{fin:?}");
    }
});

/// Every `_with_temp` form, several times with one temporary storage made
/// for the largest input and fresh random inputs of any length up to it,
/// with the deterministic ways to finish.
fn with_temp_forms<T: TestScalar + gpuprim::reduce::Float>(ctx: &Context) {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 3000 };
    for fin in [Finish::LastBlock, Finish::Relaunch, Finish::Host] {
        let r = ctx.reducer().finish(fin);
        // `check` takes a `Fn`: the storage is borrowed per case.
        let temp = std::cell::RefCell::new(r.temp::<T>(max).unwrap());
        check(
            cases(ctx, 3, 6),
            (op_inputs::<T>(max), proptest::collection::vec(T::near_one(), max)),
            |((x, y, s), near)| {
                let what = format!("{fin:?}/{} with temp", T::NAME);
                let near = &near[..x.len()];
                let (xb, yb, nb) =
                    (ctx.upload(&x).map_err(fail)?, ctx.upload(&y).map_err(fail)?, ctx.upload(near).map_err(fail)?);
                let t = tied::<T>(&s);
                let tb = ctx.upload(&t).map_err(fail)?;
                let (want, wt, wn) = (Reference::of(&x, &y), Reference::of(&t, &[]), Reference::of(near, &[]));
                let mut temp = temp.borrow_mut();
                let temp: &mut ReduceTemp = &mut temp;
                macro_rules! run {
                ($f:ident, $ty:ty, $($arg:expr),*) => {{
                    let mut out = poisoned::<$ty>(ctx)?;
                    r.$f($($arg,)* &mut out, temp).map_err(fail)?;
                    first(&out)?
                }};
            }
                want.sum(run!(sum_with_temp, T::Acc, &xb), &what)?;
                want.dot(run!(dot_with_temp, T::Acc, &xb, &yb), &what)?;
                want.sumsq(run!(sum_squares_with_temp, T::Acc, &xb), &what)?;
                wn.product(run!(product_with_temp, T::Acc, &nb), &what)?;
                let (n1, n2, rms) = (
                    run!(norm1_with_temp, T::Acc, &xb),
                    run!(norm2_with_temp, T::Acc, &xb),
                    run!(rms_with_temp, T::Acc, &xb),
                );
                want.norms(n1, n2, rms, &what)?;
                let (mn, mx) = (run!(min_with_temp, T, &tb), run!(max_with_temp, T, &tb));
                prop_assert!(mn == wt.min && mx == wt.max, "{what} min/max: {mn:?} {mx:?}");
                let index = |i: u64| (i != NO_INDEX).then_some(i as usize);
                prop_assert_eq!(index(run!(argmin_with_temp, u64, &tb)), wt.argmin, "{} argmin", what);
                prop_assert_eq!(index(run!(argmax_with_temp, u64, &tb)), wt.argmax, "{} argmax", what);
                let by = run!(reduce_by_sum_with_temp, T::Acc, &xb);
                want.sum(by, &format!("{what} reduce_by::<Sum>"))?;
                Ok(())
            },
        );
    }
}

/// `reduce_by_with_temp` with its operator named, so that the macro above
/// calls it like every other form.
trait ReduceBySum<T: TestScalar> {
    fn reduce_by_sum_with_temp(
        &self,
        x: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T::Acc>,
        temp: &mut ReduceTemp,
    ) -> gpuprim::Result<()>;
}
impl<T: TestScalar> ReduceBySum<T> for Reducer<'_> {
    fn reduce_by_sum_with_temp(
        &self,
        x: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T::Acc>,
        temp: &mut ReduceTemp,
    ) -> gpuprim::Result<()> {
        self.reduce_by_with_temp::<T, gpuprim::reduce::Sum>(x, out, temp)
    }
}

backend_test!(with_temp_forms_of_every_operator_reuse_one_storage_for_f32, |ctx| { with_temp_forms::<f32>(ctx) });
backend_test!(with_temp_forms_of_every_operator_reuse_one_storage_for_bf16, |ctx| { with_temp_forms::<bf16>(ctx) });

backend_test!(integer_with_temp_forms_reuse_one_storage, |ctx| {
    let max = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 3000 };
    for fin in Finish::ALL {
        let r = ctx.reducer().finish(fin);
        let temp = std::cell::RefCell::new(r.temp::<u16>(max).unwrap());
        check(cases(ctx, 2, 6), vec_of::<u16>(max), |x| {
            let mut temp = temp.borrow_mut();
            let xb = ctx.upload(&x).map_err(fail)?;
            let mut out = poisoned::<u64>(ctx)?;
            r.sum_with_temp(&xb, &mut out, &mut temp).map_err(fail)?;
            prop_assert_eq!(first(&out)?, x.iter().map(|&v| v as u64).sum::<u64>(), "{:?} sum", fin);
            if fin == Finish::Atomic {
                // 2-byte accumulators have no atomic update.
                let mut small = poisoned::<u16>(ctx)?;
                let refused = matches!(r.xor_with_temp(&xb, &mut small, &mut temp), Err(Error::Unsupported { .. }));
                prop_assert!(refused, "2-byte xor with Finish::Atomic");
                return Ok(());
            }
            let mut small = poisoned::<u16>(ctx)?;
            r.xor_with_temp(&xb, &mut small, &mut temp).map_err(fail)?;
            prop_assert_eq!(first(&small)?, x.iter().fold(0, |a, &b| a ^ b), "{:?} xor", fin);
            r.and_with_temp(&xb, &mut small, &mut temp).map_err(fail)?;
            prop_assert_eq!(first(&small)?, x.iter().fold(u16::MAX, |a, &b| a & b), "{:?} and", fin);
            r.or_with_temp(&xb, &mut small, &mut temp).map_err(fail)?;
            prop_assert_eq!(first(&small)?, x.iter().fold(0, |a, &b| a | b), "{:?} or", fin);
            Ok(())
        });
    }
});

/// Every `_into` form of `T` on empty input writes the identity (or
/// [`NO_INDEX`]) over a poisoned output.
fn empty_into<T: TestScalar + gpuprim::reduce::Float>(ctx: &Context, r: &Reducer<'_>, what: &str) {
    let e = ctx.alloc::<T>(0).unwrap();
    macro_rules! into {
        ($f:ident, $ty:ty $(, $y:expr)?) => {{
            let mut out = ctx.alloc::<$ty>(1).unwrap();
            out.poison().unwrap();
            r.$f(&e, $($y,)? &mut out).unwrap_or_else(|err| panic!("{what} {}: {err}", stringify!($f)));
            out.to_vec().unwrap()[0]
        }};
    }
    let zero = <T::Acc as Element>::ZERO;
    assert_eq!(into!(sum_into, T::Acc), zero, "{what}");
    assert_eq!(into!(product_into, T::Acc), <T::Acc as Element>::ONE, "{what}");
    assert_eq!(into!(dot_into, T::Acc, &e), zero, "{what}");
    assert_eq!(into!(sum_squares_into, T::Acc), zero, "{what}");
    assert_eq!(into!(norm1_into, T::Acc), zero, "{what}");
    assert_eq!(into!(norm2_into, T::Acc), zero, "{what}");
    assert_eq!(into!(rms_into, T::Acc), zero, "{what}");
    assert!(into!(min_into, T) == T::HIGHEST, "{what}");
    assert!(into!(max_into, T) == T::LOWEST, "{what}");
    assert_eq!(into!(argmin_into, u64), NO_INDEX, "{what}");
    assert_eq!(into!(argmax_into, u64), NO_INDEX, "{what}");
}

backend_test!(empty_inputs_write_each_operators_identity_into_the_output, |ctx| {
    for fin in [Finish::LastBlock, Finish::Relaunch, Finish::Host] {
        let r = ctx.reducer().finish(fin);
        empty_into::<f32>(ctx, &r, &format!("{fin:?} f32"));
        empty_into::<f16>(ctx, &r, &format!("{fin:?} f16"));
        let lecture = ctx.reducer().finish(fin).algorithm(ReduceAlgorithm::Sequential);
        empty_into::<f64>(ctx, &lecture, &format!("{fin:?} sequential f64"));
    }
    // The integer-only operators, and the atomic finish where it applies.
    for fin in Finish::ALL {
        let r = ctx.reducer().finish(fin).deterministic(false);
        let e = ctx.alloc::<u8>(0).unwrap();
        let mut out = ctx.alloc::<u64>(1).unwrap();
        out.poison().unwrap();
        r.sum_into(&e, &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), [0], "{fin:?}");
        if fin != Finish::Atomic {
            let mut b = ctx.alloc::<u8>(1).unwrap();
            for (name, want) in [("and", u8::MAX), ("or", 0), ("xor", 0), ("min", u8::MAX), ("max", 0)] {
                b.poison().unwrap();
                match name {
                    "and" => r.and_into(&e, &mut b),
                    "or" => r.or_into(&e, &mut b),
                    "xor" => r.xor_into(&e, &mut b),
                    "min" => r.min_into(&e, &mut b),
                    _ => r.max_into(&e, &mut b),
                }
                .unwrap();
                assert_eq!(b.to_vec().unwrap(), [want], "{fin:?} {name}");
            }
        }
    }
});

backend_test!(argmin_and_argmax_into_give_the_first_index_and_ignore_nans, |ctx| {
    let n = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 5000 };
    let mut x: Vec<f16> = draw(proptest::collection::vec(f16::strategy(), n));
    for &i in &draw(proptest::collection::vec(0..n, 1..20)) {
        x[i] = f16::NAN;
    }
    let (lo, hi) = draw((0..n / 2, n / 2..n));
    for i in [lo, hi] {
        x[i] = f16::from_f32(-2000.0);
    }
    x[hi - 1] = f16::from_f32(2000.0);
    x[lo + 1] = f16::from_f32(2000.0);
    let buf = ctx.upload(&x).unwrap();
    let mut out = ctx.alloc::<u64>(1).unwrap();
    for fin in [Finish::LastBlock, Finish::Relaunch, Finish::Host] {
        let r = ctx.reducer().finish(fin);
        out.poison().unwrap();
        r.argmin_into(&buf, &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), [lo as u64], "{fin:?}");
        r.argmax_into(&buf, &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), [lo as u64 + 1], "{fin:?}");
        let all_nan = ctx.upload(&[f32::NAN; 7]).unwrap();
        out.poison().unwrap();
        r.argmin_into(&all_nan, &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), [0], "{fin:?}: all-NaN input gives the first element");
        r.argmax_into(&all_nan, &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), [0], "{fin:?}: all-NaN input gives the first element");
    }
    assert_eq!(ctx.argmin(&buf).unwrap().map(|(i, v)| (i, v.to_f32())), Some((lo, -2000.0)));
    assert_eq!(ctx.min(&buf).unwrap(), f16::from_f32(-2000.0));
    assert_eq!(ctx.max(&buf).unwrap(), f16::from_f32(2000.0));
});

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
        // The device's square root and division are the host's, bit for bit.
        let mut out = poisoned::<f64>(ctx)?;
        ctx.rms_into(&b64, &mut out).map_err(fail)?;
        prop_assert_eq!(first(&out)?.to_bits(), rms.to_bits(), "rms_into");
        let s = ctx.reducer().sum_squares(&b64).map_err(fail)?;
        let host = if n == 0 { 0.0 } else { (s / n as f64).sqrt() };
        prop_assert_eq!(rms.to_bits(), host.to_bits(), "rms on the device vs the host");
        ctx.norm2_into(&b64, &mut out).map_err(fail)?;
        prop_assert_eq!(first(&out)?.to_bits(), s.sqrt().to_bits(), "norm2_into vs the host's sqrt");
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

/// `out` still holds the poison (every byte 0xFF): the call that failed
/// wrote nothing.
fn untouched<A: DeviceRepr>(out: &DeviceBuffer<A>) -> bool {
    let v = out.to_vec().unwrap();
    // SAFETY: `DeviceRepr` types are plain data without padding.
    let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(&v[..])) };
    bytes.iter().all(|&b| b == 0xFF)
}

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
    // The lecture variants have the other operators at 256 threads only;
    // the default algorithm has every operator at every size.
    let lecture = ctx.reducer().algorithm(ReduceAlgorithm::Sequential).block_size(512);
    assert!(matches!(lecture.min(&x), Err(Error::UnsupportedBlockSize { block: 512, .. })));
    assert!(matches!(lecture.argmax(&x), Err(Error::UnsupportedBlockSize { block: 512, .. })));
    assert_eq!(ctx.reducer().block_size(512).min(&x).unwrap(), 1.0);
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

backend_test!(bad_outputs_temps_and_types_give_typed_errors_before_any_launch, |ctx| {
    let x = ctx.upload(&draw(proptest::collection::vec(any::<i8>(), 1..3000))).unwrap();
    let h = ctx.upload(&draw(proptest::collection::vec(f16::strategy(), 1..3000))).unwrap();
    let short = ctx.upload(&[1i8]).unwrap();
    let r = ctx.reducer();
    let (mut none64, mut none8, mut none_idx, mut none32) = (
        ctx.alloc::<i64>(0).unwrap(),
        ctx.alloc::<i8>(0).unwrap(),
        ctx.alloc::<u64>(0).unwrap(),
        ctx.alloc::<f32>(0).unwrap(),
    );
    let no_out = |res: gpuprim::Result<()>, what: &str| {
        assert!(matches!(res, Err(Error::LengthMismatch { expected: 1, got: 0, .. })), "{what}: {res:?}");
    };
    no_out(r.sum_into(&x, &mut none64), "sum_into");
    no_out(r.product_into(&x, &mut none64), "product_into");
    no_out(r.dot_into(&x, &x, &mut none64), "dot_into");
    no_out(r.sum_squares_into(&x, &mut none64), "sum_squares_into");
    no_out(r.min_into(&x, &mut none8), "min_into");
    no_out(r.max_into(&x, &mut none8), "max_into");
    no_out(r.and_into(&x, &mut none8), "and_into");
    no_out(r.or_into(&x, &mut none8), "or_into");
    no_out(r.xor_into(&x, &mut none8), "xor_into");
    no_out(r.argmin_into(&x, &mut none_idx), "argmin_into");
    no_out(r.argmax_into(&x, &mut none_idx), "argmax_into");
    no_out(r.norm1_into(&h, &mut none32), "norm1_into");
    no_out(r.norm2_into(&h, &mut none32), "norm2_into");
    no_out(r.rms_into(&h, &mut none32), "rms_into");
    no_out(r.reduce_by_into::<i8, gpuprim::reduce::Max>(&x, &mut none8), "reduce_by_into");

    let mut out = ctx.alloc::<i64>(1).unwrap();
    out.poison().unwrap();
    assert!(matches!(r.dot_into(&x, &short, &mut out), Err(Error::LengthMismatch { what: "second input", .. })));
    let mut tiny = ctx.reducer().temp::<i8>(1).unwrap();
    let big = ctx.upload(&vec![1i8; 1 << 20]).unwrap();
    let res = ctx.reducer().finish(Finish::Relaunch).sum_with_temp(&big, &mut out, &mut tiny);
    assert!(matches!(res, Err(Error::LengthMismatch { what: "temporary storage (bytes)", .. })), "{res:?}");
    let mut idx = ctx.alloc::<u64>(1).unwrap();
    idx.poison().unwrap();
    let res = ctx.reducer().finish(Finish::Relaunch).argmax_with_temp(&big, &mut idx, &mut tiny);
    assert!(matches!(res, Err(Error::LengthMismatch { .. })), "{res:?}");

    // The narrow types have the default algorithm only; their 1- and
    // 2-byte accumulators have no atomic update.
    let lecture = ctx.reducer().algorithm(ReduceAlgorithm::WarpShuffle);
    assert!(matches!(lecture.sum_into(&x, &mut out), Err(Error::Unsupported { .. })));
    assert!(matches!(lecture.argmin_into(&x, &mut idx), Err(Error::Unsupported { .. })));
    let mut m = ctx.alloc::<i8>(1).unwrap();
    m.poison().unwrap();
    assert!(matches!(ctx.reducer().finish(Finish::Atomic).max_into(&x, &mut m), Err(Error::Unsupported { .. })));
    let mut hm = ctx.alloc::<f16>(1).unwrap();
    hm.poison().unwrap();
    assert!(matches!(ctx.reducer().finish(Finish::Atomic).min_into(&h, &mut hm), Err(Error::Unsupported { .. })));
    // f16 sums accumulate in f32: atomic only when non-determinism is accepted.
    let mut s = ctx.alloc::<f32>(1).unwrap();
    s.poison().unwrap();
    assert!(matches!(ctx.reducer().finish(Finish::Atomic).sum_into(&h, &mut s), Err(Error::Unsupported { .. })));
    for (what, poisoned) in [
        ("out", untouched(&out)),
        ("idx", untouched(&idx)),
        ("m", untouched(&m)),
        ("hm", untouched(&hm)),
        ("s", untouched(&s)),
    ] {
        assert!(poisoned, "{what} was written by a call that failed");
    }
    ctx.reducer().finish(Finish::Atomic).deterministic(false).sum_into(&h, &mut s).unwrap();
    let want: f64 = h.to_vec().unwrap().iter().map(|v| v.to_f64()).sum();
    let got = s.to_vec().unwrap()[0] as f64;
    assert!((got - want).abs() <= float_sum_bound(h.len(), f32::EPSILON as f64, want.abs().max(1.0) * 2000.0));
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
    let mut idx = ctx.alloc::<u64>(1).unwrap();
    ctx.argmax_into(&buf, &mut idx).unwrap();
    assert_eq!(idx.to_vec().unwrap(), [peak_at as u64]);
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
impl gpuprim::reduce::Accumulate<i32> for Nowhere {
    type Acc = i32;
    fn lift(x: i32) -> i32 {
        x
    }
}
impl gpuprim::reduce::Named for Nowhere {
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
    let refused = r.reduce_by::<i32, Nowhere>(&buf);
    assert!(
        matches!(&refused, Err(Error::Unsupported { reason, .. }) if reason.contains("operator `nowhere`, type `i32`")
            && reason.contains("load_kernels")),
        "{refused:?}"
    );
    let mut out = ctx.alloc::<i32>(1).unwrap();
    assert!(matches!(r.reduce_by_into::<i32, Nowhere>(&buf, &mut out), Err(Error::Unsupported { .. })));
    // Sums of 16-bit integers come back in 64 bits, by name or by type.
    let h: Vec<i16> = draw(proptest::collection::vec(any::<i16>(), 1..5000));
    let hb = ctx.upload(&h).unwrap();
    let want: i64 = h.iter().map(|&v| v as i64).sum();
    assert_eq!(r.reduce_by::<i16, Sum>(&hb).unwrap(), want);
    assert_eq!(r.sum(&hb).unwrap(), want);
    assert_eq!(r.reduce_by::<i16, Max>(&hb).unwrap(), *h.iter().max().unwrap());
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
        // Once first: a kernel's module loads on its first launch, and a
        // module load may wait for the GPU.
        r.sum_with_temp(&input, &mut out, &mut temp).unwrap();
        out.poison().unwrap();
        let held = ctx.time_held(|| r.sum_with_temp(&input, &mut out, &mut temp));
        assert!(held.is_ok(), "{fin:?} waited for the GPU: {held:?}");
        assert_eq!(out.to_vec().unwrap(), [want], "{fin:?}");
    }
});

// The same for every `_into` form, with the device-side finishing steps
// (the square root of norm2 and rms, the index of argmin and argmax) and
// empty inputs, whose identity is written by a kernel too.
backend_test!(every_into_form_queues_without_waiting_for_the_gpu, |ctx| {
    let n = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 5000 };
    let data: Vec<f32> = draw(proptest::collection::vec(-100.0f32..100.0, n));
    let halves: Vec<bf16> = data.iter().map(|&v| bf16::from_f32(v)).collect();
    for len in [n, n - 1, 0] {
        let (x, h) = (ctx.upload(&data[..len]).unwrap(), ctx.upload(&halves[..len]).unwrap());
        let bytes = ctx.upload(&vec![7u8; len]).unwrap();
        for fin in [Finish::Relaunch, Finish::LastBlock] {
            let r = ctx.reducer().finish(fin);
            let (mut f, mut g) = (ctx.alloc::<f32>(1).unwrap(), ctx.alloc::<f32>(1).unwrap());
            let (mut i, mut u, mut b) =
                (ctx.alloc::<u64>(1).unwrap(), ctx.alloc::<u64>(1).unwrap(), ctx.alloc::<u8>(1).unwrap());
            macro_rules! queue {
                () => {{
                    r.norm2_into(&x, &mut f)?;
                    r.rms_into(&h, &mut g)?;
                    r.argmax_into(&h, &mut i)?;
                    r.sum_into(&bytes, &mut u)?;
                    r.xor_into(&bytes, &mut b)
                }};
            }
            // Once first, so that the scratch storage is allocated and the
            // kernels' modules are loaded outside the held stream (either
            // may wait for the GPU).
            let warm = (|| -> gpuprim::Result<()> { queue!() })();
            warm.unwrap();
            f.poison().unwrap();
            g.poison().unwrap();
            i.poison().unwrap();
            u.poison().unwrap();
            b.poison().unwrap();
            let held = ctx.time_held(|| -> gpuprim::Result<()> { queue!() });
            assert!(held.is_ok(), "{fin:?} n={len} waited for the GPU: {held:?}");
            let sq: f64 = data[..len].iter().map(|&v| v as f64 * v as f64).sum();
            let got = f.to_vec().unwrap()[0] as f64;
            assert!(
                (got - sq.sqrt()).abs() <= (len as f64 + 2.0) * f32::EPSILON as f64 * sq.sqrt(),
                "{fin:?} norm2 {got}"
            );
            let hsq: f64 = halves[..len].iter().map(|v| v.to_f64() * v.to_f64()).sum();
            let want = if len == 0 { 0.0 } else { (hsq / len as f64).sqrt() };
            let got = g.to_vec().unwrap()[0] as f64;
            assert!(
                (got - want).abs() <= (len as f64 + 3.0) * f32::EPSILON as f64 * want,
                "{fin:?} rms {got} vs {want}"
            );
            let want = Reference::of(&halves[..len], &[]).argmax.map_or(NO_INDEX, |j| j as u64);
            assert_eq!(i.to_vec().unwrap(), [want], "{fin:?} argmax");
            assert_eq!(u.to_vec().unwrap(), [7 * len as u64], "{fin:?} sum of u8");
            assert_eq!(b.to_vec().unwrap(), [if len % 2 == 1 { 7 } else { 0 }], "{fin:?} xor of u8");
        }
    }
});
