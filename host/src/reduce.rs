//! Device-wide reductions: every lecture variant, four ways to finish the
//! grid, and the operators users reach for.
//!
//! The simple calls on [`Context`] ([`Context::sum`], [`Context::min`],
//! [`Context::dot`], [`Context::norm2`], ...) use the fastest algorithm for
//! the GPU. [`Context::reducer`] returns a [`Reducer`] to choose the
//! algorithm, block size and finishing strategy:
//!
//! ```
//! use gpuprim::reduce::{Finish, ReduceAlgorithm};
//! # fn main() -> gpuprim::Result<()> {
//! let ctx = gpuprim::Context::new()?;
//! let x = ctx.upload(&(1..=1000).collect::<Vec<i64>>())?;
//! for alg in ReduceAlgorithm::ALL {
//!     let r = ctx.reducer().algorithm(alg).block_size(128).finish(Finish::Relaunch);
//!     assert_eq!(r.sum(&x)?, 500_500);
//! }
//! # Ok(()) }
//! ```
//!
//! # Three forms of every reduction
//!
//! * `sum(x)` returns the result to the host (it waits for the GPU);
//! * `sum_into(x, out)` leaves it in `out[0]`, on the device, and only
//!   queues work: the call returns before the GPU has run it, and the
//!   context's stream orders what follows;
//! * `sum_with_temp(x, out, temp)` is `sum_into` with caller-provided
//!   temporary storage ([`Reducer::temp`]), so that repeated reductions
//!   allocate nothing.
//!
//! The same holds for `product`, `min`, `max`, `and`, `or`, `xor`, `dot`,
//! `norm1`, `sum_squares`, `norm2`, `rms`, `argmin`, `argmax` and
//! [`reduce_by`](Reducer::reduce_by). `norm2` and `rms` take their square
//! root on the device (a one-thread kernel after the reduction), and
//! `argmin_into` / `argmax_into` write the index of the first extreme
//! element as a `u64` ([`NO_INDEX`] for empty input). Only
//! [`Finish::Host`] waits for the GPU in the `_into` forms: it combines the
//! block totals on the host.
//!
//! # Element types and accumulation
//!
//! Every operator takes `i32`, `u32`, `i64`, `u64`, `f32` and `f64`, and
//! with the default algorithm ([`ReduceAlgorithm::Vectorized`]) also
//! `i8`, `u8`, `i16`, `u16` and the `half` crate's [`f16`](half::f16) and
//! [`bf16`](half::bf16) (re-exported as [`gpuprim::half`](crate::half)).
//! Bitwise operators take integers; norms and the root mean square take
//! floats.
//!
//! | element | `sum`, `product`, `dot`, `sum_squares`, `norm1`, `norm2`, `rms` | `min`, `max`, bitwise, `argmin`/`argmax` |
//! |---|---|---|
//! | `i8`, `i16` | accumulate in and return `i64` | element type |
//! | `u8`, `u16` | accumulate in and return `u64` | element type |
//! | `f16`, `bf16` | accumulate in and return `f32` | element type |
//! | `i32`, `u32`, `i64`, `u64`, `f32`, `f64` | element type | element type |
//!
//! The accumulator type is [`Element::Acc`](gpuprim_kernels::ops::Element::Acc)
//! (`T::Acc` in the signatures): elements are widened as they are loaded,
//! so a sum of `i8` is exact below 2^56 elements and a half-precision sum
//! has `f32`'s precision.
//!
//! ```
//! # fn main() -> gpuprim::Result<()> {
//! use gpuprim::half::f16;
//! let ctx = gpuprim::Context::new()?;
//! let bytes = ctx.upload(&[100i8; 1000])?;
//! assert_eq!(ctx.sum(&bytes)?, 100_000i64); // no wrap at 8 bits
//! let h = ctx.upload(&[f16::from_f32(0.5); 3000])?;
//! assert_eq!(ctx.sum(&h)?, 1500.0f32);
//! # Ok(()) }
//! ```
//!
//! Integer results wrap on overflow of their accumulator, as the kernels'
//! arithmetic does. Float results are the same run to run unless
//! [`Finish::Atomic`] is chosen with [`Reducer::deterministic`]`(false)`:
//! every other strategy combines in an order fixed by the launch shape.

use crate::buffer::{DeviceBuffer, DeviceInput, DeviceOutput, DeviceRepr, DeviceSlice, DeviceSliceMut, Scalar};
use crate::context::{Context, LaunchConfig};
use crate::error::{Error, Result};
use crate::kernel::{Family, Instance};
use gpuprim_kernels::ops::{self as kops};
use gpuprim_kernels::reduce::finish::{finish_smem, mode};
use gpuprim_kernels::reduce::mapped::PARTIALS_INPUT;
use gpuprim_kernels::reduce::policy;
use gpuprim_kernels::reduce::reduction::{Arg, Dot, Extreme, Largest, Plain, Reduction, Smallest, SumAbs, SumSquares};

/// The reduction kernels, in the order the lectures introduce them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceAlgorithm {
    /// Harris #1: interleaved addressing, `tid % (2s) == 0`; divergent warps.
    Interleaved,
    /// Harris #2: interleaved addressing with `index = 2 s tid`; no
    /// divergence, but shared-memory bank conflicts.
    InterleavedNoDivergence,
    /// Harris #3: sequential addressing; conflict-free, half the threads
    /// idle from the first step.
    Sequential,
    /// Harris #4: each thread adds two elements while loading; half the
    /// blocks.
    FirstAddDuringLoad,
    /// Harris #5: the last warp reduces without block barriers (with warp
    /// barriers, as Volta and later require).
    UnrolledLastWarp,
    /// Harris #6: the block size is a const generic and every step is
    /// unrolled.
    CompleteUnroll,
    /// Harris #7: many elements per thread in a grid-stride loop, grid sized
    /// to the GPU (algorithm cascading).
    Cascaded,
    /// Warp shuffles inside each warp, one shared slot per warp.
    WarpShuffle,
    /// The default: warp shuffles plus 16-byte vector loads, four in flight
    /// per thread, grid sized to fill the GPU.
    Vectorized,
}

impl ReduceAlgorithm {
    /// Every variant, slowest technique first.
    pub const ALL: [ReduceAlgorithm; 9] = [
        ReduceAlgorithm::Interleaved,
        ReduceAlgorithm::InterleavedNoDivergence,
        ReduceAlgorithm::Sequential,
        ReduceAlgorithm::FirstAddDuringLoad,
        ReduceAlgorithm::UnrolledLastWarp,
        ReduceAlgorithm::CompleteUnroll,
        ReduceAlgorithm::Cascaded,
        ReduceAlgorithm::WarpShuffle,
        ReduceAlgorithm::Vectorized,
    ];

    /// The kernel family (the start of its entry names).
    pub fn kernel(self) -> &'static str {
        match self {
            ReduceAlgorithm::Interleaved => "reduce_interleaved",
            ReduceAlgorithm::InterleavedNoDivergence => "reduce_interleaved_strided",
            ReduceAlgorithm::Sequential => "reduce_sequential",
            ReduceAlgorithm::FirstAddDuringLoad => "reduce_first_add",
            ReduceAlgorithm::UnrolledLastWarp => "reduce_unrolled_warp",
            ReduceAlgorithm::CompleteUnroll => "reduce_complete_unroll",
            ReduceAlgorithm::Cascaded => "reduce_cascaded",
            ReduceAlgorithm::WarpShuffle => "reduce_shuffle",
            ReduceAlgorithm::Vectorized => "reduce_vectorized",
        }
    }

    /// A short name for tables (`"sequential"`).
    pub fn name(self) -> &'static str {
        &self.kernel()["reduce_".len()..]
    }

    /// Elements each block covers per pass: fixed for variants 1-6 (one or
    /// two per thread), `None` for the grid-stride variants 7-9.
    fn per_block(self, block: u32) -> Option<u64> {
        match self {
            ReduceAlgorithm::Interleaved | ReduceAlgorithm::InterleavedNoDivergence | ReduceAlgorithm::Sequential => {
                Some(block as u64)
            }
            ReduceAlgorithm::FirstAddDuringLoad
            | ReduceAlgorithm::UnrolledLastWarp
            | ReduceAlgorithm::CompleteUnroll => Some(2 * block as u64),
            _ => None,
        }
    }
}

