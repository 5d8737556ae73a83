//! Device memory: owned buffers, borrowed views, and the traits every
//! operation takes its inputs and outputs through.
//!
//! * [`DeviceBuffer`] owns memory the library allocated.
//! * [`DeviceSlice`] / [`DeviceSliceMut`] borrow a range of device memory:
//!   of a buffer ([`DeviceBuffer::slice`], [`DeviceBuffer::slice_mut`]), of
//!   memory your own CUDA code owns ([`DeviceSlice::from_raw_parts`]), or
//!   of cudarc's `CudaSlice`/`CudaView`/`CudaViewMut`, which are inputs and
//!   outputs directly.
//! * [`DeviceInput`] / [`DeviceOutput`] are what operations accept: any of
//!   the above.
//!
//! ```
//! # fn main() -> gpuprim::Result<()> {
//! let ctx = gpuprim::Context::new()?;
//! let mut buf = ctx.upload(&[1i32, 2, 3, 4, 5, 6])?;
//! assert_eq!(ctx.sum(&buf.slice(2..5)?)?, 12); // 3 + 4 + 5
//! let mut tail = buf.slice_mut(3..)?;
//! tail.copy_from_host(&ctx, &[0, 0, 7])?;
//! assert_eq!(buf.to_vec()?, [1, 2, 3, 0, 0, 7]);
//! assert!(matches!(buf.slice(4..9), Err(gpuprim::Error::OutOfRange { .. })));
//! # Ok(()) }
//! ```

use crate::context::{Context, Inner};
use crate::error::{Error, Result};
use gpuprim_kernels::ops::Element;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

pub use gpuprim_kernels::DeviceRepr;

/// Element types of reductions and scans. `Acc` is the type sums and
/// products accumulate and return in (a wider one for the 8- and 16-bit
/// types, see [`Element::Acc`]); `Wide` the exact 8-byte form argmin and
/// argmax compare in.
pub trait Scalar: DeviceRepr + Element<Wide: WideRepr, Acc: DeviceRepr> {}
impl<T: DeviceRepr + Element<Wide: WideRepr, Acc: DeviceRepr>> Scalar for T {}

/// The 8-byte accumulators that [`Indexed`](gpuprim_kernels::reduce::reduction::Indexed)
/// pairs with a `u64` index (argmin/argmax): with them the pair is 16
/// bytes without padding.
///
/// # Safety
/// Implement only for 8-byte [`DeviceRepr`] types.
pub unsafe trait WideRepr: DeviceRepr + Element {}
// SAFETY: 8-byte numbers.
unsafe impl WideRepr for i64 {}
// SAFETY: 8-byte numbers.
unsafe impl WideRepr for u64 {}
// SAFETY: 8-byte numbers.
unsafe impl WideRepr for f64 {}

pub(crate) fn as_bytes<T: DeviceRepr>(s: &[T]) -> &[u8] {
    // SAFETY: DeviceRepr types are plain data without padding.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}
pub(crate) fn as_bytes_mut<T: DeviceRepr>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as above; every bit pattern is a valid DeviceRepr.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut u8, std::mem::size_of_val(s)) }
}

/// Which memory a view points into: one CUDA context, or one emulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Domain {
    /// A CUDA context (`CUcontext` as an address).
    Cuda(u64),
    /// One emulator instance.
    Emu(u64),
}

impl std::fmt::Display for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Domain::Cuda(c) => write!(f, "CUDA context {c:#x}"),
            Domain::Emu(e) => write!(f, "emulator {e:#x}"),
        }
    }
}

/// Memory the library allocated; freed on drop.
pub(crate) struct Alloc {
    addr: u64,
    bytes: usize,
    emu: Option<crate::backend::emu::EmuAlloc>,
    inner: Arc<Inner>,
}

impl Alloc {
    pub(crate) fn new(inner: &Arc<Inner>, bytes: usize) -> Result<Alloc> {
        let (addr, emu) = inner.alloc_raw(bytes)?;
        Ok(Alloc { addr, bytes, emu, inner: inner.clone() })
    }
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Alloc {
    fn drop(&mut self) {
        self.inner.free_raw(self.addr, self.emu.take());
    }
}

/// A typed array in device memory (or emulator memory), owned: allocated
/// by [`Context::alloc`] or [`Context::upload`], freed when dropped. Copies
/// and fills run on the stream of the context that made it.
pub struct DeviceBuffer<T: DeviceRepr> {
    pub(crate) alloc: Alloc,
    pub(crate) len: usize,
    pub(crate) ctx: Context,
    _t: PhantomData<T>,
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}] at {:#x}", T::NAME, self.len, self.addr())
    }
}

