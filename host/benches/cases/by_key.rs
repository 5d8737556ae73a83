//! The by-key group at runs of 1, 8 and 1000: `reduce_by_key`,
//! `inclusive_scan_by_key`, `exclusive_scan_by_key` (sum, u64 keys),
//! `run_length_encode` and `non_trivial_runs` (u32 counts, as CUB's `int`);
//! the stream-ordered `_into` forms with the count left in device memory
//! and temporary storage made once per size (as CUB's twins).
//!
//! Bytes (see [`super::data`]), `s` = size of `T`, `R` = runs, `N` = runs
//! longer than 1:
//! * `reduce_by_key`: read `n (8 + s)`, written `R (8 + s)`;
//! * `reduce_by_key_k32` (`i32` only: the run values as 4-byte keys, the
//!   values as `reduce_by_key`'s; no CUB twin): read `2 n s`, written `2 R s`;
//! * the scans by key: read `n (8 + s)`, written `n s`;
//! * `run_length_encode`: read `n s`, written `R (s + 4)`;
//! * `non_trivial_runs`: read `n s`, written `8 N`.

use super::data::{DataCase, DataKey, DataSet, Moved, Part, Prepared, download, poisoned, same_bits};
use super::select::RUNS;
use crate::{Elem, Expect, F64Sum, Group, Res, Ty, float_bound};
use gpuprim::by_key::ByKeyTemp;
use gpuprim::scan::Sum;
use gpuprim::{Context, DeviceBuffer};
use std::rc::Rc;

const GROUP: Group = Group("by_key");

/// Every by-key case, for i32 and f32 values.
pub(crate) fn data_cases() -> Vec<DataCase> {
    [cases_for::<i32>(), cases_for::<f32>()].into_iter().flatten().collect()
}

fn cases_for<T: Elem>() -> Vec<DataCase> {
    let mut v = Vec::new();
    const KV: &[Part] = &[Part::Keys, Part::Vals];
    const RV: &[Part] = &[Part::Runs];
    for l in RUNS {
        for (name, op, reads) in [
            ("reduce_by_key", Op::Reduce, KV),
            ("inclusive_scan_by_key", Op::Inclusive, KV),
            ("exclusive_scan_by_key", Op::Exclusive, KV),
            ("run_length_encode", Op::Encode, RV),
            ("non_trivial_runs", Op::NonTrivial, RV),
        ] {
            v.push(DataCase::new::<T, _>(GROUP, format!("{name}/run{l}"), DataKey::Runs(l), reads, move |ctx, d| {
                Run::<T>::new(ctx, d, op)
            }));
        }
        // Reduce-by-key's 4-byte-key kernels (their own tile and launch
        // bounds), where the run values can be the keys.
        if T::TY == Ty::I32 {
            const RKV: &[Part] = &[Part::Runs, Part::Vals];
            v.push(
                DataCase::new::<T, _>(GROUP, format!("reduce_by_key_k32/run{l}"), DataKey::Runs(l), RKV, |ctx, d| {
                    Run::<T>::new(ctx, d, Op::ReduceNarrow)
                })
                .without_twin(),
            );
        }
    }
    v
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Reduce,
    /// Reduce-by-key over the run values as keys.
    ReduceNarrow,
    Inclusive,
    Exclusive,
    Encode,
    NonTrivial,
}

/// Runs of equal consecutive elements: (start, length).
fn runs_of<X: PartialEq>(x: &[X]) -> Vec<(usize, usize)> {
    let mut r: Vec<(usize, usize)> = Vec::new();
    for i in 0..x.len() {
        match r.last_mut() {
            Some(last) if x[i] == x[i - 1] => last.1 += 1,
            _ => r.push((i, 1)),
        }
    }
    r
}

