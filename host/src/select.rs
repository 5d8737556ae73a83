//! Stream compaction: select, partition and unique.
//!
//! * [`Context::select_if`] copies the items for which a [`Predicate`]
//!   holds, in order; [`Context::select_flagged`] those whose flag byte is
//!   not zero.
//! * [`Context::partition`] writes the selected items first, in order, and
//!   then the rejected ones **in reverse input order** (as CUB's
//!   `DevicePartition`): the rejected item with the `r`-th smallest index
//!   (from 0) lands at `output[n - 1 - r]`.
//! * [`Context::partition_three_way`] sends the items satisfying a first
//!   predicate to one output, the others satisfying a second predicate to
//!   another and the rest to a third, each in input order.
//! * [`Context::unique`] keeps the first item of every run of equal
//!   consecutive items; [`Context::unique_by_key`] the first (key, value)
//!   of every run of equal consecutive keys.
//!
//! ```
//! use gpuprim::select::Predicate;
//! # fn main() -> gpuprim::Result<()> {
//! let ctx = gpuprim::Context::new()?;
//! let x = ctx.upload(&[5i32, 1, 8, 3, 9, 2])?;
//! let mut out = ctx.alloc::<i32>(6)?;
//! let n = ctx.select_if(&x, &mut out, Predicate::Greater(2))?;
//! assert_eq!(&out.to_vec()?[..n], [5, 8, 3, 9]);
//! // Partition: the selected in order, then the rejected in reverse order.
//! let n = ctx.partition(&x, &mut out, Predicate::Greater(2))?;
//! assert_eq!(n, 4);
//! assert_eq!(out.to_vec()?, [5, 8, 3, 9, 2, 1]);
//! let runs = ctx.upload(&[1u32, 1, 2, 2, 2, 1, 3, 3])?;
//! let mut firsts = ctx.alloc::<u32>(8)?;
//! let n = ctx.unique(&runs, &mut firsts)?;
//! assert_eq!(&firsts.to_vec()?[..n], [1, 2, 1, 3]);
//! # Ok(()) }
//! ```
//!
//! **Outputs** must hold at least as many items as the input (the kernel
//! cannot know the count in advance); only the first `count` are written
//! (all `n` for [`Context::partition`]), the rest are left as they were.
//! A shorter output is an [`Error::LengthMismatch`].
//!
//! **Stream order.** The one-liners return the count, so they wait for the
//! device. [`Context::select`] returns a [`Select`] builder whose `_into`
//! forms leave the count in device memory (a `u64`; two for the three-way
//! partition), allocate nothing with a [`SelectTemp`], and do not wait.
//!
//! **Floats** compare as IEEE numbers: a NaN satisfies only
//! [`Predicate::NotEqual`], and it never equals the item before it, so in
//! [`Context::unique`] every NaN starts a run of its own; `-0.0` and `0.0`
//! are equal (the first of them is kept).
//!
//! **Types:** `i32`, `u32`, `i64`, `u64`, `f32`, `f64`; the keys of
//! [`Context::unique_by_key`] `u32`, `u64` or `i64`, with any of those
//! value types. Each call is one launch of a single-pass kernel with
//! decoupled look-back (see `gpuprim_kernels::select`).

use crate::buffer::{DeviceBuffer, DeviceInput, DeviceOutput, DeviceRepr, DeviceSliceMut, Scalar};
use crate::context::{Context, LaunchConfig};
use crate::error::{Error, Result};
use crate::kernel::{Family, Instance};
use crate::single_pass::{Halves, Region};
use gpuprim_kernels::select::{self as k, policy};
use gpuprim_kernels::single_pass::to_words;
use gpuprim_kernels::{Arg, HostKernel};

/// Largest grid a launch may have (one block per tile).
const MAX_GRID: u64 = i32::MAX as u64;

/// A built-in comparison of each item `x` with a value: `Less(t)` holds
/// where `x < t`, and so on. Floats compare as IEEE numbers (see the
/// [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Predicate<T> {
    /// `x < t`.
    Less(T),
    /// `x <= t`.
    LessEqual(T),
    /// `x > t`.
    Greater(T),
    /// `x >= t`.
    GreaterEqual(T),
    /// `x == t`.
    Equal(T),
    /// `x != t`.
    NotEqual(T),
}

