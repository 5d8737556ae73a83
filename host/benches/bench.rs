//! gpuprim's benchmarks: every registered case at every size and element
//! type, against the device-to-device copy of the same bytes.
//!
//! ```text
//! cargo bench -p gpuprim --bench bench -- [reduce|scan|select|by_key|segmented|all] [--quick] [--out DIR]
//!     [--sizes 10..30] [--types i32,f32,f64] [--runs N] [--warmup N] [--cub PATH]
//! ```
//!
//! Method (see BENCHMARKS.md):
//! * Inputs are random non-zero numbers from a seeded splitmix64, made on the
//!   host and uploaded. Several copies of the input rotate so that together
//!   they exceed the L2 cache (at least [`ROTATE_BYTES`]); at small sizes
//!   each run reads a copy that no earlier run of the measurement read.
//! * Each measurement warms up, then times every run on its own with CUDA
//!   events (`Context::time`) and keeps the median, minimum and 90th
//!   percentile (all samples go to the JSON file).
//! * GB/s = bytes the case must move / median time (1 GB = 10^9 bytes):
//!   `n * size_of::<T>()` for a reduction (one read), `2 * n * size_of::<T>()`
//!   for a scan (one read, one write). The copy of the same `n` elements
//!   counts read + write, `2 * n * size_of::<T>()`.
//! * Every case's result is checked against a CPU reference after timing.
//! * With `--cub PATH` (or `GPUPRIM_CUB_BENCH`), on CUDA: after each group,
//!   the CUB program (`host/benches/cub/cub_bench.cu`, built by the GPU
//!   bundle's run.sh) times CUB's twins of the cases in [`CUB_TWINS`] the
//!   same way (held stream, same inputs, same run plan) on the group's types
//!   and sizes; each of those measurements gets `x_cub` = CUB's median /
//!   ours (above 1: gpuprim is faster).
//! * The select, by_key and segmented groups make their own inputs (values
//!   0..=2000 at 0%, 50%, 100% selected; u64 keys in runs of 1, 8, 1000;
//!   segments of 4 to 2^20 and mixed lengths: `cases/data.rs`), count
//!   GB/s as (bytes read + bytes actually written) / median time, and are
//!   compared with their **copy-equivalent**: a device copy moving as many
//!   bytes, timed in the same run (`pct_of_copy` = its time / ours). Each
//!   case file says what its primitive reads and writes. Every one of their
//!   cases has a CUB twin of the same name.
//! * The readback line (reduce group): `Context::sum` of 2^20 elements, the
//!   value back on the host, timed on the host around the whole call, beside
//!   CUB's `DeviceReduce::Sum` + copy to pinned memory + stream sync.
//!
//! Cases are data, one file per primitive under `cases/` (`cases/reduce.rs`,
//! `cases/scan.rs`, ...); a primitive joins with one line in
//! [`cases::GROUPS`].

use cases::data::{DataCase, DataKey, DataSet, Moved};
use gpuprim::{BackendKind, Context, DeviceBuffer, Scalar};
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::collections::HashMap;
use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod cases;

type BoxError = Box<dyn Error>;
type Res<T> = Result<T, BoxError>;

/// Rotating inputs together hold at least this many bytes: more than four
/// times the L2 of an H100 (50 MB) or H200 (60 MB).
const ROTATE_BYTES: usize = 256 << 20;
/// A measurement whose warm-up says it would take longer than this is cut
/// to fewer runs (never fewer than [`MIN_RUNS`] nor more than asked).
const RUN_BUDGET: Duration = Duration::from_secs(3);
const MIN_RUNS: usize = 20;
/// Size of the latency measurement (`sum_into` of 2^20 f32).
const LATENCY_LOG2: u32 = 20;
/// Size of the readback line (`Context::sum`, the value on the host).
const READBACK_LOG2: u32 = 20;
/// Cases with a twin in the CUB program (`--cub`): our case name (also the
/// program's) and the CUB call it times.
const CUB_TWINS: [(&str, &str); 3] = [
    ("sum_into", "cub::DeviceReduce::Sum into a device scalar"),
    ("inclusive_scan", "cub::DeviceScan::InclusiveSum"),
    ("exclusive_scan", "cub::DeviceScan::ExclusiveSum (init 0)"),
];
const SEED: u64 = 0x6770_7570_7269_6d00; // "gpuprim\0"

// ---------------------------------------------------------------------------
// Element types
// ---------------------------------------------------------------------------

/// The element types the bench knows (add a variant and an [`Elem`] impl
/// for more).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
enum Ty {
    I32,
    F32,
    F64,
}

impl Ty {
    const ALL: [Ty; 3] = [Ty::I32, Ty::F32, Ty::F64];
    fn name(self) -> &'static str {
        match self {
            Ty::I32 => "i32",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
        }
    }
    fn size(self) -> usize {
        match self {
            Ty::I32 | Ty::F32 => 4,
            Ty::F64 => 8,
        }
    }
    fn parse(s: &str) -> Option<Ty> {
        Ty::ALL.into_iter().find(|t| t.name() == s)
    }
}

/// A device buffer of any bench element type.
enum AnyBuf {
    I32(DeviceBuffer<i32>),
    F32(DeviceBuffer<f32>),
    F64(DeviceBuffer<f64>),
}

