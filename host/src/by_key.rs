//! By-key and segmented operations: reduce-by-key, scans by key,
//! run-length encoding, non-trivial runs and segmented scans.
//!
//! A *run* is a maximal stretch of equal consecutive keys; a scan *by key*
//! restarts at every run, a *segmented* scan at every start listed in CSR
//! offsets. Each is one launch: a single pass with the decoupled
//! look-back over `(count, value)` pairs (see `gpuprim_kernels::by_key`).
//!
//! ```
//! use gpuprim::scan::{Max, Sum};
//! # fn main() -> gpuprim::Result<()> {
//! let ctx = gpuprim::Context::new()?;
//! let keys = ctx.upload(&[7u64, 7, 3, 3, 3, 9])?;
//! let values = ctx.upload(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
//! let (mut unique, mut sums) = (ctx.alloc::<u64>(6)?, ctx.alloc::<f32>(6)?);
//! let runs = ctx.reduce_by_key(&keys, &values, &mut unique, &mut sums, Sum)?;
//! assert_eq!(runs, 3);
//! assert_eq!(unique.to_vec()?[..runs], [7, 3, 9]);
//! assert_eq!(sums.to_vec()?[..runs], [3.0, 12.0, 6.0]);
//!
//! let mut scanned = ctx.alloc::<f32>(6)?;
//! ctx.inclusive_scan_by_key(&keys, &values, &mut scanned, Max)?;
//! assert_eq!(scanned.to_vec()?, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
//! ctx.exclusive_scan_by_key(&keys, &values, &mut scanned, 10.0, Sum)?;
//! assert_eq!(scanned.to_vec()?, [10.0, 11.0, 10.0, 13.0, 17.0, 10.0]);
//!
//! let (mut items, mut lengths) = (ctx.alloc::<u64>(6)?, ctx.alloc::<u32>(6)?);
//! let runs = ctx.run_length_encode(&keys, &mut items, &mut lengths)?;
//! assert_eq!((&items.to_vec()?[..runs], &lengths.to_vec()?[..runs]), (&[7, 3, 9][..], &[2, 3, 1][..]));
//!
//! // Segments [0, 2), [2, 2) (empty), [2, 5), [5, 6).
//! let offsets = ctx.upload(&[0u64, 2, 2, 5, 6])?;
//! ctx.inclusive_segmented_scan(&values, &offsets, &mut scanned, Sum)?;
//! assert_eq!(scanned.to_vec()?, [1.0, 3.0, 3.0, 7.0, 12.0, 6.0]);
//! # Ok(()) }
//! ```
//!
//! **Outputs per run.** The number of runs is known only on the device,
//! so `unique`, `aggregates`, `counts`, `offsets` and `lengths` may be any
//! length: runs beyond the shorter of the two are not written. The calls
//! that return the count fail with [`Error::LengthMismatch`] (after
//! writing what fits) when there were more runs than room; an output as
//! long as the input always has room. The `_into` forms of [`ByKey`]
//! leave the count on the device (stream-ordered, no wait) and do not
//! check it.
//!
//! **Operators and types.** [`Sum`](crate::scan::Sum),
//! [`Min`](crate::scan::Min), [`Max`](crate::scan::Max) with keys `u32`,
//! `u64`, `i32`, `i64` and values `i32`, `u32`, `f32`, `i64`, `u64`, `f64`;
//! run-length encoding of those six types with [`RunCount`]s `u32` or
//! `u64`; segmented scans of the six value types. Other combinations are
//! an [`Error::Unsupported`]. Keys compare with `==`: a NaN key is a run of
//! its own, `-0.0` and `0.0` are one run.
//!
//! **Order and floats.** Values combine in input order within a run
//! (`combine(earlier, later)`); across tiles a run's partial results meet
//! in the look-back, whose grouping depends on timing, so float sums may
//! differ in the last bits between runs of the program, as with the
//! look-back scan. Integers wrap.
//!
//! **Streams and storage.** Every call is one launch on the context's
//! stream with its tile status in the stream's double-buffered status
//! storage (shared with the scans), or in a [`ByKeyTemp`] the caller made
//! with [`ByKey::temp`].