impl<T: Copy + PartialOrd> Predicate<T> {
    /// Whether the predicate holds for `x` (what the kernels compute).
    pub fn holds(&self, x: T) -> bool {
        match *self {
            Predicate::Less(t) => x < t,
            Predicate::LessEqual(t) => x <= t,
            Predicate::Greater(t) => x > t,
            Predicate::GreaterEqual(t) => x >= t,
            Predicate::Equal(t) => x == t,
            Predicate::NotEqual(t) => x != t,
        }
    }

    /// The kernels' comparison code and the value it compares with.
    fn code(&self) -> (u32, T) {
        match *self {
            Predicate::Less(t) => (k::LESS, t),
            Predicate::LessEqual(t) => (k::LESS_EQUAL, t),
            Predicate::Greater(t) => (k::GREATER, t),
            Predicate::GreaterEqual(t) => (k::GREATER_EQUAL, t),
            Predicate::Equal(t) => (k::EQUAL, t),
            Predicate::NotEqual(t) => (k::NOT_EQUAL, t),
        }
    }
}

/// The launch arguments of a predicate: its code and the value's bytes.
fn predicate_args<T: Scalar>(p: Predicate<T>) -> [Arg; 2] {
    let (code, t) = p.code();
    [code.into(), to_words(t)[0].into()]
}

/// Reusable temporary storage for select, partition and unique: the
/// single-pass status (ticket and per-tile counts), double-buffered and
/// zeroed when made, as [`ScanTemp`](crate::ScanTemp). Make one with
/// [`Select::temp`] for an input length and type; it serves every
/// operation on up to that many items of a type no larger (for
/// [`Select::unique_by_key_into`], of keys no larger). Stream-ordered: a
/// `SelectTemp` used from two streams needs the second to wait for the
/// first.
pub struct SelectTemp {
    buf: DeviceBuffer<u8>,
    halves: Halves,
}

impl SelectTemp {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }
}

/// Options of select, partition and unique: the block size. See the
/// [module docs](self).
#[derive(Clone, Debug)]
pub struct Select<'c> {
    ctx: &'c Context,
    block: u32,
}

/// Two counts, as the three-way partition leaves them in device memory
/// (read back together).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Counts(u64, u64);

// SAFETY: two u64s, no padding, every bit pattern valid.
unsafe impl DeviceRepr for Counts {
    const NAME: &'static str = "counts";
}

/// What an operation keeps: one class (select, unique: its items go out
/// of the staged tile directly, in larger tiles), or every item, in one
/// output or three.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Select,
    Partition,
    ThreeWay,
}

/// One launch, before the status storage is chosen.
struct Job {
    kernel: &'static HostKernel,
    /// Elements per tile.
    tile: u64,
    smem: usize,
    /// Counts written: 1, or 2 for the three-way partition.
    ways: u32,
    n: u64,
    /// Arguments before the status storage's three.
    args: Vec<Arg>,
    /// The count output: address and length (elements).
    count: (u64, usize),
}

