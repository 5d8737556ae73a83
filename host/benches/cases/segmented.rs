//! The segmented group: `segmented_reduce` (sum) and `segmented_argmin`
//! over CSR offsets (u64), with segments of 2^4, 2^9 and 2^20 elements (the
//! issue's; also 4, 8 and 32), of random lengths 0..=32 (`rand16`) and of
//! mixed lengths (1..=2^16, see [`super::data`]); the stream-ordered
//! `reduce_with_temp` with the offsets' check off (`check(false)`: no host
//! wait, as CUB, which checks nothing) and temporary storage made once per
//! size. `segmented_ranges` is the sum over the same segments given as
//! begin/end pairs (two views of the offsets, as CUB's begin and end
//! iterators): the one-warp-per-segment kernel beside the flat one, on the
//! same inputs (CUB's twin is the same `DeviceSegmentedReduce::Sum`).
//! `segmented_fixed` is the sum over the same fixed lengths given as a
//! length (`reduce_fixed_with_temp`: no offsets read; at 2^4 and 2^9 the
//! warp-per-segment kernel), `segmented_fixed_flat` the same through the
//! flat kernel; CUB's twin is its sum over the offsets. At 2^4 and 32,
//! `segmented_fixed_short` is the fixed length through the short tile
//! kernel (the default takes the ranges kernel there for 4-byte types);
//! at 2^4 `segmented_argmin_ranges` is argmin over the offsets as
//! begin/end pairs (CUB's twins: its sum and argmin over the offsets).
//! Segments of 4, 8 and 32 and random lengths of mean 16 show where the
//! plan's routes change (`policy::WINDOW_LENGTHS`,
//! `policy::WINDOW_MEANS_INDEXED`).
//!
//! Bytes, `s` = size of `T`, `S` = segments: read `n s + 8 (S + 1)`
//! (values and offsets; `n s` for fixed lengths); written `S s` (sum) or `8 S` (argmin: a u64
//! index per segment; CUB writes an (int, `T`) pair, `S (4 + s)` bytes).

use super::data::{DataCase, DataKey, DataSet, Moved, Part, Prepared, download, poisoned, same_bits};
use crate::{Elem, Expect, F64Sum, Group, Res, float_bound};
use gpuprim::segmented::{ArgMin, SegmentedTemp, Sum};
use gpuprim::{Context, DeviceBuffer};
use gpuprim_kernels::segmented::policy;
use std::rc::Rc;

const GROUP: Group = Group("segmented");

/// How a data set's segments fall.
#[derive(Clone, Copy)]
enum Dist {
    /// Every segment `L` long (the last cut at n).
    Fixed(u64),
    /// Random lengths 0..=2L (mean `L`).
    Random(u64),
    /// Mixed lengths, 1..=2^16.
    Mixed,
}

/// The data sets: fixed lengths, random lengths of mean 16, mixed.
const DISTS: [Dist; 8] = [
    Dist::Fixed(4),
    Dist::Fixed(8),
    Dist::Fixed(1 << 4),
    Dist::Random(1 << 4),
    Dist::Fixed(32),
    Dist::Fixed(1 << 9),
    Dist::Fixed(1 << 20),
    Dist::Mixed,
];

/// Every segmented case, for i32 and f32.
pub(crate) fn data_cases() -> Vec<DataCase> {
    [cases_for::<i32>(), cases_for::<f32>()].into_iter().flatten().collect()
}