/// Bytes of `len` elements of `T`, or the typed error for a size that does
/// not fit in memory's address space.
pub(crate) fn byte_len<T>(len: usize, what: &'static str) -> Result<usize> {
    let size = std::mem::size_of::<T>().max(1);
    len.checked_mul(size).filter(|&b| b <= isize::MAX as usize).ok_or(Error::TooLarge {
        what,
        len: len as u64,
        max: (isize::MAX as usize / size) as u64,
    })
}

/// `range` of a sequence of `len`, as `start..end`, or `OutOfRange`.
fn bounds(range: impl RangeBounds<usize>, len: usize, what: &'static str) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).ok_or(Error::OutOfRange { what, start: s, end: s, len })?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1).ok_or(Error::OutOfRange { what, start, end: e, len })?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end || end > len {
        return Err(Error::OutOfRange { what, start, end, len });
    }
    Ok((start, end))
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    pub(crate) fn new(ctx: &Context, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len, "buffer")?;
        let alloc = Alloc::new(&ctx.inner, bytes)?;
        Ok(DeviceBuffer { alloc, len, ctx: ctx.clone(), _t: PhantomData })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Device address of the first element (what kernels receive).
    pub fn addr(&self) -> u64 {
        self.alloc.addr()
    }

    /// Launch argument pointing at the buffer.
    pub fn arg(&self) -> crate::Arg {
        crate::Arg::Ptr(self.addr())
    }

    /// The context whose stream this buffer's copies run on.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The whole buffer as a read-only view.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice { addr: self.addr(), len: self.len, domain: self.ctx.domain(), _t: PhantomData }
    }

    /// The whole buffer as a writable view.
    pub fn as_slice_mut(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut { addr: self.addr(), len: self.len, domain: self.ctx.domain(), _t: PhantomData }
    }

    /// Elements `range` as a read-only view; [`Error::OutOfRange`] past
    /// the end.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        self.as_slice().into_slice(range)
    }

    /// Elements `range` as a writable view; [`Error::OutOfRange`] past the
    /// end.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        self.as_slice_mut().into_slice_mut(range)
    }

    /// Copy `src` into the buffer; the lengths must match.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        let ctx = self.ctx.clone();
        self.as_slice_mut().copy_from_host_on(&ctx, src)
    }

    /// Copy `src` into the first `src.len()` elements.
    pub fn copy_from_host_prefix(&mut self, src: &[T]) -> Result<()> {
        self.copy_from_host_at(0, src)
    }

    /// Copy `src` into elements `offset .. offset + src.len()`.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let mut b = ctx.upload(&[0u32; 5])?;
    /// b.copy_from_host_at(3, &[7, 8])?;
    /// assert_eq!(b.to_vec()?, vec![0, 0, 0, 7, 8]);
    /// # Ok(()) }
    /// ```
    pub fn copy_from_host_at(&mut self, offset: usize, src: &[T]) -> Result<()> {
        let ctx = self.ctx.clone();
        let (end, len) = (offset.saturating_add(src.len()), self.len);
        self.slice_mut(offset..end)
            .map_err(|_| Error::OutOfRange { what: "host copy into a buffer", start: offset, end, len })?
            .copy_from_host_on(&ctx, src)
    }

    /// Copy the buffer into `dst`; the lengths must match. Waits for the
    /// work queued before it.
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        self.as_slice().copy_to_host_on(&self.ctx, dst)
    }

    /// Copy elements `offset .. offset + dst.len()` into `dst`.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let b = ctx.upload(&[1i64, 2, 3, 4])?;
    /// let mut two = [0i64; 2];
    /// b.copy_to_host_at(1, &mut two)?;
    /// assert_eq!(two, [2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn copy_to_host_at(&self, offset: usize, dst: &mut [T]) -> Result<()> {
        let end = offset.saturating_add(dst.len());
        self.slice(offset..end)
            .map_err(|_| Error::OutOfRange { what: "host copy from a buffer", start: offset, end, len: self.len })?
            .copy_to_host_on(&self.ctx, dst)
    }

    /// The buffer's contents as a `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.as_slice().read_all_on(&self.ctx)
    }

    /// Fill every byte with `0xFF` (NaN for floats, all ones for integers),
    /// so that a kernel that fails to write an element is noticed.
    pub fn poison(&mut self) -> Result<()> {
        let ctx = self.ctx.clone();
        ctx.fill_bytes(self.addr(), 0xFF, self.alloc.bytes())
    }

    /// Set every byte to zero (stream-ordered), e.g. counters and flags
    /// that a kernel expects cleared.
    pub fn zero(&mut self) -> Result<()> {
        let ctx = self.ctx.clone();
        ctx.fill_bytes(self.addr(), 0, self.alloc.bytes())
    }
}

