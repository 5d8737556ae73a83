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
//! Integer results wrap on overflow, as the kernels' arithmetic does.
//! Float results are the same run to run unless [`Finish::Atomic`] is
//! chosen with [`Reducer::deterministic`]`(false)`: every other strategy
//! combines in an order fixed by the launch shape.

use crate::buffer::{DeviceBuffer, DeviceRepr, Scalar};
use crate::context::{Context, LaunchConfig};
use crate::error::{Error, Result};
use gpuprim_kernels::ops::{self as kops};
use gpuprim_kernels::reduce::block::{finish_smem, mode};
use gpuprim_kernels::reduce::reduction::{Arg, Dot, Indexed, Largest, Plain, Reduction, Smallest, SumAbs, SumSquares};

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

/// Block sizes the kernels are instantiated for (`sum`: all of them; the
/// other operators: 256).
pub const BLOCK_SIZES: [u32; 6] = [32, 64, 128, 256, 512, 1024];
/// Threads per block of the default reduction.
pub const DEFAULT_BLOCK: u32 = 256;
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

    /// Sum of all elements (`0` for empty input; integers wrap).
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let v = ctx.upload(&[1.5f32, 2.0, -0.5])?;
    /// assert_eq!(ctx.sum(&v)?, 3.0);
    /// assert_eq!(ctx.sum(&[1u32, 2, 3][..])?, 6); // host slices work too
    /// # Ok(()) }
    /// ```
    pub fn sum<T: Scalar>(&self, x: impl Input<T>) -> Result<T> {
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
    pub fn sum_into<T: Scalar>(&self, x: &DeviceBuffer<T>, out: &mut DeviceBuffer<T>) -> Result<()> {
        self.reducer().sum_into(x, out)
    }
    /// Product of all elements (`1` for empty input; integers wrap).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.product(&[2i64, 3, 7][..]).unwrap(), 42);
    /// ```
    pub fn product<T: Scalar>(&self, x: impl Input<T>) -> Result<T> {
        self.reducer().product(x)
    }
    /// Smallest element (the type's largest value, `+inf` for floats, for
    /// empty input). NaNs are ignored.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.min(&[4.0f64, -2.5, 9.0][..]).unwrap(), -2.5);
    /// ```
    pub fn min<T: Scalar>(&self, x: impl Input<T>) -> Result<T> {
        self.reducer().min(x)
    }
    /// Largest element (the type's smallest value, `-inf`, for empty
    /// input). NaNs are ignored.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.max(&[4u32, 12, 9][..]).unwrap(), 12);
    /// ```
    pub fn max<T: Scalar>(&self, x: impl Input<T>) -> Result<T> {
        self.reducer().max(x)
    }
    /// Dot product `sum x[i] * y[i]`; the lengths must match.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.dot(&[1.0f32, 2.0][..], &[3.0f32, 4.0][..]).unwrap(), 11.0);
    /// ```
    pub fn dot<T: Scalar>(&self, x: impl Input<T>, y: impl Input<T>) -> Result<T> {
        self.reducer().dot(x, y)
    }
    /// Euclidean norm `sqrt(sum x^2)`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.norm2(&[3.0f64, 4.0][..]).unwrap(), 5.0);
    /// ```
    pub fn norm2<T: Float>(&self, x: impl Input<T>) -> Result<T> {
        self.reducer().norm2(x)
    }
    /// L1 norm `sum |x|`.
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.norm1(&[3.0f32, -4.0][..]).unwrap(), 7.0);
    /// ```
    pub fn norm1<T: Float>(&self, x: impl Input<T>) -> Result<T> {
        self.reducer().norm1(x)
    }
    /// Root mean square `sqrt(sum x^2 / n)` (`0` for empty input).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.rms(&[1.0f64, 7.0][..]).unwrap(), 5.0);
    /// ```
    pub fn rms<T: Float>(&self, x: impl Input<T>) -> Result<T> {
        self.reducer().rms(x)
    }
    /// Index and value of the first smallest element; `None` for empty
    /// input. NaNs never win, unless all elements are NaN (then index 0).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.argmin(&[5i32, -1, 3, -1][..]).unwrap(), Some((1, -1)));
    /// ```
    pub fn argmin<T: Scalar>(&self, x: impl Input<T>) -> Result<Option<(usize, T)>> {
        self.reducer().argmin(x)
    }
    /// Index and value of the first largest element; `None` for empty
    /// input. NaNs never win, unless all elements are NaN (then index 0).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.argmax(&[5i32, 9, 3, 9][..]).unwrap(), Some((1, 9)));
    /// ```
    pub fn argmax<T: Scalar>(&self, x: impl Input<T>) -> Result<Option<(usize, T)>> {
        self.reducer().argmax(x)
    }
}