use crate::buffer::{DeviceBuffer, DeviceInput, DeviceOutput, DeviceSliceMut, Scalar};
use crate::context::{Context, LaunchConfig};
use crate::error::{Error, Result};
use crate::kernel::{Family, Instance};
use crate::scan::ScanOp;
use crate::single_pass::{Halves, Region};
use gpuprim_kernels::by_key::{NO_POSITIONS, TILE_POSITIONS, WARP_POSITIONS, policy, smem_bytes};
use gpuprim_kernels::single_pass::{status_bytes, to_words};
use gpuprim_kernels::{Arg, HostKernel};

/// Threads per block of the by-key kernels unless [`ByKey::block_size`]
/// says otherwise (the only size they are all instantiated at).
pub const DEFAULT_BLOCK: u32 = policy::BLOCK;
/// Largest grid a launch may have.
const MAX_GRID: u64 = i32::MAX as u64;
/// The kernel that clears status storage of unknown history.
const CLEAR: &str = "scan_clear";

/// The types run lengths and offsets are counted in: `u32` (half the
/// output traffic; inputs longer than `u32::MAX` are refused with
/// [`Error::TooLarge`], so no count wraps) or `u64`.
pub trait RunCount: Scalar + sealed::Sealed {
    /// The largest input length whose runs this type can count.
    const MAX_LEN: u64;
}
impl RunCount for u32 {
    const MAX_LEN: u64 = u32::MAX as u64;
}
impl RunCount for u64 {
    const MAX_LEN: u64 = u64::MAX;
}
mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// Reusable temporary storage of the by-key operations: the tile status
/// of a single pass, double-buffered (each launch zeroes the other half
/// for the next), zeroed when made. Sized by [`ByKey::temp`] for an input
/// length; serves any shorter input and every operation and type. Used
/// from two streams, the second must wait for the first
/// ([`Context::record_event`], [`Context::wait_event`]).
pub struct ByKeyTemp {
    buf: DeviceBuffer<u8>,
    halves: Halves,
}

impl ByKeyTemp {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }
}

/// Options of the by-key operations: block size and temporary storage;
/// see the [module docs](self).
#[derive(Clone, Debug)]
pub struct ByKey<'c> {
    ctx: &'c Context,
    block: u32,
}

