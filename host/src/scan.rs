//! Device-wide scans (prefix sums and their generalisations).
//!
//! With an associative operator `.` and input `x[0..n]`:
//!
//! * inclusive: `out[i] = x[0] . x[1] . ... . x[i]`
//! * exclusive with `init`: `out[0] = init`, `out[i] = init . x[0] . ... . x[i-1]`
//!
//! Operands are always combined in input order, so the operator need not
//! commute: [`Compose`] (affine maps composed in order) works as well as
//! [`Sum`]. [`Context::inclusive_scan`] and friends use the default
//! algorithm; [`Context::scan`] returns a [`Scan`] builder to pick one of
//! [`ScanAlgorithm::ALL`] and a block size:
//!
//! ```
//! use gpuprim::scan::{Max, ScanAlgorithm};
//! # fn main() -> gpuprim::Result<()> {
//! let ctx = gpuprim::Context::new()?;
//! let x = ctx.upload(&[3i32, 1, 4, 1, 5, 9, 2, 6])?;
//! let mut out = ctx.alloc::<i32>(8)?;
//! ctx.inclusive_scan(&x, &mut out)?;
//! assert_eq!(out.to_vec()?, [3, 4, 8, 9, 14, 23, 25, 31]);
//! for alg in ScanAlgorithm::ALL {
//!     ctx.scan().algorithm(alg).exclusive(&x, &mut out, 0, Max)?;
//!     assert_eq!(out.to_vec()?, [0, 3, 3, 4, 4, 5, 9, 9]);
//! }
//! # Ok(()) }
//! ```
//!
//! **Stream order.** Every call queues its launches on the context's
//! stream and returns without waiting for the GPU; later stream-ordered
//! work and downloads (`to_vec`) see the results. Temporary storage comes
//! from the context's scratch buffer, which is allocated on first use and
//! grown when too small (allocation and freeing may wait for the device);
//! the `*_with_temp` calls use storage the caller made once with
//! [`Scan::temp`], so they never allocate and never wait.
//! [`ScanAlgorithm::ThreePhaseHostTotals`] always waits (its totals make a
//! round trip through the host).
//!
//! **Operators.** [`Sum`], [`Product`], [`Min`], [`Max`] on `i32`, `u32`,
//! `i64`, `u64`, `f32`, `f64`; [`BitAnd`], [`BitOr`], [`BitXor`] on the
//! integers; [`Compose`] on [`Affine`]`<u16 | u32 | f32 | f64>`. Kernels are
//! compiled to PTX ahead of time, so an operator (or element type) of your
//! own is defined in a kernels crate of yours: implement [`Monoid`]
//! (associativity is all a scan needs) and [`Named`] for it there,
//! instantiate `scan_lookback` for it with `gpuprim_kernels::entries!`,
//! and load the crate with [`Context::load_kernels`] (the whole flow is in
//! [`crate::user`]). A combination that is not instantiated is an
//! [`Error::Unsupported`], not a crash.
//!
//! Integer results wrap on overflow, as the kernels' arithmetic does. Float
//! results depend on the algorithm and block size (the combine tree
//! differs). They are the same run to run for a given choice, except with
//! [`ScanAlgorithm::DecoupledLookBack`] (the default): there the prefix a
//! tile receives combines its predecessors' totals from the nearest tile
//! whose inclusive prefix was already published, which depends on timing,
//! so float sums may differ in the last bits between runs (as with CUB's
//! scans). Pick [`ScanAlgorithm::ThreePhase`] or [`ScanAlgorithm::Tickets`]
//! for bit-identical float results.

use crate::buffer::{DeviceBuffer, DeviceInput, DeviceOutput, DeviceRepr, DeviceSliceMut, Scalar};
use crate::context::{Context, LaunchConfig};
use crate::error::{Error, Result};
use crate::kernel::{Family, Instance};
use crate::single_pass::{Halves, Region};
use gpuprim_kernels::Arg;
use gpuprim_kernels::scan::{self as k, EXCLUSIVE, Item, policy, to_words};

pub use gpuprim_kernels::ops::{BitAnd, BitOr, BitXor, Max, Min, Monoid, Named, Product, Sum};
pub use gpuprim_kernels::scan::affine::{Affine, Compose, Ring};