pub use gpuprim_kernels::ops::{BitAnd, BitOr, BitXor, Integer, Max, Min, Monoid, Product, Sum};

/// An operator the reduction kernels are instantiated for: an associative,
/// commutative [`Monoid`] and the name its kernels carry
/// (`reduce_<variant>_<NAME>_<type>_b<block>`).
///
/// Kernels are compiled to PTX ahead of time, so a new operator needs two
/// steps: implement [`Monoid`] for it in the kernels crate (on the GPU it
/// runs as device code) and add it to the `entries!` list in
/// `kernels/src/reduce/mod.rs` (as `Plain<T, YourOp>`, with the types and
/// block sizes you want); then implement this trait with the same name and
/// call [`Reducer::reduce_by`]. An operator without kernels gives
/// [`Error::UnknownKernel`].
pub trait ReduceOp<T>: Monoid<T> {
    /// The operator's part of the kernel names.
    const NAME: &'static str;
}
macro_rules! reduce_op {
    ($op:ident, $name:literal, $bound:path) => {
        impl<T: $bound> ReduceOp<T> for $op {
            const NAME: &'static str = $name;
        }
    };
}
reduce_op!(Sum, "sum", kops::Element);
reduce_op!(Product, "product", kops::Element);
reduce_op!(Min, "min", kops::Element);
reduce_op!(Max, "max", kops::Element);
reduce_op!(BitAnd, "and", Integer);
reduce_op!(BitOr, "or", Integer);
reduce_op!(BitXor, "xor", Integer);

/// Float element types (`f32`, `f64`), for norms.
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

/// An input of a reduction: a device buffer, or a host slice (copied to
/// the device first).
pub trait Input<T: DeviceRepr> {
    /// The device buffer, uploading host data into `slot` if needed.
    fn device<'a>(&'a self, ctx: &Context, slot: &'a mut Option<DeviceBuffer<T>>) -> Result<&'a DeviceBuffer<T>>;
}
impl<T: DeviceRepr> Input<T> for &DeviceBuffer<T> {
    fn device<'a>(&'a self, _: &Context, _: &'a mut Option<DeviceBuffer<T>>) -> Result<&'a DeviceBuffer<T>> {
        Ok(self)
    }
}
impl<T: DeviceRepr> Input<T> for &[T] {
    fn device<'a>(&'a self, ctx: &Context, slot: &'a mut Option<DeviceBuffer<T>>) -> Result<&'a DeviceBuffer<T>> {
        Ok(slot.insert(ctx.upload(self)?))
    }
}
impl<T: DeviceRepr> Input<T> for &Vec<T> {
    fn device<'a>(&'a self, ctx: &Context, slot: &'a mut Option<DeviceBuffer<T>>) -> Result<&'a DeviceBuffer<T>> {
        Ok(slot.insert(ctx.upload(self)?))
    }
}

/// One pass of the plan: which kernel, on how many elements, in how many
/// blocks.
struct Pass {
    op: &'static str,
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
    /// `sum` has every size; the other operators 256.
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
    pub fn sum<T: Scalar>(&self, x: impl Input<T>) -> Result<T> {
        self.scalar::<Plain<T, kops::Sum>>(Op::Sum, x, None)
    }
    /// Product; see [`Context::product`].
    pub fn product<T: Scalar>(&self, x: impl Input<T>) -> Result<T> {
        self.scalar::<Plain<T, kops::Product>>(Op::Product, x, None)
    }
    /// Minimum; see [`Context::min`].
    pub fn min<T: Scalar>(&self, x: impl Input<T>) -> Result<T> {
        self.scalar::<Plain<T, kops::Min>>(Op::Min, x, None)
    }
    /// Maximum; see [`Context::max`].
    pub fn max<T: Scalar>(&self, x: impl Input<T>) -> Result<T> {
        self.scalar::<Plain<T, kops::Max>>(Op::Max, x, None)
    }
    /// Reduce with any operator the kernels are instantiated for, named by
    /// its type: the built-in monoids, or one of your own (see
    /// [`ReduceOp`]).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// use gpuprim::reduce::{Max, Sum};
    /// let x = ctx.upload(&[3i32, -7, 12]).unwrap();
    /// assert_eq!(ctx.reducer().reduce_by::<i32, Max>(&x).unwrap(), 12);
    /// assert_eq!(ctx.reducer().reduce_by::<i32, Sum>(&x).unwrap(), 8);
    /// ```
    pub fn reduce_by<T: Scalar, Op: ReduceOp<T>>(&self, x: impl Input<T>) -> Result<T> {
        self.scalar::<Plain<T, Op>>(self::Op::Custom(Op::NAME), x, None)
    }