/// A read-only view of `len` elements of device memory: part of a
/// [`DeviceBuffer`], or memory the caller owns.
#[derive(Clone, Copy)]
pub struct DeviceSlice<'a, T> {
    addr: u64,
    len: usize,
    domain: Domain,
    _t: PhantomData<&'a [T]>,
}

/// A writable view of `len` elements of device memory.
pub struct DeviceSliceMut<'a, T> {
    addr: u64,
    len: usize,
    domain: Domain,
    _t: PhantomData<&'a mut [T]>,
}

impl<T> DeviceSliceMut<'_, T> {
    /// A view of `len` elements at `addr` in `domain`, unchecked.
    ///
    /// # Safety
    /// `addr` holds `len` elements of `T`, aligned, usable by the domain's
    /// kernels and by nothing else for the view's lifetime.
    pub(crate) unsafe fn from_parts(addr: u64, len: usize, domain: Domain) -> Self {
        DeviceSliceMut { addr, len, domain, _t: PhantomData }
    }
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceSlice<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceSlice<{}>[{}] at {:#x}", T::NAME, self.len, self.addr)
    }
}
impl<T: DeviceRepr> std::fmt::Debug for DeviceSliceMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceSliceMut<{}>[{}] at {:#x}", T::NAME, self.len, self.addr)
    }
}

/// Check a raw view and find its domain: aligned for `T`, inside one live
/// allocation of `ctx`'s device (or emulator).
fn check_raw<T>(ctx: &Context, addr: u64, len: usize) -> Result<Domain> {
    let bytes = byte_len::<T>(len, "raw device view")?;
    let align = std::mem::align_of::<T>();
    if !addr.is_multiple_of(align as u64) {
        return Err(Error::Misaligned { what: "raw device view", addr, align });
    }
    if bytes == 0 {
        return Ok(ctx.domain());
    }
    ctx.check_device_range(addr, bytes)?;
    Ok(ctx.domain())
}

impl<'a, T: DeviceRepr> DeviceSlice<'a, T> {
    /// A view of `len` elements at device address `addr`, for memory that
    /// your own CUDA code (or another library) allocated on `ctx`'s device.
    /// Checked: the address must be aligned for `T` and the whole range
    /// must lie inside one allocation of that device
    /// ([`Error::Misaligned`], [`Error::OutOfRange`],
    /// [`Error::ForeignMemory`]). On the emulator the address must lie in
    /// memory the emulator allocated.
    ///
    /// # Safety
    /// The memory must stay allocated, and must not be written by anything
    /// else while the view is used, for `'a`.
    ///
    /// ```
    /// # fn main() -> gpuprim::Result<()> {
    /// let ctx = gpuprim::Context::new()?;
    /// let owned = ctx.upload(&[5u32, 6, 7, 8])?;
    /// // As if `owned.addr()` came from your own allocator:
    /// let view = unsafe { gpuprim::DeviceSlice::<u32>::from_raw_parts(&ctx, owned.addr() + 4, 3)? };
    /// assert_eq!(ctx.sum(&view)?, 21);
    /// let past = unsafe { gpuprim::DeviceSlice::<u32>::from_raw_parts(&ctx, owned.addr() + 4, 4) };
    /// assert!(past.is_err());
    /// # Ok(()) }
    /// ```
    pub unsafe fn from_raw_parts(ctx: &Context, addr: u64, len: usize) -> Result<Self> {
        let domain = check_raw::<T>(ctx, addr, len)?;
        Ok(DeviceSlice { addr, len, domain, _t: PhantomData })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Device address of the first element.
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// Launch argument pointing at the view.
    pub fn arg(&self) -> crate::Arg {
        crate::Arg::Ptr(self.addr)
    }

    /// Elements `range` of this view.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        self.into_slice(range)
    }