/// The scan algorithms, block-level techniques first. Each is one kernel
/// family; see `gpuprim_kernels::scan` for drawings of the algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanAlgorithm {
    /// Lecture scan 1, Hillis-Steele, as the per-block scan of the
    /// three-phase scan: one element per thread, `log2 B` doubling steps
    /// double-buffered in shared memory, `O(n log B)` combines. Simple and
    /// not work-efficient; tiles of `B`.
    HillisSteele,
    /// Lecture scan 2, Blelloch, as the per-block scan of the three-phase
    /// scan: two elements per thread, up-sweep and down-sweep in a padded
    /// (bank-conflict-free) shared tree, `O(n)` combines but `2 log2 2B`
    /// barriers; tiles of `2B`.
    Blelloch,
    /// Lecture scan 3, warp shuffles, as the per-block scan of the
    /// three-phase scan: a shuffle scan inside each warp, then across the
    /// warp totals; one barrier, no shared tree; tiles of `B`.
    WarpShuffle,
    /// The three-phase scan on tiles of `B x ITEMS` (16 items per thread
    /// for 4-byte types, 8 for 8-byte, 4 for 16-byte): scan each tile and
    /// write its total, scan the totals (recursively, on the device), add
    /// each tile's prefix. `4n` memory traffic, three launches per level.
    ThreePhase,
    /// The same with the tile totals scanned on the host (the lectures'
    /// first alternative): a device-to-host round trip instead of the
    /// recursion. Waits for the device.
    ThreePhaseHostTotals,
    /// Single pass: tiles are taken in order from an atomic ticket counter,
    /// and each waits for its predecessor's running total before publishing
    /// its own (the lectures' second alternative). `2n` traffic, but the
    /// chain of waits moves one tile per memory round trip.
    Tickets,
    /// Single pass with decoupled look-back (Merrill and Garland, 2016): a
    /// tile publishes its own total at once and looks back over its
    /// predecessors, the whole block reading a window of `B` of them per
    /// memory round trip, until it finds a published inclusive prefix.
    /// Tiles of 128 bytes per thread (8192 `i32` at 256 threads) staged in
    /// shared memory. `2n` traffic, one launch; the default (92% of the
    /// copy rate at 2^28 `i32`/`f32` on an H200). Float results may differ
    /// in the last bits from run to run (see the module docs).
    DecoupledLookBack,
}

impl ScanAlgorithm {
    /// Every variant, block-level techniques first.
    pub const ALL: [ScanAlgorithm; 7] = [
        ScanAlgorithm::HillisSteele,
        ScanAlgorithm::Blelloch,
        ScanAlgorithm::WarpShuffle,
        ScanAlgorithm::ThreePhase,
        ScanAlgorithm::ThreePhaseHostTotals,
        ScanAlgorithm::Tickets,
        ScanAlgorithm::DecoupledLookBack,
    ];

    /// The kernel family (the start of its entry names).
    pub fn kernel(self) -> &'static str {
        match self {
            ScanAlgorithm::HillisSteele => "scan_hillis_steele",
            ScanAlgorithm::Blelloch => "scan_blelloch",
            ScanAlgorithm::WarpShuffle => "scan_warp_shuffle",
            ScanAlgorithm::ThreePhase | ScanAlgorithm::ThreePhaseHostTotals => "scan_tiles",
            ScanAlgorithm::Tickets => "scan_tickets",
            ScanAlgorithm::DecoupledLookBack => "scan_lookback",
        }
    }

    /// A short name for tables (`"lookback"`).
    pub fn name(self) -> &'static str {
        match self {
            ScanAlgorithm::HillisSteele => "hillis_steele",
            ScanAlgorithm::Blelloch => "blelloch",
            ScanAlgorithm::WarpShuffle => "warp_shuffle",
            ScanAlgorithm::ThreePhase => "three_phase",
            ScanAlgorithm::ThreePhaseHostTotals => "host_totals",
            ScanAlgorithm::Tickets => "tickets",
            ScanAlgorithm::DecoupledLookBack => "lookback",
        }
    }

    /// Whether it is a single-pass scan (one launch, ticket counter and
    /// tile status in the temporary storage).
    pub fn is_single_pass(self) -> bool {
        matches!(self, ScanAlgorithm::Tickets | ScanAlgorithm::DecoupledLookBack)
    }

    /// Elements one block covers at block size `block` for element type `T`.
    pub fn tile_len<T>(self, block: u32) -> u64 {
        k::block_tile::<T>(self.kernel(), block).unwrap_or(block as u64)
    }
}

/// The default algorithm.
pub const DEFAULT_ALGORITHM: ScanAlgorithm = ScanAlgorithm::DecoupledLookBack;
/// Threads per block of a scan whose block size is not set, except where
/// the look-back picks a size by input length ([`Scan::block_size_for`]:
/// `sum` on 4- and 8-byte numbers, 32..=128 threads up to 2^19 elements).
/// `sum` on `i32` and `f32` is also
/// instantiated at 32..=1024 threads (32..=512 for the tile-based
/// algorithms, whose tiles must fit in 48 KiB of shared memory), `sum` on
/// `f64` at 32..=512 for the look-back; every other operator and type at
/// 256 only.
pub const DEFAULT_BLOCK: u32 = policy::DEFAULT_BLOCK;
/// Block size of the phase-3 kernel (adding each tile's prefix).
const ADD_BLOCK: u32 = policy::ADD_BLOCK;
/// Largest grid a launch may have.
const MAX_GRID: u64 = i32::MAX as u64;
/// The kernel that clears the single-pass scans' status.
const CLEAR: &str = "scan_clear_b256";
/// Bytes of the context's scratch storage the scans leave alone at its
/// start, where the reductions keep their counter (and, for symmetry of
/// the sizing, at its end).
const SCRATCH_GAP: usize = 256;

/// Element types of scans: plain data of 4, 8 or 16 bytes that kernels can
/// shuffle between lanes (the numbers and [`Affine`] maps).
pub trait ScanItem: DeviceRepr + Item {}
impl<T: DeviceRepr + Item> ScanItem for T {}