impl Context {
    /// The by-key operations with options ([`ByKey`]).
    pub fn by_key(&self) -> ByKey<'_> {
        ByKey { ctx: self, block: DEFAULT_BLOCK }
    }

    /// One (key, combine of its values) per run of equal consecutive keys;
    /// returns the number of runs. Waits for the count.
    pub fn reduce_by_key<K: Scalar, V: Scalar, Op: ScanOp<V>>(
        &self,
        keys: &impl DeviceInput<K>,
        values: &impl DeviceInput<V>,
        unique_keys: &mut impl DeviceOutput<K>,
        aggregates: &mut impl DeviceOutput<V>,
        op: Op,
    ) -> Result<usize> {
        self.by_key().reduce_by_key(keys, values, unique_keys, aggregates, op)
    }

    /// Inclusive scan of `values` restarting at every new run of equal keys.
    pub fn inclusive_scan_by_key<K: Scalar, V: Scalar, Op: ScanOp<V>>(
        &self,
        keys: &impl DeviceInput<K>,
        values: &impl DeviceInput<V>,
        output: &mut impl DeviceOutput<V>,
        op: Op,
    ) -> Result<()> {
        self.by_key().inclusive_scan_by_key(keys, values, output, op, None)
    }

    /// Exclusive scan by key: `init` at the head of every run, `init .
    /// values[head] . ... . values[i-1]` after it.
    pub fn exclusive_scan_by_key<K: Scalar, V: Scalar, Op: ScanOp<V>>(
        &self,
        keys: &impl DeviceInput<K>,
        values: &impl DeviceInput<V>,
        output: &mut impl DeviceOutput<V>,
        init: V,
        op: Op,
    ) -> Result<()> {
        self.by_key().exclusive_scan_by_key(keys, values, output, init, op, None)
    }

    /// Run-length encoding: the value and length of every run; returns the
    /// number of runs. Waits for the count.
    pub fn run_length_encode<T: Scalar, C: RunCount>(
        &self,
        input: &impl DeviceInput<T>,
        unique: &mut impl DeviceOutput<T>,
        counts: &mut impl DeviceOutput<C>,
    ) -> Result<usize> {
        self.by_key().run_length_encode(input, unique, counts)
    }

    /// Offset and length of every run longer than 1; returns how many.
    /// Waits for the count.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[4i32, 5, 5, 6, 7, 7, 7])?;
    /// let (mut offsets, mut lengths) = (ctx.alloc::<u32>(7)?, ctx.alloc::<u32>(7)?);
    /// let runs = ctx.non_trivial_runs(&x, &mut offsets, &mut lengths)?;
    /// assert_eq!((&offsets.to_vec()?[..runs], &lengths.to_vec()?[..runs]), (&[1, 4][..], &[2, 3][..]));
    /// # Ok(()) }
    /// ```
    pub fn non_trivial_runs<T: Scalar, C: RunCount>(
        &self,
        input: &impl DeviceInput<T>,
        offsets: &mut impl DeviceOutput<C>,
        lengths: &mut impl DeviceOutput<C>,
    ) -> Result<usize> {
        self.by_key().non_trivial_runs(input, offsets, lengths)
    }

    /// Inclusive scan restarting at every segment start; `offsets` holds
    /// the segments' starts and then n (CSR, non-decreasing). Item 0
    /// always starts a segment; offsets at n or beyond start nothing.
    /// Offsets that decrease give unspecified results (no fault).
    pub fn inclusive_segmented_scan<T: Scalar, Op: ScanOp<T>>(
        &self,
        input: &impl DeviceInput<T>,
        offsets: &impl DeviceInput<u64>,
        output: &mut impl DeviceOutput<T>,
        op: Op,
    ) -> Result<()> {
        self.by_key().inclusive_segmented_scan(input, offsets, output, op, None)
    }

    /// Exclusive segmented scan: `init` at every segment start; see
    /// [`Context::inclusive_segmented_scan`].
    pub fn exclusive_segmented_scan<T: Scalar, Op: ScanOp<T>>(
        &self,
        input: &impl DeviceInput<T>,
        offsets: &impl DeviceInput<u64>,
        output: &mut impl DeviceOutput<T>,
        init: T,
        op: Op,
    ) -> Result<()> {
        self.by_key().exclusive_segmented_scan(input, offsets, output, init, op, None)
    }
}

/// Which by-key kernel, with its family name and shared memory.
struct Launch {
    kernel: &'static HostKernel,
    smem: usize,
    /// Elements one block covers.
    tile: u64,
}

impl<'c> ByKey<'c> {
    /// Use blocks of `block` threads. Every kernel exists at
    /// [`DEFAULT_BLOCK`]; a size without a kernel for the operation is
    /// reported by the call as [`Error::UnsupportedBlockSize`], with the
    /// sizes there are.
    pub fn block_size(mut self, block: u32) -> Self {
        self.block = block;
        self
    }

    /// The block size calls will use.
    pub fn chosen_block_size(&self) -> u32 {
        self.block
    }

    /// Elements one block of the scans by key covers for keys `K` and
    /// values `V` (for the segmented scans, `K` is `u32`). Items per
    /// thread follow the bytes an item takes ([`policy::items`]): 16 for
    /// 4 + 4 bytes, 14 for 8-byte keys with 4-byte values, 12 for 4 + 8,
    /// 8 for 8 + 8. `reduce_by_key` and the run kernels have tiles of
    /// their own: [`ByKey::reduce_tile_len`],
    /// [`ByKey::run_length_tile_len`], [`ByKey::non_trivial_tile_len`].
    ///
    /// ```
    /// let ctx = gpuprim::Context::emulator();
    /// let by = ctx.by_key();
    /// assert_eq!(by.tile_len::<u32, i32>(), 16 * by.chosen_block_size() as u64);
    /// assert_eq!(by.tile_len::<u64, i32>(), 14 * by.chosen_block_size() as u64);
    /// assert_eq!(by.tile_len::<u32, f64>(), 12 * by.chosen_block_size() as u64);
    /// assert_eq!(by.tile_len::<u64, f64>(), 8 * by.chosen_block_size() as u64);
    /// ```
    pub fn tile_len<K: Scalar, V: Scalar>(&self) -> u64 {
        policy::tile_len(self.block, policy::items::<K, V>())
    }