    fn into_slice(self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        let (s, e) = bounds(range, self.len, "device view")?;
        Ok(DeviceSlice { addr: self.addr + (s * std::mem::size_of::<T>()) as u64, len: e - s, ..self })
    }

    /// Copy the view into `dst` (lengths must match), after the work
    /// queued on `ctx`'s stream.
    pub fn copy_to_host(&self, ctx: &Context, dst: &mut [T]) -> Result<()> {
        self.copy_to_host_on(ctx, dst)
    }

    fn copy_to_host_on(&self, ctx: &Context, dst: &mut [T]) -> Result<()> {
        ctx.check_domain(self.domain, "device view")?;
        if dst.len() != self.len {
            return Err(Error::LengthMismatch { what: "host slice", expected: self.len, got: dst.len() });
        }
        ctx.download_bytes(self.addr, as_bytes_mut(dst))
    }

    /// Copy elements `offset .. offset + dst.len()` into `dst`.
    pub fn copy_to_host_at(&self, ctx: &Context, offset: usize, dst: &mut [T]) -> Result<()> {
        self.slice(offset..offset.saturating_add(dst.len()))?.copy_to_host_on(ctx, dst)
    }

    /// The view's contents as a `Vec`, read after the work queued on
    /// `ctx`'s stream.
    pub fn to_vec(&self, ctx: &Context) -> Result<Vec<T>> {
        self.read_all_on(ctx)
    }

    fn read_all_on(&self, ctx: &Context) -> Result<Vec<T>> {
        let mut v = vec![T::default(); self.len];
        self.copy_to_host_on(ctx, &mut v)?;
        Ok(v)
    }
}

impl<'a, T: DeviceRepr> DeviceSliceMut<'a, T> {
    /// A writable view of `len` elements at device address `addr`; see
    /// [`DeviceSlice::from_raw_parts`] for the checks.
    ///
    /// # Safety
    /// The memory must stay allocated, and must not be used by anything
    /// else while the view is used, for `'a`.
    pub unsafe fn from_raw_parts(ctx: &Context, addr: u64, len: usize) -> Result<Self> {
        let domain = check_raw::<T>(ctx, addr, len)?;
        Ok(DeviceSliceMut { addr, len, domain, _t: PhantomData })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Device address of the first element.
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// Launch argument pointing at the view.
    pub fn arg(&self) -> crate::Arg {
        crate::Arg::Ptr(self.addr)
    }

    /// The same memory, read-only, for as long as this borrow.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice { addr: self.addr, len: self.len, domain: self.domain, _t: PhantomData }
    }

    /// Re-borrow the view (to pass it on and keep using it after).
    pub fn reborrow(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut { addr: self.addr, len: self.len, domain: self.domain, _t: PhantomData }
    }

    /// Elements `range` of this view.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        self.reborrow().into_slice_mut(range)
    }

    /// Split into `[0, mid)` and `[mid, len)`.
    pub fn split_at_mut(self, mid: usize) -> Result<(DeviceSliceMut<'a, T>, DeviceSliceMut<'a, T>)> {
        if mid > self.len {
            return Err(Error::OutOfRange { what: "device view split", start: mid, end: mid, len: self.len });
        }
        let right = DeviceSliceMut {
            addr: self.addr + (mid * std::mem::size_of::<T>()) as u64,
            len: self.len - mid,
            domain: self.domain,
            _t: PhantomData,
        };
        Ok((DeviceSliceMut { len: mid, ..self }, right))
    }

    fn into_slice_mut(self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'a, T>> {
        let (s, e) = bounds(range, self.len, "device view")?;
        Ok(DeviceSliceMut { addr: self.addr + (s * std::mem::size_of::<T>()) as u64, len: e - s, ..self })
    }

    /// Copy `src` into the view (lengths must match), ordered on `ctx`'s
    /// stream.
    pub fn copy_from_host(&mut self, ctx: &Context, src: &[T]) -> Result<()> {
        self.copy_from_host_on(ctx, src)
    }

    fn copy_from_host_on(&mut self, ctx: &Context, src: &[T]) -> Result<()> {
        ctx.check_domain(self.domain, "device view")?;
        if src.len() != self.len {
            return Err(Error::LengthMismatch { what: "host slice", expected: self.len, got: src.len() });
        }
        ctx.upload_bytes(self.addr, as_bytes(src))
    }

    /// Copy `src` into the first `src.len()` elements, on `ctx`'s stream.
    pub fn copy_from_host_prefix(&mut self, ctx: &Context, src: &[T]) -> Result<()> {
        self.slice_mut(..src.len())?.copy_from_host_on(ctx, src)
    }

    /// The view's contents as a `Vec`, read after the work queued on
    /// `ctx`'s stream.
    pub fn to_vec(&self, ctx: &Context) -> Result<Vec<T>> {
        self.as_slice().read_all_on(ctx)
    }
}

