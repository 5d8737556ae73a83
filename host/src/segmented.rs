//! Segmented reductions: one result per segment of the input.
//!
//! Segments are given three ways:
//!
//! * by **offsets** ([`Context::segmented_reduce`]): `offsets` has one more
//!   element than the output, is non-decreasing, and its last element is
//!   at most `n`; segment `s` is `input[offsets[s] .. offsets[s+1]]`;
//!   elements before `offsets[0]` or from `offsets[S]` on belong to none;
//! * by **begin/end pairs** ([`Context::segmented_reduce_ranges`]): any
//!   order, may overlap;
//! * by a **fixed length** ([`Context::segmented_reduce_fixed`]): `L`
//!   consecutive elements each, the last one shorter when `L` does not
//!   divide `n`.
//!
//! ```
//! use gpuprim::segmented::{ArgMax, Max, Sum};
//! # fn main() -> gpuprim::Result<()> {
//! let ctx = gpuprim::Context::new()?;
//! let x = ctx.upload(&[1i32, 2, 3, 4, 5, 6, 7])?;
//! let offsets = ctx.upload(&[0u64, 3, 3, 7])?; // [1 2 3] [] [4 5 6 7]
//! let mut sums = ctx.alloc::<i32>(3)?;
//! ctx.segmented_reduce(&x, &offsets, &mut sums, Sum)?;
//! assert_eq!(sums.to_vec()?, [6, 0, 22]);
//! let mut top = ctx.alloc::<i32>(3)?;
//! ctx.segmented_reduce_fixed(&x, 3, &mut top, Max)?; // [1 2 3] [4 5 6] [7]
//! assert_eq!(top.to_vec()?, [3, 6, 7]);
//! let (begins, ends) = (ctx.upload(&[4u64, 0])?, ctx.upload(&[7u64, 5])?);
//! let mut at = ctx.alloc::<u64>(2)?;
//! ctx.segmented_reduce_ranges(&x, &begins, &ends, &mut at, ArgMax)?;
//! assert_eq!(at.to_vec()?, [6, 4]); // indices into x
//! # Ok(()) }
//! ```
//!
//! **Operators** ([`SegmentedOp`]): [`Sum`] and [`Product`] (results in
//! `T::Acc`, as the reductions'), [`Min`], [`Max`], and [`ArgMin`] /
//! [`ArgMax`], on `i32`, `u32`, `i64`, `u64`, `f32`, `f64`. An empty
//! segment gets the operator's identity (0, 1, the type's largest or
//! smallest value); argmin/argmax write the index into the whole input
//! of the segment's first extreme element as a `u64`, [`NO_INDEX`] for an
//! empty segment and the segment's first index when all its elements are
//! NaN (as [`Context::argmin_into`]); CUB instead writes a (offset in the
//! segment, value) pair, and offset 1 with the identity value for an
//! empty segment.
//!
//! **How.** Offsets and fixed lengths go through one flat kernel over the
//! *elements* (`gpuprim_kernels::segmented::flat`): fixed tiles, each
//! finding the boundaries it holds and reducing its runs locally, each
//! tile on its own; a second launch joins the parts of the segments that
//! span tiles, in tile order (one block up to 2^26 four-byte elements,
//! beyond that several, each waiting for the flags of those before it).
//! From 2^24 four-byte elements with offsets, a launch before them finds
//! where each tile starts among the offsets (a stream over the offsets
//! around one segment a tile, a search per tile edge otherwise), so that
//! no tile waits on a search.
//! Tiny, huge and mixed segments cost about the same per element. One to
//! three launches, no allocation once the stream's temporary storage
//! exists. Under sum, product, min and max, offsets or fixed lengths whose
//! mean segment is under 128 elements take a tile kernel of their own
//! (`gpuprim_kernels::segmented::short`), with the same tiles and joins:
//! each thread folds its items once, leaving every segment's value in
//! shared memory where the segment ends, and the results go out from the
//! boundaries, in order; a tile also writes the segment that ends at its
//! first boundary when that segment began at most 64 four-byte elements
//! before the tile, so at such lengths the spine has nothing to do (it
//! returns at once; for fixed lengths it is not launched). On an H200 at
//! 2^28 `i32` in segments of 16 (2026-11-29): 371 us, 82% of copy (the
//! general tile kernel 489, CUB's one-block-per-segment
//! `DeviceSegmentedReduce` 52x slower), fixed lengths of 16 326 us; at
//! 2^24 37 and 28 us.
//! Offsets whose mean segment is at least 128 elements
//! (`policy::ROUTE_MEAN[0]`), under every operator, take the
//! *chunked path* instead (`gpuprim_kernels::segmented::chunks`): a plan
//! launch cuts each segment of at least 4 KiB into chunk items of up to
//! 64 KiB (128 KiB from 256 MiB of input on), and a resident work launch
//! takes tickets, a block per chunk (16-byte loads, eight in flight a
//! thread; the last chunk of a segment to finish combines the segment's
//! partials in order), then a warp per shorter segment. On an H200 at
//! 2^28 `i32` (2026-11-28): mixed lengths 271 us (94% of copy, 0.97x CUB;
//! the flat kernel 296), segments of 512 277 us (93%, 2.4x CUB), of 2^20
//! 251 us (102%, 1.13x CUB). Argmin and argmax keep each thread's best
//! element with its `u32` offset from the chunk's start (a min, a compare
//! and a select an element), and for 4-byte elements the threads' bests
//! meet as `u64` keys (order key and offset): at 2^28 `i32` (2026-11-29)
//! mixed lengths 291 us (0.96x CUB; the flat kernel 342), segments of 512
//! 337 us (2.3x CUB), of 2^20 251 us (102% of copy).
//! Begin/end pairs that are long on average (`n / S` of at least 2048,
//! `policy::RANGES_CHUNKED_MEAN`, on inputs up to 2^30 elements) but not
//! so few that the ranges kernel cuts them into parts (below) take the
//! same chunked path (pairs may overlap, so their chunks can outnumber
//! the plan's room, sized as for offsets: then every pair gets a warp):
//! on an H200 at 2^28 `i32`, mixed lengths 270 us (94.5% of copy, 0.97x
//! CUB) where the ranges kernel took 295.
//! The others go through the ranges kernel
//! (`gpuprim_kernels::segmented::ranges`), whose form follows from the
//! number of pairs `S` against the grid's warps (up to eight blocks of
//! eight warps a multiprocessor, fewer where fewer fit): from 32 pairs a
//! warp up, a lane sums each pair of at most 32 elements itself (from a
//! window of shared memory that the warp fills with coalesced loads where
//! its 32 pairs lie within it: 2 KiB, or room for 32 pairs of `n / S`
//! elements up to 4 KiB) and the warp walks the longer ones
//! together; below that, a warp walks a pair; pairs longer than a slot
//! (2048 to 8192 elements) go to a table whose slots one more launch
//! shares among all the warps; and where there are fewer than 8 pairs a
//! warp and the input holds at least 4096 elements a pair, each pair is
//! cut into equal parts (`policy::ranges_parts`: 8 a warp, at most
//! `n / 2048` in all), a warp walks a part, and a second launch combines
//! each pair's parts, so that a few huge pairs keep the whole GPU busy.
//! On an H200 at 2^28 `i32` (2026-11-30), pairs of 16 elements side by
//! side 331 us (91% of copy), of 512 259 us (99%), of 2^20 252 us (101%,
//! in parts); mixed lengths (1 to 2^16) 292 us (87.5%; CUB 258), before
//! they took the chunked path.
//! Offsets off the
//! chunked path ([`Segmented::chunked`] set to `false`, or more segments
//! or chunks than it counts in 32 bits) whose mean segment is a few
//! hundred elements (128 to 2048: `policy::ROUTE_MEAN`) go there too
//! when they suit it: a launch counts the segments longer
//! than 4096 and shorter than 32, and the counts decide on the device,
//! with no wait, whether the warp-per-segment kernel or the flat ones do
//! the work (the others return at once); one warp streams a segment of
//! 512 with no tile machinery (an H100 at 2^28: 100% of copy against 85%).
//! Fixed lengths of 128 to 4096, and of 16 to 32 for 4-byte elements (a
//! warp's 32 segments fill a window sized for them: at 2^28 `i32`, 16 in
//! 304 us, 90% of copy, against the short kernel's 326.5; 32 in 289 us,
//! 91%, against 309), go there directly (one launch: the length is known
//! on the host). So do CSR offsets under argmin and argmax whose mean
//! segment is 4 to 32 elements, as begin/end pairs (`offsets`,
//! `offsets + 1`) with windows of up to 4 KiB: at 2^28 `i32`, segments
//! of 16 in 534 us against the flat kernel's 621, random lengths 0 to 32
//! in 853 against 2079. Sums over such offsets stay on the short tile
//! kernel: a lane sums its own segment from the window, so a warp takes
//! as long as its longest, and random lengths ran 15% slower that way.
//! Float results of those segments then follow that kernel's order
//! (strided over the warp's lanes, then across them; on the chunked path
//! strided over a block's threads within each chunk, then the chunks in
//! order), still the same from run to run.
//!
//! **Checked offsets.** Offsets and begin/end pairs live on the device, so
//! whether they are valid (non-decreasing and at most `n`; `begin <= end
//! <= n`) is found on the device, in the same pass. By default the call
//! then waits for the GPU and returns [`Error::InvalidInput`] for bad
//! ones. [`Segmented::check(false)`](Segmented::check) skips the wait: the
//! call is then stream-ordered like every other, and bad segments give
//! unspecified results (never an out-of-bounds access or a hang). Fixed
//! lengths need no check and never wait.
//!
//! Integer results wrap. Float results depend on how the segment falls
//! into tiles (the combine runs along each thread's items, then across
//! threads and tiles), but not on timing: the same input gives the same
//! bits on every run.