/// How the per-block totals become one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Finish {
    /// Launch the kernel again on the block partials until one value
    /// remains (the lectures' way): `log_B n` launches.
    Relaunch,
    /// Copy the block partials to the host and combine them there.
    Host,
    /// One launch; each block combines its total into the result with an
    /// atomic compare-and-swap. Integers only, unless
    /// [`Reducer::deterministic`]`(false)`: the order varies, and so do
    /// float roundings. Not for argmin/argmax (16-byte accumulators).
    Atomic,
    /// One launch; the last block to finish (an atomic ticket tells it)
    /// combines all partials in a fixed order. Deterministic. The default.
    LastBlock,
}

impl Finish {
    /// Every strategy.
    pub const ALL: [Finish; 4] = [Finish::Relaunch, Finish::Host, Finish::Atomic, Finish::LastBlock];
}

/// Block sizes the kernels are instantiated for: every operator and
/// element type with [`ReduceAlgorithm::Vectorized`] (the default); `sum`
/// with every algorithm. The lecture variants 1-8 run the other operators
/// at [`DEFAULT_BLOCK`] threads only.
pub const BLOCK_SIZES: [u32; 6] = [32, 64, 128, 256, 512, 1024];
/// Threads per block of the default reduction.
pub const DEFAULT_BLOCK: u32 = policy::DEFAULT_BLOCK;
/// What `argmin_into` and `argmax_into` write for empty input.
pub const NO_INDEX: u64 = u64::MAX;
/// Bytes reserved at the start of temporary storage for the counter.
const COUNTER_BYTES: usize = 256;
/// Largest grid a launch may have.
const MAX_GRID: u64 = i32::MAX as u64;

/// The operators, as they appear in kernel names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Sum,
    Product,
    Min,
    Max,
    And,
    Or,
    Xor,
    Dot,
    SumAbs,
    SumSquares,
    ArgMin,
    ArgMax,
    /// An operator named by a [`ReduceOp`] implementation.
    Custom(&'static str),
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Product => "product",
            Op::Min => "min",
            Op::Max => "max",
            Op::And => "and",
            Op::Or => "or",
            Op::Xor => "xor",
            Op::Dot => "dot",
            Op::SumAbs => "sumabs",
            Op::SumSquares => "sumsq",
            Op::ArgMin => "argmin",
            Op::ArgMax => "argmax",
            Op::Custom(name) => name,
        }
    }
    /// The operator that reduces this one's partials.
    fn partials(self) -> &'static str {
        match self {
            Op::Dot | Op::SumAbs | Op::SumSquares => "sum",
            Op::ArgMin => "argminp",
            Op::ArgMax => "argmaxp",
            other => other.name(),
        }
    }
}

/// The kernels of one reduction: the operator, the input's type name and
/// the type name of its partials (the accumulator's; the 8-byte value
/// type for argmin/argmax, whose partial kernels are shared by all types
/// of the same kind).
#[derive(Clone, Copy, Debug)]
struct Kernels {
    op: Op,
    input: &'static str,
    partials: &'static str,
}

impl Kernels {
    /// A reduction whose partials are its accumulators, of type `A`.
    fn of<T: DeviceRepr, A: DeviceRepr>(op: Op) -> Self {
        Kernels { op, input: T::NAME, partials: A::NAME }
    }
}

/// What happens to the accumulator once the grid is reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Post {
    /// It is the result, in `out[0]`.
    None,
    /// `out[0] = sqrt(out[0] / divisor)` on the device (0 for divisor 0):
    /// the L2 norm (divisor 1) and the root mean square (divisor n).
    SqrtMean { divisor: u64 },
    /// The accumulator (value and index) goes to temporary storage, and
    /// its index, fixed up for empty and all-NaN input, to `out[0]`.
    ArgIndex,
}

/// Reusable temporary storage for reductions: partials and a counter.
/// Make one with [`Reducer::temp`] (sized for an input length) and pass it
/// to the `*_with_temp` calls, so repeated reductions allocate nothing.
pub struct ReduceTemp {
    buf: DeviceBuffer<u8>,
}

impl ReduceTemp {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }
}

/// Options of a reduction; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct Reducer<'c> {
    ctx: &'c Context,
    algorithm: ReduceAlgorithm,
    block: u32,
    finish: Finish,
    deterministic: bool,
    grid: Option<u32>,
}