    /// Bitwise and of all elements (all ones for empty input).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.reducer().and(&[0b1110u32, 0b0111][..]).unwrap(), 0b0110);
    /// ```
    pub fn and<T: Scalar + Integer>(&self, x: impl Input<T>) -> Result<T> {
        self.scalar::<Plain<T, kops::BitAnd>>(Op::And, x, None)
    }
    /// Bitwise or of all elements (zero for empty input).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.reducer().or(&[0b1000u64, 0b0001][..]).unwrap(), 0b1001);
    /// ```
    pub fn or<T: Scalar + Integer>(&self, x: impl Input<T>) -> Result<T> {
        self.scalar::<Plain<T, kops::BitOr>>(Op::Or, x, None)
    }
    /// Bitwise xor of all elements (zero for empty input).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.reducer().xor(&[0b1100i32, 0b1010][..]).unwrap(), 0b0110);
    /// ```
    pub fn xor<T: Scalar + Integer>(&self, x: impl Input<T>) -> Result<T> {
        self.scalar::<Plain<T, kops::BitXor>>(Op::Xor, x, None)
    }
    /// Dot product; see [`Context::dot`].
    pub fn dot<T: Scalar>(&self, x: impl Input<T>, y: impl Input<T>) -> Result<T> {
        let mut slot = None;
        let y = y.device(self.ctx, &mut slot)?;
        self.scalar::<Dot<T>>(Op::Dot, x, Some(y))
    }
    /// L1 norm; see [`Context::norm1`].
    pub fn norm1<T: Float>(&self, x: impl Input<T>) -> Result<T> {
        self.scalar::<SumAbs<T>>(Op::SumAbs, x, None)
    }
    /// Sum of squares `sum x^2` (any element type; integers wrap).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// assert_eq!(ctx.reducer().sum_squares(&[1i32, 2, 3][..]).unwrap(), 14);
    /// ```
    pub fn sum_squares<T: Scalar>(&self, x: impl Input<T>) -> Result<T> {
        self.scalar::<SumSquares<T>>(Op::SumSquares, x, None)
    }
    /// Euclidean norm; see [`Context::norm2`].
    pub fn norm2<T: Float>(&self, x: impl Input<T>) -> Result<T> {
        Ok(self.sum_squares(x)?.sqrt())
    }
    /// Root mean square; see [`Context::rms`].
    pub fn rms<T: Float>(&self, x: impl Input<T>) -> Result<T> {
        let mut slot = None;
        let x = x.device(self.ctx, &mut slot)?;
        if x.is_empty() {
            return Ok(T::ZERO);
        }
        let s = self.sum_squares(x)?;
        Ok(s.div(T::from_usize(x.len())).sqrt())
    }
    /// Argmin; see [`Context::argmin`].
    pub fn argmin<T: Scalar>(&self, x: impl Input<T>) -> Result<Option<(usize, T)>> {
        self.arg::<T, Smallest>(Op::ArgMin, x)
    }
    /// Argmax; see [`Context::argmax`].
    pub fn argmax<T: Scalar>(&self, x: impl Input<T>) -> Result<Option<(usize, T)>> {
        self.arg::<T, Largest>(Op::ArgMax, x)
    }

    /// Stream-ordered sum into `out[0]`.
    pub fn sum_into<T: Scalar>(&self, x: &DeviceBuffer<T>, out: &mut DeviceBuffer<T>) -> Result<()> {
        self.run_scratch::<Plain<T, kops::Sum>>(Op::Sum, T::NAME, x, None, out)
    }