use crate::buffer::{DeviceBuffer, DeviceInput, DeviceOutput, DeviceRepr, Scalar};
use crate::context::{Context, LaunchConfig};
use crate::error::{Error, Result};
use crate::kernel::{Family, Instance};
use crate::single_pass::{Halves, Region};
use gpuprim_kernels::Arg;
use gpuprim_kernels::gpu::WARP_SIZE;
use gpuprim_kernels::reduce::reduction::Indexed;
use gpuprim_kernels::segmented::policy;

pub use crate::reduce::NO_INDEX;
pub use gpuprim_kernels::ops::{Max, Min, Product, Sum};

/// Largest grid a launch may have.
const MAX_GRID: u64 = i32::MAX as u64;
/// Bytes of status the ranges kernel uses (the header: its error count).
const RANGES_STATUS: usize = 16;

/// The index of the first smallest element of each segment.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgMin;
/// The index of the first largest element of each segment.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgMax;

/// An operator the segmented kernels are instantiated for on `T`: what a
/// segment's result is, the kernels' accumulator and the name they carry.
///
/// The reductions' [`ReduceOp`](crate::reduce::ReduceOp) does not fit:
/// argmin and argmax are not monoids on an element type (their
/// accumulator is a value with its index, and what is written is the
/// index alone), so they are no `ReduceOp`s, yet they are segmented
/// operators.
pub trait SegmentedOp<T: Scalar>: Copy {
    /// What is written per segment.
    type Out: DeviceRepr;
    /// The kernels' accumulator (sizes their shared memory and status).
    type Acc: DeviceRepr;
    /// The operator's part of the kernel names.
    const NAME: &'static str;
}

macro_rules! seg_op {
    ($($op:ident => $name:literal, $out:ty;)*) => {$(
        impl<T: Scalar> SegmentedOp<T> for $op {
            type Out = $out;
            type Acc = $out;
            const NAME: &'static str = $name;
        }
    )*};
}
seg_op! {
    Sum => "sum", T::Acc;
    Product => "product", T::Acc;
    Min => "min", T;
    Max => "max", T;
}
impl<T: Scalar> SegmentedOp<T> for ArgMin {
    type Out = u64;
    type Acc = Indexed<T::Wide>;
    const NAME: &'static str = "argmin";
}
impl<T: Scalar> SegmentedOp<T> for ArgMax {
    type Out = u64;
    type Acc = Indexed<T::Wide>;
    const NAME: &'static str = "argmax";
}

/// Reusable temporary storage for segmented reductions (an error count
/// and the tiles' records, double-buffered and zeroed when made, as
/// [`ScanTemp`](crate::ScanTemp)'s status). Make one with [`Segmented::temp`];
/// storage sized for `len` elements serves any shorter input. Using it
/// from two streams needs an event between them.
pub struct SegmentedTemp {
    buf: DeviceBuffer<u8>,
    halves: Halves,
}

impl SegmentedTemp {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }
}

/// Options of a segmented reduction: block size, whether offsets are
/// checked; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct Segmented<'c> {
    ctx: &'c Context,
    block: u32,
    check: bool,
    spine_share: Option<u64>,
    bounds_from: Option<u64>,
    bounds_stream: Option<bool>,
    route: Option<bool>,
    chunked: Option<bool>,
    chunk_len: Option<u64>,
    short_len: Option<u64>,
    spread: Option<bool>,
    /// Early batches of the chunked path's work launch
    /// ([`Self::early_batches`]); `None`: the policy's.
    early: Option<u64>,
    short: Option<bool>,
    ranges_parts: Option<u64>,
    ranges_long: Option<(u64, u64)>,
    ranges_cap: Option<u64>,
    ranges_window: Option<u64>,
}

/// What the error of bad CSR offsets says: what, and why.
const OFFSETS_ERROR: (&str, &str) = ("segment offsets", "not non-decreasing, or the last is past the input");
/// What the error of bad begin/end pairs says.
const RANGES_ERROR: (&str, &str) = ("segment ranges", "a begin after its end, or an end past the input");

/// Segments as begin/end addresses for the chunked path and the ranges
/// kernel (CSR offsets: `offsets` and `offsets + 8`), and what their
/// error says.
#[derive(Clone, Copy)]
struct Pairs {
    begins: u64,
    ends: u64,
    what: (&'static str, &'static str),
}

/// The chunked path's sizes for one call: elements of a chunk, the
/// shortest segment that gets chunks, the most chunk items the plan may
/// write, and the work launch's tickets (items and short batches).
#[derive(Clone, Copy, Debug)]
struct ChunkSizes {
    chunk: u64,
    short: u64,
    cap: u64,
    tickets: u64,
}

/// How the segments are given, resolved to device addresses.
#[derive(Clone, Copy)]
enum Segs {
    Offsets(u64),
    Fixed(u64),
}

/// The long pairs' slot table of a ranges-kernel launch: its device
/// address (0: none), slots, and the lengths of a long pair and a slot.
#[derive(Clone, Copy)]
struct Table {
    at: u64,
    cap: u64,
    long: u64,
    slot: u64,
}

/// No slot table: every segment walked by its warp.
const NO_TABLE: Table = Table { at: 0, cap: 0, long: 1, slot: 1 };

/// The segments of a ranges-kernel launch: begin/end arrays (device
/// addresses), or a fixed length.
#[derive(Clone, Copy)]
enum RangesSegs {
    Pairs { begins: u64, ends: u64 },
    Fixed(u64),
}