/// What `vals[lo..hi]` sums to: exactly (integers, wrapping) or within a
/// rounding bound (floats).
fn sum_of<T: Elem>(vals: &[T]) -> Expect<T> {
    if T::EXACT {
        Expect::Exact(vals.iter().fold(T::default(), |a, &b| a.ref_add(b)))
    } else {
        let mut f = F64Sum::new();
        vals.iter().for_each(|&x| f.add(x.to_f64()));
        Expect::Within { value: f.value(), bound: float_bound(vals.len(), T::EPS, f.abs) }
    }
}

struct Run<T: Elem> {
    op: Op,
    d: Rc<DataSet<T>>,
    temp: ByKeyTemp,
    /// Values out (aggregates, scans, run values).
    out: DeviceBuffer<T>,
    /// Unique keys (reduce_by_key).
    keys_out: DeviceBuffer<u64>,
    /// Unique keys (reduce_by_key_k32).
    keys_narrow: DeviceBuffer<T>,
    /// Run lengths (encode), offsets and lengths (non-trivial runs).
    a: DeviceBuffer<u32>,
    b: DeviceBuffer<u32>,
    count: DeviceBuffer<u64>,
    /// The runs of the keys (or run values).
    runs: Vec<(usize, usize)>,
}

impl<T: Elem> Run<T> {
    fn new(ctx: &Context, d: Rc<DataSet<T>>, op: Op) -> Res<Self> {
        let n = d.n;
        let runs = if matches!(op, Op::Encode | Op::NonTrivial | Op::ReduceNarrow) {
            runs_of(&d.runs)
        } else {
            runs_of(&d.keys)
        };
        let counts = matches!(op, Op::Encode | Op::NonTrivial);
        Ok(Run {
            op,
            temp: ctx.by_key().temp(n)?,
            out: poisoned(ctx, if op == Op::NonTrivial { 0 } else { n })?,
            keys_out: poisoned(ctx, if op == Op::Reduce { n } else { 0 })?,
            keys_narrow: poisoned(ctx, if op == Op::ReduceNarrow { n } else { 0 })?,
            a: poisoned(ctx, if counts { n } else { 0 })?,
            b: poisoned(ctx, if op == Op::NonTrivial { n } else { 0 })?,
            count: poisoned(ctx, 1)?,
            d,
            runs,
        })
    }
}

impl<T: Elem> Prepared for Run<T> {
    fn run(&mut self, ctx: &Context, c: usize) -> gpuprim::Result<()> {
        let (d, bk, temp) = (&self.d, ctx.by_key(), Some(&mut self.temp));
        match self.op {
            Op::Reduce => bk.reduce_by_key_into(
                &d.d_keys[c],
                &d.d_vals[c],
                &mut self.keys_out,
                &mut self.out,
                &mut self.count,
                Sum,
                temp,
            ),
            Op::ReduceNarrow => bk.reduce_by_key_into(
                &d.d_runs[c],
                &d.d_vals[c],
                &mut self.keys_narrow,
                &mut self.out,
                &mut self.count,
                Sum,
                temp,
            ),
            Op::Inclusive => bk.inclusive_scan_by_key(&d.d_keys[c], &d.d_vals[c], &mut self.out, Sum, temp),
            Op::Exclusive => {
                bk.exclusive_scan_by_key(&d.d_keys[c], &d.d_vals[c], &mut self.out, T::default(), Sum, temp)
            }
            Op::Encode => {
                bk.run_length_encode_into::<T, u32>(&d.d_runs[c], &mut self.out, &mut self.a, &mut self.count, temp)
            }
            Op::NonTrivial => {
                bk.non_trivial_runs_into::<T, u32>(&d.d_runs[c], &mut self.a, &mut self.b, &mut self.count, temp)
            }
        }
    }

