//! Shared by the primitives whose cases make their own inputs (select,
//! by-key, segmented): the input distributions, defined once and made bit
//! for bit the same by the CUB program (`cub/cub_bench.cu`), the bytes a
//! case moves, and how such a case is prepared, run and checked.
//!
//! # Distributions
//!
//! Every array is a pure function of the element (or run, or segment)
//! index and a seed, except the random values, which are the reduce and
//! scan groups' inputs ([`random_data`] with [`input_seed`]). `mix64` is
//! the splitmix64 finaliser (`gpuprim_kernels::util::mix64`).
//!
//! | data set | arrays |
//! |---|---|
//! | [`DataKey::Values`] | `vals[i] = mix64(i ^ seed) % 2001` as `T` (0..=2000, exact in every type; `hash_value`) |
//! | [`DataKey::Flags`]`(t)` | those values, and `flags[i] = (vals[i] < t) as u8` |
//! | [`DataKey::Runs`]`(L)` | run `r = i / L`; `keys[i]` (u64) = `mix64(r ^ seed) & !1 \| r & 1` (neighbouring runs differ in bit 0); `runs[i]` (`T`) = `h % 1000` for even `r`, `1000 + h % 1001` for odd `r` with `h = mix64(r ^ seed ^ 1)` (neighbours differ); `vals` random |
//! | [`DataKey::Segments`] | `vals` random; `offsets` (u64, CSR: starts then n): fixed lengths `L`, or mixed lengths (segment `s`: `h = mix64(s ^ seed)`, `e = (h & 255) % 17`, length `1 + (h >> 8) % 2^e`, so 1..=2^16, log-uniform-ish; the last is cut at n) |
//! | [`DataKey::RandomSegments`]`(L)` | `vals` random; `offsets` (u64, CSR): segment `s` of length `mix64(s ^ seed) % (2L + 1)` (0..=2L, mean L; the last cut at n) |
//!
//! Seeds: `SEED ^ (log2_n << 8) ^ ty ^ (tag << 32) ^ (param << 40)` with
//! tag 1 for the values (the same for every threshold), 2 for runs (param
//! L; the same for every type), 3 for segments (param L, 0 for mixed).
//!
//! # Bytes moved and the copy-equivalent
//!
//! Each case counts the bytes it must read (every input element once) and
//! the bytes of output it actually writes (from the CPU reference: for
//! select at 50%, `n * 4` read and about `n/2 * 4` written; counts in device
//! memory are not counted). GB/s = (read + written) / median time. The
//! **copy-equivalent** is a device-to-device copy that moves the same
//! number of bytes (a copy of `(read + written) / 2` bytes, which reads and
//! writes that many), timed in the same run with the same method;
//! `pct_of_copy` = 100 × its median time / the case's median time. Each
//! case file documents its read and written bytes per primitive.

use crate::{Elem, Group, Res, SEED, Ty, input_seed, random_data, rotation};
use gpuprim::{Context, DeviceBuffer, DeviceRepr};
use std::any::Any;
use std::rc::Rc;

/// The splitmix64 finaliser (`gpuprim_kernels::util::mix64`).
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Which inputs a case reads; cases with the same key at a size share them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum DataKey {
    /// Values 0..=2000 from the index.
    Values,
    /// Those values and the flags `vals[i] < t`.
    Flags(u32),
    /// Runs of `L` equal keys (and run values), random values.
    Runs(u64),
    /// Random values in segments of `L` elements (`None`: mixed lengths).
    Segments(Option<u64>),
    /// Random values in segments of random lengths 0..=2L.
    RandomSegments(u64),
}

impl DataKey {
    /// The seed of this data set's index hashes at 2^`k` elements of `ty`.
    pub(crate) fn seed(self, ty: Ty, k: u32) -> u64 {
        let (tag, param, ty) = match self {
            DataKey::Values | DataKey::Flags(_) => (1u64, 0u64, ty as u64),
            DataKey::Runs(l) => (2, l, 0),
            DataKey::Segments(l) => (3, l.unwrap_or(0), 0),
            DataKey::RandomSegments(l) => (4, l, 0),
        };
        SEED ^ (u64::from(k) << 8) ^ ty ^ (tag << 32) ^ (param << 40)
    }
}

/// One array of a data set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Vals,
    Flags,
    Keys,
    Runs,
    Offsets,
}

/// `f(i)` for `i < n`, on every core.
pub(crate) fn par_fill<X: Send + Default + Clone>(n: usize, f: impl Fn(usize) -> X + Sync) -> Vec<X> {
    let mut v = vec![X::default(); n];
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 32);
    let chunk = n.div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for (c, part) in v.chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || part.iter_mut().enumerate().for_each(|(j, x)| *x = f(c * chunk + j)));
        }
    });
    v
}

/// [`crate::digest`] of any plain array (bits zero-extended).
pub(crate) fn digest_bits(bits: impl Iterator<Item = u64>) -> u64 {
    bits.enumerate().fold(0u64, |h, (i, b)| h.wrapping_add(b.wrapping_mul(2 * i as u64 + 1)))
}