impl Context {
    /// A reduction with the default options: [`ReduceAlgorithm::Vectorized`],
    /// 256 threads per block, [`Finish::LastBlock`], deterministic.
    pub fn reducer(&self) -> Reducer<'_> {
        Reducer {
            ctx: self,
            algorithm: ReduceAlgorithm::Vectorized,
            block: DEFAULT_BLOCK,
            finish: Finish::LastBlock,
            deterministic: true,
            grid: None,
        }
    }

    /// Sum of all elements (`0` for empty input; integers wrap), in
    /// `T::Acc` (see the [module docs](crate::reduce)).
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let v = ctx.upload(&[1.5f32, 2.0, -0.5])?;
    /// assert_eq!(ctx.sum(&v)?, 3.0);
    /// assert_eq!(ctx.sum(&[1u32, 2, 3][..])?, 6); // host slices work too
    /// # Ok(()) }
    /// ```
    pub fn sum<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().sum(x)
    }
    /// Stream-ordered sum into `out[0]`, left in device memory.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let v = ctx.upload(&[3i32, 4])?;
    /// let mut out = ctx.alloc::<i32>(1)?;
    /// ctx.sum_into(&v, &mut out)?;
    /// assert_eq!(out.to_vec()?, vec![7]);
    /// # Ok(()) }
    /// ```
    pub fn sum_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().sum_into(x, out)
    }
    /// Product of all elements (`1` for empty input; integers wrap), in
    /// `T::Acc`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.product(&[2i64, 3, 7][..]).unwrap(), 42);
    /// assert_eq!(ctx.product(&[100u8, 100, 100][..]).unwrap(), 1_000_000u64);
    /// ```
    pub fn product<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().product(x)
    }
    /// Stream-ordered [`product`](Context::product) into `out[0]`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[2i16, -3, 7]).unwrap();
    /// let mut out = ctx.alloc::<i64>(1).unwrap();
    /// ctx.product_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [-42]);
    /// ```
    pub fn product_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().product_into(x, out)
    }
    /// Smallest element (the type's largest value, `+inf` for floats, for
    /// empty input). NaNs are ignored.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.min(&[4.0f64, -2.5, 9.0][..]).unwrap(), -2.5);
    /// ```
    pub fn min<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<T> {
        self.reducer().min(x)
    }
    /// Stream-ordered [`min`](Context::min) into `out[0]`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[4u8, 12, 9]).unwrap();
    /// let mut out = ctx.alloc::<u8>(1).unwrap();
    /// ctx.min_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [4]);
    /// ```
    pub fn min_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()> {
        self.reducer().min_into(x, out)
    }
    /// Largest element (the type's smallest value, `-inf`, for empty
    /// input). NaNs are ignored.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.max(&[4u32, 12, 9][..]).unwrap(), 12);
    /// ```
    pub fn max<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<T> {
        self.reducer().max(x)
    }
    /// Stream-ordered [`max`](Context::max) into `out[0]`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[4i64, 12, 9]).unwrap();
    /// let mut out = ctx.alloc::<i64>(1).unwrap();
    /// ctx.max_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [12]);
    /// ```
    pub fn max_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()> {
        self.reducer().max_into(x, out)
    }
    /// Stream-ordered bitwise and into `out[0]` (all ones for empty input);
    /// see [`Reducer::and`].
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[0b1110u16, 0b0111]).unwrap();
    /// let mut out = ctx.alloc::<u16>(1).unwrap();
    /// ctx.and_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [0b0110]);
    /// ```
    pub fn and_into<T: Scalar + kops::Integer>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()> {
        self.reducer().and_into(x, out)
    }
    /// Stream-ordered bitwise or into `out[0]` (zero for empty input).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[0b1000u32, 0b0001]).unwrap();
    /// let mut out = ctx.alloc::<u32>(1).unwrap();
    /// ctx.or_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [0b1001]);
    /// ```
    pub fn or_into<T: Scalar + kops::Integer>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()> {
        self.reducer().or_into(x, out)
    }
    /// Stream-ordered bitwise xor into `out[0]` (zero for empty input).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[0b1100i8, 0b1010]).unwrap();
    /// let mut out = ctx.alloc::<i8>(1).unwrap();
    /// ctx.xor_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [0b0110]);
    /// ```
    pub fn xor_into<T: Scalar + kops::Integer>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()> {
        self.reducer().xor_into(x, out)
    }
    /// Dot product `sum x[i] * y[i]` in `T::Acc` (both factors widened
    /// first); the lengths must match.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.dot(&[1.0f32, 2.0][..], &[3.0f32, 4.0][..]).unwrap(), 11.0);
    /// ```
    pub fn dot<T: Scalar>(&self, x: impl DeviceInput<T>, y: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().dot(x, y)
    }
    /// Stream-ordered [`dot`](Context::dot) into `out[0]`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[100i8, -100]).unwrap();
    /// let mut out = ctx.alloc::<i64>(1).unwrap();
    /// ctx.dot_into(&x, &x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [20_000]);
    /// ```
    pub fn dot_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        y: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().dot_into(x, y, out)
    }
    /// Euclidean norm `sqrt(sum x^2)`, in `T::Acc`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.norm2(&[3.0f64, 4.0][..]).unwrap(), 5.0);
    /// ```
    pub fn norm2<T: Float>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().norm2(x)
    }
    /// Stream-ordered [`norm2`](Context::norm2) into `out[0]`: the square
    /// root is taken on the device.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[3.0f32, 4.0]).unwrap();
    /// let mut out = ctx.alloc::<f32>(1).unwrap();
    /// ctx.norm2_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [5.0]);
    /// ```
    pub fn norm2_into<T: Float>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().norm2_into(x, out)
    }
    /// L1 norm `sum |x|`, in `T::Acc`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.norm1(&[3.0f32, -4.0][..]).unwrap(), 7.0);
    /// ```
    pub fn norm1<T: Float>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().norm1(x)
    }
    /// Stream-ordered [`norm1`](Context::norm1) into `out[0]`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::half::bf16;
    /// let x = ctx.upload(&[bf16::from_f32(-1.5), bf16::from_f32(2.0)]).unwrap();
    /// let mut out = ctx.alloc::<f32>(1).unwrap();
    /// ctx.norm1_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [3.5]);
    /// ```
    pub fn norm1_into<T: Float>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().norm1_into(x, out)
    }
    /// Stream-ordered sum of squares into `out[0]`; see
    /// [`Reducer::sum_squares`].
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[1u16, 2, 3]).unwrap();
    /// let mut out = ctx.alloc::<u64>(1).unwrap();
    /// ctx.sum_squares_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [14]);
    /// ```
    pub fn sum_squares_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().sum_squares_into(x, out)
    }
    /// Root mean square `sqrt(sum x^2 / n)` (`0` for empty input), in
    /// `T::Acc`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.rms(&[1.0f64, 7.0][..]).unwrap(), 5.0);
    /// ```
    pub fn rms<T: Float>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().rms(x)
    }
    /// Stream-ordered [`rms`](Context::rms) into `out[0]`: the division and
    /// the square root are taken on the device.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[1.0f64, 7.0]).unwrap();
    /// let mut out = ctx.alloc::<f64>(1).unwrap();
    /// ctx.rms_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [5.0]);
    /// ```
    pub fn rms_into<T: Float>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reducer().rms_into(x, out)
    }
    /// Index and value of the first smallest element; `None` for empty
    /// input. NaNs never win, unless all elements are NaN (then index 0).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.argmin(&[5i32, -1, 3, -1][..]).unwrap(), Some((1, -1)));
    /// ```
    pub fn argmin<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<Option<(usize, T)>> {
        self.reducer().argmin(x)
    }
    /// Stream-ordered [`argmin`](Context::argmin): the index of the first
    /// smallest element into `out[0]`, as a `u64`; [`NO_INDEX`] for empty
    /// input, `0` when every element is NaN. The value can be gathered
    /// from `x` at that index.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let x = ctx.upload(&[5i32, -1, 3, -1]).unwrap();
    /// let mut out = ctx.alloc::<u64>(1).unwrap();
    /// ctx.argmin_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [1]);
    /// ctx.argmin_into(&ctx.alloc::<i32>(0).unwrap(), &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [gpuprim::reduce::NO_INDEX]);
    /// ```
    pub fn argmin_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<u64> + ?Sized),
    ) -> Result<()> {
        self.reducer().argmin_into(x, out)
    }
    /// Index and value of the first largest element; `None` for empty
    /// input. NaNs never win, unless all elements are NaN (then index 0).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.argmax(&[5i32, 9, 3, 9][..]).unwrap(), Some((1, 9)));
    /// ```
    pub fn argmax<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<Option<(usize, T)>> {
        self.reducer().argmax(x)
    }
    /// Stream-ordered [`argmax`](Context::argmax); the output as for
    /// [`argmin_into`](Context::argmin_into).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::half::f16;
    /// let x = ctx.upload(&[f16::from_f32(5.0), f16::NAN, f16::from_f32(9.0), f16::from_f32(9.0)]).unwrap();
    /// let mut out = ctx.alloc::<u64>(1).unwrap();
    /// ctx.argmax_into(&x, &mut out).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [2]);
    /// ```
    pub fn argmax_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<u64> + ?Sized),
    ) -> Result<()> {
        self.reducer().argmax_into(x, out)
    }
    /// Reduce with operator `Op` ([`Reducer::reduce_by`] with the default
    /// settings): a built-in one, or one of yours whose kernels were
    /// loaded with [`Context::load_kernels`] (see [`crate::user`]).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::reduce::Max;
    /// let x = ctx.upload(&[3i32, -7, 12]).unwrap();
    /// assert_eq!(ctx.reduce_by::<i32, Max>(&x).unwrap(), 12);
    /// ```
    pub fn reduce_by<T: Scalar, Op: ReduceOp<T>>(&self, x: impl DeviceInput<T>) -> Result<Op::Acc>
    where
        Op::Acc: DeviceRepr,
    {
        self.reducer().reduce_by::<T, Op>(x)
    }
    /// Stream-ordered [`Reducer::reduce_by`] into `out[0]`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::reduce::{Max, Sum};
    /// let x = ctx.upload(&[3u8, 250, 12]).unwrap();
    /// let mut top = ctx.alloc::<u8>(1).unwrap();
    /// ctx.reduce_by_into::<u8, Max>(&x, &mut top).unwrap();
    /// assert_eq!(top.to_vec().unwrap(), [250]);
    /// let mut total = ctx.alloc::<u64>(1).unwrap();
    /// ctx.reduce_by_into::<u8, Sum>(&x, &mut total).unwrap();
    /// assert_eq!(total.to_vec().unwrap(), [265]);
    /// ```
    pub fn reduce_by_into<T: Scalar, Op: ReduceOp<T>>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<Op::Acc> + ?Sized),
    ) -> Result<()>
    where
        Op::Acc: DeviceRepr,
    {
        self.reducer().reduce_by_into::<T, Op>(x, out)
    }
}