impl Context {
    /// Select, partition and unique with options (block size, temporary
    /// storage, counts left on the device).
    pub fn select(&self) -> Select<'_> {
        Select { ctx: self, block: policy::DEFAULT_BLOCK }
    }

    /// Copy the items for which `pred` holds, in order; returns how many.
    /// `output` holds at least as many items as `input`.
    ///
    /// ```
    /// use gpuprim::select::Predicate;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[0.5f32, -1.0, 2.5, f32::NAN, -3.0])?;
    /// let mut y = ctx.alloc::<f32>(5)?;
    /// let n = ctx.select_if(&x, &mut y, Predicate::Less(0.0))?;
    /// assert_eq!(&y.to_vec()?[..n], [-1.0, -3.0]);
    /// # Ok(()) }
    /// ```
    pub fn select_if<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        pred: Predicate<T>,
    ) -> Result<usize> {
        self.select().select_if(input, output, pred)
    }

    /// Items whose flag is non-zero (`flags` has one byte per item), in
    /// order; returns how many.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[10u64, 20, 30, 40])?;
    /// let flags = ctx.upload(&[1u8, 0, 0, 7])?;
    /// let mut y = ctx.alloc::<u64>(4)?;
    /// let n = ctx.select_flagged(&x, &flags, &mut y)?;
    /// assert_eq!(&y.to_vec()?[..n], [10, 40]);
    /// # Ok(()) }
    /// ```
    pub fn select_flagged<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        flags: &impl DeviceInput<u8>,
        output: &mut impl DeviceOutput<T>,
    ) -> Result<usize> {
        self.select().select_flagged(input, flags, output)
    }

    /// Selected items first, in order, then the rejected ones in *reverse*
    /// input order (as CUB's DevicePartition); returns the number selected.
    pub fn partition<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        pred: Predicate<T>,
    ) -> Result<usize> {
        self.select().partition(input, output, pred)
    }

    /// Items satisfying `first` to `first_out`, the others satisfying
    /// `second` to `second_out`, the rest to `rest_out`, each in order;
    /// returns the first two counts.
    ///
    /// ```
    /// use gpuprim::select::Predicate;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[7i64, -2, 0, 12, -5, 3])?;
    /// let (mut neg, mut small, mut rest) = (ctx.alloc(6)?, ctx.alloc(6)?, ctx.alloc(6)?);
    /// let (a, b) =
    ///     ctx.partition_three_way(&x, &mut neg, &mut small, &mut rest, Predicate::Less(0), Predicate::Less(5))?;
    /// assert_eq!(&neg.to_vec()?[..a], [-2, -5]);
    /// assert_eq!(&small.to_vec()?[..b], [0, 3]);
    /// assert_eq!(&rest.to_vec()?[..6 - a - b], [7, 12]);
    /// # Ok(()) }
    /// ```
    pub fn partition_three_way<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        first_out: &mut impl DeviceOutput<T>,
        second_out: &mut impl DeviceOutput<T>,
        rest_out: &mut impl DeviceOutput<T>,
        first: Predicate<T>,
        second: Predicate<T>,
    ) -> Result<(usize, usize)> {
        self.select().partition_three_way(input, first_out, second_out, rest_out, first, second)
    }

    /// The first item of every run of equal consecutive items; returns
    /// how many. Every NaN starts a run (see the [module docs](crate::select)).
    pub fn unique<T: Scalar>(&self, input: &impl DeviceInput<T>, output: &mut impl DeviceOutput<T>) -> Result<usize> {
        self.select().unique(input, output)
    }

    /// The first (key, value) of every run of equal consecutive keys;
    /// returns how many.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let keys = ctx.upload(&[4u32, 4, 9, 9, 9, 4])?;
    /// let values = ctx.upload(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    /// let (mut k, mut v) = (ctx.alloc::<u32>(6)?, ctx.alloc::<f64>(6)?);
    /// let n = ctx.unique_by_key(&keys, &values, &mut k, &mut v)?;
    /// assert_eq!(&k.to_vec()?[..n], [4, 9, 4]);
    /// assert_eq!(&v.to_vec()?[..n], [1.0, 3.0, 6.0]);
    /// # Ok(()) }
    /// ```
    pub fn unique_by_key<K: Scalar, V: Scalar>(
        &self,
        keys: &impl DeviceInput<K>,
        values: &impl DeviceInput<V>,
        keys_out: &mut impl DeviceOutput<K>,
        values_out: &mut impl DeviceOutput<V>,
    ) -> Result<usize> {
        self.select().unique_by_key(keys, values, keys_out, values_out)
    }
}

impl<'c> Select<'c> {
    /// Use blocks of `block` threads (instantiated: 256, the default; 32
    /// for `i32` and `f64`, and for `unique_by_key` with `u32` or `u64`
    /// keys and `i32` or `f64` values). Another size is reported by the
    /// call as [`Error::UnsupportedBlockSize`].
    pub fn block_size(mut self, block: u32) -> Self {
        self.block = block;
        self
    }

    /// The block size calls use.
    pub fn chosen_block_size(&self) -> u32 {
        self.block
    }