fn cases_for<T: Elem>() -> Vec<DataCase> {
    let mut v = Vec::new();
    for dist in DISTS {
        let (name, key, len) = match dist {
            Dist::Fixed(l) => (format!("len{l}"), DataKey::Segments(Some(l)), Some(l)),
            Dist::Random(l) => (format!("rand{l}"), DataKey::RandomSegments(l), None),
            Dist::Mixed => ("mixed".to_string(), DataKey::Segments(None), None),
        };
        let mut runs =
            vec![("segmented_reduce", How::Sum), ("segmented_argmin", How::ArgMin), ("segmented_ranges", How::Ranges)];
        // Argmin through the flat kernel and its routes (`chunked(false)`),
        // beside the default (which takes means of 4 to 32 to the ranges
        // kernel's windows).
        runs.push(("segmented_argmin_flat", How::ArgMinFlat));
        // Fixed lengths (no offsets): the default plan, and at 2^9 also
        // the flat kernel that the default no longer takes there.
        if let Some(l) = len {
            runs.push(("segmented_fixed", How::Fixed(l, None)));
            if l == 1 << 9 {
                runs.push(("segmented_fixed_flat", How::Fixed(l, Some(false))));
            }
            // Segments of 16 and 32: the fixed length through the short
            // kernel (the default takes the ranges kernel there, a warp's
            // 32 in one window of its shared memory); at 16 also argmin
            // over the offsets as begin/end pairs through the ranges
            // kernel.
            if l == 1 << 4 || l == 32 {
                runs.push(("segmented_fixed_short", How::Fixed(l, Some(false))));
            }
            if l == 1 << 4 {
                runs.push(("segmented_argmin_ranges", How::ArgMinRanges));
            }
        }
        for (case, how) in runs {
            v.push(DataCase::new::<T, _>(
                GROUP,
                format!("{case}/{name}"),
                key,
                &[Part::Vals, Part::Offsets],
                move |ctx, d| Run::<T>::new(ctx, d, how),
            ));
        }
    }
    v
}

/// What a case runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    /// `reduce_with_temp` with `Sum` over the offsets (the default plan).
    Sum,
    /// `reduce_with_temp` with `ArgMin` over the offsets.
    ArgMin,
    /// The same, kept off the chunked path (`chunked(false)`: the flat
    /// kernel and its routes).
    ArgMinFlat,
    /// `reduce_ranges_with_temp` with `Sum`, begins and ends the offsets'
    /// two views (one warp per segment).
    Ranges,
    /// `reduce_ranges_with_temp` with `ArgMin`, begins and ends the
    /// offsets' two views.
    ArgMinRanges,
    /// `reduce_fixed_with_temp` with `Sum` at the data's fixed length
    /// (the offsets unread), the route as given (`None`: the default).
    Fixed(u64, Option<bool>),
}

impl How {
    /// Whether the case writes argmin indices (`u64`) rather than sums.
    fn argmin(self) -> bool {
        matches!(self, How::ArgMin | How::ArgMinFlat | How::ArgMinRanges)
    }
}

struct Run<T: Elem> {
    how: How,
    d: Rc<DataSet<T>>,
    temp: SegmentedTemp,
    sums: DeviceBuffer<T>,
    indices: DeviceBuffer<u64>,
    /// The sweep's chunk and short lengths ([`sweep_lens`]), or `None`.
    lens: Option<(u64, u64)>,
}

/// For tuning sweeps: `GPUPRIM_BENCH_CHUNK_LENS=CHUNK,SHORT` (elements;
/// a part left empty keeps its default) gives the chunked path's chunk
/// length and shortest chunked segment for every case of the group
/// (through the builder's hidden `chunk_lens`), so that one build
/// measures several settings. Read when a case is prepared, not in its
/// timed runs; announced once on stdout. A part that is not a number is
/// an error, so that a typo cannot pass for a sweep of the defaults.
fn sweep_lens<T>(n: usize) -> Res<Option<(u64, u64)>> {
    static ANNOUNCE: std::sync::Once = std::sync::Once::new();
    let Ok(v) = std::env::var("GPUPRIM_BENCH_CHUNK_LENS") else { return Ok(None) };
    let (c, s) = v.split_once(',').unwrap_or((v.as_str(), ""));
    let part = |text: &str, default: u64| -> Res<u64> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(default);
        }
        text.parse()
            .map_err(|e| format!("GPUPRIM_BENCH_CHUNK_LENS={v}: `{text}` is not a length in elements ({e})").into())
    };
    let chunk = part(c, policy::chunk_len::<T>(n as u64))?;
    let short = part(s, policy::short_len::<T>())?;
    ANNOUNCE.call_once(|| {
        println!("  segmented: GPUPRIM_BENCH_CHUNK_LENS={v}: chunk and short lengths set for a sweep, not the defaults")
    });
    Ok(Some((chunk, short)))
}

/// The group's builder, with the sweep's lengths where set.
fn builder(ctx: &Context, lens: Option<(u64, u64)>) -> gpuprim::Segmented<'_> {
    let seg = ctx.segmented().check(false);
    match lens {
        Some((chunk, short)) => seg.chunk_lens(chunk, short),
        None => seg,
    }
}