    /// Stream-ordered sum into `out[0]` using caller-provided temporary
    /// storage (see [`Reducer::temp`]): allocates nothing.
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
        x: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
        temp: &mut ReduceTemp,
    ) -> Result<()> {
        self.run::<Plain<T, kops::Sum>>(Op::Sum, T::NAME, x, None, out, &temp.buf.alloc, temp.buf.len())
    }

    /// Bytes of temporary storage a reduction of `len` elements of `T`
    /// needs with these options (for any operator).
    ///
    /// ```
    /// # let ctx = gpuprim::Context::new().unwrap();
    /// let bytes = ctx.reducer().temp_bytes::<f32>(1 << 20).unwrap();
    /// assert!(bytes >= 256);
    /// ```
    pub fn temp_bytes<T: Scalar>(&self, len: usize) -> Result<usize> {
        // Every accumulator gets a 16-byte slot (argmin/argmax need that),
        // and every operator has the same launch shape: plan the sum's.
        Ok(self.layout::<Indexed<T::Wide>>(&self.plan(Op::Sum, len as u64)?).2)
    }

    /// Temporary storage for reductions of up to `len` elements of `T`.
    pub fn temp<T: Scalar>(&self, len: usize) -> Result<ReduceTemp> {
        let bytes = self.temp_bytes::<T>(len)?;
        let mut buf = self.ctx.alloc::<u8>(bytes)?;
        buf.zero()?;
        Ok(ReduceTemp { buf })
    }

    /// [`Reducer::run`] with the context's reusable scratch storage.
    fn run_scratch<R>(
        &self,
        op: Op,
        tname: &str,
        x: &DeviceBuffer<R::In>,
        y: Option<&DeviceBuffer<R::In>>,
        out: &mut DeviceBuffer<R::Acc>,
    ) -> Result<()>
    where
        R: Reduction,
        R::In: DeviceRepr,
        R::Acc: DeviceRepr,
    {
        let bytes = self.layout::<R::Acc>(&self.plan(op, x.len() as u64)?).2;
        self.ctx.inner.with_scratch(bytes, |a| self.run::<R>(op, tname, x, y, out, a, bytes))
    }

    fn scalar<R>(&self, op: Op, x: impl Input<R::In>, y: Option<&DeviceBuffer<R::In>>) -> Result<R::Acc>
    where
        R: Reduction,
        R::In: Scalar,
        R::Acc: DeviceRepr,
    {
        let mut slot = None;
        let x = x.device(self.ctx, &mut slot)?;
        let mut out = self.ctx.alloc::<R::Acc>(1)?;
        self.run_scratch::<R>(op, <R::In as DeviceRepr>::NAME, x, y, &mut out)?;
        let v = out.to_vec()?;
        v.first().copied().ok_or(Error::LengthMismatch { what: "reduction output", expected: 1, got: 0 })
    }

    fn arg<T: Scalar, E: gpuprim_kernels::reduce::reduction::Extreme>(
        &self,
        op: Op,
        x: impl Input<T>,
    ) -> Result<Option<(usize, T)>> {
        let mut slot = None;
        let x = x.device(self.ctx, &mut slot)?;
        if x.is_empty() {
            return Ok(None);
        }
        let r: Indexed<T::Wide> = self.scalar::<Arg<T, E>>(op, x, None)?;
        // No element beat the identity: every one is NaN, and the first wins.
        let i = if r.index < x.len() as u64 { r.index as usize } else { 0 };
        // Read the winning element back exactly (the accumulator holds it
        // widened).
        let mut one = [T::default()];
        x.copy_to_host_at(i, &mut one)?;
        Ok(Some((i, one[0])))
    }

    /// The launches, first to last.
    fn plan(&self, op: Op, n: u64) -> Result<Vec<Pass>> {
        let b = self.block;
        if !(b.is_power_of_two() && (32..=1024).contains(&b)) {
            return Err(Error::UnsupportedBlockSize { block: b, reason: "must be a power of two in 32..=1024".into() });
        }
        if op != Op::Sum && b != DEFAULT_BLOCK {
            return Err(Error::UnsupportedBlockSize {
                block: b,
                reason: format!("`{}` is instantiated for blocks of {DEFAULT_BLOCK} threads only", op.name()),
            });
        }
        let grid_for = |n: u64| -> Result<u32> {
            let g = match self.algorithm.per_block(b) {
                Some(per) => n.div_ceil(per).max(1),
                None => {
                    let full = (self.ctx.multiprocessors() as u64 * (2048 / b as u64)).max(1);
                    let per_thread = if self.algorithm == ReduceAlgorithm::Vectorized { 16 } else { 1 };
                    let wanted = self.grid.map(u64::from).unwrap_or(full);
                    n.div_ceil(b as u64 * per_thread).clamp(1, wanted.max(1))
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
        let mut passes = vec![Pass { op: op.name(), n, grid: grid_for(n)? }];
        if self.finish == Finish::Relaunch {
            let mut g = passes[0].grid as u64;
            while g > 1 {
                let next = grid_for(g)?;
                passes.push(Pass { op: op.partials(), n: g, grid: next });
                g = next as u64;
            }
        }
        Ok(passes)
    }

    /// Offsets of the two partial buffers and the counter, and total bytes.
    /// Temporary storage layout: the "last block" counter first, at a
    /// fixed place (so storage reused with another layout still finds it
    /// zero), then the first and second partial buffers. Returns the offsets
    /// of both partial buffers and the total bytes.
    fn layout<Acc>(&self, plan: &[Pass]) -> (usize, usize, usize) {
        let size = std::mem::size_of::<Acc>().max(16);
        let first = COUNTER_BYTES;
        let second = (first + plan[0].grid as usize * size).next_multiple_of(256);
        let end = second + plan.get(1).map(|p| p.grid as usize * size).unwrap_or(0);
        (first, second, end)
    }

    #[allow(clippy::too_many_arguments)]
    fn run<R>(
        &self,
        op: Op,
        tname: &str,
        x: &DeviceBuffer<R::In>,
        y: Option<&DeviceBuffer<R::In>>,
        out: &mut DeviceBuffer<R::Acc>,
        temp: &crate::context::Alloc,
        temp_bytes: usize,
    ) -> Result<()>
    where
        R: Reduction,
        R::In: DeviceRepr,
        R::Acc: DeviceRepr,
    {
        if out.is_empty() {
            return Err(Error::LengthMismatch { what: "reduction output", expected: 1, got: 0 });
        }
        if let Some(y) = y
            && y.len() != x.len()
        {
            return Err(Error::LengthMismatch { what: "second input", expected: x.len(), got: y.len() });
        }
        let n = x.len() as u64;
        let plan = self.plan(op, n)?;
        let (first, second, bytes) = self.layout::<R::Acc>(&plan);
        if temp_bytes < bytes {
            return Err(Error::LengthMismatch { what: "temporary storage (bytes)", expected: bytes, got: temp_bytes });
        }
        if n == 0 {
            return out.copy_from_host_prefix(&[R::identity()]);
        }
        let atomic = self.finish == Finish::Atomic;
        if atomic {
            if R::ATOMIC_BYTES == 0 {
                return Err(Error::Unsupported {
                    what: format!("Finish::Atomic for `{}`", op.name()),
                    reason: "its accumulator (value and index, 16 bytes) has no atomic update".into(),
                });
            }
            let float = matches!(tname, "f32" | "f64");
            if float && self.deterministic {
                return Err(Error::Unsupported {
                    what: format!("Finish::Atomic for {tname}"),
                    reason: "atomic float combines are not deterministic; call .deterministic(false) to accept that"
                        .into(),
                });
            }
            // Stream-ordered, so the call stays asynchronous.
            self.ctx.set_first(out, R::identity())?;
        }
        let b = self.block;
        let shared = finish_smem::<R::Acc>(b) as u32;
        let base = temp.addr();
        let bufs = [base + first as u64, base + second as u64];
        let counter = crate::Arg::Ptr(base);
        let yv = y.map(|y| y.arg()).unwrap_or(crate::Arg::Ptr(0));
        let first_mode = match self.finish {
            Finish::Atomic => mode::ATOMIC,
            Finish::LastBlock => mode::LAST_BLOCK,
            Finish::Relaunch | Finish::Host => mode::PARTIALS,
        };
        for (k, pass) in plan.iter().enumerate() {
            let name = format!("{}_{}_{}_b{b}", self.algorithm.kernel(), pass.op, tname);
            let last = k + 1 == plan.len();
            // Where this pass reads and writes.
            let (a_in, b_in) =
                if k == 0 { (x.arg(), yv) } else { (crate::Arg::Ptr(bufs[(k - 1) % 2]), crate::Arg::Ptr(0)) };
            let partials =
                if self.finish == Finish::Relaunch && last { out.arg() } else { crate::Arg::Ptr(bufs[k % 2]) };
            let m = if k == 0 { first_mode } else { mode::PARTIALS };
            let args = [a_in, b_in, pass.n.into(), partials, out.arg(), counter, m.into()];
            // SAFETY: `x` (and `y`) hold n elements; each partials buffer in
            // `temp` holds one accumulator per block of its pass (`layout`);
            // `out` holds one; the counter is zero (temps start zeroed and
            // the last block resets it).
            unsafe { self.ctx.launch(&name, LaunchConfig { grid: pass.grid, block: b, shared_bytes: shared }, &args)? };
        }
        if self.finish == Finish::Host {
            let g = plan[0].grid as usize;
            let mut partials = vec![R::Acc::default(); g];
            self.ctx.inner.download(temp, first, crate::buffer::as_bytes_mut(&mut partials))?;
            let total = partials.into_iter().fold(R::identity(), R::combine);
            out.copy_from_host_prefix(&[total])?;
        }
        Ok(())
    }
}
