//! The reduction cases: `sum_into`, every kernel and finishing strategy,
//! grid sizes, the lecture table's setting, and the latency case.

use crate::{Case, Elem, Expect, Group, mismatch, sum_expect};
use gpuprim::reduce::{Finish, ReduceAlgorithm, ReduceTemp};
use gpuprim::{Context, DeviceBuffer};
use std::cell::RefCell;

/// A reduction of `T` into `out[0]`: moves `n * size_of::<T>()` bytes.
fn reduce_case<T: Elem>(
    name: &str,
    run: impl Fn(&Context, &DeviceBuffer<T>, &mut DeviceBuffer<T>) -> gpuprim::Result<()> + 'static,
    reference: fn(&[T]) -> Expect<T>,
) -> Case {
    let (run_name, check_name) = (name.to_string(), name.to_string());
    Case {
        group: Group::REDUCE,
        name: name.to_string(),
        ty: T::TY,
        bytes_per_elem_moved: T::TY.size(),
        out_len: |_| 1,
        run: Box::new(move |ctx, input, out| {
            let input = T::device(input).ok_or_else(|| mismatch(&run_name))?;
            let out = T::device_mut(out).ok_or_else(|| mismatch(&run_name))?;
            Ok(run(ctx, input, out)?)
        }),
        check: Box::new(move |host, out| {
            let data = T::host(host).ok_or_else(|| mismatch(&check_name).to_string())?;
            let out = T::device(out).ok_or_else(|| mismatch(&check_name).to_string())?;
            let got = out.to_vec().map_err(|e| format!("reading the result: {e}"))?;
            let got = *got.first().ok_or("empty output")?;
            reference(data).check(got)
        }),
    }
}
/// Every reduction case for element type `T`: one per operation and
/// algorithm variant.
fn reduce_cases_for<T: Elem>() -> Vec<Case> {
    // The one-call API as users call it (it allocates its temporary storage).
    let mut cases = vec![reduce_case::<T>("sum_into", |ctx, input, out| ctx.sum_into(input, out), sum_expect::<T>)];
    // Every kernel, finished the default way (the last block combines the
    // block totals in the same launch).
    for alg in ReduceAlgorithm::ALL {
        cases.push(sum_variant::<T>(alg, Finish::LastBlock));
    }
    // The other ways to finish, with the default kernel.
    for fin in Finish::ALL.into_iter().filter(|&f| f != Finish::LastBlock) {
        cases.push(sum_variant::<T>(ReduceAlgorithm::Vectorized, fin));
    }
    // The default kernel with other grid sizes, in blocks per
    // multiprocessor (the default fills each with 2048 threads: 8 blocks).
    for per_sm in [4u32, 16, 32] {
        cases.push(sum_grid::<T>(per_sm));
    }
    // The simple call once more, measured after the others: the same call
    // as `sum_into`, so a difference between the two is the measurement's
    // order, not the library.
    cases.push(reduce_case::<T>("sum_into/again", |ctx, input, out| ctx.sum_into(input, out), sum_expect::<T>));
    // The lecture table's setting: ints, 1024 threads per block, the
    // partials reduced by relaunching the kernel.
    if T::TY.size() == 4 && T::EXACT {
        for alg in ReduceAlgorithm::ALL {
            cases.push(sum_variant_block::<T>(alg, Finish::Relaunch, 1024));
        }
    }
    cases
}

/// [`sum_variant`] with another block size; named `sum/<kernel>+<finish>/b<block>`.
fn sum_variant_block<T: Elem>(alg: ReduceAlgorithm, fin: Finish, block: u32) -> Case {
    let name = format!("sum/{}+{}/b{block}", alg.name(), format!("{fin:?}").to_lowercase());
    sum_case::<T>(name, alg, fin, block)
}

/// The sum with one kernel and one finishing strategy, into temporary
/// storage allocated once (in the first warm-up run), so that the timed
/// runs measure the launches alone. Atomic float combines are not
/// deterministic, which the bench accepts.
fn sum_variant<T: Elem>(alg: ReduceAlgorithm, fin: Finish) -> Case {
    let name = match fin {
        Finish::LastBlock => format!("sum/{}", alg.name()),
        other => format!("sum/{}+{}", alg.name(), format!("{other:?}").to_lowercase()),
    };
    sum_case::<T>(name, alg, fin, gpuprim::reduce::DEFAULT_BLOCK)
}

/// The case behind [`sum_variant`] and [`sum_variant_block`].
fn sum_case<T: Elem>(name: String, alg: ReduceAlgorithm, fin: Finish, block: u32) -> Case {
    let temp: RefCell<Option<(usize, ReduceTemp)>> = RefCell::new(None);
    reduce_case::<T>(
        &name,
        move |ctx, input, out| {
            let r = ctx.reducer().algorithm(alg).finish(fin).block_size(block).deterministic(fin != Finish::Atomic);
            let mut slot = temp.borrow_mut();
            let mut t = match slot.take() {
                Some((n, t)) if n == input.len() => t,
                _ => r.temp::<T>(input.len())?,
            };
            let result = r.sum_with_temp(input, out, &mut t);
            *slot = Some((input.len(), t));
            result
        },
        sum_expect::<T>,
    )
}

/// `sum_into` with the default kernel at `per_sm` blocks per multiprocessor;
/// named `sum/grid<per_sm>`.
fn sum_grid<T: Elem>(per_sm: u32) -> Case {
    reduce_case::<T>(
        &format!("sum/grid{per_sm}"),
        move |ctx, input, out| ctx.reducer().grid_size(ctx.multiprocessors() * per_sm).sum_into(input, out),
        sum_expect::<T>,
    )
}

/// The latency case: the library's default `Context::sum_into`.
pub(crate) fn latency_case() -> Case {
    reduce_case::<f32>("sum_into", |ctx, input, out| ctx.sum_into(input, out), sum_expect::<f32>)
}

/// Every reduction case, for i32, f32 and f64.
pub(crate) fn cases() -> Vec<Case> {
    [reduce_cases_for::<i32>(), reduce_cases_for::<f32>(), reduce_cases_for::<f64>()].into_iter().flatten().collect()
}