    /// Elements one block of `reduce_by_key` covers for keys `K` and
    /// values `V` ([`policy::reduce_items`]): as [`ByKey::tile_len`], but
    /// 16 items a thread for 8-byte keys with 4-byte values.
    ///
    /// ```
    /// let ctx = gpuprim::Context::emulator();
    /// let by = ctx.by_key();
    /// assert_eq!(by.reduce_tile_len::<u32, i32>(), 16 * by.chosen_block_size() as u64);
    /// assert_eq!(by.reduce_tile_len::<u64, f32>(), 16 * by.chosen_block_size() as u64);
    /// assert_eq!(by.reduce_tile_len::<u64, f64>(), 8 * by.chosen_block_size() as u64);
    /// ```
    pub fn reduce_tile_len<K: Scalar, V: Scalar>(&self) -> u64 {
        policy::tile_len(self.block, policy::reduce_items::<K, V>())
    }

    /// Elements one block of `run_length_encode` covers for items `T`
    /// (the count type does not matter): 112 bytes of items a thread.
    ///
    /// ```
    /// let ctx = gpuprim::Context::emulator();
    /// let by = ctx.by_key();
    /// assert_eq!(by.run_length_tile_len::<i32>(), 28 * by.chosen_block_size() as u64);
    /// assert_eq!(by.run_length_tile_len::<f64>(), 14 * by.chosen_block_size() as u64);
    /// ```
    pub fn run_length_tile_len<T: Scalar>(&self) -> u64 {
        policy::tile_len(self.block, policy::rle_items::<T>())
    }

    /// Elements one block of `non_trivial_runs` covers for items `T`:
    /// 112 bytes of items a thread.
    ///
    /// ```
    /// let ctx = gpuprim::Context::emulator();
    /// let by = ctx.by_key();
    /// assert_eq!(by.non_trivial_tile_len::<i32>(), 28 * by.chosen_block_size() as u64);
    /// assert_eq!(by.non_trivial_tile_len::<u64>(), 14 * by.chosen_block_size() as u64);
    /// ```
    pub fn non_trivial_tile_len<T: Scalar>(&self) -> u64 {
        policy::tile_len(self.block, policy::ntr_items::<T>())
    }

    /// Bytes of temporary storage for inputs of up to `len` elements (any
    /// operation and type): two halves of tile status.
    pub fn temp_bytes(&self, len: usize) -> Result<usize> {
        check_block(self.block)?;
        if len == 0 {
            return Ok(0);
        }
        let half = status_half(len as u64, policy::tile_len(self.block, policy::MIN_ITEMS));
        usize::try_from(2 * half).map_err(|_| Error::TooLarge {
            what: "by-key temporary storage",
            len: len as u64,
            max: usize::MAX as u64,
        })
    }

    /// Temporary storage for inputs of up to `len` elements, zeroed.
    pub fn temp(&self, len: usize) -> Result<ByKeyTemp> {
        let bytes = self.temp_bytes(len)?;
        let buf = self.ctx.alloc::<u8>(bytes)?;
        self.ctx.fill_bytes(buf.addr(), 0, bytes)?;
        Ok(ByKeyTemp { buf, halves: Halves::zeroed() })
    }

    /// [`Context::reduce_by_key`] with this block size.
    pub fn reduce_by_key<K: Scalar, V: Scalar, Op: ScanOp<V>>(
        &self,
        keys: &impl DeviceInput<K>,
        values: &impl DeviceInput<V>,
        unique_keys: &mut impl DeviceOutput<K>,
        aggregates: &mut impl DeviceOutput<V>,
        op: Op,
    ) -> Result<usize> {
        self.counted("reduce_by_key outputs (one per run)", |mut count| {
            self.reduce_by_key_impl(keys, values, unique_keys, aggregates, &mut count, op, None)
        })
    }