pub use gpuprim_kernels::ops::{
    Accumulate, BitAnd, BitOr, BitXor, Fold, Integer, Map, Max, Min, Monoid, Named, Product, Sum,
};
pub use gpuprim_kernels::reduce::mapped::{ArgExtremes, ArgMinMax, BothExtremes, Extremes, MinMax};
pub use gpuprim_kernels::reduce::reduction::Indexed;

mod mapped;

/// An operator the reductions take: an associative, commutative
/// [`Monoid`] on its accumulator type, how elements of `T` enter it
/// ([`Accumulate`]), and the name its kernels carry ([`Named`],
/// `reduce_<variant>_<NAME>_<type>_b<block>`). Every such operator is one;
/// there is nothing to implement here.
///
/// Kernels are compiled to PTX ahead of time, so an operator of your own
/// is defined in a kernels crate of yours that instantiates the generic
/// reduction for it (`gpuprim_kernels::entries!`), built to PTX by
/// `gpuprim-builder` and loaded with [`Context::load_kernels`](crate::Context::load_kernels);
/// see the [user operators guide](crate::user). An operator with no
/// kernel for the element type (loaded or shipped) gives
/// [`Error::Unsupported`] before anything is launched.
pub trait ReduceOp<T: kops::Element>: Accumulate<T> + Named {}
impl<T: kops::Element, Op: Accumulate<T> + Named> ReduceOp<T> for Op {}

/// Float element types (`f32`, `f64`, and `f16`, `bf16` from the `half`
/// crate, which accumulate in `f32`), for norms.
pub trait Float: Scalar {
    fn sqrt(self) -> Self;
    fn div(self, o: Self) -> Self;
    fn from_usize(n: usize) -> Self;
}
impl Float for f32 {
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn div(self, o: Self) -> Self {
        self / o
    }
    fn from_usize(n: usize) -> Self {
        n as f32
    }
}
impl Float for f64 {
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn div(self, o: Self) -> Self {
        self / o
    }
    fn from_usize(n: usize) -> Self {
        n as f64
    }
}
macro_rules! half_float {
    ($($t:ident),*) => {$(
        /// Computed in `f32`, rounded once to the type.
        impl Float for half::$t {
            fn sqrt(self) -> Self {
                half::$t::from_f32(self.to_f32().sqrt())
            }
            fn div(self, o: Self) -> Self {
                half::$t::from_f32(self.to_f32() / o.to_f32())
            }
            fn from_usize(n: usize) -> Self {
                half::$t::from_f32(n as f32)
            }
        }
    )*};
}
half_float!(f16, bf16);

/// An input of a reduction: anything [`DeviceInput`] (device buffers,
/// views, cudarc's memory, host slices).
pub use crate::buffer::DeviceInput as Input;

/// One pass of the plan: on how many elements, in how many blocks.
struct Pass {
    n: u64,
    grid: u32,
}

impl<'c> Reducer<'c> {
    /// Choose the kernel (default [`ReduceAlgorithm::Vectorized`]).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::reduce::ReduceAlgorithm;
    /// let r = ctx.reducer().algorithm(ReduceAlgorithm::Interleaved);
    /// assert_eq!(r.max(&[3u64, 9, 4][..]).unwrap(), 9);
    /// ```
    pub fn algorithm(mut self, algorithm: ReduceAlgorithm) -> Self {
        self.algorithm = algorithm;
        self
    }
    /// Threads per block: a power of two in 32 ..= 1024 (default 256).
    /// The default algorithm has every size for every operator; the
    /// lecture variants 1-8 have every size for `sum` and 256 for the other
    /// operators (any other gives [`Error::UnsupportedBlockSize`]).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.reducer().block_size(1024).sum(&[1i32; 3000][..]).unwrap(), 3000);
    /// assert!(matches!(ctx.reducer().block_size(100).sum(&[1i32][..]),
    ///                  Err(gpuprim::Error::UnsupportedBlockSize { block: 100, .. })));
    /// ```
    pub fn block_size(mut self, block: u32) -> Self {
        self.block = block;
        self
    }
    /// How the grid is finished (default [`Finish::LastBlock`]).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::reduce::Finish;
    /// for f in Finish::ALL {
    ///     assert_eq!(ctx.reducer().finish(f).sum(&[5u32; 700][..]).unwrap(), 3500);
    /// }
    /// ```
    pub fn finish(mut self, finish: Finish) -> Self {
        self.finish = finish;
        self
    }
    /// Whether float results must be the same run to run (default true).
    /// Only [`Finish::Atomic`] on floats needs `false`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::reduce::Finish;
    /// let atomic = ctx.reducer().finish(Finish::Atomic);
    /// assert!(atomic.sum(&[0.5f32; 8][..]).is_err()); // refused: order-dependent rounding
    /// assert_eq!(atomic.deterministic(false).sum(&[0.5f32; 8][..]).unwrap(), 4.0);
    /// ```
    pub fn deterministic(mut self, yes: bool) -> Self {
        self.deterministic = yes;
        self
    }
    /// Blocks of the first launch for the grid-stride variants 7-9
    /// (default: enough to fill every multiprocessor).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.reducer().grid_size(3).sum(&[2i64; 10_000][..]).unwrap(), 20_000);
    /// ```
    pub fn grid_size(mut self, grid: u32) -> Self {
        self.grid = Some(grid);
        self
    }