/// An operator the scans take: an associative [`Monoid`] on `T` and the
/// name its kernels carry ([`Named`], `scan_lookback_{NAME}_{type}_b256`).
/// Every such operator is one; there is nothing to implement here. An
/// operator of your own needs kernels instantiated for it in a kernels
/// crate of yours, loaded with
/// [`Context::load_kernels`](crate::Context::load_kernels) (see the
/// [user operators guide](crate::user)); without them a scan gives
/// [`Error::Unsupported`] before launching
/// anything.
pub trait ScanOp<T>: Monoid<T> + Named {}
impl<T, Op: Monoid<T> + Named> ScanOp<T> for Op {}

/// Reusable temporary storage for scans. Make one with [`Scan::temp`]
/// (sized for an input length, element type, algorithm and block size) and
/// pass it to the `*_with_temp` calls, so repeated scans allocate nothing.
/// Storage sized for `len` elements serves any shorter input too.
///
/// The single-pass algorithms need their ticket counter and tile flags at
/// zero. Their storage is zeroed when made and double-buffered: each launch
/// uses one half and zeroes what earlier launches left in the other for the
/// next call, so no scan needs a separate clearing launch (only the first
/// single-pass call after the storage served a three-phase scan clears its
/// half first). The simple calls ([`Context::inclusive_scan`] and friends)
/// do the same with storage the context keeps per stream. The zeroing is
/// stream-ordered: a `ScanTemp` used from two streams needs the second to
/// wait for the first ([`Context::record_event`], [`Context::wait_event`]).
pub struct ScanTemp {
    buf: DeviceBuffer<u8>,
    /// For the single-pass scans: which half is zeroed (see
    /// `crate::single_pass`).
    halves: Halves,
}

impl ScanTemp {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }
}

/// Options of a scan: algorithm and block size; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct Scan<'c> {
    ctx: &'c Context,
    algorithm: ScanAlgorithm,
    /// Set by [`Scan::block_size`]; `None`: by input size ([`Scan::block_size_for`]).
    block: Option<u32>,
}

/// Where the input is: its own buffer, or the output (in place).
#[derive(Clone, Copy)]
enum Source {
    Buffer(u64, usize),
    InPlace,
}

/// The kernels of one scan and their shapes.
struct Plan {
    phase1: &'static str,
    add: &'static str,
    block: u32,
    tile: u64,
    smem: usize,
}

impl Context {
    /// A scan with the default options: [`ScanAlgorithm::DecoupledLookBack`],
    /// with the block size picked per call ([`Scan::block_size_for`]).
    pub fn scan(&self) -> Scan<'_> {
        Scan { ctx: self, algorithm: DEFAULT_ALGORITHM, block: None }
    }

    /// Inclusive prefix sum: `output[i] = input[0] + ... + input[i]`
    /// (integers wrap). Stream-ordered; lengths must match.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[1.0f32, 2.0, 3.0, 4.0])?;
    /// let mut y = ctx.alloc::<f32>(4)?;
    /// ctx.inclusive_scan(&x, &mut y)?;
    /// assert_eq!(y.to_vec()?, [1.0, 3.0, 6.0, 10.0]);
    /// # Ok(()) }
    /// ```
    pub fn inclusive_scan<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
    ) -> Result<()> {
        self.scan().inclusive(input, output, Sum)
    }

    /// Exclusive prefix sum starting from `init`: `output[0] = init`,
    /// `output[i] = init + input[0] + ... + input[i-1]`.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let sizes = ctx.upload(&[3u32, 0, 2, 5])?;
    /// let mut offsets = ctx.alloc::<u32>(4)?;
    /// ctx.exclusive_scan(&sizes, &mut offsets, 100)?;
    /// assert_eq!(offsets.to_vec()?, [100, 103, 103, 105]);
    /// # Ok(()) }
    /// ```
    pub fn exclusive_scan<T: Scalar>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        init: T,
    ) -> Result<()> {
        self.scan().exclusive(input, output, init, Sum)
    }

    /// Inclusive scan with operator `op`.
    ///
    /// ```
    /// use gpuprim::scan::Min;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[5i64, 7, 2, 9, 1])?;
    /// let mut y = ctx.alloc::<i64>(5)?;
    /// ctx.inclusive_scan_by(&x, &mut y, Min)?;
    /// assert_eq!(y.to_vec()?, [5, 5, 2, 2, 1]);
    /// # Ok(()) }
    /// ```
    pub fn inclusive_scan_by<T: ScanItem, Op: ScanOp<T>>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        op: Op,
    ) -> Result<()> {
        self.scan().inclusive(input, output, op)
    }

    /// Exclusive scan with operator `op`, starting from `init`.
    ///
    /// Affine maps composed in order (not commutative): the running
    /// composition, starting from the identity map.
    ///
    /// ```
    /// use gpuprim::scan::{Affine, Compose};
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// // v -> 2v + 1, then v -> 3v, then v -> v - 4
    /// let maps = [Affine::new(2.0f64, 1.0), Affine::new(3.0, 0.0), Affine::new(1.0, -4.0)];
    /// let x = ctx.upload(&maps)?;
    /// let mut y = ctx.alloc::<Affine<f64>>(3)?;
    /// ctx.exclusive_scan_by(&x, &mut y, Affine::new(1.0, 0.0), Compose)?;
    /// let y = y.to_vec()?;
    /// assert_eq!(y[2], Affine::new(6.0, 3.0)); // 3 * (2v + 1)
    /// assert_eq!(y[2].apply(1.0), 9.0);
    /// # Ok(()) }
    /// ```
    pub fn exclusive_scan_by<T: ScanItem, Op: ScanOp<T>>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        init: T,
        op: Op,
    ) -> Result<()> {
        self.scan().exclusive(input, output, init, op)
    }

    /// The linear recurrence `v[k+1] = (1 - l[k]) * v[k] + l[k] * u[k]`
    /// from `v[0] = v0`: writes `out[k] = v[k+1]` for `k` in `0..n`. Solved
    /// by a scan of the affine maps `v -> (1 - l[k]) v + l[k] u[k]` with
    /// [`Compose`]; see [`Scan::linear_recurrence`].
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let l = ctx.upload(&[0.5f64, 0.25, 1.0])?;
    /// let u = ctx.upload(&[4.0f64, 8.0, -1.0])?;
    /// let mut v = ctx.alloc::<f64>(3)?;
    /// ctx.linear_recurrence(&l, &u, 2.0, &mut v)?;
    /// // 0.5*2 + 0.5*4 = 3;  0.75*3 + 0.25*8 = 4.25;  0*4.25 + 1*(-1) = -1
    /// assert_eq!(v.to_vec()?, [3.0, 4.25, -1.0]);
    /// # Ok(()) }
    /// ```
    pub fn linear_recurrence<T>(
        &self,
        l: &impl DeviceInput<T>,
        u: &impl DeviceInput<T>,
        v0: T,
        out: &mut impl DeviceOutput<T>,
    ) -> Result<()>
    where
        T: Scalar + Ring,
        Affine<T>: ScanItem,
    {
        self.scan().linear_recurrence(l, u, v0, out)
    }
}

