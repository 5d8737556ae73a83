//! The scan cases: every algorithm, the look-back at every instantiated
//! block size, and the simple calls `inclusive_scan` and `exclusive_scan`.

use crate::{Case, Elem, Expect, F64Sum, Group, float_bound, mismatch};
use gpuprim::{Context, DeviceBuffer};

/// A scan of `T` into an output of `n` elements: moves
/// `2 * n * size_of::<T>()` bytes. `inclusive` picks the reference.
#[allow(dead_code)] // used as soon as the first scan lands in `scan_cases_for`
fn scan_case<T: Elem>(
    name: &str,
    inclusive: bool,
    run: impl Fn(&Context, &DeviceBuffer<T>, &mut DeviceBuffer<T>) -> gpuprim::Result<()> + 'static,
) -> Case {
    let (run_name, check_name) = (name.to_string(), name.to_string());
    Case {
        group: Group::SCAN,
        name: name.to_string(),
        ty: T::TY,
        bytes_per_elem_moved: 2 * T::TY.size(),
        out_len: |n| n,
        run: Box::new(move |ctx, input, out| {
            let input = T::device(input).ok_or_else(|| mismatch(&run_name))?;
            let out = T::device_mut(out).ok_or_else(|| mismatch(&run_name))?;
            Ok(run(ctx, input, out)?)
        }),
        check: Box::new(move |host, out| {
            let data = T::host(host).ok_or_else(|| mismatch(&check_name).to_string())?;
            let out = T::device(out).ok_or_else(|| mismatch(&check_name).to_string())?;
            let got = out.to_vec().map_err(|e| format!("reading the result: {e}"))?;
            if got.len() != data.len() {
                return Err(format!("output has {} elements, want {}", got.len(), data.len()));
            }
            let mut exact = T::default();
            let mut f = F64Sum::new();
            for (i, (&x, &g)) in data.iter().zip(&got).enumerate() {
                // Exclusive: element i holds the sum of the i before it.
                let before = if T::EXACT {
                    Expect::Exact(exact)
                } else {
                    Expect::Within { value: f.value(), bound: float_bound(i, T::EPS, f.abs) }
                };
                exact = exact.ref_add(x);
                f.add(x.to_f64());
                let want = if !inclusive {
                    before
                } else if T::EXACT {
                    Expect::Exact(exact)
                } else {
                    Expect::Within { value: f.value(), bound: float_bound(i + 1, T::EPS, f.abs) }
                };
                want.check(g).map_err(|e| format!("element {i}: {e}"))?;
            }
            Ok(())
        }),
    }
}

/// Every scan case for element type `T`: one per operation and algorithm
/// variant. For example (the exclusive reference assumes `init` = 0):
///
/// ```ignore
/// vec![
///     scan_case::<T>("inclusive", true, |ctx, i, o| ctx.inclusive_scan(i, o)),
///     scan_case::<T>("exclusive", false, |ctx, i, o| ctx.exclusive_scan(i, o, T::default())),
/// ]
/// // and per variant: for alg in ScanAlgorithm::ALL { cases.push(scan_case::<T>(
/// //     &format!("inclusive/{}", alg.name()), true, move |ctx, i, o| /* scan with `alg` */)); }
/// ```
fn scan_cases_for<T: Elem>() -> Vec<Case> {
    use gpuprim::scan::{ScanAlgorithm, ScanTemp, Sum};
    use std::cell::RefCell;
    let mut cases = Vec::new();
    // Every algorithm at its default block size, inclusive sum, with
    // temporary storage made once per size (the `*_with_temp` calls), as a
    // caller that scans repeatedly would; the single-pass scans' clearing
    // of their status is part of every run. Then the look-back at the other
    // block sizes that keep 128 bytes (or 64 at 512 threads) per thread,
    // for tuning (instantiated for 4-byte types; wider ones have the
    // default only).
    let mut variants: Vec<(String, ScanAlgorithm, Option<u32>)> =
        ScanAlgorithm::ALL.into_iter().map(|alg| (format!("inclusive/{}", alg.name()), alg, None)).collect();
    // The look-back at the other block sizes instantiated for sum on every
    // type, for the block-size-by-input-size table (`Scan::block_size_for`).
    for block in [32u32, 64, 128, 512] {
        variants.push((format!("inclusive/lookback/b{block}"), ScanAlgorithm::DecoupledLookBack, Some(block)));
    }
    for (name, alg, block) in variants {
        let temp: RefCell<Option<(usize, ScanTemp)>> = RefCell::new(None);
        cases.push(scan_case::<T>(&name, true, move |ctx, input, out| {
            let scan = ctx.scan().algorithm(alg);
            let scan = match block {
                Some(b) => scan.block_size(b),
                None => scan,
            };
            let mut slot = temp.borrow_mut();
            if !matches!(&*slot, Some((len, _)) if *len >= input.len()) {
                *slot = Some((input.len(), scan.temp::<T>(input.len())?));
            }
            match slot.as_mut() {
                Some((_, t)) => scan.inclusive_with_temp(input, out, Sum, t),
                None => scan.inclusive(input, out, Sum),
            }
        }));
    }
    // The simple calls (default algorithm, the context's scratch storage).
    cases.push(scan_case::<T>("inclusive_scan", true, |ctx, input, out| ctx.inclusive_scan(input, out)));
    cases.push(scan_case::<T>("exclusive_scan", false, |ctx, input, out| ctx.exclusive_scan(input, out, T::default())));
    cases
}

/// Every scan case, for i32, f32 and f64.
pub(crate) fn cases() -> Vec<Case> {
    [scan_cases_for::<i32>(), scan_cases_for::<f32>(), scan_cases_for::<f64>()].into_iter().flatten().collect()
}