    /// Sum; see [`Context::sum`].
    pub fn sum<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        self.value::<Plain<T, kops::Sum>>(Kernels::of::<T, T::Acc>(Op::Sum), x, None, Post::None)
    }
    /// Stream-ordered sum into `out[0]`; see [`Context::sum_into`].
    pub fn sum_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reduce::<Plain<T, kops::Sum>, _>(Kernels::of::<T, T::Acc>(Op::Sum), x, None, out, None, Post::None)
    }
    /// Stream-ordered sum into `out[0]` using caller-provided temporary
    /// storage (see [`Reducer::temp`]): allocates nothing. Every
    /// `*_with_temp` call works the same way.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let r = ctx.reducer();
    /// let mut temp = r.temp::<f64>(1 << 12)?;
    /// let mut out = ctx.alloc::<f64>(1)?;
    /// for k in 1..4 {
    ///     let x = ctx.upload(&vec![k as f64; 1 << 12])?;
    ///     r.sum_with_temp(&x, &mut out, &mut temp)?;
    ///     assert_eq!(out.to_vec()?[0], (k << 12) as f64);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn sum_with_temp<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reduce::<Plain<T, kops::Sum>, _>(Kernels::of::<T, T::Acc>(Op::Sum), x, None, out, Some(temp), Post::None)
    }

    /// Product; see [`Context::product`].
    pub fn product<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        self.value::<Plain<T, kops::Product>>(Kernels::of::<T, T::Acc>(Op::Product), x, None, Post::None)
    }
    /// Stream-ordered product into `out[0]`.
    pub fn product_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reduce::<Plain<T, kops::Product>, _>(Kernels::of::<T, T::Acc>(Op::Product), x, None, out, None, Post::None)
    }
    /// [`product_into`](Reducer::product_into) with caller-provided
    /// temporary storage.
    pub fn product_with_temp<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        let k = Kernels::of::<T, T::Acc>(Op::Product);
        self.reduce::<Plain<T, kops::Product>, _>(k, x, None, out, Some(temp), Post::None)
    }

    /// Minimum; see [`Context::min`].
    pub fn min<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<T> {
        self.value::<Plain<T, kops::Min>>(Kernels::of::<T, T>(Op::Min), x, None, Post::None)
    }
    /// Stream-ordered minimum into `out[0]`.
    pub fn min_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()> {
        self.reduce::<Plain<T, kops::Min>, _>(Kernels::of::<T, T>(Op::Min), x, None, out, None, Post::None)
    }
    /// [`min_into`](Reducer::min_into) with caller-provided temporary
    /// storage.
    pub fn min_with_temp<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()> {
        self.reduce::<Plain<T, kops::Min>, _>(Kernels::of::<T, T>(Op::Min), x, None, out, Some(temp), Post::None)
    }

    /// Maximum; see [`Context::max`].
    pub fn max<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<T> {
        self.value::<Plain<T, kops::Max>>(Kernels::of::<T, T>(Op::Max), x, None, Post::None)
    }
    /// Stream-ordered maximum into `out[0]`.
    pub fn max_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()> {
        self.reduce::<Plain<T, kops::Max>, _>(Kernels::of::<T, T>(Op::Max), x, None, out, None, Post::None)
    }
    /// [`max_into`](Reducer::max_into) with caller-provided temporary
    /// storage.
    pub fn max_with_temp<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()> {
        self.reduce::<Plain<T, kops::Max>, _>(Kernels::of::<T, T>(Op::Max), x, None, out, Some(temp), Post::None)
    }

    /// Reduce with any operator the kernels are instantiated for, named by
    /// its type: the built-in monoids, or one of your own (see
    /// [`ReduceOp`]). The result is in the operator's accumulator type
    /// (`Op::Acc`: `T::Acc` for [`Sum`] and [`Product`], `T` for the others).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::reduce::{Max, Sum};
    /// let x = ctx.upload(&[3i32, -7, 12]).unwrap();
    /// assert_eq!(ctx.reducer().reduce_by::<i32, Max>(&x).unwrap(), 12);
    /// assert_eq!(ctx.reducer().reduce_by::<i32, Sum>(&x).unwrap(), 8);
    /// ```
    pub fn reduce_by<T: Scalar, Op: ReduceOp<T>>(&self, x: impl DeviceInput<T>) -> Result<Op::Acc>
    where
        Op::Acc: DeviceRepr,
    {
        self.value::<Plain<T, Op>>(Kernels::of::<T, Op::Acc>(self::Op::Custom(Op::NAME)), x, None, Post::None)
    }
    /// Stream-ordered [`reduce_by`](Reducer::reduce_by) into `out[0]`.
    pub fn reduce_by_into<T: Scalar, Op: ReduceOp<T>>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<Op::Acc> + ?Sized),
    ) -> Result<()>
    where
        Op::Acc: DeviceRepr,
    {
        let k = Kernels::of::<T, Op::Acc>(self::Op::Custom(Op::NAME));
        self.reduce::<Plain<T, Op>, _>(k, x, None, out, None, Post::None)
    }
    /// [`reduce_by_into`](Reducer::reduce_by_into) with caller-provided
    /// temporary storage.
    pub fn reduce_by_with_temp<T: Scalar, Op: ReduceOp<T>>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<Op::Acc> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()>
    where
        Op::Acc: DeviceRepr,
    {
        let k = Kernels::of::<T, Op::Acc>(self::Op::Custom(Op::NAME));
        self.reduce::<Plain<T, Op>, _>(k, x, None, out, Some(temp), Post::None)
    }

    /// Bitwise and of all elements (all ones for empty input).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.reducer().and(&[0b1110u32, 0b0111][..]).unwrap(), 0b0110);
    /// ```
    pub fn and<T: Scalar + Integer>(&self, x: impl DeviceInput<T>) -> Result<T> {
        self.value::<Plain<T, kops::BitAnd>>(Kernels::of::<T, T>(Op::And), x, None, Post::None)
    }
    /// Stream-ordered bitwise and into `out[0]`.
    pub fn and_into<T: Scalar + Integer>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()> {
        self.reduce::<Plain<T, kops::BitAnd>, _>(Kernels::of::<T, T>(Op::And), x, None, out, None, Post::None)
    }
    /// [`and_into`](Reducer::and_into) with caller-provided temporary
    /// storage.
    pub fn and_with_temp<T: Scalar + Integer>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()> {
        self.reduce::<Plain<T, kops::BitAnd>, _>(Kernels::of::<T, T>(Op::And), x, None, out, Some(temp), Post::None)
    }
    /// Bitwise or of all elements (zero for empty input).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.reducer().or(&[0b1000u64, 0b0001][..]).unwrap(), 0b1001);
    /// ```
    pub fn or<T: Scalar + Integer>(&self, x: impl DeviceInput<T>) -> Result<T> {
        self.value::<Plain<T, kops::BitOr>>(Kernels::of::<T, T>(Op::Or), x, None, Post::None)
    }
    /// Stream-ordered bitwise or into `out[0]`.
    pub fn or_into<T: Scalar + Integer>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()> {
        self.reduce::<Plain<T, kops::BitOr>, _>(Kernels::of::<T, T>(Op::Or), x, None, out, None, Post::None)
    }
    /// [`or_into`](Reducer::or_into) with caller-provided temporary storage.
    pub fn or_with_temp<T: Scalar + Integer>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()> {
        self.reduce::<Plain<T, kops::BitOr>, _>(Kernels::of::<T, T>(Op::Or), x, None, out, Some(temp), Post::None)
    }
    /// Bitwise xor of all elements (zero for empty input).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.reducer().xor(&[0b1100i32, 0b1010][..]).unwrap(), 0b0110);
    /// ```
    pub fn xor<T: Scalar + Integer>(&self, x: impl DeviceInput<T>) -> Result<T> {
        self.value::<Plain<T, kops::BitXor>>(Kernels::of::<T, T>(Op::Xor), x, None, Post::None)
    }
    /// Stream-ordered bitwise xor into `out[0]`.
    pub fn xor_into<T: Scalar + Integer>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
    ) -> Result<()> {
        self.reduce::<Plain<T, kops::BitXor>, _>(Kernels::of::<T, T>(Op::Xor), x, None, out, None, Post::None)
    }
    /// [`xor_into`](Reducer::xor_into) with caller-provided temporary
    /// storage.
    pub fn xor_with_temp<T: Scalar + Integer>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()> {
        self.reduce::<Plain<T, kops::BitXor>, _>(Kernels::of::<T, T>(Op::Xor), x, None, out, Some(temp), Post::None)
    }

    /// Dot product; see [`Context::dot`].
    pub fn dot<T: Scalar>(&self, x: impl DeviceInput<T>, y: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        let y = y.input(self.ctx)?;
        self.value::<Dot<T>>(Kernels::of::<T, T::Acc>(Op::Dot), x, Some(y.view), Post::None)
    }
    /// Stream-ordered dot product into `out[0]`; the lengths must match.
    pub fn dot_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        y: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        let y = y.input(self.ctx)?;
        self.reduce::<Dot<T>, _>(Kernels::of::<T, T::Acc>(Op::Dot), x, Some(y.view), out, None, Post::None)
    }
    /// [`dot_into`](Reducer::dot_into) with caller-provided temporary
    /// storage.
    pub fn dot_with_temp<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        y: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        let y = y.input(self.ctx)?;
        self.reduce::<Dot<T>, _>(Kernels::of::<T, T::Acc>(Op::Dot), x, Some(y.view), out, Some(temp), Post::None)
    }

    /// L1 norm; see [`Context::norm1`].
    pub fn norm1<T: Float>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        self.value::<SumAbs<T>>(Kernels::of::<T, T::Acc>(Op::SumAbs), x, None, Post::None)
    }
    /// Stream-ordered L1 norm into `out[0]`.
    pub fn norm1_into<T: Float>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reduce::<SumAbs<T>, _>(Kernels::of::<T, T::Acc>(Op::SumAbs), x, None, out, None, Post::None)
    }
    /// [`norm1_into`](Reducer::norm1_into) with caller-provided temporary
    /// storage.
    pub fn norm1_with_temp<T: Float>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reduce::<SumAbs<T>, _>(Kernels::of::<T, T::Acc>(Op::SumAbs), x, None, out, Some(temp), Post::None)
    }

    /// Sum of squares `sum x^2` in `T::Acc` (any element type; integers
    /// wrap at the accumulator's width).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.reducer().sum_squares(&[1i32, 2, 3][..]).unwrap(), 14);
    /// assert_eq!(ctx.reducer().sum_squares(&[-128i8, 127][..]).unwrap(), 32_513i64);
    /// ```
    pub fn sum_squares<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        self.value::<SumSquares<T>>(Kernels::of::<T, T::Acc>(Op::SumSquares), x, None, Post::None)
    }
    /// Stream-ordered sum of squares into `out[0]`.
    pub fn sum_squares_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        self.reduce::<SumSquares<T>, _>(Kernels::of::<T, T::Acc>(Op::SumSquares), x, None, out, None, Post::None)
    }
    /// [`sum_squares_into`](Reducer::sum_squares_into) with caller-provided
    /// temporary storage.
    pub fn sum_squares_with_temp<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        let k = Kernels::of::<T, T::Acc>(Op::SumSquares);
        self.reduce::<SumSquares<T>, _>(k, x, None, out, Some(temp), Post::None)
    }

    /// Euclidean norm; see [`Context::norm2`].
    pub fn norm2<T: Float>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        let post = Post::SqrtMean { divisor: 1 };
        self.value::<SumSquares<T>>(Kernels::of::<T, T::Acc>(Op::SumSquares), x, None, post)
    }
    /// Stream-ordered Euclidean norm into `out[0]`: the sum of squares,
    /// then its square root on the device.
    pub fn norm2_into<T: Float>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        let post = Post::SqrtMean { divisor: 1 };
        self.reduce::<SumSquares<T>, _>(Kernels::of::<T, T::Acc>(Op::SumSquares), x, None, out, None, post)
    }
    /// [`norm2_into`](Reducer::norm2_into) with caller-provided temporary
    /// storage.
    pub fn norm2_with_temp<T: Float>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        let post = Post::SqrtMean { divisor: 1 };
        self.reduce::<SumSquares<T>, _>(Kernels::of::<T, T::Acc>(Op::SumSquares), x, None, out, Some(temp), post)
    }

    /// Root mean square; see [`Context::rms`].
    pub fn rms<T: Float>(&self, x: impl DeviceInput<T>) -> Result<T::Acc>
    where
        T::Acc: DeviceRepr,
    {
        let x = x.input(self.ctx)?;
        let post = Post::SqrtMean { divisor: x.view.len() as u64 };
        self.value::<SumSquares<T>>(Kernels::of::<T, T::Acc>(Op::SumSquares), x.view, None, post)
    }
    /// Stream-ordered root mean square into `out[0]` (`0` for empty
    /// input): the sum of squares, then `sqrt(s / n)` on the device.
    pub fn rms_into<T: Float>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        let x = x.input(self.ctx)?;
        let post = Post::SqrtMean { divisor: x.view.len() as u64 };
        self.reduce::<SumSquares<T>, _>(Kernels::of::<T, T::Acc>(Op::SumSquares), &x.view, None, out, None, post)
    }
    /// [`rms_into`](Reducer::rms_into) with caller-provided temporary
    /// storage.
    pub fn rms_with_temp<T: Float>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<T::Acc> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()>
    where
        T::Acc: DeviceRepr,
    {
        let x = x.input(self.ctx)?;
        let post = Post::SqrtMean { divisor: x.view.len() as u64 };
        self.reduce::<SumSquares<T>, _>(Kernels::of::<T, T::Acc>(Op::SumSquares), &x.view, None, out, Some(temp), post)
    }

    /// Argmin; see [`Context::argmin`].
    pub fn argmin<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<Option<(usize, T)>> {
        self.arg::<T, Smallest>(Op::ArgMin, x)
    }
    /// Stream-ordered argmin into `out[0]`; see [`Context::argmin_into`].
    pub fn argmin_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<u64> + ?Sized),
    ) -> Result<()> {
        self.arg_into::<T, Smallest>(Op::ArgMin, x, out, None)
    }
    /// [`argmin_into`](Reducer::argmin_into) with caller-provided temporary
    /// storage.
    pub fn argmin_with_temp<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<u64> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()> {
        self.arg_into::<T, Smallest>(Op::ArgMin, x, out, Some(temp))
    }
    /// Argmax; see [`Context::argmax`].
    pub fn argmax<T: Scalar>(&self, x: impl DeviceInput<T>) -> Result<Option<(usize, T)>> {
        self.arg::<T, Largest>(Op::ArgMax, x)
    }
    /// Stream-ordered argmax into `out[0]`; see [`Context::argmax_into`].
    pub fn argmax_into<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<u64> + ?Sized),
    ) -> Result<()> {
        self.arg_into::<T, Largest>(Op::ArgMax, x, out, None)
    }
    /// [`argmax_into`](Reducer::argmax_into) with caller-provided temporary
    /// storage.
    pub fn argmax_with_temp<T: Scalar>(
        &self,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<u64> + ?Sized),
        temp: &mut ReduceTemp,
    ) -> Result<()> {
        self.arg_into::<T, Largest>(Op::ArgMax, x, out, Some(temp))
    }

    /// Bytes of temporary storage a reduction of `len` elements of `T`
    /// needs with these options (for any operator or map, and any element
    /// type: yours too).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let bytes = ctx.reducer().temp_bytes::<f32>(1 << 20).unwrap();
    /// assert!(bytes >= 256);
    /// ```
    pub fn temp_bytes<T: DeviceRepr>(&self, len: usize) -> Result<usize> {
        // Every accumulator gets a 32-byte slot (the largest there is),
        // and every operator on `T` has the same launch shape.
        Ok(Layout::of(&self.plan(len as u64, std::mem::size_of::<T>())?).end)
    }

    /// Temporary storage for reductions of up to `len` elements of `T`.
    pub fn temp<T: DeviceRepr>(&self, len: usize) -> Result<ReduceTemp> {
        let bytes = self.temp_bytes::<T>(len)?;
        let mut buf = self.ctx.alloc::<u8>(bytes)?;
        buf.zero()?;
        Ok(ReduceTemp { buf })
    }

    /// The argmin/argmax path of every form.
    fn arg_into<T: Scalar, E: Extreme>(
        &self,
        op: Op,
        x: &(impl DeviceInput<T> + ?Sized),
        out: &mut (impl DeviceOutput<u64> + ?Sized),
        temp: Option<&mut ReduceTemp>,
    ) -> Result<()> {
        // The partials hold the value widened to 8 bytes: their kernels are
        // those of the 8-byte type.
        let k = Kernels { op, input: T::NAME, partials: <T::Wide as DeviceRepr>::NAME };
        self.reduce::<Arg<T, E>, u64>(k, x, None, out, temp, Post::ArgIndex)
    }

    fn arg<T: Scalar, E: Extreme>(&self, op: Op, x: impl DeviceInput<T>) -> Result<Option<(usize, T)>> {
        let x = x.input(self.ctx)?;
        let x = &x.view;
        if x.is_empty() {
            return Ok(None);
        }
        let mut out = self.ctx.alloc::<u64>(1)?;
        self.arg_into::<T, E>(op, x, &mut out, None)?;
        let mut i = [0u64];
        out.copy_to_host(&mut i)?;
        let i = i[0] as usize;
        // Read the winning element back exactly (the accumulator holds it
        // widened).
        let mut one = [T::default()];
        x.copy_to_host_at(self.ctx, i, &mut one)?;
        Ok(Some((i, one[0])))
    }

    /// A reduction returned to the host: into a one-element buffer, then
    /// read back.
    fn value<R>(
        &self,
        k: Kernels,
        x: impl DeviceInput<R::In>,
        y: Option<DeviceSlice<'_, R::In>>,
        post: Post,
    ) -> Result<R::Acc>
    where
        R: Reduction,
        R::In: DeviceRepr,
        R::Acc: DeviceRepr,
    {
        let x = x.input(self.ctx)?;
        // Straight into mapped host memory (CUDA): no allocation, free or
        // copy per call. Not for the atomic finish, whose atomics would
        // then cross the bus.
        if self.finish != Finish::Atomic {
            let got =
                self.ctx.read_back::<R::Acc>(|out| self.reduce_views::<R, R::Acc>(k, x.view, y, out, None, post))?;
            if let Some(v) = got {
                return Ok(v);
            }
        }
        let mut out = self.ctx.alloc::<R::Acc>(1)?;
        self.reduce::<R, R::Acc>(k, &x.view, y, &mut out, None, post)?;
        let mut v = [R::Acc::default()];
        out.copy_to_host(&mut v)?;
        Ok(v[0])
    }

    /// The one path every reduction takes: check the arguments and that
    /// every kernel it needs exists (before anything is launched), then
    /// queue the launches in `temp`, or in the context's scratch storage.
    /// `out[0]` receives an `R::Acc`, or for [`Post::ArgIndex`] a `u64`.
    fn reduce<R, O>(
        &self,
        k: Kernels,
        x: &(impl DeviceInput<R::In> + ?Sized),
        y: Option<DeviceSlice<'_, R::In>>,
        out: &mut (impl DeviceOutput<O> + ?Sized),
        temp: Option<&mut ReduceTemp>,
        post: Post,
    ) -> Result<()>
    where
        R: Reduction,
        R::In: DeviceRepr,
        R::Acc: DeviceRepr,
        O: DeviceRepr,
    {
        let x = x.input(self.ctx)?;
        let mut out = out.output(self.ctx)?;
        if let Some(t) = &temp {
            self.ctx.check_domain(t.buf.context().domain(), "reduction temporary storage")?;
        }
        self.reduce_views::<R, O>(k, x.view, y, out.view.reborrow(), temp, post)
    }

    /// [`Reducer::reduce`] on resolved views.
    fn reduce_views<R, O>(
        &self,
        k: Kernels,
        x: DeviceSlice<'_, R::In>,
        y: Option<DeviceSlice<'_, R::In>>,
        out: DeviceSliceMut<'_, O>,
        temp: Option<&mut ReduceTemp>,
        post: Post,
    ) -> Result<()>
    where
        R: Reduction,
        R::In: DeviceRepr,
        R::Acc: DeviceRepr,
        O: DeviceRepr,
    {
        debug_assert_eq!(
            std::mem::size_of::<O>(),
            if post == Post::ArgIndex { 8 } else { std::mem::size_of::<R::Acc>() }
        );
        if out.is_empty() {
            return Err(Error::LengthMismatch { what: "reduction output", expected: 1, got: 0 });
        }
        if let Some(y) = y
            && y.len() != x.len()
        {
            return Err(Error::LengthMismatch { what: "second input", expected: x.len(), got: y.len() });
        }
        let n = x.len() as u64;
        let plan = self.plan(n, std::mem::size_of::<R::In>())?;
        let names = self.kernel_names(k, &plan, post, <R::Acc as DeviceRepr>::NAME)?;
        if self.finish == Finish::Atomic {
            self.check_atomic::<R>(k)?;
        }
        let layout = Layout::of(&plan);
        let inputs = Inputs::Plain { y: y.map(|y| y.arg()) };
        self.in_temp(&layout, temp, |base| {
            self.launches::<R>(&plan, &names, base, &layout, x.arg(), inputs, n, out.addr(), post)
        })
    }

    /// Run `run` with the base address of temporary storage laid out as
    /// `layout`: the caller's `temp` (refused when too small), or the
    /// context's scratch storage.
    fn in_temp(
        &self,
        layout: &Layout,
        temp: Option<&mut ReduceTemp>,
        run: impl FnOnce(u64) -> Result<()>,
    ) -> Result<()> {
        match temp {
            Some(t) if t.bytes() < layout.end => {
                Err(Error::LengthMismatch { what: "temporary storage (bytes)", expected: layout.end, got: t.bytes() })
            }
            Some(t) => run(t.buf.addr()),
            None => self.ctx.with_scratch(layout.end, |a| run(a.addr())),
        }
    }

    /// Whether [`Finish::Atomic`] can finish `R`.
    fn check_atomic<R>(&self, k: Kernels) -> Result<()>
    where
        R: Reduction,
        R::Acc: DeviceRepr,
    {
        let acc = <R::Acc as DeviceRepr>::NAME;
        if R::ATOMIC_BYTES == 0 {
            return Err(Error::Unsupported {
                what: format!("Finish::Atomic for `{}` on {}", k.op.name(), k.input),
                reason: format!(
                    "its accumulator ({acc}, {} bytes) has no atomic update: only 4- and 8-byte ones do",
                    std::mem::size_of::<R::Acc>()
                ),
            });
        }
        if matches!(acc, "f32" | "f64") && self.deterministic {
            return Err(Error::Unsupported {
                what: format!("Finish::Atomic for {acc}"),
                reason: "atomic float combines are not deterministic; call .deterministic(false) to accept that".into(),
            });
        }
        Ok(())
    }

    /// The launches, first to last.
    fn plan(&self, n: u64, elem_bytes: usize) -> Result<Vec<Pass>> {
        let b = self.block;
        if !(b.is_power_of_two() && (32..=1024).contains(&b)) {
            return Err(Error::UnsupportedBlockSize { block: b, reason: "must be a power of two in 32..=1024".into() });
        }
        let grid_for = |n: u64, elem_bytes: usize| -> Result<u32> {
            let g = match self.algorithm.per_block(b) {
                Some(per) => n.div_ceil(per).max(1),
                None => {
                    // The tuning policy's grid rule; lecture variants take
                    // one element per thread in their first iteration.
                    let per_thread = if self.algorithm == ReduceAlgorithm::Vectorized {
                        policy::items_per_thread(elem_bytes)
                    } else {
                        1
                    };
                    match self.grid {
                        Some(g) => n.div_ceil(b as u64 * per_thread).clamp(1, u64::from(g).max(1)),
                        None => policy::grid(n, b, self.ctx.multiprocessors(), per_thread),
                    }
                }
            };
            if g > MAX_GRID {
                return Err(Error::TooLarge {
                    what: "input for this algorithm and block size (one block per tile)",
                    len: n,
                    max: MAX_GRID * self.algorithm.per_block(b).unwrap_or(1),
                });
            }
            Ok(g as u32)
        };
        let mut passes = vec![Pass { n, grid: grid_for(n, elem_bytes)? }];
        if self.finish == Finish::Relaunch {
            let mut g = passes[0].grid as u64;
            while g > 1 {
                // Partials are 4 bytes or more; sized as before.
                let next = grid_for(g, 4)?;
                passes.push(Pass { n: g, grid: next });
                g = next as u64;
            }
        }
        Ok(passes)
    }

    /// Every kernel `plan` launches, looked up before anything runs: a
    /// block size, element type or operator without kernels is an error
    /// here, not a failed launch halfway.
    fn kernel_names(&self, k: Kernels, plan: &[Pass], post: Post, acc: &'static str) -> Result<Vec<&'static str>> {
        let (family, b) = (Family(self.algorithm.kernel()), self.block);
        let mut names = Vec::with_capacity(plan.len() + 1);
        for i in 0..plan.len() {
            let (op, ty) = if i == 0 { (k.op.name(), k.input) } else { (k.op.partials(), k.partials) };
            let kernel =
                family.get(self.ctx, Instance::of(ty).op(op), b, String::new).map_err(|_| self.why_missing(op, ty))?;
            names.push(kernel.name);
        }
        let task = || format!("the finishing step of `{}` on {}", k.op.name(), k.input);
        match post {
            Post::None => {}
            Post::SqrtMean { .. } => {
                names.push(Family("util_sqrt_mean").get(self.ctx, Instance::of(acc), 32, task)?.name)
            }
            Post::ArgIndex => names.push(Family("util_arg_index").get(self.ctx, Instance::of(""), 32, task)?.name),
        }
        Ok(names)
    }

    /// The error for a missing kernel of the algorithm's family for `op` on
    /// `ty` at the block size: the block sizes it has, or the algorithm
    /// that has the type, or that the operator has no kernels for it.
    fn why_missing(&self, op: &'static str, ty: &'static str) -> Error {
        let alg = self.algorithm;
        let what = Instance::of(ty).op(op);
        let blocks = Family(alg.kernel()).blocks(self.ctx, what);
        if !blocks.is_empty() {
            return Error::UnsupportedBlockSize {
                block: self.block,
                reason: format!(
                    "`{op}` on {ty} with ReduceAlgorithm::{alg:?} is instantiated for blocks of {blocks:?} threads"
                ),
            };
        }
        if alg != ReduceAlgorithm::Vectorized
            && !Family(ReduceAlgorithm::Vectorized.kernel()).blocks(self.ctx, what).is_empty()
        {
            return Error::Unsupported {
                what: format!("ReduceAlgorithm::{alg:?} for `{op}` on {ty}"),
                reason: "the lecture variants are instantiated for i32, u32, i64, u64, f32 and f64; \
                         ReduceAlgorithm::Vectorized (the default) takes every element type"
                    .into(),
            };
        }
        Error::Unsupported { what: format!("`{op}` on {ty}"), reason: Family(alg.kernel()).not_instantiated(what) }
    }

    /// Queue the passes of `plan` (and the finishing kernel of `post`) with
    /// temporary storage at `base`. The accumulator lands in `out`, or for
    /// [`Post::ArgIndex`] in the layout's slot, whose index then goes to
    /// `out`.
    #[allow(clippy::too_many_arguments)]
    fn launches<R>(
        &self,
        plan: &[Pass],
        names: &[&str],
        base: u64,
        layout: &Layout,
        x: crate::Arg,
        inputs: Inputs,
        n: u64,
        out: u64,
        post: Post,
    ) -> Result<()>
    where
        R: Reduction,
        R::Acc: DeviceRepr,
    {
        let dest = if post == Post::ArgIndex { base + layout.slot as u64 } else { out };
        if self.finish == Finish::Atomic {
            // Stream-ordered, so the call stays asynchronous.
            self.ctx.set_first_at(dest, R::identity())?;
        }
        let b = self.block;
        let shared = finish_smem::<R::Acc>(b) as u32;
        let bufs = [base + layout.first as u64, base + layout.second as u64];
        let counter = crate::Arg::Ptr(base);
        let first_mode = match self.finish {
            Finish::Atomic => mode::ATOMIC,
            Finish::LastBlock => mode::LAST_BLOCK,
            Finish::Relaunch | Finish::Host => mode::PARTIALS,
        };
        for (k, pass) in plan.iter().enumerate() {
            let last = k + 1 == plan.len();
            // Where this pass reads and writes.
            let a_in = if k == 0 { x } else { crate::Arg::Ptr(bufs[(k - 1) % 2]) };
            let partials = if self.finish == Finish::Relaunch && last { dest } else { bufs[k % 2] };
            let rest = [pass.n.into(), crate::Arg::Ptr(partials), crate::Arg::Ptr(dest), counter];
            let mut args = [crate::Arg::Ptr(0); 8];
            let len = match inputs {
                Inputs::Plain { y } => {
                    let b_in = if k == 0 { y.unwrap_or(crate::Arg::Ptr(0)) } else { crate::Arg::Ptr(0) };
                    let m = if k == 0 { first_mode } else { mode::PARTIALS };
                    args[..7].copy_from_slice(&[a_in, b_in, rest[0], rest[1], rest[2], rest[3], m.into()]);
                    7
                }
                Inputs::Mapped { words } => {
                    // Later passes run the same kernel over the partials.
                    let m = if k == 0 { first_mode } else { PARTIALS_INPUT };
                    let [w0, w1] = words.map(crate::Arg::from);
                    args.copy_from_slice(&[a_in, w0, w1, rest[0], rest[1], rest[2], rest[3], m.into()]);
                    8
                }
            };
            // SAFETY: `x` (and `y`) hold n elements; each partials buffer at
            // `base` holds one accumulator (at most 32 bytes) per block of
            // its pass and the slot one (`Layout`); `out` holds one; the
            // counter is zero (temporary storage starts zeroed and the last
            // block resets it); a map's words are the bytes of a map of the
            // kernel's type.
            unsafe {
                self.ctx.launch(
                    names[k],
                    LaunchConfig { grid: pass.grid, block: b, shared_bytes: shared },
                    &args[..len],
                )?
            };
        }
        if self.finish == Finish::Host {
            let g = plan[0].grid as usize;
            let mut partials = vec![R::Acc::default(); g];
            self.ctx.download_bytes(bufs[0], crate::buffer::as_bytes_mut(&mut partials))?;
            let total = partials.into_iter().fold(R::identity(), R::combine);
            self.ctx.upload_bytes(dest, crate::buffer::as_bytes(&[total]))?;
        }
        let one = LaunchConfig { grid: 1, block: 32, shared_bytes: 0 };
        match post {
            Post::None => Ok(()),
            // SAFETY: `out` holds one float accumulator.
            Post::SqrtMean { divisor } => unsafe {
                self.ctx.launch(names[plan.len()], one, &[crate::Arg::Ptr(out), divisor.into()])
            },
            // SAFETY: the slot holds an `Indexed` (its index at byte 8) and
            // `out` one u64.
            Post::ArgIndex => unsafe {
                self.ctx.launch(names[plan.len()], one, &[crate::Arg::Ptr(dest + 8), n.into(), crate::Arg::Ptr(out)])
            },
        }
    }
}

/// What a reduction's kernels take besides the input: the plain family's
/// second input (`reduce_<variant>`: `a, b, n, ...`), or a map's bytes
/// (`reduce_map`: `a, s0, s1, n, ...`, whose later passes run the same
/// kernel over the partials).
#[derive(Clone, Copy)]
enum Inputs {
    Plain { y: Option<crate::Arg> },
    Mapped { words: [u64; 2] },
}

/// Temporary storage layout, in bytes: the "last block" counter first, at
/// a fixed place (so storage reused with another layout still finds it
/// zero), then the first and second partial buffers, then one accumulator
/// (argmin/argmax's value and index, before its index goes to the
/// output). Every accumulator gets 32 bytes (the largest a shuffle moves).
struct Layout {
    first: usize,
    second: usize,
    slot: usize,
    end: usize,
}

impl Layout {
    fn of(plan: &[Pass]) -> Layout {
        const ACC: usize = 32;
        let first = COUNTER_BYTES;
        let second = (first + plan[0].grid as usize * ACC).next_multiple_of(256);
        let slot = (second + plan.get(1).map(|p| p.grid as usize * ACC).unwrap_or(0)).next_multiple_of(ACC);
        Layout { first, second, slot, end: slot + ACC }
    }
}