    /// Items per tile (one block each) of every operation, for items of
    /// `T` (the keys, for `unique_by_key`, whose tiles are cut by the keys).
    pub fn tile_len<T>(&self) -> u64 {
        policy::tile_len::<T>(self.block)
    }

    /// Items per tile of the partitions (two- and three-way): the same as
    /// [`Select::tile_len`] (they took smaller tiles before 2026-11-29).
    pub fn partition_tile_len<T>(&self) -> u64 {
        self.tile_len::<T>()
    }

    /// Bytes of temporary storage for any operation on up to `len` items of
    /// `T` (the keys, for `unique_by_key`): two halves of single-pass
    /// status, each a ticket and a pair of counts per tile.
    pub fn temp_bytes<T: Scalar>(&self, len: usize) -> Result<usize> {
        check_block(self.block)?;
        let tiles = (len as u64).div_ceil(self.tile_len::<T>());
        let bytes = if len == 0 { 0 } else { 2 * round16(k::status_bytes(2, tiles)) };
        usize::try_from(bytes).map_err(|_| Error::TooLarge {
            what: "select temporary storage",
            len: len as u64,
            max: usize::MAX as u64,
        })
    }

    /// Temporary storage for operations on up to `len` items of `T`,
    /// zeroed (stream-ordered).
    pub fn temp<T: Scalar>(&self, len: usize) -> Result<SelectTemp> {
        let bytes = self.temp_bytes::<T>(len)?;
        let buf = self.ctx.alloc::<u8>(bytes)?;
        self.ctx.fill_bytes(buf.addr(), 0, bytes)?;
        Ok(SelectTemp { buf, halves: Halves::zeroed() })
    }