impl<'c> Scan<'c> {
    /// Use `algorithm`.
    pub fn algorithm(mut self, algorithm: ScanAlgorithm) -> Self {
        self.algorithm = algorithm;
        self
    }

    /// Use blocks of `block` threads. Which sizes exist depends on the
    /// operator and type (see [`DEFAULT_BLOCK`]); a size that does not is
    /// reported by the scan call as [`Error::UnsupportedBlockSize`], with
    /// the sizes that do.
    pub fn block_size(mut self, block: u32) -> Self {
        self.block = Some(block);
        self
    }

    /// The chosen algorithm.
    pub fn chosen_algorithm(&self) -> ScanAlgorithm {
        self.algorithm
    }

    /// The block size set with [`Scan::block_size`], else
    /// [`DEFAULT_BLOCK`] (which the look-back may trade for a smaller one on
    /// small inputs: see [`Scan::block_size_for`]).
    pub fn chosen_block_size(&self) -> u32 {
        self.block.unwrap_or(DEFAULT_BLOCK)
    }

    /// The block size a call on `n` elements of `T` with `Op` uses: the one
    /// set with [`Scan::block_size`], else [`DEFAULT_BLOCK`], except for the
    /// default algorithm, whose block size follows the input size (tuned on
    /// an H200, see `docs/tuning/scan.md`) where the kernel for it exists.
    ///
    /// ```
    /// use gpuprim::scan::{DEFAULT_BLOCK, Sum};
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// assert_eq!(ctx.scan().block_size(128).block_size_for::<i32, Sum>(1 << 20), 128);
    /// assert_eq!(ctx.scan().block_size_for::<f32, Sum>(1 << 28), DEFAULT_BLOCK);
    /// # Ok(()) }
    /// ```
    pub fn block_size_for<T: ScanItem, Op: ScanOp<T>>(&self, n: usize) -> u32 {
        if let Some(b) = self.block {
            return b;
        }
        let pick = auto_blocks::<T>(self.algorithm)
            .iter()
            .find(|&&(limit, _)| n as u64 <= limit)
            .map_or(DEFAULT_BLOCK, |&(_, b)| b);
        let what = Instance::of(T::NAME).op(Op::NAME);
        if pick != DEFAULT_BLOCK && !Family(self.algorithm.kernel()).has(self.ctx, what, pick) {
            DEFAULT_BLOCK
        } else {
            pick
        }
    }