    fn check(&mut self, _ctx: &Context) -> Result<(), String> {
        let (d, runs) = (&self.d, &self.runs);
        let long: Vec<&(usize, usize)> = runs.iter().filter(|r| r.1 > 1).collect();
        let want_count = match self.op {
            Op::Inclusive | Op::Exclusive => None,
            Op::NonTrivial => Some(long.len() as u64),
            _ => Some(runs.len() as u64),
        };
        if let Some(w) = want_count {
            let got = download(&self.count, 1)?[0];
            if got != w {
                return Err(format!("count {got}, want {w}"));
            }
        }
        match self.op {
            Op::Reduce => {
                let keys: Vec<u64> = runs.iter().map(|r| d.keys[r.0]).collect();
                same_bits("keys", &download(&self.keys_out, keys.len())?, &keys, |k| k)?;
                let got = download(&self.out, runs.len())?;
                for (j, &(at, len)) in runs.iter().enumerate() {
                    sum_of(&d.vals[at..at + len]).check(got[j]).map_err(|e| format!("aggregate {j}: {e}"))?;
                }
            }
            Op::ReduceNarrow => {
                let keys: Vec<T> = runs.iter().map(|r| d.runs[r.0]).collect();
                same_bits("keys", &download(&self.keys_narrow, keys.len())?, &keys, T::bits)?;
                let got = download(&self.out, runs.len())?;
                for (j, &(at, len)) in runs.iter().enumerate() {
                    sum_of(&d.vals[at..at + len]).check(got[j]).map_err(|e| format!("aggregate {j}: {e}"))?;
                }
            }
            Op::Inclusive | Op::Exclusive => {
                let got = download(&self.out, d.n)?;
                let inclusive = self.op == Op::Inclusive;
                for &(at, len) in runs {
                    let (mut exact, mut f) = (T::default(), F64Sum::new());
                    let run = at..at + len;
                    for (j, (&x, &g)) in d.vals[run.clone()].iter().zip(&got[run]).enumerate() {
                        let i = at + j;
                        if inclusive {
                            exact = exact.ref_add(x);
                            f.add(x.to_f64());
                        }
                        let terms = j + usize::from(inclusive);
                        let want = if T::EXACT {
                            Expect::Exact(exact)
                        } else {
                            Expect::Within { value: f.value(), bound: float_bound(terms, T::EPS, f.abs) }
                        };
                        want.check(g).map_err(|e| format!("element {i}: {e}"))?;
                        if !inclusive {
                            exact = exact.ref_add(x);
                            f.add(x.to_f64());
                        }
                    }
                }
            }
            Op::Encode => {
                let vals: Vec<T> = runs.iter().map(|r| d.runs[r.0]).collect();
                let lens: Vec<u32> = runs.iter().map(|r| r.1 as u32).collect();
                same_bits("values", &download(&self.out, vals.len())?, &vals, T::bits)?;
                same_bits("lengths", &download(&self.a, lens.len())?, &lens, u64::from)?;
            }
            Op::NonTrivial => {
                let offs: Vec<u32> = long.iter().map(|r| r.0 as u32).collect();
                let lens: Vec<u32> = long.iter().map(|r| r.1 as u32).collect();
                same_bits("offsets", &download(&self.a, offs.len())?, &offs, u64::from)?;
                same_bits("lengths", &download(&self.b, lens.len())?, &lens, u64::from)?;
            }
        }
        Ok(())
    }

    fn moved(&self) -> Moved {
        let (n, s, r) = (self.d.n as u64, T::TY.size() as u64, self.runs.len() as u64);
        match self.op {
            Op::Reduce => Moved { read: n * (8 + s), written: r * (8 + s) },
            Op::ReduceNarrow => Moved { read: 2 * n * s, written: 2 * r * s },
            Op::Inclusive | Op::Exclusive => Moved { read: n * (8 + s), written: n * s },
            Op::Encode => Moved { read: n * s, written: r * (s + 4) },
            Op::NonTrivial => Moved { read: n * s, written: 8 * self.runs.iter().filter(|r| r.1 > 1).count() as u64 },
        }
    }
}