/// Host data of any bench element type.
enum HostData {
    I32(Vec<i32>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// What a bench element type needs: random values, its slot in [`AnyBuf`]
/// and [`HostData`], and how results are compared.
// `Acc = Self`: the types here reduce in themselves, so sums come back as `Self`.
trait Elem: Scalar<Acc = Self> + PartialEq {
    const TY: Ty;
    /// Integers are compared exactly (wrapping arithmetic); floats within
    /// a rounding bound of an f64 reference.
    const EXACT: bool;
    /// Unit roundoff used in float bounds (0 for integers).
    const EPS: f64;
    /// A random non-zero value.
    fn random(rng: &mut SplitMix64) -> Self;
    fn to_f64(self) -> f64;
    /// A small whole number (at most 2^24: exact in every type).
    fn from_small(v: u32) -> Self;
    /// Wrapping addition for integers, plain addition for floats.
    fn ref_add(self, other: Self) -> Self;
    /// The value's bits, zero-extended (for comparisons and input digests).
    fn bits(self) -> u64;
    fn device(b: &AnyBuf) -> Option<&DeviceBuffer<Self>>;
    fn device_mut(b: &mut AnyBuf) -> Option<&mut DeviceBuffer<Self>>;
    fn wrap(b: DeviceBuffer<Self>) -> AnyBuf;
    fn host(h: &HostData) -> Option<&[Self]>;
    fn wrap_host(v: Vec<Self>) -> HostData;
}

macro_rules! elem {
    ($t:ty, $variant:ident, exact: $exact:expr, eps: $eps:expr, add: $add:expr, bits: $bits:expr, random: $random:expr) => {
        impl Elem for $t {
            const TY: Ty = Ty::$variant;
            const EXACT: bool = $exact;
            const EPS: f64 = $eps;
            fn random(rng: &mut SplitMix64) -> Self {
                let f: fn(&mut SplitMix64) -> $t = $random;
                f(rng)
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_small(v: u32) -> Self {
                v as $t
            }
            fn ref_add(self, other: Self) -> Self {
                let f: fn($t, $t) -> $t = $add;
                f(self, other)
            }
            fn bits(self) -> u64 {
                let f: fn($t) -> u64 = $bits;
                f(self)
            }
            fn device(b: &AnyBuf) -> Option<&DeviceBuffer<Self>> {
                match b {
                    AnyBuf::$variant(b) => Some(b),
                    _ => None,
                }
            }
            fn device_mut(b: &mut AnyBuf) -> Option<&mut DeviceBuffer<Self>> {
                match b {
                    AnyBuf::$variant(b) => Some(b),
                    _ => None,
                }
            }
            fn wrap(b: DeviceBuffer<Self>) -> AnyBuf {
                AnyBuf::$variant(b)
            }
            fn host(h: &HostData) -> Option<&[Self]> {
                match h {
                    HostData::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap_host(v: Vec<Self>) -> HostData {
                HostData::$variant(v)
            }
        }
    };
}

elem!(i32, I32, exact: true, eps: 0.0, add: |a, b| a.wrapping_add(b), bits: |x| x as u32 as u64,
random: |r| loop {
    let v = r.next() as i32;
    if v != 0 {
        break v;
    }
});
// Floats: magnitude in [0.5, 1.5), random sign.
elem!(f32, F32, exact: false, eps: f32::EPSILON as f64, add: |a, b| a + b, bits: |x| x.to_bits() as u64,
    random: |r| r.signed_unit() as f32);
elem!(f64, F64, exact: false, eps: f64::EPSILON, add: |a, b| a + b, bits: |x| x.to_bits(),
    random: |r| r.signed_unit());

/// splitmix64 (Steele, Lea, Flood 2014): small, fast, good enough for data.
struct SplitMix64(u64);

impl SplitMix64 {
    fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Magnitude uniform in [0.5, 1.5), random sign: never zero.
    fn signed_unit(&mut self) -> f64 {
        let sign = if self.next() & 1 == 0 { 1.0 } else { -1.0 };
        sign * (0.5 + self.unit())
    }
}

/// `n` random values; chunks of 2^16 have their own stream (seeded from
/// `seed` and the chunk's index) and are filled in parallel, so the data
/// do not depend on the number of cores.
fn random_data<T: Elem>(n: usize, seed: u64) -> Vec<T> {
    const CHUNK: usize = 1 << 16;
    let mut v = vec![T::default(); n];
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 32);
    let per_thread = n.div_ceil(CHUNK).div_ceil(threads).max(1) * CHUNK;
    std::thread::scope(|s| {
        for (t, part) in v.chunks_mut(per_thread).enumerate() {
            s.spawn(move || {
                for (c, chunk) in part.chunks_mut(CHUNK).enumerate() {
                    let index = (t * per_thread / CHUNK + c) as u64;
                    let mut rng =
                        SplitMix64::new(SplitMix64::new(seed ^ index.wrapping_mul(0x2545_F491_4F6C_DD1D)).next());
                    chunk.iter_mut().for_each(|x| *x = T::random(&mut rng));
                }
            });
        }
    });
    v
}

/// Fingerprint of an input: the sum of `bits(x_i) * (2i + 1)` mod 2^64.
/// The CUB program reports the same of its inputs, so that a comparison
/// shows that both timed the same numbers.
fn digest<T: Elem>(xs: &[T]) -> u64 {
    xs.iter().enumerate().fold(0u64, |h, (i, x)| h.wrapping_add(x.bits().wrapping_mul(2 * i as u64 + 1)))
}

// ---------------------------------------------------------------------------
// References
// ---------------------------------------------------------------------------

/// What a result must be: exactly a value (integers) or within `bound` of
/// an f64 reference (floats).
enum Expect<T> {
    Exact(T),
    Within { value: f64, bound: f64 },
}

impl<T: Elem> Expect<T> {
    fn check(&self, got: T) -> Result<(), String> {
        match *self {
            Expect::Exact(want) if got == want => Ok(()),
            Expect::Exact(want) => Err(format!("got {got:?}, want {want:?}")),
            Expect::Within { value, bound } => {
                let g = got.to_f64();
                let off = (g - value).abs();
                if off <= bound {
                    Ok(())
                } else {
                    Err(format!("got {g:e}, want {value:e} ± {bound:.2e} (off by {off:.2e})"))
                }
            }
        }
    }
}

/// Rounding bound of a float sum of `n` terms whose magnitudes add up to
/// `abs_sum`, for summation trees in which no term passes through more
/// than `2 sqrt(n) + log2(n) + 16` additions (every launch shape the
/// library uses; the worst case of any order, `n eps abs_sum`, is too loose
/// to catch anything at large n).
fn float_bound(n: usize, eps: f64, abs_sum: f64) -> f64 {
    let n = n.max(1) as f64;
    eps * abs_sum * (2.0 * n.sqrt() + n.log2() + 16.0) + f64::MIN_POSITIVE
}

/// Compensated (Neumaier) f64 sum and the sum of magnitudes.
struct F64Sum {
    sum: f64,
    comp: f64,
    abs: f64,
}

impl F64Sum {
    fn new() -> Self {
        F64Sum { sum: 0.0, comp: 0.0, abs: 0.0 }
    }
    fn add(&mut self, x: f64) {
        let t = self.sum + x;
        self.comp += if self.sum.abs() >= x.abs() { (self.sum - t) + x } else { (x - t) + self.sum };
        self.sum = t;
        self.abs += x.abs();
    }
    fn value(&self) -> f64 {
        self.sum + self.comp
    }
}

/// `f` over chunks of `xs` on every core (the references of the largest
/// sizes would otherwise take longer than the GPU work), results in order.
fn par_chunks<T: Elem, R: Send>(xs: &[T], f: impl Fn(&[T]) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(32);
    if threads == 1 || xs.len() < 1 << 20 {
        return vec![f(xs)];
    }
    let chunk = xs.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = xs.chunks(chunk).map(|c| s.spawn(|| f(c))).collect();
        handles.into_iter().map(|h| h.join().expect("reference thread panicked")).collect()
    })
}

fn sum_expect<T: Elem>(xs: &[T]) -> Expect<T> {
    if T::EXACT {
        let parts = par_chunks(xs, |c| c.iter().fold(T::default(), |a, &b| a.ref_add(b)));
        Expect::Exact(parts.into_iter().fold(T::default(), |a, b| a.ref_add(b)))
    } else {
        let parts = par_chunks(xs, |c| {
            let mut s = F64Sum::new();
            c.iter().for_each(|&x| s.add(x.to_f64()));
            s
        });
        let mut total = F64Sum::new();
        for p in &parts {
            total.add(p.sum);
            total.add(p.comp);
        }
        let abs = parts.iter().map(|p| p.abs).sum::<f64>();
        Expect::Within { value: total.value(), bound: float_bound(xs.len(), T::EPS, abs) }
    }
}

// ---------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------

/// A group of cases (`reduce`, `scan`, ...): what the command line names,
/// one JSON file and one plot per type. The groups are listed in
/// [`cases::GROUPS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
struct Group(&'static str);

impl Group {
    /// The reductions, which also have the latency and readback lines.
    const REDUCE: Group = Group("reduce");
    const SCAN: Group = Group("scan");
    fn name(self) -> &'static str {
        self.0
    }
}

type RunFn = Box<dyn Fn(&Context, &AnyBuf, &mut AnyBuf) -> Res<()>>;
type CheckFn = Box<dyn Fn(&HostData, &AnyBuf) -> Result<(), String>>;

/// One benchmarked operation on one element type.
struct Case {
    group: Group,
    /// Shown in tables, JSON and legends (`"sum"`, later `"sum/warp-shuffle"`).
    name: String,
    ty: Ty,
    /// Bytes per input element the operation must move at the least
    /// (GB/s is computed from this).
    bytes_per_elem_moved: usize,
    /// Output length for an input of `n` elements.
    out_len: fn(usize) -> usize,
    /// Queue the operation (stream-ordered; timed with CUDA events).
    run: RunFn,
    /// Compare the output of the last run with a CPU reference.
    check: CheckFn,
}

/// Wrong buffer type for a case: a bug in the bench itself.
fn mismatch(case: &str) -> BoxError {
    format!("bench bug: case `{case}` was given a buffer of another element type").into()
}

// ---------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, Serialize)]
struct Timing {
    /// Timed with the stream held (`Context::time_held`: GPU time alone);
    /// `false` for cases that wait for the GPU themselves, timed with plain
    /// events (host launch cost included).
    held: bool,
    runs: usize,
    warmup: usize,
    /// Distinct input copies the runs rotate through.
    rotating_inputs: usize,
    median_us: f64,
    min_us: f64,
    p90_us: f64,
    mean_us: f64,
    /// Every timed run, in run order.
    samples_us: Vec<f64>,
}

struct Plan {
    warmup: usize,
    runs: usize,
}

/// Warm up, then time each run on its own, in GPU time: each run with
/// [`Context::time_held`], the stream held while the run queues its
/// launches, so the host's submission cost stays out of the interval.
/// `run(i)` gets the run's index (warm-up runs first), to pick its input copy.
fn time_runs(ctx: &Context, plan: &Plan, copies: usize, run: impl FnMut(usize) -> Res<()>) -> Res<Timing> {
    time_runs_with(ctx, plan, copies, true, run)
}

/// [`time_runs`], timing each run with [`Context::time_held`] when `held`,
/// else with [`Context::time`] (which includes the host's submission of each
/// launch). Warm-up runs use `time` either way: they may allocate or free
/// temporary storage, which waits for the GPU and so cannot run held; their
/// times only size the number of runs.
fn time_runs_with(
    ctx: &Context,
    plan: &Plan,
    copies: usize,
    held: bool,
    mut run: impl FnMut(usize) -> Res<()>,
) -> Res<Timing> {
    let mut index = 0;
    // Cleared when the case itself waits for the GPU (a download, as the
    // host finishing strategy does): it cannot run held, so it is timed
    // with plain events, host launch cost included.
    let mut held = held;
    let mut once = |index: usize, hold: bool, held: &mut bool| -> Res<f64> {
        let mut timed = |hold: bool| {
            let f = || Ok(run(index));
            if hold { ctx.time_held(f) } else { ctx.time(f) }
        };
        let (r, t) = match timed(hold && *held) {
            Err(gpuprim::Error::HoldTimedOut { .. }) => {
                *held = false;
                timed(false)?
            }
            other => other?,
        };
        r?;
        Ok(t.as_secs_f64() * 1e6)
    };
    let mut warm = Vec::new();
    for _ in 0..plan.warmup {
        warm.push(once(index, false, &mut held)?);
        index += 1;
    }
    let runs = planned_runs(plan, &warm);
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        samples.push(once(index, true, &mut held)?);
        index += 1;
    }
    Timing::from_samples(samples, held, plan.warmup, copies)
}

/// The plan of [`time_runs_with`] for a call that waits for its result
/// itself: each run timed on the host (wall clock around the whole call),
/// warm-up runs included. `held` is `false` in the result.
fn time_host_runs(plan: &Plan, copies: usize, mut run: impl FnMut(usize) -> Res<()>) -> Res<Timing> {
    let mut once = |index: usize| -> Res<f64> {
        let t = Instant::now();
        run(index)?;
        Ok(t.elapsed().as_secs_f64() * 1e6)
    };
    let warm = (0..plan.warmup).map(&mut once).collect::<Res<Vec<f64>>>()?;
    let runs = planned_runs(plan, &warm);
    let samples = (plan.warmup..plan.warmup + runs).map(&mut once).collect::<Res<Vec<f64>>>()?;
    Timing::from_samples(samples, false, plan.warmup, copies)
}

/// Timed runs for a measurement whose warm-up runs took `warm` µs: as many
/// as asked, cut to what fits in [`RUN_BUDGET`] but not below [`MIN_RUNS`].
fn planned_runs(plan: &Plan, warm: &[f64]) -> usize {
    match median(warm) {
        Some(est) => {
            let fit = (RUN_BUDGET.as_secs_f64() * 1e6 / est.max(1e-3)) as usize;
            plan.runs.min(fit.max(MIN_RUNS))
        }
        None => plan.runs,
    }
}

impl Timing {
    /// Median, minimum, 90th percentile and mean of the timed runs.
    fn from_samples(samples: Vec<f64>, held: bool, warmup: usize, copies: usize) -> Res<Timing> {
        let mut sorted = samples.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        if n == 0 {
            return Err("no timed runs (--runs 0?)".into());
        }
        Ok(Timing {
            held,
            runs: n,
            warmup,
            rotating_inputs: copies,
            median_us: median(&sorted).unwrap_or(f64::NAN),
            min_us: sorted[0],
            p90_us: sorted[((n as f64 * 0.9).ceil() as usize).clamp(1, n) - 1],
            mean_us: sorted.iter().sum::<f64>() / n as f64,
            samples_us: samples,
        })
    }

    /// The timing of a measurement that could not run.
    fn failed(warmup: usize, copies: usize) -> Timing {
        Timing {
            held: true,
            runs: 0,
            warmup,
            rotating_inputs: copies,
            median_us: f64::NAN,
            min_us: f64::NAN,
            p90_us: f64::NAN,
            mean_us: f64::NAN,
            samples_us: Vec::new(),
        }
    }
}

/// Three significant digits (more for small numbers), `-` for no number.
fn sig(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

fn median(xs: &[f64]) -> Option<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Copies of the input to rotate through: enough to exceed [`ROTATE_BYTES`]
/// together, but no more than the runs can use.
fn rotation(bytes: usize, uses: usize) -> usize {
    ROTATE_BYTES.div_ceil(bytes.max(1)).clamp(1, uses.max(1))
}

/// GB/s (10^9 bytes per second) of `bytes` moved in `us` microseconds.
fn gbps(bytes: u64, us: f64) -> f64 {
    bytes as f64 / (us * 1e-6) / 1e9
}

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, Serialize)]
struct CopyResult {
    #[serde(rename = "type")]
    ty: Ty,
    log2_n: u32,
    n: usize,
    /// Read + write: 2 * n * size_of(T).
    bytes_moved: u64,
    gbps: f64,
    /// Whether the copy's destination equalled its source.
    check: String,
    #[serde(flatten)]
    timing: Timing,
}