/// Anything an operation can read from: [`DeviceBuffer`], [`DeviceSlice`],
/// [`DeviceSliceMut`], cudarc's `CudaSlice`, `CudaView` and `CudaViewMut`
/// (which must belong to the same device as the context; the context's
/// stream waits for cudarc's pending writes to them), and host data
/// (`&[T]`, `&Vec<T>`, arrays), which is copied to the device first.
pub trait DeviceInput<T: DeviceRepr> {
    /// The memory as a view, checked to belong to `ctx`'s device.
    #[doc(hidden)]
    fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>>;
}

/// Anything an operation can write to: [`DeviceBuffer`],
/// [`DeviceSliceMut`], and cudarc's `CudaSlice` and `CudaViewMut`.
pub trait DeviceOutput<T: DeviceRepr> {
    /// The memory as a writable view, checked to belong to `ctx`'s device.
    #[doc(hidden)]
    fn output<'a>(&'a mut self, ctx: &'a Context) -> Result<Output<'a, T>>;
}

/// A resolved input: the view, and what must stay alive until the work that
/// reads it is queued (cudarc's stream-synchronisation guard, or the
/// buffer a host slice was uploaded into).
#[doc(hidden)]
pub struct Input<'a, T: DeviceRepr> {
    pub view: DeviceSlice<'a, T>,
    _guard: Option<cudarc::driver::SyncOnDrop<'a>>,
    _upload: Option<DeviceBuffer<T>>,
}

/// A resolved output; see [`Input`].
#[doc(hidden)]
pub struct Output<'a, T: DeviceRepr> {
    pub view: DeviceSliceMut<'a, T>,
    _guard: Option<cudarc::driver::SyncOnDrop<'a>>,
}

impl<T: DeviceRepr> DeviceInput<T> for DeviceBuffer<T> {
    fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>> {
        ctx.check_domain(self.ctx.domain(), "input")?;
        Ok(Input { view: self.as_slice(), _guard: None, _upload: None })
    }
}
impl<T: DeviceRepr> DeviceInput<T> for DeviceSlice<'_, T> {
    fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>> {
        ctx.check_domain(self.domain, "input")?;
        Ok(Input { view: *self, _guard: None, _upload: None })
    }
}
impl<T: DeviceRepr> DeviceInput<T> for DeviceSliceMut<'_, T> {
    fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>> {
        ctx.check_domain(self.domain, "input")?;
        Ok(Input { view: self.as_slice(), _guard: None, _upload: None })
    }
}
impl<T: DeviceRepr> DeviceOutput<T> for DeviceBuffer<T> {
    fn output<'a>(&'a mut self, ctx: &'a Context) -> Result<Output<'a, T>> {
        ctx.check_domain(self.ctx.domain(), "output")?;
        Ok(Output { view: self.as_slice_mut(), _guard: None })
    }
}
impl<T: DeviceRepr> DeviceOutput<T> for DeviceSliceMut<'_, T> {
    fn output<'a>(&'a mut self, ctx: &'a Context) -> Result<Output<'a, T>> {
        ctx.check_domain(self.domain, "output")?;
        Ok(Output { view: self.reborrow(), _guard: None })
    }
}
/// Host data as an input: copied to the device first (on the context's
/// stream), for convenience; keep data you reuse on the device.
impl<T: DeviceRepr> DeviceInput<T> for [T] {
    fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>> {
        let buf = ctx.upload(self)?;
        let view = DeviceSlice { addr: buf.addr(), len: buf.len(), domain: ctx.domain(), _t: PhantomData };
        Ok(Input { view, _guard: None, _upload: Some(buf) })
    }
}
impl<T: DeviceRepr> DeviceInput<T> for Vec<T> {
    fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>> {
        self.as_slice().input(ctx)
    }
}
impl<T: DeviceRepr, const N: usize> DeviceInput<T> for [T; N] {
    fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>> {
        self.as_slice().input(ctx)
    }
}
impl<I: DeviceInput<T> + ?Sized, T: DeviceRepr> DeviceInput<T> for &I {
    fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>> {
        (**self).input(ctx)
    }
}
impl<I: DeviceInput<T> + ?Sized, T: DeviceRepr> DeviceInput<T> for &mut I {
    fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>> {
        (**self).input(ctx)
    }
}
impl<O: DeviceOutput<T> + ?Sized, T: DeviceRepr> DeviceOutput<T> for &mut O {
    fn output<'a>(&'a mut self, ctx: &'a Context) -> Result<Output<'a, T>> {
        (**self).output(ctx)
    }
}