impl<T: Elem> Run<T> {
    fn new(ctx: &Context, d: Rc<DataSet<T>>, how: How) -> Res<Self> {
        let argmin = how.argmin();
        let segs = d.offsets.len() - 1;
        let lens = sweep_lens::<T>(d.n)?;
        let seg = builder(ctx, lens);
        let temp = if argmin { seg.temp::<T, ArgMin>(d.n)? } else { seg.temp::<T, Sum>(d.n)? };
        Ok(Run {
            how,
            temp,
            sums: poisoned(ctx, if argmin { 0 } else { segs })?,
            indices: poisoned(ctx, if argmin { segs } else { 0 })?,
            lens,
            d,
        })
    }
}

impl<T: Elem> Prepared for Run<T> {
    fn run(&mut self, ctx: &Context, c: usize) -> gpuprim::Result<()> {
        let (d, seg) = (&self.d, builder(ctx, self.lens));
        match self.how {
            How::ArgMin => {
                seg.reduce_with_temp(&d.d_vals[c], &d.d_offsets[c], &mut self.indices, ArgMin, &mut self.temp)
            }
            How::ArgMinFlat => seg.chunked(false).reduce_with_temp(
                &d.d_vals[c],
                &d.d_offsets[c],
                &mut self.indices,
                ArgMin,
                &mut self.temp,
            ),
            How::Sum => seg.reduce_with_temp(&d.d_vals[c], &d.d_offsets[c], &mut self.sums, Sum, &mut self.temp),
            How::Ranges => {
                let segs = d.offsets.len() - 1;
                let (begins, ends) = (d.d_offsets[c].slice(..segs)?, d.d_offsets[c].slice(1..)?);
                seg.reduce_ranges_with_temp(&d.d_vals[c], &begins, &ends, &mut self.sums, Sum, &mut self.temp)
            }
            How::ArgMinRanges => {
                let segs = d.offsets.len() - 1;
                let (begins, ends) = (d.d_offsets[c].slice(..segs)?, d.d_offsets[c].slice(1..)?);
                seg.reduce_ranges_with_temp(&d.d_vals[c], &begins, &ends, &mut self.indices, ArgMin, &mut self.temp)
            }
            How::Fixed(l, route) => {
                let seg = match route {
                    Some(r) => seg.route_to_ranges(r),
                    None => seg,
                };
                seg.reduce_fixed_with_temp(&d.d_vals[c], l as usize, &mut self.sums, Sum, &mut self.temp)
            }
        }
    }

    fn check(&mut self, _ctx: &Context) -> Result<(), String> {
        let (d, segs) = (&self.d, self.d.offsets.len() - 1);
        let range = |j: usize| d.offsets[j] as usize..d.offsets[j + 1] as usize;
        if self.how.argmin() {
            // The first smallest element's index in the whole input
            // (`NO_INDEX` for an empty segment).
            let want: Vec<u64> = (0..segs)
                .map(|j| {
                    let r = range(j);
                    if r.is_empty() {
                        return gpuprim::segmented::NO_INDEX;
                    }
                    let first = r.start;
                    r.fold(first, |m, i| if d.vals[i].to_f64() < d.vals[m].to_f64() { i } else { m }) as u64
                })
                .collect();
            return same_bits("argmin", &download(&self.indices, segs)?, &want, |i| i);
        }
        let got = download(&self.sums, segs)?;
        for (j, &g) in got.iter().enumerate() {
            let r = range(j);
            let want = if T::EXACT {
                Expect::Exact(d.vals[r].iter().fold(T::default(), |a, &b| a.ref_add(b)))
            } else {
                let mut f = F64Sum::new();
                d.vals[r.clone()].iter().for_each(|&x| f.add(x.to_f64()));
                Expect::Within { value: f.value(), bound: float_bound(r.len(), T::EPS, f.abs) }
            };
            want.check(g).map_err(|e| format!("segment {j}: {e}"))?;
        }
        Ok(())
    }

    fn moved(&self) -> Moved {
        let (n, s, segs) = (self.d.n as u64, T::TY.size() as u64, self.d.offsets.len() as u64 - 1);
        let offsets = if matches!(self.how, How::Fixed(..)) { 0 } else { 8 * (segs + 1) };
        Moved { read: n * s + offsets, written: segs * if self.how.argmin() { 8 } else { s } }
    }
}