#[derive(Clone, Debug, Serialize)]
struct Measurement {
    case: String,
    #[serde(rename = "type")]
    ty: Ty,
    log2_n: u32,
    n: usize,
    bytes_moved: u64,
    gbps: f64,
    copy_gbps: f64,
    pct_of_copy: f64,
    /// Cases with their own inputs (select, by-key, segmented): the bytes
    /// read and written that `bytes_moved` adds up, and the median µs of
    /// the copy-equivalent (a device copy moving as many bytes), which
    /// `copy_gbps` and `pct_of_copy` are then about.
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes_read: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes_written: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    copy_equiv_us: Option<f64>,
    /// Cases with their own inputs: [`digest`](cases::data::DataSet::digest)
    /// of the arrays they read, as the CUB program prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    input_digest: Option<String>,
    /// "ok", or what the CPU reference disagreed with.
    check: String,
    #[serde(flatten)]
    timing: Timing,
    /// CUB's twin (`--cub`), for the cases in [`CUB_TWINS`] and every case
    /// with its own inputs.
    #[serde(flatten)]
    cub: Option<CubCompare>,
    /// The CUB program's name for this case, when it has a twin.
    #[serde(skip)]
    twin: Option<String>,
    /// The digest of the inputs, for cases with their own inputs (the
    /// others' are in [`Bench::digests`]).
    #[serde(skip)]
    digest: Option<u64>,
}

/// CUB's twin of a measurement: `cub_us`, `x_cub`, `cub_check`, `cub_held`
/// in the JSON.
#[derive(Clone, Debug, Serialize)]
struct CubCompare {
    /// CUB's median µs, timed the same way in the same run.
    cub_us: f64,
    /// CUB's median / ours: above 1.0, gpuprim is faster.
    x_cub: f64,
    /// CUB's result against its CPU reference ("ok" or why not), or that
    /// its inputs were not ours.
    cub_check: String,
    /// Whether CUB's runs were held (GPU time alone), as ours are.
    cub_held: bool,
}

/// The readback line: `Context::sum`, which returns the value to the host,
/// timed on the host around the whole call.
#[derive(Clone, Debug, Serialize)]
struct Readback {
    case: String,
    #[serde(rename = "type")]
    ty: Ty,
    n: usize,
    check: String,
    /// Host wall-clock time (`held` is false): launches, the value's way to
    /// the host and the wait for it.
    #[serde(flatten)]
    timing: Timing,
    /// CUB's `readback` case: `DeviceReduce::Sum`, a copy into pinned host
    /// memory and a stream synchronize, timed on the host.
    #[serde(flatten)]
    cub: Option<CubCompare>,
}

/// The CUB program's output (see cub_bench.cu); fields it may lack are
/// optional.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct CubDoc {
    cub_version: Option<u64>,
    cccl_version: Option<String>,
    cuda_runtime: Option<i64>,
    driver: Option<i64>,
    device: Option<String>,
    compute_capability: Option<String>,
    #[serde(default)]
    results: Vec<CubResult>,
}

/// One of the CUB program's measurements.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct CubResult {
    case: String,
    #[serde(rename = "type")]
    ty: String,
    log2_n: u32,
    n: u64,
    median_us: Option<f64>,
    min_us: Option<f64>,
    p90_us: Option<f64>,
    mean_us: Option<f64>,
    runs: usize,
    rotating_inputs: usize,
    held: bool,
    /// `int32` or `int64`: the type of CUB's `num_items` (its offsets).
    num_items: Option<String>,
    /// CUB's temporary storage, allocated once before timing.
    temp_bytes: Option<u64>,
    /// [`digest`] of its inputs.
    input_digest: Option<String>,
    check: String,
}

/// The CUB comparison of a group (`cub` in the group's JSON; null when the
/// program did not run).
#[derive(Clone, Debug, Serialize)]
struct CubReport {
    program: String,
    command_line: Vec<String>,
    /// The program's exit status (1 when one of its results was not ok).
    exit_status: Option<i32>,
    /// Why there is no comparison, or why it is incomplete.
    error: Option<String>,
    /// Versions, device and every result, as the program printed them.
    #[serde(flatten)]
    doc: CubDoc,
}

impl CubReport {
    /// `CUB 3.0.1 (CUB_VERSION 300001), CUDA runtime 13.0, driver 13.0, on <device>`.
    fn versions(&self) -> String {
        let cuda = |v: Option<i64>| v.map_or("?".into(), |v| format!("{}.{}", v / 1000, v % 1000 / 10));
        let d = &self.doc;
        format!(
            "CUB {} (CUB_VERSION {}), CUDA runtime {}, driver {}, on {}",
            d.cccl_version.as_deref().unwrap_or("?"),
            d.cub_version.map_or("?".into(), |v| v.to_string()),
            cuda(d.cuda_runtime),
            cuda(d.driver),
            d.device.as_deref().unwrap_or("?")
        )
    }
}

#[derive(Clone, Debug, Serialize)]
struct Latency {
    case: String,
    #[serde(rename = "type")]
    ty: Ty,
    n: usize,
    check: String,
    /// GPU time of the whole call ([`Context::time_held`]: events around
    /// its launches, the stream held while the host queues them).
    #[serde(flatten)]
    timing: Timing,
    /// The same call timed with [`Context::time`]: events around the call
    /// on an idle stream, so the host's submission of each launch counts
    /// (what a caller waiting for one call sees).
    with_host_launch: Timing,
}

#[derive(Serialize)]
struct CaseInfo {
    group: Group,
    name: String,
    #[serde(rename = "type")]
    ty: Ty,
    /// Cases on the shared random inputs; those with their own inputs say
    /// what they move in each measurement (`bytes_read`, `bytes_written`).
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes_per_elem_moved: Option<usize>,
}

#[derive(Serialize)]
struct GroupReport<'a> {
    group: Group,
    device: String,
    backend: String,
    multiprocessors: u32,
    emulator_timings: bool,
    date_utc: String,
    unix_time: u64,
    command_line: Vec<String>,
    sizes_log2: Vec<u32>,
    types: Vec<Ty>,
    runs: usize,
    warmup: usize,
    rotate_bytes: usize,
    gbps_definition: &'static str,
    cases: Vec<CaseInfo>,
    copy: Vec<CopyResult>,
    measurements: &'a [Measurement],
    latency: &'a [Latency],
    readback: &'a [Readback],
    cub: Option<&'a CubReport>,
}

const GBPS_DEFINITION: &str = "GB/s = bytes the case must move / median time, 1 GB = 1e9 bytes; reductions move \
     n*size_of(T) (one read), scans 2*n*size_of(T) (one read + one write); copy_gbps is the device-to-device \
     copy of the same n elements counting read + write (2*n*size_of(T)); pct_of_copy = 100 * gbps / copy_gbps";

const DATA_GBPS_DEFINITION: &str = "GB/s = (bytes_read + bytes_written) / median time, 1 GB = 1e9 bytes: every \
     input element read once, the output the case actually writes (from the CPU reference; device-side counts not \
     counted); copy_equiv_us is the median time of a device-to-device copy of (bytes_read + bytes_written) / 2 bytes \
     (which reads and writes that many) in the same run, copy_gbps its GB/s by the same bytes, pct_of_copy = 100 * \
     copy_equiv_us / median_us (the copy-equivalent %)";

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

const USAGE: &str = "\
usage: bench [GROUP[,GROUP..]|all] [--quick] [--out DIR] [--sizes SPEC] [--types LIST] [--cases LIST] [--runs N] [--warmup N]
             [--cub PATH]

  GROUP            which group of cases: reduce, scan, select, by_key,
                   segmented, or several comma-separated (default all)
  --quick          fewer sizes (GPU: 2^12, 2^16, 2^20, 2^24, 2^28)
  --out DIR        where bench-<group>.json and <group>-<type>.svg go
                   (default target/bench; under cargo a relative DIR is taken
                   from the workspace root, otherwise from the current directory)
  --sizes SPEC     log2 sizes: 10..30 (inclusive), 16,20,24, or a mix (12..16,20)
                   (GPU default 10..30; emulator default 10..14)
  --types LIST     element types, from i32,f32,f64 (default all three)
  --cases LIST     only the cases whose name contains one of these
                   comma-separated strings (e.g. lookback,copy); the latency
                   and readback lines run when one of them is in `sum_into`
                   (or in `readback`, for the readback line)
  --runs N         timed runs per measurement (GPU default 100, emulator 5)
  --warmup N       untimed runs first (GPU default 3, emulator 1)
  --cub PATH       after each group, run the CUB program at PATH (built from
                   host/benches/cub/cub_bench.cu) on CUB's twins of sum_into,
                   inclusive_scan, exclusive_scan, the readback line and
                   every case of select, by_key and segmented, and report
                   x CUB = CUB's median / ours (CUDA only)