/// cudarc's memory as inputs and outputs. The operation's stream waits for
/// the slice's pending writes (and, for outputs, reads) as cudarc tracks
/// them, and records its own use for cudarc's later work.
mod cudarc_views {
    use super::*;
    use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceSlice as _};

    fn stream<'a>(
        ctx: &'a Context,
        owner: &cudarc::driver::CudaContext,
        what: &'static str,
    ) -> Result<&'a cudarc::driver::CudaStream> {
        let here = ctx.domain();
        let theirs = Domain::Cuda(owner.cu_ctx() as u64);
        match ctx.cuda_stream() {
            Some(s) if here == theirs => Ok(s),
            _ => Err(Error::ForeignMemory { what, owner: theirs.to_string(), here: here.to_string() }),
        }
    }

    macro_rules! input {
        ($($ty:ty),*) => {$(
            impl<T: DeviceRepr> DeviceInput<T> for $ty {
                fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>> {
                    let s = stream(ctx, self.stream().context(), "cudarc input")?;
                    let (addr, guard) = self.device_ptr(s);
                    let view = DeviceSlice { addr, len: self.len(), domain: ctx.domain(), _t: PhantomData };
                    Ok(Input { view, _guard: Some(guard), _upload: None })
                }
            }
        )*};
    }
    input!(CudaSlice<T>, CudaView<'_, T>, CudaViewMut<'_, T>);

    macro_rules! output {
        ($($ty:ty),*) => {$(
            impl<T: DeviceRepr> DeviceOutput<T> for $ty {
                fn output<'a>(&'a mut self, ctx: &'a Context) -> Result<Output<'a, T>> {
                    let len = self.len();
                    let s = stream(ctx, self.stream().context(), "cudarc output")?;
                    let (addr, guard) = self.device_ptr_mut(s);
                    let view = DeviceSliceMut { addr, len, domain: ctx.domain(), _t: PhantomData };
                    Ok(Output { view, _guard: Some(guard) })
                }
            }
        )*};
    }
    output!(CudaSlice<T>, CudaViewMut<'_, T>);
}

/// cust's `DeviceBuffer` (feature `cust`) as an input and output. cust 0.3
/// uses the device's primary context, as gpuprim does, so its buffers are
/// this device's memory; each is checked like a raw view
/// ([`DeviceSlice::from_raw_parts`]). Order cust's work with gpuprim's
/// yourself: synchronise cust's stream before handing its buffers over.
#[cfg(feature = "cust")]
mod cust_views {
    use super::*;
    use cust::memory::{DeviceCopy, DevicePointer};

    fn raw<T: DeviceCopy>(p: DevicePointer<T>) -> u64 {
        p.as_raw()
    }

    impl<T: DeviceRepr + DeviceCopy> DeviceInput<T> for cust::memory::DeviceBuffer<T> {
        fn input<'a>(&'a self, ctx: &'a Context) -> Result<Input<'a, T>> {
            let (addr, len) = (raw(self.as_device_ptr()), self.len());
            let domain = check_raw::<T>(ctx, addr, len)?;
            Ok(Input { view: DeviceSlice { addr, len, domain, _t: PhantomData }, _guard: None, _upload: None })
        }
    }
    impl<T: DeviceRepr + DeviceCopy> DeviceOutput<T> for cust::memory::DeviceBuffer<T> {
        fn output<'a>(&'a mut self, ctx: &'a Context) -> Result<Output<'a, T>> {
            let (addr, len) = (raw(self.as_device_ptr()), self.len());
            let domain = check_raw::<T>(ctx, addr, len)?;
            Ok(Output { view: DeviceSliceMut { addr, len, domain, _t: PhantomData }, _guard: None })
        }
    }
}