    /// [`Context::select_if`] with these options.
    pub fn select_if<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        pred: Predicate<T>,
    ) -> Result<usize> {
        self.count_of(|c| self.select_if_into(input, &mut *output, pred, c, None))
    }

    /// [`Context::select_flagged`] with these options.
    pub fn select_flagged<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        flags: &impl DeviceInput<u8>,
        output: &mut impl DeviceOutput<T>,
    ) -> Result<usize> {
        self.count_of(|c| self.select_flagged_into(input, flags, &mut *output, c, None))
    }

    /// [`Context::partition`] with these options.
    pub fn partition<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        pred: Predicate<T>,
    ) -> Result<usize> {
        self.count_of(|c| self.partition_into(input, &mut *output, pred, c, None))
    }

    /// [`Context::partition_three_way`] with these options.
    pub fn partition_three_way<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        first_out: &mut impl DeviceOutput<T>,
        second_out: &mut impl DeviceOutput<T>,
        rest_out: &mut impl DeviceOutput<T>,
        first: Predicate<T>,
        second: Predicate<T>,
    ) -> Result<(usize, usize)> {
        let (a, b) = self.counts_of(|c| {
            self.partition_three_way_into(
                input,
                &mut *first_out,
                &mut *second_out,
                &mut *rest_out,
                first,
                second,
                c,
                None,
            )
        })?;
        Ok((a as usize, b as usize))
    }

    /// [`Context::unique`] with these options.
    pub fn unique<T: Scalar>(&self, input: &impl DeviceInput<T>, output: &mut impl DeviceOutput<T>) -> Result<usize> {
        self.count_of(|c| self.unique_into(input, &mut *output, c, None))
    }

    /// [`Context::unique_by_key`] with these options.
    pub fn unique_by_key<K: Scalar, V: Scalar>(
        &self,
        keys: &impl DeviceInput<K>,
        values: &impl DeviceInput<V>,
        keys_out: &mut impl DeviceOutput<K>,
        values_out: &mut impl DeviceOutput<V>,
    ) -> Result<usize> {
        self.count_of(|c| self.unique_by_key_into(keys, values, &mut *keys_out, &mut *values_out, c, None))
    }

    /// [`Context::select_if`], stream-ordered: the count goes to
    /// `count[0]` in device memory; with `temp`, nothing is allocated.
    ///
    /// ```
    /// use gpuprim::select::Predicate;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let sel = ctx.select();
    /// let mut temp = sel.temp::<u32>(1000)?;
    /// let x = ctx.upload(&(0..1000u32).collect::<Vec<_>>())?;
    /// let (mut y, mut count) = (ctx.alloc::<u32>(1000)?, ctx.alloc::<u64>(1)?);
    /// sel.select_if_into(&x, &mut y, Predicate::GreaterEqual(990), &mut count, Some(&mut temp))?;
    /// assert_eq!(count.to_vec()?, [10]);
    /// assert_eq!(y.to_vec()?[..10], (990..1000).collect::<Vec<_>>());
    /// # Ok(()) }
    /// ```
    pub fn select_if_into<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        pred: Predicate<T>,
        count: &mut impl DeviceOutput<u64>,
        temp: Option<&mut SelectTemp>,
    ) -> Result<()> {
        self.compare_into("select_if", input, output, pred, count, temp)
    }

    /// [`Context::partition`], stream-ordered (see
    /// [`Select::select_if_into`]): the number selected to `count[0]`.
    pub fn partition_into<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        pred: Predicate<T>,
        count: &mut impl DeviceOutput<u64>,
        temp: Option<&mut SelectTemp>,
    ) -> Result<()> {
        self.compare_into("partition_if", input, output, pred, count, temp)
    }

    /// [`Context::select_flagged`], stream-ordered (see
    /// [`Select::select_if_into`]). `flags` has one byte per item.
    pub fn select_flagged_into<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        flags: &impl DeviceInput<u8>,
        output: &mut impl DeviceOutput<T>,
        count: &mut impl DeviceOutput<u64>,
        temp: Option<&mut SelectTemp>,
    ) -> Result<()> {
        let (input, flags) = (input.input(self.ctx)?, flags.input(self.ctx)?);
        let (output, mut count) = (output.output(self.ctx)?, count.output(self.ctx)?);
        let n = input.view.len();
        same_len("select flags", n, flags.view.len())?;
        room("select output", n, output.view.len())?;
        let args = vec![input.view.arg(), flags.view.arg(), (n as u64).into(), output.view.arg(), count.view.arg()];
        let job =
            self.job::<T>("select_flagged", Instance::of(T::NAME), Shape::Select, n, args, count.view.reborrow())?;
        self.run(job, temp)
    }

    /// [`Context::partition_three_way`], stream-ordered (see
    /// [`Select::select_if_into`]): the first two counts to `count[0..2]`.
    #[allow(clippy::too_many_arguments)]
    pub fn partition_three_way_into<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        first_out: &mut impl DeviceOutput<T>,
        second_out: &mut impl DeviceOutput<T>,
        rest_out: &mut impl DeviceOutput<T>,
        first: Predicate<T>,
        second: Predicate<T>,
        count: &mut impl DeviceOutput<u64>,
        temp: Option<&mut SelectTemp>,
    ) -> Result<()> {
        let input = input.input(self.ctx)?;
        let (a, b) = (first_out.output(self.ctx)?, second_out.output(self.ctx)?);
        let (rest, mut count) = (rest_out.output(self.ctx)?, count.output(self.ctx)?);
        let n = input.view.len();
        room("three-way partition first output", n, a.view.len())?;
        room("three-way partition second output", n, b.view.len())?;
        room("three-way partition rest output", n, rest.view.len())?;
        let mut args =
            vec![input.view.arg(), (n as u64).into(), a.view.arg(), b.view.arg(), rest.view.arg(), count.view.arg()];
        args.extend(predicate_args(first));
        args.extend(predicate_args(second));
        let job = self.job::<T>(
            "partition_three_way",
            Instance::of(T::NAME),
            Shape::ThreeWay,
            n,
            args,
            count.view.reborrow(),
        )?;
        self.run(job, temp)
    }

    /// [`Context::unique`], stream-ordered (see [`Select::select_if_into`]).
    pub fn unique_into<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        count: &mut impl DeviceOutput<u64>,
        temp: Option<&mut SelectTemp>,
    ) -> Result<()> {
        let input = input.input(self.ctx)?;
        let (output, mut count) = (output.output(self.ctx)?, count.output(self.ctx)?);
        let n = input.view.len();
        room("unique output", n, output.view.len())?;
        let args = vec![input.view.arg(), (n as u64).into(), output.view.arg(), count.view.arg()];
        let job = self.job::<T>("unique", Instance::of(T::NAME), Shape::Select, n, args, count.view.reborrow())?;
        self.run(job, temp)
    }

    /// [`Context::unique_by_key`], stream-ordered (see
    /// [`Select::select_if_into`]). `temp` is sized by the key type.
    pub fn unique_by_key_into<K: Scalar, V: Scalar>(
        &self,
        keys: &impl DeviceInput<K>,
        values: &impl DeviceInput<V>,
        keys_out: &mut impl DeviceOutput<K>,
        values_out: &mut impl DeviceOutput<V>,
        count: &mut impl DeviceOutput<u64>,
        temp: Option<&mut SelectTemp>,
    ) -> Result<()> {
        let (keys, values) = (keys.input(self.ctx)?, values.input(self.ctx)?);
        let (keys_out, values_out) = (keys_out.output(self.ctx)?, values_out.output(self.ctx)?);
        let mut count = count.output(self.ctx)?;
        let n = keys.view.len();
        same_len("unique_by_key values", n, values.view.len())?;
        room("unique_by_key keys output", n, keys_out.view.len())?;
        room("unique_by_key values output", n, values_out.view.len())?;
        let args = vec![
            keys.view.arg(),
            values.view.arg(),
            (n as u64).into(),
            keys_out.view.arg(),
            values_out.view.arg(),
            count.view.arg(),
        ];
        let what = Instance::of(V::NAME).key(K::NAME);
        let job = self.job::<K>("unique_by_key", what, Shape::Select, n, args, count.view.reborrow())?;
        self.run(job, temp)
    }

    /// `select_if_into` and `partition_into`: one comparison.
    fn compare_into<T: Scalar>(
        &self,
        family: &'static str,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        pred: Predicate<T>,
        count: &mut impl DeviceOutput<u64>,
        temp: Option<&mut SelectTemp>,
    ) -> Result<()> {
        let input = input.input(self.ctx)?;
        let (output, mut count) = (output.output(self.ctx)?, count.output(self.ctx)?);
        let n = input.view.len();
        room(if family == "partition_if" { "partition output" } else { "select output" }, n, output.view.len())?;
        let mut args = vec![input.view.arg(), (n as u64).into(), output.view.arg(), count.view.arg()];
        args.extend(predicate_args(pred));
        let shape = if family == "partition_if" { Shape::Partition } else { Shape::Select };
        let job = self.job::<T>(family, Instance::of(T::NAME), shape, n, args, count.view.reborrow())?;
        self.run(job, temp)
    }

    /// The kernel of `family` for `what` at this block size, with tiles cut
    /// by `T`, and the checks every operation makes.
    fn job<T>(
        &self,
        family: &'static str,
        what: Instance,
        shape: Shape,
        n: usize,
        args: Vec<Arg>,
        count: DeviceSliceMut<'_, u64>,
    ) -> Result<Job> {
        check_block(self.block)?;
        let task = || {
            let key = if what.key.is_empty() { String::new() } else { format!("keys `{}`, values ", what.key) };
            format!("{family} on {key}`{}`", what.ty)
        };
        let kernel = Family(family).get(self.ctx, what, self.block, task)?;
        let ways = if shape == Shape::ThreeWay { 2 } else { 1 };
        let drops = shape == Shape::Select;
        if count.len() < ways as usize {
            return Err(Error::LengthMismatch { what: "select count", expected: ways as usize, got: count.len() });
        }
        Ok(Job {
            kernel,
            tile: policy::tile_len::<T>(self.block),
            smem: k::smem_bytes::<T>(self.block, drops),
            ways,
            n: n as u64,
            args,
            count: (count.addr(), count.len()),
        })
    }

    /// Launch `job` with its status in `temp`, or in the stream's own
    /// double-buffered status storage. An empty input writes zero counts.
    fn run(&self, job: Job, temp: Option<&mut SelectTemp>) -> Result<()> {
        let tiles = job.n.div_ceil(job.tile);
        let status = round16(k::status_bytes(job.ways, tiles)) as usize;
        if let Some(t) = &temp {
            self.ctx.check_domain(t.buf.context().domain(), "select temporary storage")?;
            if job.n > 0 && status > half_of(t) {
                return Err(Error::LengthMismatch {
                    what: "select temporary storage (bytes)",
                    expected: 2 * status,
                    got: t.bytes(),
                });
            }
        }
        if job.n == 0 {
            return self.ctx.fill_bytes(job.count.0, 0, 8 * job.ways as usize);
        }
        if tiles > MAX_GRID {
            return Err(Error::TooLarge {
                what: "select input at this block size (one block per tile)",
                len: job.n,
                max: MAX_GRID * job.tile,
            });
        }
        let Job { kernel, smem, mut args, .. } = job;
        let launch = |region: Region| -> Result<()> {
            if region.clear_first > 0 {
                let words = region.clear_first.div_ceil(8) as u64;
                let clear = Family("scan_clear").get(self.ctx, Instance::of(""), 256, || "status clearing".into())?;
                let grid = words.div_ceil(256).clamp(1, self.ctx.multiprocessors() as u64 * 4) as u32;
                // SAFETY: the region holds `clear_first` bytes of status,
                // rounded up to whole words inside 16-byte-aligned storage.
                unsafe {
                    self.ctx.launch(
                        clear.name,
                        LaunchConfig { grid, block: 256, shared_bytes: 0 },
                        &[Arg::Ptr(region.temp), words.into()],
                    )?
                };
            }
            args.extend([Arg::Ptr(region.temp), Arg::Ptr(region.spare), (region.spare_bytes as u64 / 8).into()]);
            let cfg = LaunchConfig { grid: tiles as u32, block: self.block, shared_bytes: smem as u32 };
            // SAFETY: the inputs hold n items and every output at least n
            // (checked by the callers), the count `ways` words (`job`);
            // temp holds the zeroed status of `tiles` tiles (stream order),
            // spare is the other, disjoint half; one block per tile.
            unsafe { self.ctx.launch(kernel.name, cfg, &args) }
        };
        match temp {
            Some(t) => {
                let half = half_of(t);
                t.halves.run(t.buf.addr(), half, status, launch)
            }
            None => self.ctx.with_status(status, launch),
        }
    }

    /// Run `f` with a one-count output and return the count: straight into
    /// mapped host memory on CUDA, through a small buffer on the emulator.
    fn count_of(&self, mut f: impl FnMut(&mut DeviceSliceMut<'_, u64>) -> Result<()>) -> Result<usize> {
        self.counts_of(|c| f(c)).map(|(a, _)| a as usize)
    }

    /// The same for up to two counts.
    fn counts_of(&self, mut f: impl FnMut(&mut DeviceSliceMut<'_, u64>) -> Result<()>) -> Result<(u64, u64)> {
        let got = self.ctx.read_back::<Counts>(|slot| {
            // SAFETY: the slot holds one `Counts`: two aligned u64s of this
            // context's memory, used by nothing else until read back.
            let mut view = unsafe { DeviceSliceMut::<u64>::from_parts(slot.addr(), 2, self.ctx.domain()) };
            f(&mut view)
        })?;
        if let Some(Counts(a, b)) = got {
            return Ok((a, b));
        }
        let mut buf = self.ctx.alloc::<u64>(2)?;
        f(&mut buf.as_slice_mut())?;
        let mut v = [0u64; 2];
        buf.copy_to_host(&mut v)?;
        Ok((v[0], v[1]))
    }
}

/// The usable half of `temp`'s double-buffered storage.
fn half_of(t: &SelectTemp) -> usize {
    (t.bytes() / 2) & !15
}

/// An output of `got` items for an input of `n`.
fn room(what: &'static str, n: usize, got: usize) -> Result<()> {
    if got < n { Err(Error::LengthMismatch { what, expected: n, got }) } else { Ok(()) }
}

/// A second input that must match the first's length.
fn same_len(what: &'static str, n: usize, got: usize) -> Result<()> {
    if got != n { Err(Error::LengthMismatch { what, expected: n, got }) } else { Ok(()) }
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