Environment: GPUPRIM_BACKEND=emu|cuda picks the backend; GPUPRIM_REQUIRE_GPU=1
fails instead of falling back to the CPU emulator; GPUPRIM_CUB_BENCH=PATH is
--cub PATH when --cub is not given; GPUPRIM_BENCH_CHUNK_LENS=CHUNK,SHORT sets
the segmented chunked path's chunk and short lengths (tuning sweeps);
GPUPRIM_BENCH_MIXED_MIN=L raises every mixed segment length to at least L
(diagnosis: the data then differ from CUB's).";

struct Options {
    groups: Vec<Group>,
    quick: bool,
    out: Option<PathBuf>,
    sizes: Option<Vec<u32>>,
    types: Vec<Ty>,
    runs: Option<usize>,
    warmup: Option<usize>,
    /// Only cases whose name contains one of these (all when `None`).
    cases: Option<Vec<String>>,
    /// The CUB program (`--cub`).
    cub: Option<PathBuf>,
}

fn parse_sizes(spec: &str) -> Res<Vec<u32>> {
    let bad = || -> BoxError { format!("--sizes {spec}: expected e.g. 10..28, 16,20,24 or 12..16,20").into() };
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once("..") {
            Some((a, b)) => (a, b.trim_start_matches('=')),
            None => (part, part),
        };
        let a: u32 = a.trim().parse().map_err(|_| bad())?;
        let b: u32 = b.trim().parse().map_err(|_| bad())?;
        if a > b || b > 31 {
            return Err(format!("--sizes {spec}: log2 sizes must be ascending ranges within 0..31").into());
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

fn parse_args(args: &[String]) -> Res<Option<Options>> {
    let mut o = Options {
        groups: cases::GROUPS.iter().map(|g| g.group).collect(),
        quick: false,
        out: None,
        sizes: None,
        types: Ty::ALL.to_vec(),
        runs: None,
        warmup: None,
        cases: None,
        cub: None,
    };
    let mut it = args.iter();
    let value = |it: &mut std::slice::Iter<String>, flag: &str| -> Res<String> {
        it.next().cloned().ok_or_else(|| format!("{flag} needs a value").into())
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "all" => o.groups = cases::GROUPS.iter().map(|g| g.group).collect(),
            // One group, or several: `select,by_key,segmented`.
            list if list.split(',').all(|g| cases::find(g).is_some()) => {
                o.groups = list.split(',').filter_map(cases::find).map(|g| g.group).collect();
            }
            "--quick" => o.quick = true,
            // cargo bench passes --bench to harness=false targets.
            "--bench" => {}
            "--out" => o.out = Some(PathBuf::from(value(&mut it, a)?)),
            "--cub" => o.cub = Some(PathBuf::from(value(&mut it, a)?)),
            "--sizes" => o.sizes = Some(parse_sizes(&value(&mut it, a)?)?),
            "--types" => {
                let v = value(&mut it, a)?;
                o.types = v
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| Ty::parse(s).ok_or_else(|| format!("--types: unknown type `{s}` (known: i32, f32, f64)")))
                    .collect::<Result<_, _>>()?;
                if o.types.is_empty() {
                    return Err("--types: no types given".into());
                }
            }
            "--cases" => {
                let v = value(&mut it, a)?;
                let list: Vec<String> =
                    v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
                if list.is_empty() {
                    return Err("--cases: no names given".into());
                }
                o.cases = Some(list);
            }
            "--runs" | "--warmup" => {
                let v = value(&mut it, a)?;
                let n: usize = v.parse().map_err(|_| format!("{a} {v}: expected a number"))?;
                if a == "--runs" {
                    if n == 0 {
                        return Err("--runs must be at least 1".into());
                    }
                    o.runs = Some(n);
                } else {
                    o.warmup = Some(n);
                }
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}").into()),
        }
    }
    Ok(Some(o))
}

/// Where the files go; see `--out` in [`USAGE`].
fn out_dir(out: Option<&Path>) -> PathBuf {
    // cargo runs benches from the package directory (host/); when it is the
    // one running us, resolve relative paths from the workspace root.
    let base = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .and_then(|m| m.parent().map(Path::to_path_buf))
        .filter(|root| root.join("Cargo.toml").is_file());
    let rel = out.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("target/bench"));
    match base {
        Some(root) if rel.is_relative() => root.join(rel),
        _ => rel,
    }
}

/// CUDA where present (or asked for), else the emulator with why.
fn open_context() -> Res<(Context, Option<String>)> {
    let require = std::env::var("GPUPRIM_REQUIRE_GPU").as_deref() == Ok("1");
    match std::env::var("GPUPRIM_BACKEND").as_deref() {
        Ok("emu") | Ok("emulator") if require => Err("GPUPRIM_REQUIRE_GPU=1 contradicts GPUPRIM_BACKEND=emu".into()),
        Ok("emu") | Ok("emulator") => Ok((Context::emulator(), Some("GPUPRIM_BACKEND=emu".into()))),
        _ => match Context::cuda() {
            Ok(ctx) => Ok((ctx, None)),
            Err(e) if require => Err(format!("GPUPRIM_REQUIRE_GPU=1 but CUDA is unavailable: {e}").into()),
            Err(e) if std::env::var("GPUPRIM_BACKEND").as_deref() == Ok("cuda") => {
                Err(format!("GPUPRIM_BACKEND=cuda but CUDA is unavailable: {e}").into())
            }
            Err(e) => Ok((Context::emulator(), Some(e.to_string()))),
        },
    }
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

struct Bench<'a> {
    ctx: &'a Context,
    plan: Plan,
    /// Copy timings by (type, log2 size); i32 and f32 share bytes but are
    /// kept apart so every table row has its own copy measurement.
    copies: HashMap<(Ty, u32), CopyResult>,
    /// [`digest`] of each input by (type, log2 size), when CUB runs too.
    digests: Option<HashMap<(Ty, u32), u64>>,
    /// Copy-equivalent timings (median µs, check) by the number of 4-byte
    /// words copied.
    copy_equiv: HashMap<usize, (f64, String)>,
}