impl Context {
    /// A segmented reduction with the default options (256 threads,
    /// offsets checked).
    pub fn segmented(&self) -> Segmented<'_> {
        Segmented {
            ctx: self,
            block: policy::BLOCK,
            check: true,
            spine_share: None,
            bounds_from: None,
            bounds_stream: None,
            route: None,
            chunked: None,
            chunk_len: None,
            short_len: None,
            spread: None,
            early: None,
            short: None,
            ranges_parts: None,
            ranges_long: None,
            ranges_cap: None,
            ranges_window: None,
        }
    }

    /// `output[s]` = the combine of `input[offsets[s] .. offsets[s+1]]`
    /// (the identity for an empty segment); `offsets` has one more element
    /// than `output`, non-decreasing, last `<= n`. Waits for the GPU to
    /// check the offsets (see the [module docs](crate::segmented)).
    ///
    /// ```
    /// use gpuprim::segmented::Min;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[5.0f32, -1.0, 3.0, 8.0])?;
    /// let mut out = ctx.alloc::<f32>(2)?;
    /// ctx.segmented_reduce(&x, &[0u64, 2, 4][..], &mut out, Min)?;
    /// assert_eq!(out.to_vec()?, [-1.0, 3.0]);
    /// let bad = ctx.segmented_reduce(&x, &[0u64, 3, 2][..], &mut out, Min);
    /// assert!(matches!(bad, Err(gpuprim::Error::InvalidInput { .. })));
    /// # Ok(()) }
    /// ```
    pub fn segmented_reduce<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        offsets: &(impl DeviceInput<u64> + ?Sized),
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        op: Op,
    ) -> Result<()> {
        self.segmented().reduce(input, offsets, output, op)
    }

    /// Segments given as separate begin and end offsets (may be in any
    /// order, may overlap): `output[s]` = the combine of
    /// `input[begins[s] .. ends[s]]`. Waits for the GPU to check them.
    ///
    /// ```
    /// use gpuprim::segmented::Sum;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[1u32, 2, 3, 4])?;
    /// let mut out = ctx.alloc::<u32>(3)?;
    /// ctx.segmented_reduce_ranges(&x, &[2u64, 0, 1][..], &[4u64, 4, 1][..], &mut out, Sum)?;
    /// assert_eq!(out.to_vec()?, [7, 10, 0]);
    /// # Ok(()) }
    /// ```
    pub fn segmented_reduce_ranges<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        begins: &(impl DeviceInput<u64> + ?Sized),
        ends: &(impl DeviceInput<u64> + ?Sized),
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        op: Op,
    ) -> Result<()> {
        self.segmented().reduce_ranges(input, begins, ends, output, op)
    }

    /// Segments of `segment_len` consecutive elements (the last may be
    /// shorter): `output` has `ceil(n / segment_len)` elements.
    /// Stream-ordered (nothing to check on the device).
    ///
    /// ```
    /// use gpuprim::segmented::Product;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[1i64, 2, 3, 4, 5])?;
    /// let mut out = ctx.alloc::<i64>(3)?;
    /// ctx.segmented_reduce_fixed(&x, 2, &mut out, Product)?;
    /// assert_eq!(out.to_vec()?, [2, 12, 5]);
    /// # Ok(()) }
    /// ```
    pub fn segmented_reduce_fixed<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        segment_len: usize,
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        op: Op,
    ) -> Result<()> {
        self.segmented().reduce_fixed(input, segment_len, output, op)
    }
}

impl<'c> Segmented<'c> {
    /// Threads per block (256, the only size instantiated; any other gives
    /// [`Error::UnsupportedBlockSize`]).
    pub fn block_size(mut self, block: u32) -> Self {
        self.block = block;
        self
    }

    /// Whether offsets and begin/end pairs are checked (default true): the
    /// call waits for the GPU and returns [`Error::InvalidInput`] for bad
    /// ones. With `false` the call only queues work; bad segments then
    /// give unspecified results (no out-of-bounds access, no hang).
    ///
    /// ```
    /// use gpuprim::segmented::Sum;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let x = ctx.upload(&[1i32; 100])?;
    /// let offsets = ctx.upload(&[0u64, 50, 100])?;
    /// let mut out = ctx.alloc::<i32>(2)?;
    /// ctx.segmented().check(false).reduce(&x, &offsets, &mut out, Sum)?; // no wait
    /// assert_eq!(out.to_vec()?, [50, 50]);
    /// # Ok(()) }
    /// ```
    pub fn check(mut self, yes: bool) -> Self {
        self.check = yes;
        self
    }

