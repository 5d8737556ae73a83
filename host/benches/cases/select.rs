//! The select group: `select_if`, `select_flagged`, `partition` at 0%, 50%
//! and 100% selected, the three-way partition in thirds, `unique` and
//! `unique_by_key` at runs of 1, 8 and 1000; the stream-ordered `_into`
//! forms with the count left in device memory and temporary storage made
//! once per size (as CUB's twins).
//!
//! Bytes (see [`super::data`]), `s` = size of `T`, `c` = items selected,
//! `R` = runs:
//! * `select_if`: read `n s`, written `c s`; `select_flagged`: read
//!   `n (s + 1)`, written `c s`;
//! * `partition` and `partition_three_way`: read `n s`, written `n s`;
//! * `unique`: read `n s`, written `R s`; `unique_by_key` (u64 keys): read
//!   `n (8 + s)`, written `R (8 + s)`.

use super::data::{DataCase, DataKey, DataSet, Moved, Part, Prepared, download, poisoned, same_bits};
use crate::{Elem, Group, Res};
use gpuprim::select::{Predicate, SelectTemp};
use gpuprim::{Context, DeviceBuffer};
use std::rc::Rc;

const GROUP: Group = Group("select");

/// The selected percentages and the threshold `t` of `x < t` on values
/// 0..=2000 that gives them (cub_bench.cu: `20 P`, plus 1 at 100%).
const PERCENTS: [u32; 3] = [0, 50, 100];
fn threshold(percent: u32) -> u32 {
    percent * 20 + u32::from(percent == 100)
}
/// The three-way partition's thresholds: `x < 667`, then `x < 1334`.
const THIRDS: (u32, u32) = (667, 1334);
/// Run lengths of `unique` and `unique_by_key`.
pub(crate) const RUNS: [u64; 3] = [1, 8, 1000];

/// Every select case, for i32 and f32.
pub(crate) fn data_cases() -> Vec<DataCase> {
    [cases_for::<i32>(), cases_for::<f32>()].into_iter().flatten().collect()
}

fn cases_for<T: Elem>() -> Vec<DataCase> {
    let mut v = Vec::new();
    for p in PERCENTS {
        let t = threshold(p);
        v.push(case::<T>(format!("select_if/{p}%"), DataKey::Values, &[Part::Vals], Op::If(t)));
    }
    for p in PERCENTS {
        let t = threshold(p);
        v.push(case::<T>(format!("select_flagged/{p}%"), DataKey::Flags(t), &[Part::Vals, Part::Flags], Op::Flagged));
    }
    for p in PERCENTS {
        let t = threshold(p);
        v.push(case::<T>(format!("partition/{p}%"), DataKey::Values, &[Part::Vals], Op::Partition(t)));
    }
    v.push(case::<T>("partition_three_way/thirds".into(), DataKey::Values, &[Part::Vals], Op::ThreeWay));
    for l in RUNS {
        v.push(case::<T>(format!("unique/run{l}"), DataKey::Runs(l), &[Part::Runs], Op::Unique));
    }
    for l in RUNS {
        v.push(case::<T>(format!("unique_by_key/run{l}"), DataKey::Runs(l), &[Part::Keys, Part::Vals], Op::ByKey));
    }
    v
}

#[derive(Clone, Copy)]
enum Op {
    If(u32),
    Flagged,
    Partition(u32),
    ThreeWay,
    Unique,
    ByKey,
}

fn case<T: Elem>(name: String, data: DataKey, reads: &'static [Part], op: Op) -> DataCase {
    DataCase::new::<T, _>(GROUP, name, data, reads, move |ctx, d| Run::<T>::new(ctx, d, op))
}

/// A select case at one size: outputs, the count, temporary storage and
/// the CPU reference.
struct Run<T: Elem> {
    op: Op,
    d: Rc<DataSet<T>>,
    temp: SelectTemp,
    outs: [DeviceBuffer<T>; 3],
    keys_out: DeviceBuffer<u64>,
    count: DeviceBuffer<u64>,
    /// The reference: counts, each output's items (and keys).
    want_counts: Vec<u64>,
    want: Vec<Vec<T>>,
    want_keys: Vec<u64>,
}