impl Bench<'_> {
    /// Every case of `cases` (all of element type `T`) at every size.
    fn run_type<T: Elem>(&mut self, cases: &[&Case], sizes: &[u32], results: &mut Vec<Measurement>) -> Res<()> {
        for &k in sizes {
            let n = 1usize << k;
            let bytes = n * T::TY.size();
            let data: Vec<T> = random_data(n, input_seed(T::TY, k));
            if let Some(d) = &mut self.digests {
                d.insert((T::TY, k), digest(&data));
            }
            let copies = rotation(bytes, self.plan.warmup + self.plan.runs);
            let inputs: Vec<AnyBuf> =
                (0..copies).map(|_| self.ctx.upload(&data).map(T::wrap)).collect::<gpuprim::Result<_>>()?;
            let host = T::wrap_host(data);

            let copy = match self.copies.get(&(T::TY, k)) {
                Some(c) => c.clone(),
                None => {
                    let c = self.measure_copy::<T>(k, &inputs, &host)?;
                    self.copies.insert((T::TY, k), c.clone());
                    c
                }
            };

            for case in cases {
                // A case that fails (an unknown kernel, a launch error) is
                // recorded and reported; the others still run.
                let (timing, check) = match self.measure_case::<T>(case, n, &inputs, &host) {
                    Ok(r) => r,
                    Err(e) => (Timing::failed(self.plan.warmup, copies), format!("ERROR: {e}")),
                };
                let moved = (n * case.bytes_per_elem_moved) as u64;
                let rate = gbps(moved, timing.median_us);
                let m = Measurement {
                    case: case.name.clone(),
                    ty: case.ty,
                    log2_n: k,
                    n,
                    bytes_moved: moved,
                    gbps: rate,
                    copy_gbps: copy.gbps,
                    pct_of_copy: 100.0 * rate / copy.gbps,
                    bytes_read: None,
                    bytes_written: None,
                    copy_equiv_us: None,
                    input_digest: None,
                    check,
                    timing,
                    cub: None,
                    twin: cub_twin(&case.name).map(String::from),
                    digest: None,
                };
                println!(
                    "  {:<6} {:<4} 2^{k:<3} {:>10} µs {:>9} GB/s {:>6}% of copy ({} runs, {} inputs) {}",
                    m.case,
                    m.ty.name(),
                    sig(m.timing.median_us),
                    sig(m.gbps),
                    sig(m.pct_of_copy),
                    m.timing.runs,
                    copies,
                    m.check
                );
                results.push(m);
            }
        }
        Ok(())
    }

    /// Time one case on the rotating inputs, then check its last output.
    fn measure_case<T: Elem>(
        &self,
        case: &Case,
        n: usize,
        inputs: &[AnyBuf],
        host: &HostData,
    ) -> Res<(Timing, String)> {
        let mut out = T::wrap(self.ctx.alloc::<T>((case.out_len)(n))?);
        if let Some(o) = T::device_mut(&mut out) {
            o.poison()?;
        }
        let copies = inputs.len();
        let timing = time_runs(self.ctx, &self.plan, copies, |i| (case.run)(self.ctx, &inputs[i % copies], &mut out))?;
        let check = match (case.check)(host, &out) {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("FAILED: {e}"),
        };
        Ok((timing, check))
    }

    /// Every case of `cases` (all of element type `T`, each with its own
    /// inputs) at every size: the inputs of each data set made once per
    /// size, then every case that reads them.
    fn run_data_type<T: Elem>(
        &mut self,
        cases: &[&DataCase],
        sizes: &[u32],
        results: &mut Vec<Measurement>,
    ) -> Res<()> {
        for &k in sizes {
            let n = 1usize << k;
            let mut keys: Vec<DataKey> = Vec::new();
            for c in cases {
                if !keys.contains(&c.data) {
                    keys.push(c.data);
                }
            }
            for key in keys {
                let of_key = cases.iter().filter(|c| c.data == key);
                let set = DataSet::<T>::make(self.ctx, key, k, self.plan.warmup + self.plan.runs).map(Rc::new);
                let copies = set.as_ref().map_or(0, |s| s.copies);
                for case in of_key {
                    // A case that fails is recorded and reported; the others still run.
                    let measured = match &set {
                        Ok(set) => {
                            let any: Rc<dyn Any> = set.clone();
                            self.measure_data(case, &any, copies)
                        }
                        Err(e) => Err(format!("making the inputs: {e}").into()),
                    };
                    let (timing, check, moved) = match measured {
                        Ok((t, c, m)) => (t, c, Some(m)),
                        Err(e) => (Timing::failed(self.plan.warmup, copies), format!("ERROR: {e}"), None),
                    };
                    let moved = moved.unwrap_or_default();
                    let bytes = moved.read + moved.written;
                    let (equiv_us, equiv_check) = match self.copy_equivalent(bytes) {
                        Ok(r) => r,
                        Err(e) => (f64::NAN, format!("ERROR: {e}")),
                    };
                    let check = if check == "ok" && equiv_check != "ok" {
                        format!("copy-equivalent {equiv_check}")
                    } else {
                        check
                    };
                    let rate = gbps(bytes, timing.median_us);
                    let digest = set.as_ref().ok().map(|set| set.digest(case.reads));
                    let m = Measurement {
                        case: case.name.clone(),
                        ty: case.ty,
                        log2_n: k,
                        n,
                        bytes_moved: bytes,
                        gbps: rate,
                        copy_gbps: gbps(bytes, equiv_us),
                        pct_of_copy: 100.0 * equiv_us / timing.median_us,
                        bytes_read: Some(moved.read),
                        bytes_written: Some(moved.written),
                        copy_equiv_us: Some(equiv_us),
                        input_digest: digest.map(|d| format!("{d:016x}")),
                        check,
                        timing,
                        cub: None,
                        twin: case.twin.then(|| case.name.clone()),
                        digest,
                    };
                    println!(
                        "  {:<26} {:<4} 2^{k:<3} {:>10} µs {:>9} GB/s {:>6}% of copy-equivalent ({} runs, {} inputs) {}",
                        m.case,
                        m.ty.name(),
                        sig(m.timing.median_us),
                        sig(m.gbps),
                        sig(m.pct_of_copy),
                        m.timing.runs,
                        copies,
                        m.check
                    );
                    results.push(m);
                }
            }
        }
        Ok(())
    }

    /// Prepare one case with its own inputs, time it on the rotating
    /// copies, then check its last output.
    fn measure_data(&self, case: &DataCase, data: &Rc<dyn Any>, copies: usize) -> Res<(Timing, String, Moved)> {
        let mut p = (case.prepare)(self.ctx, data)?;
        let timing = time_runs(self.ctx, &self.plan, copies, |i| Ok(p.run(self.ctx, i % copies.max(1))?))?;
        let check = match p.check(self.ctx) {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("FAILED: {e}"),
        };
        Ok((timing, check, p.moved()))
    }

    /// The copy-equivalent of a case moving `bytes` (read + written): the
    /// median µs of a device-to-device copy of `bytes / 2` (rounded up to
    /// 4-byte words), which reads and writes that many, on rotating
    /// sources; measured once per byte count.
    fn copy_equivalent(&mut self, bytes: u64) -> Res<(f64, String)> {
        let words = (bytes.div_ceil(8) as usize).max(1);
        if let Some(r) = self.copy_equiv.get(&words) {
            return Ok(r.clone());
        }
        let copies = rotation(words * 4, self.plan.warmup + self.plan.runs);
        let srcs: Vec<DeviceBuffer<u32>> = (0..copies)
            .map(|_| {
                let mut b = self.ctx.alloc::<u32>(words)?;
                b.zero()?;
                Ok(b)
            })
            .collect::<gpuprim::Result<_>>()?;
        let mut dst = self.ctx.alloc::<u32>(words)?;
        dst.poison()?;
        let timing = time_runs(self.ctx, &self.plan, copies, |i| Ok(self.ctx.copy(&srcs[i % copies], &mut dst)?))?;
        // The ends of the copy are spot-checked (a full download would cost
        // more than the copy's measurement at the largest sizes).
        let mut ends = [u32::MAX; 2];
        dst.copy_to_host_at(0, &mut ends[..1])?;
        dst.copy_to_host_at(words - 1, &mut ends[1..])?;
        let check = if ends == [0, 0] { "ok".to_string() } else { format!("FAILED: copy ends are {ends:?}, want 0") };
        println!(
            "  {:<26} {:<4} {:>16} µs {:>9} GB/s copy-equivalent of {} bytes (read + write) {}",
            "copy",
            "u32",
            sig(timing.median_us),
            sig(gbps(2 * 4 * words as u64, timing.median_us)),
            8 * words,
            check
        );
        let r = (timing.median_us, check);
        self.copy_equiv.insert(words, r.clone());
        Ok(r)
    }

    fn measure_copy<T: Elem>(&self, k: u32, inputs: &[AnyBuf], host: &HostData) -> Res<CopyResult> {
        let n = 1usize << k;
        let mut dst = self.ctx.alloc::<T>(n)?;
        dst.poison()?;
        let srcs: Vec<&DeviceBuffer<T>> =
            inputs.iter().map(|b| T::device(b).ok_or_else(|| mismatch("copy"))).collect::<Res<_>>()?;
        let timing =
            time_runs(self.ctx, &self.plan, srcs.len(), |i| Ok(self.ctx.copy(srcs[i % srcs.len()], &mut dst)?))
                .map_err(|e| format!("copy {} 2^{k}: {e}", T::TY.name()))?;
        let want = T::host(host).ok_or_else(|| mismatch("copy"))?;
        let got = dst.to_vec()?;
        let check = match got.iter().zip(want).position(|(g, w)| g.bits() != w.bits()) {
            None => "ok".to_string(),
            Some(i) => format!("FAILED: element {i} is {:?}, want {:?}", got[i], want[i]),
        };
        let moved = 2 * (n * T::TY.size()) as u64;
        let rate = gbps(moved, timing.median_us);
        println!(
            "  {:<6} {:<4} 2^{k:<3} {:>10} µs {:>9} GB/s (read + write)           {}",
            "copy",
            T::TY.name(),
            sig(timing.median_us),
            sig(rate),
            check
        );
        Ok(CopyResult { ty: T::TY, log2_n: k, n, bytes_moved: moved, gbps: rate, check, timing })
    }

    /// The whole `case` at 2^20 elements, all its launches: median µs.
    fn latency<T: Elem>(&self, case: &Case) -> Res<Latency> {
        let n = 1usize << LATENCY_LOG2;
        let data: Vec<T> = random_data(n, SEED ^ 0x1a7e);
        let copies = rotation(n * T::TY.size(), self.plan.warmup + self.plan.runs);
        let inputs: Vec<AnyBuf> =
            (0..copies).map(|_| self.ctx.upload(&data).map(T::wrap)).collect::<gpuprim::Result<_>>()?;
        let mut out = T::wrap(self.ctx.alloc::<T>((case.out_len)(n))?);
        let mut timed = |held: bool| {
            time_runs_with(self.ctx, &self.plan, copies, held, |i| (case.run)(self.ctx, &inputs[i % copies], &mut out))
        };
        let timing = timed(true)?;
        let with_host_launch = timed(false)?;
        let check = match (case.check)(&T::wrap_host(data), &out) {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("FAILED: {e}"),
        };
        Ok(Latency { case: case.name.clone(), ty: T::TY, n, check, timing, with_host_launch })
    }

    /// The readback line for `T`: the whole `Context::sum` of
    /// 2^[`READBACK_LOG2`] elements (the inputs of that size's
    /// measurements), the value back on the host, timed on the host.
    fn readback<T: Elem>(&mut self) -> Res<Readback> {
        let (k, n) = (READBACK_LOG2, 1usize << READBACK_LOG2);
        let data: Vec<T> = random_data(n, input_seed(T::TY, k));
        if let Some(d) = &mut self.digests {
            d.insert((T::TY, k), digest(&data));
        }
        let copies = rotation(n * T::TY.size(), self.plan.warmup + self.plan.runs);
        let inputs: Vec<DeviceBuffer<T>> =
            (0..copies).map(|_| self.ctx.upload(&data)).collect::<gpuprim::Result<_>>()?;
        let mut last = None;
        let timing = time_host_runs(&self.plan, copies, |i| {
            last = Some(self.ctx.sum(&inputs[i % copies])?);
            Ok(())
        })?;
        let check = match last.map(|v| sum_expect(&data).check(v)) {
            Some(Ok(())) => "ok".to_string(),
            Some(Err(e)) => format!("FAILED: {e}"),
            None => "FAILED: no result".to_string(),
        };
        Ok(Readback { case: "sum".into(), ty: T::TY, n, check, timing, cub: None })
    }
}

/// The seed of the inputs of type `ty` at 2^`k` elements (the CUB program
/// derives the same).
fn input_seed(ty: Ty, k: u32) -> u64 {
    SEED ^ (u64::from(k) << 8) ^ ty as u64
}

// ---------------------------------------------------------------------------
// CUB
// ---------------------------------------------------------------------------

/// The CUB program's name for our case `name`, when it has a twin.
fn cub_twin(name: &str) -> Option<&'static str> {
    CUB_TWINS.iter().map(|&(n, _)| n).find(|&n| n == name)
}

/// Run the CUB program at `program` with `args`; its stderr (progress)
/// passes through, its stdout is the JSON document. Never fails: what went
/// wrong is in the report's `error`.
fn run_cub(program: &Path, args: Vec<String>) -> CubReport {
    let mut report = CubReport {
        program: program.display().to_string(),
        command_line: args,
        exit_status: None,
        error: None,
        doc: CubDoc::default(),
    };
    let out = match std::process::Command::new(program)
        .args(&report.command_line)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            report.error = Some(format!("cannot run {}: {e}", program.display()));
            return report;
        }
    };
    report.exit_status = out.status.code();
    match serde_json::from_slice::<CubDoc>(&out.stdout) {
        Ok(doc) => report.doc = doc,
        Err(e) => {
            let said = String::from_utf8_lossy(&out.stdout);
            let said = said.trim();
            report.error = Some(format!(
                "{} printed no JSON document ({e}; {}){}",
                program.display(),
                out.status,
                if said.is_empty() { String::new() } else { format!("; stdout began: {}", short(said)) }
            ));
        }
    }
    report
}

/// The comparison of our median `ours_us` on inputs with digest `ours` with
/// CUB's result `r` (no numbers and a failed check when CUB has none).
fn compare(r: Option<&CubResult>, ours_us: f64, ours: Option<u64>) -> CubCompare {
    let Some(r) = r else {
        let cub_check = "FAILED: the CUB program has no result for this".to_string();
        return CubCompare { cub_us: f64::NAN, x_cub: f64::NAN, cub_check, cub_held: false };
    };
    let cub_us = r.median_us.unwrap_or(f64::NAN);
    let theirs = r.input_digest.as_deref();
    let cub_check = match (ours.map(|d| format!("{d:016x}")), theirs) {
        (Some(o), Some(t)) if o != t => format!("FAILED: CUB's inputs are not ours (digest {t}, ours {o})"),
        _ => r.check.clone(),
    };
    CubCompare { cub_us, x_cub: cub_us / ours_us, cub_check, cub_held: r.held }
}