/// The digest of several arrays: the sum of `digest(a_j) * (2j + 1)`, in
/// the order the case lists them.
pub(crate) fn combine_digests(ds: &[u64]) -> u64 {
    ds.iter().enumerate().fold(0u64, |h, (j, d)| h.wrapping_add(d.wrapping_mul(2 * j as u64 + 1)))
}

/// For diagnosis only: `GPUPRIM_BENCH_MIXED_MIN=L` (elements) makes every
/// segment of the mixed lengths at least `L` long (each drawn length raised
/// to `L`), so that a run can tell what the short segments cost a path. The
/// data then differ from CUB's twin's, so do not compare with CUB under it.
/// Read once, announced on stdout; a value that is not a number is an
/// error.
fn mixed_min() -> Res<u64> {
    static ANNOUNCE: std::sync::Once = std::sync::Once::new();
    let Ok(v) = std::env::var("GPUPRIM_BENCH_MIXED_MIN") else { return Ok(0) };
    let min: u64 =
        v.trim().parse().map_err(|e| format!("GPUPRIM_BENCH_MIXED_MIN={v}: not a length in elements ({e})"))?;
    ANNOUNCE.call_once(|| {
        println!("  data: GPUPRIM_BENCH_MIXED_MIN={min}: mixed lengths raised to at least {min} (not CUB's data)")
    });
    Ok(min)
}

/// Segment offsets (CSR: every segment's start, then `n`) for `key` at `n`;
/// mixed lengths raised to at least `mixed_min` (0 for the bench's own).
pub(crate) fn segment_offsets(key: DataKey, n: usize, seed: u64, mixed_min: u64) -> Vec<u64> {
    let n = n as u64;
    match key {
        DataKey::Segments(Some(len)) => {
            let segs = n.div_ceil(len.max(1));
            (0..=segs).map(|s| (s * len).min(n)).collect()
        }
        DataKey::RandomSegments(len) => {
            let mut offsets = vec![0u64];
            let (mut at, mut s) = (0u64, 0u64);
            while at < n {
                at = (at + mix64(s ^ seed) % (2 * len + 1)).min(n);
                offsets.push(at);
                s += 1;
            }
            offsets
        }
        _ => {
            let mut offsets = vec![0u64];
            let (mut at, mut s) = (0u64, 0u64);
            while at < n {
                let h = mix64(s ^ seed);
                let e = (h & 255) % 17;
                at = (at + (1 + (h >> 8) % (1u64 << e)).max(mixed_min)).min(n);
                offsets.push(at);
                s += 1;
            }
            offsets
        }
    }
}

/// A data set at one size: host arrays (empty when the set has none) and
/// `copies` device copies of each, which the runs rotate through.
pub(crate) struct DataSet<T: Elem> {
    pub n: usize,
    pub copies: usize,
    pub vals: Vec<T>,
    pub flags: Vec<u8>,
    pub keys: Vec<u64>,
    pub runs: Vec<T>,
    pub offsets: Vec<u64>,
    pub d_vals: Vec<DeviceBuffer<T>>,
    pub d_flags: Vec<DeviceBuffer<u8>>,
    pub d_keys: Vec<DeviceBuffer<u64>>,
    pub d_runs: Vec<DeviceBuffer<T>>,
    pub d_offsets: Vec<DeviceBuffer<u64>>,
}

impl<T: Elem> DataSet<T> {
    /// The host arrays of `key` at 2^`k`, uploaded `copies` times (enough
    /// to exceed the rotation's bytes, at most `uses`).
    pub(crate) fn make(ctx: &Context, key: DataKey, k: u32, uses: usize) -> Res<DataSet<T>> {
        let n = 1usize << k;
        let seed = key.seed(T::TY, k);
        let (mut flags, mut keys, mut runs, mut offsets) = (vec![], vec![], vec![], vec![]);
        let vals = match key {
            DataKey::Values | DataKey::Flags(_) => {
                let vals = par_fill(n, |i| T::from_small((mix64(i as u64 ^ seed) % 2001) as u32));
                if let DataKey::Flags(t) = key {
                    flags = par_fill(n, |i| u8::from(vals[i].to_f64() < f64::from(t)));
                }
                vals
            }
            DataKey::Runs(l) => {
                keys = par_fill(n, |i| {
                    let r = i as u64 / l;
                    (mix64(r ^ seed) & !1) | (r & 1)
                });
                runs = par_fill(n, |i| {
                    let r = i as u64 / l;
                    let h = mix64(r ^ seed ^ 1);
                    T::from_small(if r.is_multiple_of(2) { h % 1000 } else { 1000 + h % 1001 } as u32)
                });
                random_data(n, input_seed(T::TY, k))
            }
            DataKey::Segments(_) | DataKey::RandomSegments(_) => {
                offsets = segment_offsets(key, n, seed, mixed_min()?);
                random_data(n, input_seed(T::TY, k))
            }
        };
        let bytes = (vals.len() + runs.len()) * T::TY.size() + flags.len() + 8 * (keys.len() + offsets.len());
        let copies = rotation(bytes, uses);
        fn up<X: DeviceRepr>(ctx: &Context, host: &[X], copies: usize) -> Res<Vec<DeviceBuffer<X>>> {
            if host.is_empty() {
                return Ok(Vec::new());
            }
            Ok((0..copies).map(|_| ctx.upload(host)).collect::<gpuprim::Result<_>>()?)
        }
        Ok(DataSet {
            n,
            copies,
            d_vals: up(ctx, &vals, copies)?,
            d_flags: up(ctx, &flags, copies)?,
            d_keys: up(ctx, &keys, copies)?,
            d_runs: up(ctx, &runs, copies)?,
            d_offsets: up(ctx, &offsets, copies)?,
            vals,
            flags,
            keys,
            runs,
            offsets,
        })
    }