impl<T: Elem> Run<T> {
    fn new(ctx: &Context, d: Rc<DataSet<T>>, op: Op) -> Res<Self> {
        let n = d.n;
        let less = |t: u32| move |x: T| x.to_f64() < f64::from(t);
        let (mut want_counts, mut want, mut want_keys) = (Vec::new(), Vec::new(), Vec::new());
        match op {
            Op::If(t) => want.push(d.vals.iter().copied().filter(|&x| less(t)(x)).collect::<Vec<T>>()),
            Op::Flagged => {
                want.push(d.vals.iter().zip(&d.flags).filter(|&(_, &f)| f != 0).map(|(&x, _)| x).collect::<Vec<T>>())
            }
            Op::Partition(t) => {
                let (mut yes, no): (Vec<T>, Vec<T>) = d.vals.iter().partition(|&&x| less(t)(x));
                want_counts.push(yes.len() as u64);
                yes.extend(no.iter().rev());
                want.push(yes);
            }
            Op::ThreeWay => {
                let mut w = [Vec::new(), Vec::new(), Vec::new()];
                for &x in &d.vals {
                    w[if less(THIRDS.0)(x) {
                        0
                    } else if less(THIRDS.1)(x) {
                        1
                    } else {
                        2
                    }]
                    .push(x);
                }
                want_counts = vec![w[0].len() as u64, w[1].len() as u64];
                want.extend(w);
            }
            Op::Unique => {
                want.push((0..n).filter(|&i| i == 0 || d.runs[i] != d.runs[i - 1]).map(|i| d.runs[i]).collect())
            }
            Op::ByKey => {
                let heads: Vec<usize> = (0..n).filter(|&i| i == 0 || d.keys[i] != d.keys[i - 1]).collect();
                want_keys = heads.iter().map(|&i| d.keys[i]).collect();
                want.push(heads.iter().map(|&i| d.vals[i]).collect());
            }
        }
        if want_counts.is_empty() {
            want_counts.push(want[0].len() as u64);
        }
        let sel = ctx.select();
        let temp = if matches!(op, Op::ByKey) { sel.temp::<u64>(n)? } else { sel.temp::<T>(n)? };
        let three = matches!(op, Op::ThreeWay);
        Ok(Run {
            op,
            temp,
            outs: [
                poisoned(ctx, n)?,
                poisoned(ctx, if three { n } else { 0 })?,
                poisoned(ctx, if three { n } else { 0 })?,
            ],
            keys_out: poisoned(ctx, if matches!(op, Op::ByKey) { n } else { 0 })?,
            count: poisoned(ctx, 2)?,
            d,
            want_counts,
            want,
            want_keys,
        })
    }
}

impl<T: Elem> Prepared for Run<T> {
    fn run(&mut self, ctx: &Context, c: usize) -> gpuprim::Result<()> {
        let (d, sel, temp) = (&self.d, ctx.select(), Some(&mut self.temp));
        let [o0, o1, o2] = &mut self.outs;
        let less = |t: u32| Predicate::Less(T::from_small(t));
        match self.op {
            Op::If(t) => sel.select_if_into(&d.d_vals[c], o0, less(t), &mut self.count, temp),
            Op::Flagged => sel.select_flagged_into(&d.d_vals[c], &d.d_flags[c], o0, &mut self.count, temp),
            Op::Partition(t) => sel.partition_into(&d.d_vals[c], o0, less(t), &mut self.count, temp),
            Op::ThreeWay => sel.partition_three_way_into(
                &d.d_vals[c],
                o0,
                o1,
                o2,
                less(THIRDS.0),
                less(THIRDS.1),
                &mut self.count,
                temp,
            ),
            Op::Unique => sel.unique_into(&d.d_runs[c], o0, &mut self.count, temp),
            Op::ByKey => {
                sel.unique_by_key_into(&d.d_keys[c], &d.d_vals[c], &mut self.keys_out, o0, &mut self.count, temp)
            }
        }
    }

    fn check(&mut self, _ctx: &Context) -> Result<(), String> {
        let counts = download(&self.count, self.want_counts.len())?;
        if counts != self.want_counts {
            return Err(format!("counts {counts:?}, want {:?}", self.want_counts));
        }
        let names = ["output", "second output", "rest output"];
        for (j, want) in self.want.iter().enumerate() {
            same_bits(names[j], &download(&self.outs[j], want.len())?, want, T::bits)?;
        }
        if matches!(self.op, Op::ByKey) {
            same_bits("keys", &download(&self.keys_out, self.want_keys.len())?, &self.want_keys, |k| k)?;
        }
        Ok(())
    }

    fn moved(&self) -> Moved {
        let (n, s) = (self.d.n as u64, T::TY.size() as u64);
        let written = self.want.iter().map(|w| w.len() as u64).sum::<u64>() * s;
        match self.op {
            Op::If(_) | Op::Partition(_) | Op::ThreeWay | Op::Unique => Moved { read: n * s, written },
            Op::Flagged => Moved { read: n * (s + 1), written },
            Op::ByKey => Moved { read: n * (8 + s), written: written + 8 * self.want_keys.len() as u64 },
        }
    }
}