/// Attach CUB's results to our measurements with a twin and to the
/// readback lines.
fn attach_cub(
    doc: &CubDoc,
    digests: Option<&HashMap<(Ty, u32), u64>>,
    results: &mut [Measurement],
    readback: &mut [Readback],
) {
    let find =
        |case: &str, ty: Ty, k: u32| doc.results.iter().find(|r| r.case == case && r.ty == ty.name() && r.log2_n == k);
    let ours = |ty: Ty, k: u32| digests.and_then(|d| d.get(&(ty, k)).copied());
    for m in results.iter_mut() {
        if let Some(twin) = &m.twin {
            let digest = m.digest.or_else(|| ours(m.ty, m.log2_n));
            m.cub = Some(compare(find(twin, m.ty, m.log2_n), m.timing.median_us, digest));
        }
    }
    for r in readback.iter_mut() {
        r.cub = Some(compare(find("readback", r.ty, READBACK_LOG2), r.timing.median_us, ours(r.ty, READBACK_LOG2)));
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match real_main(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}

const EMU_BANNER: &str = "\
***************************************************************************
*  CPU EMULATOR: no NVIDIA GPU is in use. The times below are the         *
*  emulator's wall-clock times, NOT GPU numbers; do not quote them.       *
***************************************************************************";

/// Runs the benchmarks; `Ok(false)` when a result disagreed with its reference.
fn real_main(args: &[String]) -> Res<bool> {
    let Some(opt) = parse_args(args)? else { return Ok(true) };
    let (ctx, why_emu) = open_context()?;
    let emu = ctx.backend() == BackendKind::Emulator;
    let sizes = match (&opt.sizes, emu, opt.quick) {
        (Some(s), _, _) => s.clone(),
        (None, true, _) => (10..=14).collect(),
        (None, false, true) => vec![12, 16, 20, 24, 28],
        (None, false, false) => (10..=30).collect(),
    };
    let plan = Plan {
        warmup: opt.warmup.unwrap_or(if emu { 1 } else { 3 }),
        runs: opt.runs.unwrap_or(if emu { 5 } else { 100 }),
    };
    let out = out_dir(opt.out.as_deref());
    let cub =
        opt.cub.clone().or_else(|| std::env::var_os("GPUPRIM_CUB_BENCH").filter(|v| !v.is_empty()).map(PathBuf::from));
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let date = utc_string(now);

    if emu {
        println!("{EMU_BANNER}");
        println!("no NVIDIA driver found ({}): running on the CPU emulator", why_emu.as_deref().unwrap_or("?"));
    }
    println!(
        "gpuprim bench on {} ({} backend, {} SMs), {date}\nsizes 2^{}..2^{} ({} sizes), types {}, {} timed runs after {} warm-up \
         (fewer when a measurement would pass {} s), inputs rotate through >= {} MiB",
        ctx.device_name(),
        ctx.backend(),
        ctx.multiprocessors(),
        sizes[0],
        sizes[sizes.len() - 1],
        sizes.len(),
        opt.types.iter().map(|t| t.name()).collect::<Vec<_>>().join(","),
        plan.runs,
        plan.warmup,
        RUN_BUDGET.as_secs(),
        ROTATE_BYTES >> 20
    );
    let cub = match cub {
        Some(path) if emu => {
            println!("CUB: skipped on the emulator (--cub {}: the CUB program needs a GPU)", path.display());
            None
        }
        Some(path) => {
            let data_groups: Vec<&str> = opt
                .groups
                .iter()
                .filter(|g| cases::find(g.name()).is_some_and(|d| !(d.data_cases)().is_empty()))
                .map(|g| g.name())
                .collect();
            let also = match data_groups.is_empty() {
                true => String::new(),
                false => format!(" and of every case of {}", data_groups.join(", ")),
            };
            println!("CUB: {} times CUB's twins of {}{also} after each group", path.display(), twin_names());
            Some(path)
        }
        None => {
            println!("CUB: not compared (no --cub PATH or GPUPRIM_CUB_BENCH)");
            None
        }
    };

    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut bench = Bench {
        ctx: &ctx,
        plan,
        copies: HashMap::new(),
        digests: cub.as_ref().map(|_| HashMap::new()),
        copy_equiv: HashMap::new(),
    };
    let mut files = Vec::new();
    let mut summaries = Vec::new();
    let mut all_ok = true;

    for &group in &opt.groups {
        let def = cases::find(group.name());
        let all_cases = def.map_or_else(Vec::new, |g| (g.cases)());
        let all_data = def.map_or_else(Vec::new, |g| (g.data_cases)());
        let wanted = |name: &str| opt.cases.as_ref().is_none_or(|l| l.iter().any(|p| name.contains(p.as_str())));
        let cases: Vec<&Case> = all_cases.iter().filter(|c| opt.types.contains(&c.ty) && wanted(&c.name)).collect();
        let data: Vec<&DataCase> = all_data.iter().filter(|c| opt.types.contains(&c.ty) && wanted(&c.name)).collect();
        let none = all_cases.is_empty() && all_data.is_empty();
        println!("== {}", group.name());
        if none {
            println!("  no {} cases yet", group.name());
        }
        let mut results = Vec::new();
        for &ty in &opt.types {
            let of_ty: Vec<&Case> = cases.iter().copied().filter(|c| c.ty == ty).collect();
            if !of_ty.is_empty() {
                match ty {
                    Ty::I32 => bench.run_type::<i32>(&of_ty, &sizes, &mut results)?,
                    Ty::F32 => bench.run_type::<f32>(&of_ty, &sizes, &mut results)?,
                    Ty::F64 => bench.run_type::<f64>(&of_ty, &sizes, &mut results)?,
                }
            }
            let of_ty: Vec<&DataCase> = data.iter().copied().filter(|c| c.ty == ty).collect();
            if !of_ty.is_empty() {
                match ty {
                    Ty::I32 => bench.run_data_type::<i32>(&of_ty, &sizes, &mut results)?,
                    Ty::F32 => bench.run_data_type::<f32>(&of_ty, &sizes, &mut results)?,
                    Ty::F64 => bench.run_data_type::<f64>(&of_ty, &sizes, &mut results)?,
                }
            }
        }
        // Latency: the whole default `sum_into` of 2^20 f32.
        let mut latency = Vec::new();
        if group == Group::REDUCE
            && opt.cases.as_ref().is_none_or(|l| l.iter().any(|p| "sum_into".contains(p.as_str())))
        {
            let case = cases::latency_case();
            let l = bench.latency::<f32>(&case).unwrap_or_else(|e| Latency {
                case: case.name.clone(),
                ty: Ty::F32,
                n: 1 << LATENCY_LOG2,
                check: format!("ERROR: {e}"),
                timing: Timing::failed(bench.plan.warmup, 0),
                with_host_launch: Timing::failed(bench.plan.warmup, 0),
            });
            println!(
                "  latency {} f32 2^{LATENCY_LOG2}: median {} µs GPU time, {} µs with host launch cost {}",
                l.case,
                sig(l.timing.median_us),
                sig(l.with_host_launch.median_us),
                l.check
            );
            latency.push(l);
        }
        // Readback: the whole `sum`, the value on the host, per type.
        let mut readback = Vec::new();
        if group == Group::REDUCE
            && opt
                .cases
                .as_ref()
                .is_none_or(|l| l.iter().any(|p| "sum_into".contains(p.as_str()) || "readback".contains(p.as_str())))
        {
            for &ty in &opt.types {
                let r = match ty {
                    Ty::I32 => bench.readback::<i32>(),
                    Ty::F32 => bench.readback::<f32>(),
                    Ty::F64 => bench.readback::<f64>(),
                };
                let r = r.unwrap_or_else(|e| Readback {
                    case: "sum".into(),
                    ty,
                    n: 1 << READBACK_LOG2,
                    check: format!("ERROR: {e}"),
                    timing: Timing::failed(bench.plan.warmup, 0),
                    cub: None,
                });
                println!(
                    "  readback sum {} 2^{READBACK_LOG2}: median {} µs host time ({} runs) {}",
                    ty.name(),
                    sig(r.timing.median_us),
                    r.timing.runs,
                    r.check
                );
                readback.push(r);
            }
        }

        // CUB's twins of the group's cases, on the same types and sizes.
        let cub_report = cub.as_deref().and_then(|program| {
            let mut twins: Vec<&str> = CUB_TWINS
                .iter()
                .map(|&(n, _)| n)
                .filter(|&n| cases.iter().any(|c| c.name == n))
                .chain((!readback.is_empty()).then_some("readback"))
                .collect();
            for c in data.iter().filter(|c| c.twin) {
                if !twins.contains(&c.name.as_str()) {
                    twins.push(&c.name);
                }
            }
            if twins.is_empty() {
                return None;
            }
            let types: Vec<&str> = opt
                .types
                .iter()
                .filter(|&&t| {
                    !readback.is_empty()
                        || cases.iter().any(|c| c.ty == t && cub_twin(&c.name).is_some())
                        || data.iter().any(|c| c.ty == t && c.twin)
                })
                .map(|t| t.name())
                .collect();
            let args = cub_args(&twins, &types, &sizes, &bench.plan);
            println!("  CUB: {} {}", program.display(), args.join(" "));
            let report = run_cub(program, args);
            if report.error.is_none() {
                attach_cub(&report.doc, bench.digests.as_ref(), &mut results, &mut readback);
            }
            match &report.error {
                Some(e) => println!("  CUB: FAILED, the bench goes on without it: {e}"),
                None => println!(
                    "  CUB: {}; {} results{}",
                    report.versions(),
                    report.doc.results.len(),
                    match report.exit_status {
                        Some(0) => String::new(),
                        s => format!(" (exit status {}: see its checks)", s.map_or("none".into(), |s| s.to_string())),
                    }
                ),
            }
            Some(report)
        });

        all_ok &= results.iter().all(|m| m.check == "ok")
            && latency.iter().all(|l| l.check == "ok")
            && readback.iter().all(|r| r.check == "ok");
        let mut copy: Vec<CopyResult> = bench
            .copies
            .values()
            .filter(|c| !cases.is_empty() && results.iter().any(|m| m.ty == c.ty && m.log2_n == c.log2_n))
            .cloned()
            .collect();
        copy.sort_by_key(|c| (c.ty.size(), c.ty.name(), c.log2_n));
        all_ok &= copy.iter().all(|c| c.check == "ok");

        let report = GroupReport {
            group,
            device: ctx.device_name(),
            backend: ctx.backend().to_string(),
            multiprocessors: ctx.multiprocessors(),
            emulator_timings: emu,
            date_utc: date.clone(),
            unix_time: now,
            command_line: std::env::args().collect(),
            sizes_log2: sizes.clone(),
            types: opt.types.clone(),
            runs: bench.plan.runs,
            warmup: bench.plan.warmup,
            rotate_bytes: ROTATE_BYTES,
            gbps_definition: if data.is_empty() { GBPS_DEFINITION } else { DATA_GBPS_DEFINITION },
            cases: cases
                .iter()
                .map(|c| CaseInfo {
                    group: c.group,
                    name: c.name.clone(),
                    ty: c.ty,
                    bytes_per_elem_moved: Some(c.bytes_per_elem_moved),
                })
                .chain(data.iter().map(|c| CaseInfo {
                    group: c.group,
                    name: c.name.clone(),
                    ty: c.ty,
                    bytes_per_elem_moved: None,
                }))
                .collect(),
            copy: copy.clone(),
            measurements: &results,
            latency: &latency,
            readback: &readback,
            cub: cub_report.as_ref(),
        };
        let json_path = out.join(format!("bench-{}.json", group.name()));
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(&json_path, json).map_err(|e| format!("cannot write {}: {e}", json_path.display()))?;
        files.push(json_path);

        for &ty in &opt.types {
            if !results.iter().any(|m| m.ty == ty) {
                continue;
            }
            let svg = plot(group, ty, &ctx, emu, &date, &bench.plan, &results, &copy);
            let path = out.join(format!("{}-{}.svg", group.name(), ty.name()));
            std::fs::write(&path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            files.push(path);
        }
        summaries.push(Summary { group, none, results, latency, readback, cub: cub_report });
    }

    println!("== files");
    for f in &files {
        println!("  {}", f.display());
    }
    println!("== results on {}{}", ctx.device_name(), if emu { " (CPU EMULATOR: not GPU numbers)" } else { "" });
    for Summary { group, none, results, latency, readback, cub } in &summaries {
        println!("-- {}", group.name());
        if *none {
            println!("no {} cases yet", group.name());
            continue;
        }
        match cub {
            Some(c) if c.error.is_none() => println!("CUB twins timed by {}: {}", c.program, c.versions()),
            Some(c) => println!("CUB: no comparison ({})", c.error.as_deref().unwrap_or("?")),
            None => {}
        }
        print!("{}", table(results));
        if results.iter().any(|m| m.copy_equiv_us.is_some()) {
            println!(
                "(% copy and copy GB/s: each case's copy-equivalent, a device copy moving as many bytes as it reads \
                 and writes, timed in the same run)"
            );
        }
        for l in latency {
            println!(
                "latency ({} {} 2^{LATENCY_LOG2}, the whole call, all its launches): median {} µs GPU time (min {}, p90 {}; \
                 {} runs), {} µs with host launch cost (min {}, p90 {}) {}",
                l.case,
                l.ty.name(),
                sig(l.timing.median_us),
                sig(l.timing.min_us),
                sig(l.timing.p90_us),
                l.timing.runs,
                sig(l.with_host_launch.median_us),
                sig(l.with_host_launch.min_us),
                sig(l.with_host_launch.p90_us),
                l.check
            );
        }
        for r in readback {
            println!(
                "readback (Context::sum of {} 2^{READBACK_LOG2}, the value on the host; host time around the whole call): \
                 median {} µs (min {}, p90 {}; {} runs){} {}",
                r.ty.name(),
                sig(r.timing.median_us),
                sig(r.timing.min_us),
                sig(r.timing.p90_us),
                r.timing.runs,
                r.cub.as_ref().map_or(String::new(), |c| format!(
                    "; CUB {} µs, × CUB {}{}",
                    sig(c.cub_us),
                    x_cell(c.x_cub),
                    if c.cub_check == "ok" { String::new() } else { format!(" (CUB: {})", short(&c.cub_check)) }
                )),
                r.check
            );
        }
        print!("{}", cub_grid(results, readback));
    }
    if emu {
        println!("{EMU_BANNER}");
    }
    if !all_ok {
        println!("bench: some measurements failed or disagreed with the CPU reference (see the check column)");
    }
    Ok(all_ok)
}

/// What the summary keeps of a group.
struct Summary {
    group: Group,
    /// The group has no cases at all.
    none: bool,
    results: Vec<Measurement>,
    latency: Vec<Latency>,
    readback: Vec<Readback>,
    cub: Option<CubReport>,
}

/// `sum_into, inclusive_scan, exclusive_scan and the readback line`.
fn twin_names() -> String {
    CUB_TWINS.iter().map(|&(n, _)| n).collect::<Vec<_>>().join(", ") + " and the readback line"
}

/// The CUB program's command line for `cases`, `types` and `sizes`, with
/// our run plan.
fn cub_args(cases: &[&str], types: &[&str], sizes: &[u32], plan: &Plan) -> Vec<String> {
    let sizes: Vec<String> = sizes.iter().map(u32::to_string).collect();
    [
        ("--cases", cases.join(",")),
        ("--types", types.join(",")),
        ("--sizes", sizes.join(",")),
        ("--runs", plan.runs.to_string()),
        ("--warmup", plan.warmup.to_string()),
        ("--rotate-bytes", ROTATE_BYTES.to_string()),
        ("--budget-s", RUN_BUDGET.as_secs_f64().to_string()),
        ("--min-runs", MIN_RUNS.to_string()),
        ("--readback-log2", READBACK_LOG2.to_string()),
    ]
    .into_iter()
    .flat_map(|(flag, v)| [flag.to_string(), v])
    .collect()
}

/// A × CUB value: cut (not rounded) to two decimals, so that it reads 1.00
/// or more exactly when CUB's time is at least ours; `-` for no number.
fn x_cell(x: f64) -> String {
    if x.is_finite() { format!("{:.2}", (x * 100.0 + 1e-9).floor() / 100.0) } else { "-".into() }
}

/// Beyond this many case-and-type columns the x CUB grid turns (a row per
/// case and type, a column per size).
const MAX_GRID_COLUMNS: usize = 8;

/// The x CUB grid of a group: a row per size, a column per case and type
/// with a CUB twin (and the readback line); `*` marks a miss (below 1.00 or
/// no number), `!` a result that is not ok (ours or CUB's). Empty when CUB
/// did not run.
fn cub_grid(results: &[Measurement], readback: &[Readback]) -> String {
    let mut s = String::new();
    let mut cols: Vec<(&str, Ty)> = Vec::new();
    for m in results.iter().filter(|m| m.cub.is_some()) {
        if !cols.contains(&(m.case.as_str(), m.ty)) {
            cols.push((&m.case, m.ty));
        }
    }
    let rb: Vec<&Readback> = readback.iter().filter(|r| r.cub.is_some()).collect();
    if cols.is_empty() && rb.is_empty() {
        return s;
    }
    let mut sizes: Vec<u32> = results.iter().filter(|m| m.cub.is_some()).map(|m| m.log2_n).collect();
    sizes.sort_unstable();
    sizes.dedup();
    // Misses and results not ok, by column ("sum_into f32") and then size.
    let (mut met, mut misses, mut flagged) = (0, Vec::new(), Vec::new());
    let mut cell = |col: String, at: String, x: &CubCompare, ours_ok: bool| {
        let bad = !ours_ok || x.cub_check != "ok";
        let miss = x.x_cub.is_nan() || x.x_cub < 1.0;
        if miss {
            misses.push((col.clone(), format!("{at} {}", x_cell(x.x_cub))));
        } else {
            met += 1;
        }
        if bad {
            flagged.push((col, at));
        }
        let marks = format!("{}{}", if miss { "*" } else { "" }, if bad { "!" } else { "" });
        format!("{:>5}{marks:<2}", x_cell(x.x_cub))
    };
    let _ = writeln!(
        s,
        "× CUB (CUB median time / ours, the same method in the same run; >= 1.00: at or above CUB; \
         * below, ! a result not ok):"
    );
    let at = |c: &str, t: Ty, k: u32| {
        results.iter().find(|m| m.case == c && m.ty == t && m.log2_n == k).and_then(|m| m.cub.as_ref().map(|x| (m, x)))
    };
    if cols.len() <= MAX_GRID_COLUMNS {
        // A row per size, a column per case and type.
        let w = cols.iter().map(|(c, _)| c.len() + 4).max().unwrap_or(0).max(7);
        let mut head = format!("{:<6}", "size");
        for (c, t) in &cols {
            let _ = write!(head, "  {:>w$}", format!("{c} {}", t.name()));
        }
        let _ = writeln!(s, "{}", head.trim_end());
        for &k in &sizes {
            let mut line = format!("{:<6}", format!("2^{k}"));
            for &(c, t) in &cols {
                let v = match at(c, t, k) {
                    Some((m, x)) => cell(format!("{c} {}", t.name()), format!("2^{k}"), x, m.check == "ok"),
                    None => String::new(),
                };
                let _ = write!(line, "  {v:>w$}");
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
    } else {
        // Many cases (the primitives with their own inputs): a row per
        // case and type, a column per size.
        let w = cols.iter().map(|(c, t)| c.len() + 1 + t.name().len()).max().unwrap_or(0);
        let mut head = format!("{:<w$}", "case");
        for &k in &sizes {
            let _ = write!(head, "  {:>7}", format!("2^{k}"));
        }
        let _ = writeln!(s, "{}", head.trim_end());
        for &(c, t) in &cols {
            let mut line = format!("{:<w$}", format!("{c} {}", t.name()));
            for &k in &sizes {
                let v = match at(c, t, k) {
                    Some((m, x)) => cell(format!("{c} {}", t.name()), format!("2^{k}"), x, m.check == "ok"),
                    None => String::new(),
                };
                let _ = write!(line, "  {v:>7}");
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
    }
    for r in &rb {
        if let Some(x) = &r.cub {
            let v = cell(format!("readback {}", r.ty.name()), format!("2^{READBACK_LOG2}"), x, r.check == "ok");
            let _ = writeln!(s, "readback {} 2^{READBACK_LOG2} (host time): {}", r.ty.name(), v.trim());
        }
    }
    let total = met + misses.len();
    if misses.is_empty() {
        let _ = writeln!(s, "× CUB: all {total} at or above CUB");
    } else {
        let _ = writeln!(s, "× CUB: {met} of {total} at or above CUB; MISSED: {}", by_column(&misses));
    }
    if !flagged.is_empty() {
        let _ = writeln!(s, "× CUB: not ok (ours or CUB's check; see the table and the JSON): {}", by_column(&flagged));
    }
    s
}

/// `a 2^10 0.98, 2^12 0.97; b 2^20 0.5` from (column, entry) pairs, columns
/// in first-seen order.
fn by_column(entries: &[(String, String)]) -> String {
    let mut cols: Vec<&str> = Vec::new();
    for (c, _) in entries {
        if !cols.contains(&c.as_str()) {
            cols.push(c);
        }
    }
    let of = |c: &str| entries.iter().filter(|(e, _)| e == c).map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(", ");
    cols.iter().map(|c| format!("{c} {}", of(c))).collect::<Vec<_>>().join("; ")
}

fn table(results: &[Measurement]) -> String {
    let mut s = String::new();
    let cw = results.iter().map(|m| m.case.chars().count()).max().unwrap_or(0).max(4);
    // The x CUB column, when CUB ran.
    let cub = results.iter().any(|m| m.cub.is_some());
    let _ = writeln!(
        s,
        "{:<6} {:<5} {:<cw$} {:>12} {:>10} {:>8} {:>10}{}  check",
        "size",
        "type",
        "case",
        "median µs",
        "GB/s",
        "% copy",
        "copy GB/s",
        if cub { format!(" {:>7}", "× CUB") } else { String::new() }
    );
    for m in results {
        let x = match &m.cub {
            Some(c) => format!(" {:>7}", x_cell(c.x_cub)),
            None if cub => format!(" {:>7}", ""),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "{:<6} {:<5} {:<cw$} {:>12} {:>10} {:>7}% {:>10}{x}  {}",
            format!("2^{}", m.log2_n),
            m.ty.name(),
            m.case,
            sig(m.timing.median_us),
            sig(m.gbps),
            sig(m.pct_of_copy),
            sig(m.copy_gbps),
            short(&m.check)
        );
    }
    // Failures in full: the first of each case and type, with a count.
    let mut seen: Vec<(&str, Ty)> = Vec::new();
    for m in results.iter().filter(|m| m.check != "ok") {
        if seen.contains(&(m.case.as_str(), m.ty)) {
            continue;
        }
        seen.push((&m.case, m.ty));
        let of = |f: &dyn Fn(&Measurement) -> bool| {
            results.iter().filter(|r| r.case == m.case && r.ty == m.ty && f(r)).count()
        };
        let _ = writeln!(
            s,
            "  {} {}: {} of {} sizes not ok; first, at 2^{}: {}",
            m.case,
            m.ty.name(),
            of(&|r| r.check != "ok"),
            of(&|_| true),
            m.log2_n,
            m.check
        );
    }
    s
}

/// A check result cut to fit a table cell.
fn short(check: &str) -> String {
    match check.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &check[..i]),
        None => check.to_string(),
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` from Unix seconds (Hinnant's civil_from_days).
fn utc_string(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem / 60 % 60, rem % 60)
}

// ---------------------------------------------------------------------------
// SVG
// ---------------------------------------------------------------------------

const PALETTE: [&str; 14] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
    "#393b79", "#637939", "#843c39", "#7b4173",
];

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A "nice" axis step (1, 2, 2.5 or 5 times a power of ten) giving about
/// `ticks` intervals up to `max`.
fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(1e-12);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].into_iter().map(|m| m * p).find(|&s| s >= raw).unwrap_or(10.0 * p)
}

fn elements_label(k: u32) -> String {
    match k {
        0..=9 => format!("{}", 1u64 << k),
        10..=19 => format!("{}K", 1u64 << (k - 10)),
        20..=29 => format!("{}M", 1u64 << (k - 20)),
        _ => format!("{}G", 1u64 << (k - 30)),
    }
}

/// A plotted case: name, (log2 n, GB/s) points, whether a check failed.
type Series = (String, Vec<(f64, f64)>, bool);

#[allow(clippy::too_many_arguments)]
fn plot(
    group: Group,
    ty: Ty,
    ctx: &Context,
    emu: bool,
    date: &str,
    plan: &Plan,
    results: &[Measurement],
    copy: &[CopyResult],
) -> String {
    // Series: one per case, in registration order, then the copy.
    let mut names: Vec<&str> = Vec::new();
    for m in results.iter().filter(|m| m.ty == ty) {
        if !names.contains(&m.case.as_str()) {
            names.push(&m.case);
        }
    }
    // (label, points, whether a check failed)
    let series: Vec<Series> = names
        .iter()
        .map(|name| {
            let pts = results
                .iter()
                .filter(|m| m.ty == ty && m.case == *name && m.gbps.is_finite())
                .map(|m| (m.log2_n as f64, m.gbps))
                .collect();
            (name.to_string(), pts, results.iter().any(|m| m.ty == ty && m.case == *name && m.check != "ok"))
        })
        .collect();
    let copy_pts: Vec<(f64, f64)> =
        copy.iter().filter(|c| c.ty == ty && c.gbps.is_finite()).map(|c| (c.log2_n as f64, c.gbps)).collect();

    // Room on the right for the longest legend label (about 7.6 px a character).
    let longest = series.iter().map(|(n, _, f)| n.chars().count() + if *f { 15 } else { 0 }).max().unwrap_or(0).max(19);
    let (w, h) = ((770.0 + 25.0 + 38.0 + 7.6 * longest as f64 + 20.0f64).max(1000.0).round(), 580.0);
    let (left, right, top, bottom) = (90.0, 770.0, 80.0, 500.0);
    let all_x = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).chain(copy_pts.iter().map(|p| p.0));
    let (mut x0, mut x1) = all_x.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    if !x0.is_finite() {
        (x0, x1) = (10.0, 20.0);
    }
    if x1 - x0 < 1.0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let ymax_data = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .chain(copy_pts.iter().map(|p| p.1))
        .filter(|y| y.is_finite())
        .fold(0.0f64, f64::max);
    let step = nice_step(ymax_data.max(1e-9) * 1.05, 6.0);
    let y1 = (ymax_data.max(1e-9) * 1.05 / step).ceil() * step;
    let sx = |x: f64| left + (x - x0) / (x1 - x0) * (right - left);
    let sy = |y: f64| bottom - (y / y1).clamp(0.0, 1.05) * (bottom - top);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="13">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let title = format!("gpuprim {} — {} — {}", group.name(), ty.name(), ctx.device_name());
    let _ = writeln!(s, r#"<text x="{left}" y="30" font-size="19" font-weight="bold">{}</text>"#, xml(&title));
    let sub = format!(
        "median of up to {} runs each ({}), {}; GB/s = bytes the operation must move / median time",
        plan.runs,
        if emu { "wall clock" } else { "CUDA events" },
        date
    );
    let _ = writeln!(s, r##"<text x="{left}" y="52" fill="#444">{}</text>"##, xml(&sub));
    if emu {
        let _ = writeln!(
            s,
            r##"<text x="{left}" y="70" fill="#c00000" font-weight="bold">CPU EMULATOR timings, not GPU numbers</text>"##
        );
    }

    // Grid and y ticks.
    let mut y = 0.0;
    while y <= y1 + step * 1e-9 {
        let py = sy(y);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{py:.1}" x2="{right}" y2="{py:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left - 8.0,
            py + 4.5,
            trim_num(y, step)
        );
        y += step;
    }
    // x ticks: every log2 size (every second one when crowded).
    let every = if x1 - x0 > 12.0 { 2 } else { 1 };
    for k in (x0.ceil() as u32)..=(x1.floor() as u32) {
        let px = sx(k as f64);
        let _ = writeln!(s, r##"<line x1="{px:.1}" y1="{top}" x2="{px:.1}" y2="{bottom}" stroke="#f0f0f0"/>"##);
        let _ =
            writeln!(s, r##"<line x1="{px:.1}" y1="{bottom}" x2="{px:.1}" y2="{:.1}" stroke="#333"/>"##, bottom + 5.0);
        if (k - x0.ceil() as u32).is_multiple_of(every) {
            let _ = writeln!(
                s,
                r##"<text x="{px:.1}" y="{:.1}" text-anchor="middle">2<tspan dy="-6" font-size="10">{k}</tspan></text><text x="{px:.1}" y="{:.1}" text-anchor="middle" fill="#666" font-size="11">{}</text>"##,
                bottom + 22.0,
                bottom + 37.0,
                elements_label(k)
            );
        }
    }
    // Axes and their titles.
    let _ =
        writeln!(s, r##"<path d="M{left},{top} V{bottom} H{right}" fill="none" stroke="#333" stroke-width="1.2"/>"##);
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">input size n ({} elements; log scale)</text>"#,
        (left + right) / 2.0,
        bottom + 62.0,
        ty.name()
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(28,{:.1}) rotate(-90)" text-anchor="middle">GB/s (10⁹ bytes per second)</text>"#,
        (top + bottom) / 2.0
    );

    // Data.
    let poly = |pts: &[(f64, f64)]| {
        pts.iter().map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y))).collect::<Vec<_>>().join(" ")
    };
    if !copy_pts.is_empty() {
        let _ = writeln!(
            s,
            r##"<polyline points="{}" fill="none" stroke="#000" stroke-width="2" stroke-dasharray="7 5"/>"##,
            poly(&copy_pts)
        );
    }
    for (i, (_, pts, _)) in series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let _ = writeln!(s, r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="2.2"/>"#, poly(pts));
        for &(x, y) in pts {
            s.push_str(&marker(i, sx(x), sy(y), c));
        }
    }

    // Legend, right of the plot.
    let lx = right + 25.0;
    let _ = writeln!(s, r#"<text x="{lx}" y="{top}" font-weight="bold">{}</text>"#, group.name());
    let mut ly = top + 24.0;
    for (i, (name, _, failed)) in series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let label = if *failed { format!("{name} (CHECK FAILED)") } else { name.clone() };
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="2.2"/>{}<text x="{:.1}" y="{:.1}">{}</text>"#,
            ly - 4.0,
            lx + 30.0,
            ly - 4.0,
            marker(i, lx + 15.0, ly - 4.0, c).trim_end(),
            lx + 38.0,
            ly,
            xml(&label)
        );
        ly += 22.0;
    }
    if !copy_pts.is_empty() {
        let _ = writeln!(
            s,
            r##"<line x1="{lx}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#000" stroke-width="2" stroke-dasharray="7 5"/><text x="{:.1}" y="{:.1}">copy (read + write)</text>"##,
            ly - 4.0,
            lx + 30.0,
            ly - 4.0,
            lx + 38.0,
            ly
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The marker of series `i` at (x, y): circle, square, triangle or
/// diamond, so that overlapping lines stay apart.
fn marker(i: usize, x: f64, y: f64, color: &str) -> String {
    match i % 4 {
        0 => format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.3\" fill=\"{color}\"/>\n"),
        1 => format!("<rect x=\"{:.1}\" y=\"{:.1}\" width=\"6\" height=\"6\" fill=\"{color}\"/>\n", x - 3.0, y - 3.0),
        2 => format!(
            "<path d=\"M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z\" fill=\"{color}\"/>\n",
            y - 4.0,
            x + 3.8,
            y + 3.0,
            x - 3.8,
            y + 3.0
        ),
        _ => format!(
            "<path d=\"M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z\" fill=\"{color}\"/>\n",
            y - 4.2,
            x + 4.2,
            y + 4.2,
            x - 4.2
        ),
    }
}

/// A tick label with as many decimals as the step needs.
fn trim_num(v: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{v:.0}")
    } else {
        let decimals = (-step.log10()).ceil().max(0.0) as usize + 1;
        let t = format!("{v:.decimals$}");
        let t = t.trim_end_matches('0').trim_end_matches('.');
        if t.is_empty() { "0".into() } else { t.to_string() }
    }
}