    /// [`Context::segmented_reduce`] with these options.
    pub fn reduce<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        offsets: &(impl DeviceInput<u64> + ?Sized),
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        _op: Op,
    ) -> Result<()> {
        let offsets = offsets.input(self.ctx)?;
        self.run::<T, Op>(input, Segs::Offsets(offsets.view.addr()), offsets.view.len(), output, None)
    }

    /// [`Segmented::reduce`] with caller-provided temporary storage
    /// ([`Segmented::temp`]): never allocates.
    ///
    /// ```
    /// use gpuprim::segmented::Sum;
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let seg = ctx.segmented().check(false);
    /// let mut temp = seg.temp::<f64, Sum>(1 << 12)?;
    /// let x = ctx.upload(&vec![0.5f64; 1 << 12])?;
    /// let offsets = ctx.upload(&[0u64, 1000, 4096])?;
    /// let mut out = ctx.alloc::<f64>(2)?;
    /// for _ in 0..3 {
    ///     seg.reduce_with_temp(&x, &offsets, &mut out, Sum, &mut temp)?;
    /// }
    /// assert_eq!(out.to_vec()?, [500.0, 1548.0]);
    /// # Ok(()) }
    /// ```
    pub fn reduce_with_temp<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        offsets: &(impl DeviceInput<u64> + ?Sized),
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        _op: Op,
        temp: &mut SegmentedTemp,
    ) -> Result<()> {
        let offsets = offsets.input(self.ctx)?;
        self.run::<T, Op>(input, Segs::Offsets(offsets.view.addr()), offsets.view.len(), output, Some(temp))
    }

    /// [`Context::segmented_reduce_ranges`] with these options.
    pub fn reduce_ranges<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        begins: &(impl DeviceInput<u64> + ?Sized),
        ends: &(impl DeviceInput<u64> + ?Sized),
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        op: Op,
    ) -> Result<()> {
        self.ranges(input, begins, ends, output, op, None)
    }

    /// [`Segmented::reduce_ranges`] with caller-provided temporary storage.
    pub fn reduce_ranges_with_temp<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        begins: &(impl DeviceInput<u64> + ?Sized),
        ends: &(impl DeviceInput<u64> + ?Sized),
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        op: Op,
        temp: &mut SegmentedTemp,
    ) -> Result<()> {
        self.ranges(input, begins, ends, output, op, Some(temp))
    }

    /// [`Context::segmented_reduce_fixed`] with these options.
    pub fn reduce_fixed<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        segment_len: usize,
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        _op: Op,
    ) -> Result<()> {
        self.run::<T, Op>(input, Segs::Fixed(segment_len as u64), 0, output, None)
    }

    /// [`Segmented::reduce_fixed`] with caller-provided temporary storage.
    pub fn reduce_fixed_with_temp<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        segment_len: usize,
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        _op: Op,
        temp: &mut SegmentedTemp,
    ) -> Result<()> {
        self.run::<T, Op>(input, Segs::Fixed(segment_len as u64), 0, output, Some(temp))
    }

    /// Bytes of temporary storage a segmented reduction of up to `len`
    /// elements of `T` with `Op` needs (any way of giving segments).
    pub fn temp_bytes<T: Scalar, Op: SegmentedOp<T>>(&self, len: usize) -> Result<usize> {
        let tiles = self.tiles::<T>(len as u64)?;
        let used = records_used::<Op::Acc>(tiles, self.spine_blocks::<Op::Acc>(tiles)).max(RANGES_STATUS);
        // The chunked path, at its most items (every segment long, the
        // shorter chunks: any input up to `len`).
        let (chunk, short) = self.lens::<T>(0);
        let cap = policy::chunk_items(len as u64, u64::MAX, chunk, short);
        let used = used.max(policy::chunks_layout::<Op::Acc>(cap)[3]);
        // Begin/end pairs cut into parts: at most one accumulator a
        // RANGES_PART_MIN elements (policy::ranges_parts).
        let parts = (len as u64 / policy::RANGES_PART_MIN) as usize * size_of::<Op::Acc>();
        let mut used = used.max(RANGES_STATUS + parts.next_multiple_of(16));
        // Or the long pairs' slot table (where a pair can be long).
        let slot = policy::ranges_slot(len as u64, self.ranges_warps());
        if len as u64 > slot {
            let table =
                policy::ranges_table_layout(policy::ranges_table_cap(len as u64, slot), size_of::<Op::Acc>())[3];
            used = used.max(RANGES_STATUS + table);
        }
        Ok(2 * used)
    }

    /// Temporary storage for segmented reductions of up to `len` elements
    /// of `T` with `Op` (zeroed; a stream-ordered fill).
    pub fn temp<T: Scalar, Op: SegmentedOp<T>>(&self, len: usize) -> Result<SegmentedTemp> {
        let mut buf = self.ctx.alloc::<u8>(self.temp_bytes::<T, Op>(len)?)?;
        buf.zero()?;
        Ok(SegmentedTemp { buf, halves: Halves::zeroed() })
    }

    /// Blocks of the spine over `tiles` tile records.
    fn spine_blocks<A>(&self, tiles: u64) -> u64 {
        policy::spine_blocks(tiles, self.spine_share.unwrap_or(policy::spine_share::<A>()))
    }

    /// Tile records per block of the spine, the launch that joins the
    /// tiles' parts of segments ([`policy::spine_share`] unless set): for
    /// tests, which reach several blocks with small inputs this way.
    #[doc(hidden)]
    pub fn spine_share(mut self, records: u64) -> Self {
        self.spine_share = Some(records.max(1));
        self
    }

    /// Tiles from which the tiles' ranges of offsets are found by a launch
    /// of their own ([`policy::BOUNDS_MIN_TILES`] unless set): for tests,
    /// which reach both paths with small inputs this way.
    #[doc(hidden)]
    pub fn bounds_from(mut self, tiles: u64) -> Self {
        self.bounds_from = Some(tiles);
        self
    }

    /// Whether that launch streams the offsets (`true`) or searches per
    /// tile edge ([`policy::bounds_by_stream`] unless set): for tests,
    /// which reach both with small inputs this way.
    #[doc(hidden)]
    pub fn bounds_by_stream(mut self, stream: bool) -> Self {
        self.bounds_stream = Some(stream);
        self
    }

    /// Parts each begin/end pair is cut into ([`policy::ranges_parts`]
    /// unless set; 1 or less: not cut, one warp a pair): for tests, which
    /// reach the parts with small inputs this way. Where the temporary
    /// storage has no room for that many parts, fewer.
    #[doc(hidden)]
    pub fn ranges_parts(mut self, parts: u64) -> Self {
        self.ranges_parts = Some(parts);
        self
    }

    /// Begin/end pairs longer than `long` elements are cut into slots of
    /// `slot` elements, rounded up to a power of two
    /// ([`policy::ranges_slot`] for both unless set), in
    /// a table of at most `cap` slots
    /// ([`Self::ranges_table_cap`]): for tests, which reach the slots with
    /// small inputs this way.
    #[doc(hidden)]
    pub fn ranges_long(mut self, long: u64, slot: u64) -> Self {
        self.ranges_long = Some((long.max(1), slot.max(1).next_power_of_two()));
        self
    }

    /// Slots of the long pairs' table ([`policy::ranges_table_cap`] unless
    /// set; 0: no table, every pair walked by one warp): for tests, which
    /// reach a full table this way.
    #[doc(hidden)]
    pub fn ranges_table_cap(mut self, cap: u64) -> Self {
        self.ranges_cap = Some(cap);
        self
    }

    /// Bytes of a warp's window of shared memory in the ranges kernel
    /// (rounded down to 32 elements, at least 32, at most
    /// [`policy::RANGES_WINDOW_MAX_BYTES`]; by default sized by
    /// [`policy::ranges_window_for`] from the mean segment, at least
    /// [`policy::RANGES_WINDOW_BYTES`]): for tests and measurements.
    #[doc(hidden)]
    pub fn ranges_window(mut self, bytes: u64) -> Self {
        self.ranges_window = Some(bytes);
        self
    }

    /// The window (elements of `T`) of a ranges launch: `default` unless
    /// set on the builder.
    fn window<T>(&self, default: u64) -> u64 {
        let size = size_of::<T>() as u64;
        match self.ranges_window {
            Some(bytes) => (bytes.min(policy::RANGES_WINDOW_MAX_BYTES as u64) / size / 32).max(1) * 32,
            None => default,
        }
    }

    /// Whether CSR offsets are counted first and their segments reduced by
    /// the one-warp-per-segment kernel when they suit it
    /// ([`policy::route_considered`] unless set), and whether fixed lengths
    /// go to that kernel ([`policy::fixed_to_ranges`] unless set): for
    /// tests, which reach both kernels with any lengths this way.
    #[doc(hidden)]
    pub fn route_to_ranges(mut self, route: bool) -> Self {
        self.route = Some(route);
        self
    }

    /// Whether CSR offsets and begin/end pairs take the chunked path
    /// (long segments in chunks of a block each, short ones a warp each:
    /// [`policy::chunked`] and [`policy::ranges_chunked`] unless set; for
    /// offsets never where [`Self::route_to_ranges`] was set, for pairs
    /// never where a form of the ranges kernel was, and only up to
    /// [`policy::CHUNK_MAX_LEN`] elements): for tests and measurements.
    #[doc(hidden)]
    pub fn chunked(mut self, yes: bool) -> Self {
        self.chunked = Some(yes);
        self
    }

    /// Whether the flat tiles of a plain operator (sum, product, min,
    /// max) take the kernel for short segments
    /// (`gpuprim_kernels::segmented::short`: [`policy::short`] unless
    /// set), or the general one: for tests and measurements.
    #[doc(hidden)]
    pub fn short_path(mut self, yes: bool) -> Self {
        self.short = Some(yes);
        self
    }

    /// Elements of a chunk, and the shortest segment that gets chunks
    /// rather than a warp, on the chunked path ([`policy::chunk_len`] and
    /// [`policy::short_len`] unless set; from 1 to
    /// [`policy::CHUNK_MAX_LEN`] each): for tests, which reach segments of
    /// many chunks with small inputs this way.
    #[doc(hidden)]
    pub fn chunk_lens(mut self, chunk: u64, short: u64) -> Self {
        self.chunk_len = Some(chunk.clamp(1, policy::CHUNK_MAX_LEN));
        self.short_len = Some(short.clamp(1, policy::CHUNK_MAX_LEN));
        self
    }

    /// Whether the chunked path's work launch is the build that may spread
    /// the short segments' batches among the chunk items
    /// ([`policy::spread_chunks`] unless set; that build spreads them
    /// only on launches of [`policy::SPREAD_FROM`] tickets a block or
    /// more): for tests, which reach it with small inputs this way, and
    /// measurements.
    #[doc(hidden)]
    pub fn spread_tickets(mut self, yes: bool) -> Self {
        self.spread = Some(yes);
        self
    }

    /// The chunked path's work launch: how many of its first tickets are
    /// short batches run before its blocks wait for the plan (`0`: none;
    /// the default: [`policy::early_batches`]; argmin and argmax run none
    /// whatever is asked). For tests and tuning.
    #[doc(hidden)]
    pub fn early_batches(mut self, batches: u64) -> Self {
        self.early = Some(batches);
        self
    }

    /// The chunked path's chunk length and shortest chunked segment for
    /// `n` elements of `T` (`n = 0`: the shorter chunks, which plan the
    /// most items).
    fn lens<T>(&self, n: u64) -> (u64, u64) {
        (self.chunk_len.unwrap_or(policy::chunk_len::<T>(n)), self.short_len.unwrap_or(policy::short_len::<T>()))
    }

    /// The chunked path's sizes over `n` elements in `segments` segments
    /// of `T`, if the path can take them (its items, segments and tickets
    /// are counted in 32 bits).
    fn chunk_sizes<T>(&self, n: u64, segments: u64) -> Option<ChunkSizes> {
        let (chunk, short) = self.lens::<T>(n);
        let cap = policy::chunk_items(n, segments, chunk, short);
        let tickets = cap + segments.div_ceil(policy::SHORT_BATCH as u64);
        (segments < u32::MAX as u64 && tickets < u32::MAX as u64).then_some(ChunkSizes { chunk, short, cap, tickets })
    }

    /// Tiles of the flat kernel for `n` elements: one more than whole
    /// tiles, so that position `n` lies in a tile.
    fn tiles<T>(&self, n: u64) -> Result<u64> {
        let tile = policy::tile_len::<T>(self.block.clamp(32, 1024));
        let tiles = n / tile + 1;
        if tiles > MAX_GRID {
            return Err(Error::TooLarge {
                what: "segmented reduction input (one block per tile)",
                len: n,
                max: (MAX_GRID - 1) * tile,
            });
        }
        Ok(tiles)
    }

    /// The flat kernel: offsets (`offsets_len` of them) or fixed lengths.
    fn run<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        segs: Segs,
        offsets_len: usize,
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        temp: Option<&mut SegmentedTemp>,
    ) -> Result<()> {
        let input = input.input(self.ctx)?;
        let output = output.output(self.ctx)?;
        let (n, segments) = (input.view.len() as u64, output.view.len() as u64);
        let what = Instance::of(T::NAME).op(Op::NAME);
        let task = || format!("segmented `{}` on `{}`", Op::NAME, T::NAME);
        // Plain operators (an accumulator of the element's size; argmin
        // and argmax carry an index too) have a tile kernel of their own
        // for short segments.
        let plain = size_of::<Op::Acc>() == size_of::<T>();
        let short = plain && self.short.unwrap_or_else(|| policy::short(n, segments));
        let family = if short { "segmented_short" } else { "segmented_reduce" };
        let kernel = Family(family).get(self.ctx, what, self.block, task)?;
        let (offsets, seg_len) = match segs {
            Segs::Offsets(addr) => {
                if offsets_len as u64 != segments + 1 {
                    return Err(Error::LengthMismatch {
                        what: "segment offsets (one more than the output)",
                        expected: segments as usize + 1,
                        got: offsets_len,
                    });
                }
                (addr, 0)
            }
            Segs::Fixed(len) => {
                if len == 0 {
                    return Err(Error::InvalidInput { what: "segment length", reason: "must be at least 1".into() });
                }
                let want = n.div_ceil(len);
                if segments != want {
                    return Err(Error::LengthMismatch {
                        what: "segmented output (one per segment of the fixed length)",
                        expected: want as usize,
                        got: segments as usize,
                    });
                }
                (0, len)
            }
        };
        if let Some(t) = &temp {
            self.ctx.check_domain(t.buf.context().domain(), "segmented temporary storage")?;
        }
        let tiles = self.tiles::<T>(n)?;
        if offsets == 0 && segments == 0 {
            return Ok(());
        }
        if offsets == 0 && self.route.unwrap_or_else(|| policy::fixed_to_ranges(seg_len, size_of::<T>())) {
            return self.fixed_ranges::<T, Op>(input.view.addr(), n, seg_len, segments, output.view.addr(), temp);
        }
        let x = input.view.addr();
        let out = output.view.addr();
        // Short on average: a warp's 32 segments in its window of shared
        // memory, through the ranges kernel as begin/end pairs (unless a
        // kernel or path was chosen on the builder).
        let chosen = self.route.is_some() || self.chunked.is_some() || self.short.is_some();
        if offsets != 0 && !chosen && policy::offsets_to_ranges(n, segments, !plain) {
            let pairs = Pairs { begins: offsets, ends: offsets + 8, what: OFFSETS_ERROR };
            return self.pairs::<T, Op>(x, n, pairs, segments, out, temp);
        }
        if offsets != 0
            && self.chunked.unwrap_or_else(|| self.route.is_none() && policy::chunked(n, segments))
            && let Some(sizes) = self.chunk_sizes::<T>(n, segments)
        {
            let pairs = Pairs { begins: offsets, ends: offsets + 8, what: OFFSETS_ERROR };
            return self.chunks::<T, Op>(x, n, pairs, segments, out, sizes, temp);
        }
        let blocks = self.spine_blocks::<Op::Acc>(tiles);
        let used = records_used::<Op::Acc>(tiles, blocks);
        // Offsets whose mean segment suits the ranges kernel are counted
        // first, and the kernels of both paths launched: the counts decide
        // on the device which of them works ([`policy::route_to_ranges`]).
        let routed = offsets != 0
            && segments <= u32::MAX as u64
            && self.route.unwrap_or_else(|| policy::route_considered(n, segments));
        let route_kernels = if routed {
            let ranges_task = || format!("segmented `{}` on `{}` (routed to ranges)", Op::NAME, T::NAME);
            Some((
                Family("segmented_route").get(self.ctx, Instance::of(""), policy::OFFSETS_BLOCK, task)?,
                Family("segmented_ranges").get(self.ctx, what, policy::RANGES_BLOCK, ranges_task)?,
            ))
        } else {
            None
        };
        let search_first = !routed && offsets != 0 && tiles >= self.bounds_from.unwrap_or(policy::BOUNDS_MIN_TILES);
        let stream = self.bounds_stream.unwrap_or(policy::bounds_by_stream(segments, tiles));
        let bounds_family = if search_first {
            let name = if stream { "segmented_bounds" } else { "segmented_bounds_search" };
            Some(Family(name).get(self.ctx, Instance::of(""), policy::OFFSETS_BLOCK, task)?)
        } else {
            None
        };
        let smem = policy::smem_bytes::<T, Op::Acc>(self.block) as u32;
        let check = self.check && offsets != 0;
        let launch = |region: Region| {
            self.clear_first(region)?;
            let route = match &route_kernels {
                Some((count, ranges)) => {
                    let at = region.temp + policy::ROUTE_AT as u64;
                    let full = self.ctx.multiprocessors() as u64 * policy::RANGES_BLOCKS_PER_SM as u64;
                    let grid = segments.div_ceil(policy::OFFSETS_BLOCK as u64).clamp(1, full.max(1)) as u32;
                    let cfg = LaunchConfig { grid, block: policy::OFFSETS_BLOCK, shared_bytes: 0 };
                    // SAFETY: offsets holds segments + 1 (checked above);
                    // the route's two counts lie in the region's zeroed
                    // header.
                    unsafe { self.ctx.launch(count.name, cfg, &[Arg::Ptr(offsets), segments.into(), Arg::Ptr(at)])? };
                    let segs = RangesSegs::Pairs { begins: offsets, ends: offsets + 8 };
                    // SAFETY: begins and ends are offsets[..S] and
                    // offsets[1..], out holds segments; the region's
                    // header as the ranges kernel needs it; the counts
                    // written by the launch before.
                    unsafe {
                        self.launch_ranges::<T>(
                            ranges.name,
                            policy::RANGES_BLOCK,
                            region,
                            x,
                            n,
                            segs,
                            segments,
                            out,
                            at,
                            NO_TABLE,
                            self.window::<T>(policy::ranges_window(size_of::<T>())),
                        )?
                    };
                    at
                }
                None => 0,
            };
            let bounds = match &bounds_family {
                Some(f) => {
                    let at = region.temp + policy::records_layout::<Op::Acc>(tiles)[3] as u64;
                    let tile_len = policy::tile_len::<T>(self.block);
                    let mut args =
                        vec![Arg::Ptr(offsets), segments.into(), n.into(), tile_len.into(), tiles.into(), Arg::Ptr(at)];
                    let grid = if stream {
                        // The stream also counts bad offsets in the header.
                        args.push(Arg::Ptr(region.temp));
                        // One thread per boundary (segments + 2 of them),
                        // grid-stride beyond 2^16 blocks.
                        (segments + 2).div_ceil(policy::OFFSETS_BLOCK as u64).min(1 << 16) as u32
                    } else {
                        // One warp per tile edge.
                        (tiles + 1).div_ceil((policy::OFFSETS_BLOCK / WARP_SIZE) as u64) as u32
                    };
                    let cfg = LaunchConfig { grid, block: policy::OFFSETS_BLOCK, shared_bytes: 0 };
                    // SAFETY: offsets holds segments + 1 (checked above),
                    // `at` tiles + 1 zeroed words inside the region
                    // (`used`), the region's header first; tile_len and
                    // tiles above 0.
                    unsafe { self.ctx.launch(f.name, cfg, &args)? };
                    at
                }
                None => 0,
            };
            let args = [
                Arg::Ptr(x),
                n.into(),
                Arg::Ptr(offsets),
                segments.into(),
                seg_len.into(),
                Arg::Ptr(out),
                Arg::Ptr(region.temp),
                Arg::Ptr(region.spare),
                (region.spare_bytes as u64 / 8).into(),
                Arg::Ptr(bounds),
                Arg::Ptr(route),
            ];
            let cfg = LaunchConfig { grid: tiles as u32, block: self.block, shared_bytes: smem };
            // SAFETY: input holds n elements, offsets segments + 1 (checked
            // above), out segments; temp the records of `tiles` tiles after
            // a zeroed header, spare the other half; one block per tile,
            // n / tile + 1 tiles, as the kernel requires.
            unsafe { self.ctx.launch(kernel.name, cfg, &args)? };
            // The short kernel's tiles write the segment that ends at their
            // first boundary themselves when it began at most lead_max
            // elements before the tile (always so for fixed lengths up to
            // that): the spine then has nothing to do, and it checks a flag
            // raised by the tiles that left it work.
            let spine_idle = short && offsets == 0 && seg_len <= policy::lead_max::<T>();
            if tiles > 1 && !spine_idle {
                // Looked up here: a one-tile input never loads the spine's module.
                let spine = Family("segmented_spine").get(self.ctx, what, policy::SPINE_BLOCK, task)?;
                let shared_bytes = policy::spine_smem_bytes::<Op::Acc>() as u32;
                let run_spine = |phase: u32, grid: u64| {
                    let args = [
                        Arg::Ptr(region.temp),
                        tiles.into(),
                        Arg::Ptr(offsets),
                        segments.into(),
                        seg_len.into(),
                        n.into(),
                        Arg::Ptr(out),
                        phase.into(),
                        Arg::Ptr(route),
                    ];
                    let cfg = LaunchConfig { grid: grid as u32, block: policy::SPINE_BLOCK, shared_bytes };
                    // SAFETY: the records of the launch above, same
                    // arguments, then room for the pairs of `blocks`
                    // blocks (`used`); blocks of SPINE_BLOCK threads;
                    // SPINE_WHOLE in one block, SPINE_CHAINED in more
                    // (their pairs' room zeroed with the region).
                    unsafe { self.ctx.launch(spine.name, cfg, &args) }
                };
                let phase = if blocks == 1 { policy::SPINE_WHOLE } else { policy::SPINE_CHAINED };
                run_spine(if short { phase | policy::SPINE_IF_NEEDED } else { phase }, blocks)?;
            }
            if check { self.errors(region.temp, OFFSETS_ERROR.0, OFFSETS_ERROR.1) } else { Ok(()) }
        };
        self.with_region(temp, used, launch)
    }

    /// Segments through the chunked path: a plan launch (a thread per
    /// segment: chunk items for the long ones) and the work launch (a
    /// resident grid taking tickets: a block per chunk, then a warp per
    /// short segment). `sizes` from [`Self::chunk_sizes`]; `pairs` CSR
    /// offsets (`offsets`, `offsets + 1`) or begin/end pairs.
    #[allow(clippy::too_many_arguments)]
    fn chunks<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        x: u64,
        n: u64,
        pairs: Pairs,
        segments: u64,
        out: u64,
        sizes: ChunkSizes,
        temp: Option<&mut SegmentedTemp>,
    ) -> Result<()> {
        let what = Instance::of(T::NAME).op(Op::NAME);
        let task = || format!("segmented `{}` on `{}` (chunks)", Op::NAME, T::NAME);
        let plan = Family("segmented_plan").get(self.ctx, Instance::of(""), policy::CHUNKS_BLOCK, task)?;
        let work = if self.spread.unwrap_or(policy::spread_chunks::<T>(n)) {
            "segmented_chunks_spread"
        } else {
            "segmented_chunks"
        };
        let work = Family(work).get(self.ctx, what, policy::CHUNKS_BLOCK, task)?;
        let ChunkSizes { chunk, short, cap, tickets } = sizes;
        let used = policy::chunks_layout::<Op::Acc>(cap)[3];
        let full = (self.ctx.multiprocessors() as u64 * policy::CHUNKS_BLOCKS_PER_SM as u64).max(1);
        let launch = |region: Region| {
            self.clear_first(region)?;
            let args = [
                Arg::Ptr(pairs.begins),
                Arg::Ptr(pairs.ends),
                segments.into(),
                n.into(),
                chunk.into(),
                short.into(),
                cap.into(),
                Arg::Ptr(region.temp),
                Arg::Ptr(region.spare),
                (region.spare_bytes as u64 / 8).into(),
            ];
            // A warp per 32 segments, and a block per PLAN_CLEAR_BYTES of
            // the other half to zero, spread over the GPU.
            let grid = segments
                .div_ceil(policy::CHUNKS_BLOCK as u64)
                .max((region.spare_bytes as u64).div_ceil(policy::PLAN_CLEAR_BYTES))
                .clamp(1, full) as u32;
            let cfg = LaunchConfig { grid, block: policy::CHUNKS_BLOCK, shared_bytes: 0 };
            // SAFETY: begins and ends hold `segments` each (checked by
            // the caller), segments < 2^32; the region holds the layout
            // of `cap` items (the plan writes none past them), zeroed;
            // spare the other half.
            unsafe { self.ctx.launch(plan.name, cfg, &args)? };
            // Tickets beyond the grid: at most a resident grid, fewer
            // where there is less work.
            let grid = tickets.clamp(1, full) as u32;
            let early = self.early.unwrap_or_else(|| policy::early_batches(grid as u64));
            let args = [
                Arg::Ptr(x),
                n.into(),
                Arg::Ptr(pairs.begins),
                Arg::Ptr(pairs.ends),
                segments.into(),
                Arg::Ptr(out),
                chunk.into(),
                short.into(),
                cap.into(),
                Arg::Ptr(region.temp),
                early.into(),
            ];
            let shared_bytes = policy::chunks_smem_bytes::<Op::Acc>(policy::CHUNKS_BLOCK) as u32;
            let cfg = LaunchConfig { grid, block: policy::CHUNKS_BLOCK, shared_bytes };
            // SAFETY: x holds n elements, begins, ends and out
            // `segments`; the region as the plan above left it, its
            // ticket zero. A dependent launch: the work kernel waits for
            // the plan's end before it reads the plan.
            unsafe { self.ctx.launch_dependent(work.name, cfg, &args)? };
            if self.check { self.errors(region.temp, pairs.what.0, pairs.what.1) } else { Ok(()) }
        };
        self.with_region(temp, used, launch)
    }

    /// Begin/end pairs, checked for their lengths ([`Self::pairs`]).
    fn ranges<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        input: &(impl DeviceInput<T> + ?Sized),
        begins: &(impl DeviceInput<u64> + ?Sized),
        ends: &(impl DeviceInput<u64> + ?Sized),
        output: &mut (impl DeviceOutput<Op::Out> + ?Sized),
        _op: Op,
        temp: Option<&mut SegmentedTemp>,
    ) -> Result<()> {
        let input = input.input(self.ctx)?;
        let (begins, ends) = (begins.input(self.ctx)?, ends.input(self.ctx)?);
        let output = output.output(self.ctx)?;
        let (n, segments) = (input.view.len() as u64, output.view.len() as u64);
        for (what, got) in [("segment begins", begins.view.len()), ("segment ends", ends.view.len())] {
            if got as u64 != segments {
                return Err(Error::LengthMismatch { what, expected: segments as usize, got });
            }
        }
        if let Some(t) = &temp {
            self.ctx.check_domain(t.buf.context().domain(), "segmented temporary storage")?;
        }
        if segments == 0 {
            return Ok(());
        }
        let (x, out) = (input.view.addr(), output.view.addr());
        let pairs = Pairs { begins: begins.view.addr(), ends: ends.view.addr(), what: RANGES_ERROR };
        self.pairs::<T, Op>(x, n, pairs, segments, out, temp)
    }

    /// Begin/end pairs at device addresses (`segments` of each, at least
    /// one; `out` holds `segments`): the chunked path where they are long
    /// on average, else the ranges kernel in one of its forms; bad pairs
    /// reported as `pairs.what` says.
    fn pairs<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        x: u64,
        n: u64,
        pairs: Pairs,
        segments: u64,
        out: u64,
        temp: Option<&mut SegmentedTemp>,
    ) -> Result<()> {
        let what = Instance::of(T::NAME).op(Op::NAME);
        let task = || format!("segmented `{}` on `{}` over begin/end ranges", Op::NAME, T::NAME);
        let (b, e) = (pairs.begins, pairs.ends);
        // The warps of a full ranges grid (as many units as it holds), and
        // the parts each pair would be cut into by default.
        let warps = self.ranges_warps();
        let default_parts = policy::ranges_parts(n, segments, warps);
        // Long on average, and not so few that the ranges kernel cuts
        // them into parts: the chunked path, as for offsets (where the
        // pairs overlap so much that their chunks pass its room, a warp a
        // pair: see `gpuprim_kernels::segmented::chunks`). H200, 2^24
        // `i32` in 16 pairs of 2^20: 25.6 us in parts, 31.9 chunked.
        if n <= policy::CHUNK_MAX_LEN
            && self.chunked.unwrap_or_else(|| {
                let forms = self.ranges_parts.is_none() && self.ranges_long.is_none() && self.ranges_cap.is_none();
                forms && policy::ranges_chunked(n, segments) && default_parts < 2
            })
            && let Some(sizes) = self.chunk_sizes::<T>(n, segments)
            // A pair has at most n / chunk + 1 items, and the plan adds a
            // warp's 32 pairs' items in 32 bits.
            && n / sizes.chunk < 1 << 26
        {
            return self.chunks::<T, Op>(x, n, pairs, segments, out, sizes, temp);
        }
        let check = self.check;
        let finish = |region: Region| if check { self.errors(region.temp, pairs.what.0, pairs.what.1) } else { Ok(()) };
        // Few long pairs: each cut into parts, a warp a part, then a
        // launch that joins the parts (their accumulators after the
        // status header). As many parts as the storage holds.
        let acc = size_of::<Op::Acc>() as u64;
        let mut parts = self.ranges_parts.unwrap_or(default_parts);
        if let Some(t) = &temp {
            let half = ((t.bytes() / 2) & !15) as u64;
            parts = parts.min(half.saturating_sub(RANGES_STATUS as u64) / segments.saturating_mul(acc));
        }
        let parts_bytes = segments.checked_mul(parts).and_then(|u| u.checked_mul(acc));
        if parts >= 2
            && let Some(bytes) = parts_bytes.and_then(|b| usize::try_from(b).ok())
            && let Some(used) = bytes.checked_add(RANGES_STATUS)
        {
            let kernel = Family("segmented_ranges_parts").get(self.ctx, what, self.block, task)?;
            let launch = |region: Region| {
                self.clear_first(region)?;
                let partials = region.temp + RANGES_STATUS as u64;
                let grids = [
                    (0u32, self.ranges_grid(segments * parts, self.block)),
                    (1, self.ranges_grid(segments, self.block)),
                ];
                for (join, grid) in grids {
                    let args = [
                        Arg::Ptr(x),
                        n.into(),
                        Arg::Ptr(b),
                        Arg::Ptr(e),
                        segments.into(),
                        parts.into(),
                        Arg::Ptr(partials),
                        Arg::Ptr(out),
                        Arg::Ptr(region.temp),
                        Arg::Ptr(region.spare),
                        (region.spare_bytes as u64 / 8).into(),
                        join.into(),
                    ];
                    let cfg = LaunchConfig { grid, block: self.block, shared_bytes: 0 };
                    // SAFETY: input holds n elements, begins, ends and out
                    // `segments` each (checked above); the region holds
                    // the 16 zeroed bytes of status and then
                    // segments * parts accumulators (`used`), written by
                    // the first launch and read by the second; spare is
                    // the region's other half.
                    unsafe { self.ctx.launch(kernel.name, cfg, &args)? };
                }
                finish(region)
            };
            return self.with_region(temp, used, launch);
        }
        let kernel = Family("segmented_ranges").get(self.ctx, what, self.block, task)?;
        // Pairs longer than `long` go to a table of slots (after the
        // status header), where one can be that long and the storage has
        // room: the ranges kernel lists them, one more launch walks the
        // slots (the last slot in of a pair joins the pair's).
        let (long, slot) = self.ranges_long.unwrap_or_else(|| {
            let slot = policy::ranges_slot(n, warps);
            (slot, slot)
        });
        let mut cap =
            self.ranges_cap.unwrap_or_else(|| policy::ranges_table_cap(n, slot)).min(policy::RANGES_TABLE_MAX);
        if let Some(t) = &temp {
            let half = ((t.bytes() / 2) & !15) as u64;
            cap = cap.min(policy::ranges_table_fit(half.saturating_sub(RANGES_STATUS as u64), acc as usize));
        }
        let table = (n > long && cap > 0).then(|| policy::ranges_table_layout(cap, acc as usize)[3]);
        let slots_kernel = match table {
            Some(_) => Some(Family("segmented_ranges_slots").get(self.ctx, what, self.block, task)?),
            None => None,
        };
        // The pairs' lengths are on the device; the input's share a pair
        // (`n / S`) sizes the windows to hold 32 such pairs (2 KiB up to
        // 16, 4 KiB at 32): pairs of 32 side by side staged, 1078 -> 310
        // us at 2^28 `i32` (H200); the same rule for CSR offsets.
        let window = self.window::<T>(policy::ranges_window_for(n / segments, size_of::<T>()));
        let launch = |region: Region| {
            self.clear_first(region)?;
            let segs = RangesSegs::Pairs { begins: b, ends: e };
            let table_at = if table.is_some() { region.temp + RANGES_STATUS as u64 } else { 0 };
            let slots = Table { at: table_at, cap, long, slot };
            // SAFETY: input holds n elements, begins, ends and out
            // `segments` each (checked above); the region's 16 bytes
            // zeroed, then the table's counter (`used` covers the table);
            // no route.
            unsafe {
                self.launch_ranges::<T>(kernel.name, self.block, region, x, n, segs, segments, out, 0, slots, window)?
            };
            if let Some(k) = &slots_kernel {
                let args = [
                    Arg::Ptr(x),
                    n.into(),
                    Arg::Ptr(b),
                    Arg::Ptr(e),
                    Arg::Ptr(out),
                    Arg::Ptr(table_at),
                    cap.into(),
                    slot.into(),
                ];
                let cfg =
                    LaunchConfig { grid: self.ranges_grid(u64::MAX, self.block), block: self.block, shared_bytes: 0 };
                // SAFETY: as the launch above, which listed the long
                // pairs in the table.
                unsafe { self.ctx.launch(k.name, cfg, &args)? };
            }
            finish(region)
        };
        let used = RANGES_STATUS + table.unwrap_or(0);
        self.with_region(temp, used, launch)
    }

    /// Fixed lengths through the ranges kernel: one launch, nothing to
    /// check (`segments` = ceil(n / seg_len), checked by the caller).
    fn fixed_ranges<T: Scalar, Op: SegmentedOp<T>>(
        &self,
        x: u64,
        n: u64,
        seg_len: u64,
        segments: u64,
        out: u64,
        temp: Option<&mut SegmentedTemp>,
    ) -> Result<()> {
        let what = Instance::of(T::NAME).op(Op::NAME);
        let task = || format!("segmented `{}` on `{}` of a fixed length", Op::NAME, T::NAME);
        let kernel = Family("segmented_ranges").get(self.ctx, what, policy::RANGES_BLOCK, task)?;
        let window = self.window::<T>(policy::ranges_window_for(seg_len, size_of::<T>()));
        let launch = |region: Region| {
            self.clear_first(region)?;
            let segs = RangesSegs::Fixed(seg_len);
            // SAFETY: input holds n elements, out ceil(n / seg_len) with
            // seg_len > 0 (the caller's checks); the region's 16 bytes
            // zeroed; no route.
            unsafe {
                self.launch_ranges::<T>(
                    kernel.name,
                    policy::RANGES_BLOCK,
                    region,
                    x,
                    n,
                    segs,
                    segments,
                    out,
                    0,
                    NO_TABLE,
                    window,
                )
            }
        };
        self.with_region(temp, RANGES_STATUS, launch)
    }

    /// Warps of the ranges kernels' full grid ([`Self::ranges_grid`]).
    fn ranges_warps(&self) -> u64 {
        self.ranges_grid(u64::MAX, self.block) as u64 * (self.block / WARP_SIZE) as u64
    }

    /// Blocks of `block` threads for a ranges launch over `units` units of
    /// a warp each: a warp a unit, at most [`policy::RANGES_BLOCKS_PER_SM`]
    /// blocks a multiprocessor (grid-stride beyond).
    fn ranges_grid(&self, units: u64, block: u32) -> u32 {
        self.grid_of(units, block, policy::RANGES_BLOCKS_PER_SM)
    }

    /// Blocks of `block` threads over `units` units of a warp each, at
    /// most `per_sm` blocks a multiprocessor (grid-stride beyond).
    fn grid_of(&self, units: u64, block: u32, per_sm: u32) -> u32 {
        let per_block = (block / WARP_SIZE) as u64;
        let full = self.ctx.multiprocessors() as u64 * per_sm as u64;
        units.div_ceil(per_block).clamp(1, full.max(1)) as u32
    }

    /// Launch the ranges kernel `name` (blocks of `block`, one warp per
    /// segment, at most [`policy::RANGES_BLOCKS_PER_SM`] blocks a
    /// multiprocessor and no more than fit there at once, grid-stride
    /// beyond; a window of `window` elements of `T` a warp in shared
    /// memory, a multiple of 32) over
    /// `segments` segments of the `n` elements at `x` into `out`, its
    /// status in `region`, the route's counts at `route` (0: none).
    ///
    /// # Safety
    /// As the kernel's: `x` holds `n` elements, the pairs `segments` each
    /// (or `segments` = ceil(n / L) for fixed lengths `L > 0`), `out`
    /// `segments`; the region's first 16 bytes zeroed; `route` 0 or the
    /// counts of a `segmented_route` launch before this one.
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_ranges<T>(
        &self,
        name: &str,
        block: u32,
        region: Region,
        x: u64,
        n: u64,
        segs: RangesSegs,
        segments: u64,
        out: u64,
        route: u64,
        table: Table,
        window: u64,
    ) -> Result<()> {
        let shared_bytes = policy::ranges_smem_bytes(block, size_of::<T>(), window) as u32;
        // The kernel's registers depend on the type and operator (32 to
        // 48 a thread): a grid of more blocks than fit at once would leave
        // the last ones to run alone.
        let fit = self.ctx.resident_blocks(name, block, shared_bytes)?.unwrap_or(policy::RANGES_BLOCKS_PER_SM);
        let grid = self.grid_of(segments, block, fit.min(policy::RANGES_BLOCKS_PER_SM));
        let (begins, ends, seg_len) = match segs {
            RangesSegs::Pairs { begins, ends } => (begins, ends, 0),
            RangesSegs::Fixed(len) => (0, 0, len),
        };
        let args = [
            Arg::Ptr(x),
            n.into(),
            Arg::Ptr(begins),
            Arg::Ptr(ends),
            seg_len.into(),
            segments.into(),
            Arg::Ptr(out),
            Arg::Ptr(region.temp),
            Arg::Ptr(region.spare),
            (region.spare_bytes as u64 / 8).into(),
            Arg::Ptr(route),
            Arg::Ptr(table.at),
            table.cap.into(),
            table.long.into(),
            table.slot.into(),
            window.into(),
        ];
        let cfg = LaunchConfig { grid, block, shared_bytes };
        // SAFETY: the caller's contract; spare is the region's other half.
        unsafe { self.ctx.launch(name, cfg, &args) }
    }

    /// Run `launch` on `used` bytes of zeroed status: in `temp`, or in the
    /// stream's own storage.
    fn with_region(
        &self,
        temp: Option<&mut SegmentedTemp>,
        used: usize,
        launch: impl FnOnce(Region) -> Result<()>,
    ) -> Result<()> {
        match temp {
            Some(t) => {
                let half = (t.bytes() / 2) & !15;
                if half < used {
                    return Err(Error::LengthMismatch {
                        what: "segmented temporary storage (bytes)",
                        expected: 2 * used,
                        got: t.bytes(),
                    });
                }
                t.halves.run(t.buf.addr(), half, used, launch)
            }
            None => self.ctx.with_status(used, launch),
        }
    }

    /// Zero the region's status first when its history is unknown.
    fn clear_first(&self, region: Region) -> Result<()> {
        if region.clear_first > 0 {
            self.ctx.fill_bytes(region.temp, 0, region.clear_first.div_ceil(16) * 16)?;
        }
        Ok(())
    }

    /// Wait for the launch and read its error count (the `u32` at byte
    /// [`policy::ERRORS_AT`] of its status).
    fn errors(&self, status: u64, what: &'static str, reason: &str) -> Result<()> {
        let mut count = [0u8; 4];
        self.ctx.download_bytes(status + policy::ERRORS_AT as u64, &mut count)?;
        match u32::from_ne_bytes(count) {
            0 => Ok(()),
            k => Err(Error::InvalidInput { what, reason: format!("{reason} (found by {k} thread(s) on the device)") }),
        }
    }
}

/// Bytes of the flat kernel's temporary storage over `tiles` tiles, with
/// a spine of `blocks` blocks.
fn records_used<A>(tiles: u64, blocks: u64) -> usize {
    policy::records_layout::<A>(tiles)[4] + policy::spine_pairs_bytes::<A>(blocks)
}

#[cfg(test)]
mod tests {
    use super::policy;

    /// The slots that fit in some bytes are a table no larger than them,
    /// and one more slot would not fit but for the 16 bytes the fit sets
    /// aside for the alignment.
    #[test]
    fn ranges_table_fit_inverts_the_layout() {
        for acc in [4usize, 8, 12, 16] {
            for bytes in (0u64..4096).chain([1 << 20, (1 << 20) + 7, 1 << 33]) {
                let cap = policy::ranges_table_fit(bytes, acc);
                if cap > 0 {
                    assert!(policy::ranges_table_layout(cap, acc)[3] as u64 <= bytes, "{acc} {bytes} {cap}");
                }
                let more = policy::ranges_table_layout(cap + 1, acc)[3] as u64;
                assert!(more + 16 > bytes, "{acc} {bytes}: {} slots fit, not {cap}", cap + 1);
            }
        }
    }
}