    /// Inclusive scan of `input` into `output` (same length).
    ///
    /// ```
    /// use gpuprim::scan::{BitOr, ScanAlgorithm};
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[1u64, 4, 1, 16])?;
    /// let mut y = ctx.alloc::<u64>(4)?;
    /// ctx.scan().algorithm(ScanAlgorithm::Blelloch).inclusive(&x, &mut y, BitOr)?;
    /// assert_eq!(y.to_vec()?, [1, 5, 5, 21]);
    /// # Ok(()) }
    /// ```
    pub fn inclusive<T: ScanItem, Op: ScanOp<T>>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        op: Op,
    ) -> Result<()> {
        let _ = op;
        self.run_io::<T, Op>(Some(input), output, Op::identity(), false, None)
    }

    /// Exclusive scan of `input` into `output` (same length), starting from
    /// `init`.
    pub fn exclusive<T: ScanItem, Op: ScanOp<T>>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        init: T,
        op: Op,
    ) -> Result<()> {
        let _ = op;
        self.run_io::<T, Op>(Some(input), output, init, true, None)
    }

    /// Inclusive scan of `data` in place.
    ///
    /// ```
    /// use gpuprim::scan::{Product, ScanAlgorithm};
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let mut x = ctx.upload(&[2i32, 3, -1, 4])?;
    /// ctx.scan().algorithm(ScanAlgorithm::Tickets).inclusive_in_place(&mut x, Product)?;
    /// assert_eq!(x.to_vec()?, [2, 6, -6, -24]);
    /// # Ok(()) }
    /// ```
    pub fn inclusive_in_place<T: ScanItem, Op: ScanOp<T>>(
        &self,
        data: &mut impl DeviceOutput<T>,
        op: Op,
    ) -> Result<()> {
        let _ = op;
        self.run_io::<T, Op>(None::<&DeviceBuffer<T>>, data, Op::identity(), false, None)
    }

    /// Exclusive scan of `data` in place, starting from `init`.
    pub fn exclusive_in_place<T: ScanItem, Op: ScanOp<T>>(
        &self,
        data: &mut impl DeviceOutput<T>,
        init: T,
        op: Op,
    ) -> Result<()> {
        let _ = op;
        self.run_io::<T, Op>(None::<&DeviceBuffer<T>>, data, init, true, None)
    }

    /// [`Scan::inclusive`] with caller-provided temporary storage: allocates
    /// nothing and does not wait for the device.
    ///
    /// ```
    /// use gpuprim::scan::Sum;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let scan = ctx.scan();
    /// let mut temp = scan.temp::<u32>(10_000)?;
    /// let mut y = ctx.alloc::<u32>(10_000)?;
    /// for k in 1..4u32 {
    ///     let x = ctx.upload(&vec![k; 10_000])?;
    ///     scan.inclusive_with_temp(&x, &mut y, Sum, &mut temp)?;
    ///     assert_eq!(y.to_vec()?[9_999], 10_000 * k);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn inclusive_with_temp<T: ScanItem, Op: ScanOp<T>>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        op: Op,
        temp: &mut ScanTemp,
    ) -> Result<()> {
        let _ = op;
        self.run_io::<T, Op>(Some(input), output, Op::identity(), false, Some(temp))
    }

    /// [`Scan::exclusive`] with caller-provided temporary storage.
    pub fn exclusive_with_temp<T: ScanItem, Op: ScanOp<T>>(
        &self,
        input: &impl DeviceInput<T>,
        output: &mut impl DeviceOutput<T>,
        init: T,
        op: Op,
        temp: &mut ScanTemp,
    ) -> Result<()> {
        let _ = op;
        self.run_io::<T, Op>(Some(input), output, init, true, Some(temp))
    }

    /// [`Scan::inclusive_in_place`] with caller-provided temporary storage.
    pub fn inclusive_in_place_with_temp<T: ScanItem, Op: ScanOp<T>>(
        &self,
        data: &mut impl DeviceOutput<T>,
        op: Op,
        temp: &mut ScanTemp,
    ) -> Result<()> {
        let _ = op;
        self.run_io::<T, Op>(None::<&DeviceBuffer<T>>, data, Op::identity(), false, Some(temp))
    }

    /// [`Scan::exclusive_in_place`] with caller-provided temporary storage.
    pub fn exclusive_in_place_with_temp<T: ScanItem, Op: ScanOp<T>>(
        &self,
        data: &mut impl DeviceOutput<T>,
        init: T,
        op: Op,
        temp: &mut ScanTemp,
    ) -> Result<()> {
        let _ = op;
        self.run_io::<T, Op>(None::<&DeviceBuffer<T>>, data, init, true, Some(temp))
    }

    /// Bytes of temporary storage a scan of `len` elements of `T` needs
    /// with these options (any operator): the tile totals of every level
    /// for the three-phase algorithms, the ticket counter and tile status
    /// for the single-pass ones, nothing for
    /// [`ScanAlgorithm::ThreePhaseHostTotals`] (it allocates its totals
    /// buffer each call, since they go through the host anyway).
    pub fn temp_bytes<T: ScanItem>(&self, len: usize) -> Result<usize> {
        match self.block {
            Some(b) => self.temp_bytes_at::<T>(len, b),
            // Enough for whichever block size any call up to `len` picks.
            None => auto_blocks::<T>(self.algorithm)
                .iter()
                .map(|&(limit, b)| self.temp_bytes_at::<T>(len.min(usize::try_from(limit).unwrap_or(usize::MAX)), b))
                .try_fold(0, |m, b| b.map(|b| m.max(b))),
        }
    }

    /// [`Scan::temp_bytes`] at block size `block`.
    fn temp_bytes_at<T: ScanItem>(&self, len: usize, block: u32) -> Result<usize> {
        check_block(block)?;
        let tile = self.algorithm.tile_len::<T>(block);
        let n = len as u64;
        let bytes = match self.algorithm {
            _ if n == 0 => 0,
            ScanAlgorithm::ThreePhaseHostTotals => 0,
            // Two halves: see `ScanTemp`.
            ScanAlgorithm::Tickets | ScanAlgorithm::DecoupledLookBack => {
                2 * round16(k::status::status_bytes::<T>(n.div_ceil(tile)))
            }
            _ => three_phase_bytes(n, tile, std::mem::size_of::<T>() as u64),
        };
        usize::try_from(bytes).map_err(|_| Error::TooLarge {
            what: "scan temporary storage",
            len: n,
            max: usize::MAX as u64,
        })
    }

    /// Temporary storage for scans of up to `len` elements of `T` with
    /// these options.
    pub fn temp<T: ScanItem>(&self, len: usize) -> Result<ScanTemp> {
        let bytes = self.temp_bytes::<T>(len)?;
        let buf = self.ctx.alloc::<u8>(bytes)?;
        // Zeroed now (stream-ordered), so that even the first single-pass
        // call needs no clearing launch.
        self.ctx.fill_bytes(buf.addr(), 0, bytes)?;
        Ok(ScanTemp { buf, halves: Halves::zeroed() })
    }

    /// The linear recurrence `v[k+1] = (1 - l[k]) * v[k] + l[k] * u[k]`
    /// from `v[0] = v0`, with this scan's algorithm: writes `out[k] =
    /// v[k+1]`. Three steps: build the maps `(1 - l[k], l[k] * u[k])`, scan
    /// them with [`Compose`] starting from the constant map `(0, v0)`, and
    /// take each result's constant term. Allocates `n` maps. `f32` and
    /// `f64`.
    ///
    /// ```
    /// use gpuprim::scan::ScanAlgorithm;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let n = 1000;
    /// let l = ctx.upload(&vec![0.5f32; n])?;
    /// let u = ctx.upload(&vec![1.0f32; n])?;
    /// let mut v = ctx.alloc::<f32>(n)?;
    /// ctx.scan().algorithm(ScanAlgorithm::ThreePhase).linear_recurrence(&l, &u, 0.0, &mut v)?;
    /// let v = v.to_vec()?;
    /// assert_eq!(v[0], 0.5);
    /// assert_eq!(v[1], 0.75);
    /// assert_eq!(v[n - 1], 1.0); // converged to u
    /// # Ok(()) }
    /// ```
    pub fn linear_recurrence<T>(
        &self,
        l: &impl DeviceInput<T>,
        u: &impl DeviceInput<T>,
        v0: T,
        out: &mut impl DeviceOutput<T>,
    ) -> Result<()>
    where
        T: Scalar + Ring,
        Affine<T>: ScanItem,
    {
        let (l, u, mut out) = (l.input(self.ctx)?, u.input(self.ctx)?, out.output(self.ctx)?);
        let (l, u, out) = (&l.view, &u.view, &mut out.view);
        let n = l.len();
        if u.len() != n {
            return Err(Error::LengthMismatch { what: "recurrence input u", expected: n, got: u.len() });
        }
        if out.len() != n {
            return Err(Error::LengthMismatch { what: "recurrence output", expected: n, got: out.len() });
        }
        let unsupported = || Error::Unsupported {
            what: format!("linear recurrence on `{}`", T::NAME),
            reason: "its kernels are instantiated for f32 and f64".into(),
        };
        let kernel =
            |family| Family(family).get(self.ctx, Instance::of(T::NAME), 256, String::new).map_err(|_| unsupported());
        let maps_name = kernel("recurrence_maps")?.name;
        let values_name = kernel("recurrence_values")?.name;
        // Validate the scan before launching anything.
        self.plan::<Affine<T>, Compose>(n)?;
        if n == 0 {
            return Ok(());
        }
        let mut maps = self.ctx.alloc::<Affine<T>>(n)?;
        let grid = (n as u64).div_ceil(256).clamp(1, self.ctx.multiprocessors() as u64 * 8);
        let args = [l.arg(), u.arg(), maps.arg(), (n as u64).into()];
        // SAFETY: l, u and maps hold n elements each: what the kernel reads
        // and writes.
        unsafe { self.launch(maps_name, grid, 256, 0, &args)? };
        self.run::<Affine<T>, Compose>(
            Source::InPlace,
            maps.as_slice_mut(),
            Affine::new(<T as Ring>::ZERO, v0),
            false,
            None,
        )?;
        let args = [maps.arg(), out.arg(), (n as u64).into()];
        // SAFETY: maps and out hold n elements each.
        unsafe { self.launch(values_name, grid, 256, 0, &args) }
    }

    /// Kernels and shapes for `Op` on `T`, or why there are none.
    fn plan<T: ScanItem, Op: ScanOp<T>>(&self, n: usize) -> Result<Plan> {
        let block = self.block_size_for::<T, Op>(n);
        check_block(block)?;
        let family = self.algorithm.kernel();
        let what = Instance::of(T::NAME).op(Op::NAME);
        let task = || format!("{} scan with operator `{}` on `{}`", self.algorithm.name(), Op::NAME, T::NAME);
        let phase1 = Family(family).get(self.ctx, what, block, task)?.name;
        let add = if self.algorithm.is_single_pass() {
            ""
        } else {
            Family("scan_add_prefix").get(self.ctx, what, ADD_BLOCK, task)?.name
        };
        let tile = self.algorithm.tile_len::<T>(block);
        let smem = k::smem_bytes::<T>(family, block).unwrap_or(0);
        Ok(Plan { phase1, add, block, tile, smem })
    }

    /// Resolve the views, then [`Scan::run`].
    fn run_io<T: ScanItem, Op: ScanOp<T>>(
        &self,
        input: Option<&impl DeviceInput<T>>,
        output: &mut impl DeviceOutput<T>,
        init: T,
        exclusive: bool,
        temp: Option<&mut ScanTemp>,
    ) -> Result<()> {
        let input = input.map(|i| i.input(self.ctx)).transpose()?;
        let mut output = output.output(self.ctx)?;
        if let Some(t) = &temp {
            self.ctx.check_domain(t.buf.context().domain(), "scan temporary storage")?;
        }
        let source = match &input {
            Some(i) => Source::Buffer(i.view.addr(), i.view.len()),
            None => Source::InPlace,
        };
        self.run::<T, Op>(source, output.view.reborrow(), init, exclusive, temp)
    }

    fn run<T: ScanItem, Op: ScanOp<T>>(
        &self,
        source: Source,
        output: DeviceSliceMut<'_, T>,
        init: T,
        exclusive: bool,
        temp: Option<&mut ScanTemp>,
    ) -> Result<()> {
        let n = output.len();
        let plan = self.plan::<T, Op>(n)?;
        let src = match source {
            Source::Buffer(addr, len) => {
                if len != n {
                    return Err(Error::LengthMismatch { what: "scan output", expected: len, got: n });
                }
                addr
            }
            Source::InPlace => output.addr(),
        };
        let need = self.temp_bytes::<T>(n)?;
        if let Some(t) = &temp
            && t.bytes() < need
        {
            return Err(Error::LengthMismatch {
                what: "scan temporary storage (bytes)",
                expected: need,
                got: t.bytes(),
            });
        }
        if n == 0 {
            return Ok(());
        }
        let n = n as u64;
        let tiles = n.div_ceil(plan.tile);
        if tiles > MAX_GRID {
            return Err(Error::TooLarge {
                what: "scan input at this algorithm and block size (one block per tile)",
                len: n,
                max: MAX_GRID * plan.tile,
            });
        }
        let mode = if exclusive { EXCLUSIVE } else { 0 };
        let dst = output.addr();
        if self.algorithm == ScanAlgorithm::ThreePhaseHostTotals {
            return self.host_totals::<T, Op>(&plan, src, dst, n, init, mode);
        }
        if self.algorithm.is_single_pass() {
            let status = round16(k::status::status_bytes::<T>(tiles)) as usize;
            let launch = |region: Region| self.single_pass::<T>(&plan, src, dst, n, init, mode, region);
            return match temp {
                // Double-buffered: this launch uses one half and zeroes
                // what earlier launches left in the other (`single_pass`).
                Some(t) => {
                    let half = (t.bytes() / 2) & !15;
                    t.halves.run(t.buf.addr(), half, status, launch)
                }
                // The stream's own status storage, likewise.
                None => self.ctx.with_status(status, launch),
            };
        }
        match temp {
            Some(t) => {
                t.halves.invalidate();
                self.three_phase::<T, Op>(&plan, src, dst, n, init, mode, t.buf.addr())
            }
            // The context's scratch storage, reused across calls: no
            // allocation after the first call. Its first 256 bytes hold the
            // reductions' counter (zero between calls); the scan uses bytes
            // after those.
            None => self.ctx.with_scratch(need + 2 * SCRATCH_GAP, |a| {
                self.three_phase::<T, Op>(&plan, src, dst, n, init, mode, a.addr() + SCRATCH_GAP as u64)
            }),
        }
    }

    /// The single-pass launch with its status in `region` (cleared first
    /// with a separate launch when the region says so), zeroing the
    /// region's spare storage for the next call.
    #[allow(clippy::too_many_arguments)]
    fn single_pass<T: ScanItem>(
        &self,
        plan: &Plan,
        src: u64,
        dst: u64,
        n: u64,
        init: T,
        mode: u32,
        region: Region,
    ) -> Result<()> {
        let tiles = n.div_ceil(plan.tile);
        if region.clear_first > 0 {
            let words = region.clear_first.div_ceil(8) as u64;
            let grid = words.div_ceil(256).clamp(1, self.ctx.multiprocessors() as u64 * 4);
            // SAFETY: `temp` holds the status (the caller sized it), rounded
            // up to whole words inside 16-byte-aligned storage.
            unsafe { self.launch(CLEAR, grid, 256, 0, &[Arg::Ptr(region.temp), words.into()])? };
        }
        let [lo, hi] = to_words(init);
        let args = [
            Arg::Ptr(src),
            Arg::Ptr(dst),
            n.into(),
            lo.into(),
            hi.into(),
            mode.into(),
            Arg::Ptr(region.temp),
            Arg::Ptr(region.spare),
            (region.spare_bytes as u64 / 8).into(),
        ];
        // SAFETY: src and dst hold n elements (checked by the caller; they
        // may be the same buffer, which the kernels allow); temp holds the
        // status of `tiles` tiles, zeroed (above, or by the previous launch
        // on this storage: stream order); spare is the other, disjoint half
        // of the storage, `spare_bytes` of it inside; one block per tile, as
        // the kernels require.
        unsafe { self.launch(plan.phase1, tiles, plan.block, plan.smem, &args) }
    }

    /// Phase 1 into `totals`, the totals scanned (exclusive, from `init`)
    /// in place by the same algorithm, phase 3. One launch when one tile
    /// holds everything.
    #[allow(clippy::too_many_arguments)]
    fn three_phase<T: ScanItem, Op: ScanOp<T>>(
        &self,
        plan: &Plan,
        src: u64,
        dst: u64,
        n: u64,
        init: T,
        mode: u32,
        temp: u64,
    ) -> Result<()> {
        let tiles = n.div_ceil(plan.tile);
        let totals = temp;
        let first_init = if tiles == 1 { init } else { Op::identity() };
        let [lo, hi] = to_words(first_init);
        let args = [Arg::Ptr(src), Arg::Ptr(dst), n.into(), lo.into(), hi.into(), mode.into(), Arg::Ptr(totals)];
        // SAFETY: src and dst hold n elements; `totals` has room for one
        // total per tile (three_phase_bytes reserves it at every level).
        unsafe { self.launch(plan.phase1, tiles, plan.block, plan.smem, &args)? };
        if tiles == 1 {
            return Ok(());
        }
        let rest = temp + round16(tiles * std::mem::size_of::<T>() as u64);
        self.three_phase::<T, Op>(plan, totals, totals, tiles, init, EXCLUSIVE, rest)?;
        let args = [Arg::Ptr(dst), n.into(), plan.tile.into(), Arg::Ptr(totals)];
        // SAFETY: dst holds n elements, totals one prefix per tile.
        unsafe { self.launch(plan.add, tiles, ADD_BLOCK, 0, &args) }
    }

    /// Phase 1 on the device, the totals scanned on the host, phase 3.
    fn host_totals<T: ScanItem, Op: ScanOp<T>>(
        &self,
        plan: &Plan,
        src: u64,
        dst: u64,
        n: u64,
        init: T,
        mode: u32,
    ) -> Result<()> {
        let tiles = n.div_ceil(plan.tile);
        let mut totals = self.ctx.alloc::<T>(tiles as usize)?;
        let first_init = if tiles == 1 { init } else { Op::identity() };
        let [lo, hi] = to_words(first_init);
        let args = [Arg::Ptr(src), Arg::Ptr(dst), n.into(), lo.into(), hi.into(), mode.into(), totals.arg()];
        // SAFETY: src and dst hold n elements, totals one per tile.
        unsafe { self.launch(plan.phase1, tiles, plan.block, plan.smem, &args)? };
        if tiles == 1 {
            return Ok(());
        }
        let mut prefixes = totals.to_vec()?;
        let mut running = init;
        for p in prefixes.iter_mut() {
            let total = *p;
            *p = running;
            running = Op::combine(running, total);
        }
        totals.copy_from_host(&prefixes)?;
        let args = [Arg::Ptr(dst), n.into(), plan.tile.into(), totals.arg()];
        // SAFETY: dst holds n elements, totals one prefix per tile.
        unsafe { self.launch(plan.add, tiles, ADD_BLOCK, 0, &args) }
    }

    /// Launch `name` on `grid` blocks.
    ///
    /// # Safety
    /// As [`Context::launch`]: the arguments must describe live buffers
    /// large enough for what the kernel touches at this grid.
    unsafe fn launch(&self, name: &str, grid: u64, block: u32, smem: usize, args: &[Arg]) -> Result<()> {
        let grid = u32::try_from(grid).ok().filter(|&g| g as u64 <= MAX_GRID).ok_or(Error::TooLarge {
            what: "scan grid (blocks)",
            len: grid,
            max: MAX_GRID,
        })?;
        let shared_bytes = u32::try_from(smem)
            .map_err(|_| Error::BadLaunch { kernel: name.into(), reason: format!("{smem} bytes of shared memory") })?;
        // SAFETY: forwarded from the caller.
        unsafe { self.ctx.launch(name, LaunchConfig { grid, block, shared_bytes }, args) }
    }
}

/// Block sizes of `algorithm` by input size when none is set: `(largest
/// n, block)`, in order (the kernels crate's tuning policy,
/// `gpuprim_kernels::scan::policy`); a size the operator has no kernel for
/// falls back to [`DEFAULT_BLOCK`].
fn auto_blocks<T>(algorithm: ScanAlgorithm) -> &'static [(u64, u32)] {
    match algorithm {
        ScanAlgorithm::DecoupledLookBack => policy::lookback_blocks(std::mem::size_of::<T>()),
        _ => policy::DEFAULT_BLOCKS,
    }
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

/// Temporary bytes of the three-phase scan of `n` elements: the totals of
/// every level (each 16-byte aligned), down to one tile (whose single total
/// still needs a slot).
fn three_phase_bytes(n: u64, tile: u64, size: u64) -> u64 {
    let mut bytes = 0;
    let mut tiles = n.div_ceil(tile);
    loop {
        bytes += round16(tiles.max(1) * size);
        if tiles <= 1 {
            return bytes;
        }
        tiles = tiles.div_ceil(tile);
    }
}