    /// The digest of the arrays `parts`, in that order (the CUB program
    /// prints the same of its inputs).
    pub(crate) fn digest(&self, parts: &[Part]) -> u64 {
        let d: Vec<u64> = parts
            .iter()
            .map(|p| match p {
                Part::Vals => crate::digest(&self.vals),
                Part::Runs => crate::digest(&self.runs),
                Part::Flags => digest_bits(self.flags.iter().map(|&f| u64::from(f))),
                Part::Keys => digest_bits(self.keys.iter().copied()),
                Part::Offsets => digest_bits(self.offsets.iter().copied()),
            })
            .collect();
        combine_digests(&d)
    }
}

/// Bytes a run must read and write (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Moved {
    pub read: u64,
    pub written: u64,
}

/// A case at one size, its outputs allocated (and poisoned).
pub(crate) trait Prepared {
    /// Queue one run on input copy `copy` (stream-ordered, no host wait).
    fn run(&mut self, ctx: &Context, copy: usize) -> gpuprim::Result<()>;
    /// Compare the last run's outputs with the CPU reference.
    fn check(&mut self, ctx: &Context) -> Result<(), String>;
    /// What a run moves (from the reference's counts).
    fn moved(&self) -> Moved;
}

type PrepareFn = Box<dyn Fn(&Context, &Rc<dyn Any>) -> Res<Box<dyn Prepared>>>;

/// One benchmarked operation on one element type, on its own inputs.
pub(crate) struct DataCase {
    pub group: Group,
    /// `select_if/50%`, `reduce_by_key/run8`, ...: also the CUB twin's name.
    pub name: String,
    /// Whether the CUB program has a twin of this name (`false`: none is
    /// asked for, and the case has no × CUB).
    pub twin: bool,
    pub ty: Ty,
    pub data: DataKey,
    /// The arrays it reads, for the input digest.
    pub reads: &'static [Part],
    /// Outputs and the run at one size, given the `DataSet<T>` of `data`.
    pub prepare: PrepareFn,
}

impl DataCase {
    /// A case of `T` whose `prepare` gets the typed data set.
    pub(crate) fn new<T: Elem, P: Prepared + 'static>(
        group: Group,
        name: impl Into<String>,
        data: DataKey,
        reads: &'static [Part],
        prepare: impl Fn(&Context, Rc<DataSet<T>>) -> Res<P> + 'static,
    ) -> DataCase {
        let name = name.into();
        let what = name.clone();
        DataCase {
            group,
            name,
            twin: true,
            ty: T::TY,
            data,
            reads,
            prepare: Box::new(move |ctx, d| {
                let d = d
                    .clone()
                    .downcast::<DataSet<T>>()
                    .map_err(|_| format!("bench bug: case `{what}` was given another type's data"))?;
                Ok(Box::new(prepare(ctx, d)?) as Box<dyn Prepared>)
            }),
        }
    }

    /// The same case without a CUB twin.
    pub(crate) fn without_twin(self) -> DataCase {
        DataCase { twin: false, ..self }
    }
}

/// Device memory poisoned (all bits set) so that a kernel that writes
/// nothing cannot pass.
pub(crate) fn poisoned<X: DeviceRepr>(ctx: &Context, len: usize) -> gpuprim::Result<DeviceBuffer<X>> {
    let mut b = ctx.alloc::<X>(len.max(1))?;
    b.poison()?;
    Ok(b)
}

/// The first `len` elements of `b` on the host.
pub(crate) fn download<X: DeviceRepr + Default + Clone>(b: &DeviceBuffer<X>, len: usize) -> Result<Vec<X>, String> {
    let mut v = vec![X::default(); len];
    b.copy_to_host_at(0, &mut v).map_err(|e| format!("reading the result: {e}"))?;
    Ok(v)
}

/// `Err` naming the first index where `got` and `want` differ in bits.
pub(crate) fn same_bits<X: Copy + std::fmt::Debug>(
    what: &str,
    got: &[X],
    want: &[X],
    bits: impl Fn(X) -> u64,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, want {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(&g, &w)| bits(g) != bits(w)) {
        None => Ok(()),
        Some(i) => Err(format!("{what}[{i}] is {:?}, want {:?}", got[i], want[i])),
    }
}