    /// Reduce-by-key leaving the number of runs in `count[0]` on the
    /// device: stream-ordered, no wait. Runs beyond the shorter output are
    /// counted but not written.
    ///
    /// ```
    /// use gpuprim::scan::Min;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let by_key = ctx.by_key();
    /// let mut temp = by_key.temp(1000)?;
    /// let keys = ctx.upload(&(0..1000).map(|i| i / 10).collect::<Vec<u32>>())?;
    /// let values = ctx.upload(&(0..1000).map(|i| 1000 - i).collect::<Vec<i64>>())?;
    /// let (mut unique, mut mins, mut count) = (ctx.alloc::<u32>(1000)?, ctx.alloc::<i64>(1000)?, ctx.alloc::<u64>(1)?);
    /// by_key.reduce_by_key_into(&keys, &values, &mut unique, &mut mins, &mut count, Min, Some(&mut temp))?;
    /// assert_eq!(count.to_vec()?, [100]);
    /// assert_eq!(mins.to_vec()?[..3], [991, 981, 971]);
    /// # Ok(()) }
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_by_key_into<K: Scalar, V: Scalar, Op: ScanOp<V>>(
        &self,
        keys: &impl DeviceInput<K>,
        values: &impl DeviceInput<V>,
        unique_keys: &mut impl DeviceOutput<K>,
        aggregates: &mut impl DeviceOutput<V>,
        count: &mut impl DeviceOutput<u64>,
        op: Op,
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<()> {
        self.reduce_by_key_impl(keys, values, unique_keys, aggregates, count, op, temp).map(|_| ())
    }

    /// [`Context::run_length_encode`] with this block size.
    pub fn run_length_encode<T: Scalar, C: RunCount>(
        &self,
        input: &impl DeviceInput<T>,
        unique: &mut impl DeviceOutput<T>,
        counts: &mut impl DeviceOutput<C>,
    ) -> Result<usize> {
        self.counted("run_length_encode outputs (one per run)", |mut count| {
            self.runs_impl::<T, C, T>("run_length_encode", input, unique, counts, &mut count, None)
        })
    }

    /// Run-length encoding leaving the number of runs in `count[0]` on the
    /// device.
    pub fn run_length_encode_into<T: Scalar, C: RunCount>(
        &self,
        input: &impl DeviceInput<T>,
        unique: &mut impl DeviceOutput<T>,
        counts: &mut impl DeviceOutput<C>,
        count: &mut impl DeviceOutput<u64>,
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<()> {
        self.runs_impl::<T, C, T>("run_length_encode", input, unique, counts, count, temp).map(|_| ())
    }

    /// [`Context::non_trivial_runs`] with this block size.
    pub fn non_trivial_runs<T: Scalar, C: RunCount>(
        &self,
        input: &impl DeviceInput<T>,
        offsets: &mut impl DeviceOutput<C>,
        lengths: &mut impl DeviceOutput<C>,
    ) -> Result<usize> {
        self.counted("non_trivial_runs outputs (one per run longer than 1)", |mut count| {
            self.runs_impl::<T, C, C>("non_trivial_runs", input, offsets, lengths, &mut count, None)
        })
    }

    /// Non-trivial runs leaving their number in `count[0]` on the device.
    pub fn non_trivial_runs_into<T: Scalar, C: RunCount>(
        &self,
        input: &impl DeviceInput<T>,
        offsets: &mut impl DeviceOutput<C>,
        lengths: &mut impl DeviceOutput<C>,
        count: &mut impl DeviceOutput<u64>,
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<()> {
        self.runs_impl::<T, C, C>("non_trivial_runs", input, offsets, lengths, count, temp).map(|_| ())
    }

    /// [`Context::inclusive_scan_by_key`] with this block size and
    /// optional temporary storage.
    pub fn inclusive_scan_by_key<K: Scalar, V: Scalar, Op: ScanOp<V>>(
        &self,
        keys: &impl DeviceInput<K>,
        values: &impl DeviceInput<V>,
        output: &mut impl DeviceOutput<V>,
        op: Op,
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<()> {
        let _ = op;
        self.scan_by_key_impl::<K, V, Op>(keys, values, output, Op::identity(), false, temp)
    }

    /// [`Context::exclusive_scan_by_key`] with this block size and
    /// optional temporary storage.
    pub fn exclusive_scan_by_key<K: Scalar, V: Scalar, Op: ScanOp<V>>(
        &self,
        keys: &impl DeviceInput<K>,
        values: &impl DeviceInput<V>,
        output: &mut impl DeviceOutput<V>,
        init: V,
        op: Op,
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<()> {
        let _ = op;
        self.scan_by_key_impl::<K, V, Op>(keys, values, output, init, true, temp)
    }

    /// [`Context::inclusive_segmented_scan`] with this block size and
    /// optional temporary storage.
    pub fn inclusive_segmented_scan<T: Scalar, Op: ScanOp<T>>(
        &self,
        input: &impl DeviceInput<T>,
        offsets: &impl DeviceInput<u64>,
        output: &mut impl DeviceOutput<T>,
        op: Op,
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<()> {
        let _ = op;
        self.segmented_impl::<T, Op>(input, offsets, output, Op::identity(), false, temp)
    }

    /// [`Context::exclusive_segmented_scan`] with this block size and
    /// optional temporary storage.
    pub fn exclusive_segmented_scan<T: Scalar, Op: ScanOp<T>>(
        &self,
        input: &impl DeviceInput<T>,
        offsets: &impl DeviceInput<u64>,
        output: &mut impl DeviceOutput<T>,
        init: T,
        op: Op,
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<()> {
        let _ = op;
        self.segmented_impl::<T, Op>(input, offsets, output, init, true, temp)
    }

    // ------------------------------------------------------------ plans

    /// The kernel of `family` for `what` at this block size.
    fn kernel(&self, family: &'static str, what: Instance, smem: usize, items: usize) -> Result<Launch> {
        check_block(self.block)?;
        let task = || {
            let key = if what.key.is_empty() { String::new() } else { format!(" with `{}` keys", what.key) };
            format!("{family} with operator `{}` on `{}`{key}", what.op, what.ty)
        };
        let kernel = Family(family).get(self.ctx, what, self.block, task)?;
        Ok(Launch { kernel, smem, tile: policy::tile_len(self.block, items) })
    }

    /// Run `f`, which queues work writing the run count into the view it
    /// gets and returns the room the outputs had; wait for the count and
    /// check it against that room.
    fn counted(&self, what: &'static str, mut f: impl FnMut(DeviceSliceMut<'_, u64>) -> Result<u64>) -> Result<usize> {
        let mut cap = 0;
        let got = self.ctx.read_back::<u64>(|out| {
            cap = f(out)?;
            Ok(())
        })?;
        let runs = match got {
            Some(runs) => runs,
            None => {
                let mut buf = self.ctx.alloc::<u64>(1)?;
                cap = f(buf.as_slice_mut())?;
                let mut v = [0u64];
                buf.copy_to_host(&mut v)?;
                v[0]
            }
        };
        if runs > cap {
            return Err(Error::LengthMismatch { what, expected: runs as usize, got: cap as usize });
        }
        Ok(runs as usize)
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce_by_key_impl<K: Scalar, V: Scalar, Op: ScanOp<V>>(
        &self,
        keys: &(impl DeviceInput<K> + ?Sized),
        values: &(impl DeviceInput<V> + ?Sized),
        unique_keys: &mut (impl DeviceOutput<K> + ?Sized),
        aggregates: &mut (impl DeviceOutput<V> + ?Sized),
        count: &mut (impl DeviceOutput<u64> + ?Sized),
        _op: Op,
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<u64> {
        let (keys, values) = (keys.input(self.ctx)?, values.input(self.ctx)?);
        let (out1, out2, count) =
            (unique_keys.output(self.ctx)?, aggregates.output(self.ctx)?, count.output(self.ctx)?);
        let n = keys.view.len();
        check_len("reduce_by_key values", n, values.view.len())?;
        check_count(&count.view)?;
        let cap = out1.view.len().min(out2.view.len()) as u64;
        let what = Instance::of(V::NAME).op(Op::NAME).key(K::NAME);
        let items = policy::reduce_items::<K, V>();
        let launch =
            self.kernel("reduce_by_key", what, smem_bytes::<K, K, V, V>(self.block, items, WARP_POSITIONS), items)?;
        let (k, v, u, a, c) = (keys.view.arg(), values.view.arg(), out1.view.arg(), out2.view.arg(), count.view.arg());
        self.run(&launch, n as u64, Some(count.view.addr()), temp, |r| {
            vec![k, v, u, a, c, (n as u64).into(), cap.into(), Arg::Ptr(r.temp), Arg::Ptr(r.spare), spare_words(&r)]
        })?;
        Ok(cap)
    }

    /// Run-length encoding (`family` `run_length_encode`, `O1 = T`) or the
    /// non-trivial runs (`non_trivial_runs`, `O1 = C`).
    fn runs_impl<T: Scalar, C: RunCount, O1: Scalar>(
        &self,
        family: &'static str,
        input: &(impl DeviceInput<T> + ?Sized),
        out1: &mut (impl DeviceOutput<O1> + ?Sized),
        out2: &mut (impl DeviceOutput<C> + ?Sized),
        count: &mut (impl DeviceOutput<u64> + ?Sized),
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<u64> {
        let input = input.input(self.ctx)?;
        let (out1, out2, count) = (out1.output(self.ctx)?, out2.output(self.ctx)?, count.output(self.ctx)?);
        let n = input.view.len();
        check_count(&count.view)?;
        if n as u64 > C::MAX_LEN {
            return Err(Error::TooLarge {
                what: "input of run lengths counted in u32",
                len: n as u64,
                max: C::MAX_LEN,
            });
        }
        let cap = out1.view.len().min(out2.view.len()) as u64;
        // Run lengths are sums of ones: the kernels carry the `sum` name.
        let what = Instance::of(C::NAME).op("sum").key(T::NAME);
        let items = if family == "run_length_encode" { policy::rle_items::<T>() } else { policy::ntr_items::<T>() };
        let smem = smem_bytes::<T, T, (), ()>(self.block, items, TILE_POSITIONS);
        let launch = self.kernel(family, what, smem, items)?;
        let (x, a, b, c) = (input.view.arg(), out1.view.arg(), out2.view.arg(), count.view.arg());
        self.run(&launch, n as u64, Some(count.view.addr()), temp, |r| {
            vec![x, a, b, c, (n as u64).into(), cap.into(), Arg::Ptr(r.temp), Arg::Ptr(r.spare), spare_words(&r)]
        })?;
        Ok(cap)
    }

    fn scan_by_key_impl<K: Scalar, V: Scalar, Op: ScanOp<V>>(
        &self,
        keys: &(impl DeviceInput<K> + ?Sized),
        values: &(impl DeviceInput<V> + ?Sized),
        output: &mut (impl DeviceOutput<V> + ?Sized),
        init: V,
        exclusive: bool,
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<()> {
        let (keys, values, output) = (keys.input(self.ctx)?, values.input(self.ctx)?, output.output(self.ctx)?);
        let n = keys.view.len();
        check_len("scan_by_key values", n, values.view.len())?;
        check_len("scan_by_key output", n, output.view.len())?;
        let what = Instance::of(V::NAME).op(Op::NAME).key(K::NAME);
        let items = policy::items::<K, V>();
        let launch =
            self.kernel("scan_by_key", what, smem_bytes::<K, K, V, V>(self.block, items, NO_POSITIONS), items)?;
        let (k, v, o) = (keys.view.arg(), values.view.arg(), output.view.arg());
        let init = to_words(init)[0];
        self.run(&launch, n as u64, None, temp, |r| {
            vec![
                k,
                v,
                o,
                (n as u64).into(),
                init.into(),
                (exclusive as u32).into(),
                Arg::Ptr(r.temp),
                Arg::Ptr(r.spare),
                spare_words(&r),
            ]
        })
    }

    fn segmented_impl<T: Scalar, Op: ScanOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        offsets: &(impl DeviceInput<u64> + ?Sized),
        output: &mut (impl DeviceOutput<T> + ?Sized),
        init: T,
        exclusive: bool,
        temp: Option<&mut ByKeyTemp>,
    ) -> Result<()> {
        let (input, offsets, output) = (input.input(self.ctx)?, offsets.input(self.ctx)?, output.output(self.ctx)?);
        let n = input.view.len();
        check_len("segmented scan output", n, output.view.len())?;
        let what = Instance::of(T::NAME).op(Op::NAME);
        let items = policy::segmented_items::<T>();
        let launch =
            self.kernel("segmented_scan", what, smem_bytes::<u32, u32, T, T>(self.block, items, NO_POSITIONS), items)?;
        let (x, offs, m, o) = (input.view.arg(), offsets.view.arg(), offsets.view.len() as u64, output.view.arg());
        let init = to_words(init)[0];
        self.run(&launch, n as u64, None, temp, |r| {
            vec![
                x,
                offs,
                m.into(),
                o,
                (n as u64).into(),
                init.into(),
                (exclusive as u32).into(),
                Arg::Ptr(r.temp),
                Arg::Ptr(r.spare),
                spare_words(&r),
            ]
        })
    }

    /// The single-pass launch over `n` items, its status in `temp` or in
    /// the stream's storage; for `n == 0` nothing but `count[0] = 0`.
    fn run(
        &self,
        launch: &Launch,
        n: u64,
        count: Option<u64>,
        temp: Option<&mut ByKeyTemp>,
        args: impl Fn(Region) -> Vec<Arg>,
    ) -> Result<()> {
        if let Some(t) = &temp {
            self.ctx.check_domain(t.buf.context().domain(), "by-key temporary storage")?;
        }
        let tile = launch.tile;
        let tiles = n.div_ceil(tile);
        if tiles > MAX_GRID {
            return Err(Error::TooLarge { what: "by-key input (one block per tile)", len: n, max: MAX_GRID * tile });
        }
        let half = status_half(n, tile);
        if let Some(t) = &temp
            && (t.bytes() / 2) & !15 < half as usize
        {
            return Err(Error::LengthMismatch {
                what: "by-key temporary storage (bytes)",
                expected: 2 * half as usize,
                got: t.bytes(),
            });
        }
        if n == 0 {
            return match count {
                Some(c) => self.ctx.set_first_at::<u64>(c, 0),
                None => Ok(()),
            };
        }
        let go = |region: Region| {
            if region.clear_first > 0 {
                let words = region.clear_first.div_ceil(8) as u64;
                let grid = words.div_ceil(256).clamp(1, self.ctx.multiprocessors() as u64 * 4) as u32;
                let clear = Family(CLEAR).get(self.ctx, Instance::of(""), 256, || "clearing status".into())?;
                // SAFETY: the status region holds `clear_first` bytes,
                // rounded up to whole words inside 16-byte-aligned storage.
                unsafe {
                    self.ctx.launch(
                        clear.name,
                        LaunchConfig { grid, block: 256, shared_bytes: 0 },
                        &[Arg::Ptr(region.temp), words.into()],
                    )?
                };
            }
            let cfg = LaunchConfig { grid: tiles as u32, block: self.block, shared_bytes: launch.smem as u32 };
            // SAFETY: the views were resolved and their lengths checked by
            // the caller (n items in, outputs of `cap` or n); the status
            // holds `tiles` tiles, zeroed (above or by the previous launch
            // on this storage); `spare` is the other half; one block per
            // tile.
            unsafe { self.ctx.launch(launch.kernel.name, cfg, &args(region)) }
        };
        match temp {
            Some(t) => {
                let half_bytes = (t.bytes() / 2) & !15;
                t.halves.run(t.buf.addr(), half_bytes, half as usize, go)
            }
            None => self.ctx.with_status(half as usize, go),
        }
    }
}

/// Bytes of one half of the status storage for `n` items in tiles of
/// `tile`.
fn status_half(n: u64, tile: u64) -> u64 {
    round16(status_bytes::<[u64; 2]>(n.div_ceil(tile)))
}

fn spare_words(r: &Region) -> Arg {
    (r.spare_bytes as u64 / 8).into()
}

fn check_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got { Ok(()) } else { Err(Error::LengthMismatch { what, expected, got }) }
}

fn check_count(count: &DeviceSliceMut<'_, u64>) -> Result<()> {
    check_len("run count output", 1, count.len().min(1))
}

fn check_block(block: u32) -> Result<()> {
    if block.is_power_of_two() && (32..=1024).contains(&block) {
        Ok(())
    } else {
        Err(Error::UnsupportedBlockSize { block, reason: "must be a power of two in 32..=1024".into() })
    }
}

fn round16(b: u64) -> u64 {
    b.div_ceil(16) * 16
}
